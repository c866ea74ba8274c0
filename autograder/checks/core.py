"""The machinery behind every graded test cell.

A test cell is one call, ``check("m01.picker", pick_device, points=2)``. The
task it names (a :class:`Task` in ``autograder/modules/m01_*/tasks.py``) says which
visible inputs to try, how to call the learner's code on one of them (``answer``:
runs in the learner's kernel and returns plain JSON data) and how to score an
answer against the expected one (``score(case, answer, want)``: pure). Hidden
cases and expected answers come from the instructor's references
(:mod:`autograder.checks.expected`).

Because answers are plain data, scoring can be repeated outside the learner's
kernel: with ``COURSE_RECORD_ANSWERS=1`` every check also displays its answers
as a record (MIME type :data:`RECORD_MIME`) that the grading pipeline re-scores
in a process the learner's code never touched.
"""
from __future__ import annotations

import json
import math
import numbers
import os
import random
import sys
import textwrap
from dataclasses import dataclass, field
from typing import Any, Callable

from ..i18n import Message, get_language, msg

RECORD_MIME = "application/vnd.aihw.answers+json"


class CheckFailed(AssertionError):
    """A check found nothing right; the message says what was expected and found."""

    def _render_traceback_(self) -> list[str]:
        """IPython shows the verdict alone, not a stack trace through the course's code."""
        return [str(self)]


@dataclass(frozen=True)
class Part:
    """One scored item of a task: a case, or a named part of one."""

    ok: bool
    message: Message
    weight: float = 1.0
    measured: bool = False  # a measurement against its band: the verdict shows it even when it passed
    mistake: str | None = None  # a failing part that recognised a known mistake: its name (one of Task.mistakes)
    label: Message | None = None  # a short name ("H100 → ridge"): a partial verdict lists the parts that are right
    keeps: float = 1.0  # a failing part: the most of the task's points the answer may keep (see :func:`fraction`)
    busy: bool = False  # a miss the machine's load explains (``expectations.load_explains``): measured again


CENTRAL = 1 / 3  # the most of a task's points an answer that breaks the task's rule keeps
KINDS = ("recall", "transfer")
LEVELS = ("warm-up", "core", "stretch")


@dataclass(frozen=True)
class Task:
    """A graded task: the cases to try, how to get an answer, how to score it."""

    title: Message
    answer: Callable[[Any, Any], Any]
    score: Callable[[Any, Any, Any], "Part | list[Part]"]  # (case, answer, want): want from the references
    visible: Callable[[], list] = field(default=lambda: [None])
    measurement: bool = False  # times the device: graded side by side with a reference (see referee.py)
    reference: Callable[[Any, Any], Any] | None = None  # measurement: (case, round's answer) -> reference data
    rounds: int = 1  # measurement: learner and reference take turns this many times per case
    simulated: Callable[[Any, Any], Any] | None = None  # (case, rng or None) -> the simulated device that ``answer``
    # reaches through ``referee.device``: while grading the grader holds it, draws its parameters with ``rng``, and
    # its ``_observed()`` (what it did, what it was) replaces the answer's ``observed``
    hint: Callable[[str], "Message | None"] | None = None  # error text -> a hint for a common mistake
    kind: str = "recall"  # "recall": what the lesson shows, applied as shown; "transfer": the idea where the lesson did not go
    level: str = "core"  # "warm-up", "core" or "stretch": an exercise climbs from its warm-up to a stretch task
    mistakes: tuple[str, ...] = ()  # known wrong answers the visible checks name (messages mNN.mistake.<name>)
    rule: Message | None = None  # the rule the task exists to teach (messages mNN.rule.<task>)
    central: tuple[str, ...] = ()  # the mistakes that break ``rule``: an answer making one keeps CENTRAL of the points
    given: Callable[[Any], Any] | None = None  # answer -> what the learner's code gave in it, where the answer also
    # holds what the check saw it do or was given (calls counted, shapes): compared by ``same_for_every_input``
    id: str = ""  # "mNN.name", set when the task is looked up


@dataclass(frozen=True)
class Recorded:
    """A known wrong answer given as the data a check records (``score`` gets it for visible case ``case``).

    For measurement tasks, whose real runs depend on the machine: the mistake is the recorded data it leaves.
    """

    answer: Any
    case: int = 0


def close(found: Any, want: Any, rel: float = 1e-6, abs_tol: float = 0.0) -> bool:
    """The one tolerance rule of every task: ``found`` is a real number (a bool is not) near ``want``."""
    return (isinstance(found, numbers.Real) and not isinstance(found, bool) and isinstance(want, numbers.Real)
            and math.isclose(float(found), float(want), rel_tol=rel, abs_tol=abs_tol))


def canonical(value: Any) -> Any:
    """``value`` as plain JSON data; subclasses of int/float/str lose their overrides."""
    return json.loads(json.dumps(value, allow_nan=True))


def grading_seed() -> int:
    """Seed for hidden cases: ``COURSE_GRADING_SEED`` if the grader set it, else random."""
    seed = os.environ.get("COURSE_GRADING_SEED")
    return int(seed) if seed is not None else random.SystemRandom().randrange(2**31)


def cases_for(task: Task, hidden: bool, seed: int) -> list:
    """The visible cases, then (``hidden``) the hidden ones drawn with ``seed``."""
    from .expected import hidden_cases
    cases = list(task.visible())
    if hidden:
        cases += hidden_cases(task.id, random.Random(seed))
    return canonical(cases)


def collect(task: Task, learner: Any, cases: list, task_id: str = "") -> list[dict]:
    """Run the learner's code on every case; never raises.

    A measurement task runs each case ``task.rounds`` times, taking turns with the
    referee's reference measurement; its answer is ``{"rounds": [...], "observed": ...}``.
    """
    if task.measurement:
        return _collect_rounds(task, learner, cases, task_id)
    records = []
    for case in cases:
        answer, error = _attempt(task, learner, case)
        records.append({"case": case, "answer": answer, "error": error})
    return records


def _attempt(task: Task, learner: Any, case: Any) -> tuple[Any, str | None]:
    """(answer as JSON data, None) or (None, why it failed)."""
    try:
        return canonical(task.answer(learner, case)), None
    except NotImplementedError:
        return None, "NotImplementedError"
    except (TypeError, ValueError) as exc:
        if "JSON serializable" in str(exc) or "Out of range float" in str(exc):
            return None, f"not serializable: {exc}"
        return None, f"{type(exc).__name__}: {exc}"
    except Exception as exc:  # the learner's code may raise anything
        return None, f"{type(exc).__name__}: {exc}"


def _collect_rounds(task: Task, learner: Any, cases: list, task_id: str) -> list[dict]:
    from . import referee
    judge = referee.for_task(task)
    records = []
    with judge.session(task_id):
        for i, case in enumerate(cases):
            while True:  # a case whose miss the load explains is measured again (``judge.again``)
                learner_rounds, error = [], None
                for r in range(task.rounds):
                    judge.start(i, r)
                    answer, error = _attempt(task, learner, case)
                    judge.finish(i, r, case, answer)
                    if error:
                        break
                    learner_rounds.append(answer)
                answer = None if error else {"rounds": learner_rounds, "observed": judge.observed(i)}
                if answer is None or not judge.again(i, case, answer):
                    break
            kept = judge.kept(i, answer)
            records.append({"case": case, "answer": kept, "error": None if kept is not None else error})
    return records


def score_records(task: Task, records: list[dict]) -> list[Part]:
    """Score recorded answers (pure: the grader calls this outside the learner's kernel); an answer that ignores
    its input scores nothing (:func:`same_for_every_input`)."""
    parts = _central(task, _scored(task, records))
    constant = same_for_every_input(task, records)
    if constant is None or fraction(parts) <= 0.0:
        return parts
    return [Part(False, msg("check.same_answer", answer=_cut(constant)))] + [p for p in parts if not p.ok]


def _central(task: Task, parts: list[Part]) -> list[Part]:
    """The one rule of points that follow the point: where a failing part names a mistake that breaks the task's
    rule (``task.central``), the answer keeps at most :data:`CENTRAL` of the points, and the verdict says why."""
    broken = [p for p in parts if not p.ok and p.mistake is not None and p.mistake in task.central]
    if not broken or fraction(parts) <= CENTRAL:
        return parts
    why = Part(False, msg("check.central", rule=task.rule or task.title), weight=0.0, keeps=CENTRAL)
    return [why] + parts


def same_for_every_input(task: Task, records: list[dict]) -> str | None:
    """The one rule against answers that ignore their input: the answer (JSON text) the learner's code gave when it
    gave the same one for every case that did not raise (at least two), else None. What the code gave is
    ``task.given(answer)``, else a measurement's rounds, a simulated device's answer without what the device
    observed, or the answer."""
    answered = [r for r in records if not r["error"]]
    given = [json.dumps(_given(task, r["answer"]), sort_keys=True, ensure_ascii=False, allow_nan=True)
             for r in answered]
    if len(given) < 2 or len(set(given)) != 1 or _same_expected(task, [r["case"] for r in answered]):
        return None
    return given[0]


def _same_expected(task: Task, cases: list) -> bool:
    """Whether the references expect one and the same answer for every case (then the same answer is no evidence:
    a right answer to hidden cases that happen to agree is right)."""
    from .expected import want
    try:
        wants = [json.dumps(want(task.id, case), sort_keys=True, allow_nan=True) for case in cases]
    except Exception:  # no reference here (a learner edition, a task outside the modules): the answers are the evidence
        return False
    return wants[0] != "null" and len(set(wants)) == 1


def _given(task: Task, answer: Any) -> Any:
    if task.given is not None:
        try:
            return task.given(answer)
        except Exception:  # an answer of an unexpected shape is compared whole
            return answer
    if isinstance(answer, dict) and task.measurement:
        return answer.get("rounds")
    if isinstance(answer, dict) and task.simulated:
        return {k: v for k, v in answer.items() if k != "observed"}
    return answer


def _scored(task: Task, records: list[dict]) -> list[Part]:
    """Each record scored by the task (its error's message where it raised)."""
    from .expected import want
    parts: list[Part] = []
    for record in records:
        error = record["error"]
        if error == "NotImplementedError":
            parts.append(Part(False, msg("check.not_implemented")))
        elif error and error.startswith("not serializable"):
            parts.append(Part(False, msg("check.not_serializable", found=error)))
        elif error:
            parts.append(Part(False, _raised(task, record["case"], error)))
        else:
            expected = want(task.id, record["case"])  # raises ReferenceMissing where this install lacks it
            try:
                scored = task.score(record["case"], record["answer"], expected)
            except Exception as exc:  # an answer of an unexpected shape
                scored = Part(False, msg("check.raised", case=_short(record["case"]), error=f"{type(exc).__name__}: {exc}"))
            parts.extend(scored if isinstance(scored, list) else [scored])
    return parts


def _raised(task: Task, case: Any, error: str) -> Message:
    """``check.raised`` with the task's hint for this error, if it has one."""
    text = msg("check.raised", case=_short(case), error=error)
    hint = None
    if task.hint is not None:
        try:
            hint = task.hint(error)
        except Exception:  # a hint must never hide the verdict
            hint = None
    return text + hint if hint is not None else text


def fraction(parts: list[Part]) -> float:
    """The share of the points earned: the weight of the parts that passed, at most what a failing part ``keeps``."""
    total = sum(p.weight for p in parts)
    share = sum(p.weight for p in parts if p.ok) / total if total else 0.0
    return min([share] + [p.keeps for p in parts if not p.ok])


WIDTH = 80  # nbgrader validate cuts every line of a verdict after 87 characters


def validating() -> bool:
    """True inside ``nbgrader validate`` (and the Validate button)."""
    return os.environ.get("NBGRADER_EXECUTION") == "validate" or os.environ.get("NBGRADER_VALIDATING") == "1"


def scope(task: Task, records: list[dict], parts: list[Part]) -> Message:
    """What a check checked, for its verdict: how many cases (how many of them hidden) and the parts' labels."""
    hidden = max(0, len(records) - len(canonical(list(task.visible()))))
    key = "check.scope_hidden" if hidden else "check.scope_one" if len(records) == 1 else "check.scope"
    said = msg(key, cases=len(records), hidden=hidden)
    labels = list(dict.fromkeys(p.label for p in parts if p.label is not None))
    if not labels:
        return said
    return said + msg("check.scope_parts", parts=Message(", ".join(m.ko for m in labels), ", ".join(m.en for m in labels)))


def report(title: Message, parts: list[Part], points: float, checked: Message | None = None) -> float | None:
    """Print the verdict; return partial points (:class:`Earned`), None for full marks, raise for none.

    nbgrader reads a test cell's numeric result as the points earned, gives full
    marks to a cell without one, and zero to a cell that raised. A measurement
    shows its value and band even when it passed. Under ``nbgrader validate`` a
    partial verdict is raised, because validate shows only an error's text (and
    its own English "Partial credit" line for a numeric result). A pass says what was ``checked``.
    """
    share = fraction(parts)
    notes, failed, shown, right, items = _verdict_lists(parts)
    detail = "\n".join(_items("⚠️", notes) + _items("❌", failed))
    if share >= 1.0:
        print("\n".join([_titled("check.passed", title)] + _items("🔎", [checked] if checked else [])
                        + _items("✅", shown)))
        return None
    if share <= 0.0:
        raise CheckFailed(f"{_titled('check.failed', title)}\n{detail}")
    earned = round(points * share, 2)
    text = "\n".join([_titled("check.partial", title, earned=earned, points=points, failed=len(failed),
                               items=items), detail] + _items("✅", shown + right))
    if validating():
        raise CheckFailed(text)
    print(text)
    return earned if os.environ.get("NBGRADER_EXECUTION") else Earned(earned)


def _verdict_lists(parts: list[Part]) -> tuple[list[Message], list[Message], list[Message], list[Message], int]:
    """What a verdict lists, and how many items that is: notes (⚠️: failed parts worth no points of their own, such
    as the central-mistake line; no item), the failed items (❌), the measurements that passed (✅ with their value),
    and the other items that passed (✅): only parts that earn points, by their label ("(×4)" when four distinct
    parts share it), or by their own message where the label also failed elsewhere (not a ✅ "dtype" under a ❌
    about the dtype)."""
    notes = list(dict.fromkeys(p.message for p in parts if not p.ok and not p.weight))
    failed = list(dict.fromkeys(p.message for p in parts if not p.ok and p.weight))
    shown = list(dict.fromkeys(p.message for p in parts if p.ok and p.measured))
    wrong = {p.label for p in parts if not p.ok and p.label is not None}
    groups: dict[Message, set] = {}
    for p in parts:
        if p.ok and p.weight and not p.measured and p.message not in shown:
            groups.setdefault(p.message if p.label is None or p.label in wrong else p.label, set()).add(p.message)
    right = [key if len(seen) == 1 else Message(f"{key.ko} (×{len(seen)})", f"{key.en} (×{len(seen)})")
             for key, seen in groups.items()]
    return notes, failed, shown, right, len(failed) + len(shown) + sum(len(seen) for seen in groups.values())


class Earned(float):
    """Partial points as a check returns them in a learner's notebook: a number, shown by the verdict above it and
    not again as the cell's ``Out``. (While nbgrader grades, a check returns a plain float: nbgrader reads the
    cell's result as the points earned.)"""

    def _ipython_display_(self) -> None:
        pass


def _items(mark: str, messages: list[Message], limit: int = 8) -> list[str]:
    """One item per message, every line wrapped to :data:`WIDTH` characters."""
    lines = []
    for m in messages[:limit]:
        wrapped = [textwrap.fill(line, WIDTH, initial_indent="     ", subsequent_indent="     ",
                                 break_long_words=False, break_on_hyphens=False)
                   for line in m.text().splitlines() if line.strip()]
        text = "\n".join(wrapped)
        lines.append(f"  {mark} " + text[5:])
    return lines + (["  …"] if len(messages) > limit else [])


def _titled(key: str, title: Message, **values) -> str:
    """Message ``key`` with the task title, one line per language shown, wrapped to :data:`WIDTH`."""
    lang = get_language()
    return "\n".join(textwrap.fill(msg(key, title=getattr(title, code), **values).text(code), WIDTH,
                                   subsequent_indent="   ", break_long_words=False, break_on_hyphens=False)
                     for code in ("ko", "en") if lang in (code, "both"))


def _short(case: Any, limit: int = 120) -> str:
    return _cut(json.dumps(case, ensure_ascii=False), limit)


def _cut(text: str, limit: int = 120) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def recording() -> bool:
    """True when the grading pipeline asked checks to record their answers."""
    return os.environ.get("COURSE_RECORD_ANSWERS") == "1"


def emit(task_id: str, points: float, hidden: bool, seed: int, records: list[dict]) -> None:
    """Display the answers as a record for the grader (only when it asked for them)."""
    if not recording():
        return
    payload = {"task": task_id, "points": points, "hidden": hidden, "seed": seed, "records": records}
    try:
        from IPython import get_ipython
        from IPython.display import display
    except ImportError:
        get_ipython = lambda: None  # noqa: E731
    if get_ipython() is None:  # outside a kernel: one JSON line on stdout (never stderr)
        sys.stdout.write(json.dumps(payload) + "\n")
    else:
        # As JSON text: a NaN or infinity in a dict would be rewritten by jupyter_client with a
        # warning on stderr, and nbgrader zeroes a test cell that writes to stderr.
        display({RECORD_MIME: json.dumps(payload, allow_nan=True), "text/plain": f"<answers for {task_id}>"}, raw=True)
