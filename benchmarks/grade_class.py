"""Grade a synthetic class sequentially with plain ``nbgrader autograde``, with the parallel command, and on Dask.

    python3 benchmarks/grade_class.py [--students 40] [--workers N] [--runs 3] [--no-dask]

Run from any Python: without the course installed it re-runs itself with ``.venv``'s Python
(made by ``python3 -m autograder start``).

The class is N submissions of the demo exercise (tests/fixtures/course, no timing): a mix of
correct, partly correct and blank answers. Each run prints both wall times, the speedup (target on
2 cores: >= 1.6), and the overhead per submission over executing the notebook alone (nbclient, no
grading); the summary gives the median of the runs. The parallel run isolates kernels with
bubblewrap when available. With Dask installed the same class is also graded through a scheduler
and N one-thread workers started here on 127.0.0.1 (``--scheduler``), and the Dask/pool ratio is
printed (target: within 15%). Worker-seconds per submission (wall time x workers / submissions: what one
core spends on each) feed the scaling model in docs/instructor.md.
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from course_python import REPO, ensure  # the benchmarks folder is first on sys.path

ensure(__file__)
sys.path[:0] = [str(REPO), str(REPO / "tests")]  # the course's package and the test fixtures, from any folder

from autograder.grading.batch import grade_class  # noqa: E402
from autograder.grading.course import Course, use_venv_tools  # noqa: E402
from fixtures.grading_course import ASSIGNMENT, build, corpus, demo_course  # noqa: E402

MIX = ("all_correct", "partial_stats", "hard_coded", "blank")


def make_class(root: Path, students: int) -> Course:
    """A course in ``root`` (with the repository's nbgrader config) and ``students`` submissions."""
    root.mkdir(parents=True)
    shutil.copy(REPO / "nbgrader_config.py", root / "nbgrader_config.py")  # plain nbgrader reads it from cwd
    course = demo_course(root)
    cases = corpus()
    for i in range(students):
        build(course, f"s{i:03d}", cases[MIX[i % len(MIX)]])
    return course


def execute_alone(course: Course, repeats: int = 3) -> float:
    """Seconds to execute one submission with nbclient (kernel start included), no grading."""
    import nbclient
    import nbformat
    path = course.folder("submitted", "s000", ASSIGNMENT, "demo.ipynb")
    start = time.perf_counter()
    for _ in range(repeats):
        nb = nbformat.read(str(path), as_version=4)
        nbclient.NotebookClient(nb, timeout=300, allow_errors=True, resources={"metadata": {"path": str(path.parent)}}).execute()
    return (time.perf_counter() - start) / repeats


class LocalCluster:
    """A ``dask scheduler`` and ``workers`` one-thread ``dask worker`` processes on 127.0.0.1 (stopped by pid)."""

    def __init__(self, workers: int, folder: Path):
        self.workers, self.folder, self.processes = workers, folder, []

    def __enter__(self) -> str:
        import json
        dask = Path(sys.executable).parent / "dask"
        env = {**os.environ, "DASK_DISTRIBUTED__SCHEDULER__WORKER_SATURATION": "1.0"}
        start = lambda *a: self.processes.append(subprocess.Popen(  # noqa: E731
            [str(dask), *a], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True))
        start("scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
              "--scheduler-file", str(self.folder / "scheduler.json"))
        deadline = time.monotonic() + 60
        while not (self.folder / "scheduler.json").exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        time.sleep(0.5)
        address = json.loads((self.folder / "scheduler.json").read_text())["address"]
        for _ in range(self.workers):
            start("worker", address, "--nthreads", "1", "--host", "127.0.0.1", "--no-dashboard",
                  "--preload", "autograder.grading.distributed")  # as docs/instructor.md starts them
        from distributed import Client
        with Client(address, timeout=60, set_as_default=False) as client:
            client.wait_for_workers(self.workers, timeout=60)
        return address

    def __exit__(self, *exc):
        import signal
        for process in reversed(self.processes):
            try:
                os.killpg(process.pid, signal.SIGTERM)
                process.wait(timeout=20)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                try:
                    os.killpg(process.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass


def one_run(students: int, workers: int, scheduler: str | None, tmp: Path) -> dict:
    plain = make_class(tmp / "plain", students)
    ours = make_class(tmp / "parallel", students)
    alone = execute_alone(plain)

    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "nbgrader", "autograde", ASSIGNMENT, "--force"], cwd=plain.root,
                   check=True, capture_output=True)
    sequential = time.perf_counter() - start

    start = time.perf_counter()
    grade_class(ours, ASSIGNMENT, workers=workers, out=sys.stderr)
    parallel = time.perf_counter() - start
    result = {"alone": alone, "sequential": sequential, "parallel": parallel}
    if scheduler:
        remote = make_class(tmp / "dask", students)
        start = time.perf_counter()
        grade_class(remote, ASSIGNMENT, scheduler=scheduler, out=sys.stderr)
        result["dask"] = time.perf_counter() - start
    return result


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=40)
    parser.add_argument("--workers", type=int, default=os.cpu_count())
    parser.add_argument("--runs", type=int, default=3, help="runs; the summary gives their median (default 3)")
    parser.add_argument("--no-dask", action="store_true", help="skip the Dask run")
    args = parser.parse_args(argv)
    use_venv_tools()
    n, w = args.students, args.workers
    try:
        import distributed  # noqa: F401
        dask = not args.no_dask
    except ImportError:
        dask = False
    runs = []
    with tempfile.TemporaryDirectory() as tmp:
        cluster = LocalCluster(w, Path(tmp)) if dask else None
        scheduler = cluster.__enter__() if cluster else None
        try:
            for i in range(max(1, args.runs)):
                r = one_run(n, w, scheduler, Path(tmp) / f"run{i}")
                runs.append(r)
                print(f"run {i + 1}: alone {r['alone']:.2f} s, sequential nbgrader {r['sequential']:.1f} s, "
                      f"parallel {r['parallel']:.1f} s (speedup {r['sequential'] / r['parallel']:.2f}x, overhead "
                      f"{r['parallel'] * w / n - r['alone']:+.2f} s)"
                      + (f", dask {r['dask']:.1f} s ({r['dask'] / r['parallel']:.2f}x the pool)" if "dask" in r else ""),
                      flush=True)
        finally:
            if cluster:
                cluster.__exit__(None, None, None)

    med = lambda key: statistics.median(r[key] for r in runs)  # noqa: E731
    alone, sequential, parallel = med("alone"), med("sequential"), med("parallel")
    print(f"students: {n}, workers: {w}, cores: {os.cpu_count()}, runs: {len(runs)} (medians)")
    print(f"execute one notebook alone (nbclient): {alone:.2f} s")
    print(f"plain nbgrader autograde, sequential: {sequential:.1f} s ({sequential / n:.2f} s per submission, "
          f"overhead {sequential / n - alone:+.2f} s)")
    print(f"parallel, isolated, re-scored:       {parallel:.1f} s ({parallel / n:.2f} s per submission; "
          f"worker time {parallel * w / n:.2f} s, overhead {parallel * w / n - alone:+.2f} s)")
    print(f"speedup: {statistics.median(r['sequential'] / r['parallel'] for r in runs):.2f}x")
    if dask:
        print(f"dask, {w} one-thread workers on 127.0.0.1: {med('dask'):.1f} s "
              f"({statistics.median(r['dask'] / r['parallel'] for r in runs):.2f}x the local pool)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
