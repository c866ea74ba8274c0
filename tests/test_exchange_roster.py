"""The roster decides who is in the class (issue 28, item 3 and 7): collect refuses anyone off it (from a folder and from
the exchange) unless --add-unknown; feedback --release says what it released and what not; unknown students,
assignments and folders and a future --received-at exit non-zero with a bilingual reason; Hangul names get a
romanised id suggestion; release refuses to replace an assignment in the exchange without --force. No grading here."""
import json
import os
import shutil
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

from autograder.cli import main
from autograder.grading import collect
from autograder.grading.export import rows
from autograder.grading.roster import id_problem, students, suggest
from fixtures.grading_course import ASSIGNMENT, demo_course


def cli(course, *args):
    return main(["instructor", *map(str, args), "--root", str(course.root)])


def _roster(course, tmp_path, *ids):
    path = tmp_path / "students.csv"
    path.write_text("id,first_name,last_name,email\n" + "".join(f"{i},,,\n" for i in ids), encoding="utf-8")
    assert cli(course, "roster", path) == 0


def _inbox(course, tmp_path, *students):
    folder = tmp_path / "inbox"
    folder.mkdir(exist_ok=True)
    for student in students:
        shutil.copy(course.folder("release", ASSIGNMENT, "demo.ipynb"), folder / f"{student}.ipynb")
    return folder


def test_hangul_names_get_a_romanised_id_suggestion():
    assert suggest("김민준") == "gimminjun"
    assert suggest("이서연") == "iseoyeon"
    assert suggest("Müller") == "Muller"
    assert "gimminjun" in id_problem("김민준").en and "gimminjun" in id_problem("김민준").ko


def test_collect_from_a_folder_refuses_students_off_the_roster_unless_told(tmp_path, capsys):
    course = demo_course(tmp_path / "course")
    _roster(course, tmp_path, "kim01")
    inbox = _inbox(course, tmp_path, "kim01", "root")
    capsys.readouterr()
    assert cli(course, "collect", ASSIGNMENT, inbox) == 1
    out = capsys.readouterr().out
    assert "root is not on the class roster" in out and "명단에 없어" in out and "received 1, refused 1" in out
    assert not course.folder("submitted", "root").exists() and set(students(course)) == {"kim01"}
    assert {r["student_id"] for r in rows(course, [ASSIGNMENT])} == {"kim01"}  # nobody off the roster in the export
    assert cli(course, "collect", ASSIGNMENT, inbox, "--add-unknown") == 0
    out = capsys.readouterr().out
    assert "➕" in out and "root was added to the roster" in out and "received 2, refused 0" in out
    assert set(students(course)) == {"kim01", "root"}
    assert course.folder("submitted", "root", ASSIGNMENT, "demo.ipynb").is_file()


def _exchange_entry(course, student):
    inbound = course.root / ".exchange" / course.course_id / "inbound"
    folder = inbound / f"{student}+{ASSIGNMENT}+2026-11-23 10:00:00.000000 UTC+{student[:2]}"
    folder.mkdir(parents=True)
    (folder / "timestamp.txt").write_text("2026-11-23 10:00:00.000000 UTC")
    (folder / "submission_secret.txt").write_text("s3cret")
    shutil.copyfile(course.folder("release", ASSIGNMENT, "demo.ipynb"), folder / "demo.ipynb")


def test_collect_from_the_exchange_refuses_an_os_account_off_the_roster(tmp_path, capsys):
    course = demo_course(tmp_path / "course")
    _roster(course, tmp_path, "alice")
    _exchange_entry(course, "alice")
    _exchange_entry(course, "root")
    kept = course.folder("submitted", "root", ASSIGNMENT)  # an earlier submission of theirs stays as it was
    kept.mkdir(parents=True)
    (kept / "demo.ipynb").write_text("earlier")
    done = {c.student: c for c in collect.from_exchange(course, ASSIGNMENT)}
    assert done["alice"].problem is None and not done["alice"].added
    assert "not on the class roster" in done["root"].problem and "--add-unknown" in done["root"].why.en
    assert (kept / "demo.ipynb").read_text() == "earlier" and sorted(p.name for p in kept.iterdir()) == ["demo.ipynb"]
    log = [json.loads(line) for line in collect.refusal_log(course, ASSIGNMENT).read_text().splitlines()]
    assert [(e["student"], e["off_roster"]) for e in log] == [("root", True)]
    shutil.rmtree(course.folder("submitted", "root"))
    done = {c.student: c for c in collect.from_exchange(course, ASSIGNMENT, add_unknown=True)}
    assert done["root"].problem is None and done["root"].added
    assert course.folder("submitted", "root", ASSIGNMENT, "demo.ipynb").is_file() and "root" in students(course)


def test_collect_says_what_is_wrong_and_exits_non_zero(tmp_path, capsys):
    course = demo_course(tmp_path / "course")
    _roster(course, tmp_path, "kim01")
    capsys.readouterr()
    assert cli(course, "collect", ASSIGNMENT, tmp_path / "nowhere") == 2
    out = capsys.readouterr().out
    assert "does not exist" in out and "없습니다" in out and "Traceback" not in out
    inbox = _inbox(course, tmp_path, "kim01")
    future = (datetime.now(timezone.utc) + timedelta(hours=2)).isoformat()
    assert cli(course, "collect", ASSIGNMENT, inbox, "--received-at", future) == 2
    assert "after now" in capsys.readouterr().out and not course.folder("submitted", "kim01").exists()
    assert cli(course, "collect", "99_nope") == 2
    assert "99_nope" in capsys.readouterr().out


def test_unknown_students_and_assignments_exit_non_zero(tmp_path, capsys):
    course = demo_course(tmp_path / "course")
    _roster(course, tmp_path, "kim01")
    capsys.readouterr()
    for args in (("feedback", ASSIGNMENT, "--student", "nobody99"), ("feedback", "99_nope"),
                 ("export", "--assignment", "99_nope", "--to", tmp_path / "x.csv"), ("grade", "99_nope"),
                 ("deadline", "99_nope"), ("feedback", ASSIGNMENT, "--student", "김민준")):
        assert cli(course, *args) == 2, args
        out = capsys.readouterr().out
        assert ("nobody99" in out and "명단에 없고" in out) or "99_nope" in out or "gimminjun" in out, (args, out)
    assert not (tmp_path / "x.csv").exists()


def test_feedback_release_says_what_it_released_and_what_not(tmp_path, capsys):
    course = demo_course(tmp_path / "course")
    _roster(course, tmp_path, "kim01", "lee02")
    assert cli(course, "collect", ASSIGNMENT, _inbox(course, tmp_path, "kim01")) == 0
    capsys.readouterr()
    assert cli(course, "feedback", ASSIGNMENT, "--release") == 2  # nothing came through the exchange
    out = capsys.readouterr().out
    assert "No feedback of 00_demo was released: no submission came through the exchange" in out
    assert "kim01: not released: the submission was collected from a folder" in out
    assert "lee02: not released: no submission came through the exchange" in out and "돌려주지" in out
    assert not (course.root / ".exchange" / course.course_id / "feedback").exists()


def test_release_replaces_the_exchange_copy_only_with_force(tmp_path, capsys):
    course = demo_course(tmp_path / "course")
    assert cli(course, "release", ASSIGNMENT) == 0
    capsys.readouterr()
    assert cli(course, "release", ASSIGNMENT) == 2
    out = capsys.readouterr().out
    assert "already released" in out and "--force" in out and "이미" in out
    assert cli(course, "release", ASSIGNMENT, "--force") == 0


def test_check_hardware_prints_no_library_warnings(tmp_path):
    """nbgrader's API makes SQLAlchemy warn ("SAWarning: Object of type <SubmittedAssignment> not in session") as a
    worker stores a submission: with two workers, check-hardware printed six of them; none reaches the terminal."""
    env = {**os.environ, "COURSE_NO_PROGRESS": "1", "MPLBACKEND": "Agg"}
    done = subprocess.run([sys.executable, "-m", "autograder", "instructor", "check-hardware", "--root",
                           str(Path(__file__).parent / "fixtures" / "course"), "--runs", "2", "--workers", "2"],
                          capture_output=True, text=True, timeout=600, env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "6/6        6/6" in done.stdout
    assert "Warning" not in done.stderr and "Warning" not in done.stdout, done.stderr[-3000:]
