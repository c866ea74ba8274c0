"""A class week with the commands of docs/instructor.md, as written and in the guide's order (issue 21 and 28).

On the small demo course: the roster (a Hangul id is refused with a romanised suggestion; the student comes in under
an ASCII id with the Hangul name); release with a due date; the late policy; learners submit with `submit` (eight,
by folder) and with `nbgrader submit` (through the exchange: one on the roster, one off it); collect from folders at
the times the instructor gives (on time, late, a backdated manifest, an empty exercise, a broken notebook, an entry
of someone off the roster) and from the exchange, where the off-roster student is refused and then taken with
--add-unknown; grade (2 workers); re-grade one student; a manual grade as the formgrader stores it, kept by a
re-grade and flagged when the answer changes; feedback, released through the exchange; export. Unknown students,
assignments and folders and a future --received-at exit non-zero. Every CSV row, every feedback file and the manual
grade are checked; the table of steps (command, exit status) is printed and kept in ``class_week_steps.md``.
"""
import csv
import json
import os
import shutil
import subprocess
import sys
import zipfile
from datetime import datetime, timedelta, timezone
from pathlib import Path

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


class Week:
    """Runs the guide's commands (``python -m autograder ...`` in-process) and keeps each one's exit status."""

    def __init__(self, course, capsys, tmp):
        self.course, self.capsys, self.tmp, self.steps = course, capsys, tmp, []

    def run(self, *args, expect: int = 0, learner_root=None) -> str:
        """``args`` as typed after ``python -m autograder``; asserts the exit status; the output."""
        root = learner_root or self.course.root
        status = main([*map(str, args), "--root", str(root)])
        out = self.capsys.readouterr().out
        self._keep(["python", "-m", "autograder", *args], status)
        assert status == expect, (args, status, out[-3000:])
        return out

    def nbgrader(self, *args, cwd, expect: int = 0) -> str:
        """A learner's ``nbgrader ...`` (the Assignments tab's command) in ``cwd``."""
        done = subprocess.run([str(Path(sys.executable).parent / "nbgrader"), *map(str, args)], cwd=cwd,
                              capture_output=True, text=True, timeout=300)
        self._keep(["nbgrader", *args], done.returncode)
        assert done.returncode == expect, (args, done.stdout[-2000:], done.stderr[-2000:])
        return done.stdout + done.stderr

    def _keep(self, argv, status):
        shown = " ".join(str(a).replace(str(self.tmp), "$TMP") for a in argv)
        self.steps.append((shown, status))

    def table(self) -> str:
        lines = ["| # | command | exit |", "|---|---|---|"]
        lines += [f"| {n} | `{cmd}` | {status} |" for n, (cmd, status) in enumerate(self.steps, start=1)]
        return "\n".join(lines)


def learner(week, tmp, student, cells):
    """The learner's own copy of the exercise with ``cells`` answered, submitted with `submit`; the zip."""
    root = tmp / "learners" / student
    exercise = root / "exercises" / ASSIGNMENT
    exercise.mkdir(parents=True)
    nb = nbformat.read(str(week.course.folder("release", ASSIGNMENT, "demo.ipynb")), as_version=4)
    for cell in nb.cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        if grade_id in cells:
            cell.source = cells[grade_id]
    nbformat.write(nb, str(exercise / "demo.ipynb"))
    outbox = tmp / "outbox" / student
    week.run("submit", ASSIGNMENT, "--student", student, "--to", outbox, learner_root=root)
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


def inbox(tmp, name, *entries, sent=None):
    """The folder of what arrived (mail attachments, say); zips ``sent`` at that time say so in their manifest."""
    folder = tmp / "inbox" / name
    folder.mkdir(parents=True)
    for entry in entries:
        if isinstance(entry, tuple):
            (folder / entry[0]).write_text(entry[1], encoding="utf-8")
        else:
            shutil.copy(entry, folder / entry.name)
            if sent is not None:
                restamp(folder / entry.name, sent)
    return folder


def formgrader_manual_score(course, student, cell, score):
    """What nbgrader's formgrader does when the instructor types a score (formgrader/apihandlers.py GradeHandler.put)."""
    with Gradebook(course.gradebook_url, course.course_id) as gb:
        grade = gb.find_grade_by_id(gb.find_grade(cell, "demo", ASSIGNMENT, student).id)
        grade.manual_score = score
        grade.extra_credit = None
        grade.needs_manual_grade = grade.manual_score is None and grade.auto_score is None
        gb.db.commit()


def via_exchange(week, tmp, student, cells):
    """A learner submits through the exchange with `nbgrader submit` (what the Assignments tab runs)."""
    folder = tmp / "exchange-learners" / student
    (folder / ASSIGNMENT).mkdir(parents=True)
    nb = nbformat.read(str(week.course.folder("release", ASSIGNMENT, "demo.ipynb")), as_version=4)
    for cell in nb.cells:
        if cell.metadata.get("nbgrader", {}).get("grade_id") in cells:
            cell.source = cells[cell.metadata.nbgrader.grade_id]
    nbformat.write(nb, str(folder / ASSIGNMENT / "demo.ipynb"))
    config = week.course.config()
    week.nbgrader("submit", ASSIGNMENT, "--student", student, "--course", config.CourseDirectory.course_id,
                  f"--Exchange.root={config.Exchange.root}", "--Exchange.path_includes_course=False",
                  f"--Exchange.cache={tmp / 'exchange-cache' / student}", cwd=folder)


def test_class_week(tmp_path, capsys):
    course = demo_course(tmp_path / "course")
    week = Week(course, capsys, tmp_path)
    due = datetime.now(KST).replace(second=0, microsecond=0) - timedelta(days=2)
    partial = {**OK, "stats_solution": corpus()["partial_stats"]["cells"]["stats_solution"]}
    flag = "--require-sandbox" if sandbox.available() else "--no-sandbox"
    limits = ("--workers", "2", "--cell-timeout", "20", "--notebook-timeout", "120", "--memory-gb", "2", flag)
    try:
        _week(week, course, tmp_path, due, partial, limits)
    finally:
        (tmp_path / "class_week_steps.md").write_text(week.table() + "\n", encoding="utf-8")
        with capsys.disabled():
            print(f"\nclass week: the guide's commands and their exit status ({tmp_path / 'class_week_steps.md'})")
            print(week.table())


def _week(week, course, tmp_path, due, partial, limits):
    # Roster and student ids: a Hangul id is refused with a romanised suggestion; kim.minjun comes in named in Hangul
    people = [("ontime", "Ada", "Lovelace"), ("late", "Alan", "Turing"), ("backdated", "Grace", "Hopper"),
              ("empty", "Edsger", "Dijkstra"), ("broken", "Barbara", "Liskov"), ("partial", "Donald", "Knuth"),
              ("manual", "Frances", "Allen"), ("lee.seoyeon", "서연", "이")]
    roster = "id,first_name,last_name,email\n" + "".join(f"{i},{f},{l},{i}@example.org\n" for i, f, l in people)
    bad = tmp_path / "bad.csv"
    bad.write_text(roster + "김민준,민준,김,minjun@example.org\n", encoding="utf-8")
    out = week.run("instructor", "roster", bad, expect=2)
    assert "nobody was imported" in out and "아무도 가져오지 않았습니다" in out and "'김민준' -> gimminjun" in out
    good = tmp_path / "students.csv"
    good.write_text(roster + "kim.minjun,민준,김,minjun@example.org\n", encoding="utf-8-sig")
    assert "9" in week.run("instructor", "roster", good)

    # 1. Release with a due date (two days ago: every time given below lies in the past); the late policy
    out = week.run("instructor", "release", ASSIGNMENT, "--due", due.isoformat())
    assert "Released 00_demo" in out and "배포했습니다" in out and show(due, course.zone) in out
    out = week.run("instructor", "release", ASSIGNMENT, expect=2)  # already in the exchange
    assert "--force" in out and "이미" in out
    out = week.run("instructor", "deadline", "--late", "per-day=1")
    assert show(due, course.zone) in out and "1 points per (started) day late" in out and "늦은 하루" in out

    # 2. Submit: eight learners make their zips; two submit through the exchange (one is not on the roster)
    zips = {s: learner(week, tmp_path, s, OK) for s in ("ontime", "late", "backdated", "manual", "kim.minjun")}
    zips["empty"] = learner(week, tmp_path, "empty", {})
    zips["partial"] = learner(week, tmp_path, "partial", partial)
    zips["stranger"] = learner(week, tmp_path, "stranger", OK)
    restamp(zips["backdated"], due - timedelta(days=3))
    via_exchange(week, tmp_path, "lee.seoyeon", OK)
    via_exchange(week, tmp_path, "guest", OK)

    # 3. Collect, at the times the instructor gives; the off-roster entries are refused with the reason
    first = inbox(tmp_path, "monday", zips["ontime"], zips["empty"], zips["manual"], zips["kim.minjun"],
                  zips["partial"], zips["stranger"], ("broken.ipynb", "{broken"), ("김민준.ipynb", "{}"),
                  sent=due - timedelta(hours=1, minutes=2))
    out = week.run("instructor", "collect", ASSIGNMENT, first, "--received-at", (due - timedelta(hours=1)).isoformat(),
                   expect=1)
    assert "받음 6, 거절 2" in out and "received 6, refused 2" in out
    assert "stranger is not on the class roster" in out and "--add-unknown" in out and "명단에 없어" in out
    assert not course.folder("submitted", "stranger").exists()
    week.run("instructor", "collect", ASSIGNMENT, inbox(tmp_path, "late", zips["late"], sent=due + timedelta(hours=5)),
             "--received-at", (due + timedelta(hours=5)).isoformat())
    out = week.run("instructor", "collect", ASSIGNMENT, inbox(tmp_path, "backdated", zips["backdated"]),
                   "--received-at", (due + timedelta(hours=30)).isoformat())
    assert "submission.json says" in out and "받은 시각으로 채점합니다" in out  # shown, not trusted
    stamp = course.folder("submitted", "backdated", ASSIGNMENT, "timestamp.txt").read_text()
    assert datetime.fromisoformat(stamp) == due + timedelta(hours=30)
    out = week.run("instructor", "collect", ASSIGNMENT, expect=1)  # the exchange
    assert "guest is not on the class roster" in out and "received 1, refused 1" in out
    assert not course.folder("submitted", "guest").exists()
    out = week.run("instructor", "collect", ASSIGNMENT, "--add-unknown")
    assert "guest was added to the roster" in out and "명단에 넣었습니다" in out
    assert course.folder("submitted", "guest", ASSIGNMENT, "demo.ipynb").is_file()
    out = week.run("instructor", "roster")
    assert "guest" in out and "stranger" not in out

    # what exits non-zero instead of doing nothing: a folder that is not there, a time after now
    out = week.run("instructor", "collect", ASSIGNMENT, tmp_path / "inbox" / "nowhere", expect=2)
    assert "does not exist" in out and "없습니다" in out and "Traceback" not in out
    out = week.run("instructor", "collect", ASSIGNMENT, first, "--received-at",
                   (datetime.now(KST) + timedelta(days=1)).isoformat(), expect=2)
    assert "after now" in out and "nothing was collected" in out

    # 4. Grade
    week.run("instructor", "grade", ASSIGNMENT, *limits)
    week.run("instructor", "grade", "99_nope", *limits, expect=2)

    # Re-grading one student: a fixed submission replaces the earlier one
    fixed = learner(week, tmp_path / "again", "partial", OK)
    tuesday = inbox(tmp_path, "tuesday", fixed, sent=due - timedelta(hours=1))
    out = week.run("instructor", "collect", ASSIGNMENT, tuesday, "--received-at", (due - timedelta(minutes=30)).isoformat())
    assert "replaced 1" in out
    week.run("instructor", "grade", ASSIGNMENT, "--students", "partial", *limits)
    week.run("instructor", "feedback", ASSIGNMENT, "--student", "partial")
    assert course.folder("feedback", "partial", ASSIGNMENT, "demo.html").is_file()

    # Manual grading (the formgrader): kept by a re-grade; flagged again only when the answer changed
    formgrader_manual_score(course, "manual", "stats_test", 1)
    week.run("instructor", "grade", ASSIGNMENT, "--students", "manual", *limits)
    with Gradebook(course.gradebook_url, course.course_id) as gb:
        stats = gb.find_grade("stats_test", "demo", ASSIGNMENT, "manual")
        assert stats.manual_score == 1 and stats.score == 1 and not stats.needs_manual_grade
        assert not gb.find_submission(ASSIGNMENT, "manual").needs_manual_grade
    changed = learner(week, tmp_path / "third", "manual", partial)
    wednesday = inbox(tmp_path, "wednesday", changed, sent=due - timedelta(minutes=15))
    week.run("instructor", "collect", ASSIGNMENT, wednesday, "--received-at", (due - timedelta(minutes=10)).isoformat())
    week.run("instructor", "grade", ASSIGNMENT, "--students", "manual", *limits)
    with Gradebook(course.gradebook_url, course.course_id) as gb:
        stats = gb.find_grade("stats_test", "demo", ASSIGNMENT, "manual")
        assert stats.manual_score == 1 and stats.needs_manual_grade  # the answer it judged changed

    # 5. Feedback: every student gets a file; --release returns the exchange's and says who else did not get it
    out = week.run("instructor", "feedback", ASSIGNMENT, "--release")
    assert "Released 2 feedback" in out and "guest, lee.seoyeon" in out
    assert "➖ ontime: not released: the submission was collected from a folder" in out and "직접 전해" in out
    released = list((Path(course.config().Exchange.root) / course.course_id / "feedback").glob("*.html"))
    assert len(released) == 2
    students = [p[0] for p in people] + ["kim.minjun", "guest"]
    pages = {s: course.folder("feedback", s, ASSIGNMENT, "demo.html").read_text(encoding="utf-8") for s in students}
    assert "늦게 받았습니다" in pages["late"] and "Late penalty 1 points" in pages["late"]
    assert "마감(" in pages["ontime"] and "Received before the due date" in pages["ontime"]
    assert "읽을 수 없습니다" in pages["broken"] and "cannot be read" in pages["broken"]
    assert "Score: 4 / 6" in pages["backdated"] and "점수: 4 / 6" in pages["backdated"]
    out = week.run("instructor", "feedback", ASSIGNMENT, "--student", "nobody99", expect=2)
    assert "nobody99" in out and "not on the roster" in out and "명단에 없고" in out
    week.run("instructor", "feedback", "99_nope", expect=2)

    # Export: the CSV an instructor hands in
    path = tmp_path / "grades.csv"
    week.run("instructor", "export", "--to", path, "--bom")
    out = week.run("instructor", "export", "--to", tmp_path / "nope.csv", "--assignment", "99_nope", expect=2)
    assert "99_nope" in out and not (tmp_path / "nope.csv").exists()
    assert path.read_bytes().startswith(b"\xef\xbb\xbf")
    with open(path, encoding="utf-8-sig", newline="") as handle:
        table = list(csv.DictReader(handle))
    rows = {r["student_id"]: r for r in table}
    assert sorted(rows) == sorted(students) and len(table) == 10  # stranger, refused off the roster, is not there
    assert {"task:add_test", "task:stats_test", "task:count_test", "reason_ko", "reason_en", "due",
            "submitted_at", "email"} <= set(table[0])
    expect = {  # raw, penalty, net, status (the exchange's two were received two days and some minutes late)
        "ontime": (6, 0, 6, "graded"), "late": (6, 1, 5, "late"),
        "backdated": (6, 2, 4, "late"), "empty": (0, 0, 0, "graded"),
        "broken": (0, 0, 0, "graded with problems"), "partial": (6, 0, 6, "graded"),
        "manual": (4, 0, 4, "needs manual grading"), "kim.minjun": (6, 0, 6, "graded"),
        "lee.seoyeon": (6, 3, 3, "late"), "guest": (6, 3, 3, "late")}
    names = {i: (f, l) for i, f, l in people} | {"kim.minjun": ("민준", "김"), "guest": ("", "")}
    for student, (raw, penalty, net, status) in expect.items():
        r = rows[student]
        assert (float(r["raw_score"]), float(r["late_penalty"]), float(r["score"]), r["status"]) == \
            (raw, penalty, net, status), r
        assert (r["first_name"], r["last_name"]) == names[student], r
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
        week.run("instructor", "export", "--format", fmt, "--assignment", ASSIGNMENT, "--to", tmp_path / f"{fmt}.csv")
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
    week.run("instructor", "deadline", "--late", "zero")
    week.run("instructor", "export")
    written = list((course.root / "instructor").glob("grades-*.csv"))
    assert len(written) == 1
    zero = {r["student_id"]: r for r in csv.DictReader(written[0].open(encoding="utf-8"))}
    assert float(zero["late"]["score"]) == 0 and float(zero["late"]["late_penalty"]) == 6
    assert float(zero["ontime"]["score"]) == 6
    assert Course(course.root).config().LateSubmissionPlugin.penalty_method == "zero"
    assert not os.path.exists(course.root / "submitted" / "stranger")
