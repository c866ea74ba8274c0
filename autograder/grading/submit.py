"""The learner's side: package an exercise's notebooks, with the learner's id, for the instructor.

``python -m autograder submit 01_devices --student kim01`` checks that every notebook of
the exercise is there and readable, then writes ``submissions/kim01__01_devices.zip``
(the notebooks and ``submission.json``), ready for
``instructor collect``. :func:`review` then tells the learner which tasks were not
attempted and which visible checks fail (``--no-check`` skips running the checks).
"""
from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat

from ..i18n import Message, msg
from ..standalone import Graded, label, pack, tasks_of
from . import languages
from .course import Course
from .roster import id_problem


class SubmitError(ValueError):
    """The submission was refused; the message says why and what to do (both languages)."""


def submit(course: Course, assignment: str, student: str, out_dir: Path | None = None) -> Path:
    """Write the zip and return its path; raise :class:`SubmitError` if something is missing or malformed."""
    if not student:
        raise SubmitError(msg("grading.submit_need_id", assignment=assignment).text())
    if id_problem(student):  # the one id rule (roster import, collect, grade, feedback, export ask it too)
        raise SubmitError(id_problem(student).text())
    work = course.folder("release", assignment)
    if not work.is_dir():
        raise SubmitError(msg("grading.submit_no_exercise", assignment=assignment, folder=work).text())
    files = worked_in(course, assignment)  # what the instructor collects: the notebooks only
    for path in files.values():
        _readable(path)
    out = Path(out_dir or course.root / "submissions") / f"{student}__{assignment}.zip"
    return pack(out, student, assignment, {name: p.read_bytes() for name, p in files.items()}, course.course_id)


def worked_in(course: Course, assignment: str) -> dict[str, Path]:
    """{the assignment's notebook file: the file of it the learner worked in}: of ``X.ipynb``, ``X.ko.ipynb`` and
    ``X.en.ipynb`` in the exercise folder, the one ``languages.worked_in`` picks in the learner's chosen language
    (``i18n.get_language``); ``X.ipynb`` itself where none is there (``_readable`` then says it is missing)."""
    from ..i18n import get_language
    work, out = course.folder("release", assignment), {}
    for name in course.notebooks(assignment):
        found = {}
        for file in languages.file_names(name):
            with contextlib.suppress(OSError):
                found[file] = ((work / file).read_bytes(), (work / file).stat().st_mtime)
        chosen = languages.worked_in(found, get_language()) if found else languages.file_name(name)
        out[languages.file_name(name)] = work / chosen
    return out


def _readable(path: Path) -> None:
    if not path.exists() and not path.is_symlink():
        raise SubmitError(msg("grading.submit_missing", path=path).text())
    try:
        nb = nbformat.read(str(path), as_version=nbformat.NO_CONVERT)
        nbformat.validate(nb)
        if nb.nbformat != 4:
            raise ValueError(f"nbformat {nb.nbformat}")
    except Exception as exc:  # any reason the notebook cannot be read
        raise SubmitError(msg("grading.submit_malformed", path=path, error=str(exc).splitlines()[0][:200]).text()) from None


# ---------------------------------------------------------------- what the learner should know before sending it
CHECK_TIMEOUT_S = 300.0  # the whole run of the visible checks; --check-timeout changes it


def review(course: Course, assignment: str, run: bool = True, timeout_s: float = CHECK_TIMEOUT_S) -> list[Message]:
    """What to tell the learner before the zip goes out: tasks not attempted and visible checks that fail.

    Tasks whose answer cells still hold the released stub (``raise NotImplementedError()``)
    are listed without running anything. With ``run``, each notebook runs in a separate
    process (nbclient, like ``nbgrader validate``) for at most ``timeout_s`` seconds, and
    every attempted task whose visible check does not pass is listed.
    """
    files = {languages.notebook_of(name): path for name, path in worked_in(course, assignment).items()}
    notes: list[Message] = []
    pending: list[Graded] = []
    for name, path in files.items():
        graded = tasks_of(nbformat.read(str(path), as_version=4), name)
        notes += [msg("grading.submit_not_attempted", task=label(g)) for g in graded if g.untouched]
        pending += [g for g in graded if not g.untouched]
    if not run or not pending:
        return notes
    deadline, checked = time.monotonic() + timeout_s, set()
    for name in dict.fromkeys(g.notebook for g in pending):
        mine = [g for g in pending if g.notebook == name]
        results, finished = run_checks(files[name], [g.cell for g in mine],
                                       max(1.0, deadline - time.monotonic()))
        checked |= {(name, cell) for cell in results}
        for g in mine:
            score = results.get(g.cell)
            if score is not None and score < g.points:
                notes.append(msg("grading.submit_check_fails", task=label(g), earned=f"{score:g}", points=f"{g.points:g}"))
        if not finished:
            left = [label(g) for g in pending if (g.notebook, g.cell) not in checked]
            notes.append(msg("grading.submit_checks_unfinished", seconds=f"{timeout_s:g}",
                              left=Message(", ".join(m.ko for m in left) or "-", ", ".join(m.en for m in left) or "-")))
            break
    return notes


def run_checks(path: Path, cells: list[int], timeout_s: float) -> tuple[dict[int, float], bool]:
    """Run the notebook at ``path`` in a new process; ({test cell index: points earned}, finished in time).

    Only the listed test cells run (with every other cell that is not a test cell). The
    process writes one line per test cell as it finishes, so a run stopped at its time
    limit still reports the cells it got through.
    """
    cmd = [sys.executable, "-m", "autograder.grading.submit", str(path), ",".join(map(str, cells))]
    env = dict(os.environ, MPLBACKEND="Agg", NBGRADER_EXECUTION="autograde")  # checks return their points as the grader reads them
    env.pop("COURSE_RECORD_ANSWERS", None)
    env.pop("COURSE_REFEREE", None)
    kwargs = {"start_new_session": True} if os.name == "posix" else {}
    results: dict[int, float] = {}
    with tempfile.TemporaryFile("w+", encoding="utf-8") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL,
                                cwd=str(path.parent), env=env, **kwargs)
        try:
            proc.wait(timeout=timeout_s)
            finished = proc.returncode == 0
        except subprocess.TimeoutExpired:
            finished = False
            _stop(proc)
        out.seek(0)
        for line in out:
            try:
                row = json.loads(line)
                results[int(row["cell"])] = float(row["score"])
            except (ValueError, KeyError, TypeError):
                continue
    return results, finished


def _stop(proc: subprocess.Popen) -> None:
    """Kill the checking process this module started, and its kernel (same session)."""
    try:
        if os.name == "posix":
            os.killpg(proc.pid, signal.SIGKILL)
        else:
            proc.kill()
        proc.wait(timeout=10)
    except (ProcessLookupError, PermissionError, OSError, subprocess.TimeoutExpired):
        pass


def _execute(path: str, cells: str) -> None:
    """The checking process: execute the notebook (test cells: only ``cells``), one JSON line per test cell."""
    from nbclient import NotebookClient
    from nbgrader.utils import determine_grade, is_grade

    wanted = {int(c) for c in cells.split(",") if c}
    nb = nbformat.read(path, as_version=4)
    keep = [i for i, cell in enumerate(nb.cells) if not (is_grade(cell) and cell.cell_type == "code") or i in wanted]
    index = {id(nb.cells[i]): i for i in keep}
    nb.cells = [nb.cells[i] for i in keep]

    def done(cell, cell_index, **_):
        if id(cell) in index and index[id(cell)] in wanted:
            score, _max = determine_grade(cell)
            sys.stdout.write(json.dumps({"cell": index[id(cell)], "score": score}) + "\n")
            sys.stdout.flush()

    client = NotebookClient(nb, timeout=None, allow_errors=True, kernel_name="python3",
                            resources={"metadata": {"path": str(Path(path).parent)}}, on_cell_executed=done)
    client.execute()


if __name__ == "__main__":
    _execute(sys.argv[1], sys.argv[2])
