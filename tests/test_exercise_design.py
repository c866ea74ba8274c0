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


def task_texts(module: str) -> dict[str, str]:
    """Each graded task's text: the markdown cells since the previous check cell."""
    out, text = {}, []
    for path in sorted((REPO / "solutions" / module).glob("*.ipynb")):
        for cell in nbformat.read(str(path), as_version=4).cells:
            if cell.cell_type == "markdown":
                text.append(cell.source)
            elif cell.metadata.get("nbgrader", {}).get("grade"):
                match = design.CHECK_CALL.search(cell.source)
                if match:
                    out[match.group(1)], text = "\n".join(text), []
    return out


BANDS = {"m01.speedup": "step", "m02.measure": "matmul", "m03.sweep": "sweep", "m05.measure": "allreduce",
         "m06.mfu": "step", "m07.copy": "bandwidth"}  # the side_by_side kind each measurement task is scored with


@pytest.mark.parametrize("task_id", sorted(BANDS))
def test_a_measurement_task_states_the_band_and_rounds_its_check_uses(task_id):
    """The text gives the band of expectations.yaml (as lo–hi, in both languages) and says which round counts as the
    check's verdict does (referee.which_round), so the two cannot drift apart."""
    from autograder.checks import referee, task
    from autograder.expectations import rules
    rule = rules()["side_by_side"][BANDS[task_id]]
    text = task_texts(f"{task_id[1:3]}_" + next(p.name[3:] for p in (REPO / "solutions").iterdir()
                                                if p.name.startswith(task_id[1:3])))[task_id]
    band = f"{rule['lo']:g}–{rule['hi']:g}"
    assert text.count(band) >= 2, f"{task_id}: the text should give the band {band} in both languages"
    rounds = task(task_id).rounds
    which = referee.which_round(rounds)
    assert which.ko in text and which.en in text, f"{task_id}: say which of the {rounds} rounds counts: {which.en!r}"
