"""Student ids and the class list (nbgrader's students: id, first_name, last_name, email).

The id rule lives in :func:`id_problem`, the one function that roster import, ``submit``,
``collect``, ``grade``, ``feedback`` and ``export`` ask. An id is ASCII: a letter or digit, then
letters, digits, ``.``, ``_`` or ``-``, at most 64 characters. It names files and folders
(``submitted/<id>/``, ``<id>__<assignment>.zip``, the exchange's ``<id>+<assignment>+<time>``)
on every operating system and in every zip tool, where Unicode names are normalised or mangled
differently (NFC/NFD, code pages). A name in Hangul goes in the roster's name columns, never
in the id: ``kim.minjun,민준,김,minjun@example.org``. The import refuses a file with any bad id,
saying which rows and what to use, so no id is accepted at one step and refused at the next.
"""
from __future__ import annotations

import csv
import re
import warnings
from pathlib import Path

from ..i18n import Message, msg
from .course import Course, GradingError

_RULE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
COLUMNS = ("id", "first_name", "last_name", "email")


def _gradebook(course: Course):
    """The course's gradebook (nbgrader's; imported here, so the id rule needs no nbgrader: standalone.submit_here)."""
    from nbgrader.api import Gradebook
    return Gradebook(course.gradebook_url, course.course_id)


def id_problem(student: str) -> Message | None:
    """Why ``student`` cannot be a student id (both languages), or None if it can."""
    if isinstance(student, str) and _RULE.fullmatch(student):
        return None
    return msg("grading.bad_student_id", student=student, suggestion=suggest(student) or "kim01")


def valid_id(student: str) -> bool:
    return id_problem(student) is None


def suggest(student) -> str:
    """An id close to ``student`` that the rule accepts ('' if none): each letter outside ASCII transliterated in
    lower case by anyascii (Hangul in the Revised Romanization, ``김민준`` -> ``gimminjun``; ``ü`` -> ``u``), other
    signs removed."""
    from anyascii import anyascii
    text = "".join(c if c.isascii() else anyascii(c).lower() for c in str(student))
    text = re.sub(r"[^A-Za-z0-9._-]+", "", text).lstrip("._-")[:64]
    return text if _RULE.fullmatch(text or "-") else ""


def read_roster(path: Path) -> list[dict]:
    """The rows of a roster CSV (UTF-8, a byte-order mark allowed; columns ``id,first_name,last_name,email``).
    Raises :class:`GradingError` listing every row whose id breaks the rule, and nothing is imported."""
    with open(path, newline="", encoding="utf-8-sig") as handle:
        reader = csv.DictReader(handle)
        if "id" not in (reader.fieldnames or []):
            raise GradingError(msg("grading.roster_no_id", path=path).text())
        rows = [{k: (row.get(k) or "").strip() for k in COLUMNS} for row in reader]
    bad = [(n, r["id"]) for n, r in enumerate(rows, start=2) if id_problem(r["id"])]
    if bad:
        lines = "\n".join(f"  {path.name}:{n}: {student!r} -> {suggest(student) or '?'}" for n, student in bad)
        raise GradingError(msg("grading.roster_bad_ids", path=path, count=len(bad)).text() + "\n" + lines)
    seen = set()
    for r in rows:
        if r["id"] in seen:
            raise GradingError(msg("grading.roster_duplicate", path=path, student=r["id"]).text())
        seen.add(r["id"])
    return rows


def import_roster(course: Course, path: Path) -> int:
    """Add or update every student of ``path`` in the gradebook (as ``nbgrader db student import``); the count."""
    rows = read_roster(Path(path))
    with warnings.catch_warnings(), _gradebook(course) as gb:
        warnings.simplefilter("ignore")
        for r in rows:
            gb.update_or_create_student(r["id"], first_name=r["first_name"] or None,
                                        last_name=r["last_name"] or None, email=r["email"] or None)
    return len(rows)


def students(course: Course) -> dict[str, dict]:
    """id -> {first_name, last_name, email} of every student in the gradebook."""
    with warnings.catch_warnings(), _gradebook(course) as gb:
        warnings.simplefilter("ignore")
        return {s.id: {"first_name": s.first_name or "", "last_name": s.last_name or "", "email": s.email or ""}
                for s in gb.students}


def add_students(course: Course, ids) -> None:
    """Put ``ids`` on the roster without names (``collect --add-unknown``)."""
    with warnings.catch_warnings(), _gradebook(course) as gb:
        warnings.simplefilter("ignore")
        for student in ids:
            gb.update_or_create_student(student)


def check_student(course: Course, student: str, assignment: str) -> None:
    """Raise :class:`GradingError` unless ``student`` is a valid id on the roster or with a submission of ``assignment``."""
    if id_problem(student):
        raise GradingError(id_problem(student).text())
    if student not in students(course) and not course.folder("submitted", student, assignment).is_dir():
        raise GradingError(msg("grading.unknown_student", student=student, assignment=assignment).text())
