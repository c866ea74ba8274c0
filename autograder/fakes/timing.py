"""Deterministic stand-ins for accelerators, to test timing code on any machine.

:class:`FakeAsyncDevice` behaves like a GPU: launching work returns at once and
only ``synchronize()`` waits (it sleeps for the queued work). A timer that forgets
to synchronize measures almost nothing; :func:`audit_timer` catches it.
"""
from __future__ import annotations

import numbers
import time
from typing import Any, Callable

from ..i18n import msg


class FakeAsyncDevice:
    """An asynchronous device: each launch queues ``work_s`` seconds of work; ``synchronize()`` waits for it."""

    def __init__(self, work_s: float = 0.05, name: str = "fake"):
        self.work_s = work_s
        self.name = name
        self.queued = 0
        self.launches = 0
        self.synchronizes = 0

    def launch(self) -> None:
        """Queue one unit of work and return immediately, as a GPU kernel launch does."""
        self.queued += 1
        self.launches += 1

    def matmul(self, *args: Any, **kwargs: Any) -> None:
        """A matmul 'kernel': one launch (the arguments are ignored)."""
        self.launch()

    def synchronize(self) -> None:
        """Wait for (sleep through) all queued work, then clear the queue."""
        pending, self.queued = self.queued, 0
        self.synchronizes += 1
        if pending:
            time.sleep(pending * self.work_s)

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"FakeAsyncDevice(work_s={self.work_s!r}, name={self.name!r})"


def audit_timer(timer: Callable[[Callable[[], None], Any], Any],
                device: FakeAsyncDevice | None = None) -> tuple[bool, float]:
    """Run ``timer(fn, device)`` where ``fn`` launches one unit of work on a fake device.

    Returns ``(covers_work, seconds)``: whether the reported time per call covers the
    queued work (>= 90% of ``device.work_s``), and the time the timer reported. The
    timer may return seconds (a number) or a :class:`autograder.harness.Timing`.
    """
    device = device or FakeAsyncDevice()
    device.synchronize()  # start from an empty queue
    try:
        reported = timer(device.launch, device)
    finally:
        device.queued = 0  # work the timer left behind must not leak into later use
    seconds = getattr(reported, "median_s", reported)
    if isinstance(seconds, bool) or not isinstance(seconds, numbers.Real):
        raise TypeError(msg("measure.bad_timer_result", found=type(reported).__name__).text())
    seconds = float(seconds)
    return seconds >= 0.9 * device.work_s, seconds
