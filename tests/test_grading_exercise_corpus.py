"""Attacks on the real exercises (tests/grading_corpus/exercises*.yaml), graded by the real grader.

Each case starts from an exercise's solution notebook, replaces answer cells, and keeps one graded test cell (its
``task``), so that it runs quickly; the grader grades it in its sandbox (where bubblewrap works), with the device
lock and the referee, and the case asserts what that test cell scored. Every exercise with a case is also
graded as an honest control: the unmodified solution with every test cell a case names, which must earn their
full points (a grader that gave everything 0 would pass the attacks alone). Run as root,
tests/test_grading_corpus.py grades these again as an unprivileged user.
"""
from __future__ import annotations

import shutil
from pathlib import Path

import nbformat
import pytest
import yaml
from nbgrader.api import Gradebook

from autograder import layout
from autograder.grading import export, sandbox
from autograder.grading.batch import grade_class
from autograder.grading.course import REPO, Course
from autograder.grading.generate import generate
from autograder.grading.worker import Limits

CORPUS = Path(__file__).parent / "grading_corpus"
CONTROL = "control"  # the honest submission of each exercise


def cases() -> dict[str, dict]:
    out = {}
    for path in sorted(CORPUS.glob("exercises*.yaml")):
        for name, case in (yaml.safe_load(path.read_text(encoding="utf-8")) or {}).items():
            assert name not in out and name != CONTROL, f"{path.name}: case {name} is named twice"
            out[name] = case
    return out


CASES = cases()
EXERCISES = sorted({case["exercise"] for case in CASES.values()})
ISOLATED = sandbox.available()


def _grade_cells(nb) -> dict[str, dict]:
    return {c.metadata["nbgrader"]["grade_id"]: c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id")}


def _submission(course: Course, exercise: str, student: str, cells: dict[str, str], keep: set[str]) -> None:
    """``submitted/<student>/<exercise>/``: the solution with ``cells`` replaced and only the test cells in ``keep``."""
    name = layout.exercise(exercise).name
    nb = nbformat.read(str(course.folder("source", exercise, name)), as_version=4)
    by_id = _grade_cells(nb)
    for grade_id, source in cells.items():
        assert grade_id in by_id, f"{exercise} has no cell {grade_id}"
        by_id[grade_id].source = source
    nb.cells = [c for c in nb.cells if not (c.metadata.get("nbgrader", {}).get("grade")
                                            and not c.metadata["nbgrader"].get("solution")
                                            and c.metadata["nbgrader"]["grade_id"] not in keep)]
    folder = course.folder("submitted", student, exercise)
    shutil.copytree(course.folder("source", exercise), folder, ignore=shutil.ignore_patterns("*.ipynb"))
    nbformat.write(nb, str(folder / name))


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """Every case and each exercise's control, graded exercise by exercise; (course, {student: cell scores})."""
    course = Course(tmp_path_factory.mktemp("exercise-corpus"))
    scores, reasons = {}, {}
    for exercise in EXERCISES:
        shutil.copytree(REPO / "solutions" / exercise, course.folder("source", exercise))
        generate(course, exercise)
        mine = {n: c for n, c in CASES.items() if c["exercise"] == exercise}
        for name, case in mine.items():
            _submission(course, exercise, name, case.get("cells") or {}, {case["task"]})
        _submission(course, exercise, f"{CONTROL}-{exercise[:2]}", {}, {c["task"] for c in mine.values()})
        grade_class(course, exercise, workers=2, limits=Limits(cell_s=120, notebook_s=1200), isolate=ISOLATED)
        notebook = layout.exercise(exercise).stem
        with Gradebook(course.gradebook_url, course.course_id) as gb:
            for student in [*mine, f"{CONTROL}-{exercise[:2]}"]:
                submitted = gb.find_submission_notebook(notebook, exercise, student)
                scores[student] = {g.name: (g.score, g.max_score) for g in submitted.grades}
        reasons.update({row["student_id"]: row["reason"] for row in export.rows(course, [exercise])})
    return course, scores, reasons


@pytest.mark.parametrize("name", sorted(CASES))
def test_attack_gets_its_score(graded, name):
    case = CASES[name]
    _, scores, reasons = graded
    score, most = scores[name][case["task"]]
    assert score == pytest.approx(case["score"]), (case["about"], f"{case['task']}: {score}/{most}", reasons[name])
    if "reason" in case:
        assert case["reason"] in reasons[name], reasons[name]


@pytest.mark.parametrize("exercise", EXERCISES)
def test_the_honest_control_gets_full_points(graded, exercise):
    _, scores, reasons = graded
    control = f"{CONTROL}-{exercise[:2]}"
    tasks = {c["task"] for c in CASES.values() if c["exercise"] == exercise}
    for task in tasks:
        score, most = scores[control][task]
        assert score == most, (task, f"{score}/{most}", reasons[control])
