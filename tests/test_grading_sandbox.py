"""Isolation of a submission's kernel: the bwrap command, what a sandboxed process sees, the limits, the device lock."""
import os
import socket
import subprocess
import sys
import threading
import time

import pytest

from autograder.checks import core
from autograder.grading import sandbox
from autograder.grading.course import REPO
from autograder.grading.watchdog import Watchdog
from autograder.i18n import Message

needs_bwrap = pytest.mark.skipif(not sandbox.available(),
                                 reason="bubblewrap is not usable here (Debian/Ubuntu: apt-get install bubblewrap)")


def test_command_hides_the_course_before_exposing_python_and_masks_the_answers(tmp_path):
    iso = sandbox.isolation([tmp_path / "missing", REPO], [tmp_path])
    args = sandbox.command(iso)
    hide = args.index(str(REPO)) - 1
    assert args[hide] == "--tmpfs"
    assert args.index("--ro-bind", hide) > hide  # exposures come after the hidden folders
    assert args[args.index(str(sandbox.PACKAGE / "answers")) - 1] == "--tmpfs"
    assert args[-3:] == ["--bind", str(tmp_path.resolve()), str(tmp_path.resolve())]
    for flag in ("--unshare-net", "--unshare-pid", "--die-with-parent", "--new-session"):
        assert flag in args
    assert str(tmp_path / "missing") not in args


PROBE = r"""
import json, os, socket, sys
out = {"uid": os.getuid(), "repo": os.listdir(sys.argv[1]), "writable": sys.argv[2]}
open(os.path.join(sys.argv[2], "ok"), "w").write("1")
try:
    open(os.path.join(sys.argv[1], "pwned"), "w").write("x"); out["write_repo"] = "persisted?"
except OSError as exc:
    out["write_repo"] = type(exc).__name__
import autograder.checks
try:
    import autograder.answers.m00
    out["answers"] = "visible"
except ImportError:
    out["answers"] = "hidden"
try:
    socket.create_connection(("127.0.0.1", int(sys.argv[3])), timeout=2); out["net"] = "reached"
except OSError:
    out["net"] = "blocked"
print(json.dumps(out))
"""


@needs_bwrap
def test_a_sandboxed_process_sees_no_course_answers_or_network(tmp_path):
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    work = tmp_path / "work"
    work.mkdir()
    cmd = sandbox.command(sandbox.isolation([REPO], [work]))
    done = subprocess.run(cmd + [sys.executable, "-c", PROBE, str(REPO), str(work), str(server.getsockname()[1])],
                          capture_output=True, text=True, timeout=60)
    server.close()
    import json
    out = json.loads(done.stdout)
    assert out["uid"] == 1000
    assert set(out["repo"]) <= {".venv", "autograder"}  # only what Python needs, mounted back
    assert out["answers"] == "hidden" and out["net"] == "blocked"
    assert (work / "ok").exists() and not (REPO / "pwned").exists()


def test_watchdog_kills_a_process_tree_past_its_memory():
    hog = subprocess.Popen([sys.executable, "-c", "x = b'x' * 400_000_000\nimport time\ntime.sleep(30)"])
    with Watchdog(lambda: hog.pid, memory_bytes=150 * 2**20, seconds=60) as dog:
        hog.wait(timeout=30)
    assert dog.reason == "memory" and hog.returncode != 0


def test_watchdog_stops_a_process_past_its_time():
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    start = time.monotonic()
    with Watchdog(lambda: sleeper.pid, memory_bytes=2**40, seconds=0.5) as dog:
        sleeper.wait(timeout=30)
    assert dog.reason == "time" and time.monotonic() - start < 20


def test_measurement_tasks_wait_for_the_device_lock(tmp_path, monkeypatch):
    import fcntl
    lock = tmp_path / "device.lock"
    monkeypatch.setenv("COURSE_DEVICE_LOCK", str(lock))
    task = core.Task(title=Message("t", "t"), answer=lambda f, c: c, score=lambda c, a: core.Part(True, Message("", "")),
                     measurement=True)
    entered = threading.Event()

    def measure():
        with core.device_lock(task):
            entered.set()

    with open(lock, "a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)  # another worker is measuring
        thread = threading.Thread(target=measure)
        thread.start()
        assert not entered.wait(0.3)
        fcntl.flock(held, fcntl.LOCK_UN)
    assert entered.wait(5)
    thread.join()


def test_other_tasks_do_not_take_the_lock(tmp_path, monkeypatch):
    monkeypatch.setenv("COURSE_DEVICE_LOCK", str(tmp_path / "absent" / "lock"))  # would fail to open
    task = core.Task(title=Message("t", "t"), answer=lambda f, c: c, score=lambda c, a: core.Part(True, Message("", "")))
    with core.device_lock(task):
        pass


def test_without_bwrap_the_grader_says_so(monkeypatch, capsys):
    from autograder.grading import batch
    monkeypatch.setattr(sandbox, "available", lambda: False)
    assert batch._isolation(None, sys.stdout) is False
    out = capsys.readouterr().out
    assert "WITHOUT isolation" in out and "격리 없이" in out
    with pytest.raises(batch.GradingError, match="bubblewrap"):
        batch._isolation(True, sys.stdout)
