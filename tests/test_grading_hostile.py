"""Files a submission touched: links, special files, hard links, huge files, forged manifests.

Collect-time cases are placed in ``submitted/`` (or a collect folder) before grading; runtime cases
are the corpus block "files: links, special files, clobbered paths" (answer cells plant them while
the kernel runs). Nothing may be followed, copied, chmod-ed or written through; no point beyond an
honest stub; no batch stopped; the other students' grades (another assignment's too) intact.
"""
import json
import os
import shutil
import socket
import stat
import zipfile
from pathlib import Path

import pytest
from nbgrader.api import Gradebook

from autograder.cli import main
from autograder.grading import export, sandbox
from autograder.grading.batch import grade_class
from autograder.grading.collect import from_folder
from autograder.grading.feedback import feedback
from autograder.grading.submit import submit
from autograder.grading.worker import Limits
from fixtures.grading_course import ASSIGNMENT, build, corpus, demo_course

RUNTIME = ("link_secrets", "clobber_notebook", "special_files")
SECRET = b"TOPSECRET-7f3a9c-not-for-students"
OTHER = "99_other"


def _targets(course):
    return [course.root / "secret.txt", course.folder("source", ASSIGNMENT, "demo.ipynb"),
            course.folder("submitted", "reference", ASSIGNMENT, "demo.ipynb")]


def _snapshot(paths):
    return {p: (os.lstat(p).st_mode, os.lstat(p).st_uid, os.lstat(p).st_mtime_ns, p.read_bytes()) for p in paths}


def _stub(course) -> bytes:
    return course.folder("release", ASSIGNMENT, "demo.ipynb").read_bytes()


def _other_assignment(course):
    """Another assignment in the same gradebook with a graded (manual) submission."""
    with Gradebook(course.gradebook_url, course.course_id) as gb:
        gb.update_or_create_assignment(OTHER)
        gb.update_or_create_notebook("other", OTHER)
        gb.update_or_create_grade_cell("q1", "other", OTHER, max_score=5, cell_type="markdown")
        gb.update_or_create_student("reference")
        submission = gb.update_or_create_submission(OTHER, "reference")
        grade = submission.notebooks[0].grades[0]
        grade.manual_score = 4
        gb.db.commit()


def _other_score(course):
    with Gradebook(course.gradebook_url, course.course_id) as gb:
        return gb.find_submission(OTHER, "reference").score


def _plant(course):
    """Collect-time cases, written straight into submitted/."""
    root, secret, solution = course.root, course.root / "secret.txt", course.folder("source", ASSIGNMENT, "demo.ipynb")
    reference = course.folder("submitted", "reference", ASSIGNMENT, "demo.ipynb")
    planted = {}

    def folder(student):
        path = course.folder("submitted", student, ASSIGNMENT)
        path.mkdir(parents=True)
        planted[student] = path
        return path

    folder("abs_link").joinpath("demo.ipynb").symlink_to(solution)
    folder("rel_link").joinpath("demo.ipynb").symlink_to(os.path.relpath(reference, course.folder(
        "submitted", "rel_link", ASSIGNMENT)))
    f = folder("secret_link")
    f.joinpath("demo.ipynb").symlink_to(secret)
    f.joinpath("timestamp.txt").symlink_to(root / ".nbgrader" / "gradebook.db")
    os.mkfifo(folder("fifo") / "demo.ipynb")
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(folder("unix_socket") / "demo.ipynb"))
    server.close()
    os.link(secret, folder("hard_link") / "demo.ipynb")
    with open(folder("huge") / "demo.ipynb", "wb") as handle:
        handle.truncate(300 * 2**20)
    try:
        os.mknod(folder("device") / "demo.ipynb", 0o600 | stat.S_IFCHR, os.makedev(1, 3))
    except OSError:
        (planted.pop("device") / "demo.ipynb").write_bytes(b"{}")  # not creatable here: an unreadable stub
        planted["device"] = course.folder("submitted", "device", ASSIGNMENT)
    f = folder("extra_links")  # an honest stub with links and a FIFO next to it
    f.joinpath("demo.ipynb").write_bytes(_stub(course))
    f.joinpath("solutions").symlink_to(root / "solutions")
    f.joinpath("data.csv").symlink_to(secret)
    os.mkfifo(f / "pipe")
    return planted


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    course = demo_course(tmp_path_factory.mktemp("hostile"))
    secret = course.root / "secret.txt"
    secret.write_bytes(SECRET)
    secret.chmod(0o600)
    cases = corpus()
    build(course, "reference", cases["reference"])
    for name in RUNTIME:
        build(course, name, cases[name])
    planted = _plant(course)
    _other_assignment(course)
    before = _snapshot(_targets(course))
    other = _other_score(course)
    limits = Limits(cell_s=10, notebook_s=40, memory_bytes=1 * 2**30)
    outcomes = grade_class(course, ASSIGNMENT, workers=2, limits=limits, isolate=sandbox.available())
    written = feedback(course, ASSIGNMENT)
    rows = {r["student_id"]: r for r in export.rows(course, [ASSIGNMENT])}
    return course, outcomes, rows, planted, before, other, written


def test_no_submission_is_lost_and_no_point_is_won(graded):
    course, outcomes, rows, planted, *_ = graded
    expected = {"reference", *RUNTIME, *planted}
    assert {o.student for o in outcomes} == set(rows) == expected
    assert rows["reference"]["score"] == 6
    for name in RUNTIME:
        assert rows[name]["score"] == 2, rows[name]  # add is right; nothing else counts
    for name in planted:
        assert rows[name]["score"] == 0, rows[name]
        assert rows[name]["status"] not in ("not graded", "missing")


def test_reasons_say_what_was_wrong(graded):
    rows = graded[2]
    for name in ("abs_link", "rel_link", "secret_link", "fifo", "unix_socket", "hard_link", "device"):
        reason = rows[name]["reason"]
        assert "not a plain file" in reason or "cannot be read" in reason, (name, reason)
    assert "symbolic link" in rows["abs_link"]["reason"] and "FIFO" in rows["fifo"]["reason"]
    assert "socket" in rows["unix_socket"]["reason"] and "hard link" in rows["hard_link"]["reason"]
    assert "too large" in rows["huge"]["reason"]


def test_targets_are_untouched(graded):
    course, before = graded[0], graded[4]
    assert _snapshot(_targets(course)) == before
    assert stat.S_IMODE(os.stat(course.root / "secret.txt").st_mode) == 0o600


def test_other_grades_are_intact(graded):
    course, other = graded[0], graded[5]
    assert _other_score(course) == other == 4


def test_only_graded_notebooks_and_feedback_reach_the_course(graded):
    course, written = graded[0], graded[6]
    solution = course.folder("source", ASSIGNMENT, "demo.ipynb").read_bytes()
    with open(course.root / ".nbgrader" / "gradebook.db", "rb") as handle:
        gradebook_head = handle.read(16)
    for kind, allowed in (("autograded", {"demo.ipynb"}), ("feedback", {"demo.html"})):
        for path in course.folder(kind).rglob("*"):
            info = os.lstat(path)
            assert stat.S_ISDIR(info.st_mode) or (stat.S_ISREG(info.st_mode) and info.st_nlink == 1), path
            if stat.S_ISREG(info.st_mode):
                assert path.name in allowed, path
                data = path.read_bytes()
                assert SECRET not in data and solution not in data and gradebook_head not in data, path
    assert course.folder("feedback", "reference", ASSIGNMENT, "demo.html") in written
    assert course.folder("feedback", "link_secrets", ASSIGNMENT, "demo.html") in written


def _zip(path, entries, links=()):
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in entries.items():
            archive.writestr(name, data)
        for name, target in links:
            info = zipfile.ZipInfo(name)
            info.external_attr = (stat.S_IFLNK | 0o777) << 16
            archive.writestr(info, target)


def test_collect_takes_identity_from_the_instructor_side(tmp_path, capsys):
    course = demo_course(tmp_path / "course")
    secret = tmp_path / "secret.txt"
    secret.write_bytes(SECRET)
    secret.chmod(0o600)
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    stub = _stub(course)
    submit(course, ASSIGNMENT, "kim01", inbox)
    kim01 = course.folder("submitted", "kim01", ASSIGNMENT)
    assert cli(course, "instructor", "collect", ASSIGNMENT, str(inbox), "--add-unknown") == 0
    assert "received 1, refused 0, replaced 0" in capsys.readouterr().out
    kept = (kim01 / "demo.ipynb").read_bytes()
    (inbox / "kim01__00_demo.zip").unlink()

    # mallory's zip names kim01 in its manifest
    forged = json.dumps({"student": "kim01", "assignment": ASSIGNMENT, "timestamp": "2020-01-01T00:00:00+00:00"})
    _zip(inbox / "mallory__00_demo.zip", {"demo.ipynb": b'{"forged": true}', "submission.json": forged})
    _zip(inbox / "linky.zip", {"demo.ipynb": stub}, links=[("data.csv", str(secret))])
    _zip(inbox / "escape.zip", {"../../escape.ipynb": stub})
    _zip(inbox / "ok__00_demo.zip", {"work/demo.ipynb": stub, "work/extra.py": b"print(1)"})
    _zip(inbox / "later__01_devices.zip", {"demo.ipynb": stub})  # another assignment: left alone
    (inbox / "bob.ipynb").symlink_to(secret)
    (inbox / "carol").mkdir()
    (inbox / "carol" / "demo.ipynb").symlink_to(secret)
    (inbox / "dave").mkdir()
    (inbox / "dave" / ASSIGNMENT).symlink_to(course.folder("source", ASSIGNMENT))
    os.mkfifo(inbox / "erin.ipynb")
    os.link(secret, inbox / "frank.ipynb")
    (inbox / "gina").mkdir()
    (inbox / "gina" / "demo.ipynb").write_bytes(stub)
    (inbox / "gina" / "notes.txt").symlink_to(secret)
    outside = tmp_path / "outside" / ASSIGNMENT
    outside.mkdir(parents=True)
    (outside / "demo.ipynb").write_bytes(b"outside")
    course.folder("submitted", "henry").symlink_to(tmp_path / "outside")  # a link where henry's folder goes
    (inbox / "henry.ipynb").write_bytes(stub)

    done = {c.source: c for c in from_folder(course, ASSIGNMENT, inbox, add_unknown=True)}
    refused = {s for s, c in done.items() if c.problem}
    assert refused == {"mallory__00_demo.zip", "linky.zip", "escape.zip", "bob.ipynb", "carol", "dave",
                       "erin.ipynb", "frank.ipynb"}, done
    assert "kim01" in done["mallory__00_demo.zip"].problem and "another student" in done["mallory__00_demo.zip"].problem
    assert "학생" in done["mallory__00_demo.zip"].why.ko
    assert (kim01 / "demo.ipynb").read_bytes() == kept  # never replaced by mallory's
    assert not course.folder("submitted", "mallory").exists()
    assert done["later__01_devices.zip"].ignored and not course.folder("submitted", "later").exists()
    assert sorted(p.name for p in course.folder("submitted", "ok", ASSIGNMENT).iterdir()) == ["demo.ipynb",
                                                                                               "timestamp.txt"]
    assert sorted(p.name for p in course.folder("submitted", "gina", ASSIGNMENT).iterdir()) == ["demo.ipynb",
                                                                                                 "timestamp.txt"]
    assert (outside / "demo.ipynb").read_bytes() == b"outside"  # the link was replaced, not followed
    assert not course.folder("submitted", "henry").is_symlink()
    assert (course.folder("submitted", "henry", ASSIGNMENT) / "demo.ipynb").read_bytes() == stub
    assert secret.read_bytes() == SECRET and stat.S_IMODE(secret.stat().st_mode) == 0o600
    for path in course.folder("submitted").rglob("*"):
        assert not path.is_symlink() or path == course.folder("submitted", "henry"), path
        if path.is_file():
            assert SECRET not in path.read_bytes()
    assert not (tmp_path / "escape.ipynb").exists()
    log = course.root / ".nbgrader" / "collect" / f"{ASSIGNMENT}.jsonl"
    assert "mallory__00_demo.zip" in log.read_text(encoding="utf-8")

    capsys.readouterr()
    assert cli(course, "instructor", "collect", ASSIGNMENT, str(inbox), "--add-unknown") == 1  # refusals: non-zero
    out = capsys.readouterr().out
    assert "refused 8" in out and "replaced 3" in out and "거절 8" in out


def cli(course, *args):
    return main([*args, "--root", str(course.root)])


def test_a_failed_batch_restores_the_gradebook(tmp_path, monkeypatch, capsys):
    from autograder.grading import batch
    course = demo_course(tmp_path / "course")
    build(course, "blank", {})
    _other_assignment(course)

    def broken(*args, **kwargs):
        with Gradebook(course.gradebook_url, course.course_id) as gb:  # a half-written batch
            gb.find_submission(OTHER, "reference").notebooks[0].grades[0].manual_score = 0
            gb.db.commit()
        raise RuntimeError("disk full")

    monkeypatch.setattr(batch, "template", broken)
    with pytest.raises(RuntimeError):
        batch.grade_class(course, ASSIGNMENT, isolate=False)
    assert "restored" in capsys.readouterr().out
    assert _other_score(course) == 4
    assert list((course.root / ".nbgrader" / "backups").glob("gradebook-*.db"))


def test_stale_scratch_folders_are_removed(tmp_path, monkeypatch):
    from autograder.grading import batch
    monkeypatch.setattr(batch.tempfile, "gettempdir", lambda: str(tmp_path))
    dead = tmp_path / "aihw-grade-dead"
    dead.mkdir()
    (dead / batch.OWNER).write_text("999999999 1.0")
    old = tmp_path / "aihw-grade-old"
    old.mkdir()
    os.utime(old, (1, 1))
    alive = tmp_path / "aihw-grade-alive"
    alive.mkdir()
    (alive / batch.OWNER).write_text(batch._owner(os.getpid()))
    batch._remove_stale_scratch()
    assert not dead.exists() and not old.exists() and alive.exists()


@pytest.mark.parametrize("raw, words", [
    ({"nbformat": 5, "nbformat_minor": 0, "cells": [], "metadata": {}}, "format version"),
    ({"nbformat": 4, "nbformat_minor": 99, "cells": [], "metadata": {}}, "newer than this grader"),
    ("{not json", "cannot be read"),
])
def test_intake_gives_one_line_reasons(tmp_path, raw, words):
    from autograder.grading.intake import admit
    path = tmp_path / "demo.ipynb"
    path.write_text(raw if isinstance(raw, str) else json.dumps(raw))
    reason = admit(path)
    assert words in reason.en and "\n" not in reason.en and "\n" not in reason.ko and not path.exists()


def test_intake_refuses_an_old_nbgrader_schema(tmp_path):
    import nbformat
    from autograder.grading.intake import admit
    course = demo_course(tmp_path / "course")
    nb = json.loads(course.folder("release", ASSIGNMENT, "demo.ipynb").read_text())
    for cell in nb["cells"]:
        if "nbgrader" in cell["metadata"]:
            cell["metadata"]["nbgrader"]["schema_version"] = 1
    path = tmp_path / "demo.ipynb"
    path.write_text(json.dumps(nb))
    reason = admit(path)
    assert "schema version 1" in reason.en and "\n" not in reason.en
    v3 = tmp_path / "v3.ipynb"
    v3.write_text(nbformat.writes(nbformat.convert(nbformat.read(str(course.folder("release", ASSIGNMENT, "demo.ipynb")),
                                                                   as_version=4), 3)))
    reason = admit(v3)
    assert reason is None or "\n" not in reason.en


def test_an_exchange_submission_with_a_link_is_refused_at_collect(tmp_path):
    """nbgrader's collect copies what a link in the exchange's inbound points at: such a submission is refused."""
    from autograder.grading import collect
    course = demo_course(tmp_path / "course")
    solution = course.folder("source", ASSIGNMENT, "demo.ipynb")  # what a student would like to submit
    inbound = course.root / ".exchange" / course.course_id / "inbound"
    honest = inbound / f"alice+{ASSIGNMENT}+2026-11-23 10:00:00.000000 UTC+a1"
    linker = inbound / f"mallory+{ASSIGNMENT}+2026-11-23 10:00:00.000000 UTC+b2"
    for folder in (honest, linker):
        folder.mkdir(parents=True)
        (folder / "timestamp.txt").write_text("2026-11-23 10:00:00.000000 UTC")
    shutil.copyfile(course.folder("release", ASSIGNMENT, "demo.ipynb"), honest / "demo.ipynb")
    (linker / "demo.ipynb").symlink_to(solution)
    done = {c.student: c for c in collect.from_exchange(course, ASSIGNMENT, add_unknown=True)}
    assert done["alice"].problem is None and course.folder("submitted", "alice", ASSIGNMENT, "demo.ipynb").is_file()
    # the time is when the exchange folder was made (the instructor's clock), not the one its name states
    from datetime import datetime, timezone
    stamp = course.folder("submitted", "alice", ASSIGNMENT, "timestamp.txt").read_text()
    assert abs((datetime.fromisoformat(stamp) - datetime.now(timezone.utc)).total_seconds()) < 120, stamp
    assert done["mallory"].problem and "link" in done["mallory"].problem
    assert not course.folder("submitted", "mallory", ASSIGNMENT).exists()
