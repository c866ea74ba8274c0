"""How long the README's first command takes, from a fresh clone to JupyterLab, with uv and with pip, cold and warm.

    python3 benchmarks/setup_time.py [--installers uv,pip] [--source .] [--timeout 1200]

For each installer: a new, empty cache folder (``UV_CACHE_DIR`` and ``PIP_CACHE_DIR`` point at it), then two fresh
clones of the checkout's committed state (``git clone``), each timed from ``python3 -m autograder start
--no-browser`` to the moment JupyterLab says where it is serving: the first is the cold run (empty cache), the
second the warm one (the cache the first filled). ``COURSE_INSTALLER=pip`` makes the set-up install with pip
(:func:`autograder.bootstrap.installer`). The runs take turns (uv cold, pip cold, uv warm, pip warm) and each row
says the load average before it, so that a busy machine is seen. Standard library only; the clones and caches are
removed at the end.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
READY = re.compile(r"https?://[^/\s]+:\d+/")  # an address JupyterLab serves at: the server is up


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_time(source: Path, work: Path, installer: str, cache: Path, timeout: float) -> tuple[float, str, str]:
    """Seconds from ``python3 -m autograder start`` in a fresh clone to JupyterLab's address, the set-up's
    ``[course]`` line about the installer, and when each ``[course]`` line came (where the time went)."""
    clone = Path(tempfile.mkdtemp(prefix="clone-", dir=work))
    subprocess.run(["git", "clone", "-q", str(source), str(clone)], check=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VIRTUAL_ENV", "PYTHON", "UV_CACHE", "PIP_CACHE"))}
    env.update(UV_CACHE_DIR=str(cache / "uv"), PIP_CACHE_DIR=str(cache / "pip"), COURSE_LANG="en",
               JUPYTER_RUNTIME_DIR=str(clone / ".runtime"))
    env.pop("COURSE_INSTALLER", None)
    if installer == "pip":
        env["COURSE_INSTALLER"] = "pip"
    began = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "autograder", "start", "--no-browser", f"--port={free_port()}"],
                            cwd=clone, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            errors="replace", start_new_session=True)
    said, lines, marks = "", [], []
    try:
        for line in proc.stdout:
            lines.append(line)
            if line.startswith("[course]"):
                marks.append(f"{time.perf_counter() - began:.0f} s {' '.join(line.split()[1:3])}")
                if " uv" in line or " pip" in line:
                    said = line.strip()
            if READY.search(line):
                return time.perf_counter() - began, said, "; ".join(marks)
            if time.perf_counter() - began > timeout:
                break
        raise RuntimeError(f"{installer}: JupyterLab did not start:\n{''.join(lines[-30:])}")
    finally:
        stop_group(proc)
        shutil.rmtree(clone, ignore_errors=True)


def stop_group(proc: subprocess.Popen, grace: float = 10) -> None:
    """End the run's process group, JupyterLab included: SIGTERM, then SIGKILL to whatever is left after ``grace``
    seconds (a JupyterLab still starting up may not act on SIGTERM)."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            break
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline:
            proc.poll()  # the leader reaped: a zombie still counts as in the group
            try:
                os.killpg(proc.pid, 0)  # anyone left in the group?
            except ProcessLookupError:
                break
            time.sleep(0.2)
        else:
            continue
        break
    proc.wait()
    proc.stdout.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--installers", default="uv,pip")
    parser.add_argument("--source", type=Path, default=REPO, help="the checkout to clone (its committed state)")
    parser.add_argument("--timeout", type=float, default=1200, help="seconds one run may take")
    args = parser.parse_args()
    installers = args.installers.split(",")
    work = Path(tempfile.mkdtemp(prefix="setup-time-"))
    caches = {name: work / f"cache-{name}" for name in installers}
    times: dict[str, dict[str, float]] = {name: {} for name in installers}
    print(f"{os.cpu_count()} cores; fresh clones of {args.source} (HEAD {git_head(args.source)})", flush=True)
    try:
        for state in ("cold", "warm"):
            for name in installers:
                load = os.getloadavg()[0]
                seconds, said, marks = start_time(args.source, work, name, caches[name], args.timeout)
                times[name][state] = seconds
                print(f"{name:>4} {state}: {seconds:6.1f} s  (load average before: {load:.1f}; {said})\n"
                      f"      [course] lines at: {marks}", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("\ninstaller   cold (s)   warm (s)")
    for name in installers:
        print(f"{name:>9}   {times[name].get('cold', float('nan')):8.1f}   {times[name].get('warm', float('nan')):8.1f}")
    return 0


def git_head(source: Path) -> str:
    done = subprocess.run(["git", "-C", str(source), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    return done.stdout.strip() or "?"


if __name__ == "__main__":
    raise SystemExit(main())
