"""Do the reference solutions get full marks every time, on a quiet machine and on a loaded one?

    .venv/bin/python benchmarks/robustness.py [--runs 5] [--modules 02_gpu_architecture,03_memory_hierarchy]
                                              [--conditions quiet,loaded,oversubscribed] [--workers 1]
                                              [--student] [--measurement [--repeat 20]]

Grades every exercise's reference solution (each record with an exercise, ``layout.modules``) ``--runs`` times
per condition, each condition's load started and killed (by pid) by this script: "quiet" (nothing else running), "loaded"
(a busy process spinning on every core: one per ``os.cpu_count()``), "oversubscribed" (four spinning
processes per core and one copying arrays four times the last-level cache in a loop: memory bandwidth).
Prints, per exercise and condition, "reference full marks in K of N runs" and, for each run that lost
points, the task and the grader's verdict. ``--student`` grades the generated student version instead,
which must get 0 points every time. ``--measurement`` grades a copy that keeps only the test cells of
measurement tasks (``hardware_check.measurements_only``; exercises without one are left out) and counts
per task: "m02.measure [oversubscribed]: 20 of 20"; with ``--repeat K`` each graded copy grades each of those
checks K times in a row in its one kernel (a kernel start and one run of the solution cells for K gradings: runs x K
gradings a task). Exit status 0 only when every grading had the expected result. Grading goes through the class pipeline in a scratch course (``autograder.grading.hardware_check``),
isolated when bubblewrap works.
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

import nbformat  # noqa: E402

sys.path.insert(0, str(REPO))
from autograder import hardware, layout  # noqa: E402
from autograder.grading import sandbox  # noqa: E402
from autograder.grading.course import use_venv_tools  # noqa: E402
from autograder.grading.hardware_check import (  # noqa: E402
    grade_copies, machine, measurement_tasks, scratch_course)
from autograder.grading.worker import Limits  # noqa: E402

CONDITIONS = {"quiet": (0, False), "loaded": (1, False), "oversubscribed": (4, True)}  # spinners per core, copier
COPIES = 4  # the copier's arrays, in last-level caches each


def _own_session() -> None:
    """Run as a program of its own: Linux schedules each session as a group (autogroup), and the programs that make
    a machine busy are not in the grader's session (a spinner there would take the referee's share, not the
    kernel's, which bubblewrap puts in a session of its own)."""
    with contextlib.suppress(OSError):
        os.setsid()


def _spin(parent: int) -> None:
    """A busy core until killed (or until this script is gone: never left spinning), in a session of its own."""
    _own_session()
    x = 0
    while True:
        for _ in range(1_000_000):
            x = (x * 1103515245 + 12345) & 0xFFFFFFFF
        if os.getppid() != parent:
            return


def _copy(parent: int, nbytes: int) -> None:
    """Memory traffic until killed (or orphaned): one array of ``nbytes`` copied into another, again and again, in a
    session of its own."""
    _own_session()
    import numpy as np
    source = np.ones(nbytes // 8)
    target = np.empty_like(source)
    while os.getppid() == parent:
        np.copyto(target, source)


def copy_bytes() -> int:
    """The copier's array: ``COPIES`` last-level caches, within a sixteenth of the memory available now."""
    import psutil
    from autograder.harness import cpu_last_level_cache
    return min(COPIES * cpu_last_level_cache(), psutil.virtual_memory().available // 16)


@contextlib.contextmanager
def cpu_hog(condition: str):
    """The condition's load while inside (``CONDITIONS``: spinning processes per core, a memory copier);
    always killed by pid."""
    per_core, copier = CONDITIONS[condition]
    procs = []
    try:
        context = multiprocessing.get_context("fork" if "fork" in multiprocessing.get_all_start_methods()
                                              else "spawn")
        targets = [(_spin, (os.getpid(),))] * (per_core * (os.cpu_count() or 1))
        targets += [(_copy, (os.getpid(), copy_bytes()))] if copier else []
        for target, args in targets:
            proc = context.Process(target=target, args=args, daemon=True)
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


def measured(module: str) -> list[str]:
    """The measurement tasks that ``module``'s reference solution checks, in notebook order."""
    found = []
    for cell in nbformat.read(str(layout.exercise(module, "solutions", REPO)), as_version=4).cells:
        if cell.metadata.get("nbgrader", {}).get("grade"):
            found += [t for t in measurement_tasks(cell.source) if t not in found]
    return found


def gradings(runs, task_id: str, student: bool) -> list[tuple[int, object, bool]]:
    """Every grading of ``task_id`` (each test cell that calls it, in each run): (run number, the cell's result or
    None where the run graded no such cell, whether it got what it should: full marks, or 0 points for the student
    version)."""
    out = []
    for i, run in enumerate(runs, 1):
        cells = [t for t in run.tasks if task_id in t.tasks]
        out += [(i, t, (t.score == 0) if student else t.full) for t in cells] or [(i, None, False)]
    return out


def _explain_grading(run, cell) -> list[str]:
    """For a grading with the wrong result: its cell's points and verdict, and the run's status."""
    lines = []
    if cell is not None:
        lines.append(f"      {cell.name}: {cell.score:g}/{cell.max_score:g}")
        lines += [f"        {line}" for line in (cell.verdict or "-").splitlines()]
    if run.reason or not lines:
        lines.append(f"      {run.status}: {run.reason or '-'}")
    return lines


def _stop(*_) -> None:
    """SIGTERM: exit through the hog's ``finally``, which a second SIGTERM must not cut short."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    sys.exit(143)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--modules", help="comma-separated, e.g. 02_gpu_architecture (default: every exercise)")
    parser.add_argument("--runs", type=int, default=5, help="gradings per exercise and condition (default 5)")
    parser.add_argument("--conditions", default="quiet,loaded",
                        help=f"comma-separated, of {', '.join(CONDITIONS)} (default: quiet,loaded)")
    parser.add_argument("--workers", type=int, default=1, help="grading workers (default 1: one run at a time)")
    parser.add_argument("--student", action="store_true", help="grade the student version (must get 0 points)")
    parser.add_argument("--measurement", action="store_true",
                        help="only the test cells of measurement tasks; counted per task")
    parser.add_argument("--repeat", type=int, default=1,
                        help="with --measurement: each check K times in a row in each graded copy (default 1)")
    args = parser.parse_args(argv)
    known = [m.id for m in layout.modules(REPO, "exercise")]
    modules = args.modules.split(",") if args.modules else known
    conditions = args.conditions.split(",")
    bad = [m for m in modules if m not in known] + [c for c in conditions if c not in CONDITIONS]
    if bad or args.runs < 1:
        parser.error(f"unknown: {', '.join(bad) or '--runs must be >= 1'} (exercises: {', '.join(known)}; "
                     f"conditions: {', '.join(CONDITIONS)})")
    if args.repeat < 1 or (args.repeat > 1 and not args.measurement):
        parser.error("--repeat K needs K >= 1, and K > 1 needs --measurement")
    signal.signal(signal.SIGTERM, _stop)
    os.environ["COURSE_NO_PROGRESS"] = "1"
    use_venv_tools()
    isolate = sandbox.available() or False
    version = "student" if args.student else "reference"

    print(f"date: {datetime.datetime.now().astimezone().isoformat(timespec='seconds')}")
    print(f"machine: {machine()}")
    print(f"os: {platform.platform()}; python {platform.python_version()}; os.cpu_count() = {os.cpu_count()}")
    print(hardware.describe(hardware.detect()))
    print(f"\nversion: {version}; runs: {args.runs}; repeat: {args.repeat}; conditions: {', '.join(conditions)}; "
          f"workers: {args.workers}; isolated: {isolate}\n", flush=True)

    tasks = {m: measured(m) for m in modules} if args.measurement else {m: [m] for m in modules}
    for module in [m for m in modules if not tasks[m]]:
        print(f"{module}: no measurement task, left out")
        modules.remove(module)
    if not modules:
        parser.error("no exercise left to grade")
    rows = [row for m in modules for row in tasks[m]]
    table: dict[tuple[str, str], tuple[int, int]] = {}
    limits = Limits(notebook_s=max(Limits.notebook_s, 600.0 * args.repeat))  # a busy machine: minutes per check
    what = "student version: 0 points" if args.student else "reference full marks"
    with tempfile.TemporaryDirectory(prefix="aihw-robust-") as tmp:
        course = scratch_course(Path(tmp), modules, measurements=args.measurement, repeat=args.repeat)
        for module in modules:
            for condition in conditions:
                began = time.perf_counter()
                with cpu_hog(condition):
                    runs = grade_copies(course, module, args.runs, version, args.workers, isolate, out=io.StringIO(),
                                        limits=limits)
                seconds = time.perf_counter() - began
                took = f"({seconds:.0f} s, {seconds / len(runs):.0f} s a run)"
                if not args.measurement:
                    good = [(r.score == 0 if args.student else r.full) for r in runs]
                    table[module, condition] = sum(good), len(runs)
                    print(f"{module} [{condition}]: {what} in {sum(good)} of {len(runs)} runs {took}")
                    for i, (run, ok) in enumerate(zip(runs, good), 1):
                        if not ok:
                            print(f"  run {i}: {run.score:g}/{run.max_score:g}")
                            print("\n".join(_explain(run, args.student)))
                for task_id in tasks[module] if args.measurement else ():
                    done = gradings(runs, task_id, args.student)
                    table[task_id, condition] = sum(ok for *_, ok in done), len(done)
                    print(f"{task_id} [{condition}]: {sum(ok for *_, ok in done)} of {len(done)} {took}")
                    for i, cell, ok in done:
                        if not ok:
                            print(f"  run {i}:")
                            print("\n".join(_explain_grading(runs[i - 1], cell)))
                sys.stdout.flush()

    print(f"\nsummary ({what} in K of N gradings)")
    width = max([len(r) for r in rows] + [8])
    print(f"| {'task' if args.measurement else 'exercise':<{width}} | " + " | ".join(f"{c:>14}" for c in conditions)
          + " |")
    print(f"|{'-' * (width + 2)}|" + "|".join("-" * 16 for _ in conditions) + "|")
    for row in rows:
        cells = [f"{table[row, c][0]}/{table[row, c][1]}" + ("" if table[row, c][0] == table[row, c][1] else " ✗")
                 for c in conditions]
        print(f"| {row:<{width}} | " + " | ".join(f"{c:>14}" for c in cells) + " |")
    ok = all(k == n for k, n in table.values())
    print("\nall runs as expected" if ok else "\nSOME RUNS NOT AS EXPECTED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
