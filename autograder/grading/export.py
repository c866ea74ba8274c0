"""The CSV of grades an instructor can hand in: one row per student and assignment.

Columns (see docs/instructor.md): the roster's name and email, the raw score, the late penalty and
the net score (``score``), one column per task (``task:<grade cell>``), the due date and the time
the submission was received, a status and the reason in Korean and in English. UTF-8, with a
byte-order mark on request (spreadsheets then read Hangul right). Written by default to
``instructor/grades-<date>.csv`` (ignored by git). Every text cell is shown safely (``safetext``):
control characters escaped, a leading ``= + - @`` quoted so that no spreadsheet runs it as a formula.
"""
from __future__ import annotations

import csv
import warnings
from datetime import datetime
from pathlib import Path

from nbgrader.api import Gradebook, MissingEntry

from ..i18n import Message, msg
from .batch import submissions
from .collect import received
from .course import Course
from .deadlines import apply_penalties, duration, plugin, show, time_note
from .merge import load_record
from .reasons import join
from .roster import id_problem
from .safetext import shown, spreadsheet

COLUMNS = ["assignment", "student_id", "first_name", "last_name", "email", "raw_score", "late_penalty", "score",
           "max_score", "due", "submitted_at", "late_by", "status", "reason_ko", "reason_en", "graded_on", "isolated"]
FOLDER = "instructor"


def rows(course: Course, assignments: list[str] | None = None) -> list[dict]:
    """Every student of the gradebook (and every submitted folder) for each assignment."""
    out = []
    late_plugin = plugin(course)
    with warnings.catch_warnings(), Gradebook(course.gradebook_url, course.course_id) as gb:
        warnings.simplefilter("ignore")  # SQLAlchemy warnings inside nbgrader's API
        roster = {s.id: s for s in gb.students}
        for assignment in gb.assignments:
            if assignments and assignment.name not in assignments:
                continue
            students = sorted(set(roster) | set(submissions(course, assignment.name))
                              | refused_students(course, assignment.name))
            for student in students:
                out.append(_row(gb, course, assignment, student, roster.get(student), late_plugin))
        gb.db.rollback()  # penalties are recomputed here for the export only; merge stores them
    return out


def default_path(course: Course) -> Path:
    return course.root / FOLDER / f"grades-{datetime.now().strftime('%Y-%m-%d')}.csv"


def write(course: Course, path: Path | None = None, assignments: list[str] | None = None, bom: bool = False) -> int:
    """Write the CSV (UTF-8, ``bom``: with a byte-order mark); returns the number of rows."""
    table = rows(course, assignments)
    tasks = sorted({k for r in table for k in r if k.startswith("task:")}, key=lambda k: _task_order(table, k))
    path = Path(path or default_path(course))
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="", encoding="utf-8-sig" if bom else "utf-8") as handle:
        writer = csv.DictWriter(handle, COLUMNS[:9] + tasks + COLUMNS[9:], extrasaction="ignore")
        writer.writeheader()
        writer.writerows({k: spreadsheet(shown(v)) if isinstance(v, str) else v for k, v in r.items()} for r in table)
    return len(table)


def _task_order(table: list[dict], key: str) -> tuple:
    for r in table:
        if key in r.get("_tasks", []):
            return (r["assignment"], r["_tasks"].index(key))
    return ("", 0)


def _row(gb, course: Course, assignment, student: str, person, late_plugin) -> dict:
    row = {"assignment": assignment.name, "student_id": student, "max_score": assignment.max_score,
           "first_name": getattr(person, "first_name", None) or "", "last_name": getattr(person, "last_name", None) or "",
           "email": getattr(person, "email", None) or "", "raw_score": 0.0, "score": 0.0, "late_penalty": 0.0,
           "due": show(assignment.duedate), "submitted_at": "", "late_by": "", "graded_on": "", "isolated": ""}
    tasks = [f"task:{c.name}" for nb in assignment.notebooks for c in nb.grade_cells]
    row["_tasks"] = tasks
    bad_id = id_problem(student)
    try:
        submission = gb.find_submission(assignment.name, student)
    except MissingEntry:
        submitted = course.folder("submitted", student, assignment.name).is_dir()
        refused = _refusal(course, assignment.name, student)
        if submitted:
            status, why = "not graded", msg("grading.status_not_graded")
        elif refused is not None:
            status, why = "refused", msg("grading.refused_at_collect", why=refused.en)
            why = Message(msg("grading.refused_at_collect", why=refused.ko).ko, why.en)
        else:
            status, why = "missing", msg("grading.status_missing")
        reasons = [why] + ([bad_id] if bad_id else [])
        return _with_reason({**row, "status": status}, reasons)
    record = load_record(course, assignment.name, student)
    arrival = received(course, assignment.name, student)
    penalty = apply_penalties(course, submission, late_plugin)
    raw = submission.score
    problems: list = list(record.get("notes", [])) + ([record["error"]] if record.get("error") else [])
    status = "error" if record.get("error") else "graded with problems" if problems else "graded"
    if submission.needs_manual_grade:
        status, problems = "needs manual grading", problems + [msg("grading.needs_manual")]
    late = submission.total_seconds_late
    if late > 0 and status == "graded":
        status = "late"
    if late > 0:
        problems.insert(0, msg("grading.late_note", late=duration(late).en, penalty=f"{penalty:g}"))
        problems[0] = Message(msg("grading.late_note", late=duration(late).ko, penalty=f"{penalty:g}").ko,
                              problems[0].en)
    stated = time_note({"received": arrival})
    if stated is not None:
        problems.append(stated)
    if bad_id:
        problems.append(bad_id)
    for nb in submission.notebooks:
        for grade in nb.grades:
            row[f"task:{grade.name}"] = grade.score
    return _with_reason({**row, "raw_score": raw, "late_penalty": penalty, "score": max(0.0, raw - penalty),
                         "submitted_at": show(submission.timestamp), "late_by": duration(late).en if late > 0 else "",
                         "status": status, "graded_on": (record.get("graded_on") or {}).get("profile") or "",
                         "isolated": record.get("isolated", "")}, problems)


def _with_reason(row: dict, reasons: list) -> dict:
    """The row with its reasons, each language on one line with no control character acting (``shown``)."""
    both = join(reasons)
    return {**row, "reason": shown(both.en), "reason_en": shown(both.en), "reason_ko": shown(both.ko)}


def refused_students(course: Course, assignment: str) -> set[str]:
    """Students (with a valid id, on the roster) whose entry collect refused."""
    import json
    from .collect import refusal_log
    log = refusal_log(course, assignment)
    found = set()
    for line in log.read_text(encoding="utf-8").splitlines() if log.exists() else []:
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        student = entry.get("student")
        if isinstance(student, str) and not id_problem(student) and not entry.get("off_roster"):
            found.add(student)
    return found


def _refusal(course: Course, assignment: str, student: str) -> Message | None:
    """The last reason collect refused this student's entry, if it did (and it was never received since)."""
    import json
    from .collect import refusal_log
    from .reasons import bilingual
    log = refusal_log(course, assignment)
    if not log.exists():
        return None
    last = None
    for line in log.read_text(encoding="utf-8").splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if entry.get("student") == student:
            last = entry.get("reason")
    return bilingual(last) if last else None


def student_reasons(course: Course, assignment: str, student: str) -> dict | None:
    """The export row of one student (for the feedback), or None if the gradebook has no such assignment."""
    for r in rows(course, [assignment]):
        if r["student_id"] == student:
            return r
    return None


def summary(table: list[dict]) -> str:
    """A per-student table for the terminal (nothing in it moves the cursor or recolours: ``shown``)."""
    from ..i18n import get_language
    lang = get_language()
    lines = [f"{'student':<20} {'score':>13}  {'status':<22} reason"]
    for r in table:
        score = f"{r['score']:g}/{r['max_score']:g}"
        reason = r["reason_ko"] if lang == "ko" else r["reason_en"] if lang == "en" else \
            " / ".join(dict.fromkeys(x for x in (r["reason_ko"], r["reason_en"]) if x))
        lines.append(shown(f"{r['student_id']:<20} {score:>13}  {r['status']:<22} {reason[:200]}"))
    return "\n".join(lines)
