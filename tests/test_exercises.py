"""For every exercise in solutions/NN_topic/: the committed student version is current,
the reference solution gets full marks and the unmodified student version gets 0.

Regenerate a stale student version with ``python -m autograder instructor generate NN_topic``.
Both gradings run as the instructor's pipeline does (sandbox, records re-scored outside the
kernel), so a task that needs ``course_answers`` in the learner's kernel fails here.
"""
import json
from pathlib import Path

import nbformat
import pytest

from autograder.grading import export, sandbox
from autograder.grading.batch import grade_class
from autograder.grading.course import REPO, Course
from autograder import layout
from autograder.grading.hardware_check import add_submission, scratch_course, task_results

MODULES = [m.id for m in layout.modules(REPO, "exercise")]


def comparable(path: Path) -> dict:
    """What must match between a committed and a regenerated notebook (not outputs or volatile fields)."""
    nb = nbformat.read(str(path), as_version=4)
    metadata = {k: v for k, v in nb.metadata.items() if k not in ("widgets",)}
    return {"metadata": metadata,
            "cells": [{"type": c.cell_type, "id": c.get("id"), "source": c.source, "metadata": dict(c.metadata)}
                      for c in nb.cells]}


def files(folder: Path) -> list[str]:
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*")
                  if p.is_file() and ".ipynb_checkpoints" not in p.parts and "__pycache__" not in p.parts)


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    """A scratch course with every module's solutions; student versions generated into it."""
    return scratch_course(tmp_path_factory.mktemp("exercises"), MODULES)


@pytest.fixture(scope="module")
def grades(course):
    """``grades(module)``: the module graded once (when first asked) for two students, 'reference' (the solution)
    and 'student' (the blank version); ``-k 03_memory`` grades one module only."""
    done = {}

    def of(module: str) -> dict:
        if module not in done:
            for student in ("reference", "student"):
                add_submission(course, module, student, version=student)
            grade_class(course, module, workers=2, isolate=sandbox.available() or False)
            done[module] = {row["student_id"]: row for row in export.rows(course, [module])}
        return done[module]
    return of


@pytest.mark.parametrize("module", MODULES)
def test_committed_student_version_is_current(course, module):
    committed, fresh = REPO / "exercises" / module, course.folder("release", module)
    assert committed.is_dir(), f"exercises/{module} is missing: run python -m autograder instructor generate {module}"
    assert files(committed) == files(fresh), f"exercises/{module} is stale: run python -m autograder instructor generate {module}"
    for name in files(fresh):
        if name.endswith(".ipynb"):
            assert comparable(committed / name) == comparable(fresh / name), (
                f"exercises/{module}/{name} is stale: run python -m autograder instructor generate {module}")


def explain(course: Course, module: str, student: str, row: dict) -> str:
    """The export row and, for every test cell that did not get the expected score, the grader's verdict."""
    lines = [json.dumps(row, default=str, ensure_ascii=False)]
    full = student == "reference"
    for t in task_results(course, module, student):
        if not t.full if full else t.score > 0:
            lines.append(f"{t.notebook}/{t.cell}: {t.score:g}/{t.max_score:g}\n{t.verdict}")
    return "\n".join(lines)


@pytest.mark.parametrize("module", MODULES)
def test_reference_solution_gets_full_marks(course, grades, module):
    row = grades(module)["reference"]
    assert row["max_score"] > 0 and row["score"] == pytest.approx(row["max_score"]), \
        explain(course, module, "reference", row)


@pytest.mark.parametrize("module", MODULES)
def test_student_version_gets_zero_without_crashing(course, grades, module):
    row = grades(module)["student"]
    assert row["score"] == 0 and row["status"] in ("graded", "graded with problems"), \
        explain(course, module, "student", row)



BLOCKED = r"""
import importlib, importlib.abc, json, sys
class Hide(importlib.abc.MetaPathFinder):  # what a learner's install is like: no course_answers
    def find_spec(self, name, path, target=None):
        if name == "course_answers" or name.startswith("course_answers."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
sys.meta_path.insert(0, Hide())
from autograder import modules
from autograder.checks import task
from autograder.checks.core import cases_for, score_records
from autograder.checks.expected import want
failures = {}
for module_id, tasks in ((m, modules.tasks(m)) for m in sorted(modules.folders())):
    for name in tasks:
        try:
            t = task(f"{module_id}.{name}")
            for case in cases_for(t, False, 12345):
                want(t.id, case)
        except Exception as exc:
            failures[f"{module_id}.{name}"] = f"{type(exc).__name__}: {exc}"
print(json.dumps(failures))
"""


def test_tasks_draw_their_visible_cases_and_answers_without_the_references():
    """A learner's install has no course_answers: every task imports, draws its visible cases and finds
    their expected answers in its module's expected.json."""
    import subprocess
    import sys
    run = subprocess.run([sys.executable, "-c", BLOCKED], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    failures = json.loads(run.stdout.strip().splitlines()[-1])
    assert not failures, "tasks must work without course_answers:\n" + json.dumps(failures, indent=1)
