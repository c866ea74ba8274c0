"""The tampering and broken-submission corpus (tests/grading_corpus/cases.yaml), graded as one class in parallel.

Cases marked ``isolation: true`` are attacks only the sandbox stops: where bubblewrap is not usable (or
``COURSE_NO_SANDBOX=1``, as CI's second corpus run) they are not even built or run, and are reported as
skipped (under CI=true a bubblewrap that is not usable fails them: fixtures.servers.needs_bwrap). Run as root,
one more test grades the corpus again as an unprivileged user (no cgroups there: the resource-limit path), in a
subprocess.
"""
import csv
import glob
import os
import pwd
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import unicodedata
from pathlib import Path

import pytest
from nbgrader.api import Gradebook

from autograder.grading import export, sandbox
from autograder.grading.batch import grade_class
from autograder.grading.course import REPO
from autograder.grading.worker import Limits
from fixtures.accounts import blocked_ancestors, python_namespace
from fixtures.grading_course import ASSIGNMENT, build, corpus, demo_course
from fixtures.servers import needs_bwrap

CASES = corpus()
ISOLATED = sandbox.available()
GRADED = {name: case for name, case in CASES.items() if ISOLATED or not case.get("isolation")}
SECRET = "AIHW-OTHER-CHECKOUT-" + secrets.token_hex(8)  # in another checkout of the course; must leak nowhere
MARKER = "aihw-left-" + secrets.token_hex(6)  # `{marker}`: names what a submission leaves in its work folder
REFUSED = {name for name, case in GRADED.items() if case.get("refused")}  # refused at collect: never graded
USER = "aihw-grader"  # the unprivileged account of test_corpus_as_an_unprivileged_user
AS_USER = "AIHW_CORPUS_AS_USER"  # set in that subprocess


class HostSockets:
    """A Unix socket in a world-accessible folder and an abstract one, both listening; records connections."""

    def __init__(self):
        self.folder = Path(tempfile.mkdtemp(prefix="aihw-host-"))
        self.folder.chmod(0o755)
        self.path, self.abstract = str(self.folder / "host.sock"), f"aihw-abstract-{secrets.token_hex(6)}"
        self.servers, self.connections = [], []
        for address in (self.path, "\0" + self.abstract):
            server = socket.socket(socket.AF_UNIX)
            server.bind(address)
            server.listen()
            server.settimeout(0.2)
            self.servers.append(server)
        os.chmod(self.path, 0o777)
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._accept, args=(s,), daemon=True) for s in self.servers]
        for thread in self._threads:
            thread.start()

    def _accept(self, server):
        while not self._stop.is_set():
            try:
                self.connections.append(server.accept()[0])
            except OSError:
                pass

    def close(self):
        self._stop.set()
        for thread in self._threads:
            thread.join()
        for server in self.servers:
            server.close()
        shutil.rmtree(self.folder, ignore_errors=True)


def other_checkout() -> Path:
    """Another checkout of the course, readable by everyone, with a secret next to its solutions."""
    folder = Path(tempfile.mkdtemp(prefix="aihw-other-checkout-"))
    shutil.copytree(Path(__file__).parent / "fixtures" / "course" / "solutions", folder / "solutions")
    (folder / "solutions" / "00_demo" / "secret.txt").write_text(SECRET)
    for path in [folder, *folder.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    return folder


def _placed(case: dict, places: dict[str, str]) -> dict:
    cells = {}
    for grade_id, source in (case.get("cells") or {}).items():
        for key, value in places.items():
            source = source.replace(key, value)
        cells[grade_id] = source
    return {**case, "cells": cells} if "cells" in case else case


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """Every case this machine can run as one student; one parallel batch; the export rows by student."""
    course = demo_course(tmp_path_factory.mktemp("corpus"))
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    host, other = HostSockets(), other_checkout()
    places = {"{other}": str(other), "{socket}": host.path, "{abstract}": host.abstract, "{marker}": MARKER}
    try:
        for name, case in GRADED.items():
            build(course, name, _placed(case, places), port=server.getsockname()[1])
        # Room for an honest notebook on a busy machine (the kernel's start counts against the notebook's limit,
        # its first imports against a cell's); the cases that loop or sleep forever still end at these limits.
        limits = Limits(cell_s=20, notebook_s=120, memory_bytes=1 * 2**30)
        outcomes = grade_class(course, ASSIGNMENT, workers=2, limits=limits, isolate=ISOLATED)
    finally:
        server.close()
        host.close()
        shutil.rmtree(other, ignore_errors=True)
    rows = {row["student_id"]: row for row in export.rows(course, [ASSIGNMENT])}
    return course, outcomes, rows, host.connections


@pytest.mark.parametrize("name", sorted(CASES))
def test_case_gets_its_score(graded, name):
    case = CASES[name]
    if name not in GRADED:
        needs_bwrap(f"the corpus case {name} (only the sandbox stops it; not run)")
    row = graded[2][name]
    assert row["score"] == pytest.approx(case["score"]), (case["about"], row)
    if "reason" in case:
        assert case["reason"] in row["reason"], row


def test_nothing_is_lost(graded):
    """Every submission has exactly one row with a status, and the gradebook agrees with the outcomes."""
    course, outcomes, rows, _ = graded
    assert sorted(rows) == sorted(GRADED) and [o.student for o in outcomes] == sorted(set(GRADED) - REFUSED)
    assert all(row["status"] not in ("not graded", "missing") for row in rows.values())
    assert all(row["status"] == "refused" for name, row in rows.items() if name in REFUSED)
    with Gradebook(course.gradebook_url, course.course_id) as gb:
        assert {s.student.id for s in gb.find_assignment(ASSIGNMENT).submissions} == set(GRADED) - REFUSED


def test_nothing_is_left_behind(graded):
    """What submissions left in their work folders (a folder without permissions too) is gone after the batch."""
    assert not glob.glob(os.path.join(tempfile.gettempdir(), "aihw-*", "work", MARKER + "*"))


def test_what_submissions_wrote_reaches_no_person_unneutralised(graded, tmp_path):
    """The CSV and the terminal summary: no control character acts, no cell is a spreadsheet formula."""
    course, _, rows, _ = graded
    path = tmp_path / "grades.csv"
    export.write(course, path, [ASSIGNMENT])
    text = path.read_bytes().decode("utf-8").replace("\r\n", "")
    assert not [c for c in text + export.summary(list(rows.values())).replace("\n", "")
                if unicodedata.category(c) == "Cc"]
    with open(path, encoding="utf-8", newline="") as handle:
        for row in csv.DictReader(handle):
            assert not any(row[k].startswith(("=", "+", "-", "@")) for k in export.COLUMNS if isinstance(row[k], str)
                           and not k.endswith("score") and k != "late_penalty"), row


def test_nothing_leaks_from_the_machine(graded):
    """The other checkout's secret is in no output, record or note; no host socket was reached."""
    course, outcomes, _, connections = graded
    assert not connections
    assert not any(SECRET in str(o.notes) + str(o.error) for o in outcomes)
    for path in course.root.rglob("*"):
        if path.is_file() and not path.is_symlink():
            assert SECRET.encode() not in path.read_bytes(), path


def test_submission_cannot_touch_the_course(graded):
    needs_bwrap("the sandbox's protection of the course")
    course = graded[0]
    assert not (course.root / "pwned.txt").exists()
    with Gradebook(course.gradebook_url, course.course_id) as gb:
        submissions = gb.find_assignment(ASSIGNMENT).submissions
        assert all(g.manual_score is None for s in submissions for nb in s.notebooks for g in nb.grades)


@pytest.mark.skipif(os.environ.get(AS_USER) == "1", reason="this is the unprivileged run")
@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0 or not shutil.which("runuser")
                    or not shutil.which("useradd") or not ISOLATED,
                    reason="needs root (to make an unprivileged user), runuser, useradd and bubblewrap")
def test_corpus_as_an_unprivileged_user(tmp_path):
    """The whole corpus and the exercise corpus (test_grading_exercise_corpus.py), graded by an ordinary account:
    no cgroups, so resource limits and the watchdog."""
    try:
        user = pwd.getpwnam(USER)
    except KeyError:
        subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", USER], check=True)
        user = pwd.getpwnam(USER)
    home = Path(tempfile.mkdtemp(prefix="aihw-grader-home-"))
    os.chown(home, user.pw_uid, user.pw_gid)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home), AS_USER: "1", "MPLBACKEND": "Agg",
           "COURSE_NO_PROGRESS": "1", "COURSE_CACHE_DIR": str(home / "cache"), "PYTHONDONTWRITEBYTECODE": "1",
           "LANG": os.environ.get("LANG", "C.UTF-8"), "TMPDIR": str(home)}
    pytest_cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "addopts=",
                  f"--rootdir={REPO}", "--basetemp", str(home / "pytest"), str(Path(__file__)),
                  str(Path(__file__).with_name("test_grading_exercise_corpus.py"))]
    run = ["runuser", "-u", USER, "--", "env", "-i", *[f"{k}={v}" for k, v in env.items()], *pytest_cmd]
    blocked = blocked_ancestors(user, [Path(sys.executable), Path(sys.prefix), Path(sys.base_prefix), REPO])
    if blocked:
        # The interpreter lives under a folder the user cannot enter (pyenv under /root): in a private mount
        # namespace, that folder is replaced by an empty one holding only what Python needs, read-only.
        run = [*python_namespace(blocked, home), *run]
    try:
        done = subprocess.run(run, cwd=str(REPO), capture_output=True, text=True, timeout=2400)
    finally:
        shutil.rmtree(home, ignore_errors=True)
    assert done.returncode == 0, (done.stdout + done.stderr)[-6000:]
    assert " passed" in done.stdout and "failed" not in done.stdout, done.stdout[-3000:]
