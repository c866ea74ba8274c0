"""Demo exercise (m00): three tiny tasks, no timing, for the grading pipeline's tests.

``score`` imports the reference answers lazily: the grading sandbox hides
``autograder.answers``, so a checks module must import without them.
"""
from __future__ import annotations

import math

from ..i18n import Message, msg
from . import referee
from .core import Part, Task


def _close(found, expected) -> bool:
    return isinstance(found, (int, float)) and not isinstance(found, bool) and math.isclose(found, expected, rel_tol=1e-9, abs_tol=1e-12)


def _score_add(case, answer) -> Part:
    from ..answers import m00
    expected = m00.add(*case)
    return Part(_close(answer, expected), msg("check.expected_found", what=f"add{tuple(case)}", expected=expected, found=answer))


def _score_stats(case, answer) -> list[Part]:
    from ..answers import m00
    expected = m00.stats(case)
    answer = answer if isinstance(answer, dict) else {}
    return [Part(_close(answer.get(key), value), msg("check.expected_found", what=f"stats({case})['{key}']",
                                                       expected=value, found=answer.get(key)))
            for key, value in expected.items()]


def _score_count(case, answer) -> Part:
    """A measurement task without timing: every round must count right, and the grader must have seen it."""
    from ..answers import m00
    expected = m00.count_positive(case)
    found = referee.rounds(answer)
    seen = len(referee.observed(answer).get("walls") or []) >= len(found) > 0
    ok = seen and all(r == expected and isinstance(r, int) for r in found)
    return Part(ok, msg("check.expected_found", what=f"count_positive({case})", expected=expected,
                        found=found[0] if found and seen else None))


def _lists(rng, n: int) -> list[list[float]]:
    return [[rng.randint(-50, 50) for _ in range(rng.randint(1, 6))] for _ in range(n)]


TASKS = {
    "add": Task(
        title=Message("두 수 더하기", "Adding two numbers"),
        answer=lambda fn, case: fn(*case),
        score=_score_add,
        visible=lambda: [[1, 2], [0.5, 0.25]],
        hidden=lambda rng: [[rng.randint(-99, 99), rng.randint(-99, 99)] for _ in range(6)],
    ),
    "stats": Task(
        title=Message("평균과 최댓값", "Mean and maximum"),
        answer=lambda fn, case: fn(list(case)),
        score=_score_stats,
        visible=lambda: [[1, 2, 3]],
        hidden=lambda rng: _lists(rng, 3),
    ),
    "count": Task(
        title=Message("양수 세기", "Counting positive numbers"),
        answer=lambda fn, case: fn(list(case)),
        score=_score_count,
        visible=lambda: [[1, -1, 2]],
        hidden=lambda rng: _lists(rng, 3),
        measurement=True,  # no timing here: the tests exercise the referee and the device lock with it
        rounds=2,
    ),
}
