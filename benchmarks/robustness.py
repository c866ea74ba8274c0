"""Do the reference solutions get full marks every time, on a quiet machine and on a loaded one?

    .venv/bin/python benchmarks/robustness.py [--runs 5] [--modules 02_gpu_architecture,03_memory_hierarchy]
                                              [--conditions quiet,loaded] [--workers 1] [--student]

Grades every exercise's reference solution (``solutions/NN_*/``) ``--runs`` times with nothing else
running ("quiet") and ``--runs`` times with a busy process spinning on every core ("loaded": one per
``os.cpu_count()``, started and killed by this script). Prints, per exercise and condition,
"reference full marks in K of N runs" and, for each run that lost points, the task and the grader's
verdict. ``--student`` grades the generated student version instead, which must get 0 points every
time. Exit status 0 only when every run had the expected result. Grading goes through the class
pipeline in a scratch course (``autograder.grading.hardware_check``), isolated when bubblewrap works.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

from course_python import REPO, ensure  # the benchmarks folder is first on sys.path

ensure(__file__)

import argparse  # noqa: E402
import contextlib  # noqa: E402
import datetime  # noqa: E402
import io  # noqa: E402
import multiprocessing  # noqa: E402
import platform  # noqa: E402
import signal  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

sys.path.insert(0, str(REPO))
from autograder import hardware  # noqa: E402
from autograder.grading import sandbox  # noqa: E402
from autograder.grading.course import use_venv_tools  # noqa: E402
from autograder.grading.hardware_check import exercise_modules, grade_copies, machine, scratch_course  # noqa: E402

CONDITIONS = ("quiet", "loaded")


def _spin(parent: int) -> None:
    """A busy core until killed (or until this script is gone: never left spinning)."""
    x = 0
    while True:
        for _ in range(1_000_000):
            x = (x * 1103515245 + 12345) & 0xFFFFFFFF
        if os.getppid() != parent:
            return


@contextlib.contextmanager
def cpu_hog(on: bool):
    """One spinning process per core while inside (nothing when ``on`` is False); always killed by pid."""
    procs = []
    try:
        if on:
            context = multiprocessing.get_context("fork" if "fork" in multiprocessing.get_all_start_methods()
                                                  else "spawn")
            for _ in range(os.cpu_count() or 1):
                proc = context.Process(target=_spin, args=(os.getpid(),), daemon=True)
                proc.start()
                procs.append(proc)
        yield [p.pid for p in procs]
    finally:
        for proc in procs:
            if proc.pid is not None and proc.is_alive():
                with contextlib.suppress(ProcessLookupError):
                    os.kill(proc.pid, signal.SIGKILL)
        for proc in procs:
            proc.join(timeout=10)


def _explain(run, student: bool) -> list[str]:
    """For a run with the wrong result: each cell that earned (student) or lost (reference) points, and why."""
    lines = []
    for task in (run.earned if student else run.lost):
        lines.append(f"      {task.name}: {task.score:g}/{task.max_score:g}")
        lines += [f"        {line}" for line in (task.verdict or "-").splitlines()]
    if run.reason or not lines:
        lines.append(f"      {run.status}: {run.reason or '-'}")
    return lines


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--modules", help="comma-separated, e.g. 02_gpu_architecture (default: every exercise)")
    parser.add_argument("--runs", type=int, default=5, help="gradings per exercise and condition (default 5)")
    parser.add_argument("--conditions", default="quiet,loaded", help="quiet, loaded or both (default)")
    parser.add_argument("--workers", type=int, default=1, help="grading workers (default 1: one run at a time)")
    parser.add_argument("--student", action="store_true", help="grade the student version (must get 0 points)")
    args = parser.parse_args(argv)
    known = exercise_modules(REPO)
    modules = args.modules.split(",") if args.modules else known
    conditions = args.conditions.split(",")
    bad = [m for m in modules if m not in known] + [c for c in conditions if c not in CONDITIONS]
    if bad or args.runs < 1:
        parser.error(f"unknown: {', '.join(bad) or '--runs must be >= 1'} (exercises: {', '.join(known)}; "
                     f"conditions: {', '.join(CONDITIONS)})")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # so that the hog's finally runs
    os.environ["COURSE_NO_PROGRESS"] = "1"
    use_venv_tools()
    isolate = sandbox.available() or False
    version = "student" if args.student else "reference"

    print(f"date: {datetime.datetime.now().astimezone().isoformat(timespec='seconds')}")
    print(f"machine: {machine()}")
    print(f"os: {platform.platform()}; python {platform.python_version()}; os.cpu_count() = {os.cpu_count()}")
    print(hardware.describe(hardware.detect()))
    print(f"\nversion: {version}; runs: {args.runs}; conditions: {', '.join(conditions)}; workers: {args.workers}; "
          f"isolated: {isolate}\n", flush=True)

    table: dict[tuple[str, str], tuple[int, float]] = {}
    with tempfile.TemporaryDirectory(prefix="aihw-robust-") as tmp:
        course = scratch_course(Path(tmp), modules)
        for module in modules:
            for condition in conditions:
                began = time.perf_counter()
                with cpu_hog(condition == "loaded"):
                    runs = grade_copies(course, module, args.runs, version, args.workers, isolate, out=io.StringIO())
                seconds = time.perf_counter() - began
                good = [r for r in runs if (r.score == 0 if args.student else r.full)]
                table[module, condition] = (len(good), seconds)
                what = "student version: 0 points" if args.student else "reference full marks"
                print(f"{module} [{condition}]: {what} in {len(good)} of {len(runs)} runs ({seconds:.0f} s)")
                for i, run in enumerate(runs, 1):
                    if run not in good:
                        print(f"  run {i}: {run.score:g}/{run.max_score:g}")
                        print("\n".join(_explain(run, args.student)))
                sys.stdout.flush()

    print("\nsummary (" + ("0 points" if args.student else "full marks") + f" in K of {args.runs} runs)")
    width = max(len(m) for m in modules)
    print(f"| {'exercise':<{width}} | " + " | ".join(f"{c:>10}" for c in conditions) + " |")
    print(f"|{'-' * (width + 2)}|" + "|".join("-" * 12 for _ in conditions) + "|")
    for module in modules:
        cells = [f"{table[module, c][0]}/{args.runs}" + ("" if table[module, c][0] == args.runs else " ✗")
                 for c in conditions]
        print(f"| {module:<{width}} | " + " | ".join(f"{c:>10}" for c in cells) + " |")
    ok = all(k == args.runs for k, _ in table.values())
    print("\nall runs as expected" if ok else "\nSOME RUNS NOT AS EXPECTED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
