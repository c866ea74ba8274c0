"""The course's clock: what the course's own timing code reads (``harness.time_fn``, a check's counted calls).

``time.perf_counter`` is bound here at import, before a learner's code runs, so code that replaces it (a measured
function that slows the clock) moves no figure the course times. During a measured round the referee holds the clock
(:func:`held_by`, a :class:`Spans`) and keeps every span timed (seconds per call, and a label that says what was
timed); the round sends them to the grader with its answer, so a figure is checked against the calls as that clock
saw them (``checks.referee.off_clock``). A fake or virtual device holds it with its own clock (:class:`Reading`).
"""
from __future__ import annotations

import time
from contextlib import contextmanager
from typing import Protocol

PERF = time.perf_counter  # bound before any learner code runs


class Holder(Protocol):
    keeps: bool  # a referee, which keeps the spans

    def now(self) -> float: ...

    def begin(self) -> float: ...

    def end(self, inner: int, label: str) -> float: ...


_HOLDER: list = []


def held() -> bool:
    """Whether a referee holds the clock and keeps its spans (a measured round is running)."""
    return bool(_HOLDER) and _HOLDER[-1].keeps


def now() -> float:
    """The course's time: the holder's clock where it has its own (a virtual device's), else this process's."""
    return _HOLDER[-1].now() if _HOLDER else PERF()


def begin() -> float:
    """The start of a timed span, on the holder's clock (else this process's)."""
    return _HOLDER[-1].begin() if _HOLDER else PERF()


def end(inner: int = 1, label: str = "") -> float:
    """The end of the span begun last: ``inner`` calls of what ``label`` names; the holder keeps it."""
    return _HOLDER[-1].end(inner, label) if _HOLDER else PERF()


def hold(holder: Holder) -> None:
    """From now on the clock is read through ``holder`` (until :func:`release`)."""
    _HOLDER.append(holder)


def release(holder: Holder) -> None:
    if holder in _HOLDER:
        _HOLDER.remove(holder)


@contextmanager
def held_by(holder: Holder):
    """The clock read through ``holder`` for the duration (one measured round, a virtual device's life)."""
    hold(holder)
    try:
        yield holder
    finally:
        release(holder)


class Reading:
    """A clock of its own (a fake or virtual device's, ``read()`` in seconds) that keeps no span."""

    keeps = False

    def __init__(self, read):
        self.now = self.begin = read

    def end(self, inner: int, label: str) -> float:
        return self.now()


class Spans:
    """Spans timed on this process's clock during one round: a stack of begun spans and the ones ended."""

    keeps = True

    def __init__(self):
        self.open: list[float] = []
        self.kept: list[list] = []

    def now(self) -> float:
        return PERF()

    def begin(self) -> float:
        now = PERF()
        self.open.append(now)
        return now

    def end(self, inner: int, label: str) -> float:
        now = PERF()
        if self.open:
            self.kept.append([(now - self.open.pop()) / max(int(inner), 1), str(label)])
        return now
