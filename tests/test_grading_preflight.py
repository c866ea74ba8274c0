"""A batch that cannot fail silently: the sandbox program resolved once and launched by that path, one kernel started
before any submission (the preflight), a batch stopped when its kernels do not start, with the evidence, a non-zero
exit and an untouched gradebook; a submission that kills its own kernel never stops the batch; every kernel's stderr
kept in the grading record."""
import json
import os
import shutil
import sqlite3
import sys
from pathlib import Path

import pytest

from autograder.cli import main
from autograder.grading import batch, kernel, preprocessors, sandbox
from autograder.grading.worker import Outcome
from fixtures.grading_course import ASSIGNMENT, build, corpus, demo_course
from fixtures.servers import needs_bwrap

STUDENTS = ["ref", "exit1", "exit2", "exit3"]
FD2 = "aihw-test: written on the kernel's stderr"


def sandbox_flag() -> str:
    return "--require-sandbox" if sandbox.available() else "--no-sandbox"


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    """A class graded once: a reference and three submissions that kill their own kernel (os._exit)."""
    course = demo_course(tmp_path_factory.mktemp("preflight"))
    cases = corpus()
    build(course, "ref", cases["reference"])
    for name in STUDENTS[1:3]:
        build(course, name, cases["os_exit"])
    # sys.stderr.fileno(): the kernel's own stderr (ipykernel forwards what reaches fd 2 in a thread, which
    # os._exit may outrun)
    writes = {**cases["os_exit"]["cells"],
              "stats_solution": f"import os, sys\nos.write(sys.stderr.fileno(), {FD2!r}.encode())\nos._exit(1)"}
    build(course, "exit3", {**cases["os_exit"], "cells": writes})
    return course


def grade(course, *args) -> int:
    return main(["instructor", "grade", ASSIGNMENT, "--root", str(course.root), "--cell-timeout", "30", *args])


def state(course) -> tuple:
    """Everything a grading run writes: the gradebook's rows, the grading records, the autograded files."""
    db = sqlite3.connect(course.root / ".nbgrader" / "gradebook.db")
    try:
        rows = list(db.iterdump())
    finally:
        db.close()
    files = {str(p.relative_to(course.root)): p.read_bytes() for folder in (course.private("records"),
             course.folder("autograded")) if folder.is_dir() for p in sorted(folder.rglob("*")) if p.is_file()}
    return rows, files


@pytest.fixture(scope="module")
def graded(course):
    """The class graded once, through the CLI, with 2 workers."""
    import contextlib
    import io
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = grade(course, "--workers", "2", sandbox_flag())
    assert code == 0, out.getvalue()
    return out.getvalue()


@pytest.fixture
def fresh_resolution():
    """The sandbox program and its probe resolved anew after the test (and before it)."""
    sandbox.binary.cache_clear()
    sandbox.available.cache_clear()
    yield
    sandbox.binary.cache_clear()
    sandbox.available.cache_clear()


def script(path: Path, body: str) -> Path:
    path.write_text("#!/bin/sh\n" + body, encoding="utf-8")
    path.chmod(0o755)
    return path


# ---------------------------------------------------------------- the rules, without a kernel

def test_the_sandbox_program_is_resolved_once_on_the_instructors_path(tmp_path, monkeypatch, fresh_resolution):
    folder = tmp_path / "opt-bin"
    folder.mkdir()
    fake = script(folder / "bwrap", "exit 0\n")
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")
    assert sandbox.binary() == str(fake)
    monkeypatch.setenv("PATH", "/nowhere")
    assert sandbox.binary() == str(fake)  # once: the probe and every launcher use the same path
    cmd = sandbox.prefix([tmp_path], 2**30, [], isolate=True)
    assert cmd.count(str(fake)) == 1 and "bwrap" not in cmd
    assert sandbox.prefix([tmp_path], 2**30, [], isolate=True, bwrap="/x/bwrap").count("/x/bwrap") == 1
    line = sandbox.describe(cmd + [sys.executable, "-m", "ipykernel_launcher", "-f", "k.json"])
    assert line == (f"{sys.executable} (limits) → {fake} (sandbox) → {sys.executable} (limits) → "
                    f"{sys.executable} -m ipykernel_launcher -f k.json")


def outcome(name: str, started: bool, failure: str | None = None) -> Outcome:
    kernel = {"started": started, "stderr": "", "path": "/usr/bin", "command": "python"}
    return Outcome(name, ASSIGNMENT, 0, kernels={"demo": {**kernel, **({"failure": failure} if failure else {})}})


def test_the_batch_stops_only_when_its_kernels_do_not_start():
    def run(*outcomes, total=20):
        health = batch.Health(total)
        for item in outcomes:
            health.check(item)

    died = [outcome(f"d{i}", started=True) for i in range(10)]  # killed their own kernel: it had started
    run(*died)
    run(outcome("a", False, "boom"), outcome("b", False, "boom"), *died)  # one or two: the batch goes on
    run(outcome("a", False, "boom"), outcome("b", False, "other"), outcome("c", False, "boom"))  # not alike
    run(*died[:3], *(outcome(f"f{i}", False, "boom") for i in range(3)))  # kernels started; not most of them
    with pytest.raises(batch.BatchStopped) as stopped:
        run(*(outcome(f"f{i}", False, "boom") for i in range(3)))  # before any started
    assert "3" in str(stopped.value) and "boom" in str(stopped.value) and "17" in str(stopped.value)
    with pytest.raises(batch.BatchStopped):
        run(*died[:2], *(outcome(f"f{i}", False, "boom") for i in range(3)))  # most of them


def test_a_kernels_stderr_is_kept_to_a_bound():
    read, write = os.pipe()
    tail = kernel.StderrTail(read)
    with os.fdopen(write, "wb") as pipe:
        pipe.write(b"x" * (3 * kernel.STDERR_KEPT) + b"\nthe end\n")
    text = tail.text()
    assert text.startswith(f"[{2 * kernel.STDERR_KEPT + 9} bytes before cut]") and text.endswith("the end\n")
    assert len(text) < kernel.STDERR_KEPT + 100


# ---------------------------------------------------------------- a class

def test_kernels_that_die_running_submissions_do_not_stop_the_batch(course, graded):
    assert "Grading 4 submissions: 2 parallel workers." in graded
    from autograder.grading.export import rows
    scores = {r["student_id"]: r["score"] for r in rows(course, [ASSIGNMENT])}
    assert scores == {"ref": 6, "exit1": 2, "exit2": 2, "exit3": 2}, graded
    for student in STUDENTS:
        record = json.loads(course.private("records", ASSIGNMENT, f"{student}.json").read_text(encoding="utf-8"))
        demo = record["kernels"]["demo"]
        assert demo["started"] is True and "failure" not in demo and demo["path"] and demo["command"]
        if student == "exit3":
            assert FD2 in demo["stderr"]  # every kernel's stderr is in the grading record
        if student != "ref":
            assert any("kernel died" in n for n in record["notes"])


def test_bwrap_missing_from_the_kernels_path_is_found_on_the_instructors(course, graded, tmp_path, monkeypatch,
                                                                          capsys, fresh_resolution):
    """bwrap on the instructor's PATH, outside the folders of the kernel's own PATH: the launcher starts it by the
    path the probe found."""
    needs_bwrap("the sandbox preflight tests")
    real = shutil.which("bwrap")
    folder = tmp_path / "opt-bwrap"
    folder.mkdir()
    marker = tmp_path / "launched"
    script(folder / "bwrap", f'echo x >> "{marker}"\nexec "{real}" "$@"\n')
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")
    sandbox.binary.cache_clear()
    sandbox.available.cache_clear()
    assert sandbox.available()
    marker.unlink()
    assert grade(course, "--students", "ref", "--workers", "1", "--require-sandbox") == 0
    assert "6/6" in capsys.readouterr().out
    assert len(marker.read_text().split()) == 2  # the preflight's kernel and the submission's, through the wrapper
    record = json.loads(course.private("records", ASSIGNMENT, "ref.json").read_text(encoding="utf-8"))
    assert str(folder) not in record["kernels"]["demo"]["path"].split(os.pathsep)
    assert f"{folder / 'bwrap'} (sandbox)" in record["kernels"]["demo"]["command"]


def test_a_sandbox_launched_by_name_where_the_kernels_path_lacks_it_stops_before_grading(
        course, graded, monkeypatch, capsys):
    """The issue's failure, reproduced: the launcher asks the kernel's PATH for ``bwrap`` and it is not there."""
    needs_bwrap("the sandbox preflight tests")
    before = state(course)
    monkeypatch.setattr(sandbox, "binary", lambda: "bwrap")
    env = preprocessors.kernel_env
    monkeypatch.setattr(preprocessors, "kernel_env",
                        lambda home, extra: {**env(home, extra), "PATH": os.path.dirname(sys.executable)})
    assert grade(course, "--workers", "1", "--require-sandbox") == 2
    out = capsys.readouterr().out
    assert "Grading did not start" in out and "채점을 시작하지 않았습니다" in out
    assert "aihw: cannot start bwrap" in out and f"PATH: {os.path.dirname(sys.executable)}" in out
    assert "bwrap (sandbox)" in out
    assert state(course) == before


def test_a_sandbox_that_fails_to_start_stops_before_grading(course, graded, tmp_path, monkeypatch, capsys):
    needs_bwrap("the sandbox preflight tests")
    before = state(course)
    fake = script(tmp_path / "bwrap", 'echo "bwrap: setting up uid map: Permission denied" >&2\nexit 1\n')
    monkeypatch.setattr(sandbox, "binary", lambda: str(fake))
    assert grade(course, "--workers", "2", "--require-sandbox") == 2
    out = capsys.readouterr().out
    assert "Grading did not start" in out and "bwrap: setting up uid map: Permission denied" in out
    assert f"{fake} (sandbox)" in out and "The gradebook is untouched" in out
    assert state(course) == before


def test_a_sandbox_that_breaks_during_the_batch_stops_it(course, graded, tmp_path, monkeypatch, capsys):
    """The preflight's kernel starts; then every kernel fails to: the batch stops at the third, nothing merged."""
    needs_bwrap("the sandbox preflight tests")
    before = state(course)
    count = tmp_path / "count"
    fake = script(tmp_path / "bwrap", f'n=$(cat "{count}" 2>/dev/null || echo 0); echo $((n + 1)) > "{count}"\n'
                                      f'[ "$n" = 0 ] && exec "{shutil.which("bwrap")}" "$@"\n'
                                      'echo "bwrap: No permissions to create new namespace" >&2\nexit 1\n')
    monkeypatch.setattr(sandbox, "binary", lambda: str(fake))
    assert grade(course, "--workers", "1", "--require-sandbox") == 2
    out = capsys.readouterr().out
    assert "Grading stopped: 3 of the 3 kernels so far failed to start the same way, and 0 started" in out
    assert "bwrap: No permissions to create new namespace" in out and "1 submissions were not graded" in out
    assert int(count.read_text()) == 4  # the preflight, then three submissions: the fourth was never started
    assert state(course) == before


def test_a_kernel_that_dies_at_once_stops_before_grading(course, graded, tmp_path, monkeypatch, capsys):
    before = state(course)
    spec = tmp_path / "kernels" / "kernels" / "aihw-dies"
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-c", "import sys; print('aihw-test: this kernel exits at once', file=sys.stderr); "
                                       "sys.exit(3)", "-f", "{connection_file}"],
        "display_name": "dies", "language": "python"}), encoding="utf-8")
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "kernels"))
    config = course.root / "nbgrader_config.json"
    config.write_text(json.dumps({"SandboxedExecute": {"kernel_name": "aihw-dies"}}), encoding="utf-8")
    try:
        assert grade(course, "--workers", "1", sandbox_flag()) == 2
    finally:
        config.unlink()
    out = capsys.readouterr().out
    assert "Grading did not start" in out and "Kernel died before replying to kernel_info" in out
    assert "aihw-test: this kernel exits at once" in out
    assert state(course) == before
