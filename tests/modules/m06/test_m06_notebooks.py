"""Module 06 notebooks: exercise structure, shipped data, links into the lesson."""
import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
SOURCE = ROOT / "solutions" / "06_choosing_hardware" / "exercise.ipynb"
STUDENT = ROOT / "exercises" / "06_choosing_hardware" / "exercise.ipynb"
LESSONS = [ROOT / "lessons" / "06_choosing_hardware" / f"lesson.{lang}.ipynb" for lang in ("ko", "en")]
TASKS = {"cost", "claim", "cheapest", "serve", "smi_log", "inventory", "mfu"}


def cells(path):
    return json.loads(path.read_text(encoding="utf-8"))["cells"]


def text(cell):
    return "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]


def test_sample_log_ships_with_the_exercise():
    data = (ROOT / "autograder" / "modules" / "m06_choosing_hardware" / "data" / "nvidia_smi_log.csv").read_bytes()
    assert (SOURCE.parent / "nvidia_smi_log.csv").read_bytes() == data
    assert (STUDENT.parent / "nvidia_smi_log.csv").read_bytes() == data
    assert data.decode().splitlines()[0] == ("timestamp, utilization.gpu [%], memory.used [MiB], temperature.gpu, "
                                             "power.draw [W], clocks.sm [MHz], clocks_throttle_reasons.active")


def test_exercise_tasks_points_and_hidden_tests():
    graded = [c for c in cells(SOURCE) if c["metadata"].get("nbgrader", {}).get("grade")]
    ids = [c["metadata"]["nbgrader"]["grade_id"] for c in cells(SOURCE)]
    assert len(ids) == len(set(ids))
    assert {re.search(r'check\("m06\.(\w+)"', text(c)).group(1) for c in graded} == TASKS
    for c in graded:
        points = int(re.search(r"points=(\d+)", text(c)).group(1))
        assert points == c["metadata"]["nbgrader"]["points"]
        assert "### BEGIN HIDDEN TESTS" in text(c) and "hidden=True" in text(c)
    assert sum(c["metadata"]["nbgrader"]["points"] for c in graded) == 20


def test_student_version_has_no_solutions_or_hidden_tests():
    source = "\n".join(text(c) for c in cells(STUDENT))
    assert "### BEGIN SOLUTION" not in source and "hidden=True" not in source
    assert source.count("raise NotImplementedError()") == len(TASKS)


def test_exercise_links_point_to_lesson_anchors():
    exercise = "\n".join(text(c) for c in cells(SOURCE))
    anchors = set(re.findall(r"lesson\.(?:ko|en)\.ipynb#(sec-[\w-]+)", exercise))
    assert anchors
    for lesson in LESSONS:
        body = "\n".join(text(c) for c in cells(lesson))
        assert all(f'<a id="{a}"></a>' in body for a in anchors), lesson.name


def test_lessons_use_only_sourced_prices():
    for lesson in LESSONS:
        code = "\n".join(text(c) for c in cells(lesson) if c["cell_type"] == "code")
        assert "prices.offers()" in code and not re.search(r"price\w*\s*=\s*\d", code)
