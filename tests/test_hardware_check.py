"""``instructor check-hardware``: full marks for a correct reference; the task and the grader's reason
when a reference loses points. Uses the demo exercise (no timing), not the course's six exercises."""
import json

import nbformat
import pytest

from autograder import cli
from autograder.grading import sandbox
from autograder.grading.hardware_check import Run, TaskResult, measurements_only, report, scratch_course

from fixtures.grading_course import HERE


@pytest.fixture(scope="module")
def solutions(tmp_path_factory):
    """A course folder with two copies of the demo exercise; in ``01_wrong`` the reference's
    ``stats`` always says the mean is 0 (the rest is correct)."""
    root = tmp_path_factory.mktemp("check")
    demo = (HERE / "course" / "solutions" / "00_demo" / "demo.ipynb").read_text(encoding="utf-8")
    right = "return {'mean': sum(xs) / len(xs), 'max': max(xs)}"
    assert json.dumps(right)[1:-1] in demo
    for module, text in (("00_demo", demo), ("01_wrong", demo.replace(json.dumps(right)[1:-1], "return {'mean': 0, 'max': max(xs)}"))):
        (root / "solutions" / module).mkdir(parents=True)
        (root / "solutions" / module / "demo.ipynb").write_text(text, encoding="utf-8")
    return root


def test_check_hardware_names_the_task_and_the_reason(solutions, capsys):
    args = ["instructor", "check-hardware", "--root", str(solutions), "--runs", "1", "--workers", "1"]
    code = cli.main(args + ([] if sandbox.available() else ["--no-sandbox"]))
    out = capsys.readouterr().out
    assert code == 1, out
    demo, wrong = out.split("## 00_demo")[1].split("## 01_wrong")
    assert "✗" not in demo and "6/6" in demo, out  # the correct reference: full marks
    assert "✗ run 1: demo/stats_test (m00.stats)" in wrong, out  # the task and the grader's verdict
    assert "['mean']: expected" in wrong and "found 0" in wrong, out
    last = out.strip().splitlines()[-1]
    assert "1 tasks would lose points here: 01_wrong: demo/stats_test (m00.stats)" in last, out
    assert "demo/add_test" not in last and "00_demo" not in last, out


def test_check_hardware_refuses_an_unknown_module(solutions, capsys):
    assert cli.main(["instructor", "check-hardware", "99_nothing", "--root", str(solutions)]) == 2
    assert "99_nothing" in capsys.readouterr().out


def test_report_says_all_full_marks():
    cell = TaskResult("nb", "a_test", ("m00.add",), 2.0, 2.0, "✅ ok")
    runs = [Run("00_demo", f"reference-{i}", 2.0, 2.0, "graded", "", (cell,)) for i in (1, 2)]
    text, lost = report({"00_demo": runs})
    assert lost == 0
    assert text.splitlines()[-1].endswith("all reference solutions get full marks here.")


def test_report_shows_a_run_that_failed_without_a_cell_to_blame():
    cell = TaskResult("nb", "a_test", ("m00.add",), 2.0, 2.0, "✅ ok")
    runs = [Run("00_demo", "reference-1", 2.0, 2.0, "graded", "", (cell,)),
            Run("00_demo", "reference-2", 0.0, 2.0, "error", "kernel died", ())]
    text, lost = report({"00_demo": runs})
    assert lost == 1 and "run 2: error: kernel died" in text


def _cell(source: str, grade_id: str = "", **nbgrader):
    cell = nbformat.v4.new_code_cell(source)
    if grade_id:
        cell.metadata["nbgrader"] = {"grade": False, "solution": False, "locked": False, "task": False,
                                     "grade_id": grade_id, "schema_version": 3, **nbgrader}
    return cell


def _exercise() -> nbformat.NotebookNode:
    """A small exercise: a measurement task (m00.count) among two others, a learner's experiment between them."""
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# demo"),
                _cell("from autograder.checks import check", "setup", locked=True),
                _cell("def add(a, b):\n    return a + b", "add_solution", solution=True),
                _cell('check("m00.add", add, points=1)', "add_test", grade=True, locked=True, points=1),
                _cell("print(add(1, 2))"),
                _cell("def count_positive(xs):\n    return sum(x > 0 for x in xs)", "count_solution", solution=True),
                _cell('check("m00.count", count_positive, points=2)', "count_test", grade=True, locked=True, points=2),
                _cell("def stats(xs):\n    return {}", "stats_solution", solution=True),
                _cell('check("m00.stats", stats, points=2)', "stats_test", grade=True, locked=True, points=2)]
    return nb


def test_measurements_only_keeps_the_measurement_checks_and_what_they_need():
    kept = measurements_only(_exercise())
    ids = [c.metadata.get("nbgrader", {}).get("grade_id", c.cell_type) for c in kept.cells]
    assert ids == ["markdown", "setup", "add_solution", "count_solution", "count_test", "stats_solution"]
    assert len(_exercise().cells) == 9  # a copy: the notebook given is left as it was


def test_measurements_only_repeats_each_measurement_check_with_its_own_ids():
    kept = measurements_only(_exercise(), repeat=3)
    graded = [c for c in kept.cells if c.metadata.get("nbgrader", {}).get("grade")]
    assert [c.metadata["nbgrader"]["grade_id"] for c in graded] == ["count_test", "count_test-r2", "count_test-r3"]
    assert {c.source for c in graded} == {'check("m00.count", count_positive, points=2)'}
    ids = [c["id"] for c in kept.cells if "id" in c]
    assert len(ids) == len(set(ids))
    nbformat.validate(kept)


def test_scratch_course_with_measurements_grades_only_them(tmp_path):
    (tmp_path / "solutions" / "00_demo").mkdir(parents=True)
    nbformat.write(_exercise(), str(tmp_path / "solutions" / "00_demo" / "demo.ipynb"))
    course = scratch_course(tmp_path / "course", ["00_demo"], tmp_path / "solutions", measurements=True)
    graded = [c.metadata["nbgrader"]["grade_id"] for c in
              nbformat.read(str(course.folder("source", "00_demo", "demo.ipynb")), as_version=4).cells
              if c.metadata.get("nbgrader", {}).get("grade")]
    assert graded == ["count_test"]
    assert (tmp_path / "solutions" / "00_demo" / "demo.ipynb").read_text(encoding="utf-8").count("check(") == 3
