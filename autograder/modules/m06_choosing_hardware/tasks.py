"""Tasks of module 06 (choosing hardware): cost, the MFU a claim needs, serving, the cheapest deployment,
why a run is slow (nvidia-smi logs), an NVML inventory, and a partly frozen training step.

Calculations are scored against the expected answer (relative tolerance 1e-6, see
:func:`autograder.checks.core.close`). The expected answer of a case also holds the answers the
known mistakes give (``slips``): each part is diagnosed from its own value, and a wrong value names a
mistake only where that mistake's answer also agrees with the learner on the values it is computed from
(:func:`autograder.checks.keys.compare`). NVML is faked (:mod:`autograder.fakes.nvml`) so every failure mode can be graded on a
CPU-only machine. The step task passes the learner the course's step builder (:func:`.lesson.mlp_step`,
its calls counted) and times the same step side by side, on one CPU thread where there is no accelerator.
"""
from __future__ import annotations

import functools
import math
import os
import tempfile
from pathlib import Path
from typing import Any

from ... import clock
from ...checks import referee
from ...checks.core import Part, Task, close
from ...checks.keys import compare, label as _label, same as _same, show as _show
from ...fakes.nvml import INIT_FAILURES, fake_pynvml, fake_torch_cuda
from ...i18n import Message, msg
from .lesson import mfu_peak, mlp_step

GIB = 2**30
COST_KEYS = ("flops", "hours", "gpu_hours", "cost")
CLAIM_KEYS = ("gpu_hours", "mfu", "verdict")
SERVE_KEYS = ("weights_gb", "kv_cache_gb", "total_gb", "gpus", "tokens_per_s_max")
DEPLOY_KEYS = ("offer", "batch", "replicas", "cost_per_hour")
SMI_KEYS = ("samples", "mean_utilization", "peak_memory_mib", "cause")
STEP_KEYS = ("flops_per_step", "seconds_per_step", "peak_tflops", "utilization")
OFFER_KEYS = ("id", "gpu", "gpus", "memory_gib", "bandwidth_gbs", "price_per_hour")
ERROR = {"raised": "ValueError"}  # the answer (and expected answer) of a case that must raise ValueError
DATA = Path(__file__).resolve().parent / "data"
RUN_LOGS = tuple(f"gpu_log_{c}.csv" for c in "abcde")  # the visible logs of the smi task (shipped with the exercise)


# ---------------------------------------------------------------- shared helpers
_compare = functools.partial(compare, mistakes="m06")  # a wrong value names m06.mistake.<name>


def _positive(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value > 0


def _slip(found: Any, want: Any, slips: dict) -> str | None:
    """The known mistake whose value equals ``found`` where the right value differs."""
    return next((name for name, slip in (slips or {}).items()
                 if slip is not None and not _same(slip, want) and _same(found, slip)), None)


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
        {"params": 1.3e9, "tokens": 26e9, "gpus": 8, "profile": "h100_sxm", "mfu": 0.4,
         "price": price_per_gpu_hour("lambda_8x_h100_sxm")},
        {"params": 13e9, "tokens": 260e9, "gpus": 64, "profile": "a100_sxm_80gb", "mfu": 0.5,
         "price": price_per_gpu_hour("aws_p4de_24xlarge")},
        {"params": 7e9, "tokens": 140e9, "gpus": 16, "profile": "h100_sxm", "mfu": 45, "price": 3.99},
    ]


def _cost_answer(learner, case) -> Any:
    return _call_or_error(learner, case["params"], case["tokens"], case["gpus"], case["profile"], case["mfu"],
                          case["price"])


def _cost_short(case) -> str:
    return f"{case['params'] / 1e9:.3g}B×{case['gpus']} {case['profile']}"


def _cost_score(case, answer, want) -> list[Part]:
    text = msg("m06.cost_case", **{k: case[k] for k in ("params", "tokens", "gpus", "profile", "mfu", "price")})
    right = want["answer"]
    if right == ERROR:
        if answer == ERROR:
            return [Part(True, msg("keys.ok", case=text), 2.0, label=_label(_cost_short(case), "ValueError"))]
        mistake = "mfu_percent" if case["mfu"] > 1 and isinstance(answer, dict) else None
        message = msg("m06.expected_error", case=text, found=_show(answer))
        return [Part(False, message + msg(f"m06.mistake.{mistake}") if mistake else message, 2.0, mistake=mistake,
                     label=_label(_cost_short(case), "ValueError"))]
    return _compare(text, _cost_short(case), right, answer, COST_KEYS, want["slips"], hint="m06.cost_hint")


# ---------------------------------------------------------------- task 2: the MFU a claim needs
def _claim_visible() -> list:
    """Three claims, one per unit and verdict; ``label`` in both languages (what the claim says)."""
    from .prices import price_per_gpu_hour
    return [
        {"label": {"ko": "7B, 토큰 1T, H100 64장: 일주일", "en": "7B, 1T tokens, 64x H100: one week"},
         "params": 7e9, "tokens": 1e12, "gpus": 64, "profile": "h100_sxm", "unit": "days", "claimed": 7.0},
        {"label": {"ko": "13B, 토큰 260B, A100 80GB 64장: $80,000", "en": "13B, 260B tokens, 64x A100 80GB: $80,000"},
         "params": 13e9, "tokens": 260e9, "gpus": 64, "profile": "a100_sxm_80gb", "unit": "usd", "claimed": 80_000.0,
         "price_per_gpu_hour": price_per_gpu_hour("aws_p4de_24xlarge")},
        {"label": {"ko": "1.3B, 토큰 26B, H100 8장: 200 GPU 시간", "en": "1.3B, 26B tokens, 8x H100: 200 GPU-hours"},
         "params": 1.3e9, "tokens": 26e9, "gpus": 8, "profile": "h100_sxm", "unit": "gpu_hours", "claimed": 200.0},
    ]


def _claim_score(case, answer, want) -> list[Part]:
    label = case["label"] if isinstance(case["label"], dict) else {"ko": case["label"], "en": case["label"]}
    text = msg("m06.claim_case", label=Message(label["ko"], label["en"]))
    return _compare(text, label["en"].split(",")[0], want["answer"], answer, CLAIM_KEYS, want["slips"],
                     hint="m06.claim_hint", named=("gpu_hours", "mfu"))


# ---------------------------------------------------------------- task 3: serving
GQA_70B = {"params": 70.6e9, "weight_bytes": 2, "layers": 80, "kv_heads": 8, "head_dim": 128, "kv_bytes": 2}
GQA_8B_FP8 = {"params": 8.03e9, "weight_bytes": 1, "layers": 32, "kv_heads": 8, "head_dim": 128, "kv_bytes": 2}


def gpu_case(profile_id: str, usable: float = 0.9) -> dict:
    """The ``gpu`` of a serving case from a profile: name, memory (GiB), bandwidth (GB/s), usable share."""
    from ...profiles import get
    prof = get(profile_id)
    return {"name": prof.label, "memory_gib": prof.memory_gib, "bandwidth_gbs": prof.bandwidth_gbs,
            "usable_fraction": usable}


def _serve_visible() -> list:
    return [{"model": GQA_70B, "context": 8192, "batch": 3, "gpu": gpu_case("h100_sxm")},
            {"model": GQA_8B_FP8, "context": 4096, "batch": 32, "gpu": gpu_case("l4")}]


def _serve_answer(learner, case) -> Any:
    return learner(dict(case["model"]), case["context"], case["batch"], dict(case["gpu"]))


SERVE_HINTS = {"weights_gb": "m06.serve_hint_bytes", "kv_cache_gb": "m06.serve_hint_bytes",
               "total_gb": "m06.serve_hint_bytes", "gpus": "m06.serve_hint_gpus",
               "tokens_per_s_max": "m06.serve_hint_tokens"}


def _serve_score(case, answer, want) -> list[Part]:
    m = case["model"]
    text = msg("m06.serve_case", params=m["params"], weight_bytes=m["weight_bytes"], context=case["context"],
               batch=case["batch"], gpu=case["gpu"]["name"])
    short = f"{m['params'] / 1e9:.3g}B/{case['gpu']['name']}"
    return _compare(text, short, want["answer"], answer, SERVE_KEYS, want["slips"], {"gpus": 2.0}, SERVE_HINTS)


# ---------------------------------------------------------------- task 4: the cheapest deployment
def table_offers() -> list[dict]:
    """The on-demand rows of the price table, with the keys the deployment task reads."""
    from .prices import offers
    return [{k: row[k] for k in OFFER_KEYS} for row in offers("on_demand")]


def _deploy_visible() -> list:
    from ...profiles import get
    small = []
    for oid, pid, gpus, price in (("l4.x1", "l4", 1, 0.80), ("l4.x4", "l4", 4, 4.60), ("rtx4090.x2", "rtx_4090", 2, 1.40),
                                  ("a100.80g.x1", "a100_sxm_80gb", 1, 1.79), ("h100.pcie.x1", "h100_pcie", 1, 2.49),
                                  ("rtx4090.x2.b", "rtx_4090", 2, 1.40)):
        p = get(pid)
        small.append({"id": oid, "gpu": p.label, "gpus": gpus, "memory_gib": p.memory_gib,
                      "bandwidth_gbs": p.bandwidth_gbs, "price_per_hour": price})
    return [
        {"model": GQA_70B, "context": 8192, "target": {"tokens_per_s": 3000, "ms_per_token": 40, "usable_fraction": 0.9},
         "offers": table_offers()},
        {"model": GQA_8B_FP8, "context": 8192, "target": {"tokens_per_s": 6000, "ms_per_token": 25, "usable_fraction": 0.9},
         "offers": small},
        {"model": GQA_70B, "context": 8192, "target": {"tokens_per_s": 500, "ms_per_token": 8, "usable_fraction": 0.9},
         "offers": table_offers()},
        {"model": GQA_8B_FP8, "context": 8192, "target": {"tokens_per_s": 500, "ms_per_token": 2, "usable_fraction": 0.9},
         "offers": small},
    ]


def _deploy_answer(learner, case) -> Any:
    return learner(dict(case["model"]), case["context"], dict(case["target"]), [dict(o) for o in case["offers"]])


def _deploy_score(case, answer, want) -> list[Part]:
    m, target = case["model"], case["target"]
    text = msg("m06.deploy_case", params=m["params"], tokens_per_s=target["tokens_per_s"],
               ms_per_token=target["ms_per_token"], n=len(case["offers"]))
    short = f"{m['params'] / 1e9:.3g}B {target['tokens_per_s']} tok/s {target['ms_per_token']} ms"
    hints = {key: f"m06.deploy_hint_{key}" for key in DEPLOY_KEYS}
    return _compare(text, short, want["answer"], answer, DEPLOY_KEYS, want["slips"], {"offer": 2.0}, hints,
                     needs="all")  # the four values are one plan: a mistake is named only where it gives the whole plan


# ---------------------------------------------------------------- task 5: why is this run slow?
def _smi_visible() -> list:
    return [{"name": name, "text": (DATA / name).read_text(encoding="utf-8")} for name in RUN_LOGS]


def _smi_answer(learner, case) -> Any:
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, case["name"])
        Path(path).write_text(case["text"], encoding="utf-8")
        return learner(path)


def _smi_score(case, answer, want) -> list[Part]:
    text = msg("m06.smi_case", name=case["name"], rows=case["text"].count("\n") - 1)
    weights = {"samples": 0.25, "mean_utilization": 1.0, "peak_memory_mib": 0.25, "cause": 3.0}  # the cause and the
    # utilization are the point (all five means wrong kept 2.8/3)
    hints = {key: f"m06.smi_hint_{key}" for key in SMI_KEYS}
    return _compare(text, case["name"], want["answer"], answer, SMI_KEYS, want["slips"], weights, hints, needs="own")


# ---------------------------------------------------------------- task 6: inventory with fakes of NVML
def inventory_fakes(case: dict) -> tuple:
    """The fake ``pynvml`` and ``torch`` of an inventory case (None where the case has none)."""
    nvml = None if case["nvml"] is None else fake_pynvml(case["nvml"], case["fail"], case.get("bytes_names", False))
    torch_mod = None if case["torch"] is None else fake_torch_cuda(case["torch"])
    return nvml, torch_mod


def _inventory_visible() -> list:
    return [{"real": True},
            {"nvml": [0, 1], "fail": None, "torch": [0, 1]},
            {"nvml": [3], "fail": None, "torch": [3], "bytes_names": True},
            {"nvml": [2], "fail": "library", "torch": [2]},
            {"nvml": [1, 3], "fail": "memory", "torch": [1, 3]}]


def rows_as_data(result) -> Any:
    """The learner's rows as JSON data: a ``bytes`` value (an undecoded name) as it prints, ``b'...'``."""
    if not isinstance(result, (list, tuple)):
        return result
    return [{k: (str(v) if isinstance(v, bytes) else v) for k, v in row.items()} if isinstance(row, dict) else row
            for row in result]


def _raised(exc: Exception) -> dict:
    """An exception as the answer records it."""
    return {"raised": f"{type(exc).__name__}: {exc}"[:200]}


def _inventory_answer(learner, case) -> Any:
    """The rows, and for the fakes how often NVML was started and shut down; an exception is recorded, not raised."""
    if case.get("real"):
        import torch
        try:
            import pynvml
        except Exception:  # not installed, or broken: the learner's code gets None, as the task says
            pynvml = None
        from ...hardware import detect
        detected = [{"name": a.name, "memory_gib": (a.total_memory_bytes or 0) / GIB}
                    for a in detect().accelerators if a.backend == "cuda"]
        nvml, torch_mod = pynvml, torch
    else:
        nvml, torch_mod = inventory_fakes(case)
    try:
        rows = rows_as_data(learner(nvml, torch_mod))
    except Exception as exc:  # an NVML error let through (NVMLError_Uninitialized, ...): named in the verdict
        if not type(exc).__name__.startswith("NVMLError"):
            raise  # any other error: the check's own report
        rows = _raised(exc)
    if case.get("real"):
        return {"rows": rows, "detected": detected}
    return {"rows": rows, "init": nvml.calls["init"] if nvml else 0, "shutdown": nvml.calls["shutdown"] if nvml else 0}


def _inventory_text(case) -> Message:
    if case.get("real"):
        return msg("m06.inventory_real")
    if case["nvml"] is None:
        nvml = msg("m06.nvml_none")
    else:
        said = [msg("m06.nvml_gpus", n=len(case["nvml"]))]
        if case["fail"]:
            said.append(msg(f"m06.nvml_fail_{case['fail']}"))
        if case.get("bytes_names"):
            said.append(msg("m06.nvml_bytes"))
        nvml = Message("".join(m.ko for m in said), "".join(m.en for m in said))
    return msg("m06.inventory_fake", nvml=nvml, torch_gpus="—" if case["torch"] is None else len(case["torch"]))


UNINITIALIZED = "Uninitialized"  # pynvml's error for nvmlShutdown without a successful nvmlInit


def _inventory_raised(text: Message, error: str, label: Message) -> Part:
    """The function raised: named when it is the shutdown after a failed init."""
    name = "shutdown_without_init" if UNINITIALIZED in error else None
    message = msg("m06.inventory_raised", case=text, error=error)
    return Part(False, message + msg(f"m06.mistake.{name}" if name else "m06.inventory_catch"), 2.0, mistake=name,
                label=label)


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
    """Fake cases against the expected rows and NVML's init/shutdown pairing; the real case against what is detected."""
    text = _inventory_text(case)
    short = "real" if case.get("real") else f"nvml {case['nvml']} {case['fail'] or 'ok'}"
    if not isinstance(answer, dict) or "rows" not in answer:
        return [Part(False, msg("keys.not_dict", case=text, found=type(answer).__name__), 2.0)]
    found, label = answer["rows"], _label(short, "rows")
    raised = found.get("raised") if isinstance(found, dict) else None
    if case.get("real"):
        if raised is not None:
            return [_inventory_raised(text, str(raised), label)]
        detected = answer["detected"]
        ok = isinstance(found, list) and len(found) == len(detected) and all(
            isinstance(f, dict) and str(f.get("name", "")).strip() == e["name"].strip()
            and close(f.get("memory_gib"), e["memory_gib"], rel=0.05)
            for e, f in zip(detected, found))
        message = msg("keys.ok", case=text) if ok else msg("m06.inventory_detected", case=text, expected=detected, found=found)
        return [Part(ok, message if ok else message + msg("m06.inventory_hint"), 2.0, label=label)]
    right, slips = want["answer"], want["slips"]
    if raised is not None:
        parts = [_inventory_raised(text, str(raised), label)]
    else:
        rows_ok = _same_rows(right, found)
        name = None if rows_ok else next((n for n, s in slips.items()
                                          if s["rows"] != right and _same_rows(s["rows"], found)), None)
        message = msg("keys.ok", case=text) if rows_ok else msg("m06.inventory_rows", case=text, expected=right, found=found)
        if not rows_ok:
            message = message + msg(f"m06.mistake.{name}" if name else "m06.inventory_hint")
        parts = [Part(rows_ok, message, 2.0, mistake=name, label=label)]
    if case["nvml"] is not None:
        expected = 0 if case["fail"] in INIT_FAILURES else 1
        ok = answer.get("shutdown") == expected and answer.get("init", 1) <= 1
        name = None if ok else next((n for n, s in slips.items() if s["shutdown"] != expected
                                     and s["shutdown"] == answer.get("shutdown")), None)
        message = msg("keys.ok" if ok else "m06.inventory_shutdown", case=text, init=answer.get("init"),
                      shutdown=answer.get("shutdown"), expected=expected)
        parts.append(Part(ok, message + msg(f"m06.mistake.{name}") if name else message, 1.0, mistake=name,
                          label=_label(short, "nvmlShutdown")))
    return parts


# ---------------------------------------------------------------- task 7: a partly frozen training step
def device_of(case: dict) -> str:
    """The device a step case runs on: the case's, else this machine's best (cases stay machine-independent)."""
    from ...hardware import best_device
    return case.get("device") or best_device()


def _mfu_visible() -> list:
    return [{"dims": [512, 1024, 1024, 512], "batch": 128, "frozen": 1}]


STEP_BUDGET_S = 0.3  # seconds of one timing, the learner's (the task text says so) and the reference's


def _counting(builds: list):
    """:func:`.lesson.mlp_step` that records, per step built, how many times it was called; each call is a span of
    the course's clock (``"step"``: in a check's round the referee keeps it, ``referee.off_clock``)."""
    def make_step(dims, batch, device, frozen=0):
        step = mlp_step(dims, batch, device, frozen)
        record = {"calls": 0}
        builds.append(record)

        def counted():
            record["calls"] += 1
            clock.begin()
            try:
                return step()
            finally:
                clock.end(1, "step")
        counted.model = step.model
        return counted
    return make_step


def _mfu_answer(learner, case) -> Any:
    """The learner's result and the calls of each step built; on a CPU, one torch thread (as the reference)."""
    from ...harness import one_cpu_thread
    device, builds = device_of(case), []
    with one_cpu_thread(device):
        result = learner(_counting(builds), device, list(case["dims"]), case["batch"], case["frozen"])
    return dict(result, calls=[b["calls"] for b in builds]) if isinstance(result, dict) else result


def _mfu_reference(case, answer) -> dict:
    """The course harness timing the same training step (bias-free Linear + ReLU layers, the first frozen, SGD); on a
    device without a spec sheet also its fp32 peak measured now (``peak_tflops``), beside the learner's round."""
    from ...harness import time_fn
    from ...reference import matmul_tflops, spec_profile
    device = device_of(case)
    step = mlp_step(case["dims"], case["batch"], device, case["frozen"])
    threads = 1 if device == "cpu" else None  # as the learner's step runs (see _mfu_answer)
    found = {"seconds": time_fn(step, device=device, budget_s=STEP_BUDGET_S, threads=threads).median_s}
    if spec_profile(device) is None:
        found["peak_tflops"] = matmul_tflops("fp32", device, budget_s=PEAK_BUDGET_S)["tflops"]
    return found


PEAK_BUDGET_S = 0.3  # seconds of the referee's peak measurement in each round
MEASURED_PEAK_BAND = (0.1, 10.0)  # a CPU's peak is measured, in the kernel and in the grader at other moments (up
# to 5x apart on a loaded machine): only a peak from the wrong source (a GPU's spec, TFLOP vs FLOP) falls outside


def _measured_peak(device: str, answer, found) -> tuple[float, bool]:
    """The honest measured peak nearest the learner's and whether theirs is within :data:`MEASURED_PEAK_BAND` of it:
    the machine's measured profile, or a peak the referee measured now beside the rounds (a learner who measures a
    live peak, as the lesson does, is compared with a live one, never only with a figure stored at another moment)."""
    peaks = [mfu_peak(device)] + [r["peak_tflops"] for r in referee.observed(answer)["reference"]
                                  if isinstance(r, dict) and _positive(r.get("peak_tflops"))]
    if not _positive(found):
        return peaks[0], False
    peak = min(peaks, key=lambda p: abs(math.log(found / p)))
    return peak, MEASURED_PEAK_BAND[0] * peak <= found <= MEASURED_PEAK_BAND[1] * peak


def _mfu_score(case, answer, want) -> list[Part]:
    from ...expectations import expect, load_explains, side_by_side
    from ...reference import spec_profile
    device = device_of(case)
    text = msg("m06.mfu_case", device=device, dims=case["dims"], batch=case["batch"], frozen=case["frozen"])
    found = referee.rounds(answer)
    bad = next((r for r in found if not isinstance(r, dict) or any(k not in r for k in STEP_KEYS)), None)
    if not found or bad is not None:
        missing = "/".join(k for k in STEP_KEYS if not isinstance(bad, dict) or k not in bad)
        return [Part(False, msg("keys.missing_key", case=text, key=missing, keys=", ".join(STEP_KEYS)), 4.0)]
    result = found[0]
    if not all(_positive(r["seconds_per_step"]) for r in found):
        return [Part(False, msg("m06.mfu_formula", case=text, expected="seconds_per_step > 0",
                                found=_show(result["seconds_per_step"])), 4.0)]
    what = msg("m06.mfu_what", case=text)
    mine, theirs = (lambda r: r["seconds_per_step"]), (lambda ref: ref["seconds"])
    measured, compared = side_by_side("step", answer, what, mine, theirs, mine, "s", weight=1.0, faster_above=False,
                                      clock_claims=lambda r: [(r["seconds_per_step"], "step")])
    if not measured:
        return [Part(False, compared[0].message, 4.0)]
    ratio = referee.median_ratio(answer, mine, theirs)
    calls = [r["calls"] for r in found if isinstance(r.get("calls"), list)]  # per round, the calls of each step built
    if calls and not all(calls):
        compared = [Part(False, compared[0].message + msg("m06.mfu_not_built"), compared[0].weight, measured=True)]
    elif calls and min(c for round_calls in calls for c in round_calls) < 2:
        least = min(c for round_calls in calls for c in round_calls)
        compared = [Part(False, compared[0].message + msg("m06.mfu_calls", calls=least) + msg("m06.mistake.one_call"),
                         compared[0].weight, measured=True, mistake="one_call")]
    elif ratio is not None and not compared[0].ok and load_explains("step", answer, mine, theirs) is None:
        name = "cold_start" if ratio[0] > 1 else "no_sync"
        compared = [Part(False, compared[0].message + msg(f"m06.mistake.{name}"), compared[0].weight, measured=True,
                         mistake=name)]
    flops, short = want["flops_per_step"], "step"
    name = None if _same(result["flops_per_step"], flops) else _slip(result["flops_per_step"], flops, want["slips"])
    message = msg("m06.mfu_flops", case=text, expected=_show(flops), found=_show(result["flops_per_step"]))
    parts = [Part(_same(result["flops_per_step"], flops), message + msg(f"m06.mistake.{name}") if name else message,
                  mistake=name, label=_label(short, "flops_per_step"))]
    exact = spec_profile(device) is not None
    if exact:
        peak = mfu_peak(device)
        peak_ok = _same(result["peak_tflops"], peak)
        message = msg("m06.mfu_peak", case=text, expected=_show(peak), found=_show(result["peak_tflops"]))
    else:
        peak, peak_ok = _measured_peak(device, answer, result["peak_tflops"])
        message = msg("m06.mfu_peak_measured", case=text, expected=_show(peak), found=_show(result["peak_tflops"]),
                      lo=MEASURED_PEAK_BAND[0], hi=MEASURED_PEAK_BAND[1])
    parts.append(Part(bool(peak_ok), message, label=_label(short, "peak_tflops")))
    try:
        formula = result["flops_per_step"] / result["seconds_per_step"] / (result["peak_tflops"] * 1e12)
    except (TypeError, ZeroDivisionError):
        formula = None
    formula_ok = formula is not None and _same(result["utilization"], formula)
    message = msg("m06.mfu_formula", case=text, expected=_show(formula), found=_show(result["utilization"]))
    percent = not formula_ok and formula is not None and _same(result["utilization"], 100 * formula)
    parts.append(Part(formula_ok, message + msg("m06.mistake.percent") if percent else message,
                      mistake="percent" if percent else None, label=_label(short, "utilization")))
    if exact:  # a dense spec peak: no step can use more than all of it
        parts.append(expect("mfu", device=device).part(result["utilization"], what))
    return parts + compared


# ---------------------------------------------------------------- the tasks
TASKS = {
    "cost": Task(title=msg("m06.title_cost"), answer=_cost_answer, score=_cost_score, visible=_cost_visible,
                 kind="recall", level="warm-up", mistakes=("two_nd", "days_not_hours", "cost_per_gpu", "mfu_percent"),
                 rule=msg("m06.rule.cost"), central=("two_nd", "cost_per_gpu")),
    "claim": Task(title=msg("m06.title_claim"), answer=lambda learner, case: learner(dict(case)), score=_claim_score,
                  visible=_claim_visible, kind="transfer", level="core",
                  mistakes=("two_nd", "days_as_hours", "days_without_gpus", "gpu_hours_as_wall", "usd_times_price",
                            "percent"),
                  rule=msg("m06.rule.claim"),
                  central=("two_nd", "days_as_hours", "days_without_gpus", "gpu_hours_as_wall", "usd_times_price")),
    "serve": Task(title=msg("m06.title_serve"), answer=_serve_answer, score=_serve_score, visible=_serve_visible,
                  kind="recall", level="core", mistakes=("gb_for_gib", "keys_only", "round_gpus", "one_gpu_bandwidth"),
                  rule=msg("m06.rule.serve"), central=("keys_only", "round_gpus")),
    "deploy": Task(title=msg("m06.title_deploy"), answer=_deploy_answer, score=_deploy_score, visible=_deploy_visible,
                   kind="transfer", level="stretch",
                   mistakes=("hourly_price", "price_per_gpu", "gb_for_gib", "one_gpu", "no_latency", "batch_one",
                             "round_replicas"),
                   rule=msg("m06.rule.deploy"), central=("hourly_price", "price_per_gpu")),
    "smi_log": Task(title=msg("m06.title_smi"), answer=_smi_answer, score=_smi_score, visible=_smi_visible,
                    kind="transfer", level="core",
                    mistakes=("idle_as_throttle", "bits_equal", "utilization_trusted", "stall_missed", "fixed_columns",
                              "na_as_zero", "na_rows_dropped", "busy_mean"),
                    rule=msg("m06.rule.smi_log"), central=("utilization_trusted", "busy_mean")),
    "inventory": Task(title=msg("m06.title_inventory"), answer=_inventory_answer, score=_inventory_score,
                      visible=_inventory_visible, given=lambda a: a["rows"], kind="recall", level="core",
                      mistakes=("no_shutdown_on_error", "no_fallback", "gb_for_gib", "bytes_name", "shutdown_without_init"),
                      rule=msg("m06.rule.inventory"), central=("no_shutdown_on_error", "no_fallback")),
    "mfu": Task(title=msg("m06.title_mfu"), answer=_mfu_answer, score=_mfu_score, visible=_mfu_visible,
                measurement=True, reference=_mfu_reference, rounds=3, kind="transfer", level="stretch",
                mistakes=("all_trainable", "forward_only", "first_input_grad", "no_input_grads", "percent",
                          "one_call", "cold_start", "no_sync"),
                rule=msg("m06.rule.mfu"), central=("all_trainable",)),
}
