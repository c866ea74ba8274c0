"""The learner's side: package an exercise's notebooks, with the learner's id, for the instructor.

``python -m autograder submit 01_devices --student kim01`` checks that every notebook of
the exercise is there and readable, then writes ``submissions/kim01__01_devices.zip``
(the notebooks and ``submission.json``), ready for
``instructor collect``.
"""
from __future__ import annotations

import hashlib
import json
import zipfile
from datetime import datetime, timezone
from pathlib import Path

import nbformat

from ..i18n import msg
from .collect import MANIFEST
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
    expected = course.notebooks(assignment)
    for name in expected:
        _readable(work / f"{name}.ipynb")
    files = [work / f"{name}.ipynb" for name in expected]  # what the instructor collects: the notebooks only
    stamp = datetime.now(timezone.utc).isoformat()
    manifest = {"student": student, "assignment": assignment, "course": course.course_id, "timestamp": stamp,
                "files": {p.relative_to(work).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest() for p in files}}
    out = Path(out_dir or course.root / "submissions") / f"{student}__{assignment}.zip"
    out.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in files:
            archive.write(path, path.relative_to(work).as_posix())
        archive.writestr(MANIFEST, json.dumps(manifest, ensure_ascii=False, indent=1))
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
