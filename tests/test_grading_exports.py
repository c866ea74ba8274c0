"""The export's formats (long, wide, Canvas, Moodle, Gradescope), each against a sample of its system's format
(tests/fixtures/lms/, with sources), and the class's time zone (issue 28, items 5 and 6)."""
import csv
import json
import re
import warnings
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from nbformat.v4 import new_notebook

from autograder.grading import export
from autograder.grading.course import Course, GradingError
from autograder.grading.deadlines import parse_time, show

SAMPLES = Path(__file__).parent / "fixtures" / "lms"
SEOUL = ZoneInfo("Asia/Seoul")


def _row(assignment, student, first, last, status, raw, penalty, tasks, submitted="", late_s=0.0, reasons=()):
    row = {"assignment": assignment, "student_id": student, "first_name": first, "last_name": last,
           "email": f"{student}@example.org", "raw_score": raw, "late_penalty": penalty,
           "score": max(0.0, raw - penalty), "max_score": 6.0, "due": "2026-12-01T23:59:00+09:00",
           "submitted_at": submitted, "late_by": "", "status": status, "graded_on": "", "isolated": True,
           "_tasks": list(tasks), "_max": {"task:add_test": 2.0, "task:count_test": 4.0}, "_late_s": late_s}
    return export._with_reason({**row, **tasks}, list(reasons))


def _table():
    """Two assignments; kim01 late on 00_demo (penalty 1), lee02 missing, park03 waiting for a manual grade."""
    from autograder.i18n import msg
    late = msg("grading.late_note", late="1 h", penalty="1")
    tasks = {"task:add_test": 2.0, "task:count_test": 4.0}
    return [
        _row("00_demo", "kim01", "민준", "김", "late", 6.0, 1.0, tasks, "2026-12-02T00:30:00+09:00", 1860.0, [late]),
        _row("00_demo", "lee02", "=cmd|'/C calc'!A0", "이", "missing", 0.0, 0.0, {}, reasons=[msg("grading.status_missing")]),
        _row("00_demo", "park03", "", "", "needs manual grading", 2.0, 0.0, {"task:add_test": 2.0, "task:count_test": 0.0},
             "2026-12-01T20:00:00+09:00", 0.0, [msg("grading.needs_manual")]),
        _row("01_more", "kim01", "민준", "김", "graded", 3.0, 0.0, {"task:add_test": 1.0, "task:count_test": 2.0},
             "2026-12-05T10:00:00+09:00"),
    ]


def _written(tmp_path, monkeypatch, fmt, table=None, assignments=None):
    table = table or _table()
    monkeypatch.setattr(export, "rows", lambda course, wanted=None: [r for r in table if not wanted
                                                                      or r["assignment"] in wanted])
    path = tmp_path / f"{fmt}.csv"
    count = export.write(None, path, assignments, fmt=fmt)
    with open(path, encoding="utf-8", newline="") as handle:
        return count, list(csv.reader(handle))


def _sample(name):
    with open(SAMPLES / name, encoding="utf-8", newline="") as handle:
        return list(csv.reader(handle))


def test_every_sample_names_its_source():
    readme = (SAMPLES / "README.md").read_text(encoding="utf-8")
    for sample in SAMPLES.glob("*.csv"):
        line = next(x for x in readme.splitlines() if f"`{sample.name}`" in x)
        assert "https://" in line, sample.name


def test_canvas_export_is_the_gradebook_import_format_of_the_sample(tmp_path, monkeypatch):
    sample = _sample("canvas_gradebook_import.csv")
    count, out = _written(tmp_path, monkeypatch, "canvas")
    assert out[0][:5] == sample[0][:5] and out[0][5:] == ["00_demo", "01_more"]
    assert out[1][0] == sample[1][0] and out[1][1:5] == sample[1][1:5] == ["", "", "", ""]
    assert [float(x) for x in out[1][5:]] == [6.0, 6.0]
    students = {line[2]: line for line in out[2:]}
    assert count == 3 and set(students) == {"kim01", "lee02", "park03"}
    kim = students["kim01"]
    assert kim[0] == "김, 민준" and re.fullmatch(r"[^,]+, [^,]+", sample[2][0])  # Last, First as the sample
    assert kim[3] == "kim01" and float(kim[5]) == 5.0 and float(kim[6]) == 3.0  # net score after the penalty
    assert students["lee02"][5] == "0.0" and students["lee02"][6] == ""  # missing: 0; no such assignment: empty
    assert students["park03"][5] == "" and students["park03"][0] == "park03"  # pending: left as Canvas has it


def test_moodle_export_is_the_grade_import_format_of_the_sample(tmp_path, monkeypatch):
    sample = _sample("moodle_grade_import.csv")
    item = re.compile(r"(.+): (.+) \((Real|Feedback)\)")
    identity = [c for c in sample[0] if not item.fullmatch(c)]
    count, out = _written(tmp_path, monkeypatch, "moodle")
    assert out[0][:len(identity)] == identity and all(item.fullmatch(c) for c in out[0][len(identity):])
    kinds = [item.fullmatch(c).group(3) for c in out[0][len(identity):]]
    assert kinds == [item.fullmatch(c).group(3) for c in sample[0][len(identity):]] * 2  # grade, then its feedback
    rows = {line[identity.index("ID number")]: dict(zip(out[0], line)) for line in out[1:]}
    assert count == 3 and rows["kim01"]["Email address"] == "kim01@example.org"
    kim = rows["kim01"]
    assert float(kim["Assignment: 00_demo (Real)"]) == 5.0
    assert kim["Assignment: 00_demo (Feedback)"] == "마감보다 1 h 늦음: 감점 1점 / 1 h late: penalty 1 points"
    assert rows["park03"]["Assignment: 00_demo (Real)"] == ""
    assert rows["lee02"]["First name"] == "'=cmd|'/C calc'!A0"  # no formula runs


def test_gradescope_export_is_the_grades_csv_of_the_sample(tmp_path, monkeypatch):
    sample = _sample("gradescope_grades.csv")
    question = re.compile(r"\d+: .+ \(\d+\.\d+ pts\)")
    fixed = [c for c in sample[0] if not question.fullmatch(c)]
    count, out = _written(tmp_path, monkeypatch, "gradescope", assignments=["00_demo"])
    assert out[0][:len(fixed)] == fixed and out[0][len(fixed):] == ["1: add_test (2.0 pts)", "2: count_test (4.0 pts)"]
    assert all(question.fullmatch(c) for c in sample[0][len(fixed):])
    rows = {r["SID"]: r for r in (dict(zip(out[0], line)) for line in out[1:])}
    sample_rows = [dict(zip(sample[0], line)) for line in sample[1:]]
    assert count == 3 and {r["Status"] for r in rows.values()} <= {r["Status"] for r in sample_rows} | {"Ungraded"}
    kim, lee, park = rows["kim01"], rows["lee02"], rows["park03"]
    time_form = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d [+-]\d{4}")
    assert time_form.fullmatch(sample_rows[0]["Submission Time"]) and time_form.fullmatch(kim["Submission Time"])
    assert kim["Submission Time"] == "2026-12-02 00:30:00 +0900" and kim["Lateness (H:M:S)"] == "00:31:00"
    assert float(kim["Total Score"]) == 5.0 and float(kim["1: add_test (2.0 pts)"]) == 2.0 and kim["Status"] == "Graded"
    missing = next(r for r in sample_rows if r["Status"] == "Missing")
    assert lee["Status"] == "Missing" and lee["Total Score"] == missing["Total Score"] == ""
    assert lee["Submission Count"] == missing["Submission Count"] == "0"
    assert park["Status"] == "Ungraded" and park["Total Score"] == ""


def test_gradescope_needs_one_assignment(tmp_path, monkeypatch):
    with pytest.raises(GradingError, match="--assignment"):
        _written(tmp_path, monkeypatch, "gradescope")


def test_wide_export_has_one_row_per_student(tmp_path, monkeypatch):
    count, out = _written(tmp_path, monkeypatch, "wide")
    rows = {line[0]: dict(zip(out[0], line)) for line in out[1:]}
    assert count == 3 and out[0][:4] == ["student_id", "first_name", "last_name", "email"]
    kim = rows["kim01"]
    assert float(kim["00_demo:score"]) == 5.0 and float(kim["00_demo:late_penalty"]) == 1.0
    assert float(kim["total"]) == 8.0 and float(kim["max_total"]) == 12.0 and kim["00_demo:status"] == "late"
    assert rows["lee02"]["01_more:score"] == "" and float(rows["lee02"]["max_total"]) == 6.0


def test_long_export_keeps_its_columns(tmp_path, monkeypatch):
    count, out = _written(tmp_path, monkeypatch, "long")
    assert count == 4 and out[0] == export.COLUMNS[:9] + ["task:add_test", "task:count_test"] + export.COLUMNS[9:]


def test_the_class_zone_is_set_once_in_the_course_settings(tmp_path, monkeypatch):
    monkeypatch.delenv("COURSE_TIMEZONE", raising=False)
    course = Course(tmp_path)
    assert course.zone == SEOUL  # the repository's nbgrader_config.py
    (tmp_path / "nbgrader_config.json").write_text(json.dumps({"Course": {"timezone": "America/New_York"}}))
    assert Course(tmp_path).zone == ZoneInfo("America/New_York")
    (tmp_path / "nbgrader_config.json").write_text(json.dumps({"Course": {"timezone": "Mars/Olympus"}}))
    with pytest.raises(GradingError, match="Mars/Olympus"):
        Course(tmp_path).zone


def test_times_are_shown_and_read_in_the_class_zone():
    utc_naive = datetime(2026, 12, 1, 14, 59)  # nbgrader's form
    assert show(utc_naive, SEOUL) == "2026-12-01T23:59:00+09:00"
    assert show(utc_naive, ZoneInfo("UTC")) == "2026-12-01T14:59:00+00:00"
    assert parse_time("2026-12-01T23:59", zone=SEOUL).isoformat() == "2026-12-01T23:59:00+09:00"
    assert parse_time("2026-12-01T23:59+00:00", zone=SEOUL).utcoffset().total_seconds() == 0  # a stated zone wins


def test_the_feedback_banner_shows_the_net_score_the_penalty_and_why():
    from autograder.grading.feedback import _banner
    banner = _banner("00_demo", "kim01", _table()[0])
    assert "5 / 6" in banner.en and "Late penalty 1 points: 6 → 5" in banner.en and "penalty 1 points" in banner.en
    assert "5 / 6" in banner.ko and "지각 감점 1점: 6점 → 5점" in banner.ko and "2026-12-02T00:30:00+09:00" in banner.ko


@pytest.fixture
def late_gradebook(tmp_path):
    """A course in ``tmp_path`` (the repository's nbgrader configuration): late04 scored 19 of 20, received a day
    and a minute late under 1 point per started day (penalty 2); ontime01 scored 19 on time."""
    import shutil
    from nbgrader.api import Gradebook
    from autograder.grading.course import CONFIG_FILE, REPO
    from autograder.grading.deadlines import set_policy
    shutil.copy(REPO / CONFIG_FILE, tmp_path / CONFIG_FILE)
    course = Course(tmp_path)
    set_policy(course, "per-day=1")
    with warnings.catch_warnings(), Gradebook(course.gradebook_url, course.course_id) as gb:
        warnings.simplefilter("ignore")  # SQLAlchemy's, inside nbgrader's add_submission
        gb.add_assignment("ps1", duedate=datetime(2026, 12, 1, 14, 59))
        gb.add_notebook("nb", "ps1")
        gb.add_grade_cell("c1", "nb", "ps1", max_score=20, cell_type="code")
        gb.add_solution_cell("c1", "nb", "ps1")
        for student, stamp in (("late04", datetime(2026, 12, 2, 15, 0)), ("ontime01", datetime(2026, 12, 1, 10, 0))):
            gb.add_student(student)
            gb.add_submission("ps1", student, timestamp=stamp)
            grade = gb.find_grade("c1", "nb", "ps1", student)
            grade.auto_score, grade.needs_manual_grade = 19.0, False
            (tmp_path / "autograded" / student / "ps1").mkdir(parents=True)
            (tmp_path / "autograded" / student / "ps1" / "nb.ipynb").write_text(json.dumps(new_notebook()))
            (tmp_path / "submitted" / student / "ps1").mkdir(parents=True)
            (tmp_path / "submitted" / student / "ps1" / "timestamp.txt").write_text(f"{stamp} UTC")
        gb.db.commit()
    course.folder("source", "ps1").mkdir(parents=True)
    (course.folder("source", "ps1") / "nb.ipynb").write_text("{}")
    return course


def test_the_formgrader_api_shows_scores_net_of_the_late_penalty(late_gradebook):
    from nbgrader.api import Gradebook
    from nbgrader.coursedir import CourseDirectory
    from autograder.grading.net_scores import NetScoresAPI
    config = late_gradebook.config()
    api = NetScoresAPI(coursedir=CourseDirectory(config=config), config=config)
    subs = {s["student"]: s for s in api.get_submissions("ps1")}
    assert (subs["late04"]["score"], subs["late04"]["raw_score"], subs["late04"]["late_penalty"]) == (17.0, 19.0, 2.0)
    assert (subs["ontime01"]["score"], subs["ontime01"]["late_penalty"]) == (19.0, 0.0)
    (nb,) = api.get_student_notebook_submissions("late04", "ps1")
    assert (nb["score"], nb["late_penalty"]) == (17.0, 2.0)
    per_nb = {n["student"]: n["score"] for n in api.get_notebook_submissions("ps1", "nb")}
    assert per_nb == {"late04": 17.0, "ontime01": 19.0}
    assert {s["id"]: s["score"] for s in api.get_students()} == {"late04": 17.0, "ontime01": 19.0}
    assert api.get_assignment("ps1")["average_score"] == 18.0  # (17 + 19) / 2
    assert [n["average_score"] for n in api.get_notebooks("ps1")] == [18.0]
    with Gradebook(late_gradebook.gradebook_url, late_gradebook.course_id) as gb:  # shown, not stored
        assert gb.find_submission("ps1", "late04").notebooks[0].late_submission_penalty is None


def test_the_course_jupyter_settings_make_the_formgrader_use_it():
    import json as json_lib
    from autograder.grading import net_scores
    settings = json_lib.loads((Path(net_scores.__file__).parents[1] / "data" / "jupyter" / "jupyter_server_config.json")
                              .read_text(encoding="utf-8"))
    assert settings["ServerApp"]["jpserver_extensions"]["autograder.grading.net_scores"] is True
    from nbgrader.server_extensions.formgrader import base
    before = base.NbGraderAPI

    class Log:
        def info(self, text):
            self.text = text
    server = type("Server", (), {"log": Log()})()
    try:
        net_scores._load_jupyter_server_extension(server)
        assert base.NbGraderAPI is net_scores.NetScoresAPI and "net" in server.log.text
    finally:
        base.NbGraderAPI = before


def test_the_running_formgrader_answers_with_the_net_score(late_gradebook):
    """nbgrader's formgrader in a real Jupyter server with the course's Jupyter settings: its API's score is net."""
    from fixtures.servers import course_jupyter, request
    with course_jupyter(late_gradebook.root) as (base, token, log):
        url = f"{base}/formgrader/api"
        status, body = request(f"{url}/submissions/ps1", token)
        assert status == 200, body
        shown = {s["student"]: s for s in json.loads(body)}
        assert (shown["late04"]["score"], shown["late04"]["raw_score"], shown["late04"]["late_penalty"]) == (17, 19, 2)
        assert shown["ontime01"]["score"] == 19
        assert shown["late04"]["display_timestamp"].startswith("2026-12-03 00:00:00")  # Asia/Seoul, the class's zone
        for path in ("student/late04", "submission/ps1/late04"):
            status, body = request(f"{url}/{path}", token)
            assert status == 200 and json.loads(body)["score"] == 17, (path, body)
        status, body = request(f"{url}/assignment/ps1", token)
        assert status == 200 and json.loads(body)["average_score"] == 18, body
        status, body = request(f"{url}/submitted_notebooks/ps1/nb", token)
        assert status == 200 and {n["student"]: n["score"] for n in json.loads(body)} == {"late04": 17, "ontime01": 19}
        late = next(n["id"] for n in json.loads(body) if n["student"] == "late04")
        status, page = request(f"{base}/formgrader/submissions/{late}/", token)  # the submission's own page
        page = page.decode("utf-8")
        assert status == 200 and "Score: 17 / 20" in page and "Late penalty 2 points: 19 → 17" in page, page[-3000:]
    assert "scores net of the late penalty" in log.read_text(errors="replace")


@pytest.mark.parametrize("fmt", sorted(export.FORMATS))
def test_no_cell_of_any_format_is_a_formula_or_a_control_sequence(tmp_path, monkeypatch, fmt):
    table = _table()
    table[1] = {**table[1], "last_name": "@SUM(A1)\x1b[2J", "email": "+cmd@example.org"}
    _, out = _written(tmp_path, monkeypatch, fmt, table, ["00_demo"] if fmt == "gradescope" else None)
    cells = [c for line in out for c in line if c and not c.replace(".", "").isdigit()]
    assert not [c for c in cells if c.startswith(("=", "+", "-", "@")) or "\x1b" in c], fmt
    assert any(c.startswith("'@SUM(A1)\\x1b[2J") for c in cells), fmt  # quoted, escaped, kept
