"""Exercises that make a learner think: at least half of each exercise's tasks transfer the lesson's idea to a case
the lesson did not show, each exercise climbs from a marked warm-up to a marked stretch task, and no reference
answer can be copied from one lesson cell or one lesson helper (``python -m autograder instructor tasks`` prints
the table these tests read)."""
import re

import nbformat
import pytest

from autograder.checks.core import KINDS, LEVELS
from autograder.grading import design
from autograder.grading.course import REPO

ROWS = design.course(REPO)
MODULES = sorted({r.module for r in ROWS})
COPIED, MOSTLY_COPIED, AT_MOST_MOSTLY_COPIED = 0.85, 0.60, 3


@pytest.mark.parametrize("module", MODULES)
def test_at_least_half_of_an_exercise_is_transfer(module):
    rows = [r for r in ROWS if r.module == module]
    assert all(r.kind in KINDS and r.level in LEVELS for r in rows)
    transfer = [r.task_id for r in rows if r.kind == "transfer"]
    assert 2 * len(transfer) >= len(rows), f"{module}: {len(transfer)} of {len(rows)} tasks are transfer"


def headings(module: str) -> dict[str, str]:
    """Each graded task's heading (the last '## ' line above its check cell)."""
    out, last = {}, ""
    for path in sorted((REPO / "solutions" / module).glob("*.ipynb")):
        for cell in nbformat.read(str(path), as_version=4).cells:
            if cell.cell_type == "markdown":
                last = "\n".join(line for line in cell.source.splitlines() if line.startswith("## ")) or last
            elif cell.metadata.get("nbgrader", {}).get("grade"):
                match = design.CHECK_CALL.search(cell.source)
                if match:
                    out[match.group(1)] = last
    return out


@pytest.mark.parametrize("module", MODULES)
def test_an_exercise_climbs_from_a_warm_up_to_a_stretch_task(module):
    rows = [r for r in ROWS if r.module == module]
    assert rows[0].level == "warm-up", f"{module}: the first task is the warm-up"
    assert any(r.level == "stretch" for r in rows), f"{module}: no stretch task"
    marks = {"warm-up": ("워밍업", "warm-up"), "stretch": ("도전", "stretch")}
    titled = headings(module)
    for r in rows:
        for level, words in marks.items():
            marked = all(re.search(rf"\b{w}\b" if w.isascii() else w, titled[r.task_id], re.I) for w in words)
            assert marked == (r.level == level), \
                f"{r.task_id}: its heading says {level} in both languages exactly when it is one: {titled[r.task_id]!r}"


def test_no_answer_is_one_lesson_cell_away():
    copied = [f"{r.task_id}: {r.lesson_share:.0%} of cell {r.lesson_cell}" for r in ROWS if r.lesson_share >= COPIED]
    assert not copied, "answers that are one lesson cell:\n" + "\n".join(copied)
    mostly = [f"{r.task_id}: {r.lesson_share:.0%} of cell {r.lesson_cell}" for r in ROWS if r.lesson_share >= MOSTLY_COPIED]
    assert len(mostly) <= AT_MOST_MOSTLY_COPIED, "too many answers mostly in one lesson cell:\n" + "\n".join(mostly)


def test_no_answer_is_one_lesson_helper_away():
    """A learner can read (or call) the module's helpers: they must not hold an answer either. A measurement task's
    reference measurement is the referee's, by design, and is left out."""
    rows = [r for r in ROWS if not r.measurement]
    copied = [f"{r.task_id}: {r.helper_share:.0%} of {r.helper}" for r in rows if r.helper_share >= COPIED]
    assert not copied, "answers that are one helper function:\n" + "\n".join(copied)
    mostly = [f"{r.task_id}: {r.helper_share:.0%} of {r.helper}" for r in rows if r.helper_share >= MOSTLY_COPIED]
    assert len(mostly) <= AT_MOST_MOSTLY_COPIED, "too many answers mostly in one helper:\n" + "\n".join(mostly)
