"""Grade a class in parallel: N workers, each submission in its own scratch course, one gradebook writer."""
from __future__ import annotations

import multiprocessing
import os
import secrets
import shutil
import sys
import tempfile
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor, as_completed
from pathlib import Path

from nbgrader.api import Gradebook, MissingEntry

from ..i18n import msg
from ..progress import progress
from . import sandbox
from .course import Course, GradingError, use_venv_tools
from .generate import generate
from .machine import graded_on
from .merge import merge
from .scratch import template
from .worker import Job, Limits, Outcome, grade


def submissions(course: Course, assignment: str) -> list[str]:
    """Student ids with a submitted folder for ``assignment``."""
    folder = course.folder("submitted")
    return sorted(p.parent.name for p in folder.glob(f"*/{assignment}") if p.is_dir()) if folder.is_dir() else []


def grade_class(course: Course, assignment: str, students: list[str] | None = None, workers: int | None = None,
                limits: Limits = Limits(), isolate: bool | None = None, out=None) -> list[Outcome]:
    """Autograde ``students`` (default: every submission) and merge the results; returns one Outcome each.

    ``isolate``: None = bubblewrap if available (else a notice), True = require it, False = no sandbox.
    """
    use_venv_tools()
    submitted = submissions(course, assignment)
    unknown = sorted(set(students or []) - set(submitted))
    if unknown:
        raise GradingError(msg("grading.not_submitted", assignment=assignment, students=", ".join(unknown)).text())
    students = students if students is not None else submitted
    if not students:
        raise GradingError(msg("grading.nothing_submitted", assignment=assignment,
                               folder=course.folder("submitted")).text())
    isolate = _isolation(isolate, out or sys.stdout)
    _ensure_in_gradebook(course, assignment)
    workers = max(1, min(workers or os.cpu_count() or 1, len(students)))
    scratch = Path(tempfile.mkdtemp(prefix="aihw-grade-"))
    try:
        template(course, assignment, scratch / "template.db")
        (scratch / "device.lock").touch()
        jobs = [Job(course, assignment, s, str(scratch), secrets.randbelow(2**31), limits, isolate)
                for s in students]
        with ThreadPoolExecutor(1) as detect, Gradebook(course.gradebook_url, course.course_id) as gb:
            hardware = detect.submit(graded_on)  # detection (imports torch) overlaps the first gradings
            outcomes = []
            for outcome in progress(_run(jobs, workers), total=len(jobs), desc=msg("grading.progress").text("en"),
                                    leave=True):
                merge(gb, course, outcome, {"graded_on": hardware.result(), "isolated": isolate})
                outcomes.append(outcome)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return sorted(outcomes, key=lambda o: o.student)


def _run(jobs: list[Job], workers: int):
    """Outcomes as they finish (in this process when there is one worker)."""
    if workers == 1:
        yield from map(grade, jobs)
        return
    with ProcessPoolExecutor(workers, mp_context=_context()) as pool:
        futures = {pool.submit(grade, job): job for job in jobs}
        for future in as_completed(futures):
            job = futures[future]
            try:
                yield future.result()
            except Exception as exc:  # the worker process itself died
                yield Outcome(job.student, job.assignment, job.seed, error=f"worker failed: {type(exc).__name__}: {exc}")


def _context():
    """forkserver where there is one: workers start fast (modules preloaded once) and safely (not
    forked from a process with threads); spawn elsewhere."""
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("spawn")
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(["autograder.grading.worker"])
    return context


def _isolation(wanted: bool | None, out) -> bool:
    if wanted is False:
        print(msg("grading.no_isolation").text(), file=out)
        return False
    if sandbox.available():
        return True
    if wanted:
        raise GradingError(msg("grading.bwrap_missing").text())
    print(msg("grading.no_isolation").text(), file=out)
    return False


def _ensure_in_gradebook(course: Course, assignment: str) -> None:
    """nbgrader grades only assignments in the gradebook: record it from the source (exercises/ untouched)."""
    with Gradebook(course.gradebook_url, course.course_id) as gb:
        try:
            gb.find_assignment(assignment)
            return
        except MissingEntry:
            pass
    with tempfile.TemporaryDirectory() as release:
        generate(course, assignment, release_dir=Path(release))
