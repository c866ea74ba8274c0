"""A simulated GPU for exercise 03's measurement-debugging task: its clock is simulated, so a measurement on it
gives the same number on any machine, under any load, and nothing is really allocated.

It goes wrong where a real accelerator makes a bandwidth measurement go wrong:

- ``copy_`` returns at once and the copy runs afterwards, as a kernel launch does: only ``synchronize()`` waits
  for the work launched so far, and ``clock()`` (the host's clock, like ``time.perf_counter``) does not wait;
- each launch costs the host a few microseconds;
- the first copy into or out of a new buffer also maps its pages (much slower than copying);
- a copy whose two buffers fit in the cache together, and were the last ones copied, runs at cache speed.

``report()`` says what a measurement did on the device (for the check's diagnosis), never how fast it is.
While grading, the grader holds the device and draws its speeds (:func:`drawn`); the kernel gets a proxy.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass

GB = 1e9
CLOCK_READ_S = 1e-7  # reading the clock takes the host a little time too (so a loop that waits on it ends)

EXAMPLE = {"name": "simulated H100-like GPU", "memory_gib": 80, "cache_mib": 50, "hbm_gbs": 3000,
           "cache_gbs": 9000, "launch_us": 5, "map_gbs": 25}


SLOWER = (0.75, 0.95)  # while grading, the memory and cache speeds are the case's times a factor drawn in here


def drawn(spec: dict, rng) -> dict:
    """``spec`` with its memory and cache speeds slowed by one factor drawn with ``rng`` (None: ``spec`` itself): a
    value read off the case or the exercise is then off by 5 % or more, and slower memory keeps a copy of buffers 4x
    the cache longer than the launches it takes (a rule of the hidden devices)."""
    if rng is None:
        return dict(spec)
    factor = rng.uniform(*SLOWER)
    return {**spec, "hbm_gbs": round(spec["hbm_gbs"] * factor, 1), "cache_gbs": round(spec["cache_gbs"] * factor, 1)}


@dataclass(frozen=True)
class Buffer:
    """``nbytes`` bytes on a simulated device (no real memory behind them)."""

    nbytes: int
    key: int


class SimulatedGPU:
    """A GPU-like device with a simulated clock: ``empty``, ``copy_``, ``synchronize``, ``clock``.

    ``cache_bytes`` and ``memory_bytes`` are what the device reports, like
    ``torch.cuda.get_device_properties(0)`` (``L2_cache_size``, ``total_memory``).
    """

    shown = ("name", "cache_bytes", "memory_bytes")  # what the device tells its user (a proxy has only these)

    def __init__(self, spec: dict):
        self._spec = dict(spec)
        self.name = str(spec["name"])
        self.cache_bytes = int(spec["cache_mib"] * 2**20)
        self.memory_bytes = int(spec["memory_gib"] * 2**30)
        self._rates = (float(spec["hbm_gbs"]) * GB, float(spec["cache_gbs"]) * GB, float(spec["map_gbs"]) * GB)
        self._launch_s = float(spec["launch_us"]) * 1e-6
        self._host = 0.0           # the host's clock (s)
        self._busy = 0.0           # the device finishes the work launched so far at this time (s)
        self._allocated = 0
        self._keys = itertools.count()
        self._mapped: set[int] = set()
        self._resident: frozenset[int] = frozenset()
        self._last_clock = 0.0
        self._since_clock = {"copies": 0, "mapped": 0}
        self._log = {"copies": 0, "synchronizes": 0, "clock_reads": 0, "clock_reads_while_busy": 0,
                     "largest_copy_bytes": 0, "timed_mapping": 0, "launch_share": 0.0}

    def __repr__(self) -> str:
        return f"SimulatedGPU({self.name!r}, cache {self.cache_bytes / 2**20:g} MiB, memory {self.memory_bytes / 2**30:g} GiB)"

    def empty(self, nbytes: int) -> Buffer:
        """A buffer of ``nbytes`` bytes (not yet touched: its pages are mapped by its first copy)."""
        nbytes = int(nbytes)
        if nbytes <= 0:
            raise ValueError(f"a buffer needs a positive size, not {nbytes}")
        if self._allocated + nbytes > self.memory_bytes:
            raise MemoryError(f"{self.name}: {nbytes / 2**30:.2f} GiB more does not fit in "
                              f"{self.memory_bytes / 2**30:g} GiB ({self._allocated / 2**30:.2f} GiB allocated)")
        self._allocated += nbytes
        return Buffer(nbytes, next(self._keys))

    def copy_(self, dst: Buffer, src: Buffer) -> None:
        """Launch a copy of ``src`` into ``dst`` (same size) and return at once; the device runs it later."""
        if not (isinstance(dst, Buffer) and isinstance(src, Buffer)) or dst.nbytes != src.nbytes or dst is src:
            raise ValueError("copy_(dst, src) takes two different buffers of the same size from empty()")
        hbm, cache, mapping = self._rates
        self._host += self._launch_s
        seconds, fresh = 0.0, 0
        for buf in (src, dst):
            if buf.key not in self._mapped:
                seconds += buf.nbytes / mapping
                self._mapped.add(buf.key)
                fresh += 1
        moved = 2 * src.nbytes
        fits = moved <= self.cache_bytes
        warm = fits and {src.key, dst.key} <= self._resident
        seconds += moved / (cache if warm else hbm)
        self._resident = frozenset((src.key, dst.key)) if fits else frozenset()
        self._busy = max(self._host, self._busy) + seconds
        self._log["copies"] += 1
        self._log["largest_copy_bytes"] = max(self._log["largest_copy_bytes"], src.nbytes)
        self._since_clock["copies"] += 1
        self._since_clock["mapped"] += fresh

    def synchronize(self) -> None:
        """Wait until every copy launched so far has finished."""
        self._host = max(self._host, self._busy)
        self._log["synchronizes"] += 1

    def clock(self) -> float:
        """The host's clock in seconds (it does not wait for the device)."""
        log = self._log
        if log["clock_reads"] and self._since_clock["copies"]:  # the interval since the last reading was timed
            log["timed_mapping"] += self._since_clock["mapped"]
            if self._host > self._last_clock:
                log["launch_share"] = max(log["launch_share"], self._launch_s / (self._host - self._last_clock))
        if self._busy > self._host:
            log["clock_reads_while_busy"] += 1
        log["clock_reads"] += 1
        self._since_clock = {"copies": 0, "mapped": 0}
        self._host += CLOCK_READ_S
        self._last_clock = self._host
        return self._host

    def report(self) -> dict:
        """What a measurement did here: copies, synchronizes, clock readings (and those taken while copies were
        still running), the largest buffer copied, first-touch copies inside timed intervals, and the largest
        share of a timed interval that one launch took."""
        return dict(self._log)

    def _observed(self) -> dict:
        """What the check scores: the device's ``spec`` (its real speeds) and its ``report()``."""
        return {"device": dict(self._spec), "report": self.report()}
