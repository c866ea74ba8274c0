"""Checks of module 06 (choosing hardware): cost, claims, offers, serving, nvidia-smi logs, inventory, MFU.

Calculations are graded exactly (relative tolerance 1e-6) against the reference in
``autograder.answers.m06`` on visible and random hidden cases. NVML is faked
(:func:`fake_pynvml`) so every failure mode can be graded on a CPU-only machine;
nvidia-smi logs for hidden cases come from :func:`make_smi_log`. The MFU task times
the learner's step and grades it against :func:`autograder.expectations.expect`.
"""
from __future__ import annotations

import math
import os
import tempfile
import types
from pathlib import Path
from typing import Any

from ..i18n import Message, msg
from . import referee
from .core import Part, Task

REL = 1e-6
SAMPLE_LOG = Path(__file__).resolve().parent.parent / "data" / "m06_nvidia_smi_log.csv"
COST_KEYS = ("flops", "hours", "gpu_hours", "cost")
CLAIM_KEYS = ("estimated_days", "ratio", "flagged")
SERVE_KEYS = ("weights_gb", "kv_cache_gb", "total_gb", "gpus", "tokens_per_s_max")
SMI_KEYS = ("samples", "mean_utilization", "peak_memory_mib", "throttled")
MFU_KEYS = ("flops_per_step", "seconds_per_step", "peak_tflops", "mfu")


# ---------------------------------------------------------------- shared helpers
def _close(expected: Any, found: Any, rel: float = REL) -> bool:
    if expected is None or isinstance(expected, (bool, str, list, dict)):
        return expected == found
    if isinstance(found, bool) or not isinstance(found, (int, float)):
        return False
    return math.isclose(float(found), float(expected), rel_tol=rel, abs_tol=1e-12)


def _positive(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value > 0


def _show(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.6g}"
    return repr(value)


def _compare(case_text: Message, expected: dict, found: Any, keys: tuple, weights: dict | None = None) -> list[Part]:
    """One Part per key: equal within REL (numbers) or exactly (others)."""
    if not isinstance(found, dict):
        return [Part(False, _fill("m06.not_dict", case_text, found=type(found).__name__), float(len(keys)))]
    parts = []
    for key in keys:
        weight = (weights or {}).get(key, 1.0)
        if key not in found:
            parts.append(Part(False, _fill("m06.missing_key", case_text, key=key, keys=", ".join(keys)), weight))
        elif _close(expected[key], found[key]):
            parts.append(Part(True, _fill("m06.ok", case_text), weight))
        else:
            parts.append(Part(False, _fill("m06.wrong_value", case_text, key=key, expected=_show(expected[key]),
                                           found=_show(found[key])), weight))
    return parts


def _fill(message_key: str, case_text: Message, **values) -> Message:
    """``msg(message_key)`` with the case description put in, language by language."""
    base = msg(message_key)
    return Message(base.ko.format(case=case_text.ko, **values), base.en.format(case=case_text.en, **values))


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
        return {"raised": "ValueError"}


def _bf16_profiles() -> list[str]:
    from ..profiles import all_of
    return [p.id for p in all_of() if p.peak("bf16") and p.memory_gb and p.bandwidth_gbs]


# ---------------------------------------------------------------- task 1: training cost
def _cost_visible() -> list:
    from ..m06_prices import price_per_gpu_hour
    return [
        {"params": 8e9, "tokens": 100e9, "gpus": 8, "profile": "a100_sxm_40gb", "mfu": 0.4,
         "price": price_per_gpu_hour("aws_p4d_24xlarge")},
        {"params": 70e9, "tokens": 1.4e12, "gpus": 1024, "profile": "h100_sxm", "mfu": 0.45,
         "price": price_per_gpu_hour("aws_p5_48xlarge")},
    ]


def _cost_hidden(rng) -> list:
    ids = _bf16_profiles()
    cases = []
    for _ in range(4):
        params = 10 ** rng.uniform(8, 12)
        cases.append({"params": params, "tokens": params * rng.uniform(5, 200), "gpus": rng.choice([1, 8, 64, 512, 4096]),
                      "profile": rng.choice(ids), "mfu": round(rng.uniform(0.15, 0.6), 3),
                      "price": round(rng.uniform(0.5, 12), 2)})
    cases.append({"params": 1e9, "tokens": 2e10, "gpus": 8, "profile": "h100_sxm", "mfu": 40, "price": 3.0,
                  "expect_error": True})
    return cases


def _cost_answer(learner, case) -> Any:
    return _call_or_error(learner, case["params"], case["tokens"], case["gpus"], case["profile"], case["mfu"],
                          case["price"])


def _cost_text(case) -> Message:
    if case.get("expect_error"):
        return msg("m06.invalid_case", mfu=case["mfu"])
    return msg("m06.cost_case", **{k: case[k] for k in ("params", "tokens", "gpus", "profile", "mfu", "price")})


def _cost_score(case, answer) -> list[Part]:
    from ..answers.m06 import training_cost
    text = _cost_text(case)
    if case.get("expect_error"):
        ok = answer == {"raised": "ValueError"}
        return [Part(ok, _fill("m06.ok" if ok else "m06.expected_error", text, found=_show(answer)), 2.0)]
    expected = training_cost(case["params"], case["tokens"], case["gpus"], case["profile"], case["mfu"], case["price"])
    return _with_hint(_compare(text, expected, answer, COST_KEYS), "m06.cost_hint")


# ---------------------------------------------------------------- task 2: checking a claim
SEED_CLAIM = {  # seed 001, section 8: "Llama 3 8B, 8x A100, 100B tokens: ~7-10 days" (its cost uses 8 days)
    "label": "Llama 3 8B, 8x A100, 100B tokens", "params": 8e9, "tokens": 100e9, "gpus": 8,
    "profile": "a100_sxm_40gb", "mfu": 0.4, "claimed_days": 8.0,
}


def _claim_visible() -> list:
    return [SEED_CLAIM,
            {"label": "1.3B model, 26B tokens, 8x H100", "params": 1.3e9, "tokens": 26e9, "gpus": 8,
             "profile": "h100_sxm", "mfu": 0.4, "claimed_days": 1.0}]


def _claim_hidden(rng) -> list:
    from ..profiles import get
    ids = _bf16_profiles()
    cases = []
    for factor in (rng.uniform(0.6, 1.9), 1.99, 2.01, rng.uniform(3, 10), rng.uniform(0.1, 0.45)):
        params = 10 ** rng.uniform(8.5, 11.5)
        case = {"label": "hidden", "params": params, "tokens": params * rng.uniform(10, 100),
                "gpus": rng.choice([8, 64, 256, 2048]), "profile": rng.choice(ids), "mfu": round(rng.uniform(0.2, 0.55), 3)}
        rate = case["gpus"] * get(case["profile"]).peak("bf16") * 1e12 * case["mfu"]
        case["claimed_days"] = 6 * case["params"] * case["tokens"] / rate / 86400 * factor
        cases.append(case)
    return cases


def _claim_answer(learner, case) -> Any:
    return learner(dict(case))


def _claim_score(case, answer) -> list[Part]:
    from ..answers.m06 import check_claim
    text = msg("m06.claim_case", label=case["label"], claimed_days=f"{case['claimed_days']:.4g}")
    return _with_hint(_compare(text, check_claim(case), answer, CLAIM_KEYS), "m06.claim_hint")


# ---------------------------------------------------------------- task 3: cheapest offer
def _offer_from_prices(row: dict) -> dict:
    return {"name": row["id"], "gpus": row["gpus"], "memory_gb_per_gpu": row["memory_gb_per_gpu"],
            "tflops_per_gpu": row["bf16_tflops"], "price_per_hour": row["price_per_hour"]}


def _cheapest_visible() -> list:
    from ..m06_prices import offers
    listed = [_offer_from_prices(r) for r in offers("on_demand")]
    job = {"flops": 6 * 7e9 * 5e9, "mfu": 0.35, "memory_gb": 112.0, "deadline_hours": 48.0}
    rushed = dict(job, deadline_hours=1.0)
    return [{"offers": listed, "job": job}, {"offers": listed, "job": rushed}]


def _cheapest_hidden(rng) -> list:
    from ..profiles import get
    ids = _bf16_profiles()
    cases = []
    for i in range(4):
        listed = []
        for j in range(rng.randint(4, 8)):
            prof = get(rng.choice(ids))
            gpus = rng.choice([1, 2, 4, 8])
            listed.append({"name": f"offer_{j}", "gpus": gpus, "memory_gb_per_gpu": prof.memory_gb,
                           "tflops_per_gpu": prof.peak("bf16"), "price_per_hour": round(gpus * rng.uniform(0.5, 8), 2)})
        job = {"flops": 6 * 10 ** rng.uniform(9, 10.5) * 10 ** rng.uniform(10, 11), "mfu": round(rng.uniform(0.25, 0.5), 2),
               "memory_gb": rng.choice([16.0, 60.0, 150.0, 300.0]), "deadline_hours": rng.choice([2.0, 24.0, 168.0])}
        if i == 0:  # a cheap 8-GPU offer with a later copy: the tie must go to the first
            b200 = get("b200")
            listed[0] = {"name": "offer_0", "gpus": 8, "memory_gb_per_gpu": b200.memory_gb,
                         "tflops_per_gpu": b200.peak("bf16"), "price_per_hour": 0.5}
            listed.append(dict(listed[0], name="offer_copy"))
            job["deadline_hours"] = 1e6
        if i == 3:
            job["deadline_hours"] = 1e-3  # nothing can finish
        cases.append({"offers": listed, "job": job})
    return cases


def _cheapest_answer(learner, case) -> Any:
    return learner([dict(o) for o in case["offers"]], dict(case["job"]))


def _cheapest_score(case, answer) -> list[Part]:
    from ..answers.m06 import cheapest_offer
    job = case["job"]
    text = msg("m06.cheapest_case", n=len(case["offers"]), memory_gb=job["memory_gb"],
               deadline_hours=job["deadline_hours"])
    expected = cheapest_offer(case["offers"], job)
    return _with_hint(_compare(text, expected, answer, ("name", "cost", "hours"), {"name": 2.0}), "m06.cheapest_hint")


# ---------------------------------------------------------------- task 4: serving
def _gpu_case(profile_id: str, usable: float = 0.9) -> dict:
    from ..profiles import get
    prof = get(profile_id)
    return {"name": prof.label, "memory_gb": prof.memory_gb, "bandwidth_gbs": prof.bandwidth_gbs, "usable_fraction": usable}


def _serve_visible() -> list:
    gqa70 = {"params": 70.6e9, "weight_bytes": 2, "layers": 80, "kv_heads": 8, "head_dim": 128, "kv_bytes": 2}
    gqa8 = {"params": 8.03e9, "weight_bytes": 1, "layers": 32, "kv_heads": 8, "head_dim": 128, "kv_bytes": 2}
    return [{"model": gqa70, "context": 8192, "batch": 16, "gpu": _gpu_case("h100_sxm")},
            {"model": gqa8, "context": 4096, "batch": 4, "gpu": _gpu_case("l4")}]


def _serve_hidden(rng) -> list:
    ids = _bf16_profiles()
    cases = []
    while len(cases) < 4:
        layers = rng.choice([24, 32, 40, 60, 80, 126])
        model = {"params": 10 ** rng.uniform(9, 11.7), "weight_bytes": rng.choice([0.5, 1, 2]), "layers": layers,
                 "kv_heads": rng.choice([1, 4, 8, 16]), "head_dim": rng.choice([64, 128]), "kv_bytes": rng.choice([1, 2])}
        case = {"model": model, "context": rng.choice([2048, 8192, 32768, 131072]), "batch": rng.choice([1, 8, 32, 128]),
                "gpu": _gpu_case(rng.choice(ids), rng.choice([0.85, 0.9]))}
        kv = 2 * layers * model["kv_heads"] * model["head_dim"] * model["kv_bytes"] * case["context"] * case["batch"]
        total = model["params"] * model["weight_bytes"] + kv
        ratio = total / (case["gpu"]["memory_gb"] * 1e9 * case["gpu"]["usable_fraction"])
        if abs(ratio - round(ratio)) > 1e-6:  # keep away from exact multiples, where rounding decides
            cases.append(case)
    return cases


def _serve_answer(learner, case) -> Any:
    return learner(dict(case["model"]), case["context"], case["batch"], dict(case["gpu"]))


def _serve_score(case, answer) -> list[Part]:
    from ..answers.m06 import gpus_to_serve
    m = case["model"]
    text = msg("m06.serve_case", params=m["params"], weight_bytes=m["weight_bytes"], context=case["context"],
               batch=case["batch"], gpu=case["gpu"]["name"])
    expected = gpus_to_serve(m, case["context"], case["batch"], case["gpu"])
    return _with_hint(_compare(text, expected, answer, SERVE_KEYS, {"gpus": 2.0}), "m06.serve_hint")


# ---------------------------------------------------------------- task 5: nvidia-smi logs
REASON_BITS = {"idle": 0x1, "power": 0x4, "hw": 0x8, "thermal": 0x20, "hw_thermal": 0x40, "brake": 0x80}
LOG_COLUMNS = ("timestamp", "utilization.gpu", "memory.used", "temperature.gpu", "power.draw", "clocks.sm",
               "clocks_throttle_reasons.active")
UNITS = {"utilization.gpu": "%", "memory.used": "MiB", "power.draw": "W", "clocks.sm": "MHz"}


def make_smi_log(rng, rows: int = 80, units: bool = True, event_name: bool = False, shuffle: bool = False,
                 na: bool = False, max_clock: int = 1980, power_limit: float = 700.0,
                 start: str = "2026/03/14 09:12:01") -> str:
    """A synthetic ``nvidia-smi --query-gpu=... --format=csv -l 1`` log of a training run.

    Phases: idle (GpuIdle, low clock), warm-up, steady training with power-cap and thermal
    episodes (clock below the maximum), data-loader stalls (utilization drops, full clock),
    idle again. ``units=False`` imitates ``--format=csv,nounits``; ``event_name`` uses the
    newer ``clocks_event_reasons.active`` header; ``na`` puts '[N/A]' into some values.
    """
    import datetime as dt
    t0 = dt.datetime.strptime(start, "%Y/%m/%d %H:%M:%S")
    names = list(LOG_COLUMNS)
    if event_name:
        names[-1] = "clocks_event_reasons.active"
    samples = []
    temp, mem = 32.0, 0.0
    idle_head, idle_tail = rng.randint(3, 6), rng.randint(2, 5)
    episode, episode_kind = 0, None
    for i in range(rows):
        stamp = (t0 + dt.timedelta(seconds=i, milliseconds=rng.randint(0, 999))).strftime("%Y/%m/%d %H:%M:%S.%f")[:-3]
        phase = "idle" if i < idle_head or i >= rows - idle_tail else "train"
        reasons, clock = 0, max_clock
        if phase == "idle":
            util, power, clock, reasons = 0, rng.uniform(68, 75), 345, REASON_BITS["idle"]
            mem = 0.0
            temp = max(30.0, temp - 1.5)
        else:
            mem = min(mem + rng.uniform(6000, 14000), 71000 + rng.uniform(0, 3000)) if mem < 60000 else mem + rng.uniform(-50, 80)
            util = rng.choice([100, 100, 99, 98, 97])
            temp = min(temp + rng.uniform(0.5, 2.0), 86.0)
            power = rng.uniform(560, power_limit - 25)
            if episode == 0 and rng.random() < 0.08:
                episode, episode_kind = rng.randint(2, 6), rng.choice(["power", "power", "thermal", "stall", "hw"])
            if episode:
                episode -= 1
                if episode_kind == "power":
                    reasons, power, clock = REASON_BITS["power"], power_limit - rng.uniform(0, 2), rng.choice([1755, 1785, 1830, 1875])
                elif episode_kind == "thermal":
                    reasons, temp, clock = REASON_BITS["thermal"] | rng.choice([0, REASON_BITS["power"]]), rng.uniform(85, 88), rng.choice([1590, 1650, 1710])
                elif episode_kind == "hw":
                    reasons, clock = rng.choice([REASON_BITS["hw"] | REASON_BITS["hw_thermal"], REASON_BITS["brake"] | REASON_BITS["hw"]]), rng.choice([810, 990])
                else:  # the input pipeline stalls: the GPU waits, utilization falls, clocks stay up
                    util, power = rng.randint(20, 60), rng.uniform(250, 400)
        values = {"timestamp": stamp, "utilization.gpu": str(util), "memory.used": str(int(mem)),
                  "temperature.gpu": str(int(temp)), "power.draw": f"{power:.2f}", "clocks.sm": str(clock),
                  names[-1]: f"0x{reasons:016x}"}
        if na and rng.random() < 0.06:
            values[rng.choice(["power.draw", "utilization.gpu", "temperature.gpu"])] = "[N/A]"
        samples.append(values)
    order = list(range(len(names)))
    if shuffle:  # drawn last, so the same seed gives the same samples in any layout
        rest = order[1:]
        rng.shuffle(rest)
        order = [0] + rest
    lines = [", ".join(names[j] + (f" [{UNITS[names[j]]}]" if units and names[j] in UNITS else "") for j in order)]
    for values in samples:
        cells = []
        for j in order:
            value = values[names[j]]
            if units and names[j] in UNITS and value != "[N/A]":
                value = f"{value} {UNITS[names[j]]}"
            cells.append(value)
        lines.append(", ".join(cells))
    return "\n".join(lines) + "\n"


def _smi_visible() -> list:
    return [{"name": SAMPLE_LOG.name, "text": SAMPLE_LOG.read_text(encoding="utf-8")}]


def _smi_hidden(rng) -> list:
    variants = [dict(units=False, na=True), dict(event_name=True, shuffle=True), dict(na=True, shuffle=True, units=True)]
    return [{"name": f"hidden_{i}.csv", "text": make_smi_log(rng, rows=rng.randint(50, 140), max_clock=rng.choice([1980, 1755, 2520]), **v)}
            for i, v in enumerate(variants)]


def _smi_answer(learner, case) -> Any:
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, case["name"])
        Path(path).write_text(case["text"], encoding="utf-8")
        return learner(path)


def _smi_score(case, answer) -> list[Part]:
    from ..answers.m06 import summarize_smi_text
    text = msg("m06.smi_case", name=case["name"], rows=case["text"].count("\n") - 1)
    weights = {"samples": 0.5, "throttled": 2.0}
    return _with_hint(_compare(text, summarize_smi_text(case["text"]), answer, SMI_KEYS, weights), "m06.smi_hint")


# ---------------------------------------------------------------- task 6: inventory with fakes of NVML
class NVMLError(Exception):
    """Stand-in for ``pynvml.NVMLError`` (the real one also subclasses Exception)."""


class NVMLError_LibraryNotFound(NVMLError):  # noqa: N801 (pynvml's naming)
    pass


class NVMLError_DriverNotLoaded(NVMLError):  # noqa: N801
    pass


class NVMLError_Unknown(NVMLError):  # noqa: N801
    pass


INIT_FAILURES = {"library": NVMLError_LibraryNotFound, "driver": NVMLError_DriverNotLoaded}
GPU_CATALOGUE = (  # name, memory in bytes as NVML reports it (total framebuffer), compute capability
    ("NVIDIA H100 80GB HBM3", 85_520_809_984, (9, 0)),
    ("NVIDIA A100-SXM4-80GB", 85_899_345_920, (8, 0)),
    ("NVIDIA GeForce RTX 4090", 25_757_220_864, (8, 9)),
    ("NVIDIA L4", 24_152_899_584, (8, 9)),
    ("Tesla T4", 16_106_127_360, (7, 5)),
    ("NVIDIA H200", 150_754_820_096, (9, 0)),
)


def fake_pynvml(gpus: list, fail: str | None = None, bytes_names: bool = False) -> types.SimpleNamespace:
    """A stand-in for ``pynvml`` with ``gpus`` (catalogue indices) and one failure mode.

    ``fail``: None, ``'library'``/``'driver'`` (nvmlInit raises), or ``'count'``/``'memory'``
    (that query raises after a successful init). ``calls`` counts init and shutdown.
    """
    S = types.SimpleNamespace
    calls = {"init": 0, "shutdown": 0}
    devices = [GPU_CATALOGUE[i] for i in gpus]

    def init():
        if fail in INIT_FAILURES:
            raise INIT_FAILURES[fail]("NVML Shared Library Not Found" if fail == "library" else "Driver Not Loaded")
        calls["init"] += 1

    def shutdown():
        calls["shutdown"] += 1

    def count():
        if fail == "count":
            raise NVMLError_Unknown("Unknown Error")
        return len(devices)

    def memory(handle):
        if fail == "memory":
            raise NVMLError_Unknown("Unknown Error")
        return S(total=devices[handle][1], free=devices[handle][1] // 2, used=devices[handle][1] // 2)

    def name(handle):
        return devices[handle][0].encode() if bytes_names else devices[handle][0]

    return S(__name__="pynvml", NVMLError=NVMLError, calls=calls, nvmlInit=init, nvmlShutdown=shutdown,
             nvmlDeviceGetCount=count, nvmlDeviceGetHandleByIndex=lambda i: int(i), nvmlDeviceGetName=name,
             nvmlDeviceGetMemoryInfo=memory, nvmlDeviceGetCudaComputeCapability=lambda h: devices[h][2])


def fake_torch_cuda(gpus: list) -> types.SimpleNamespace:
    """A stand-in for ``torch`` whose ``torch.cuda`` sees ``gpus`` (catalogue indices; torch reports slightly less memory)."""
    S = types.SimpleNamespace
    devices = [GPU_CATALOGUE[i] for i in gpus]

    def props(i):
        name, total, (major, minor) = devices[int(i)]
        return S(name=name, total_memory=total - 512 * 2**20, major=major, minor=minor)

    def unavailable(*_):
        raise RuntimeError("Torch not compiled with CUDA enabled")

    return S(__name__="torch", cuda=S(is_available=lambda: bool(devices), device_count=lambda: len(devices),
                                      get_device_properties=props if devices else unavailable))


def _inventory_visible() -> list:
    return [{"real": True},
            {"nvml": [0, 1], "fail": None, "torch": [0, 1]},
            {"nvml": [2], "fail": "library", "torch": [2]}]


def _inventory_hidden(rng) -> list:
    pick = lambda k: [rng.randrange(len(GPU_CATALOGUE)) for _ in range(k)]  # noqa: E731
    some = pick(rng.randint(1, 4))
    return [{"nvml": None, "fail": None, "torch": pick(2)},
            {"nvml": some, "fail": "count", "torch": some},
            {"nvml": some, "fail": "memory", "torch": some},
            {"nvml": pick(3), "fail": None, "torch": [], "bytes_names": True},
            {"nvml": [], "fail": "driver", "torch": []},
            {"nvml": None, "fail": None, "torch": None},
            {"nvml": [], "fail": None, "torch": []}]


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
        from ..hardware import detect
        detected = [{"name": a.name, "memory_gb": (a.total_memory_bytes or 0) / 1e9}
                    for a in detect().accelerators if a.backend == "cuda"]
        return {"rows": _rows(learner(pynvml, torch)), "detected": detected}
    nvml = None if case["nvml"] is None else fake_pynvml(case["nvml"], case["fail"], case.get("bytes_names", False))
    torch_mod = None if case["torch"] is None else fake_torch_cuda(case["torch"])
    rows = _rows(learner(nvml, torch_mod))
    return {"rows": rows, "init": nvml.calls["init"] if nvml else 0, "shutdown": nvml.calls["shutdown"] if nvml else 0}


def _inventory_text(case) -> Message:
    if case.get("real"):
        return msg("m06.inventory_real")
    nvml = "—" if case["nvml"] is None else (f"{len(case['nvml'])} GPU" + (f", {case['fail']} error" if case["fail"] else ""))
    return msg("m06.inventory_fake", nvml=nvml, torch_gpus="—" if case["torch"] is None else len(case["torch"]))


def _same_rows(expected: list, found: Any) -> bool:
    if not isinstance(found, list) or len(found) != len(expected):
        return False
    for e, f in zip(expected, found):
        if not isinstance(f, dict) or any(k not in f for k in e):
            return False
        if any(not _close(e[k], f[k]) for k in e):
            return False
    return True


def _inventory_score(case, answer) -> list[Part]:
    text = _inventory_text(case)
    if not isinstance(answer, dict) or "rows" not in answer:
        return [Part(False, _fill("m06.not_dict", text, found=type(answer).__name__), 2.0)]
    found = answer["rows"]
    if case.get("real"):
        expected = answer["detected"]
        ok = isinstance(found, list) and len(found) == len(expected) and all(
            isinstance(f, dict) and str(f.get("name", "")).strip() == e["name"].strip()
            and isinstance(f.get("memory_gb"), (int, float)) and math.isclose(f["memory_gb"], e["memory_gb"], rel_tol=0.05)
            for e, f in zip(expected, found))
        message = _fill("m06.ok", text) if ok else _fill("m06.inventory_detected", text, expected=expected, found=found)
        return [Part(ok, message if ok else message + msg("m06.inventory_hint"), 2.0)]
    from ..answers.m06 import gpu_inventory
    nvml = None if case["nvml"] is None else fake_pynvml(case["nvml"], case["fail"], case.get("bytes_names", False))
    torch_mod = None if case["torch"] is None else fake_torch_cuda(case["torch"])
    expected = gpu_inventory(nvml, torch_mod)
    rows_ok = _same_rows(expected, found)
    parts = [Part(rows_ok, _fill("m06.ok", text) if rows_ok else
                  _fill("m06.inventory_rows", text, expected=expected, found=found) + msg("m06.inventory_hint"), 2.0)]
    if nvml is not None and case["fail"] not in INIT_FAILURES:
        ok = answer.get("init") == 1 and answer.get("shutdown") == 1
        parts.append(Part(ok, _fill("m06.ok" if ok else "m06.inventory_shutdown", text, init=answer.get("init"),
                                    shutdown=answer.get("shutdown")), 1.0))
    return parts


# ---------------------------------------------------------------- task 7: MFU of a measured step
def _mfu_visible() -> list:
    from ..hardware import best_device
    return [{"device": best_device(), "dims": [512, 1024, 512], "batch": 256}]


def _mfu_hidden(rng) -> list:
    from ..hardware import best_device
    width = rng.choice([384, 640, 768])
    return [{"device": best_device(), "dims": [width, 2 * width, 2 * width, width], "batch": rng.choice([128, 192])}]


def _mfu_answer(learner, case) -> Any:
    return learner(case["device"], list(case["dims"]), case["batch"])


def _mfu_reference(case, answer) -> dict:
    """The course harness timing the same training step (bias-free Linear + ReLU layers, SGD)."""
    import torch

    from ..harness import time_fn
    dims, device = case["dims"], case["device"]
    layers = []
    for a, b in zip(dims[:-1], dims[1:]):
        layers += [torch.nn.Linear(a, b, bias=False), torch.nn.ReLU()]
    model = torch.nn.Sequential(*layers[:-1]).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    x = torch.randn(case["batch"], dims[0], device=device)

    def step():
        opt.zero_grad(set_to_none=True)
        model(x).square().mean().backward()
        opt.step()
    return {"seconds": time_fn(step, device=device, budget_s=1.0).median_s}


def _peak_for(device: str) -> float:
    from ..reference import measured_profile, profile_for
    return profile_for(device).peak("fp32") or measured_profile(device).peak("fp32")


MEASURED_PEAK_BAND = (0.1, 10.0)  # a CPU's peak is measured, in the kernel and in the grader at other moments (up
# to 5x apart on a loaded machine): only a peak from the wrong source (a GPU's spec, TFLOP vs FLOP) falls outside


def _mfu_score(case, answer) -> list[Part]:
    from ..answers.m06 import step_flops
    from ..expectations import expect, side_by_side
    from ..reference import spec_profile
    text = msg("m06.mfu_case", device=case["device"], dims=case["dims"], batch=case["batch"])
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
    flops = step_flops(case["dims"], case["batch"])
    peak = _peak_for(case["device"])
    exact = spec_profile(case["device"]) is not None
    peak_ok = _close(peak, result["peak_tflops"]) if exact else (
        _positive(result["peak_tflops"]) and MEASURED_PEAK_BAND[0] * peak <= result["peak_tflops"] <= MEASURED_PEAK_BAND[1] * peak)
    parts = [Part(_close(flops, result["flops_per_step"]),
                  _fill("m06.mfu_flops", text, expected=_show(flops), found=_show(result["flops_per_step"]))),
             Part(bool(peak_ok), _fill("m06.mfu_peak", text, expected=_show(peak), found=_show(result["peak_tflops"])))]
    try:
        formula = result["flops_per_step"] / result["seconds_per_step"] / (result["peak_tflops"] * 1e12)
    except (TypeError, ZeroDivisionError):
        formula = None
    parts.append(Part(formula is not None and _close(formula, result["mfu"]),
                      _fill("m06.mfu_formula", text, expected=_show(formula), found=_show(result["mfu"]))))
    band = expect("mfu", device=case["device"])
    parts.append(band.part(result["mfu"], _fill("m06.mfu_what", text)))
    return parts + compared


# ---------------------------------------------------------------- the tasks
TASKS = {
    "cost": Task(title=msg("m06.title_cost"), answer=_cost_answer, score=_cost_score,
                 visible=_cost_visible, hidden=_cost_hidden),
    "claim": Task(title=msg("m06.title_claim"), answer=_claim_answer, score=_claim_score,
                  visible=_claim_visible, hidden=_claim_hidden),
    "cheapest": Task(title=msg("m06.title_cheapest"), answer=_cheapest_answer, score=_cheapest_score,
                     visible=_cheapest_visible, hidden=_cheapest_hidden),
    "serve": Task(title=msg("m06.title_serve"), answer=_serve_answer, score=_serve_score,
                  visible=_serve_visible, hidden=_serve_hidden),
    "smi_log": Task(title=msg("m06.title_smi"), answer=_smi_answer, score=_smi_score,
                    visible=_smi_visible, hidden=_smi_hidden),
    "inventory": Task(title=msg("m06.title_inventory"), answer=_inventory_answer, score=_inventory_score,
                      visible=_inventory_visible, hidden=_inventory_hidden),
    "mfu": Task(title=msg("m06.title_mfu"), answer=_mfu_answer, score=_mfu_score, visible=_mfu_visible,
                hidden=_mfu_hidden, measurement=True, reference=_mfu_reference, rounds=5),
}
