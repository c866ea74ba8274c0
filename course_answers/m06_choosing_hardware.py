"""Reference answers, hidden cases and known mistakes of module 06 (choosing hardware).

Conventions (the exercise states them too): training FLOPs = 6 x parameters x tokens
(Kaplan et al. 2020; Hoffmann et al. 2022), MFU = achieved model FLOP/s over the dense
peak (Chowdhery et al. 2022, appendix B), GB = 10^9 bytes, GiB = 2^30 bytes (device memory
is binary: a vendor's "80 GB" is 80 GiB), TFLOP/s = 10^12 FLOP/s.

The expected answer of a task whose mistakes are known is ``{"answer": ..., "slips": {name: ...}}``: the
answer of each wrong function of :data:`MISTAKES` on the same case, so the visible checks can name a mistake
by the value it leaves (the scoring in ``tasks.py`` only compares).
"""
from __future__ import annotations

import csv
import datetime as _dt
import io
import math
from pathlib import Path
from typing import Any

from autograder import llm
from autograder.checks.core import Recorded
from autograder.fakes.nvml import GPU_CATALOGUE
from autograder.i18n import msg
from autograder.knowledge import forward_flops, training_flops
from autograder.modules.m06_choosing_hardware.lesson import mfu_peak
from autograder.modules.m06_choosing_hardware.tasks import (ERROR, STEP_BUDGET_S, TASKS, gpu_case, inventory_fakes,
                                                             rows_as_data)
from autograder.modules.m06_choosing_hardware.tasks import _smi_answer as smi_answer
from autograder.profiles import all_of, get as get_profile

HOUR = 3600.0
GIB = 2**30
OPTIMISTIC_MFU = 0.6  # above this a claim needs a better MFU than well-tuned large runs report (PaLM: 0.462)


def _positive(**values: Any) -> None:
    for name, value in values.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0 or not math.isfinite(value):
            raise ValueError(msg("m06.not_positive", name=name, value=value).text())


def _slips(task: str, *args) -> dict:
    """What each known wrong answer of ``task`` gives for the same inputs (``None`` where it raises)."""
    out = {}
    for name, wrong in MISTAKES[task].items():
        if isinstance(wrong, Recorded):
            continue
        try:
            out[name] = wrong(*args)
        except Exception:  # a wrong answer may fail where the right one does not
            out[name] = None
    return out


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
    flops = training_flops(params, tokens)
    hours = flops / (gpus * peak * 1e12 * mfu) / HOUR
    gpu_hours = hours * gpus
    return {"flops": flops, "hours": hours, "days": hours / 24.0, "gpu_hours": gpu_hours,
            "cost": gpu_hours * price_per_gpu_hour}


# ---------------------------------------------------------------- task 2: the MFU a claim needs
def claim_gpu_hours(claim: dict) -> float:
    """The GPU-hours a claim allows: days x 24 x GPUs, GPU-hours as given, or dollars / price per GPU-hour."""
    unit, value = claim["unit"], claim["claimed"]
    if unit == "days":
        return value * 24.0 * claim["gpus"]
    if unit == "gpu_hours":
        return value
    if unit == "usd":
        return value / claim["price_per_gpu_hour"]
    raise ValueError(f"unknown unit {unit!r}")


def verdict(mfu: float) -> str:
    """impossible above the peak, optimistic above what well-tuned large runs reach, else plausible."""
    return "impossible" if mfu > 1 else "optimistic" if mfu > OPTIMISTIC_MFU else "plausible"


def implied_mfu(claim: dict) -> dict:
    """The MFU a claimed time or budget needs (6ND over the GPU-hours at the dense bf16 peak) and a verdict."""
    gpu_hours = claim_gpu_hours(claim)
    peak = get_profile(claim["profile"]).peak("bf16")
    mfu = training_flops(claim["params"], claim["tokens"]) / (gpu_hours * HOUR * peak * 1e12)
    return {"gpu_hours": gpu_hours, "mfu": mfu, "verdict": verdict(mfu)}


# ---------------------------------------------------------------- task 3: serving memory and bound
def gpus_to_serve(model: dict, context: int, batch: int, gpu: dict) -> dict:
    """GPUs whose usable memory (GiB) holds weights + KV cache, and the decode tokens/s upper bound.

    Each decode step reads every weight and the whole KV cache once; with the model split
    over ``gpus`` GPUs their bandwidths add up, and one step yields ``batch`` tokens.
    """
    weights = llm.weight_bytes(model)
    kv = llm.kv_cache_bytes(model, batch, context)
    total = weights + kv
    usable = gpu["memory_gib"] * GIB * gpu["usable_fraction"]
    gpus = max(1, math.ceil(total / usable - 1e-9))
    tokens_per_s = batch * gpus * gpu["bandwidth_gbs"] * 1e9 / total
    return {"weights_gb": weights / 1e9, "kv_cache_gb": kv / 1e9, "total_gb": total / 1e9, "gpus": gpus,
            "tokens_per_s_max": tokens_per_s}


# ---------------------------------------------------------------- task 4: the cheapest deployment
NO_PLAN = {"offer": None, "batch": None, "replicas": None, "cost_per_hour": None}


def replica_batch(model: dict, context: int, offer: dict, target: dict, gib: float = GIB) -> int:
    """The most sequences one replica (one instance, the model split over its GPUs) runs: memory and latency (0: none)."""
    weights, per_seq = llm.weight_bytes(model), llm.kv_cache_bytes(model, 1, context)
    memory = offer["gpus"] * offer["memory_gib"] * gib * target["usable_fraction"]
    bytes_in_time = target["ms_per_token"] / 1000 * offer["gpus"] * offer["bandwidth_gbs"] * 1e9
    room = min(memory, bytes_in_time) - weights
    return max(0, math.floor(room / per_seq + 1e-9))


def _plan(model: dict, context: int, target: dict, offer: dict, batch: int, replicas_of=None) -> dict:
    """One offer's deployment at ``batch`` sequences per replica: replicas for the token rate and its hourly cost."""
    step_s = (llm.weight_bytes(model) + batch * llm.kv_cache_bytes(model, 1, context)) / (
        offer["gpus"] * offer["bandwidth_gbs"] * 1e9)
    need = target["tokens_per_s"] / (batch / step_s)
    replicas = (replicas_of or (lambda x: math.ceil(x - 1e-9)))(need)
    return {"offer": offer["id"], "batch": batch, "replicas": replicas,
            "cost_per_hour": replicas * offer["price_per_hour"]}


def cheapest_deployment(model: dict, context: int, target: dict, offers: list[dict]) -> dict:
    """The offer, sequences per replica and replica count that serve ``target`` at the lowest cost per hour."""
    best = None
    for offer in offers:
        batch = replica_batch(model, context, offer, target)
        if batch < 1:
            continue
        plan = _plan(model, context, target, offer, batch)
        if best is None or plan["cost_per_hour"] < best["cost_per_hour"]:
            best = plan
    return best or dict(NO_PLAN)


# ---------------------------------------------------------------- task 5: why is this run slow?
IDLE_BIT = 0x01
POWER_BITS = 0x04 | 0x80        # SwPowerCap, HwPowerBrakeSlowdown
THERMAL_BITS = 0x20 | 0x40      # SwThermalSlowdown, HwThermalSlowdown
SLOWDOWN_BITS = POWER_BITS | THERMAL_BITS | 0x08  # and HwSlowdown
REASON_COLUMNS = ("clocks_throttle_reasons.active", "clocks_event_reasons.active")
CAUSES = ("healthy", "power", "thermal", "input", "hung")


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


def read_log(text: str) -> list[dict]:
    """The data rows of a log as dicts keyed by the header's field names (units dropped)."""
    reader = csv.reader(io.StringIO(text), skipinitialspace=True)
    header = [_field(h) for h in next(reader)]
    reason = next(c for c in REASON_COLUMNS if c in header)
    rows = []
    for row in reader:
        if row and any(c.strip() for c in row):
            r = dict(zip(header, (c.strip() for c in row)))
            rows.append({"util": _number(r["utilization.gpu"]), "memory": _number(r["memory.used"]),
                         "power": _number(r["power.draw"]), "clock": _number(r["clocks.sm"]),
                         "bits": int(r[reason], 16) if r[reason].startswith("0x") else 0})
    return rows


def cause_shares(rows: list[dict]) -> dict:
    """Share of the busy samples (no GpuIdle bit) that show each cause.

    thermal / power: a thermal / power reason bit set while the SM clock is below the log's highest;
    input: utilization below 80% at the highest clock with no slowdown bit (the GPU waits for data);
    hung: utilization 95% or more while the power draw is under 30% of the log's highest (a kernel
    spins, doing no work: a collective waiting for a rank that is gone).
    """
    top_clock = max((r["clock"] for r in rows if r["clock"] is not None), default=0)
    top_power = max((r["power"] for r in rows if r["power"] is not None), default=0)
    busy = [r for r in rows if not r["bits"] & IDLE_BIT]
    counts = dict.fromkeys(("thermal", "power", "input", "hung"), 0)
    for r in busy:
        slow = r["clock"] is not None and r["clock"] < top_clock
        if r["bits"] & THERMAL_BITS and slow:
            counts["thermal"] += 1
        elif r["bits"] & POWER_BITS and slow:
            counts["power"] += 1
        elif r["util"] is not None and r["util"] < 80 and not r["bits"] & SLOWDOWN_BITS:
            counts["input"] += 1
        elif r["util"] is not None and r["util"] >= 95 and r["power"] is not None and r["power"] < 0.3 * top_power:
            counts["hung"] += 1
    return {k: v / len(busy) if busy else 0.0 for k, v in counts.items()}


def diagnose(rows: list[dict]) -> str:
    """The cause of a slow run: hung when a fifth of the busy time spins, else the largest cause above 10%."""
    shares = cause_shares(rows)
    if shares["hung"] >= 0.2:
        return "hung"
    name = max(("thermal", "power", "input"), key=shares.get)
    return name if shares[name] >= 0.1 else "healthy"


def summarize_smi_text(text: str) -> dict:
    """Samples, mean utilization (%), peak memory (MiB) and the cause of a log's slowness."""
    rows = read_log(text)
    utils = [r["util"] for r in rows if r["util"] is not None]
    mems = [r["memory"] for r in rows if r["memory"] is not None]
    return {"samples": len(rows), "mean_utilization": sum(utils) / len(utils) if utils else None,
            "peak_memory_mib": max(mems) if mems else None, "cause": diagnose(rows)}


def summarize_smi_log(path: str | Path) -> dict:
    """:func:`summarize_smi_text` of the log file at ``path``."""
    return summarize_smi_text(Path(path).read_text(encoding="utf-8"))


# The generator of the logs (visible ones are files in the module's data folder, hidden ones are drawn).
REASON_BITS = {"idle": 0x1, "power": 0x4, "hw": 0x8, "thermal": 0x20, "hw_thermal": 0x40, "brake": 0x80}
LOG_COLUMNS = ("timestamp", "utilization.gpu", "memory.used", "temperature.gpu", "power.draw", "clocks.sm",
               "clocks_throttle_reasons.active")
UNITS = {"utilization.gpu": "%", "memory.used": "MiB", "power.draw": "W", "clocks.sm": "MHz"}


def make_smi_log(rng, cause: str = "healthy", rows: int = 80, units: bool = True, event_name: bool = False,
                 shuffle: bool = False, na: bool = False, max_clock: int = 1980, power_limit: float = 700.0,
                 memory_mib: float = 80_000, start: str = "2026/03/14 09:12:01", both_thermal: bool = False) -> str:
    """A synthetic ``nvidia-smi --query-gpu=... --format=csv -l 1`` log of a training run with one ``cause``.

    Idle at both ends (GpuIdle, low clock), training between. The cause marks 30-45% of the
    busy samples (hung: everything after a point 35-55% into the run): ``power`` (SwPowerCap,
    power at the limit, clock lowered), ``thermal`` (a card that runs hot; after the first quarter,
    thermal bits at 86-90 °C, clock lowered),
    ``input`` (utilization 15-60% at full clock: the GPU waits for data), ``hung`` (utilization
    100% at near-idle power: a kernel spins). Any log may carry up to two stray samples (a
    power-cap blip, a short dip in utilization). ``units=False`` imitates ``--format=csv,nounits``,
    ``event_name`` the newer ``clocks_event_reasons.active`` header, ``shuffle`` another column
    order, ``na`` some '[N/A]' values; ``both_thermal``: every thermal sample has both thermal bits (0x60),
    else about half of them.
    """
    t0 = _dt.datetime.strptime(start, "%Y/%m/%d %H:%M:%S")
    names = list(LOG_COLUMNS)
    if event_name:
        names[-1] = "clocks_event_reasons.active"
    head, tail = rng.randint(5, 8), rng.randint(4, 7)
    busy = list(range(head, rows - tail))
    marked: set[int] = set()
    if cause == "hung":
        cut = busy[int(len(busy) * rng.uniform(0.35, 0.55))]
        marked = {i for i in busy if i >= cut}
    elif cause != "healthy":
        want = int(len(busy) * rng.uniform(0.3, 0.45))
        starts = busy[len(busy) // 4:-3] if cause == "thermal" else busy[:-3]  # heat builds up first
        while len(marked) < want:
            first = rng.choice(starts)
            marked.update(i for i in range(first, first + rng.randint(3, 7)) if i in busy)
    stray = {i: rng.choice(["blip", "dip"]) for i in rng.sample([i for i in busy if i not in marked], rng.randint(0, 2))}
    idle_power = 0.1 * power_limit
    hot = cause == "thermal"  # a card that runs hot: warm at the start, a higher plateau
    temp, mem, top_mem = (62.0 if hot else 33.0), 0.0, memory_mib * rng.uniform(0.75, 0.9)
    samples = []
    for i in range(rows):
        stamp = (t0 + _dt.timedelta(seconds=i, milliseconds=rng.randint(0, 999))).strftime("%Y/%m/%d %H:%M:%S.%f")[:-3]
        reasons, clock = 0, max_clock
        if i < head or i >= rows - tail:
            util, power, clock, reasons, mem = 0, idle_power * rng.uniform(0.95, 1.08), 345, REASON_BITS["idle"], 0.0
            temp = max(32.0, temp - 1.5)
        else:
            mem = min(mem + top_mem / 4, top_mem) + rng.uniform(-40, 40)
            util = rng.choice([100, 100, 99, 98, 97])
            warmer = temp + rng.uniform(0.5, 2.0)
            plateau = (83.0 if hot else 78.0) + rng.uniform(-1, 1)
            temp = min(warmer, plateau) if not (cause == "hung" and i in marked) else max(45.0, temp - 0.8)
            power = power_limit * rng.uniform(0.74, 0.93)
            if i in marked:
                if cause == "power":
                    reasons, power = REASON_BITS["power"], power_limit - rng.uniform(0, 2)
                    clock = max_clock - rng.choice([90, 135, 180, 240])
                elif cause == "thermal":
                    hw = rng.choice([0, REASON_BITS["hw_thermal"]])  # drawn either way: the same seed, the same log
                    hw = REASON_BITS["hw_thermal"] if both_thermal else hw
                    reasons = REASON_BITS["thermal"] | hw
                    temp, clock = rng.uniform(86, 90), max_clock - rng.choice([270, 330, 390])
                elif cause == "input":
                    util, power = rng.randint(15, 60), power_limit * rng.uniform(0.3, 0.5)
                else:  # hung: a kernel spins (a collective waiting for a rank that is gone): busy, no work
                    util, power = 100, idle_power * rng.uniform(1.0, 1.6)
            elif i in stray:
                if stray[i] == "blip":
                    reasons, power, clock = REASON_BITS["power"], power_limit - rng.uniform(0, 2), max_clock - 90
                else:
                    util = rng.randint(60, 79)
        values = {"timestamp": stamp, "utilization.gpu": str(util), "memory.used": str(int(max(mem, 0))),
                  "temperature.gpu": str(int(temp)), "power.draw": f"{power:.2f}", "clocks.sm": str(clock),
                  names[-1]: f"0x{reasons:016x}"}
        if na and rng.random() < 0.07:
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


# The visible logs (data/gpu_log_*.csv, shipped with the exercise): seed, cause, GPU (clock, power limit, memory), layout.
VISIBLE_LOGS = {
    "gpu_log_a.csv": (61, "input", (1980, 700.0, 80_000), dict(rows=90, na=True)),
    "gpu_log_b.csv": (62, "healthy", (1410, 400.0, 80_000), dict(rows=60, units=False, shuffle=True)),
    "gpu_log_c.csv": (63, "hung", (1980, 700.0, 80_000), dict(rows=100, event_name=True)),
    "gpu_log_d.csv": (64, "thermal", (2040, 72.0, 23_000), dict(rows=80, shuffle=True, na=True, both_thermal=True)),
    "gpu_log_e.csv": (65, "power", (2520, 450.0, 24_000), dict(rows=70, event_name=True, units=False)),
}


def visible_log(name: str) -> str:
    """The text of a visible log, from its recipe in :data:`VISIBLE_LOGS`."""
    import random
    seed, cause, (clock, power, memory), layout = VISIBLE_LOGS[name]
    return make_smi_log(random.Random(seed), cause, max_clock=clock, power_limit=power, memory_mib=memory, **layout)


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
                                 "memory_gib": pynvml_module.nvmlDeviceGetMemoryInfo(handle).total / GIB,
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
        rows.append({"index": i, "name": props.name, "memory_gib": props.total_memory / GIB,
                     "compute_capability": f"{props.major}.{props.minor}", "source": "torch"})
    return rows


# ---------------------------------------------------------------- task 7: a partly frozen step
def _layer_flops(dims: list[int], batch: int) -> list[float]:
    return [forward_flops(a * b, batch) for a, b in zip(dims[:-1], dims[1:])]


def step_flops(dims: list[int], batch: int, frozen: int = 0) -> float:
    """Matmul FLOPs one SGD step of a bias-free MLP runs with its first ``frozen`` layers frozen.

    Forward: 2·B·in·out per layer. Backward: a weight gradient (2·B·in·out) for each trainable layer, and
    an input gradient (2·B·in·out) for each layer with a trainable layer before it: autograd computes
    only the gradients something needs (not the input's, not a frozen layer's).
    """
    layers = _layer_flops(dims, batch)
    return sum(layers) + sum(layers[frozen:]) + sum(layers[frozen + 1:])


def step_utilization(make_step, device: str, dims: list[int], batch: int, frozen: int,
                     budget_s: float = STEP_BUDGET_S) -> dict:
    """Time one SGD step of a bias-free ReLU MLP with frozen leading layers (built by ``make_step``, as
    :func:`mlp_step`); its FLOPs, the peak and the share of the peak the step uses."""
    from autograder.harness import time_fn
    seconds = time_fn(make_step(dims, batch, device, frozen), device=device, budget_s=budget_s).median_s
    flops = step_flops(dims, batch, frozen)
    peak = mfu_peak(device)
    return {"flops_per_step": flops, "seconds_per_step": seconds, "peak_tflops": peak,
            "utilization": flops / seconds / (peak * 1e12)}


def mfu(flops: float, seconds: float, peak_tflops: float, devices: int = 1) -> float:
    """Model FLOPs utilization: achieved FLOP/s over the dense peak of all devices."""
    _positive(flops=flops, seconds=seconds, peak_tflops=peak_tflops, devices=devices)
    return flops / seconds / (peak_tflops * 1e12 * devices)


# ---------------------------------------------------------------- known mistakes (the wrong answers)
def _cost_two_nd(params, tokens, gpus, profile_id, mfu_, price):
    r = training_cost(params, tokens, gpus, profile_id, mfu_, price)
    forward = forward_flops(params, tokens) / r["flops"]  # the forward pass's share: 2·N·D of 6·N·D
    return {k: v * forward for k, v in r.items()}


def _cost_days_not_hours(params, tokens, gpus, profile_id, mfu_, price):
    r = training_cost(params, tokens, gpus, profile_id, mfu_, price)  # seconds / 86400, as the lesson's days
    return dict(r, hours=r["hours"] / 24, gpu_hours=r["gpu_hours"] / 24, cost=r["cost"] / 24)


def _cost_per_gpu(params, tokens, gpus, profile_id, mfu_, price):
    r = training_cost(params, tokens, gpus, profile_id, mfu_, price)
    return dict(r, cost=r["hours"] * price)


def _cost_mfu_percent(params, tokens, gpus, profile_id, mfu_, price):
    peak = get_profile(profile_id).peak("bf16")
    hours = training_flops(params, tokens) / (gpus * peak * 1e12 * mfu_) / HOUR
    return {"flops": training_flops(params, tokens), "hours": hours, "days": hours / 24, "gpu_hours": hours * gpus,
            "cost": hours * gpus * price}


def _claim_with(claim: dict, gpu_hours: float, flops=training_flops, scale: float = 1.0) -> dict:
    mfu_ = flops(claim["params"], claim["tokens"]) / (
        gpu_hours * HOUR * get_profile(claim["profile"]).peak("bf16") * 1e12) * scale
    return {"gpu_hours": gpu_hours, "mfu": mfu_, "verdict": verdict(mfu_)}


def _claim_two_nd(claim):
    return _claim_with(claim, claim_gpu_hours(claim), flops=forward_flops)


def _claim_days_as_hours(claim):
    if claim["unit"] != "days":
        return implied_mfu(claim)
    return _claim_with(claim, claim["claimed"] * claim["gpus"])


def _claim_days_without_gpus(claim):
    if claim["unit"] != "days":
        return implied_mfu(claim)
    return _claim_with(claim, claim["claimed"] * 24.0)


def _claim_usd_times_price(claim):
    if claim["unit"] != "usd":
        return implied_mfu(claim)
    return _claim_with(claim, claim["claimed"] * claim["price_per_gpu_hour"])


def _claim_gpu_hours_as_wall(claim):
    if claim["unit"] != "gpu_hours":
        return implied_mfu(claim)
    return _claim_with(claim, claim["claimed"] * claim["gpus"])


def _claim_percent(claim):
    return _claim_with(claim, claim_gpu_hours(claim), scale=100.0)


def _serve_gb_for_gib(model, context, batch, gpu):
    return gpus_to_serve(model, context, batch, dict(gpu, memory_gib=gpu["memory_gib"] * 1e9 / GIB))


def _serve_keys_only(model, context, batch, gpu):
    return gpus_to_serve(dict(model, kv_bytes=model["kv_bytes"] / 2), context, batch, gpu)


def _serve_round(model, context, batch, gpu):
    r = gpus_to_serve(model, context, batch, gpu)
    total = r["total_gb"] * 1e9
    gpus = max(1, round(total / (gpu["memory_gib"] * GIB * gpu["usable_fraction"])))
    return dict(r, gpus=gpus, tokens_per_s_max=batch * gpus * gpu["bandwidth_gbs"] * 1e9 / total)


def _serve_one_gpu_bandwidth(model, context, batch, gpu):
    r = gpus_to_serve(model, context, batch, gpu)
    return dict(r, tokens_per_s_max=r["tokens_per_s_max"] / r["gpus"])


def _deploy(model, context, target, offers, batch_of, replicas_of=None, key=None):
    best = None
    for offer in offers:
        batch = batch_of(offer)
        if batch < 1:
            continue
        plan = _plan(model, context, target, offer, batch, replicas_of)
        rank = (key or (lambda p, o: p["cost_per_hour"]))(plan, offer)
        if best is None or rank < best[0]:
            best = (rank, plan)
    return best[1] if best else dict(NO_PLAN)


def _deploy_hourly_price(model, context, target, offers):
    return _deploy(model, context, target, offers, lambda o: replica_batch(model, context, o, target),
                   key=lambda plan, offer: offer["price_per_hour"])


def _deploy_price_per_gpu(model, context, target, offers):
    """The instance's hourly price taken as one GPU's: each replica costs gpus × price_per_hour."""
    per_gpu = [dict(o, price_per_hour=o["price_per_hour"] * o["gpus"]) for o in offers]
    return _deploy(model, context, target, per_gpu, lambda o: replica_batch(model, context, o, target))


def _deploy_gb_for_gib(model, context, target, offers):
    return _deploy(model, context, target, offers, lambda o: replica_batch(model, context, o, target, gib=1e9))


def _deploy_one_gpu(model, context, target, offers):
    """Memory and bandwidth of one GPU for the whole instance (the price is still the instance's)."""
    alone = [dict(o, gpus=1) for o in offers]
    return _deploy(model, context, target, alone, lambda o: replica_batch(model, context, o, target))


def _deploy_no_latency(model, context, target, offers):
    return _deploy(model, context, target, offers,
                   lambda o: replica_batch(model, context, o, dict(target, ms_per_token=math.inf)))


def _deploy_batch_one(model, context, target, offers):
    return _deploy(model, context, target, offers, lambda o: min(1, replica_batch(model, context, o, target)))


def _deploy_round(model, context, target, offers):
    return _deploy(model, context, target, offers, lambda o: replica_batch(model, context, o, target),
                   replicas_of=lambda x: max(1, round(x)))


def _wrong_summary(path, idle_throttles=False, trust_utilization=False, miss_stalls=False, bits_equal=False):
    """The reference's summary with one rule of the diagnosis left out (``bits_equal``: the reasons compared with
    single bit values, ``bits in (0x20, 0x40, 0x8)``, instead of tested with ``&``: 0x60 is missed)."""
    rows = read_log(Path(path).read_text(encoding="utf-8"))
    top_clock = max(r["clock"] for r in rows if r["clock"] is not None)
    top_power = max(r["power"] for r in rows if r["power"] is not None)
    counts = dict.fromkeys(("thermal", "power", "input", "hung"), 0)
    considered = rows if idle_throttles else [r for r in rows if not r["bits"] & IDLE_BIT]
    power_bits = POWER_BITS | (IDLE_BIT if idle_throttles else 0)
    if bits_equal:
        thermal, power = (lambda bits: bits in (0x20, 0x40, 0x8)), (lambda bits: bits in (0x4, 0x80))
    else:
        thermal, power = (lambda bits: bits & THERMAL_BITS), (lambda bits: bits & power_bits)
    for r in considered:
        slow = r["clock"] is not None and r["clock"] < top_clock
        if thermal(r["bits"]) and slow:
            counts["thermal"] += 1
        elif power(r["bits"]) and slow:
            counts["power"] += 1
        elif not miss_stalls and r["util"] is not None and r["util"] < 80 and not r["bits"] & SLOWDOWN_BITS:
            counts["input"] += 1
        elif (not trust_utilization and r["util"] is not None and r["util"] >= 95 and r["power"] is not None
              and r["power"] < 0.3 * top_power):
            counts["hung"] += 1
    shares = {k: v / len(considered) for k, v in counts.items()}
    cause = "hung" if shares["hung"] >= 0.2 else max(("thermal", "power", "input"), key=shares.get)
    utils = [r["util"] for r in rows if r["util"] is not None]
    return {"samples": len(rows), "mean_utilization": sum(utils) / len(utils),
            "peak_memory_mib": max(r["memory"] for r in rows if r["memory"] is not None),
            "cause": cause if cause == "hung" or shares[cause] >= 0.1 else "healthy"}


def _smi_na_rows_dropped(path):
    """Counts only the rows without an '[N/A]' value as samples."""
    text = Path(path).read_text(encoding="utf-8")
    lines = [line for line in text.splitlines()[1:] if line.strip()]
    return dict(summarize_smi_text(text), samples=sum("[N/A]" not in line for line in lines))


def _smi_busy_mean(path):
    """The mean utilization of the busy rows only (GpuIdle rows left out)."""
    text = Path(path).read_text(encoding="utf-8")
    utils = [r["util"] for r in read_log(text) if r["util"] is not None and not r["bits"] & IDLE_BIT]
    return dict(summarize_smi_text(text), mean_utilization=sum(utils) / len(utils))


def _smi_fixed_columns(path):
    """Reads utilization and memory from the columns where the lesson's log has them (2nd and 3rd)."""
    text = Path(path).read_text(encoding="utf-8")
    lines = list(csv.reader(io.StringIO(text), skipinitialspace=True))[1:]
    utils = [u for u in (_number(r[1]) for r in lines if r) if u is not None]
    mems = [m for m in (_number(r[2]) for r in lines if r) if m is not None]
    right = summarize_smi_text(text)
    return dict(right, mean_utilization=sum(utils) / len(utils) if utils else None,
                peak_memory_mib=max(mems) if mems else None)


def _smi_na_as_zero(path):
    text = Path(path).read_text(encoding="utf-8")
    reader = csv.reader(io.StringIO(text), skipinitialspace=True)
    header = [_field(h) for h in next(reader)]
    col = header.index("utilization.gpu")
    utils = [_number(r[col]) or 0.0 for r in reader if r]
    return dict(summarize_smi_text(text), mean_utilization=sum(utils) / len(utils))


def _inventory_without(pynvml_module, torch_module, shutdown_on_error=True, fallback=True, gib=GIB,
                       shutdown_always=False, decode=True):
    rows, name_of = None, _text if decode else (lambda name: name)
    if pynvml_module is not None:
        started = True
        try:
            pynvml_module.nvmlInit()
        except Exception:
            started = False
        if started:
            try:
                rows = [{"index": i, "name": name_of(pynvml_module.nvmlDeviceGetName(i)),
                         "memory_gib": pynvml_module.nvmlDeviceGetMemoryInfo(pynvml_module.nvmlDeviceGetHandleByIndex(i)).total / gib,
                         "compute_capability": "{}.{}".format(*pynvml_module.nvmlDeviceGetCudaComputeCapability(i)),
                         "source": "nvml"} for i in range(pynvml_module.nvmlDeviceGetCount())]
                pynvml_module.nvmlShutdown()
                return rows
            except Exception:
                if shutdown_on_error:
                    pynvml_module.nvmlShutdown()
                if not fallback:
                    return []
        else:
            if shutdown_always:
                pynvml_module.nvmlShutdown()
            if not fallback:
                return []
    cuda = getattr(torch_module, "cuda", None)
    if cuda is None or not cuda.is_available():
        return []
    return [{"index": i, "name": cuda.get_device_properties(i).name,
             "memory_gib": cuda.get_device_properties(i).total_memory / gib,
             "compute_capability": f"{cuda.get_device_properties(i).major}.{cuda.get_device_properties(i).minor}",
             "source": "torch"} for i in range(cuda.device_count())]


def _flops_if(dims, batch, frozen, how):
    """The FLOPs a known miscount gives."""
    layers = _layer_flops(dims, batch)
    return {"all_trainable": training_flops(sum(a * b for a, b in zip(dims[:-1], dims[1:])), batch),  # the MFU convention
            "forward_only": sum(layers),
            "first_input_grad": sum(layers) + 2 * sum(layers[frozen:]),       # every trainable layer: 2 gradients
            "no_input_grads": sum(layers) + sum(layers[frozen:])}[how]


def _recorded_step(seconds_ratio: float = 1.0, flops: str | None = None, percent: bool = False,
                   peak: float | None = None, calls: int = 12, call_ratio: float = 1.0) -> Recorded:
    """A measured answer for the visible MFU case as the grader would record it (3 rounds, reference 20 ms;
    ``calls``: how often the step built in each round was called, each call ``call_ratio`` x the reference on the
    course's clock)."""
    case, ref, rounds = TASKS["mfu"].visible()[0], 0.02, TASKS["mfu"].rounds
    count = step_flops(case["dims"], case["batch"], case["frozen"]) if flops is None else _flops_if(
        case["dims"], case["batch"], case["frozen"], flops)
    seconds = ref * seconds_ratio
    peak_tflops = count / ref / 1e12 / 0.5 if peak is None else peak  # a device at which the step reaches 50%
    answer = {"flops_per_step": count, "seconds_per_step": seconds, "peak_tflops": peak_tflops,
              "utilization": count / seconds / (peak_tflops * 1e12) * (100 if percent else 1), "calls": [calls]}
    spans = [[ref * call_ratio, "step"]] * calls
    return Recorded({"rounds": [answer] * rounds,
                     "observed": {"walls": [1.0] * rounds, "reference": [{"seconds": ref}] * rounds,
                                  "spans": [spans] * rounds}})


MISTAKES = {
    "cost": {"two_nd": _cost_two_nd, "days_not_hours": _cost_days_not_hours, "cost_per_gpu": _cost_per_gpu,
             "mfu_percent": _cost_mfu_percent},
    "claim": {"two_nd": _claim_two_nd, "days_as_hours": _claim_days_as_hours, "days_without_gpus": _claim_days_without_gpus,
              "gpu_hours_as_wall": _claim_gpu_hours_as_wall, "usd_times_price": _claim_usd_times_price,
              "percent": _claim_percent},
    "serve": {"gb_for_gib": _serve_gb_for_gib, "keys_only": _serve_keys_only, "round_gpus": _serve_round,
              "one_gpu_bandwidth": _serve_one_gpu_bandwidth},
    "deploy": {"hourly_price": _deploy_hourly_price, "price_per_gpu": _deploy_price_per_gpu,
               "gb_for_gib": _deploy_gb_for_gib, "one_gpu": _deploy_one_gpu, "no_latency": _deploy_no_latency,
               "batch_one": _deploy_batch_one, "round_replicas": _deploy_round},
    "smi_log": {"idle_as_throttle": lambda path: _wrong_summary(path, idle_throttles=True),
                "utilization_trusted": lambda path: _wrong_summary(path, trust_utilization=True),
                "stall_missed": lambda path: _wrong_summary(path, miss_stalls=True),
                "bits_equal": lambda path: _wrong_summary(path, bits_equal=True),
                "fixed_columns": _smi_fixed_columns, "na_as_zero": _smi_na_as_zero,
                "na_rows_dropped": _smi_na_rows_dropped, "busy_mean": _smi_busy_mean},
    "inventory": {"no_shutdown_on_error": lambda nvml, torch: _inventory_without(nvml, torch, shutdown_on_error=False),
                  "no_fallback": lambda nvml, torch: _inventory_without(nvml, torch, fallback=False),
                  "gb_for_gib": lambda nvml, torch: _inventory_without(nvml, torch, gib=1e9),
                  "bytes_name": lambda nvml, torch: _inventory_without(nvml, torch, decode=False),
                  "shutdown_without_init": lambda nvml, torch: _inventory_without(nvml, torch, shutdown_always=True)},
    "mfu": {"all_trainable": _recorded_step(flops="all_trainable"), "forward_only": _recorded_step(flops="forward_only"),
            "first_input_grad": _recorded_step(flops="first_input_grad"),
            "no_input_grads": _recorded_step(flops="no_input_grads"), "percent": _recorded_step(percent=True),
            "one_call": _recorded_step(seconds_ratio=1.49, calls=1),  # one un-warmed perf_counter call
            "cold_start": _recorded_step(seconds_ratio=8.0), "no_sync": _recorded_step(seconds_ratio=1 / 20, call_ratio=1 / 25)},  # a GPU: a call returns at launch
}


# ---------------------------------------------------------------- expected answers
def _cost(case: dict) -> dict:
    args = [case[k] for k in ("params", "tokens", "gpus", "profile", "mfu", "price")]
    try:
        answer = training_cost(*args)
    except ValueError:
        answer = dict(ERROR)
    return {"answer": answer, "slips": _slips("cost", *args)}


def _smi(case: dict) -> dict:
    slips = {name: smi_answer(wrong, case) for name, wrong in MISTAKES["smi_log"].items()}  # on the file the check writes
    return {"answer": summarize_smi_text(case["text"]), "slips": slips}


def _inventory(case: dict) -> dict | None:
    """The rows of a fake case with the known slips; None for the real machine (scored against what it detects)."""
    if case.get("real"):
        return None
    slips = {}
    for name, wrong in MISTAKES["inventory"].items():
        nvml, torch_mod = inventory_fakes(case)
        rows = rows_as_data(wrong(nvml, torch_mod))
        slips[name] = {"rows": rows, "shutdown": nvml.calls["shutdown"] if nvml else 0}
    return {"answer": gpu_inventory(*inventory_fakes(case)), "slips": slips}


def _step(case: dict) -> dict:
    dims, batch, frozen = case["dims"], case["batch"], case["frozen"]
    return {"flops_per_step": step_flops(dims, batch, frozen),
            "slips": {name: _flops_if(dims, batch, frozen, name)
                      for name in ("all_trainable", "forward_only", "first_input_grad", "no_input_grads")}}


EXPECT = {
    "cost": _cost,
    "claim": lambda case: {"answer": implied_mfu(case), "slips": _slips("claim", case)},
    "serve": lambda case: {"answer": gpus_to_serve(case["model"], case["context"], case["batch"], case["gpu"]),
                           "slips": _slips("serve", case["model"], case["context"], case["batch"], case["gpu"])},
    "deploy": lambda case: {
        "answer": cheapest_deployment(case["model"], case["context"], case["target"], case["offers"]),
        "slips": _slips("deploy", case["model"], case["context"], case["target"], case["offers"])},
    "smi_log": _smi,
    "inventory": _inventory,
    "mfu": _step,
}


# ---------------------------------------------------------------- hidden cases
def _bf16_profiles() -> list[str]:
    return [p.id for p in all_of() if p.peak("bf16") and p.memory_gib and p.bandwidth_gbs]


def _cost_hidden(rng) -> list:
    ids = _bf16_profiles()
    cases = []
    for _ in range(4):
        params = 10 ** rng.uniform(8, 12)
        cases.append({"params": params, "tokens": params * rng.uniform(5, 200), "gpus": rng.choice([2, 8, 64, 512, 4096]),
                      "profile": rng.choice(ids), "mfu": round(rng.uniform(0.15, 0.6), 3),
                      "price": round(rng.uniform(0.5, 12), 2)})
    bad = rng.choice([{"mfu": 0.0}, {"gpus": 0}, {"tokens": -1e9}, {"mfu": 1.5}])
    cases.append(dict({"params": 1e9, "tokens": 2e10, "gpus": 8, "profile": "h100_sxm", "mfu": 0.4, "price": 3.0},
                      **bad))
    return cases


def _claim_hidden(rng) -> list:
    ids = _bf16_profiles()
    cases = []
    claims = (("days", rng.uniform(1.2, 5)), ("gpu_hours", rng.uniform(0.65, 0.95)), ("usd", rng.uniform(0.1, 0.55)),
              (rng.choice(["days", "usd"]), rng.uniform(0.2, 0.55)), ("gpu_hours", rng.uniform(1.1, 3)))
    for i, (unit, target) in enumerate(claims):
        params = 10 ** rng.uniform(8.5, 11.5)
        case = {"label": {"ko": f"숨은 사례 {i + 1}", "en": f"hidden case {i + 1}"}, "params": params,
                "tokens": params * rng.uniform(10, 100),
                "gpus": rng.choice([8, 64, 256, 2048]), "profile": rng.choice(ids), "unit": unit,
                "price_per_gpu_hour": round(rng.uniform(0.8, 9), 2)}
        gpu_hours = training_flops(case["params"], case["tokens"]) / (target * HOUR * get_profile(case["profile"]).peak("bf16") * 1e12)
        case["claimed"] = {"days": gpu_hours / 24 / case["gpus"], "gpu_hours": gpu_hours,
                           "usd": gpu_hours * case["price_per_gpu_hour"]}[unit]
        cases.append(case)
    return cases


def _model(rng) -> dict:
    return {"params": 10 ** rng.uniform(9, 11.7), "weight_bytes": rng.choice([0.5, 1, 2]),
            "layers": rng.choice([24, 32, 40, 60, 80, 126]), "kv_heads": rng.choice([1, 4, 8, 16]),
            "head_dim": rng.choice([64, 128]), "kv_bytes": rng.choice([1, 2])}


def _serve_hidden(rng) -> list:
    ids = _bf16_profiles()
    cases = []
    while len(cases) < 4:
        model = _model(rng)
        case = {"model": model, "context": rng.choice([2048, 8192, 32768, 131072]), "batch": rng.choice([1, 8, 32, 128]),
                "gpu": gpu_case(rng.choice(ids), rng.choice([0.85, 0.9]))}
        total = llm.weight_bytes(model) + llm.kv_cache_bytes(model, case["batch"], case["context"])
        ratio = total / (case["gpu"]["memory_gib"] * GIB * case["gpu"]["usable_fraction"])
        if abs(ratio - round(ratio)) > 1e-6:  # keep away from exact multiples, where rounding decides
            cases.append(case)
    return cases


def offer_row(oid: str, profile_id: str, gpus: int, price_per_hour: float) -> dict:
    """An offer in the form of ``prices.offers()`` rows (the keys the deployment task reads)."""
    prof = get_profile(profile_id)
    return {"id": oid, "gpus": gpus, "memory_gib": prof.memory_gib, "bandwidth_gbs": prof.bandwidth_gbs,
            "price_per_hour": price_per_hour, "gpu": prof.label}


def _deploy_hidden(rng) -> list:
    ids = _bf16_profiles()
    cases = []
    while len(cases) < 4:
        offers = [offer_row(f"offer_{j}", rng.choice(ids), g, round(g * rng.uniform(0.6, 9), 2))
                  for j, g in enumerate(rng.choice([1, 2, 4, 8]) for _ in range(rng.randint(4, 8)))]
        model = dict(_model(rng), params=10 ** rng.uniform(9, 11.2))
        target = {"tokens_per_s": rng.choice([500, 2000, 10000, 50000]), "ms_per_token": rng.choice([20, 40, 80, 150]),
                  "usable_fraction": 0.9}
        case = {"model": model, "context": rng.choice([2048, 8192, 32768]), "target": target, "offers": offers}
        plan = cheapest_deployment(model, case["context"], target, offers)
        if plan["offer"] is not None or len(cases) == 3:  # mostly plans that exist; the last may find none
            cases.append(case)
    return cases


def _smi_hidden(rng) -> list:
    layouts = [dict(units=False, na=True), dict(event_name=True, shuffle=True), dict(na=True, shuffle=True),
               dict(units=True), dict(event_name=True, units=False, shuffle=True)]
    gpus = [(1980, 700.0, 80_000), (1410, 400.0, 80_000), (2040, 72.0, 23_000), (2520, 450.0, 24_000),
            (1755, 350.0, 80_000)]
    causes = list(CAUSES)
    rng.shuffle(causes)
    cases = []
    for i, (cause, layout) in enumerate(zip(causes, layouts)):
        clock, power, memory = rng.choice(gpus)
        text = make_smi_log(rng, cause, rows=rng.randint(50, 140), max_clock=clock, power_limit=power,
                            memory_mib=memory, both_thermal=rng.random() < 0.5, **layout)
        cases.append({"name": f"hidden_{i}.csv", "text": text})
    return cases


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
    width = rng.choice([448, 512, 640])  # a step of about 5-50 ms on one CPU thread: the check stays short under load
    return [{"dims": [width, 2 * width, 2 * width, width], "batch": rng.choice([96, 128]), "frozen": rng.choice([0, 2])}]


HIDDEN = {
    "cost": _cost_hidden,
    "claim": _claim_hidden,
    "serve": _serve_hidden,
    "deploy": _deploy_hidden,
    "smi_log": _smi_hidden,
    "inventory": _inventory_hidden,
    "mfu": _mfu_hidden,
}
