"""Isolation of a submission's kernel: the deny-by-default bwrap command, what a sandboxed process sees and
can start, the limits (cgroups as root, resource limits elsewhere) and the watchdog."""
import json
import os
import secrets
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from autograder.grading import sandbox
from autograder.grading.course import REPO
from autograder.grading.kernel import kernel_env
from autograder.grading.watchdog import Watchdog
from fixtures import servers


@pytest.fixture
def bwrap():
    servers.needs_bwrap("the sandbox tests")


needs_bwrap = pytest.mark.usefixtures("bwrap")
needs_cgroups = pytest.mark.skipif(not sandbox.cgroups_usable(),
                                   reason="needs root and writable cgroup v1 memory and pids hierarchies")


# The Python installation and environment the kernel runs (bound wherever they live, /tmp included).
PYTHON = {Path(p).resolve() for p in (sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix)} | {
    Path(sys.executable).resolve().parent.parent}


def _in_python(path: Path) -> bool:
    return any(path == p or p in path.parents for p in PYTHON)


def _pairs(args, flag):
    return [(args[i + 1], args[i + 2]) for i, a in enumerate(args) if a == flag]


def test_command_binds_only_what_the_kernel_needs(tmp_path):
    work = tmp_path / "run"
    work.mkdir()
    args = sandbox.command(sandbox.isolation([REPO], [work]), sandbox.Quota(memory_bytes=2**30))
    binds = _pairs(args, "--ro-bind") + _pairs(args, "--bind")
    sources = {Path(src) for src, _ in binds}
    assert Path("/") not in sources and REPO not in sources and REPO / "solutions" not in sources
    assert not any(str(s).startswith(("/run", "/var", "/tmp/", "/home", "/proc", "/sys/fs")) and s != work.resolve()
                   and REPO not in s.parents and not _in_python(s) for s in sources)  # a checkout or a venv under
    # /tmp: the package and the Python environment only
    assert {Path(sys.prefix).resolve(), sandbox.PACKAGE} <= sources
    inside = [sandbox.PACKAGE, Path(sys.prefix).resolve()]
    assert all(any(s == i or i in s.parents for i in inside)
               for s in sources if REPO in s.parents)  # of the repository: the package and the venv only
    answers = str(sandbox.answers_folder()[0])
    assert args[args.index(answers) - 1] == "--tmpfs" and ["--remount-ro", answers] == args[
        args.index(answers) + 1: args.index(answers) + 3]
    for folder in ("/tmp", "/dev/shm"):
        at = args.index(folder)
        assert args[at - 3: at] == ["--size", str(2**30), "--tmpfs"]
    assert args[-5:] == ["--bind", str(work.resolve()), str(work.resolve()), "--remount-ro", "/"]
    for flag in ("--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-user", "--die-with-parent",
                 "--new-session"):
        assert flag in args
    assert args[args.index("--cap-drop") + 1] == "ALL" and args[args.index("--uid") + 1] == "1000"


def test_a_private_folder_inside_an_exposed_one_is_masked(tmp_path):
    inside = Path(sys.prefix) / "share"
    iso = sandbox.isolation([inside, tmp_path / "missing"], [])
    assert inside.resolve() in iso.mask and sandbox.answers_folder()[0] in iso.mask
    assert tmp_path / "missing" not in iso.mask


def test_course_no_sandbox_turns_the_sandbox_off(monkeypatch):
    monkeypatch.setenv("COURSE_NO_SANDBOX", "1")
    sandbox.available.cache_clear()
    try:
        assert sandbox.available() is False
    finally:
        monkeypatch.delenv("COURSE_NO_SANDBOX")
        sandbox.available.cache_clear()


PROBE = r"""
import json, os, socket, sys
repo, work, port, unix, abstract, secret = sys.argv[1:7]
out = {"uid": os.getuid(), "root": sorted(os.listdir("/")), "repo": sorted(os.listdir(repo)), "tmp": os.listdir("/tmp")}
out["masked"] = os.listdir(os.path.join(repo, "course_answers")) if os.path.isdir(os.path.join(repo, "course_answers")) else []
open(os.path.join(work, "ok"), "w").write("1")
def attempt(name, action):
    try:
        out[name] = repr(action())
    except (OSError, ImportError) as exc:
        out[name] = type(exc).__name__
attempt("write_repo", lambda: open(os.path.join(repo, "pwned"), "w").write("x"))
attempt("answers", lambda: __import__("course_answers.m00_demo"))
attempt("net", lambda: socket.create_connection(("127.0.0.1", int(port)), timeout=2))
attempt("unix", lambda: socket.socket(socket.AF_UNIX).connect(unix))
attempt("abstract", lambda: socket.socket(socket.AF_UNIX).connect("\0" + abstract))
attempt("secret", lambda: open(secret).read())
attempt("shadow", lambda: open("/etc/shadow").read())
attempt("root_home", lambda: [n for n in os.listdir("/root") if n != ".pyenv"])
attempt("run", lambda: os.listdir("/run"))
attempt("cgroup", lambda: os.listdir("/sys/fs/cgroup"))
caps = [l for l in open("/proc/self/status") if l.startswith("CapEff")][0].split()[1]
st = os.statvfs("/dev/shm")
out.update(caps=caps, shm=st.f_blocks * st.f_frsize, pid=os.getpid())
print(json.dumps(out))
"""


@needs_bwrap
def test_a_sandboxed_process_sees_no_course_checkout_socket_or_network(tmp_path):
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    unix, abstract = socket.socket(socket.AF_UNIX), socket.socket(socket.AF_UNIX)
    unix.bind(str(tmp_path / "host.sock"))
    abstract_name = f"aihw-test-{secrets.token_hex(4)}"
    abstract.bind("\0" + abstract_name)
    unix.listen()
    abstract.listen()
    other = tmp_path / "other-checkout" / "solutions"
    other.mkdir(parents=True)
    (other / "secret.txt").write_text("the answers")
    work = tmp_path / "work"
    work.mkdir()
    cmd = sandbox.command(sandbox.isolation([REPO], [work]), sandbox.Quota(memory_bytes=2**28))
    done = subprocess.run(cmd + [sys.executable, "-c", PROBE, str(REPO), str(work), str(server.getsockname()[1]),
                                 str(tmp_path / "host.sock"), abstract_name, str(other / "secret.txt")],
                          capture_output=True, text=True, timeout=60)
    for s in (server, unix, abstract):
        s.close()
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["uid"] == 1000 and int(out["caps"], 16) == 0 and out["pid"] < 10
    assert set(out["repo"]) <= {".venv", "autograder", "course_answers"}  # what Python needs, and the answers' mask
    iso = sandbox.isolation([REPO], [work])
    tops = {p.parts[1] for p in iso.expose + iso.writable}
    assert set(out["root"]) <= {"usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32", "etc", "proc", "dev", "tmp",
                                "sys", "opt"} | tops
    mounted = [p for p in (work.resolve(), REPO, *PYTHON) if Path("/tmp") in p.parents]  # what it mounts back
    assert set(out["tmp"]) <= {p.relative_to("/tmp").parts[0] for p in mounted}  # none of the host's /tmp
    # a checkout under /tmp sits in the sandbox's own /tmp (a tmpfs): a write there succeeds but never reaches the
    # host, which the last line checks
    blocked = ("answers", "net", "unix", "abstract", "secret", "shadow", "root_home", "run", "cgroup")
    for name in blocked + (() if Path("/tmp") in REPO.parents else ("write_repo",)):
        assert out[name] in ("OSError", "PermissionError", "FileNotFoundError", "ConnectionRefusedError",
                             "ModuleNotFoundError", "ImportError", "TimeoutError", "[]"), (name, out[name])
    assert out["shm"] == 2**28 and out["masked"] == []  # the instructor's answers: an empty folder
    assert (work / "ok").exists() and not (REPO / "pwned").exists()


STARTS = r"""
import getpass, json, locale, os, time
t = time.time()
out = {"user": getpass.getuser(), "locale": locale.setlocale(locale.LC_ALL, ""), "cpus": os.cpu_count()}
import numpy, ipykernel, zmq
out["numpy"] = float(numpy.arange(4).sum())
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
plt.plot([1, 2])
plt.savefig("plot.png")
out["fonts"] = os.path.exists(os.path.join(os.environ["MPLCONFIGDIR"]))
try:
    import torch
    out["torch"] = float(torch.ones(3).sum()) + (0 if not torch.cuda.is_available() else 100)
except ImportError:
    out["torch"] = None
out["seconds"] = time.time() - t
print(json.dumps(out))
"""


@needs_bwrap
def test_kernel_libraries_start_in_the_sandbox_under_its_limits(tmp_path):
    """What a kernel imports (ipykernel, zmq, numpy, matplotlib with its font cache, torch) works inside."""
    home = tmp_path / "home"
    home.mkdir()
    cmd = sandbox.prefix([tmp_path], 2 * 2**30, [REPO])
    done = subprocess.run(cmd + [sys.executable, "-c", STARTS], capture_output=True, text=True, timeout=180,
                          cwd=tmp_path, env=kernel_env(str(home), {}))
    sandbox.Confinement.from_command(cmd).release()
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout)
    assert out["user"] == "learner" and out["numpy"] == 6.0 and out["fonts"] and out["cpus"] >= 1
    assert out["torch"] in (None, 3.0, 103.0)
    assert (tmp_path / "plot.png").exists()


FLOOD = r"""
import os, sys, time, resource
what = sys.argv[1]
try:
    if what == "fork":
        n = 0
        while True:
            if os.fork() == 0:
                os.close(1)
                os.close(2)
                time.sleep(30)
                os._exit(0)
            n += 1
    if what == "file":
        with open(sys.argv[2], "wb") as handle:
            for _ in range(64):
                handle.write(b"x" * 2**24)
    if what == "shm":
        for i in range(40):
            with open(f"/dev/shm/f{i}", "wb") as handle:
                for _ in range(8):
                    handle.write(b"x" * 2**24)
    print("not stopped")
except OSError as exc:
    print(type(exc).__name__, n if what == "fork" else "", flush=True)
"""


def _flood(tmp_path, what, isolate=True, memory=2**30):
    cmd = sandbox.prefix([tmp_path], memory, [REPO], isolate=isolate)
    confinement = sandbox.Confinement.from_command(cmd)
    try:
        done = subprocess.run(cmd + [sys.executable, "-c", FLOOD, what, str(tmp_path / "big")], capture_output=True,
                              text=True, timeout=120, cwd=tmp_path)
        return done.stdout.split(), confinement, done
    finally:
        confinement.release()


@needs_bwrap
def test_resource_limits_without_cgroups_stop_floods_in_the_sandbox(tmp_path, monkeypatch):
    """The path of an unprivileged grader: RLIMIT_NPROC in the sandbox's user namespace, FSIZE, tmpfs size."""
    monkeypatch.setattr(sandbox, "cgroups_usable", lambda: False)
    if os.geteuid() != 0:  # the kernel does not apply RLIMIT_NPROC to root's processes (the pids cgroup does)
        out, confinement, _ = _flood(tmp_path, "fork")
        assert out[0] == "BlockingIOError" and 100 < int(out[1]) < sandbox.Quota().processes and not confinement.cgroups
    out, _, _ = _flood(tmp_path, "file")
    assert out == ["OSError"] and (tmp_path / "big").stat().st_size == sandbox.Quota().file_bytes
    out, _, _ = _flood(tmp_path, "shm", memory=2**28)
    assert out[0] == "OSError"  # ENOSPC: /dev/shm is a fixed-size memory file system


@needs_cgroups
def test_cgroups_hold_the_kernel_before_it_runs_and_are_removed(tmp_path):
    cmd = sandbox.prefix([tmp_path], 2**30, isolate=False)
    confinement = sandbox.Confinement.from_command(cmd)
    done = subprocess.run(cmd + [sys.executable, "-c", "print(open('/proc/self/cgroup').read())"],
                          capture_output=True, text=True, timeout=60)
    name = Path(confinement.cgroups["memory"]).name
    assert done.stdout.count(name) == 2  # memory and pids, joined before the command started
    limit = int(Path(confinement.cgroups["memory"], "memory.limit_in_bytes").read_text())
    assert limit == sandbox.Quota(memory_bytes=2**30).hard_memory_bytes
    confinement.release()
    assert not any(Path(f).exists() for f in confinement.cgroups.values())


@needs_cgroups
def test_pids_cgroup_stops_a_fork_flood_without_the_sandbox(tmp_path):
    out, confinement, _ = _flood(tmp_path, "fork", isolate=False)
    assert out[0] == "BlockingIOError" and int(out[1]) < sandbox.Quota().processes and confinement.final["pids_refused"] > 0


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


def _watched(tmp_path, code, monkeypatch, **quota):
    monkeypatch.setattr(sandbox, "cgroups_usable", lambda: False)
    cmd = sandbox.prefix([tmp_path], 2**30, isolate=False)
    confinement = sandbox.Confinement.from_command(cmd)
    confinement = sandbox.Confinement(sandbox.Quota(**{**confinement.quota.__dict__, **quota}),
                                      folders=confinement.folders)
    process = subprocess.Popen(cmd + [sys.executable, "-c", code], cwd=tmp_path)
    sandbox.register(process.pid, confinement)
    with Watchdog(lambda: process.pid, memory_bytes=2**30, seconds=60) as dog:
        process.wait(timeout=60)
    return dog


def test_watchdog_stops_a_disk_flood_in_the_writable_folders(tmp_path, monkeypatch):
    code = "import time\nfor i in range(100):\n    open(f'f{i}', 'wb').write(b'x' * 2**22)\ntime.sleep(30)"
    dog = _watched(tmp_path, code, monkeypatch, disk_bytes=64 * 2**20)
    assert dog.reason == "disk"


def test_watchdog_stops_too_many_processes(tmp_path, monkeypatch):
    code = "import os, time\nfor _ in range(60):\n    if os.fork() == 0:\n        time.sleep(30)\n        os._exit(0)\ntime.sleep(30)"
    dog = _watched(tmp_path, code, monkeypatch, processes=40)
    assert dog.reason == "processes"


def test_watchdog_names_a_fork_flood_that_runs_out_of_memory_first(tmp_path, monkeypatch):
    code = ("import os, time\nr, w = os.pipe()\nfor _ in range(80):\n    if os.fork() == 0:\n        os.close(w)\n"
            "        os.read(r, 1)\n        x = b'x' * 8_000_000\n        time.sleep(30)\n        os._exit(0)\n"
            "os.close(w)\ntime.sleep(30)")  # every child exists before any allocates
    monkeypatch.setattr(sandbox, "cgroups_usable", lambda: False)
    process = subprocess.Popen([sys.executable, "-c", code], cwd=tmp_path)
    with Watchdog(lambda: process.pid, memory_bytes=400 * 2**20, seconds=60) as dog:
        process.wait(timeout=60)
    assert dog.reason == "processes" and dog.peak_processes >= 64


def test_mechanism_says_how_the_kernel_is_held(monkeypatch):
    monkeypatch.setattr(sandbox, "cgroups_usable", lambda: True)
    assert "cgroup v1" in sandbox.mechanism(True) and "bubblewrap" in sandbox.mechanism(True)
    monkeypatch.setattr(sandbox, "cgroups_usable", lambda: False)
    assert ("RLIMIT_NPROC" in sandbox.mechanism(True)) == (os.geteuid() != 0)
    assert "no isolation" in sandbox.mechanism(False) and "watchdog only" in sandbox.mechanism(False)


def test_without_bwrap_the_grader_says_so(monkeypatch, capsys):
    from autograder.grading import batch
    monkeypatch.setattr(sandbox, "available", lambda: False)
    assert batch._isolation(None, sys.stdout) is False
    out = capsys.readouterr().out
    assert "WITHOUT isolation" in out and "격리 없이" in out
    with pytest.raises(batch.GradingError, match="bubblewrap"):
        batch._isolation(True, sys.stdout)
