"""The bubblewrap command line that isolates one submission's kernel.

Inside: the whole file system read-only; empty folders over the course, the
repository, home directories and the instructor's private files; the Python
environment and the ``autograder`` package visible again, minus its reference
answers (``autograder/answers``); writable only the submission's own folder, the
kernel's run folder and the device lock; no network (the kernel talks to the
grader over Unix sockets in the run folder), its own PID namespace (nothing
outlives the kernel), an unprivileged uid (1000) and a new session (no
terminal to type into).
"""
from __future__ import annotations

import glob
import shutil
import subprocess
import sys
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import autograder

PACKAGE = Path(autograder.__file__).resolve().parent
DEVICES = ("/dev/nvidia*", "/dev/dri", "/dev/kfd")  # GPUs (NVIDIA, ROCm) stay usable for measurements


@dataclass(frozen=True)
class Isolation:
    """What a sandboxed kernel may see and write (absolute paths)."""

    hide: tuple[Path, ...]
    expose: tuple[Path, ...]
    mask: tuple[Path, ...]
    writable: tuple[Path, ...]


@lru_cache(maxsize=1)
def available() -> bool:
    """True if bubblewrap is installed and can create its namespaces here."""
    if shutil.which("bwrap") is None:
        return False
    probe = ["bwrap", "--ro-bind", "/", "/", "--unshare-user", "--unshare-net", "--unshare-pid", "true"]
    return subprocess.run(probe, capture_output=True).returncode == 0


def isolation(private: list[Path], writable: list[Path]) -> Isolation:
    """Hide ``private`` (course root, exchange, scratch space) and the usual secrets; keep Python usable."""
    hide = {*private, PACKAGE.parent, Path.home(), Path("/root"), Path("/home")}
    expose = {Path(sys.prefix), Path(sys.base_prefix), Path(sys.exec_prefix), PACKAGE}
    return Isolation(hide=_existing(hide), expose=_existing(expose), mask=(PACKAGE / "answers",),
                     writable=tuple(Path(p).resolve() for p in writable))


def command(iso: Isolation) -> list[str]:
    """The bwrap argument list to put before the kernel's own command."""
    args = ["bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp",
            "--tmpfs", "/dev/shm", "--unshare-user", "--unshare-ipc", "--unshare-pid", "--unshare-net",
            "--unshare-uts", "--unshare-cgroup-try", "--hostname", "grading", "--uid", "1000", "--gid", "1000",
            "--die-with-parent", "--new-session", "--unsetenv", "JPY_PARENT_PID"]
    for pattern in DEVICES:
        for device in sorted(glob.glob(pattern)):
            args += ["--dev-bind", device, device]
    for path in iso.hide:
        args += ["--tmpfs", str(path)]
    for path in iso.expose:
        args += ["--ro-bind", str(path), str(path)]
    for path in iso.mask:
        args += ["--tmpfs", str(path)]
    for path in iso.writable:
        args += ["--bind", str(path), str(path)]
    return args


def _existing(paths) -> tuple[Path, ...]:
    """Resolved existing paths, parents before children (bwrap mounts in order)."""
    found = {Path(p).resolve() for p in paths if Path(p).exists()}
    return tuple(sorted(found, key=lambda p: (len(p.parts), str(p))))
