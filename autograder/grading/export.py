"""The grades an instructor hands in, as CSV in one of :data:`FORMATS`.

``long`` (the default): one row per student and assignment. Columns (see docs/instructor.md): the roster's
name and email, the raw score, the late penalty and the net score (``score``), one column per task
(``task:<grade cell>``), the due date and the time the submission was received (in the class's time zone,
``Course.zone``), a status and the reason in Korean and in English. ``wide``: one row per student, a group of
columns per assignment. ``canvas``, ``moodle``, ``gradescope``: the import or export format of that system
(:func:`canvas`, :func:`moodle`, :func:`gradescope`; samples with their sources in tests/fixtures/lms/).
Every score a system imports is the net score. UTF-8, with a byte-order mark on request (spreadsheets then
read Hangul right). Written by default to ``instructor/grades-<date>[-<format>].csv`` (ignored by git). Every
text cell is shown safely (``safetext``): control characters escaped, a leading ``= + - @`` quoted so that no
spreadsheet runs it as a formula.
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
from .course import Course, GradingError
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
    zone = course.zone
    with warnings.catch_warnings(), Gradebook(course.gradebook_url, course.course_id) as gb:
        warnings.simplefilter("ignore")  # SQLAlchemy warnings inside nbgrader's API
        roster = {s.id: s for s in gb.students}
        for assignment in gb.assignments:
            if assignments and assignment.name not in assignments:
                continue
            students = sorted(set(roster) | set(submissions(course, assignment.name))
                              | refused_students(course, assignment.name))
            for student in students:
                out.append(_row(gb, course, assignment, student, roster.get(student), late_plugin, zone))
        gb.db.rollback()  # penalties are recomputed here for the export only; merge stores them
    return out


def default_path(course: Course, fmt: str = "long") -> Path:
    suffix = "" if fmt == "long" else f"-{fmt}"
    return course.root / FOLDER / f"grades-{datetime.now(course.zone).strftime('%Y-%m-%d')}{suffix}.csv"


def write(course: Course, path: Path | None = None, assignments: list[str] | None = None, bom: bool = False,
          fmt: str = "long") -> int:
    """Write the grades as ``fmt`` (UTF-8, ``bom``: with a byte-order mark); returns the number of student rows."""
    header, lines, count = FORMATS[fmt](rows(course, assignments))
    path = Path(path or default_path(course, fmt))
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="", encoding="utf-8-sig" if bom else "utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow([_cell(v) for v in header])
        writer.writerows([_cell(v) for v in line] for line in lines)
    return count


def _cell(value):
    """What a CSV cell holds: text shown safely (no control character acts, no formula runs), numbers as they are."""
    return "" if value is None else spreadsheet(shown(value)) if isinstance(value, str) else value


def long(table: list[dict]) -> tuple[list, list, int]:
    """One row per student and assignment: :data:`COLUMNS` with a ``task:<cell>`` column per task."""
    tasks = sorted({k for r in table for k in r if k.startswith("task:")}, key=lambda k: _task_order(table, k))
    header = COLUMNS[:9] + tasks + COLUMNS[9:]
    return header, [[r.get(k, "") for k in header] for r in table], len(table)


WIDE = ("score", "raw_score", "late_penalty", "max_score", "status")


def wide(table: list[dict]) -> tuple[list, list, int]:
    """One row per student: id, name, email, then ``<assignment>:<field>`` for each of :data:`WIDE`, and the totals
    of the net scores and the maxima."""
    assignments = list(dict.fromkeys(r["assignment"] for r in table))
    header = ["student_id", "first_name", "last_name", "email"] + [f"{a}:{f}" for a in assignments for f in WIDE] \
        + ["total", "max_total"]
    lines = []
    for student, mine in _by_student(table).items():
        first = next(iter(mine.values()))
        line = [student, first["first_name"], first["last_name"], first["email"]]
        for a in assignments:
            line += [mine[a][f] if a in mine else "" for f in WIDE]
        lines.append(line + [sum(r["score"] for r in mine.values()), sum(r["max_score"] for r in mine.values())])
    return header, lines, len(lines)


CANVAS = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
PENDING = ("not graded", "needs manual grading")  # no score yet: an empty cell (an import leaves it as it is)


def canvas(table: list[dict]) -> tuple[list, list, int]:
    """Canvas's Gradebook import CSV: the student columns of :data:`CANVAS` (the name as ``Last, First``, the
    course's student id as SIS User ID and SIS Login ID), one column per assignment named as the assignment,
    a ``Points Possible`` row under the header, and the net score (empty while it is pending)."""
    assignments = list(dict.fromkeys(r["assignment"] for r in table))
    maxima = {r["assignment"]: r["max_score"] for r in table}
    lines = [["    Points Possible", "", "", "", ""] + [maxima[a] for a in assignments]]
    for student, mine in _by_student(table).items():
        first = next(iter(mine.values()))
        name = ", ".join(x for x in (first["last_name"], first["first_name"]) if x) or student
        lines.append([name, "", student, student, ""] + [_net(mine.get(a)) for a in assignments])
    return CANVAS + assignments, lines, len(lines) - 1


MOODLE = ["First name", "Last name", "ID number", "Institution", "Department", "Email address"]


def moodle(table: list[dict]) -> tuple[list, list, int]:
    """Moodle's grade import CSV (the layout of its plain-text export): :data:`MOODLE` (the course's student id as
    ID number: map it to ``useridnumber``, or the email to ``useremail``), then per assignment a grade column
    ``Assignment: <name> (Real)`` (the net score, empty while pending) and its ``(Feedback)`` column (the
    reasons, Korean / English)."""
    assignments = list(dict.fromkeys(r["assignment"] for r in table))
    header = MOODLE + [f"Assignment: {a} ({kind})" for a in assignments for kind in ("Real", "Feedback")]
    lines = []
    for student, mine in _by_student(table).items():
        first = next(iter(mine.values()))
        line = [first["first_name"], first["last_name"], student, "", "", first["email"]]
        for a in assignments:
            line += [_net(mine.get(a)), _both(mine[a]) if a in mine else ""]
        lines.append(line)
    return header, lines, len(lines)


GRADESCOPE = ["First Name", "Last Name", "SID", "Email", "Sections", "Total Score", "Max Points", "Status",
              "Submission ID", "Submission Time", "Lateness (H:M:S)", "View Count", "Submission Count"]


def gradescope(table: list[dict]) -> tuple[list, list, int]:
    """Gradescope's per-assignment grades CSV for one assignment: :data:`GRADESCOPE`, then one column per question
    (``1: <grade cell> (2.0 pts)``). Total Score is the net score (after the late penalty); the questions are
    the points before it. Status: Graded, Ungraded (pending) or Missing (nothing graded)."""
    assignments = list(dict.fromkeys(r["assignment"] for r in table))
    if len(assignments) != 1:
        raise GradingError(msg("grading.gradescope_one_assignment", found=", ".join(assignments) or "-").text())
    tasks = sorted({k for r in table for k in r.get("_max", {})}, key=lambda k: _task_order(table, k))
    maxima = {k: v for r in table for k, v in r.get("_max", {}).items()}
    header = GRADESCOPE + [f"{i}: {k[len('task:'):]} ({float(maxima[k])} pts)" for i, k in enumerate(tasks, 1)]
    lines = []
    for r in table:
        status = "Ungraded" if r["status"] in PENDING else "Missing" if not r["submitted_at"] else "Graded"
        graded = status == "Graded"
        at = datetime.fromisoformat(r["submitted_at"]).strftime("%Y-%m-%d %H:%M:%S %z") if r["submitted_at"] else ""
        lines.append([r["first_name"], r["last_name"], r["student_id"], r["email"], "",
                      r["score"] if graded else "", r["max_score"], status, "", at,
                      _hms(r.get("_late_s", 0)) if at else "", "", 1 if at else 0]
                     + [r.get(k, "") if graded else "" for k in tasks])
    return header, lines, len(lines)


FORMATS = {"long": long, "wide": wide, "canvas": canvas, "moodle": moodle, "gradescope": gradescope}


def _by_student(table: list[dict]) -> dict[str, dict[str, dict]]:
    out: dict[str, dict[str, dict]] = {}
    for r in table:
        out.setdefault(r["student_id"], {})[r["assignment"]] = r
    return dict(sorted(out.items()))


def _net(row: dict | None):
    return "" if row is None or row["status"] in PENDING else row["score"]


def _both(row: dict) -> str:
    return " / ".join(dict.fromkeys(x for x in (row["reason_ko"], row["reason_en"]) if x))


def _hms(seconds: float) -> str:
    whole = int(round(seconds))
    return f"{whole // 3600:02d}:{whole // 60 % 60:02d}:{whole % 60:02d}"


def _task_order(table: list[dict], key: str) -> tuple:
    for r in table:
        if key in r.get("_tasks", []):
            return (r["assignment"], r["_tasks"].index(key))
    return ("", 0)


def _row(gb, course: Course, assignment, student: str, person, late_plugin, zone) -> dict:
    row = {"assignment": assignment.name, "student_id": student, "max_score": assignment.max_score,
           "first_name": getattr(person, "first_name", None) or "", "last_name": getattr(person, "last_name", None) or "",
           "email": getattr(person, "email", None) or "", "raw_score": 0.0, "score": 0.0, "late_penalty": 0.0,
           "due": show(assignment.duedate, zone), "submitted_at": "", "late_by": "", "graded_on": "", "isolated": ""}
    cells = {f"task:{c.name}": c.max_score for nb in assignment.notebooks for c in nb.grade_cells}
    row["_tasks"], row["_max"] = list(cells), cells
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
    stated = time_note({"received": arrival}, zone)
    if stated is not None:
        problems.append(stated)
    if bad_id:
        problems.append(bad_id)
    for nb in submission.notebooks:
        for grade in nb.grades:
            row[f"task:{grade.name}"] = grade.score
    return _with_reason({**row, "raw_score": raw, "late_penalty": penalty, "score": max(0.0, raw - penalty),
                         "submitted_at": show(submission.timestamp, zone), "late_by": duration(late).en if late > 0 else "",
                         "_late_s": late,
                         "status": status, "graded_on": (record.get("graded_on") or {}).get("profile") or "",
                         "isolated": record.get("isolated", "")}, problems)


def _with_reason(row: dict, reasons: list) -> dict:
    """The row with its reasons, each language on one line with no control character acting (``shown``)."""
    both = join(reasons)
    return {**row, "reason": shown(both.en), "reason_en": shown(both.en), "reason_ko": shown(both.ko)}


def refused_students(course: Course, assignment: str) -> set[str]:
    """Students (with a valid id) whose entry collect refused."""
    import json
    from .collect import refusal_log
    log = refusal_log(course, assignment)
    found = set()
    for line in log.read_text(encoding="utf-8").splitlines() if log.exists() else []:
        try:
            student = json.loads(line).get("student")
        except ValueError:
            continue
        if isinstance(student, str) and not id_problem(student):
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
