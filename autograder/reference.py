"""Reference measurements of this machine: matmul throughput per dtype and memory bandwidth.

:func:`matmul_tflops` and :func:`bandwidth_gbs` measure with :func:`autograder.harness.time_fn`
inside a time budget. :func:`measured_profile` runs them all once and caches the
result as the machine's *measured profile* (a :class:`autograder.profiles.Profile`
with ``measured=True``); :func:`profile_for` returns the profile the expectations of
a device are based on: the spec sheet for a known accelerator, else the measurement.
Units: TFLOP/s = 10^12 FLOP/s (a multiply-add counts 2), GB/s = 10^9 bytes/s.
"""
from __future__ import annotations

import contextlib
import datetime as _dt
import hashlib
import json
import math
import os
import time
from pathlib import Path
from typing import Any, Callable

from .harness import Timing, cpu_last_level_cache, device_name, synchronizer, time_fn
from .i18n import msg

DTYPES = {  # accepted spellings -> the dtype keys of profiles.yaml
    "fp64": "fp64", "float64": "fp64", "double": "fp64",
    "fp32": "fp32", "float32": "fp32", "float": "fp32",
    "tf32": "tf32", "tfloat32": "tf32",
    "bf16": "bf16", "bfloat16": "bf16",
    "fp16": "fp16", "float16": "fp16", "half": "fp16",
}
LIBRARIES = ("torch", "numpy", "mlx", "best")
BANDWIDTH_KINDS = {"copy": 2, "triad": 3}  # arrays moved per element: copy reads 1 writes 1; triad reads 2 writes 1
SIZES = (256, 512, 1024, 2048, 3072, 4096, 6144, 8192, 12288, 16384)
PROBE_SIZE = 128
MIN_SWEEP_SIZE = 1024       # a reference taken only on smaller shapes understates the machine
MEMORY_SHARE = 0.25            # operands may use at most this share of the free memory
CPU_BANDWIDTH_FLOOR = 128 * 2**20
ACCEL_BANDWIDTH_FLOOR = 2**30
SCHEMA = 1                     # bump when the cached JSON layout or the method changes
MEMORY_LIMIT_ENV = "COURSE_MEMORY_LIMIT"  # bytes a grading kernel may use (set by the grader)


def canonical_dtype(dtype: Any) -> str:
    """``'float32'``, ``torch.float32``, ``'fp32'`` ... -> ``'fp32'`` (the keys of profiles.yaml)."""
    name = str(dtype).rsplit(".", 1)[-1].lower()
    if name not in DTYPES:
        raise ValueError(msg("measure.unknown_dtype", dtype=dtype, known=", ".join(sorted(set(DTYPES.values())))).text())
    return DTYPES[name]


def cache_dir() -> Path:
    """Where measured profiles are kept: ``$COURSE_CACHE_DIR`` or ``~/.cache/ai-hardware-course``."""
    return Path(os.environ.get("COURSE_CACHE_DIR") or Path.home() / ".cache" / "ai-hardware-course")


# ------------------------------------------------------------------ matmul
def matmul_tflops(dtype: Any = "float32", device: Any = "cpu", budget_s: float = 3.0,
                  sizes: list[int] | None = None, library: str | None = None) -> dict:
    """Best TFLOP/s of square ``n x n @ n x n`` matmuls on ``device`` within ~``budget_s`` seconds.

    Random normal inputs, preallocated outputs. Without ``sizes``, a quick probe
    sizes a sweep of growing shapes to the budget (so slow dtypes, such as bf16 on
    a CPU without native bf16, still finish in time) and the best shape is timed
    again with what is left. ``library``: ``'torch'`` (default; ``'mlx'`` for the
    ``'mlx'`` device), ``'numpy'`` (CPU), or ``'best'`` (the faster of torch and numpy
    on the CPU). Given ``sizes`` are timed on torch's threads as they are set (as a
    learner's own timing runs); a sweep, on the CPU, on one thread per physical core, or
    on one thread where the cores are so busy that it is faster (:func:`_pick_threads`).
    Returns ``tflops``, ``size``, ``timing`` (:class:`Timing` of the best), ``sweep``
    (``[{size, tflops}]``), ``dtype``, ``device``, ``library``.
    """
    dt = canonical_dtype(dtype)
    name = device_name(device)
    library = _library(library, name)
    if library == "best":
        return _best_library(dt, name, budget_s, sizes)
    _check_budget(budget_s)
    deadline = time.perf_counter() + budget_s
    maker = _matmul_maker(library, dt, name)
    with _precision(library, dt, name):
        results, best = _sweep(maker, name, sizes, deadline)
    return {"tflops": best["tflops"], "size": best["size"], "timing": best["timing"],
            "sweep": [{"size": r["size"], "tflops": r["tflops"]} for r in results],
            "dtype": dt, "device": name, "library": library}


def _library(library: str | None, name: str) -> str:
    if library is None:
        return "mlx" if name.startswith("mlx") else "torch"
    if library not in LIBRARIES:
        raise ValueError(msg("measure.unknown_library", library=library, known=", ".join(LIBRARIES)).text())
    if library != "best" and ((library == "mlx") != name.startswith("mlx") or (library == "numpy" and name != "cpu")):
        raise ValueError(msg("measure.dtype_unsupported", library=library, dtype="*", device=name).text())
    return library


def _best_library(dt: str, name: str, budget_s: float, sizes) -> dict:
    """On the CPU, torch (MKL/oneDNN) and numpy (OpenBLAS) differ by machine: keep the faster."""
    if name != "cpu":
        return matmul_tflops(dt, name, budget_s, sizes, None)
    libraries = ["torch", "numpy"] if dt in ("fp32", "fp64") else ["torch"]
    runs = [matmul_tflops(dt, name, budget_s / len(libraries), sizes, lib) for lib in libraries]
    best = dict(max(runs, key=lambda r: r["tflops"]))
    best["candidates"] = {r["library"]: r["tflops"] for r in runs}
    return best


def _check_budget(budget_s) -> None:
    if not (isinstance(budget_s, (int, float)) and budget_s > 0):
        raise ValueError(msg("measure.bad_budget", found=budget_s).text())


def _sweep(maker, name: str, sizes, deadline: float) -> tuple[list[dict], dict]:
    """Time each size; without ``sizes``, ramp up from a probe while the budget allows.

    Returns every result and the best one. After a ramp the best is the re-timed
    shape: a maximum over a few short, noisy ramp medians would be biased upwards.
    """
    cap = _largest_size(maker.itemsize, name)
    threads = _pick_threads(maker(PROBE_SIZE), name) if name == "cpu" and not sizes else None  # an accelerator: no pick
    if sizes:
        results = [_time_size(maker, n, name, max(deadline - time.perf_counter(), 1e-3) / (len(sizes) - i), threads)
                   for i, n in enumerate(sizes)]
        return results, max(results, key=lambda r: r["tflops"])
    ramp_end = time.perf_counter() + 0.5 * (deadline - time.perf_counter())
    probe = _time_size(maker, PROBE_SIZE, name, 0.02 * (deadline - time.perf_counter()), threads)
    results, rate, setup_per_elem = [probe], _plan_rate(probe), probe["setup_s"] / PROBE_SIZE**2
    for n in (s for s in SIZES if s <= cap):
        call_s = _flop(n) / rate
        cost = setup_per_elem * n * n + 6 * call_s  # setup, warm-up and a few samples
        # Small shapes are far from peak: reach MIN_SWEEP_SIZE if the whole budget allows,
        # even when a noisy probe made the ramp look expensive.
        if time.perf_counter() + cost > (deadline if n <= MIN_SWEEP_SIZE else ramp_end):
            break
        result = _time_size(maker, n, name, 5 * call_s, threads)
        results.append(result)
        rate = _plan_rate(result)
        setup_per_elem = max(setup_per_elem, result["setup_s"] / n**2)
    top = max(r["tflops"] for r in results)
    best = [r for r in results if r["tflops"] >= 0.9 * top][-1]  # the largest shape near the top: steadier
    left = deadline - time.perf_counter() - best["setup_s"]
    if left > 4 * best["timing"].median_s:  # time it again, with the rest of the budget
        final = _time_size(maker, best["size"], name, left, threads)
        results[results.index(best)] = best = final
    return results, best


def _plan_rate(result: dict) -> float:
    """FLOP/s to plan the next size with: from the fastest sample (a busy machine inflates the median)."""
    return _flop(result["size"]) / result["timing"].min_s


def _time_size(maker, n: int, name: str, budget_s: float, threads: int | None) -> dict:
    began = time.perf_counter()
    fn = maker(n)
    synchronizer(name)()  # the inputs exist before timing starts
    setup_s = time.perf_counter() - began
    timing = time_fn(fn, device=name, budget_s=max(budget_s, 1e-3), min_reps=3, threads=threads)
    del fn
    return {"size": n, "tflops": _flop(n) / timing.median_s / 1e12, "timing": timing, "setup_s": setup_s}


def _flop(n: int) -> float:
    return 2.0 * n**3


def _threads(name: str) -> int | None:
    """On the CPU, one torch thread per physical core (hyper-threads do not add FLOP/s)."""
    if name != "cpu":
        return None
    try:
        from .hardware import detect
        return detect().cpu.physical_cores or os.cpu_count()
    except Exception:  # detection is best effort
        return os.cpu_count()


PICK_REPS = 3  # timed calls of each thread count when choosing one


def _pick_threads(fn: Callable[[], Any], name: str) -> int | None:
    """The torch threads to measure ``fn`` with: on the CPU one per physical core, unless that runs slower than one
    thread would on every core. Where other programs hold the cores, each call of a parallel kernel waits for all its
    threads' turns: on 2 cores busy with 8 other processes a 128 x 128 matmul took 80 ms on 2 threads and 60 us on 1,
    so a peak measured on all cores read 1000x low."""
    cores = _threads(name)
    if name != "cpu" or not cores or cores < 2:
        return cores

    def fastest(threads: int) -> float:
        return time_fn(fn, device=name, budget_s=1e-3, warmup=1, min_reps=PICK_REPS, inner=1, threads=threads).min_s
    return 1 if fastest(cores) > cores * fastest(1) else cores


def _largest_size(itemsize: int, name: str) -> int:
    free = _free_bytes(name)
    for n in reversed(SIZES):
        if 3 * n * n * itemsize <= MEMORY_SHARE * free:
            return n
    return SIZES[0]


def _free_bytes(name: str) -> int:
    kind = name.split(":")[0]
    try:
        if kind == "cuda":
            import torch
            return int(torch.cuda.mem_get_info(name)[0])
        if kind == "xpu":
            import torch
            return int(torch.xpu.mem_get_info(name)[0])
        if kind == "mps":
            import torch
            return int(torch.mps.recommended_max_memory() - torch.mps.current_allocated_memory())
    except Exception:  # older torch without these calls: fall back to host memory
        pass
    import psutil
    available = int(psutil.virtual_memory().available)
    limit = os.environ.get(MEMORY_LIMIT_ENV)  # the grader's limit on this kernel: the host's free memory is not ours
    if limit:
        available = min(available, int(limit) - psutil.Process().memory_info().rss)
    return max(available, 0)


class _Maker:
    """``maker(n)`` builds random normal ``n x n`` operands and returns the matmul to time."""

    def __init__(self, build: Callable[[int], Callable[[], Any]], itemsize: int):
        self.build, self.itemsize = build, itemsize

    def __call__(self, n: int) -> Callable[[], Any]:
        return self.build(n)


def _matmul_maker(library: str, dt: str, name: str) -> _Maker:
    unsupported = ValueError(msg("measure.dtype_unsupported", library=library, dtype=dt, device=name).text())
    if library == "numpy":
        import numpy as np
        np_dtype = {"fp64": np.float64, "fp32": np.float32, "fp16": np.float16}.get(dt)
        if np_dtype is None:
            raise unsupported
        rng = np.random.default_rng(0)

        def build_np(n):
            a, b = (rng.standard_normal((n, n), dtype=np.float32).astype(np_dtype) for _ in range(2))
            out = np.empty((n, n), dtype=np_dtype)
            return lambda: np.matmul(a, b, out=out)
        return _Maker(build_np, np.dtype(np_dtype).itemsize)
    if library == "mlx":
        mx = _mlx()
        mx_dtype = {"fp32": mx.float32, "bf16": mx.bfloat16, "fp16": mx.float16}.get(dt)
        if mx_dtype is None:
            raise unsupported

        def build_mx(n):
            a, b = (mx.random.normal((n, n), dtype=mx_dtype) for _ in range(2))
            mx.eval(a, b)
            return lambda: mx.matmul(a, b)  # time_fn evaluates the lazy result
        return _Maker(build_mx, mx_dtype.size)
    import torch
    kind = name.split(":")[0]
    if dt == "tf32" and kind not in ("cuda", "xpu"):
        raise unsupported
    t_dtype = {"fp64": torch.float64, "fp32": torch.float32, "tf32": torch.float32,
               "bf16": torch.bfloat16, "fp16": torch.float16}[dt]
    if kind == "mps" and dt == "fp64":
        raise unsupported  # MPS has no float64

    def build_torch(n):
        a, b = (torch.randn(n, n, dtype=t_dtype, device=name) for _ in range(2))
        out = torch.empty(n, n, dtype=t_dtype, device=name)
        return lambda: torch.matmul(a, b, out=out)
    return _Maker(build_torch, torch.empty((), dtype=t_dtype).element_size())


@contextlib.contextmanager
def _precision(library: str, dt: str, name: str):
    """fp32 means true fp32 (TF32 off, PyTorch's default); tf32 turns TF32 on, for this measurement only."""
    if library != "torch" or dt not in ("fp32", "tf32"):
        yield
        return
    import torch
    before = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision("high" if dt == "tf32" else "highest")
    try:
        yield
    finally:
        torch.set_float32_matmul_precision(before)


def _mlx():
    try:
        import mlx.core as mx
    except ImportError:
        raise RuntimeError(msg("measure.mlx_missing").text()) from None
    return mx


# ------------------------------------------------------------------ bandwidth
def bandwidth_gbs(kind: str = "copy", device: Any = "cpu", nbytes: int | None = None,
                  budget_s: float = 2.0) -> dict:
    """Memory bandwidth in GB/s (10^9 bytes/s) of ``copy`` (b = a) or ``triad`` (a = b + s*c).

    ``nbytes``: size of one array (default: >= 4x the last-level cache, at least
    128 MB on a CPU and 1 GiB on an accelerator, within a quarter of free memory).
    Bytes counted: copy reads one array and writes one (2 x nbytes); triad reads two
    and writes one (3 x nbytes). Threads as :func:`_pick_threads` picks them. Returns ``gbs``, ``timing``, ``kind``, ``device``,
    ``nbytes``, ``bytes_moved``.
    """
    if kind not in BANDWIDTH_KINDS:
        raise ValueError(msg("measure.unknown_kind", kind=kind, known=", ".join(BANDWIDTH_KINDS)).text())
    _check_budget(budget_s)
    name = device_name(device)
    arrays = BANDWIDTH_KINDS[kind]
    nbytes = int(nbytes or default_bandwidth_bytes(name, arrays))
    began = time.perf_counter()
    fn = _bandwidth_fn(kind, name, nbytes // 4)
    synchronizer(name)()
    threads = _pick_threads(fn, name)
    left = max(budget_s - (time.perf_counter() - began), budget_s / 2)  # a slow allocation leaves the timing its share
    timing = time_fn(fn, device=name, budget_s=left, min_reps=3, threads=threads)
    moved = arrays * (nbytes // 4) * 4
    return {"gbs": moved / timing.median_s / 1e9, "timing": timing, "kind": kind, "device": name,
            "nbytes": nbytes, "bytes_moved": moved}


def default_bandwidth_bytes(name: str, arrays: int = 3) -> int:
    """>= 4x the last-level cache (so the arrays live in DRAM/HBM), within a quarter of free memory."""
    accelerator = name.split(":")[0] not in ("cpu", "mlx")
    llc = max(cpu_last_level_cache(), _accelerator_l2(name) if accelerator else 0)
    want = max(4 * llc, ACCEL_BANDWIDTH_FLOOR if accelerator else CPU_BANDWIDTH_FLOOR)
    room = int(MEMORY_SHARE * _free_bytes(name) / arrays)
    return max(min(want, room), 4 * 2**20)


def _accelerator_l2(name: str) -> int:
    info = _accelerator(name)
    return int(getattr(info, "l2_bytes", None) or 0)


def _bandwidth_fn(kind: str, name: str, count: int) -> Callable[[], Any]:
    """The kernel to time, on preallocated float32 arrays of ``count`` elements (random values)."""
    scalar = 3.0
    if name.startswith("mlx"):
        mx = _mlx()
        b, c = mx.random.uniform(shape=(count,)), mx.random.uniform(shape=(count,))
        mx.eval(b, c)
        if kind == "copy":
            return lambda: mx.negative(b)  # reads b, writes a new array: the traffic of a copy
        triad = mx.compile(lambda x, y: x + scalar * y)  # fused: one pass over the three arrays
        return lambda: triad(b, c)
    import torch
    b = torch.rand(count, device=name)
    a = torch.empty_like(b)
    if kind == "copy":
        return lambda: a.copy_(b)
    c = torch.rand(count, device=name)
    return lambda: torch.add(b, c, alpha=scalar, out=a)  # a = b + s*c in one kernel


# ------------------------------------------------------------------ measured profile
def measured_profile(device: Any = "cpu", refresh: bool = False, budget_s: float = 15.0):
    """This machine's measured profile for ``device`` (``refresh=True`` measures it all again).

    fp32 and bf16 (and fp16 where the hardware has it) matmul peaks and copy/triad
    bandwidth, measured within about ``budget_s`` seconds with a progress bar and
    kept as JSON in :func:`cache_dir`, keyed by the machine (device name, cores,
    library versions). A stored figure is never trusted as it is: a profile measured
    while the machine was busy understates it, and every honest measurement compared
    with it would look impossibly fast. So each use checks every figure against a quick
    measurement now (:func:`_recheck`) and raises the ones this machine beats.
    """
    name = device_name(device)
    key = machine_key(name)
    path = _cache_path(name)
    record = None if refresh else _load(path, key)
    if record is None:
        record = {"key": key, "date": _dt.date.today().isoformat(), "budget_s": budget_s,
                  **_measure(name, budget_s)}
        _rechecked[name] = time.monotonic()
        _save(path, record)
    return _profile(_recheck(name, path, record))


def _cache_path(name: str) -> Path:
    return cache_dir() / f"measured-{name.replace(':', '_')}-{_digest(machine_key(name))}.json"


def _save(path: Path, record: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(record, indent=1), encoding="utf-8")
    os.replace(tmp, path)  # atomic: a reader never sees half a file


RECHECK_S = 120.0  # how often (per process) a stored profile is checked against quick measurements
QUICK_S = {"matmul": 0.5, "bandwidth": 0.25}  # the budget of one quick measurement, seconds
_rechecked: dict = {}


def _recheck(name: str, path: Path, record: dict) -> dict:
    """``record`` with every figure raised to a quick measurement now where that is higher (and saved so); at most
    once every :data:`RECHECK_S` seconds per process. A figure higher than now stays: the peak is the best seen."""
    now = time.monotonic()
    if now - _rechecked.get(name, -math.inf) < RECHECK_S:
        return record
    _rechecked[name] = now
    raised = False
    stamp = _dt.datetime.now().isoformat(timespec="seconds")
    for dt, old in record["matmul"].items():
        try:
            fresh = matmul_tflops(dt, name, budget_s=QUICK_S["matmul"], library="best" if name == "cpu" else None)
        except (ValueError, RuntimeError):  # a dtype this device cannot run now: keep the stored figure
            continue
        if fresh["tflops"] > old["tflops"]:
            old.update(tflops=fresh["tflops"], raised=stamp)
            raised = True
    for kind, old in record["bandwidth"].items():
        fresh = bandwidth_gbs(kind, name, budget_s=QUICK_S["bandwidth"])
        if fresh["gbs"] > old["gbs"]:
            old.update(gbs=fresh["gbs"], raised=stamp)
            raised = True
    if raised:
        _save(path, record)
    return record


def best_seen(peak: float, *seen: float, unit: str = "TFLOP/s") -> tuple[float, Message | None]:
    """The measured peak a share is taken of, and what to tell the learner: a figure just seen above a measured peak
    shows the peak was measured at a busier moment, so it is raised to that figure, and the note says so (a share of
    a measured peak above 100 % is impossible). A spec sheet's peak is never passed here."""
    top = max((float(s) for s in seen if s and math.isfinite(s)), default=0.0)
    if top <= peak:
        return peak, None
    return top, msg("measure.peak_raised", was=f"{peak:.3g}", now=f"{top:.3g}", unit=unit)


def machine_key(name: str) -> dict:
    """What a measurement depends on: the device, the core count, the library versions."""
    from .hardware import detect
    report = detect()
    cpu = report.cpu
    acc = _accelerator(name)
    key = {"schema": SCHEMA, "device": name, "name": acc.name if acc else cpu.model,
           "physical_cores": cpu.physical_cores, "logical_cores": cpu.logical_cores,
           "torch": report.torch}
    if name == "cpu":
        import numpy as np
        key["numpy"] = np.__version__
    if name.startswith("mlx"):
        key["mlx"] = report.mlx
    return key


def _digest(key: dict) -> str:
    return hashlib.sha1(json.dumps(key, sort_keys=True).encode()).hexdigest()[:12]


def _load(path: Path, key: dict) -> dict | None:
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return record if record.get("key") == key else None


def _dtypes_for(name: str) -> list[str]:
    """fp32 and bf16 always; fp16 on accelerators and on CPUs with native fp16 matmul."""
    if name != "cpu":
        return ["fp32", "bf16", "fp16"]
    from .hardware import detect
    flags = set(detect().cpu.flags)
    return ["fp32", "bf16"] + (["fp16"] if {"avx512_fp16", "amx_fp16"} & flags else [])


def _measure(name: str, budget_s: float) -> dict:
    from .progress import progress
    dtypes = _dtypes_for(name)
    share = {"fp32": 0.4, "bf16": 0.25, "fp16": 0.1, "copy": 0.125, "triad": 0.125}
    steps = dtypes + ["copy", "triad"]
    total = sum(share[s] for s in steps)
    matmul, bandwidth = {}, {}
    with progress(total=len(steps), desc=msg("measure.progress").text()) as bar:
        for step in steps:
            budget = budget_s * share[step] / total
            bar.set_postfix_str(step)
            if step in BANDWIDTH_KINDS:
                r = bandwidth_gbs(step, name, budget_s=budget)
                bandwidth[step] = {"gbs": r["gbs"], "nbytes": r["nbytes"], **_timing_json(r["timing"])}
            else:
                r = matmul_tflops(step, name, budget, library="best" if name == "cpu" else None)
                matmul[step] = {"tflops": r["tflops"], "size": r["size"], "library": r["library"],
                                **_timing_json(r["timing"])}
            bar.update(1)
    return {"matmul": matmul, "bandwidth": bandwidth}


def _timing_json(t: Timing) -> dict:
    return {"median_s": t.median_s, "spread": t.spread, "n": t.n, "threads": t.threads}


def _profile(record: dict):
    from .hardware import detect
    from .profiles import Profile
    key = record["key"]
    name = key["device"]
    acc = _accelerator(name)
    kind = name.split(":")[0]
    if acc is not None:
        memory = acc.total_memory_bytes
        vendor = "Apple" if acc.unified_memory else _vendor(acc.name)
        kind = "apple" if acc.unified_memory else "gpu"
    else:
        cpu = detect().cpu
        memory, vendor, kind = cpu.ram_bytes, cpu.vendor, "cpu" if kind in ("cpu", "mlx") else "gpu"
    return Profile(
        id=f"measured_{name.replace(':', '_')}_{_digest(key)}",
        name=msg("measure.profile_name", name=key["name"], date=record["date"]).text(),
        kind=kind, vendor=vendor,
        peak_tflops={dt: m["tflops"] for dt, m in record["matmul"].items()},
        bandwidth_gbs=record["bandwidth"]["copy"]["gbs"],
        memory_gib=memory / 2**30 if memory else None,
        measured=True,
        sources=(f"autograder.reference.measured_profile, {record['date']}",),
        spec={"date": record["date"], "triad_gbs": record["bandwidth"]["triad"]["gbs"],
              "matmul": record["matmul"], "bandwidth": record["bandwidth"], "key": key},
    )


def _vendor(name: str) -> str:
    lowered = name.lower()
    for word, vendor in (("nvidia", "NVIDIA"), ("geforce", "NVIDIA"), ("amd", "AMD"), ("radeon", "AMD"),
                         ("instinct", "AMD"), ("intel", "Intel"), ("apple", "Apple")):
        if word in lowered:
            return vendor
    return "unknown"


def _accelerator(name: str):
    """The detected accelerator behind a device string ('cuda' = 'cuda:0'; 'mlx' = MLX's GPU), or None."""
    kind = name.split(":")[0]
    if kind == "cpu":
        return None
    from .hardware import detect
    accelerators = detect().accelerators
    for acc in accelerators:
        if acc.device == name or (":" not in name and acc.device == f"{name}:0"):
            return acc
    for acc in accelerators:
        if acc.device.split(":")[0] == kind or acc.backend == kind:
            return acc
    return None


def spec_profile(device: Any = None):
    """The spec-sheet profile of a known accelerator behind ``device``; None for CPUs and unknown devices."""
    from .hardware import best_device
    from .profiles import match
    name = device_name(device) if device is not None else best_device()
    acc = _accelerator(name)
    return match(acc.name) if acc is not None else None


def profile_for(device: Any = None, refresh: bool = False):
    """The profile expectations for ``device`` are based on (None: the best device here).

    A known accelerator gets its spec-sheet profile; any other device, and every
    CPU, gets this machine's measured profile (``refresh=True`` measures it again).
    """
    from .hardware import best_device
    name = device_name(device) if device is not None else best_device()
    return spec_profile(name) or measured_profile(name, refresh=refresh)
