"""The simulator as an asynchronous GPU on a virtual clock: what a timing function times, told exactly.

On Numba's CUDA simulator a kernel runs as Python threads, so a wall-clock bandwidth means nothing (and varies
with the load). Inside :func:`virtual_gpu` the simulator behaves like a GPU whose clock is virtual:

- a kernel launch returns after :data:`LAUNCH_S`; the device then moves the bytes that launch reads and writes
  (counted once per kernel and arguments by :func:`traffic.trace`, which also runs it) at ``bandwidth_gbs``,
  after the work queued before it. The first launch of each kernel first compiles it (:data:`COMPILE_S`, on the
  host, as Numba's JIT does);
- ``cuda.synchronize()``, a stream's ``synchronize()`` and an event's ``synchronize()`` wait for the queued work;
  events (``cuda.event()``) record when the work queued before them ends;
- ``cuda.to_device``, ``copy_to_host``, ``copy_to_device`` and NumPy arrays passed to a kernel (which Numba copies
  there and back on every launch) wait for the queued work and cross the host link at ``link_gbs``;
- ``time.perf_counter``, ``time.perf_counter_ns``, ``time.monotonic``, ``time.time`` and ``timeit.default_timer``
  (also where the learner's module imported them by name) read the virtual clock; each reading advances it by
  :data:`TICK_S`.

The clock depends on nothing but the calls made, so the same code gives the same number on any machine under any
load. :class:`VirtualGPU` counts what happened (launches, synchronizes, copies and those made once the clock had
been read, compilations), so a check can name what a wrong number timed.
"""
from __future__ import annotations

import time
import timeit
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np

from ... import clock as course_clock

LAUNCH_S = 5e-4        # host time a launch takes to return
COMPILE_S = 0.5        # the first launch of a kernel compiles it first (on the host)
TICK_S = 1e-7          # every reading of the clock advances it this much (a loop that waits on the clock ends)
START_S = 1000.0       # the virtual clock's reading when a device is made
EPOCH_S = 1.7e9        # time.time() on the virtual clock: START_S after this


@dataclass
class VirtualGPU:
    """One device, fresh for each call of the function timed: its clock, its queue and what happened on it."""

    bandwidth_gbs: float
    link_gbs: float
    now: float = START_S
    busy_until: float = START_S
    launches: int = 0
    implicit: int = 0          # launches with NumPy arrays (copied to the device and back on every launch)
    transfers: int = 0         # explicit copies between host and device (to_device, copy_to_host, ...)
    timed_transfers: int = 0   # of those, the ones made after the clock was first read (inside the timing)
    readings: int = 0          # clock readings
    synchronizes: int = 0      # waits for the queued work (cuda.synchronize, stream or event synchronize)
    compiled: set = field(default_factory=set)
    moved: dict = field(default_factory=dict)   # (kernel, launch, arguments) -> [bytes one launch moves, launches]

    def read(self) -> float:
        self.readings += 1
        self.now += TICK_S
        return self.now

    def wait(self) -> None:
        """The host waits until the queued work has finished."""
        self.now = max(self.now, self.busy_until)

    def synchronize(self) -> None:
        self.synchronizes += 1
        self.wait()

    def transfer(self, nbytes: int) -> None:
        """A blocking copy over the host link: after the queued work, then ``nbytes`` at ``link_gbs``."""
        self.transfers += 1
        self.timed_transfers += bool(self.readings)
        self.wait()
        self.now += nbytes / (self.link_gbs * 1e9)

    def launch(self, fn, nbytes: int, host_bytes: int) -> None:
        """A kernel launch moving ``nbytes``; ``host_bytes`` of NumPy arguments go there and back around it."""
        self.launches += 1
        if fn not in self.compiled:
            self.compiled.add(fn)
            self.now += COMPILE_S
        work = nbytes / (self.bandwidth_gbs * 1e9)
        if host_bytes:
            self.implicit += 1
            self.wait()
            self.now += host_bytes / (self.link_gbs * 1e9)
            self.busy_until = self.now + work
            self.wait()
            self.now += host_bytes / (self.link_gbs * 1e9)
            return
        self.busy_until = max(self.now, self.busy_until) + work
        self.now += LAUNCH_S

    def facts(self) -> dict:
        """What happened, as plain data: the bytes of the launch made most often, the counts."""
        moved = sorted(self.moved.values(), key=lambda row: -row[1])
        return {"bandwidth_gbs": self.bandwidth_gbs, "launches": self.launches, "implicit": self.implicit,
                "transfers": self.transfers, "timed_transfers": self.timed_transfers, "synchronizes": self.synchronizes, "compiles": len(self.compiled),
                "moved": moved[0][0] if moved else 0}


_CLOCKS = ("perf_counter", "monotonic", "time", "perf_counter_ns", "monotonic_ns", "time_ns")


def _clock_functions(gpu: VirtualGPU) -> dict:
    seconds = gpu.read
    return {"perf_counter": seconds, "monotonic": seconds, "time": lambda: EPOCH_S + gpu.read(),
            "perf_counter_ns": lambda: int(gpu.read() * 1e9), "monotonic_ns": lambda: int(gpu.read() * 1e9),
            "time_ns": lambda: int((EPOCH_S + gpu.read()) * 1e9)}


class _Patches:
    """Attributes replaced for the duration, put back in reverse order."""

    def __init__(self):
        self.saved = []

    def set(self, owner, name: str, value) -> None:
        if isinstance(owner, dict):
            self.saved.append((owner, name, owner[name]))
            owner[name] = value
        else:
            self.saved.append((owner, name, getattr(owner, name)))
            setattr(owner, name, value)

    def restore(self) -> None:
        for owner, name, value in reversed(self.saved):
            if isinstance(owner, dict):
                owner[name] = value
            else:
                setattr(owner, name, value)


@contextmanager
def virtual_gpu(bandwidth_gbs: float, link_gbs: float, module_globals: dict | None = None):
    """Within the block, the simulator is a :class:`VirtualGPU` (yielded) and the clocks read its time.

    ``module_globals``: the namespace of the code timed (a notebook's), where clock functions imported by name
    (``from time import perf_counter``) are swapped too.
    """
    from numba import cuda
    from numba.cuda.simulator import api
    from numba.cuda.simulator import kernel as sim_kernel
    from numba.cuda.simulator.cudadrv import devicearray

    from . import traffic
    gpu = VirtualGPU(bandwidth_gbs=bandwidth_gbs, link_gbs=link_gbs)
    patches = _Patches()
    originals = {name: getattr(time, name) for name in _CLOCKS}
    clocks = _clock_functions(gpu)
    tracing = []
    original_call = sim_kernel.FakeCUDAKernel.__call__
    original_to_device = cuda.to_device
    original_to_host = devicearray.FakeCUDAArray.copy_to_host
    original_copy_to_device = devicearray.FakeCUDAArray.copy_to_device

    def launch(kernel, *args):
        if kernel._device or sim_kernel._kernel_context or tracing:
            return original_call(kernel, *args)
        arrays = [a._ary if isinstance(a, devicearray.FakeCUDAArray) else a for a in args]
        host_bytes = sum(a.nbytes for a in args if isinstance(a, np.ndarray) and a.ndim > 0)
        key = (kernel.fn, kernel.grid_dim, kernel.block_dim,
               tuple((a.shape, a.dtype.str) if isinstance(a, np.ndarray) else type(a).__name__ for a in arrays))
        if key not in gpu.moved:
            tracing.append(True)
            try:
                record = traffic.trace(kernel, kernel.grid_dim, kernel.block_dim, *arrays)
            finally:
                tracing.pop()
            sizes = {name: a.itemsize for name, a in zip(traffic.argument_names(kernel, len(arrays)), arrays)
                     if isinstance(a, np.ndarray)}
            nbytes = sum(count * sizes.get(name, 4) for counts in (record.reads, record.writes)
                         for name, count in counts.items())
            gpu.moved[key] = [nbytes, 0]
        gpu.moved[key][1] += 1
        gpu.launch(kernel.fn, gpu.moved[key][0], host_bytes)

    def to_device(obj, *args, **kwargs):
        gpu.transfer(getattr(obj, "nbytes", 0))
        return original_to_device(obj, *args, **kwargs)

    def copy_to_host(self, *args, **kwargs):
        gpu.transfer(self._ary.nbytes)
        return original_to_host(self, *args, **kwargs)

    def copy_to_device(self, *args, **kwargs):
        gpu.transfer(self._ary.nbytes)
        return original_copy_to_device(self, *args, **kwargs)

    class Event:
        """``cuda.event()`` on the virtual clock: it happens when the work queued before it ends."""

        def __init__(self, timing: bool = True):
            self.at = None

        def record(self, stream=0):
            self.at = max(gpu.now, gpu.busy_until)

        def wait(self, stream=0):
            pass

        def query(self) -> bool:
            return self.at is not None and gpu.now >= self.at

        def synchronize(self):
            gpu.synchronizes += 1
            gpu.now = max(gpu.now, self.at if self.at is not None else gpu.now)

        def elapsed_time(self, other) -> float:
            return (other.at - self.at) * 1e3

    try:
        for name, fn in clocks.items():
            patches.set(time, name, fn)
        patches.set(timeit, "default_timer", clocks["perf_counter"])
        for name, value in list((module_globals or {}).items()):
            for clock, original in originals.items():
                if value is original:
                    patches.set(module_globals, name, clocks[clock])
        patches.set(sim_kernel.FakeCUDAKernel, "__call__", launch)
        patches.set(cuda, "to_device", to_device)
        patches.set(cuda, "synchronize", gpu.synchronize)
        patches.set(cuda, "event", Event)
        patches.set(api.stream, "synchronize", lambda self: gpu.synchronize())
        patches.set(devicearray.FakeCUDAArray, "copy_to_host", copy_to_host)
        patches.set(devicearray.FakeCUDAArray, "copy_to_device", copy_to_device)
        with course_clock.held_by(course_clock.Reading(clocks["perf_counter"])):  # time_fn reads it too
            yield gpu
    finally:
        patches.restore()
