"""Reference answers and hidden cases of module 06 (choosing hardware): cost, offers, serving, monitoring, MFU.

Conventions (the exercise states them too): training FLOPs = 6 x parameters x tokens
(Kaplan et al. 2020; Hoffmann et al. 2022), MFU = achieved model FLOP/s over the dense
peak (Chowdhery et al. 2022, appendix B), GB = 10^9 bytes, TFLOP/s = 10^12 FLOP/s.
"""
from __future__ import annotations

import csv
import io
import math
from pathlib import Path
from typing import Any

from autograder import llm
from autograder.fakes.nvml import GPU_CATALOGUE
from autograder.i18n import msg
from autograder.modules.m06_choosing_hardware.lesson import make_smi_log, mfu_peak, mlp_step
from autograder.modules.m06_choosing_hardware.tasks import ERROR, gpu_case, inventory_fakes
from autograder.profiles import all_of, get as get_profile

HOUR = 3600.0
# nvidia-smi clocks_throttle_reasons / clocks_event_reasons bits that mean "slowed by power or heat"
# (NVML nvmlClocksThrottleReasons: SwPowerCap 0x4, HwSlowdown 0x8, SwThermalSlowdown 0x20,
# HwThermalSlowdown 0x40, HwPowerBrakeSlowdown 0x80).
POWER_THERMAL_REASONS = {
    0x04: "sw_power_cap",
    0x08: "hw_slowdown",
    0x20: "sw_thermal_slowdown",
    0x40: "hw_thermal_slowdown",
    0x80: "hw_power_brake_slowdown",
}
POWER_THERMAL_MASK = sum(POWER_THERMAL_REASONS)
REASON_COLUMNS = ("clocks_throttle_reasons.active", "clocks_event_reasons.active")


def _positive(**values: Any) -> None:
    for name, value in values.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0 or not math.isfinite(value):
            raise ValueError(msg("m06.not_positive", name=name, value=value).text())


# ---------------------------------------------------------------- task 1: training time and cost
def training_cost(params: float, tokens: float, gpus: int, profile_id: str, mfu: float,
                  price_per_gpu_hour: float, dtype: str = "bf16") -> dict:
    """FLOPs (6ND), wall-clock hours and days, GPU-hours and cost of a training run."""
    _positive(params=params, tokens=tokens, gpus=gpus, mfu=mfu, price_per_gpu_hour=price_per_gpu_hour)
    if mfu > 1:
        raise ValueError(msg("m06.mfu_range", mfu=mfu).text())
    peak = get_profile(profile_id).peak(dtype)
    if not peak:
        raise ValueError(msg("m06.no_peak", profile=profile_id, dtype=dtype).text())
    flops = 6.0 * params * tokens
    seconds = flops / (gpus * peak * 1e12 * mfu)
    hours = seconds / HOUR
    gpu_hours = hours * gpus
    return {"flops": flops, "hours": hours, "days": hours / 24.0, "gpu_hours": gpu_hours,
            "cost": gpu_hours * price_per_gpu_hour}


# ---------------------------------------------------------------- task 2: checking a claim
def check_claim(claim: dict) -> dict:
    """Estimated days for the claim's run, claimed/estimated ratio, flagged if off by more than 2x."""
    run = training_cost(claim["params"], claim["tokens"], claim["gpus"], claim["profile"], claim["mfu"],
                        claim.get("price_per_gpu_hour", 1.0), claim.get("dtype", "bf16"))
    _positive(claimed_days=claim["claimed_days"])
    ratio = claim["claimed_days"] / run["days"]
    return {"estimated_days": run["days"], "ratio": ratio, "flagged": ratio > 2.0 or ratio < 0.5}


# ---------------------------------------------------------------- task 3: cheapest offer
def cheapest_offer(offers: list[dict], job: dict) -> dict:
    """The cheapest offer whose memory holds the job and that finishes before the deadline.

    Runtime = job FLOPs / (gpus x dense TFLOP/s x 10^12 x MFU); cost = runtime x hourly price
    (billed per second). Ties go to the earlier offer. ``name`` None when nothing fits.
    """
    best = None
    for offer in offers:
        if offer["gpus"] * offer["memory_gb_per_gpu"] < job["memory_gb"]:
            continue
        hours = job["flops"] / (offer["gpus"] * offer["tflops_per_gpu"] * 1e12 * job["mfu"]) / HOUR
        if hours > job["deadline_hours"]:
            continue
        cost = hours * offer["price_per_hour"]
        if best is None or cost < best["cost"]:
            best = {"name": offer["name"], "cost": cost, "hours": hours}
    return best or {"name": None, "cost": None, "hours": None}


# ---------------------------------------------------------------- task 4: serving
def gpus_to_serve(model: dict, context: int, batch: int, gpu: dict) -> dict:
    """GPUs whose usable memory holds weights + KV cache, and the decode tokens/s upper bound.

    Each decode step reads every weight and the whole KV cache once; with the model split
    over ``gpus`` GPUs their bandwidths add up, and one step yields ``batch`` tokens.
    """
    weights = llm.weight_bytes(model)
    kv = llm.kv_cache_bytes(model, batch, context)
    total = weights + kv
    usable = gpu["memory_gb"] * 1e9 * gpu["usable_fraction"]
    gpus = max(1, math.ceil(total / usable - 1e-9))
    tokens_per_s = batch * gpus * gpu["bandwidth_gbs"] * 1e9 / total
    return {"weights_gb": weights / 1e9, "kv_cache_gb": kv / 1e9, "total_gb": total / 1e9, "gpus": gpus,
            "tokens_per_s_max": tokens_per_s}


# ---------------------------------------------------------------- task 5: nvidia-smi log
def _field(name: str) -> str:
    """``'utilization.gpu [%]'`` -> ``'utilization.gpu'``."""
    return name.split("[")[0].strip()


def _number(text: str) -> float | None:
    """``'97 %'``, ``'61234 MiB'``, ``'652.31 W'`` -> float; ``'[N/A]'`` or empty -> None."""
    value = text.strip().split(" ")[0] if text and text.strip() else ""
    try:
        return float(value)
    except ValueError:
        return None


def summarize_smi_log(path: str | Path) -> dict:
    """Mean GPU utilization, peak memory and the intervals where clocks dropped for power or heat.

    A sample counts as throttled when its throttle reasons contain a power or thermal bit
    and its SM clock is below the highest SM clock in the log; consecutive such samples
    form one interval (first and last timestamp, as written in the log).
    """
    return summarize_smi_text(Path(path).read_text(encoding="utf-8"))


def summarize_smi_text(text: str) -> dict:
    """:func:`summarize_smi_log` on the text of a log."""
    reader = csv.reader(io.StringIO(text), skipinitialspace=True)
    header = [_field(h) for h in next(reader)]
    rows = [dict(zip(header, (c.strip() for c in row))) for row in reader if row and any(c.strip() for c in row)]
    reason_col = next(c for c in REASON_COLUMNS if c in header)
    utils = [u for u in (_number(r["utilization.gpu"]) for r in rows) if u is not None]
    mems = [m for m in (_number(r["memory.used"]) for r in rows) if m is not None]
    clocks = [_number(r["clocks.sm"]) for r in rows]
    top = max((c for c in clocks if c is not None), default=None)
    intervals: list[dict] = []
    current = None
    for row, clock in zip(rows, clocks):
        try:
            bits = int(row[reason_col], 16) & POWER_THERMAL_MASK
        except ValueError:
            bits = 0
        if bits and clock is not None and top is not None and clock < top:
            names = {name for bit, name in POWER_THERMAL_REASONS.items() if bits & bit}
            if current is None:
                current = {"start": row["timestamp"], "end": row["timestamp"], "reasons": set()}
                intervals.append(current)
            current["end"] = row["timestamp"]
            current["reasons"] |= names
        else:
            current = None
    return {
        "samples": len(rows),
        "mean_utilization": sum(utils) / len(utils) if utils else None,
        "peak_memory_mib": max(mems) if mems else None,
        "throttled": [{"start": i["start"], "end": i["end"], "reasons": sorted(i["reasons"])} for i in intervals],
    }


# ---------------------------------------------------------------- task 6: inventory
def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def gpu_inventory(pynvml_module: Any, torch_module: Any) -> list[dict]:
    """One row per NVIDIA GPU from NVML; from torch.cuda when NVML is missing or fails; [] without GPUs."""
    if pynvml_module is not None:
        try:
            pynvml_module.nvmlInit()
        except Exception:  # NVMLError: library not found, driver not loaded, ...
            pass
        else:
            try:
                rows = []
                for i in range(pynvml_module.nvmlDeviceGetCount()):
                    handle = pynvml_module.nvmlDeviceGetHandleByIndex(i)
                    major, minor = pynvml_module.nvmlDeviceGetCudaComputeCapability(handle)
                    rows.append({"index": i, "name": _text(pynvml_module.nvmlDeviceGetName(handle)),
                                 "memory_gb": pynvml_module.nvmlDeviceGetMemoryInfo(handle).total / 1e9,
                                 "compute_capability": f"{major}.{minor}", "source": "nvml"})
                return rows
            except Exception:  # a query failed half-way: the torch fallback below
                pass
            finally:
                pynvml_module.nvmlShutdown()
    cuda = getattr(torch_module, "cuda", None)
    if cuda is None or not cuda.is_available():
        return []
    rows = []
    for i in range(cuda.device_count()):
        props = cuda.get_device_properties(i)
        rows.append({"index": i, "name": props.name, "memory_gb": props.total_memory / 1e9,
                     "compute_capability": f"{props.major}.{props.minor}", "source": "torch"})
    return rows


# ---------------------------------------------------------------- task 7: MFU of a measured step
def step_flops(dims: list[int], batch: int) -> float:
    """Matmul FLOPs of one training step of a bias-free MLP: forward 2BΣ(in·out), backward twice that."""
    return 6.0 * batch * sum(a * b for a, b in zip(dims[:-1], dims[1:]))


def mfu(flops: float, seconds: float, peak_tflops: float, devices: int = 1) -> float:
    """Model FLOPs utilization: achieved FLOP/s over the dense peak of all devices."""
    _positive(flops=flops, seconds=seconds, peak_tflops=peak_tflops, devices=devices)
    return flops / seconds / (peak_tflops * 1e12 * devices)


def step_mfu(device: str, dims: list[int], batch: int, budget_s: float = 1.0) -> dict:
    """Time one SGD training step of a bias-free ReLU MLP on ``device`` and return its MFU."""
    from autograder.harness import time_fn
    seconds = time_fn(mlp_step(dims, batch, device), device=device, budget_s=budget_s).median_s
    flops = step_flops(dims, batch)
    peak = mfu_peak(device)
    return {"flops_per_step": flops, "seconds_per_step": seconds, "peak_tflops": peak,
            "mfu": mfu(flops, seconds, peak)}


# ---------------------------------------------------------------- expected answers
def _cost(case: dict) -> dict:
    try:
        return training_cost(case["params"], case["tokens"], case["gpus"], case["profile"], case["mfu"], case["price"])
    except ValueError:
        return dict(ERROR)


def _inventory(case: dict) -> list | None:
    """The rows of a fake case; None for the real machine (scored against what the grader's kernel detected)."""
    return None if case.get("real") else gpu_inventory(*inventory_fakes(case))


EXPECT = {
    "cost": _cost,
    "claim": check_claim,
    "cheapest": lambda case: cheapest_offer(case["offers"], case["job"]),
    "serve": lambda case: gpus_to_serve(case["model"], case["context"], case["batch"], case["gpu"]),
    "smi_log": lambda case: summarize_smi_text(case["text"]),
    "inventory": _inventory,
    "mfu": lambda case: {"flops_per_step": step_flops(case["dims"], case["batch"])},
}


# ---------------------------------------------------------------- hidden cases
def _bf16_profiles() -> list[str]:
    return [p.id for p in all_of() if p.peak("bf16") and p.memory_gib and p.bandwidth_gbs]


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


def _claim_hidden(rng) -> list:
    ids = _bf16_profiles()
    cases = []
    for factor in (rng.uniform(0.6, 1.9), 1.99, 2.01, rng.uniform(3, 10), rng.uniform(0.1, 0.45)):
        params = 10 ** rng.uniform(8.5, 11.5)
        case = {"label": "hidden", "params": params, "tokens": params * rng.uniform(10, 100),
                "gpus": rng.choice([8, 64, 256, 2048]), "profile": rng.choice(ids), "mfu": round(rng.uniform(0.2, 0.55), 3)}
        case["claimed_days"] = training_cost(case["params"], case["tokens"], case["gpus"], case["profile"], case["mfu"],
                                             1.0)["days"] * factor
        cases.append(case)
    return cases


def _cheapest_hidden(rng) -> list:
    ids = _bf16_profiles()
    cases = []
    for i in range(4):
        listed = []
        for j in range(rng.randint(4, 8)):
            prof = get_profile(rng.choice(ids))
            gpus = rng.choice([1, 2, 4, 8])
            listed.append({"name": f"offer_{j}", "gpus": gpus, "memory_gb_per_gpu": prof.memory_bytes / 1e9,
                           "tflops_per_gpu": prof.peak("bf16"), "price_per_hour": round(gpus * rng.uniform(0.5, 8), 2)})
        job = {"flops": 6 * 10 ** rng.uniform(9, 10.5) * 10 ** rng.uniform(10, 11), "mfu": round(rng.uniform(0.25, 0.5), 2),
               "memory_gb": rng.choice([16.0, 60.0, 150.0, 300.0]), "deadline_hours": rng.choice([2.0, 24.0, 168.0])}
        if i == 0:  # a cheap 8-GPU offer with a later copy: the tie must go to the first
            b200 = get_profile("b200")
            listed[0] = {"name": "offer_0", "gpus": 8, "memory_gb_per_gpu": b200.memory_bytes / 1e9,
                         "tflops_per_gpu": b200.peak("bf16"), "price_per_hour": 0.5}
            listed.append(dict(listed[0], name="offer_copy"))
            job["deadline_hours"] = 1e6
        if i == 3:
            job["deadline_hours"] = 1e-3  # nothing can finish
        cases.append({"offers": listed, "job": job})
    return cases


def _serve_hidden(rng) -> list:
    ids = _bf16_profiles()
    cases = []
    while len(cases) < 4:
        layers = rng.choice([24, 32, 40, 60, 80, 126])
        model = {"params": 10 ** rng.uniform(9, 11.7), "weight_bytes": rng.choice([0.5, 1, 2]), "layers": layers,
                 "kv_heads": rng.choice([1, 4, 8, 16]), "head_dim": rng.choice([64, 128]), "kv_bytes": rng.choice([1, 2])}
        case = {"model": model, "context": rng.choice([2048, 8192, 32768, 131072]), "batch": rng.choice([1, 8, 32, 128]),
                "gpu": gpu_case(rng.choice(ids), rng.choice([0.85, 0.9]))}
        total = llm.weight_bytes(model) + llm.kv_cache_bytes(model, case["batch"], case["context"])
        ratio = total / (case["gpu"]["memory_gb"] * 1e9 * case["gpu"]["usable_fraction"])
        if abs(ratio - round(ratio)) > 1e-6:  # keep away from exact multiples, where rounding decides
            cases.append(case)
    return cases


def _smi_hidden(rng) -> list:
    variants = [dict(units=False, na=True), dict(event_name=True, shuffle=True), dict(na=True, shuffle=True, units=True)]
    return [{"name": f"hidden_{i}.csv",
             "text": make_smi_log(rng, rows=rng.randint(50, 140), max_clock=rng.choice([1980, 1755, 2520]), **v)}
            for i, v in enumerate(variants)]


def _inventory_hidden(rng) -> list:
    def pick(k):
        return [rng.randrange(len(GPU_CATALOGUE)) for _ in range(k)]
    some = pick(rng.randint(1, 4))
    return [{"nvml": None, "fail": None, "torch": pick(2)},
            {"nvml": some, "fail": "count", "torch": some},
            {"nvml": some, "fail": "memory", "torch": some},
            {"nvml": pick(3), "fail": None, "torch": [], "bytes_names": True},
            {"nvml": [], "fail": "driver", "torch": []},
            {"nvml": None, "fail": None, "torch": None},
            {"nvml": [], "fail": None, "torch": []}]


def _mfu_hidden(rng) -> list:
    width = rng.choice([384, 640, 768])
    return [{"dims": [width, 2 * width, 2 * width, width], "batch": rng.choice([128, 192])}]


HIDDEN = {
    "cost": _cost_hidden,
    "claim": _claim_hidden,
    "cheapest": _cheapest_hidden,
    "serve": _serve_hidden,
    "smi_log": _smi_hidden,
    "inventory": _inventory_hidden,
    "mfu": _mfu_hidden,
}
