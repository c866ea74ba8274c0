"""Devices on a virtual clock: timings that are exact and the same on every machine, under any load.

:class:`VirtualGPU` behaves like a GPU: ``launch()`` queues one kernel and returns after the host's share of
the work, the device runs the queue in order, and ``synchronize()`` waits until the queue is empty. Nothing
sleeps: ``clock()`` is the virtual time in seconds, so a timer given ``clock=gpu.clock`` measures exactly what
the device model says. Knobs switch on the effects a real measurement meets (queued work, slow first calls,
a hiccup); the lesson and the timer tasks of exercise 01 use them.
"""
from __future__ import annotations


class VirtualGPU:
    """An asynchronous device on a virtual clock.

    - ``work_s``: device time of one kernel; ``launch_s``: host time to launch it.
    - ``queued``: kernels already in the queue when the device is handed over (someone else's work).
    - ``slow_first`` / ``first_s``: the first ``slow_first`` launches cost the host ``first_s`` more each
      (library start-up, kernel selection, memory allocation).
    - ``hiccup_at`` / ``hiccup_s``: those launches (a tuple of numbers counted from 1, or one number) stall the
      host ``hiccup_s`` more (the operating system ran something else).
    - ``scale``: every duration above is that times ``scale`` (while grading, the grader draws it).
    """

    shown = ("name",)  # what the device tells its user (a proxy of it has only this)

    def __init__(self, work_s: float = 0.01, launch_s: float = 1e-4, queued: int = 0, slow_first: int = 0,
                 first_s: float = 0.1, hiccup_at: tuple | int = (), hiccup_s: float = 0.1, name: str = "virtual GPU",
                 scale: float = 1.0):
        work_s, launch_s, first_s, hiccup_s = (scale * t for t in (work_s, launch_s, first_s, hiccup_s))
        self._scale = scale
        self.work_s, self.launch_s, self.first_s, self.hiccup_s = work_s, launch_s, first_s, hiccup_s
        self.slow_first, self.name = slow_first, name
        self.hiccup_at = (hiccup_at,) if isinstance(hiccup_at, int) else tuple(hiccup_at)
        self.now = 0.0                      # host time
        self.done_at = queued * work_s      # when the device will have run its queue
        self.launches = 0

    def clock(self) -> float:
        """Virtual seconds since the device was created (pass it to a timer as its clock)."""
        return self.now

    def launch(self) -> None:
        """Queue one kernel: the host pays its launch (and any start-up or hiccup), the device runs it later."""
        self.launches += 1
        self.now += self.launch_s
        if self.launches <= self.slow_first:
            self.now += self.first_s
        if self.launches in self.hiccup_at:
            self.now += self.hiccup_s
        self.done_at = max(self.done_at, self.now) + self.work_s

    def synchronize(self) -> None:
        """Wait until every queued kernel has run."""
        self.now = max(self.now, self.done_at)

    def __repr__(self) -> str:
        return f"VirtualGPU(work_s={self.work_s!r}, name={self.name!r})"

    def _observed(self) -> dict:
        """What a check scores: the ``scale`` of the durations and how many kernels were launched."""
        return {"scale": self._scale, "launches": self.launches}


class VirtualCPU:
    """Synchronous work on a virtual clock: ``run()`` returns when its ``work_s`` (times ``scale``) is done."""

    shown = ()

    def __init__(self, work_s: float = 0.01, scale: float = 1.0):
        self.work_s, self.now, self._scale, self.runs = scale * work_s, 0.0, scale, 0

    def clock(self) -> float:
        return self.now

    def run(self) -> None:
        self.now += self.work_s
        self.runs += 1

    def _observed(self) -> dict:
        return {"scale": self._scale, "launches": self.runs}
