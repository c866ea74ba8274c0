"""The instructor's commands end to end on the demo exercise: generate, submit, collect, grade, feedback, export."""
import csv
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile

import nbformat
import pytest

from autograder.cli import main
from autograder.grading import sandbox
from autograder.grading.collect import from_folder
from autograder.grading.course import REPO
from autograder.grading.generate import generate
from autograder.grading.submit import SubmitError, submit
from fixtures.grading_course import ASSIGNMENT, build, corpus, demo_course


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    return demo_course(tmp_path_factory.mktemp("pipeline"))


def cli(course, *args):
    return main([*args, "--root", str(course.root)])


def test_generation_is_reproducible(course, tmp_path):
    again = generate(course, ASSIGNMENT, release_dir=tmp_path)
    first = course.folder("release", ASSIGNMENT, "demo.ipynb").read_text()
    assert (again / "demo.ipynb").read_text() == first
    assert "BEGIN HIDDEN TESTS" not in first and "return a + b" not in first and "YOUR CODE HERE" in first


def test_submit_packages_the_exercise_with_the_learner_id(course, tmp_path):
    path = submit(course, ASSIGNMENT, "kim01", tmp_path)
    assert path.name == "kim01__00_demo.zip"
    with zipfile.ZipFile(path) as archive:
        manifest = json.loads(archive.read("submission.json"))
        assert "demo.ipynb" in archive.namelist()
    assert manifest["student"] == "kim01" and "demo.ipynb" in manifest["files"]


def test_submit_refuses_a_bad_id_and_missing_or_malformed_notebooks(course, tmp_path):
    with pytest.raises(SubmitError, match="letters, digits"):
        submit(course, ASSIGNMENT, "../etc", tmp_path)
    notebook = course.folder("release", ASSIGNMENT, "demo.ipynb")
    files = [course.folder("release", ASSIGNMENT, name) for name in ("demo.ipynb", "demo.ko.ipynb", "demo.en.ipynb")]
    saved = {path: path.read_bytes() for path in files}
    try:
        notebook.write_text("{broken")  # changed last: the one sent
        with pytest.raises(SubmitError) as info:
            submit(course, ASSIGNMENT, "kim01", tmp_path)
        assert "읽을 수 없어" in str(info.value) and "cannot be read" in str(info.value)
        for path in files:  # a language file alone would be sent as the notebook
            path.unlink()
        with pytest.raises(SubmitError, match="is missing"):
            submit(course, ASSIGNMENT, "kim01", tmp_path)
    finally:
        for path, data in saved.items():
            path.write_bytes(data)


def test_collect_reads_zips_notebooks_and_folders_and_refuses_bad_entries(course, tmp_path):
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    submit(course, ASSIGNMENT, "zipper", inbox)
    (inbox / "single.ipynb").write_bytes(course.folder("source", ASSIGNMENT, "demo.ipynb").read_bytes())
    (inbox / "foldered").mkdir()
    (inbox / "foldered" / "demo.ipynb").write_bytes(course.folder("release", ASSIGNMENT, "demo.ipynb").read_bytes())
    with zipfile.ZipFile(inbox / "evil.zip", "w") as archive:
        archive.writestr("../../escape.ipynb", "{}")
    (inbox / "bad id!.ipynb").write_text("{}")
    done = {c.source: c for c in from_folder(course, ASSIGNMENT, inbox, add_unknown=True)}
    assert done["evil.zip"].problem and "unsafe" in done["evil.zip"].problem
    assert done["bad id!.ipynb"].problem
    for student in ("zipper", "single", "foldered"):
        folder = course.folder("submitted", student, ASSIGNMENT)
        assert (folder / "demo.ipynb").exists() and (folder / "timestamp.txt").exists()
    assert not (tmp_path / "escape.ipynb").exists()


def test_the_class_is_graded_with_feedback_and_export(course, tmp_path, capsys):
    """collect -> grade (2 workers) -> feedback -> export, through the CLI."""
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    cases = corpus()
    (inbox / "ref.ipynb").write_bytes(course.folder("source", ASSIGNMENT, "demo.ipynb").read_bytes())
    submit(course, ASSIGNMENT, "blank", inbox)
    nb = nbformat.read(str(course.folder("release", ASSIGNMENT, "demo.ipynb")), as_version=4)
    for cell in nb.cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        if grade_id in cases["partial_stats"]["cells"]:
            cell.source = cases["partial_stats"]["cells"][grade_id]
    nbformat.write(nb, str(inbox / "part.ipynb"))
    assert cli(course, "instructor", "collect", ASSIGNMENT, str(inbox), "--add-unknown") == 0
    flag = "--require-sandbox" if sandbox.available() else "--no-sandbox"
    assert cli(course, "instructor", "grade", ASSIGNMENT, "--students", "ref,blank,part", "--workers", "2",
               "--cell-timeout", "20", flag) == 0
    summary = capsys.readouterr().out
    assert "6/6" in summary and "4.5/6" in summary and "0/6" in summary

    assert cli(course, "instructor", "feedback", ASSIGNMENT) == 0
    html = course.folder("feedback", "part", ASSIGNMENT, "demo.html").read_text(encoding="utf-8")
    assert "hidden=True" not in html and "BEGIN HIDDEN TESTS" not in html  # hidden test code is not shown
    assert "Mean and maximum" in html and "평균과 최댓값" in html  # its messages are
    assert "vnd.aihw.answers" not in html

    out = tmp_path / "grades.csv"
    assert cli(course, "instructor", "export", "--to", str(out)) == 0
    rows = {r["student_id"]: r for r in csv.DictReader(out.open(encoding="utf-8"))}
    assert float(rows["ref"]["score"]) == 6 and float(rows["part"]["score"]) == 4.5 and float(rows["blank"]["score"]) == 0
    assert rows["ref"]["graded_on"] and rows["ref"]["status"] == "graded"


def test_nbgrader_validate_works_on_the_exercise(course):
    """Learners can run ``nbgrader validate`` with the repository's configuration."""
    run = subprocess.run([sys.executable, "-m", "nbgrader", "validate",
                          str(course.folder("source", ASSIGNMENT, "demo.ipynb"))],
                         capture_output=True, text=True, cwd=REPO, timeout=300)
    assert "Success! Your notebook passes all the tests." in run.stdout, run.stdout + run.stderr


def test_release_puts_the_student_version_in_the_exchange(course):
    assert cli(course, "instructor", "release", ASSIGNMENT) == 0
    released = course.root / ".exchange" / course.course_id / "outbound" / ASSIGNMENT / "demo.ipynb"
    assert released.read_text() == course.folder("release", ASSIGNMENT, "demo.ipynb").read_text()


def test_without_isolation_answers_are_still_rescored(tmp_path, capsys):
    """--no-sandbox: a notice, answers visible to the kernel, but the verdicts still come from the records."""
    from autograder.grading import export
    from autograder.grading.batch import grade_class
    from fixtures.grading_course import build
    course = demo_course(tmp_path / "open")
    cases = corpus()
    for name in ("reference", "fake_check", "liar_int"):
        build(course, name, cases[name])
    grade_class(course, ASSIGNMENT, workers=2, isolate=False)
    assert "WITHOUT isolation" in capsys.readouterr().out
    scores = {r["student_id"]: r["score"] for r in export.rows(course, [ASSIGNMENT])}
    assert scores == {"reference": 6, "fake_check": 0, "liar_int": 0}
    assert all(r["isolated"] is False for r in export.rows(course, [ASSIGNMENT]))


def test_submit_asks_for_the_student_id(course, tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("COURSE_STUDENT_ID", raising=False)
    assert cli(course, "submit", ASSIGNMENT, "--to", str(tmp_path)) == 2
    out = capsys.readouterr().out
    assert "--student" in out and "학생 id" in out


def test_ctrl_c_stops_the_batch_in_one_line_and_leaves_no_process(tmp_path):
    """An instructor's Ctrl-C: one bilingual line (how many were graded, that a rerun goes on), no traceback, and
    every process the grader started (workers in their own sessions, kernels) is gone with it."""
    import signal
    import time

    import psutil

    course = demo_course(tmp_path / "course")
    slow = {"cells": {"add_solution": "import time\ntime.sleep(120)\ndef add(a, b):\n    return a + b"}}
    for student in ("s1", "s2", "s3"):
        build(course, student, slow)
    # The grader's run folders (in each kernel's and sandbox's command line) go in a folder of this test only:
    # a kernel another test or developer starts from the same environment meanwhile is not this grader's.
    scratch = tempfile.mkdtemp(prefix="aihw-ctrlc-")  # short: the referee's Unix socket path has ~100 bytes
    env = {**os.environ, "TMPDIR": scratch}
    proc = subprocess.Popen([sys.executable, "-m", "autograder", "instructor", "grade", ASSIGNMENT, "--root",
                             str(course.root), "--workers", "2"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True, env=env)
    grader = psutil.Process(proc.pid)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not _kernels(grader):
        time.sleep(0.5)
    started = _alive(grader)
    assert _kernels(grader), "no kernel started within 120 s"
    os.kill(proc.pid, signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode != 0 and "Traceback" not in out + err, out + err
    assert "Interrupted: 0 of 3" in out + err and "중단됨" in out + err, out + err
    psutil.wait_procs(started, timeout=30)
    assert not [p for p in started if p.is_running() and p.status() != psutil.STATUS_ZOMBIE], \
        "processes of the grader outlived it"
    time.sleep(1)  # a kernel launched as the workers were stopped: its sandbox must be gone too
    try:
        assert not _kernels_anywhere(scratch), "a kernel (or its sandbox) of the grader outlived it"
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _kernels_anywhere(scratch: str) -> list[int]:
    """Every process on the machine that is a kernel, or the sandbox around one, with its run folder in ``scratch``."""
    import psutil
    found = []
    for process in psutil.process_iter(["cmdline"]):
        line = " ".join(process.info["cmdline"] or [])
        if scratch in line and "ipykernel" in line:
            found.append(process.pid)
    return found


def _alive(process) -> list:
    import psutil
    try:
        return process.children(recursive=True)
    except psutil.NoSuchProcess:
        return []


def _kernels(process) -> list:
    """The kernels among a process's descendants (a process may end while it is looked at)."""
    import psutil
    found = []
    for child in _alive(process):
        try:
            if "ipykernel" in " ".join(child.cmdline()):
                found.append(child)
        except (psutil.NoSuchProcess, psutil.ZombieProcess, psutil.AccessDenied):
            continue
    return found


def test_stopping_the_workers_kills_what_they_started():
    """A process a worker started (a kernel's sandbox being launched) dies with the worker, even one that would not
    die with its parent by itself."""
    import os
    from concurrent.futures import ProcessPoolExecutor

    import psutil

    from autograder.grading import batch

    pool = ProcessPoolExecutor(1, mp_context=batch._context(), initializer=batch._worker_setup)
    try:
        child = psutil.Process(pool.submit(os.spawnvp, os.P_NOWAIT, "sleep", ["sleep", "300"]).result(timeout=120))
        batch._stop_workers(pool)
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
    gone, alive = psutil.wait_procs([child], timeout=30)
    assert not [p for p in alive if p.status() != psutil.STATUS_ZOMBIE], "the worker's child outlived it"
