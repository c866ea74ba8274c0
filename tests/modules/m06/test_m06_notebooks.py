"""Module 06 notebooks: exercise structure, shipped data, links into the lesson."""
import json
import re
from pathlib import Path

from autograder import layout

ROOT = Path(__file__).resolve().parents[3]
SOURCE = layout.exercise("06_choosing_hardware", "solutions", ROOT)
STUDENT = layout.exercise("06_choosing_hardware", "exercises", ROOT)
LESSONS = [layout.lesson("06_choosing_hardware", lang, ROOT) for lang in ("ko", "en")]
TASKS = {"cost", "claim", "serve", "deploy", "smi_log", "inventory", "mfu"}
DATA = ROOT / "autograder" / "modules" / "m06_choosing_hardware" / "data"


def cells(path):
    return json.loads(path.read_text(encoding="utf-8"))["cells"]


def text(cell):
    return "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]


def test_visible_logs_ship_with_the_exercise():
    logs = sorted(p.name for p in DATA.glob("gpu_log_*.csv"))
    assert logs == [f"gpu_log_{c}.csv" for c in "abcde"]
    for name in logs:
        data = (DATA / name).read_bytes()
        assert (SOURCE.parent / name).read_bytes() == data
        assert (STUDENT.parent / name).read_bytes() == data
    assert sorted(p.name for p in SOURCE.parent.glob("*.csv")) == logs


TITLES = {"ko": "하드웨어 고르기: 비용, 규모, 모니터링, 그리고 내 컴퓨터의 성적표",
          "en": "Choosing hardware: cost, scale, monitoring, and your machine's report card"}


def test_the_lesson_heading_is_number_dot_title():
    for lesson, lang in zip(LESSONS, ("ko", "en")):
        heading = next(c for c in cells(lesson) if c["cell_type"] == "markdown")  # after the set-up cell
        assert text(heading).splitlines()[0] == f"# 06 · {TITLES[lang]}"
    for lang in ("ko", "en"):
        assert TITLES[lang] in text(cells(SOURCE)[0])


def test_exercise_markdown_is_korean_then_english():
    for c in cells(SOURCE):
        if c["cell_type"] == "markdown":
            ko, _, en = text(c).partition("\n---\n")
            assert en and re.search(r"[\uac00-\ud7a3]", ko) and not re.search(r"[\uac00-\ud7a3]", en)


def test_the_submit_command_is_the_readmes():
    intro = text(cells(SOURCE)[0])
    assert "python3 -m autograder submit 06_choosing_hardware --student 학번" in intro
    assert "python3 -m autograder submit 06_choosing_hardware --student YOUR_ID" in intro
    assert "nbgrader submit" not in intro and "🟡" in intro


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
    code = "\n".join(text(c) for c in cells(STUDENT) if c["cell_type"] == "code")
    answers = [c for c in cells(STUDENT) if c["metadata"].get("nbgrader", {}).get("solution")]
    assert len(answers) == len(TASKS) + 1  # task 5 has two: reading the log, then summarizing it
    assert code.count("raise NotImplementedError()") == len(answers)


def bound_and_loaded(code):
    """Names a piece of code binds (assignments, arguments, definitions, imports) and names it reads."""
    import ast
    bound, loaded = set(), set()
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Name):
            (loaded if isinstance(node.ctx, ast.Load) else bound).add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
    return bound, loaded


def test_the_setup_cell_imports_what_the_answers_use():
    """A learner's answer may use what the reference answers use (csv, math, statistics, ...) without importing it."""
    import builtins
    setup, _ = bound_and_loaded(text(cells(SOURCE)[1]))
    answers = [text(c) for c in cells(SOURCE) if c["metadata"].get("nbgrader", {}).get("solution")]
    bound, loaded = bound_and_loaded("\n\n".join(answers))
    missing = loaded - bound - setup - set(dir(builtins))
    assert not missing, f"the set-up cell does not import {sorted(missing)}"
    assert {"csv", "math", "statistics", "torch"} <= setup


def test_the_smi_log_task_reads_the_logs_with_the_learners_own_reader():
    """The look cell plots the task's logs through the learner's read_smi_log; the lesson's helper reads only its
    own sample (no path), so the parsing is the learner's."""
    look = next(text(c) for c in cells(SOURCE) if c["metadata"]["nbgrader"]["grade_id"] == "m06_smi_log_look")
    assert "read_smi_log(m06.run_log(name))" in look and "m06.read_smi_log" not in look  # the package's copy: opened alone too
    order = [c["metadata"]["nbgrader"]["grade_id"] for c in cells(SOURCE)]
    assert order.index("m06_smi_log_read") < order.index("m06_smi_log_look") < order.index("m06_smi_log_solution")


def test_the_trials_wordings_are_gone():
    """Korean phrasings a learner found literal or unclear (trial 01, exercise 06) and the term 미세조정."""
    texts = [text(c) for path in [SOURCE] + LESSONS for c in cells(path)]
    for phrase in ("미세 조정", "닿아 보세요", "가지 않은 곳", "여러분이 정합니다", "초당 GPU 수", "초당 배치 / 스텝개",
                   "트랜스포머를 세는 것처럼"):
        assert not any(phrase in t for t in texts), phrase


def test_exercise_links_point_to_lesson_anchors():
    exercise = "\n".join(text(c) for c in cells(SOURCE))
    anchors = set(re.findall(r"06_choosing_hardware\.(?:ko|en)\.ipynb#(sec-[\w-]+)", exercise))
    assert anchors
    for lesson in LESSONS:
        body = "\n".join(text(c) for c in cells(lesson))
        assert all(f'<a id="{a}"></a>' in body for a in anchors), lesson.name


def test_lessons_use_only_sourced_prices():
    for lesson in LESSONS:
        code = "\n".join(text(c) for c in cells(lesson) if c["cell_type"] == "code")
        assert "prices.offers()" in code and not re.search(r"price\w*\s*=\s*\d", code)
