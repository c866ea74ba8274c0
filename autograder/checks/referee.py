"""Measurement tasks are graded side by side: the learner's measurement and a reference, interleaved.

A measurement task (``Task(measurement=True)``) runs its ``answer`` ``rounds`` times
per case. Around each round the *referee* starts and stops its own clock (``walls``),
and after it takes the reference measurement of the same thing on the same device
(``task.reference(case, answer)``). Load on the machine then slows both sides
alike, and the task is scored on the median of per-round ratios; a function that
reports a time it did not spend has not measured (:func:`unmeasured`).

In a learner's kernel the referee is local (:class:`LocalReferee`). While grading it
is the grader: :class:`RemoteReferee` talks to it over the Unix socket named by
``COURSE_REFEREE``. The grader then holds the device lock for the whole check,
keeps its own clock and takes the reference outside the sandbox; none of its
figures reach the kernel, and it scores the rounds with what it observed.

During a round the referee also holds the course's clock (:mod:`autograder.clock`, bound before a learner's code
runs): every span the course's timing code times (a sample of ``time_fn``, a counted call) is kept and sent with the
round (``observed["spans"]``), so a figure is held to the calls as that clock saw them (:func:`off_clock`).
"""
from __future__ import annotations

import json
import math
import os
import socket
import statistics
from contextlib import contextmanager
from typing import Any

from .. import clock
from ..i18n import Message, msg

SOCKET_ENV = "COURSE_REFEREE"
REPLY_TIMEOUT_S = 900.0  # a reference measurement on a busy machine may take a while


class LocalReferee:
    """The learner's own kernel: its clock and the reference run here."""

    def __init__(self, task):
        self.task, self.seen, self.best, self.tries = task, {}, {}, {}

    @contextmanager
    def session(self, task_id: str):
        yield self

    def start(self, case_index: int, round_index: int) -> None:
        self._spans = clock.Spans()
        clock.hold(self._spans)
        self._began = clock.PERF()

    def finish(self, case_index: int, round_index: int, case: Any, answer: Any) -> None:
        wall = clock.PERF() - self._began
        clock.release(self._spans)
        seen = self.seen.setdefault(case_index, _unseen())
        seen["walls"].append(wall)
        seen["spans"].append(self._spans.kept)
        seen["reference"].append(take_reference(self.task, case, answer))

    def observed(self, case_index: int) -> dict | None:
        return self.seen.get(case_index, _unseen())

    def again(self, case_index: int, case: Any, answer: dict) -> bool:
        """Whether to measure the case again (:func:`better`); the attempt is kept if it is the best so far."""
        self.tries[case_index] = self.tries.get(case_index, 0) + 1
        self.best[case_index] = better(self.task, case, answer, self.best.get(case_index))
        if self.best[case_index][1] and self.tries[case_index] <= AGAIN:
            self.seen[case_index] = _unseen()
            return True
        return False

    def kept(self, case_index: int, answer: dict | None) -> dict | None:
        """The best attempt at the case (``answer`` if it was not judged), saying how many attempts were made."""
        if case_index not in self.best:
            return answer
        best = self.best[case_index][2]
        return {**best, "observed": {**best["observed"], "attempts": self.tries[case_index]}}


class RemoteReferee:
    """The grader, over its Unix socket: it keeps the clock and the reference figures to itself."""

    def __init__(self, path: str):
        self.path = path

    @contextmanager
    def session(self, task_id: str):
        self.task_id = task_id
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(REPLY_TIMEOUT_S)
        self.sock.connect(self.path)
        self.stream = self.sock.makefile("rw", encoding="utf-8")
        try:
            self._ask(op="begin")
            yield self
        finally:
            try:
                self._ask(op="end")
            finally:
                self.stream.close()
                self.sock.close()

    def start(self, case_index: int, round_index: int) -> None:
        self._ask(op="start", case=case_index, round=round_index)
        self._spans = clock.Spans()
        clock.hold(self._spans)

    def finish(self, case_index: int, round_index: int, case: Any, answer: Any) -> None:
        clock.release(self._spans)
        self._ask(op="finish", case=case_index, round=round_index, answer=answer, spans=self._spans.kept)

    def observed(self, case_index: int) -> None:
        return None  # the grader fills this in from its own observations

    def again(self, case_index: int, case: Any, answer: Any) -> bool:
        return self._ask(op="again", case=case_index).get("again") is True  # the grader judges what it observed

    def kept(self, case_index: int, answer: Any) -> Any:
        return answer  # the grader keeps the best attempt

    def _ask(self, **request) -> dict:
        self.stream.write(json.dumps({"task": self.task_id, **request}) + "\n")
        self.stream.flush()
        line = self.stream.readline()
        return json.loads(line) if line else {"ok": False}


@contextmanager
def device(task_id: str, case: Any):
    """The simulated device of ``case`` (``Task.simulated``): here the task's own; while grading a proxy of the
    grader's, whose parameters the kernel never sees. Its ``_observed()`` is None in the kernel then."""
    path = os.environ.get(SOCKET_ENV)
    if not path:
        from . import task as find_task
        yield find_task(task_id).simulated(case, None)
        return
    remote = RemoteDevice(path, task_id, case)
    try:
        yield remote
    finally:
        remote.close()


class Handle:
    """Something a simulated device returned (a buffer): its public attributes, and the grader's id for it."""

    def __init__(self, ref: int, attrs: dict):
        self._ref = ref
        self.__dict__.update(attrs)

    def __repr__(self) -> str:
        return f"Handle({', '.join(f'{k}={v!r}' for k, v in vars(self).items() if not k.startswith('_'))})"


class RemoteDevice:
    """The grader's simulated device, seen from the kernel: its public attributes and methods, each call a request."""

    def __init__(self, path: str, task_id: str, case: Any):
        self._referee = RemoteReferee(path)
        self._session = self._referee.session(task_id)
        self._session.__enter__()
        reply = self._referee._ask(op="device", case=case)
        if not reply.get("ok"):
            self.close()
            raise RuntimeError(msg("measure.no_device").text())
        self.__dict__.update(reply.get("attrs") or {})
        self._methods = set(reply.get("methods") or [])

    def __getattr__(self, name: str):
        if name.startswith("_") or name not in self._methods:
            raise AttributeError(name)
        return lambda *args: self._call(name, args)

    def _call(self, name: str, args: tuple):
        sent = [{"$handle": a._ref} if isinstance(a, Handle) else a for a in args]
        reply = self._referee._ask(op="call", method=name, args=sent)
        if "error" in reply:
            kind, text = reply["error"]
            raise {"ValueError": ValueError, "MemoryError": MemoryError, "TypeError": TypeError}.get(kind, RuntimeError)(text)
        result = reply.get("result")
        return Handle(result["$handle"], result.get("attrs") or {}) if isinstance(result, dict) and "$handle" in result \
            else result

    def _observed(self) -> None:
        return None  # the grader fills this in from its own device

    def close(self) -> None:
        self._session.__exit__(None, None, None)


def for_task(task):
    """The referee of this kernel: the grader when it listens, else a local one."""
    path = os.environ.get(SOCKET_ENV)
    return RemoteReferee(path) if path else LocalReferee(task)


def take_reference(task, case: Any, answer: Any) -> Any:
    """``task.reference(case, answer)`` as plain data; ``None`` when the task has none or it failed."""
    if task.reference is None or answer is None:
        return None
    try:
        return json.loads(json.dumps(task.reference(case, answer), allow_nan=True))
    except Exception as exc:  # a reference that cannot run here: say why in the verdict
        return {"error": f"{type(exc).__name__}: {exc}"[:300]}


SPREAD = 1.5  # reference figures this far apart (fastest / slowest): the machine slowed the reference
AGAIN = 2  # a case whose miss the load explains (a failing ``Part.busy``) is measured again at most this often
RETAKES = 2  # a reference that fell by SPREAD since the last one taken for its case is taken again at most this often
_LAST_REFERENCE: dict = {}  # key (JSON) -> the figures of the last reference taken for it in this process


def retaken(key: Any, take, figures, best) -> Any:
    """The one rule of a slowed reference: ``take()``, and where one of its ``figures(result)`` (speeds: higher is
    faster) fell by :data:`SPREAD` or more against the last reference taken for ``key`` (JSON data: the task and its
    case; the reference measures the same thing every time, so the machine slowed it), take it again, at most
    :data:`RETAKES` times, keeping ``best(result, again)`` (load only ever slows a measurement down)."""
    key = json.dumps(key, sort_keys=True)
    result = take()
    for _ in range(RETAKES):
        last = _LAST_REFERENCE.get(key)
        if last is None or not any(now * SPREAD <= then for now, then in zip(figures(result), last)):
            break
        result = best(result, take())
    _LAST_REFERENCE[key] = list(figures(result))
    return result


def better(task, case: Any, answer: dict, best: tuple | None) -> tuple:
    """The one rule of measuring again: ``(score, busy, answer)`` of this attempt at ``case`` (its share of the
    points; ``busy``: a failing part is a miss the machine's load explains, so the case is measured again, at most
    :data:`AGAIN` times) or ``best``, the best earlier attempt, where that scored more (load only ever hides a
    measurement's worth, so the best attempt is the truest)."""
    from .core import fraction
    from .expected import want
    try:
        parts = task.score(case, answer, want(task.id, case))
        parts = parts if isinstance(parts, list) else [parts]
        judged = (fraction(parts), any(p.busy and not p.ok for p in parts), answer)
    except Exception:  # no reference here, or an answer of an unexpected shape: scored once, as it is
        judged = (0.0, False, answer)
    return best if best is not None and best[0] >= judged[0] else judged


# ---------------------------------------------------------------- scoring helpers (pure)
def rounds(answer: Any) -> list:
    """The learner's answer of every round."""
    return answer.get("rounds") or [] if isinstance(answer, dict) else []


def _unseen() -> dict:
    """What the referee saw of a case before its rounds: nothing yet."""
    return {"walls": [], "reference": [], "spans": []}


def observed(answer: Any) -> dict:
    """What the referee saw: ``walls`` (seconds of each round), ``reference`` (one per round) and ``spans`` (per
    round, the spans timed on the course's clock: ``[seconds per call, label]``)."""
    seen = answer.get("observed") if isinstance(answer, dict) else None
    return seen if isinstance(seen, dict) else _unseen()


def timed(answer: Any, round_index: int) -> dict[str, list[float]]:
    """The spans of a round by label (per call, in the order timed): what the course's clock saw that round."""
    rows = observed(answer).get("spans") or []
    found: dict[str, list[float]] = {}
    for row in rows[round_index] if round_index < len(rows) and isinstance(rows[round_index], list) else []:
        if isinstance(row, list) and len(row) == 2 and isinstance(row[0], (int, float)) and isinstance(row[1], str):
            found.setdefault(row[1], []).append(float(row[0]))
    return found


CLOCK_SLACK = 0.97  # a time per call this share of the shortest call the clock saw is the same (float rounding)


def off_clock(answer: Any, claims) -> Unmeasured | None:
    """The one rule of the course's clock: why a round's figure was not measured on it, or None.

    ``claims(round_answer)`` -> ``[(seconds per call, label), ...]``, ``(seconds per unit, label, "units")`` or
    ``(seconds, label, factors)``: the time per call each of the round's figures says (or per unit of work, where a
    call does a whole number of units the figure does not say: reads of a working set; or that time times one of
    ``factors``, the slips of units a task names by their own parts), and which spans it times. Label ``"time_fn"``:
    the figure came from ``time_fn`` (whose samples carry ``time_fn:<k>``), so it must be one of its summaries
    (median, mean, min, p10, p90) of one call of it that round (a whole number of units of it); another label (a call the course counted,
    timed by the learner's own code around it): at least the shortest such call (the learner's clock runs around the
    course's span, so an honest time is never shorter). A figure from a replaced clock, or computed rather than
    timed, is neither.
    """
    from ..harness import summary_times
    for k, mine in enumerate(rounds(answer)):
        try:
            wanted = [(float(claim[0]), str(claim[1]), claim[2] if len(claim) > 2 else (1.0,))
                      for claim in claims(mine)]
        except (TypeError, ValueError, KeyError, ZeroDivisionError, AttributeError, IndexError):
            continue  # an answer of the wrong shape is the task's own part to judge
        spans = timed(answer, k)
        for seconds, label, factors in wanted:
            if label == "time_fn":
                summaries = [t for name, samples in spans.items() if name.startswith("time_fn:")
                             for t in summary_times(samples)]
                if not any(_whole(t / seconds) if factors == "units" else
                           any(math.isclose(seconds * float(f), t, rel_tol=1e-6) for f in factors)
                           for t in summaries if seconds > 0):
                    near = [t for t in summaries if t > 0 and seconds > 0]
                    return _off("off", seconds, min(near, key=lambda t: abs(math.log(t / seconds)), default=None))
            elif seconds < CLOCK_SLACK * min(spans.get(label) or [math.inf]):
                return _off("below", seconds, min(spans[label]) if spans.get(label) else None)
    return None


def _whole(count: float) -> bool:
    return count >= 0.999999 and abs(count - round(count)) <= 1e-6 * count


def _off(kind: str, claimed: float, seen: float | None) -> Unmeasured:
    why = Unmeasured("off clock")
    why.claimed, why.spent, why.clock = claimed, seen, kind if seen is not None else "no"
    return why


class Unmeasured(str):
    """Why rounds were not measured: "no rounds", "not observed", "<claimed> s claimed, <spent> s spent" or "off
    clock" (:func:`off_clock`); :meth:`message` says it in both languages."""

    claimed: float | None = None
    spent: float | None = None
    clock: str = ""  # off_clock's finding: "off" (none of time_fn's times), "below" (shorter than any call), "no"

    def message(self) -> Message:
        if self.clock:
            return msg(f"measure.why_{self.clock}_clock", claimed=f"{self.claimed:.4g}", seen=f"{self.spent or 0:.4g}")
        if self.claimed is None:
            return msg("measure.why_" + self.replace(" ", "_"))
        return msg("measure.why_claimed", claimed=f"{self.claimed:.4g}", spent=f"{self.spent:.4g}")


def _claimed(claimed: float, spent: float) -> Unmeasured:
    why = Unmeasured(f"{claimed:.4g} s claimed, {spent:.4g} s spent")
    why.claimed, why.spent = claimed, spent
    return why


def unmeasured(answer: Any, claimed_seconds) -> Unmeasured | None:
    """Why the rounds were not measured while the referee watched, or None.

    ``claimed_seconds(round_answer)``: the least time the round's result says was spent
    (one operation at the reported speed). A round that ended sooner did not measure.
    """
    learner, seen = rounds(answer), observed(answer)
    walls = seen.get("walls") or []
    if not learner:
        return Unmeasured("no rounds")
    if len(walls) < len(learner):
        return Unmeasured("not observed")
    for mine, wall in zip(learner, walls):
        try:
            claimed = float(claimed_seconds(mine))
        except (TypeError, ValueError, KeyError, ZeroDivisionError, AttributeError):
            continue  # an answer of the wrong shape is the task's own part to judge
        if claimed > 1.05 * float(wall) + 0.002:
            return _claimed(claimed, float(wall))
    return None


def ratios(answer: Any, mine, theirs) -> list[tuple[float, float, float]]:
    """Each round's (ratio ``mine(round)/theirs(reference)``, value, reference), smallest ratio first.

    The references sit between the rounds, so each round after the first is compared with
    the geometric mean of the reference just before it and the one just after it: a burst
    of load during a round then meets the same burst on at least one side. A round without
    both numbers has no row.
    """
    refs = [_positive(theirs, r) for r in observed(answer).get("reference") or []]
    rows = []
    for k, learner in enumerate(rounds(answer)):
        a = _positive(mine, learner)
        around = [b for b in refs[max(k - 1, 0):k + 1] if b is not None] if k < len(refs) else []
        if a is None or not around:
            continue
        b = math.prod(around) ** (1 / len(around))
        rows.append((a / b, a, b))
    return sorted(rows)


def median_ratio(answer: Any, mine, theirs) -> tuple[float, float, float] | None:
    """The median row of :func:`ratios` (the lower middle one of an even count: of two rounds, the lower), or None
    when no round has both numbers. :func:`which_round` says which it was."""
    rows = ratios(answer, mine, theirs)
    return rows[(len(rows) - 1) // 2] if rows else None


def spread(answer: Any, theirs) -> float | None:
    """How far apart the reference's own rounds are: its fastest figure over its slowest (``theirs(reference)``), or
    None with fewer than two. The reference measures the same thing every round, so a spread is the machine's load."""
    refs = [b for b in (_positive(theirs, r) for r in observed(answer).get("reference") or []) if b is not None]
    return max(refs) / min(refs) if len(refs) >= 2 else None


def busy(answer: Any, theirs) -> float | None:
    """The :func:`spread` of the reference's own rounds where it is :data:`SPREAD` or more, else None: then the machine
    was busy and slowed the reference, and a verdict outside the band says so and names no mistake."""
    found = spread(answer, theirs)
    return found if found is not None and found >= SPREAD else None


def which_round(count: int) -> Message:
    """Which of ``count`` rounds :func:`median_ratio` picked, in words."""
    if count == 1:
        return msg("measure.which_one")
    if count == 2:
        return msg("measure.which_lower")
    return msg("measure.which_median" if count % 2 else "measure.which_lower_middle", count=count)


def _positive(pick, data) -> float | None:
    try:
        value = float(pick(data))
    except (TypeError, ValueError, KeyError, AttributeError):
        return None
    return value if value > 0 and math.isfinite(value) else None


def reference_error(answer: Any) -> str | None:
    """The reason a reference measurement failed, if one did."""
    for ref in observed(answer).get("reference") or []:
        if isinstance(ref, dict) and ref.get("error"):
            return str(ref["error"])
    return None
