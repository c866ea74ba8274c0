"""Tasks of module 08 (serving)."""
from __future__ import annotations

from ...checks.core import Part, Task, close
from ...i18n import msg


def _score_first(case, answer, want) -> Part:
    return Part(close(answer, want), msg("check.expected_found", what=f"twice({case})", expected=want, found=answer))


TASKS = {
    "first": Task(title=msg("m08.title.first"), answer=lambda fn, case: fn(case), score=_score_first,
                  visible=lambda: [1, 2.5], kind="recall", level="warm-up", rule=msg("m08.rule.first")),
}
