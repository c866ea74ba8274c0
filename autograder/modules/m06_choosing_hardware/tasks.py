"""Tasks of module 06 (choosing hardware): cost, claims, offers, serving, nvidia-smi logs, inventory, MFU.

Calculations are scored against the expected answer (relative tolerance 1e-6, see
:func:`autograder.checks.core.close`). NVML is faked (:mod:`autograder.fakes.nvml`) so
every failure mode can be graded on a CPU-only machine. The MFU task times the
learner's step side by side with the same step (:func:`.lesson.mlp_step`) and grades
the MFU against :func:`autograder.expectations.expect`.
"""
from __future__ import annotations

import math
import os
import tempfile
from pathlib import Path
from typing import Any

from ...checks import referee
from ...checks.core import Part, Task, close
from ...fakes.nvml import INIT_FAILURES, fake_pynvml, fake_torch_cuda
from ...i18n import Message, msg
from .lesson import SAMPLE_LOG, mfu_peak, mlp_step

REL = 1e-6
COST_KEYS = ("flops", "hours", "gpu_hours", "cost")
CLAIM_KEYS = ("estimated_days", "ratio", "flagged")
SERVE_KEYS = ("weights_gb", "kv_cache_gb", "total_gb", "gpus", "tokens_per_s_max")
SMI_KEYS = ("samples", "mean_utilization", "peak_memory_mib", "throttled")
MFU_KEYS = ("flops_per_step", "seconds_per_step", "peak_tflops", "mfu")
ERROR = {"raised": "ValueError"}  # the answer (and expected answer) of a case that must raise ValueError


# ---------------------------------------------------------------- shared helpers
def _same(found: Any, want: Any) -> bool:
    """Numbers within :data:`REL` (:func:`close`), anything else (names, flags, lists, None) exactly."""
    if isinstance(want, (int, float)) and not isinstance(want, bool):
        return close(found, want, rel=REL, abs_tol=1e-12)
    return found == want


def _positive(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value > 0


def _show(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.6g}"
    return repr(value)


def _compare(case_text: Message, want: dict, found: Any, keys: tuple, weights: dict | None = None) -> list[Part]:
    """One Part per key: :func:`_same` as the expected answer ``want``."""
    if not isinstance(found, dict):
        return [Part(False, _fill("m06.not_dict", case_text, found=type(found).__name__), float(len(keys)))]
    parts = []
    for key in keys:
        weight = (weights or {}).get(key, 1.0)
        if key not in found:
            parts.append(Part(False, _fill("m06.missing_key", case_text, key=key, keys=", ".join(keys)), weight))
        elif _same(found[key], want[key]):
            parts.append(Part(True, _fill("m06.ok", case_text), weight))
        else:
            parts.append(Part(False, _fill("m06.wrong_value", case_text, key=key, expected=_show(want[key]),
                                           found=_show(found[key])), weight))
    return parts


def _fill(message_key: str, case_text: Message, **values) -> Message:
    """``msg(message_key)`` with the case description put in."""
    return msg(message_key, case=case_text, **values)


def _with_hint(parts: list[Part], hint_key: str) -> list[Part]:
    """Add the task's hint to the first wrong part (so the verdict says how it is computed)."""
    for i, part in enumerate(parts):
        if not part.ok:
            parts[i] = Part(False, part.message + msg(hint_key), part.weight)
            break
    return parts


def _call_or_error(fn, *args) -> Any:
    """The learner's result, or ``{"raised": "ValueError"}`` when the case expects that error."""
    try:
        return fn(*args)
    except ValueError:
        return dict(ERROR)


# ---------------------------------------------------------------- task 1: training cost
def _cost_visible() -> list:
    from .prices import price_per_gpu_hour
    return [
        {"params": 8e9, "tokens": 100e9, "gpus": 8, "profile": "a100_sxm_40gb", "mfu": 0.4,
         "price": price_per_gpu_hour("aws_p4d_24xlarge")},
        {"params": 70e9, "tokens": 1.4e12, "gpus": 1024, "profile": "h100_sxm", "mfu": 0.45,
         "price": price_per_gpu_hour("aws_p5_48xlarge")},
    ]


def _cost_answer(learner, case) -> Any:
    return _call_or_error(learner, case["params"], case["tokens"], case["gpus"], case["profile"], case["mfu"],
                          case["price"])


def _cost_text(case) -> Message:
    if case.get("expect_error"):
        return msg("m06.invalid_case", mfu=case["mfu"])
    return msg("m06.cost_case", **{k: case[k] for k in ("params", "tokens", "gpus", "profile", "mfu", "price")})


def _cost_score(case, answer, want) -> list[Part]:
    text = _cost_text(case)
    if want == ERROR:
        ok = answer == ERROR
        return [Part(ok, _fill("m06.ok" if ok else "m06.expected_error", text, found=_show(answer)), 2.0)]
    return _with_hint(_compare(text, want, answer, COST_KEYS), "m06.cost_hint")


# ---------------------------------------------------------------- task 2: checking a claim
SEED_CLAIM = {  # seed 001, section 8: "Llama 3 8B, 8x A100, 100B tokens: ~7-10 days" (its cost uses 8 days)
    "label": "Llama 3 8B, 8x A100, 100B tokens", "params": 8e9, "tokens": 100e9, "gpus": 8,
    "profile": "a100_sxm_40gb", "mfu": 0.4, "claimed_days": 8.0,
}


def _claim_visible() -> list:
    return [SEED_CLAIM,
            {"label": "1.3B model, 26B tokens, 8x H100", "params": 1.3e9, "tokens": 26e9, "gpus": 8,
             "profile": "h100_sxm", "mfu": 0.4, "claimed_days": 1.0}]


def _claim_score(case, answer, want) -> list[Part]:
    text = msg("m06.claim_case", label=case["label"], claimed_days=f"{case['claimed_days']:.4g}")
    return _with_hint(_compare(text, want, answer, CLAIM_KEYS), "m06.claim_hint")


# ---------------------------------------------------------------- task 3: cheapest offer
def _offer_from_prices(row: dict) -> dict:
    return {"name": row["id"], "gpus": row["gpus"], "memory_gb_per_gpu": row["memory_gb_per_gpu"],
            "tflops_per_gpu": row["bf16_tflops"], "price_per_hour": row["price_per_hour"]}


def _cheapest_visible() -> list:
    from .prices import offers
    listed = [_offer_from_prices(r) for r in offers("on_demand")]
    job = {"flops": 6 * 7e9 * 5e9, "mfu": 0.35, "memory_gb": 112.0, "deadline_hours": 48.0}
    rushed = dict(job, deadline_hours=1.0)
    return [{"offers": listed, "job": job}, {"offers": listed, "job": rushed}]


def _cheapest_answer(learner, case) -> Any:
    return learner([dict(o) for o in case["offers"]], dict(case["job"]))


def _cheapest_score(case, answer, want) -> list[Part]:
    job = case["job"]
    text = msg("m06.cheapest_case", n=len(case["offers"]), memory_gb=job["memory_gb"],
               deadline_hours=job["deadline_hours"])
    return _with_hint(_compare(text, want, answer, ("name", "cost", "hours"), {"name": 2.0}), "m06.cheapest_hint")


# ---------------------------------------------------------------- task 4: serving
def gpu_case(profile_id: str, usable: float = 0.9) -> dict:
    """The ``gpu`` of a serving case from a profile: name, memory (GB), bandwidth (GB/s), usable share."""
    from ...profiles import get
    prof = get(profile_id)
    return {"name": prof.label, "memory_gb": prof.memory_bytes / 1e9, "bandwidth_gbs": prof.bandwidth_gbs, "usable_fraction": usable}


def _serve_visible() -> list:
    gqa70 = {"params": 70.6e9, "weight_bytes": 2, "layers": 80, "kv_heads": 8, "head_dim": 128, "kv_bytes": 2}
    gqa8 = {"params": 8.03e9, "weight_bytes": 1, "layers": 32, "kv_heads": 8, "head_dim": 128, "kv_bytes": 2}
    return [{"model": gqa70, "context": 8192, "batch": 16, "gpu": gpu_case("h100_sxm")},
            {"model": gqa8, "context": 4096, "batch": 4, "gpu": gpu_case("l4")}]


def _serve_answer(learner, case) -> Any:
    return learner(dict(case["model"]), case["context"], case["batch"], dict(case["gpu"]))


def _serve_score(case, answer, want) -> list[Part]:
    m = case["model"]
    text = msg("m06.serve_case", params=m["params"], weight_bytes=m["weight_bytes"], context=case["context"],
               batch=case["batch"], gpu=case["gpu"]["name"])
    return _with_hint(_compare(text, want, answer, SERVE_KEYS, {"gpus": 2.0}), "m06.serve_hint")


# ---------------------------------------------------------------- task 5: nvidia-smi logs
def _smi_visible() -> list:
    return [{"name": SAMPLE_LOG.name, "text": SAMPLE_LOG.read_text(encoding="utf-8")}]


def _smi_answer(learner, case) -> Any:
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, case["name"])
        Path(path).write_text(case["text"], encoding="utf-8")
        return learner(path)


def _smi_score(case, answer, want) -> list[Part]:
    text = msg("m06.smi_case", name=case["name"], rows=case["text"].count("\n") - 1)
    weights = {"samples": 0.5, "throttled": 2.0}
    return _with_hint(_compare(text, want, answer, SMI_KEYS, weights), "m06.smi_hint")


# ---------------------------------------------------------------- task 6: inventory with fakes of NVML
def inventory_fakes(case: dict) -> tuple:
    """The fake ``pynvml`` and ``torch`` of an inventory case (None where the case has none)."""
    nvml = None if case["nvml"] is None else fake_pynvml(case["nvml"], case["fail"], case.get("bytes_names", False))
    torch_mod = None if case["torch"] is None else fake_torch_cuda(case["torch"])
    return nvml, torch_mod


def _inventory_visible() -> list:
    return [{"real": True},
            {"nvml": [0, 1], "fail": None, "torch": [0, 1]},
            {"nvml": [2], "fail": "library", "torch": [2]}]


def _rows(result) -> Any:
    if not isinstance(result, (list, tuple)):
        return result
    out = []
    for row in result:
        if isinstance(row, dict):
            row = {k: (v.decode() if isinstance(v, bytes) else v) for k, v in row.items()}
        out.append(row)
    return out


def _inventory_answer(learner, case) -> Any:
    if case.get("real"):
        import torch
        try:
            import pynvml
        except Exception:  # not installed, or broken: the learner's code gets None, as the task says
            pynvml = None
        from ...hardware import detect
        detected = [{"name": a.name, "memory_gb": (a.total_memory_bytes or 0) / 1e9}
                    for a in detect().accelerators if a.backend == "cuda"]
        return {"rows": _rows(learner(pynvml, torch)), "detected": detected}
    nvml, torch_mod = inventory_fakes(case)
    rows = _rows(learner(nvml, torch_mod))
    return {"rows": rows, "init": nvml.calls["init"] if nvml else 0, "shutdown": nvml.calls["shutdown"] if nvml else 0}


def _inventory_text(case) -> Message:
    if case.get("real"):
        return msg("m06.inventory_real")
    nvml = "—" if case["nvml"] is None else (f"{len(case['nvml'])} GPU" + (f", {case['fail']} error" if case["fail"] else ""))
    return msg("m06.inventory_fake", nvml=nvml, torch_gpus="—" if case["torch"] is None else len(case["torch"]))


def _same_rows(want: list, found: Any) -> bool:
    if not isinstance(found, list) or len(found) != len(want):
        return False
    for e, f in zip(want, found):
        if not isinstance(f, dict) or any(k not in f for k in e):
            return False
        if any(not _same(f[k], e[k]) for k in e):
            return False
    return True


def _inventory_score(case, answer, want) -> list[Part]:
    """Fake cases against the expected rows (and one init, one shutdown); the real case against what this machine detects."""
    text = _inventory_text(case)
    if not isinstance(answer, dict) or "rows" not in answer:
        return [Part(False, _fill("m06.not_dict", text, found=type(answer).__name__), 2.0)]
    found = answer["rows"]
    if case.get("real"):
        detected = answer["detected"]
        ok = isinstance(found, list) and len(found) == len(detected) and all(
            isinstance(f, dict) and str(f.get("name", "")).strip() == e["name"].strip()
            and close(f.get("memory_gb"), e["memory_gb"], rel=0.05)
            for e, f in zip(detected, found))
        message = _fill("m06.ok", text) if ok else _fill("m06.inventory_detected", text, expected=detected, found=found)
        return [Part(ok, message if ok else message + msg("m06.inventory_hint"), 2.0)]
    rows_ok = _same_rows(want, found)
    parts = [Part(rows_ok, _fill("m06.ok", text) if rows_ok else
                  _fill("m06.inventory_rows", text, expected=want, found=found) + msg("m06.inventory_hint"), 2.0)]
    if case["nvml"] is not None and case["fail"] not in INIT_FAILURES:
        ok = answer.get("init") == 1 and answer.get("shutdown") == 1
        parts.append(Part(ok, _fill("m06.ok" if ok else "m06.inventory_shutdown", text, init=answer.get("init"),
                                    shutdown=answer.get("shutdown")), 1.0))
    return parts


# ---------------------------------------------------------------- task 7: MFU of a measured step
def device_of(case: dict) -> str:
    """The device an MFU case runs on: the case's, else this machine's best (cases stay machine-independent)."""
    from ...hardware import best_device
    return case.get("device") or best_device()


def _mfu_visible() -> list:
    return [{"dims": [512, 1024, 512], "batch": 256}]


def _mfu_answer(learner, case) -> Any:
    return learner(device_of(case), list(case["dims"]), case["batch"])


def _mfu_reference(case, answer) -> dict:
    """The course harness timing the same training step (bias-free Linear + ReLU layers, SGD)."""
    from ...harness import time_fn
    device = device_of(case)
    return {"seconds": time_fn(mlp_step(case["dims"], case["batch"], device), device=device, budget_s=1.0).median_s}


MEASURED_PEAK_BAND = (0.1, 10.0)  # a CPU's peak is measured, in the kernel and in the grader at other moments (up
# to 5x apart on a loaded machine): only a peak from the wrong source (a GPU's spec, TFLOP vs FLOP) falls outside


def _mfu_score(case, answer, want) -> list[Part]:
    from ...expectations import expect, side_by_side
    from ...reference import spec_profile
    device = device_of(case)
    text = msg("m06.mfu_case", device=device, dims=case["dims"], batch=case["batch"])
    found = referee.rounds(answer)
    bad = next((r for r in found if not isinstance(r, dict) or any(k not in r for k in MFU_KEYS)), None)
    if not found or bad is not None:
        missing = "/".join(k for k in MFU_KEYS if not isinstance(bad, dict) or k not in bad)
        return [Part(False, _fill("m06.missing_key", text, key=missing, keys=", ".join(MFU_KEYS)), 4.0)]
    result = found[0]
    if not all(_positive(r["seconds_per_step"]) for r in found):
        return [Part(False, _fill("m06.mfu_formula", text, expected="seconds_per_step > 0",
                                  found=_show(result["seconds_per_step"])), 4.0)]
    measured, compared = side_by_side("step", answer, _fill("m06.mfu_what", text), lambda r: r["seconds_per_step"],
                                      lambda ref: ref["seconds"], lambda r: r["seconds_per_step"], "s",
                                      weight=1.0, faster_above=False)
    if not measured:
        return [Part(False, compared[0].message, 4.0)]
    flops = want["flops_per_step"]
    peak = mfu_peak(device)
    exact = spec_profile(device) is not None
    peak_ok = _same(result["peak_tflops"], peak) if exact else (
        _positive(result["peak_tflops"]) and MEASURED_PEAK_BAND[0] * peak <= result["peak_tflops"] <= MEASURED_PEAK_BAND[1] * peak)
    parts = [Part(_same(result["flops_per_step"], flops),
                  _fill("m06.mfu_flops", text, expected=_show(flops), found=_show(result["flops_per_step"]))),
             Part(bool(peak_ok), _fill("m06.mfu_peak", text, expected=_show(peak), found=_show(result["peak_tflops"])))]
    try:
        formula = result["flops_per_step"] / result["seconds_per_step"] / (result["peak_tflops"] * 1e12)
    except (TypeError, ZeroDivisionError):
        formula = None
    parts.append(Part(formula is not None and _same(result["mfu"], formula),
                      _fill("m06.mfu_formula", text, expected=_show(formula), found=_show(result["mfu"]))))
    band = expect("mfu", device=device)
    parts.append(band.part(result["mfu"], _fill("m06.mfu_what", text)))
    return parts + compared


# ---------------------------------------------------------------- the tasks
TASKS = {
    "cost": Task(title=msg("m06.title_cost"), answer=_cost_answer, score=_cost_score, visible=_cost_visible),
    "claim": Task(title=msg("m06.title_claim"), answer=lambda learner, case: learner(dict(case)), score=_claim_score,
                  visible=_claim_visible),
    "cheapest": Task(title=msg("m06.title_cheapest"), answer=_cheapest_answer, score=_cheapest_score,
                     visible=_cheapest_visible),
    "serve": Task(title=msg("m06.title_serve"), answer=_serve_answer, score=_serve_score, visible=_serve_visible),
    "smi_log": Task(title=msg("m06.title_smi"), answer=_smi_answer, score=_smi_score, visible=_smi_visible),
    "inventory": Task(title=msg("m06.title_inventory"), answer=_inventory_answer, score=_inventory_score,
                      visible=_inventory_visible),
    "mfu": Task(title=msg("m06.title_mfu"), answer=_mfu_answer, score=_mfu_score, visible=_mfu_visible,
                measurement=True, reference=_mfu_reference, rounds=5),
}
