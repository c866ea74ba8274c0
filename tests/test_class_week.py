"""A class week with the course's own commands (issue 21, "Done when"), on the small demo course.

release with a due date and a late policy; a roster (a Hangul id is refused at import, the student
is imported under an ASCII id with the Hangul name); eight students collected from folders at
times the instructor gives: on time, late, a backdated manifest, an empty (untouched) exercise,
a broken notebook, partial then fixed, a manual grade then re-grades, the student with the Hangul
name; grade (2 workers); a manual grade as nbgrader's formgrader stores it; re-grade; feedback;
export. Every CSV row, every feedback file and the manual grade are checked.
"""
import csv
import json
import shutil
import zipfile
from datetime import datetime, timedelta, timezone

import nbformat
from nbgrader.api import Gradebook

from autograder.cli import main
from autograder.grading import sandbox
from autograder.grading.course import Course
from autograder.grading.deadlines import show
from fixtures.grading_course import ASSIGNMENT, corpus, demo_course

KST = timezone(timedelta(hours=9))
OK = {"add_solution": "def add(a, b):\n    return a + b",
      "stats_solution": "def stats(xs):\n    return {'mean': sum(xs) / len(xs), 'max': max(xs)}",
      "count_solution": "def count_positive(xs):\n    return sum(1 for x in xs if x > 0)"}


def cli(course, *args):
    return main([*args, "--root", str(course.root)])


def learner(course, tmp, student, cells):
    """The learner's own copy of the exercise with ``cells`` answered, submitted with `submit`; the zip."""
    root = tmp / "learners" / student
    exercise = root / "exercises" / ASSIGNMENT
    exercise.mkdir(parents=True)
    nb = nbformat.read(str(course.folder("release", ASSIGNMENT, "demo.ipynb")), as_version=4)
    for cell in nb.cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        if grade_id in cells:
            cell.source = cells[grade_id]
    nbformat.write(nb, str(exercise / "demo.ipynb"))
    outbox = tmp / "outbox" / student
    assert main(["submit", ASSIGNMENT, "--student", student, "--to", str(outbox), "--root", str(root)]) == 0
    return outbox / f"{student}__{ASSIGNMENT}.zip"


def restamp(zip_path, when: datetime):
    """The learner edits the time in submission.json (a backdated manifest)."""
    with zipfile.ZipFile(zip_path) as archive:
        files = {n: archive.read(n) for n in archive.namelist()}
    manifest = json.loads(files["submission.json"])
    manifest["timestamp"] = when.isoformat()
    files["submission.json"] = json.dumps(manifest).encode()
    with zipfile.ZipFile(zip_path, "w") as archive:
        for name, data in files.items():
            archive.writestr(name, data)


def inbox(tmp, name, *entries):
    folder = tmp / "inbox" / name
    folder.mkdir(parents=True)
    for entry in entries:
        if isinstance(entry, tuple):
            (folder / entry[0]).write_text(entry[1], encoding="utf-8")
        else:
            shutil.copy(entry, folder / entry.name)
    return folder


def formgrader_manual_score(course, student, cell, score):
    """What nbgrader's formgrader does when the instructor types a score (formgrader/apihandlers.py GradeHandler.put)."""
    with Gradebook(course.gradebook_url, course.course_id) as gb:
        grade = gb.find_grade_by_id(gb.find_grade(cell, "demo", ASSIGNMENT, student).id)
        grade.manual_score = score
        grade.extra_credit = None
        grade.needs_manual_grade = grade.manual_score is None and grade.auto_score is None
        gb.db.commit()


def grade(course, *students):
    flag = "--require-sandbox" if sandbox.available() else "--no-sandbox"
    picked = ["--students", ",".join(students)] if students else []
    assert cli(course, "instructor", "grade", ASSIGNMENT, *picked, "--workers", "2", "--cell-timeout", "20",
               "--notebook-timeout", "120", "--memory-gb", "2", flag) == 0


def test_class_week(tmp_path, capsys):
    course = demo_course(tmp_path / "course")
    now = datetime.now(KST).replace(second=0, microsecond=0)
    due = now + timedelta(days=2)
    partial = {**OK, "stats_solution": corpus()["partial_stats"]["cells"]["stats_solution"]}

    # release with a due date; the late policy: 1 point per started day
    assert cli(course, "instructor", "release", ASSIGNMENT, "--due", due.isoformat()) == 0
    out = capsys.readouterr().out
    assert "Released 00_demo" in out and "배포했습니다" in out and show(due, course.zone) in out
    assert cli(course, "instructor", "deadline", "--late", "per-day=1") == 0
    out = capsys.readouterr().out
    assert show(due, course.zone) in out and "1 points per (started) day late" in out and "늦은 하루" in out

    # the roster: a Hangul id is refused with what to use; the student comes in as kim.minjun, named in Hangul
    people = [("ontime", "Ada", "Lovelace"), ("late", "Alan", "Turing"), ("backdated", "Grace", "Hopper"),
              ("empty", "Edsger", "Dijkstra"), ("broken", "Barbara", "Liskov"), ("partial", "Donald", "Knuth"),
              ("manual", "Frances", "Allen")]
    roster = "id,first_name,last_name,email\n" + "".join(f"{i},{f},{l},{i}@example.org\n" for i, f, l in people)
    bad = tmp_path / "bad.csv"
    bad.write_text(roster + "김민준,민준,김,minjun@example.org\n", encoding="utf-8")
    assert cli(course, "instructor", "roster", str(bad)) == 2
    out = capsys.readouterr().out
    assert "nobody was imported" in out and "아무도 가져오지 않았습니다" in out and "'김민준'" in out
    good = tmp_path / "roster.csv"
    good.write_text(roster + "kim.minjun,민준,김,minjun@example.org\n", encoding="utf-8-sig")
    assert cli(course, "instructor", "roster", str(good)) == 0
    assert "8" in capsys.readouterr().out

    # submissions, collected at the times the instructor gives
    zips = {s: learner(course, tmp_path, s, OK) for s in ("ontime", "late", "backdated", "manual", "kim.minjun")}
    zips["empty"] = learner(course, tmp_path, "empty", {})
    zips["partial"] = learner(course, tmp_path, "partial", partial)
    restamp(zips["backdated"], due - timedelta(days=3))
    first = inbox(tmp_path, "monday", zips["ontime"], zips["empty"], zips["manual"], zips["kim.minjun"],
                  zips["partial"], ("broken.ipynb", "{broken"), ("김민준.ipynb", "{}"))
    assert cli(course, "instructor", "collect", ASSIGNMENT, str(first),
               "--received-at", (due - timedelta(hours=1)).isoformat()) == 1  # it refused 김민준.ipynb
    out = capsys.readouterr().out
    assert "받음 6, 거절 1" in out and "received 6, refused 1" in out
    assert cli(course, "instructor", "collect", ASSIGNMENT, str(inbox(tmp_path, "late", zips["late"])),
               "--received-at", (due + timedelta(hours=5)).isoformat()) == 0
    assert cli(course, "instructor", "collect", ASSIGNMENT, str(inbox(tmp_path, "backdated", zips["backdated"])),
               "--received-at", (due + timedelta(hours=30)).isoformat()) == 0
    out = capsys.readouterr().out
    assert "submission.json says" in out and "받은 시각으로 채점합니다" in out  # shown, not trusted
    stamp = course.folder("submitted", "backdated", ASSIGNMENT, "timestamp.txt").read_text()
    assert datetime.fromisoformat(stamp) == due + timedelta(hours=30)

    grade(course)
    capsys.readouterr()

    # a manual grade (the formgrader), then re-grades: kept; flagged again only when the answer changed
    formgrader_manual_score(course, "manual", "stats_test", 1)
    fixed = learner(course, tmp_path / "again", "partial", OK)
    assert cli(course, "instructor", "collect", ASSIGNMENT, str(inbox(tmp_path, "tuesday", fixed)),
               "--received-at", (due - timedelta(minutes=30)).isoformat()) == 0
    assert "replaced 1" in capsys.readouterr().out
    grade(course, "partial", "manual")
    with Gradebook(course.gradebook_url, course.course_id) as gb:
        stats = gb.find_grade("stats_test", "demo", ASSIGNMENT, "manual")
        assert stats.manual_score == 1 and stats.score == 1 and not stats.needs_manual_grade
        assert not gb.find_submission(ASSIGNMENT, "manual").needs_manual_grade
    changed = learner(course, tmp_path / "third", "manual", partial)
    assert cli(course, "instructor", "collect", ASSIGNMENT, str(inbox(tmp_path, "wednesday", changed)),
               "--received-at", (due - timedelta(minutes=10)).isoformat()) == 0
    grade(course, "manual")
    with Gradebook(course.gradebook_url, course.course_id) as gb:
        stats = gb.find_grade("stats_test", "demo", ASSIGNMENT, "manual")
        assert stats.manual_score == 1 and stats.needs_manual_grade  # the answer it judged changed

    # feedback: every student gets a file, the broken one too, with the late line on top
    assert cli(course, "instructor", "feedback", ASSIGNMENT) == 0
    students = [p[0] for p in people] + ["kim.minjun"]
    pages = {s: course.folder("feedback", s, ASSIGNMENT, "demo.html").read_text(encoding="utf-8") for s in students}
    assert "늦게 받았습니다" in pages["late"] and "Late penalty 1 points" in pages["late"]
    assert "마감(" in pages["ontime"] and "Received before the due date" in pages["ontime"]
    assert "읽을 수 없습니다" in pages["broken"] and "cannot be read" in pages["broken"]
    assert "Score: 4 / 6" in pages["backdated"] and "점수: 4 / 6" in pages["backdated"]

    # the export an instructor hands in
    path = tmp_path / "grades.csv"
    assert cli(course, "instructor", "export", "--to", str(path), "--bom") == 0
    assert path.read_bytes().startswith(b"\xef\xbb\xbf")
    with open(path, encoding="utf-8-sig", newline="") as handle:
        table = list(csv.DictReader(handle))
    rows = {r["student_id"]: r for r in table}
    assert sorted(rows) == sorted(students) and len(table) == 8
    assert {"task:add_test", "task:stats_test", "task:count_test", "reason_ko", "reason_en", "due",
            "submitted_at", "email"} <= set(table[0])
    expect = {  # raw, penalty, net, status
        "ontime": (6, 0, 6, "graded"), "late": (6, 1, 5, "late"),
        "backdated": (6, 2, 4, "late"), "empty": (0, 0, 0, "graded"),
        "broken": (0, 0, 0, "graded with problems"), "partial": (6, 0, 6, "graded"),
        "manual": (4, 0, 4, "needs manual grading"), "kim.minjun": (6, 0, 6, "graded")}
    names = {i: (f, l) for i, f, l in people} | {"kim.minjun": ("민준", "김")}
    for student, (raw, penalty, net, status) in expect.items():
        r = rows[student]
        assert (float(r["raw_score"]), float(r["late_penalty"]), float(r["score"]), r["status"]) == \
            (raw, penalty, net, status), r
        assert (r["first_name"], r["last_name"]) == names[student] and r["email"].endswith("@example.org"), r
        assert r["due"] == show(due, course.zone) and float(r["max_score"]) == 6 and r["submitted_at"], r
        assert (r["reason_ko"] == "") == (r["reason_en"] == "") == (status == "graded"), r
    assert rows["late"]["submitted_at"] == show(due + timedelta(hours=5), course.zone)
    assert rows["late"]["submitted_at"].endswith("+09:00")  # the class's zone (nbgrader_config.py), not the machine's
    assert "늦음" in rows["late"]["reason_ko"] and "5 h late: penalty 1 points" in rows["late"]["reason_en"]
    assert "1일 6시간" in rows["backdated"]["reason_ko"] and "submission.json says" in rows["backdated"]["reason_en"]
    assert "읽을 수 없습니다" in rows["broken"]["reason_ko"] and "cannot be read" in rows["broken"]["reason_en"]
    assert float(rows["manual"]["task:stats_test"]) == 1 and float(rows["manual"]["task:add_test"]) == 2
    assert "수동으로 채점한 셀 stats_test" in rows["manual"]["reason_ko"]
    assert "manually graded cell stats_test changed" in rows["manual"]["reason_en"]
    assert float(rows["partial"]["task:stats_test"]) == 3

    # the school's systems take the net score, and the formgrader shows it (late: 6 - 1)
    for fmt in ("canvas", "moodle", "gradescope", "wide"):
        assert cli(course, "instructor", "export", "--format", fmt, "--assignment", ASSIGNMENT,
                   "--to", str(tmp_path / f"{fmt}.csv")) == 0
    with open(tmp_path / "canvas.csv", encoding="utf-8", newline="") as handle:
        canvas = {line[2]: line[5] for line in list(csv.reader(handle))[2:]}
    assert (float(canvas["late"]), float(canvas["backdated"]), canvas["manual"]) == (5, 4, "")
    from nbgrader.coursedir import CourseDirectory
    from autograder.grading.net_scores import NetScoresAPI
    config = course.config()
    shown = {s["student"]: s for s in NetScoresAPI(coursedir=CourseDirectory(config=config), config=config)
             .get_submissions(ASSIGNMENT)}
    assert (shown["late"]["score"], shown["late"]["raw_score"], shown["late"]["late_penalty"]) == (5, 6, 1)
    assert (shown["backdated"]["score"], shown["ontime"]["score"]) == (4, 6)

    # the default place: instructor/, ignored by git; and nbgrader's "zero" policy is applied to the net score
    assert cli(course, "instructor", "deadline", "--late", "zero") == 0
    assert cli(course, "instructor", "export") == 0
    written = list((course.root / "instructor").glob("grades-*.csv"))
    assert len(written) == 1
    zero = {r["student_id"]: r for r in csv.DictReader(written[0].open(encoding="utf-8"))}
    assert float(zero["late"]["score"]) == 0 and float(zero["late"]["late_penalty"]) == 6
    assert float(zero["ontime"]["score"]) == 6
    assert Course(course.root).config().LateSubmissionPlugin.penalty_method == "zero"
