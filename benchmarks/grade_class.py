"""Grade a synthetic class sequentially with plain ``nbgrader autograde`` and with the parallel command.

    python3 benchmarks/grade_class.py [--students 40] [--workers N]

Run from any Python: without the course installed it re-runs itself with ``.venv``'s Python
(made by ``python3 -m autograder start``).

The class is N submissions of the demo exercise (tests/fixtures/course, no timing): a mix of
correct, partly correct and blank answers. Prints both wall times, the speedup (target on
2 cores: >= 1.6), and the overhead per submission over executing the notebook alone
(nbclient, no grading). The parallel run isolates kernels with bubblewrap when available.
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
VENV_PYTHON = REPO / ".venv" / ("Scripts/python.exe" if os.name == "nt" else "bin/python")

try:  # run by a Python without the course installed (python3 benchmarks/grade_class.py): use the venv's
    import nbgrader  # noqa: F401
except ImportError:
    if VENV_PYTHON.exists() and Path(sys.prefix).resolve() != (REPO / ".venv").resolve():
        os.execv(str(VENV_PYTHON), [str(VENV_PYTHON), str(Path(__file__).resolve()), *sys.argv[1:]])
    sys.exit("The course is not installed for this Python. Run `python3 -m autograder start` (creates .venv), "
             f"then `{VENV_PYTHON.relative_to(REPO)} benchmarks/grade_class.py`.\n"
             "이 Python에는 과정이 설치되어 있지 않습니다. `python3 -m autograder start`(.venv 생성) 후 "
             f"`{VENV_PYTHON.relative_to(REPO)} benchmarks/grade_class.py`를 실행하세요.")
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


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=40)
    parser.add_argument("--workers", type=int, default=os.cpu_count())
    args = parser.parse_args(argv)
    use_venv_tools()
    with tempfile.TemporaryDirectory() as tmp:
        plain = make_class(Path(tmp) / "plain", args.students)
        ours = make_class(Path(tmp) / "parallel", args.students)
        alone = execute_alone(plain)

        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "nbgrader", "autograde", ASSIGNMENT, "--force"], cwd=plain.root,
                       check=True, capture_output=True)
        sequential = time.perf_counter() - start

        start = time.perf_counter()
        grade_class(ours, ASSIGNMENT, workers=args.workers, out=sys.stderr)
        parallel = time.perf_counter() - start

    n, w = args.students, args.workers
    print(f"students: {n}, workers: {w}, cores: {os.cpu_count()}")
    print(f"execute one notebook alone (nbclient): {alone:.2f} s")
    print(f"plain nbgrader autograde, sequential: {sequential:.1f} s ({sequential / n:.2f} s per submission, "
          f"overhead {sequential / n - alone:+.2f} s)")
    print(f"parallel, isolated, re-scored:       {parallel:.1f} s ({parallel / n:.2f} s per submission; "
          f"worker time {parallel * w / n:.2f} s, overhead {parallel * w / n - alone:+.2f} s)")
    print(f"speedup: {sequential / parallel:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
