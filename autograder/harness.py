"""Time a piece of code honestly on any device: :func:`time_fn` returns a :class:`Timing`.

The steps (each one exists because skipping it gives a wrong number):
warm up (first calls pay for library set-up, autotuning and page faults);
synchronize before the clock starts (earlier queued work must not leak into a sample)
and after the work (accelerators return before the work is done: the clock would
stop early); for short kernels time several calls between two synchronizes (a
sample must be long next to the clock's resolution and the synchronize cost);
optionally flush the caches before each sample (a second call finds its data in
cache and looks faster than real work would); repeat until a time budget is spent
and report the median and spread (single samples are noisy); set the CPU thread
count explicitly (results depend on it, so it is part of the result).
"""
from __future__ import annotations

import itertools
import math
import statistics
import sys
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Callable

from . import clock
from .i18n import msg

MIN_SAMPLE_S = 1e-3                 # a sample shorter than this is dominated by clock/sync overhead
CPU_FLUSH_FLOOR = 64 * 2**20        # smallest CPU flush buffer, whatever the cache size detected
ACCEL_FLUSH_FLOOR = 512 * 2**20     # 2x the largest accelerator last-level cache we know (MI300X: 256 MB)
UNKNOWN_LLC = 64 * 2**20            # assumed last-level cache when detection fails (larger than most CPUs')
_MAX_INNER = 10_000_000
_NO_SYNC_KINDS = ("cpu", "mlx")     # host-synchronous (MLX is made synchronous by mx.eval on results)
_CALLS = itertools.count()          # time_fn calls in this process: each one's samples carry its label


@dataclass(frozen=True)
class Timing:
    """Seconds per call: median, mean, min and the 10th/90th percentiles over ``n`` samples."""

    median_s: float
    mean_s: float
    min_s: float
    p10_s: float
    p90_s: float
    n: int
    warmup: int
    device: str
    threads: int | None
    flushed: bool
    inner: int = 1

    @property
    def spread(self) -> float:
        """p90 / p10: 1.0 means every sample agreed; above ~1.2 the machine was noisy."""
        return self.p90_s / self.p10_s if self.p10_s > 0 else math.inf

    def __str__(self) -> str:
        flushed = msg("measure.flushed_yes" if self.flushed else "measure.flushed_no")
        values = dict(
            median=format_seconds(self.median_s), p10=format_seconds(self.p10_s), p90=format_seconds(self.p90_s),
            spread=f"{self.spread:.2f}", n=self.n, inner=self.inner, warmup=self.warmup, device=self.device,
            threads="-" if self.threads is None else self.threads,
        )
        return msg("measure.timing", flushed=flushed, **values).text()


def format_seconds(seconds: float) -> str:
    """``0.00123`` -> ``'1.23 ms'``."""
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"


def device_name(device: Any) -> str:
    """``'cuda:0'``, ``'cpu'``, ... for a string, a ``torch.device`` or a fake device object."""
    if isinstance(device, str):
        return device
    if hasattr(device, "synchronize") and not _is_torch_device(device):
        return str(getattr(device, "name", type(device).__name__))
    return str(device)


def synchronizer(device: Any) -> Callable[[], None]:
    """A function that waits until ``device`` has finished all work queued so far."""
    if hasattr(device, "synchronize") and not isinstance(device, str) and not _is_torch_device(device):
        return device.synchronize
    name = device_name(device)
    kind = name.split(":")[0]
    if kind in _NO_SYNC_KINDS:
        return _nothing
    if kind == "cuda":  # also ROCm: PyTorch calls AMD GPUs 'cuda'
        import torch
        return lambda: torch.cuda.synchronize(name)
    if kind == "mps":
        import torch
        return torch.mps.synchronize
    if kind == "xpu":
        import torch
        return lambda: torch.xpu.synchronize(name)
    raise ValueError(msg("measure.unknown_device", device=name).text())


def flush_size(device: Any = "cpu") -> int:
    """Default flush buffer in bytes: >= 2x the last-level cache, at least 64 MB (512 MB on accelerators)."""
    kind = device_name(device).split(":")[0]
    floor = CPU_FLUSH_FLOOR if kind in _NO_SYNC_KINDS else ACCEL_FLUSH_FLOOR
    return max(2 * cpu_last_level_cache(), floor)


@lru_cache(maxsize=1)
def cpu_last_level_cache() -> int:
    """The CPU's last-level cache in bytes from :func:`autograder.hardware.detect` (64 MB if unknown)."""
    try:
        from .hardware import detect
        llc = detect().cpu.last_level_cache_bytes
    except Exception:  # detection is best effort; the fallback is documented above
        llc = None
    return int(llc) if llc else UNKNOWN_LLC


def time_fn(
    fn: Callable[[], Any],
    *,
    device: Any = "cpu",
    budget_s: float = 1.0,
    warmup: int | None = None,
    min_reps: int = 3,
    max_reps: int = 10_000,
    flush: bool = False,
    flush_bytes: int | None = None,
    threads: int | None = None,
    inner: int | None = None,
    use_events: bool = True,
) -> Timing:
    """Time ``fn()`` on ``device`` within about ``budget_s`` seconds; return seconds per call.

    ``warmup``: number of warm-up calls (default: for ~10% of the budget, at least one).
    ``min_reps``/``max_reps``: bounds on the number of samples (``min_reps`` wins over the budget).
    ``flush``: before each sample, write a buffer of ``flush_bytes`` (default :func:`flush_size`)
    so the work starts with cold caches; then ``inner`` defaults to 1 (every call is cold).
    ``threads``: torch CPU threads for the duration (restored afterwards); reported either way.
    ``inner``: calls per sample (default: enough for a sample of >= ~1 ms).
    ``use_events``: on CUDA, measure with CUDA events (device time) instead of the host clock.
    If ``fn`` returns an MLX array (or a tuple/list of them) it is evaluated inside the sample.
    Every clock read is the course's (:mod:`autograder.clock`, bound before a learner's code runs); during a check's
    measured round the referee keeps each sample as a span, and CUDA is then timed on that clock too, not with events.
    """
    _validate(fn, budget_s, warmup, min_reps, max_reps, threads, inner, flush_bytes)
    sync = synchronizer(device)
    name = device_name(device)
    kind = name.split(":")[0]
    call = _materialising(fn)
    flusher = _flusher(name, kind, flush_bytes or flush_size(name)) if flush else None
    restore, used_threads = _use_threads(threads)
    try:
        start = clock.now()
        deadline = start + budget_s
        warm, per_call = _warm_up(call, sync, warmup, start + 0.1 * budget_s)
        if inner is None:
            inner, extra = (1, 0) if flush else _pick_inner(call, sync, per_call)
            warm += extra
        label = f"time_fn:{next(_CALLS)}"
        sample = _event_sampler(name) if kind == "cuda" and use_events and not clock.held() else _wall_sample
        samples: list[float] = []
        cost = 0.0
        while len(samples) < max_reps and (
            len(samples) < min_reps or clock.now() + cost <= deadline  # stop before overrunning
        ):
            began = clock.now()
            if flusher:
                flusher()
            samples.append(sample(call, sync, inner, label) / inner)
            cost = clock.now() - began
    finally:
        restore()
    return _summary(samples, warm, name, used_threads, flush, inner)


def _nothing() -> None:
    return None


def _is_torch_device(device: Any) -> bool:
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(device, torch.device)


def _validate(fn, budget_s, warmup, min_reps, max_reps, threads, inner, flush_bytes) -> None:
    if not callable(fn):
        raise TypeError(msg("measure.not_callable", found=type(fn).__name__).text())
    if not (isinstance(budget_s, (int, float)) and budget_s > 0 and math.isfinite(budget_s)):
        raise ValueError(msg("measure.bad_budget", found=budget_s).text())
    if not (isinstance(min_reps, int) and isinstance(max_reps, int) and 1 <= min_reps <= max_reps):
        raise ValueError(msg("measure.bad_reps", min_reps=min_reps, max_reps=max_reps).text())
    for what, value, least in (("warmup", warmup, 0), ("threads", threads, 1), ("inner", inner, 1),
                               ("flush_bytes", flush_bytes, 1)):
        if value is not None and not (isinstance(value, int) and value >= least):
            raise ValueError(msg("measure.bad_count", what=what, least=least, found=value).text())


def _materialising(fn: Callable[[], Any]) -> Callable[[], Any]:
    """``fn``, plus ``mx.eval`` on MLX results (MLX is lazy: nothing runs until evaluated)."""
    mx = sys.modules.get("mlx.core")
    if mx is None:
        return fn

    def call():
        result = fn()
        if isinstance(result, mx.array):
            mx.eval(result)
        elif isinstance(result, (tuple, list)):
            arrays = [r for r in result if isinstance(r, mx.array)]
            if arrays:
                mx.eval(arrays)
        return result

    return call


@contextmanager
def one_cpu_thread(device: Any):
    """One torch thread while timing on the CPU (``device``), torch's own number elsewhere: how a check times both
    sides of a comparison (the learner's timing and its reference). Each side then needs one core, and programs that
    hold the others slow both alike; a parallel op on busy cores waits for each of its threads' turns instead (on 2
    cores busy with 8 other programs a 128 x 128 matmul took 80 ms on 2 threads and 60 us on one)."""
    restore, _ = _use_threads(1 if device_name(device) == "cpu" else None)
    try:
        yield
    finally:
        restore()


def _use_threads(threads: int | None) -> tuple[Callable[[], None], int | None]:
    """Set torch's CPU thread count (if asked); return how to restore it and the count in use."""
    torch = sys.modules.get("torch")
    if threads is None:
        return _nothing, (torch.get_num_threads() if torch is not None else None)
    import torch
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    return (lambda: torch.set_num_threads(before)), threads


def _flusher(name: str, kind: str, nbytes: int) -> Callable[[], None]:
    """A function that evicts the caches by writing ``nbytes`` bytes (on the device itself)."""
    if kind in _NO_SYNC_KINDS:
        import numpy as np
        buffer = np.zeros(nbytes, dtype=np.uint8)
        # read-modify-write: a plain fill may use non-temporal stores that bypass the cache
        return lambda: np.add(buffer, 1, out=buffer)
    import torch
    buffer = torch.empty(nbytes, dtype=torch.uint8, device=name)
    return buffer.zero_


def _warm_up(call, sync, warmup: int | None, until: float) -> tuple[int, float]:
    """Call until ``warmup`` calls were made (or, by default, until ``until``); return calls, fastest call."""
    calls, fastest = 0, 0.0
    while warmup is None or calls < warmup:
        began = clock.now()
        call()
        sync()  # the warm-up call's work is finished before the next one (and before timing)
        took = clock.now() - began
        fastest = took if calls == 0 else min(fastest, took)  # a preempted call must not set the plan
        calls += 1
        if warmup is None and clock.now() >= until:
            break
    return calls, fastest


def _pick_inner(call, sync, per_call: float) -> tuple[int, int]:
    """Calls per sample so that a sample lasts >= MIN_SAMPLE_S; returns it and the calls spent finding it."""
    if per_call >= MIN_SAMPLE_S:
        return 1, 0
    inner = max(1, min(_MAX_INNER, int(MIN_SAMPLE_S / per_call))) if per_call > 0 else 1
    spent = 0
    while inner < _MAX_INNER:
        took = _untimed_sample(call, sync, inner)  # per-call syncs overestimate async work: check a batch
        spent += inner
        if took >= MIN_SAMPLE_S:
            break
        inner = min(_MAX_INNER, max(inner * 2, int(inner * 1.2 * MIN_SAMPLE_S / max(took, 1e-9))))
    return inner, spent


def _untimed_sample(call, sync, inner: int) -> float:
    """A trial sample (it plans a sample; no referee keeps it)."""
    sync()
    began = clock.now()
    for _ in range(inner):
        call()
    sync()
    return clock.now() - began


def _wall_sample(call, sync, inner: int, label: str) -> float:
    sync()  # start from an idle device: earlier work must not be counted
    began = clock.begin()
    for _ in range(inner):
        call()
    sync()  # stop the clock only when the queued work has finished
    return clock.end(inner, label) - began


def _event_sampler(name: str):
    """CUDA: time on the device with events recorded on the current stream (no host jitter)."""
    import torch

    def sample(call, sync, inner: int, label: str) -> float:
        stream = torch.cuda.current_stream(name)
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        sync()  # start from an idle device
        start.record(stream)
        for _ in range(inner):
            call()
        end.record(stream)
        sync()  # both events have happened before reading them
        return start.elapsed_time(end) / 1e3

    return sample


def _quantile(ordered: list[float], q: float) -> float:
    pos = q * (len(ordered) - 1)
    low = math.floor(pos)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)


def summary_times(samples: list[float]) -> list[float]:
    """The times a :class:`Timing` of these per-call samples reports (median, mean, min, p10, p90); none without
    samples. The referee holds a figure timed with :func:`time_fn` to these (``referee.off_clock``)."""
    if not samples:
        return []
    t = _summary(samples, 0, "", None, False, 1)
    return [t.median_s, t.mean_s, t.min_s, t.p10_s, t.p90_s]


def _summary(samples, warm, name, threads, flushed, inner) -> Timing:
    ordered = sorted(samples)
    return Timing(
        median_s=statistics.median(ordered), mean_s=statistics.fmean(ordered), min_s=ordered[0],
        p10_s=_quantile(ordered, 0.1), p90_s=_quantile(ordered, 0.9), n=len(ordered), warmup=warm,
        device=name, threads=threads, flushed=flushed, inner=inner,
    )
