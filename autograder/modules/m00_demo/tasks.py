"""Tasks of the demo module (m00): three tiny tasks, no timing, for the grading pipeline's tests."""
from __future__ import annotations

from ...checks import referee
from ...checks.core import Part, Task, close
from ...i18n import Message, msg


def _score_add(case, answer, want) -> Part:
    return Part(close(answer, want, rel=1e-9, abs_tol=1e-12),
                msg("check.expected_found", what=f"add{tuple(case)}", expected=want, found=answer))


def _score_stats(case, answer, want) -> list[Part]:
    answer = answer if isinstance(answer, dict) else {}
    return [Part(close(answer.get(key), value, rel=1e-9, abs_tol=1e-12),
                 msg("check.expected_found", what=f"stats({case})['{key}']", expected=value, found=answer.get(key)))
            for key, value in want.items()]


def _score_count(case, answer, want) -> Part:
    """A measurement task without timing: every round must count right, and the grader must have seen it."""
    found = referee.rounds(answer)
    seen = len(referee.observed(answer).get("walls") or []) >= len(found) > 0
    ok = seen and all(r == want and isinstance(r, int) for r in found)
    return Part(ok, msg("check.expected_found", what=f"count_positive({case})", expected=want,
                        found=found[0] if found and seen else None))


TASKS = {
    "add": Task(
        title=Message("두 수 더하기", "Adding two numbers"),
        answer=lambda fn, case: fn(*case),
        score=_score_add,
        visible=lambda: [[1, 2], [0.5, 0.25]],
    ),
    "stats": Task(
        title=Message("평균과 최댓값", "Mean and maximum"),
        answer=lambda fn, case: fn(list(case)),
        score=_score_stats,
        visible=lambda: [[1, 2, 3]],
    ),
    "count": Task(
        title=Message("양수 세기", "Counting positive numbers"),
        answer=lambda fn, case: fn(list(case)),
        score=_score_count,
        visible=lambda: [[1, -1, 2]],
        measurement=True,  # no timing here: the tests exercise the referee and the device lock with it
        rounds=2,
    ),
}
