"""What a kernel does to memory, counted exactly on Numba's CUDA simulator and Triton's interpreter.

:func:`trace` runs a ``@cuda.jit`` kernel on the simulator (also where a real GPU runs it: the simulator takes
the kernel's Python function) with every array argument wrapped, and returns a :class:`Trace`:

- **global traffic**: element reads and writes per array and per element (an atomic counts as one read and
  one write), the reads and the writes of the thread that did the most, and accesses out of bounds (which NumPy
  would wrap or raise, and a GPU would not report);
- **the kernel's own stores**: the elements of each array whose value after the launch is not what the kernel's
  stores left there (something other than the kernel changed them). A kernel reaches an array's values only
  by indexing it (:class:`Traced`);
- **coalescing**: the 32-byte sectors each warp's request touches (the k-th access of one source line by the 32
  threads of a warp is one request, as on the GPU): 4 sectors per request for 32 consecutive float32 values;
- **shared memory and barriers**: the shared reads of the thread that read the most (one thread adding up a
  whole block serially reads the block; a tree reads about two per level), the most barriers one thread passed;
  every access with the number of ``cuda.syncthreads()`` its thread has passed
  (its *phase*). Two threads of a block that touch one element in the same phase, one of them writing, race:
  nothing orders them. A read of an element no thread of the block has written before is uninitialised. Both
  are found from the record, whatever order the simulator happened to run the threads in. A thread that passes
  fewer barriers than the others of its block (it returned early) is recorded too: on a GPU every thread of a
  block must reach every ``cuda.syncthreads()``;
- **global races**: two threads that touch one element with at least one plain (non-atomic) write, unless they
  are in the same block and a barrier separates them (nothing orders different blocks within a launch).

:func:`trace_triton` counts the elements a Triton kernel loads and stores per tensor on the interpreter, and
stops an access outside every tensor before it happens; it also counts the accesses just past a tensor's end
(where a missing mask leads) and the elements not as the kernel's ``tl.store`` left them.
"""
from __future__ import annotations

import inspect
import math
import sys
import threading
from collections import Counter, defaultdict
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np

SECTOR = 32      # bytes: the unit in which a warp's request is served
WARP = 32        # threads
_LOCK = threading.Lock()   # one traced launch at a time (the simulator runs one kernel at a time anyway)
_ALLOCATING = threading.Lock()


class OutOfBounds(IndexError):
    """A thread read or wrote outside an array."""


class NotAKernel(TypeError):
    """What was given is not a ``@cuda.jit`` kernel."""


@dataclass(frozen=True)
class Race:
    space: str          # "shared" or "global"
    array: str
    index: tuple
    kind: str           # "read-write", "write-write" or "uninitialised"
    threads: tuple      # the (block, thread) pairs involved (block and thread as index tuples)
    phase: int          # barrier phase of the first access in conflict


@dataclass
class Trace:
    """What one launch did (counts in elements)."""

    grid: tuple
    block: tuple
    reads: Counter = field(default_factory=Counter)
    writes: Counter = field(default_factory=Counter)
    atomics: Counter = field(default_factory=Counter)
    shared_reads: int = 0
    shared_writes: int = 0
    shared_most: tuple | None = None   # (shared reads, block, thread) of the thread that read the most shared values
    barriers: int = 0                  # the most ``cuda.syncthreads()`` one thread passed
    oob: list = field(default_factory=list)          # (array, index, "read"/"write", block, thread)
    races: list = field(default_factory=list)
    requests: Counter = field(default_factory=Counter)   # array -> warp requests
    sectors: Counter = field(default_factory=Counter)    # array -> 32-byte sectors over all its requests
    written: dict = field(default_factory=dict)          # array -> writes per element (ndarray of counts)
    read: dict = field(default_factory=dict)             # array -> reads per element (ndarray of counts)
    unstored: dict = field(default_factory=dict)         # array -> flat indices not as the kernel's stores left them
    most_reads: tuple | None = None    # (global reads, block, thread) of the thread that read the most elements
    most_writes: tuple | None = None   # (global writes, block, thread) of the thread that wrote the most
    error: str | None = None                              # what the kernel raised, if anything
    skipped_barrier: tuple | None = None   # (block, thread, barriers it passed, barriers others of its block passed)

    @property
    def threads(self) -> int:
        return math.prod(self.grid) * math.prod(self.block)

    def sectors_per_request(self, array: str) -> float | None:
        return self.sectors[array] / self.requests[array] if self.requests[array] else None

    def first_race(self, space: str | None = None) -> Race | None:
        return next((r for r in self.races if space in (None, r.space)), None)


# ---------------------------------------------------------------- the recorder and the traced arrays
class _Recorder:
    def __init__(self, grid: tuple, block: tuple):
        self.grid, self.block = grid, block
        self.events: list = []   # global: (array, flat, write, atomic, block, thread, phase, line, occurrence)
        self.shared: list = []   # shared: (key, flat, write, atomic, block, thread, phase)
        self.oob: list = []
        self.barriers: dict = {}  # (block, thread) -> barriers passed (threads that never reached one: absent)
        self.stored: dict = {}    # global array -> its values as the kernel's stores left them
        self.storing = threading.Lock()

    def who(self) -> tuple:
        """(block, thread, state) of the calling simulator thread; state holds its phase and counters."""
        t = threading.current_thread()
        state = getattr(t, "_m07", None)
        if state is None:
            state = t._m07 = {"phase": 0, "atomic": False, "atomic_read": False, "seen": Counter()}
        return tuple(t.blockIdx), tuple(t.threadIdx), state


class Traced:
    """An array as a kernel sees it, recording every element it reads and writes.

    The array behind it is no attribute: its methods hold it, so a kernel reaches the values only by indexing,
    which is recorded. A row or a slice is a traced view, as on a GPU, where a kernel cannot hand an array to
    NumPy or do arithmetic on it (``np.asarray`` of one raises): its elements are read one index at a time,
    each recorded. Each store of a global array also
    goes to the recorder's copy of that array (:attr:`_Recorder.stored`): after the launch, an element whose
    value differs from what the kernel's stores left there was changed by something else."""

    __slots__ = ("shape", "ndim", "size", "dtype", "_name", "_space", "_read", "_write")

    def __init__(self, data: np.ndarray, name: str, rec: _Recorder, space: str = "global",
                 flat: np.ndarray | None = None, key: Any = None):
        flat = np.arange(data.size).reshape(data.shape) if flat is None else flat
        key = name if key is None else key
        self.shape, self.ndim, self.size, self.dtype = data.shape, data.ndim, data.size, data.dtype
        self._name, self._space = name, space
        stored = rec.stored.get(key) if space == "global" else None

        def read(idx):
            where = self._where(idx, flat, rec, False)
            if isinstance(where, np.ndarray):   # a row or a slice: a view, traced on use
                return Traced(data[idx], name, rec, space, where, key)
            _record(rec, key, space, where, False)
            return data[idx]

        def write(idx, value) -> None:
            where = self._where(idx, flat, rec, True)
            with rec.storing:   # the store and its copy together, even when two threads race to one element
                data[idx] = value
                if stored is not None:
                    stored.flat[where] = data[idx]
            _record(rec, key, space, where, True)

        self._read, self._write = read, write

    def __len__(self) -> int:
        return self.shape[0]

    def __array__(self, *args, **kwargs):
        raise TypeError(f"a kernel cannot turn the array {self._name} into a NumPy array (a GPU has no NumPy): "
                        "index its elements")

    def __repr__(self) -> str:
        return f"<{self._space} array {self._name} {self.shape} {self.dtype}>"

    def __getitem__(self, idx):
        return self._read(idx)

    def __setitem__(self, idx, value) -> None:
        self._write(idx, value)

    def _where(self, idx, flat: np.ndarray, rec: _Recorder, write: bool):
        parts = idx if isinstance(idx, tuple) else (idx,)
        for d, i in enumerate(parts):
            if isinstance(i, (int, np.integer)) and not isinstance(i, bool) and (d >= self.ndim or not 0 <= i < self.shape[d]):
                block, thread, _ = rec.who()
                shown = tuple(int(p) if isinstance(p, (int, np.integer)) else p for p in parts)
                rec.oob.append((self._name, shown, "write" if write else "read", block, thread))
                raise OutOfBounds(f"{'write' if write else 'read'} {self._name}{list(shown)} outside {self.shape}")
        return flat[idx]


def _record(rec: _Recorder, key: Any, space: str, flat, write: bool) -> None:
    """One access by the calling thread: each element it touches, with the source line it came from."""
    block, thread, state = rec.who()
    atomic = state["atomic"]
    if atomic and not write:   # the simulator's atomics read twice (old value, then +=): one load on a GPU
        if state["atomic_read"]:
            return
        state["atomic_read"] = True
    for f in ((int(flat),) if isinstance(flat, (int, np.integer)) else np.ravel(flat).tolist()):
        if space == "global":
            line = sys._getframe(3).f_lineno
            seen = state["seen"]
            occurrence = seen[(key, line, write)]
            seen[(key, line, write)] = occurrence + 1
            rec.events.append((key, f, write, atomic, block, thread, state["phase"], line, occurrence))
        else:
            rec.shared.append((key, f, write, atomic, block, thread, state["phase"]))


# ---------------------------------------------------------------- the simulator, instrumented
def _simulator():
    from numba.cuda.simulator import kernel as sim_kernel
    from numba.cuda.simulator import kernelapi
    return sim_kernel, kernelapi


_ACTIVE: list = []   # the recorder of the launch being traced


def _module_class():
    sim_kernel, kernelapi = _simulator()

    class Shared(kernelapi.FakeCUDAShared):
        """Shared arrays identified by the line that declares them, as the simulator does, and traced."""

        def array(self, shape, dtype, alignment=None):
            base = super().array(shape, dtype, alignment) if shape == 0 else None
            frame = sys._getframe(1)
            key = ("shared", frame.f_code.co_filename, frame.f_lineno)
            with _ALLOCATING:   # the first threads of a block arrive together: one array for all of them
                found = self._allocations.get(key)
                if found is None:
                    if base is None:
                        numba_type = isinstance(dtype, kernelapi.types.Type)
                        base = np.zeros(shape, kernelapi.numpy_support.as_dtype(dtype) if numba_type else dtype)
                    found = self._allocations[key] = Traced(base, f"shared@{frame.f_lineno}", _ACTIVE[-1], "shared",
                                                            key=key)
            return found

    class Atomic(kernelapi.FakeCUDAAtomic):
        pass

    def _atomic_wrapper(op):
        def call(self, array, *args):
            _, _, state = _ACTIVE[-1].who()
            state["atomic"], state["atomic_read"] = True, False
            try:
                return op(self, array, *args)
            finally:
                state["atomic"] = False
        return call

    for name in ("add", "sub", "and_", "or_", "xor", "inc", "dec", "exch", "max", "min", "nanmax", "nanmin",
                 "compare_and_swap", "cas"):
        if hasattr(kernelapi.FakeCUDAAtomic, name):
            setattr(Atomic, name, _atomic_wrapper(getattr(kernelapi.FakeCUDAAtomic, name)))

    def _barrier(times: int, name: str):
        original = getattr(kernelapi.FakeCUDAModule, name)

        def call(self, *args):
            rec = _ACTIVE[-1]
            block, thread, state = rec.who()
            state["phase"] += times
            rec.barriers[(block, thread)] = state["phase"]
            return original(self, *args)
        return call

    class Module(kernelapi.FakeCUDAModule):
        def __init__(self, grid_dim, block_dim, dynshared_size):
            super().__init__(grid_dim, block_dim, dynshared_size)
            self._shared = Shared(dynshared_size)
            self._atomic = Atomic()

        syncthreads = _barrier(1, "syncthreads")
        syncthreads_count = _barrier(2, "syncthreads_count")
        syncthreads_and = _barrier(2, "syncthreads_and")
        syncthreads_or = _barrier(2, "syncthreads_or")

    return sim_kernel, Module


def python_function(kernel: Any):
    """The Python function behind a ``@cuda.jit`` kernel (simulated or real)."""
    fn = getattr(kernel, "py_func", None)
    if fn is None or not callable(fn):
        raise NotAKernel(f"{type(kernel).__name__} is not a @cuda.jit kernel")
    return fn


def _dims(value) -> tuple:
    dims = tuple(int(v) for v in value) if isinstance(value, (tuple, list)) else (int(value),)
    return dims + (1,) * (3 - len(dims))


def argument_names(kernel: Any, count: int) -> list[str]:
    """The names of a kernel's first ``count`` parameters (``argN`` where the signature cannot tell)."""
    try:
        names = list(inspect.signature(python_function(kernel)).parameters)[:count]
    except (TypeError, ValueError):
        names = []
    return names + [f"arg{i}" for i in range(len(names), count)]


def trace(kernel: Any, grid, block, *args, names: tuple | None = None) -> Trace:
    """Run ``kernel[grid, block](*args)`` on the simulator, NumPy arrays in place, and record what it did.
    ``names``: the arguments' names in the record (by default the kernel's own parameter names)."""
    fn = python_function(kernel)
    grid3, block3 = _dims(grid), _dims(block)
    names = list(names) if names is not None else argument_names(kernel, len(args))
    sim_kernel, Module = _module_class()
    with _LOCK:
        rec = _Recorder(grid3, block3)
        rec.stored = {names[i]: np.copy(a) for i, a in enumerate(args) if isinstance(a, np.ndarray) and a.ndim > 0}
        wrapped = [Traced(a, names[i], rec) if isinstance(a, np.ndarray) and a.ndim > 0 else a
                   for i, a in enumerate(args)]
        original = sim_kernel.FakeCUDAModule
        sim_kernel.FakeCUDAModule, error = Module, None
        _ACTIVE.append(rec)
        try:
            sim_kernel.FakeCUDAKernel(fn, device=False)[grid, block](*wrapped)
        except Exception as exc:  # the learner's kernel may raise anything: the trace says what
            error = f"{type(exc).__name__}: {exc}"
        finally:
            _ACTIVE.pop()
            sim_kernel.FakeCUDAModule = original
    out = Trace(grid=grid3, block=block3, oob=list(rec.oob), error=error,
                unstored={name: np.flatnonzero(_changed(args[names.index(name)], kept))
                          for name, kept in rec.stored.items()})
    _count(out, rec, {names[i]: a for i, a in enumerate(args) if isinstance(a, np.ndarray)})
    out.races = _races(rec)
    out.skipped_barrier = None if error else _skipped_barrier(rec)
    return out


def _changed(now: np.ndarray, kept: np.ndarray) -> np.ndarray:
    """Where ``now`` differs from ``kept`` (NaN equal to NaN), flat."""
    same = (now == kept) | (np.isnan(now) & np.isnan(kept)) if now.dtype.kind in "fc" else now == kept
    return ~np.ravel(same)


def _skipped_barrier(rec: _Recorder) -> tuple | None:
    """The first thread that passed fewer barriers than another thread of its block (it returned early), or None."""
    if not rec.barriers:
        return None
    for block in np.ndindex(*rec.grid):
        passed = {thread: rec.barriers.get((block, thread), 0) for thread in np.ndindex(*rec.block)}
        most = max(passed.values())
        fewest = min(passed, key=passed.get)
        if passed[fewest] < most:
            return block, fewest, passed[fewest], most
    return None


# ---------------------------------------------------------------- analysis of a record
def _count(out: Trace, rec: _Recorder, arrays: dict) -> None:
    requests = defaultdict(set)
    written = {name: np.zeros(a.shape, dtype=np.int64) for name, a in arrays.items()}
    read = {name: np.zeros(a.shape, dtype=np.int64) for name, a in arrays.items()}
    by_thread = {False: Counter(), True: Counter()}
    for name, flat, write, atomic, block, thread, _, line, occurrence in rec.events:
        (out.writes if write else out.reads)[name] += 1
        by_thread[write][(block, thread)] += 1
        if atomic and write:
            out.atomics[name] += 1
        (written if write else read)[name].flat[flat] += 1
        if not atomic:
            linear = thread[0] + rec.block[0] * (thread[1] + rec.block[1] * thread[2])
            requests[(name, block, linear // WARP, line, write, occurrence)].add(flat * arrays[name].itemsize // SECTOR)
    for (name, *_), sectors in requests.items():
        out.requests[name] += 1
        out.sectors[name] += len(sectors)
    out.written, out.read = written, read
    out.most_reads, out.most_writes = (_busiest(by_thread[w]) for w in (False, True))
    per_thread = Counter()
    for _, _, write, _, block, thread, _ in rec.shared:
        if write:
            out.shared_writes += 1
        else:
            out.shared_reads += 1
            per_thread[(block, thread)] += 1
    out.shared_most = _busiest(per_thread)
    out.barriers = max(rec.barriers.values(), default=0)


def _busiest(per_thread: Counter) -> tuple | None:
    """(count, block, thread) of the thread with the highest count, or None."""
    if not per_thread:
        return None
    (block, thread), most = per_thread.most_common(1)[0]
    return most, block, thread


def _races(rec: _Recorder, limit: int = 20) -> list[Race]:
    """Conflicting accesses: shared memory within a block and phase, global memory across threads."""
    found: list[Race] = []
    by_place = defaultdict(list)   # (space, array, block or None, flat) -> [(order, thread, write, atomic, phase)]
    for order, (key, flat, write, atomic, block, thread, phase) in enumerate(rec.shared):
        by_place[("shared", key, block, flat)].append((order, block, thread, write, atomic, phase))
    for order, (name, flat, write, atomic, block, thread, phase, _, _) in enumerate(rec.events):
        by_place[("global", name, None, flat)].append((order, block, thread, write, atomic, phase))
    for (space, key, _, flat), accesses in by_place.items():
        name = key if isinstance(key, str) else f"shared@{key[2]}"
        if space == "shared":
            race = _shared_conflict(accesses)
        elif any(w and not a for _, _, _, w, a, _ in accesses):
            race = _global_conflict(accesses)
        else:
            race = None
        if race is not None:
            kind, who, phase = race
            found.append(Race(space, name, (flat,), kind, who, phase))
            if len(found) >= limit:
                break
    return sorted(found, key=lambda r: (r.kind == "uninitialised", r.space, r.phase))


def _shared_conflict(accesses: list):
    phases = defaultdict(list)
    for access in accesses:
        phases[access[5]].append(access)
    written_before = False
    for phase in sorted(phases):
        group = phases[phase]
        writers = {(b, t) for _, b, t, w, a, _ in group if w and not a}
        touching = {(b, t) for _, b, t, *_ in group}
        if writers and len(touching) > 1:
            kind = "write-write" if len({(b, t) for _, b, t, w, _, _ in group if w}) > 1 else "read-write"
            return kind, tuple(sorted(touching))[:4], phase
        if not written_before:
            first_write = {}
            for order, b, t, w, _, _ in group:
                if w:
                    first_write.setdefault((b, t), order)
            for order, b, t, w, _, _ in group:
                if not w and not (first_write.get((b, t), math.inf) < order):
                    return "uninitialised", ((b, t),), phase
        written_before = written_before or any(w for _, _, _, w, _, _ in group)
    return None


def _global_conflict(accesses: list):
    threads = {(b, t) for _, b, t, *_ in accesses}
    if len(threads) < 2:
        return None
    for _, b1, t1, w1, a1, p1 in accesses:
        for _, b2, t2, w2, a2, p2 in accesses:
            if (b1, t1) >= (b2, t2) or not (w1 or w2) or (a1 and a2):
                continue
            if b1 != b2 or p1 == p2:
                kind = "write-write" if w1 and w2 else "read-write"
                return kind, ((b1, t1), (b2, t2)), min(p1, p2)
    return None


# ---------------------------------------------------------------- Triton on the interpreter
@dataclass
class TritonTrace:
    loads: Counter = field(default_factory=Counter)    # tensor name -> elements loaded
    stores: Counter = field(default_factory=Counter)   # tensor name -> elements stored
    outside: list = field(default_factory=list)         # (load/store, byte address) outside every tensor
    strays: Counter = field(default_factory=Counter)    # (load/store, tensor name) -> accesses fewer than ``past``
                                                        # bytes past that tensor's end (maybe inside another)
    unstored: dict = field(default_factory=dict)        # tensor name -> flat indices not as the stores left them
    error: str | None = None


@contextmanager
def _triton_hooks(tensors: dict, record: TritonTrace, stored: dict, past: int):
    """Count masked loads and stores per tensor on the interpreter, and the accesses just past a tensor's end;
    keep each stored value in ``stored``; refuse an access outside every tensor."""
    from triton.runtime import interpreter

    builder = interpreter.interpreter_builder
    ranges = [(name, t.data_ptr(), t.data_ptr() + t.numel() * t.element_size(), t.element_size())
              for name, t in tensors.items()]

    def account(kind: str, ptrs, mask, counter: Counter, value=None) -> None:
        addresses = np.asarray(ptrs.data).astype(np.uint64)
        live = np.broadcast_to(np.asarray(mask.data, dtype=bool), addresses.shape)
        chosen = addresses[live]
        values = None if value is None else np.broadcast_to(np.asarray(value.data), addresses.shape)[live]
        inside = np.zeros(chosen.shape, dtype=bool)
        for name, lo, hi, size in ranges:
            hit = (chosen >= lo) & (chosen < hi)
            counter[name] += int(hit.sum())
            record.strays[(kind, name)] += int(((chosen >= hi) & (chosen < hi + past)).sum())
            if values is not None:
                stored[name][((chosen[hit] - lo) // size).astype(np.int64)] = values[hit]
            inside |= hit
        if not inside.all():
            record.outside.append((kind, int(chosen[~inside][0])))
            raise OutOfBounds(f"{kind} outside every tensor")

    load, store = builder.create_masked_load, builder.create_masked_store

    def masked_load(ptrs, mask, other, *rest):
        account("load", ptrs, mask, record.loads)
        return load(ptrs, mask, other, *rest)

    def masked_store(ptrs, value, mask, *rest):
        account("store", ptrs, mask, record.stores, value)
        return store(ptrs, value, mask, *rest)

    builder.create_masked_load, builder.create_masked_store = masked_load, masked_store
    try:
        yield
    finally:
        del builder.create_masked_load, builder.create_masked_store


def trace_triton(launch, tensors: dict, past: int = 0) -> TritonTrace:
    """Run ``launch()`` (a Triton launch on CPU tensors, interpreted) and count its traffic per named tensor;
    an access fewer than ``past`` bytes past a tensor's end is a stray of that tensor (also where another tensor
    begins there: which tensor a pointer came from, only the kernel knows). Afterwards, the elements
    whose values differ from what the kernel's stores left there are :attr:`TritonTrace.unstored`."""
    record = TritonTrace()
    stored = {name: t.detach().numpy().ravel().copy() for name, t in tensors.items()}
    with _LOCK:
        try:
            with _triton_hooks(tensors, record, stored, past):
                launch()
        except Exception as exc:  # the learner's kernel may raise anything: the trace says what
            record.error = f"{type(exc).__name__}: {exc}"[:400]
    record.unstored = {name: np.flatnonzero(_changed(t.detach().numpy().ravel(), stored[name]))
                       for name, t in tensors.items()}
    return record
