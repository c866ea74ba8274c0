"""``instructor check-hardware``: full marks for a correct reference; the task and the grader's reason
when a reference loses points. Uses the demo exercise (no timing), not the course's six exercises."""
import json

import pytest

from autograder import cli
from autograder.grading import sandbox
from autograder.grading.hardware_check import Run, TaskResult, report

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
