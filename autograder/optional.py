"""Optional parts installed the first time a module needs them, not by the set-up.

An extra of ``pyproject.toml`` (module 07's ``kernels``: Numba and Triton, about 1 GB) is read from the installed
course's metadata; what this Python lacks of it is installed by the set-up's installer (uv where it is, else pip:
:func:`autograder.bootstrap.installer`), one package at a time under a progress bar, after a line that says what
and why. Where nothing may be installed (``COURSE_NO_INSTALL=1``: the grader's sandbox) or an install fails, the
caller learns which part is missing and why, and says so.
"""
from __future__ import annotations

import hashlib
import importlib
import importlib.metadata
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from filelock import FileLock
from packaging.requirements import Requirement

from . import bootstrap
from .i18n import Message, msg
from .progress import progress

DIST = "ai-hardware-course"
NO_INSTALL = "COURSE_NO_INSTALL"


def requirements(extra: str, dist: str = DIST) -> list[Requirement]:
    """The requirements of ``extra`` that apply to this platform, as the installed course declares them."""
    try:
        declared = importlib.metadata.requires(dist) or []
    except importlib.metadata.PackageNotFoundError:
        return []
    found = [Requirement(line) for line in declared]
    wanted = [r for r in found if r.marker is not None and r.marker.evaluate({"extra": extra})
              and not r.marker.evaluate({"extra": ""})]
    for requirement in wanted:
        requirement.marker = None  # evaluated here: an installer would read `extra == ...` as false
    return wanted


def missing(wanted: list[Requirement]) -> list[Requirement]:
    """Those of ``wanted`` not installed here, or installed at a version they exclude."""
    absent = []
    for requirement in wanted:
        try:
            version = importlib.metadata.version(requirement.name)
        except importlib.metadata.PackageNotFoundError:
            absent.append(requirement)
            continue
        if not requirement.specifier.contains(version, prereleases=True):
            absent.append(requirement)
    return absent


def install_one(tool: bootstrap.Installer, requirement: str) -> str | None:
    """Install one requirement with ``tool``; None, or the installer's last words when it failed."""
    try:
        done = subprocess.run([str(a) for a in tool.install(requirement)], capture_output=True, text=True,
                              errors="replace", env=tool.env, timeout=1800)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{type(exc).__name__}: {exc}"
    if done.returncode == 0:
        return None
    lines = (done.stderr or done.stdout).strip().splitlines()
    return lines[-1][:300] if lines else f"exit status {done.returncode}"


def _lock() -> FileLock:
    """One install at a time into this Python (test files side by side import module 07 at once)."""
    key = hashlib.sha256(sys.prefix.encode()).hexdigest()[:16]
    return FileLock(str(Path(tempfile.gettempdir()) / f"ai-hardware-course-install-{key}.lock"))


def ensure(extra: str, why: Message) -> dict[str, Message]:
    """Install what ``extra`` lacks in this Python, saying what and ``why``; {package: why it is still missing}."""
    if not missing(requirements(extra)):
        return {}
    if os.environ.get(NO_INSTALL) == "1":
        return {r.name: msg("optional.not_here", package=r.name) for r in missing(requirements(extra))}
    with _lock():
        wanted = missing(requirements(extra))  # another process may have installed them meanwhile
        if not wanted:
            return {}
        tool = bootstrap.installer(sys.executable, fetch_uv=False)
        print(msg("optional.installing", packages=", ".join(str(r) for r in wanted), why=why, installer=tool.name),
              flush=True)
        failed = {}
        with progress(total=len(wanted), desc=extra, leave=True) as bar:
            for requirement in wanted:
                bar.set_postfix_str(requirement.name)
                problem = install_one(tool, str(requirement))
                if problem:
                    failed[requirement.name] = msg("optional.failed", package=requirement.name, error=problem,
                                                   command=bootstrap.command_line(*tool.install(str(requirement))))
                bar.update()
        importlib.invalidate_caches()
    return failed
