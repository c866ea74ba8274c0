"""The CSV of grades: one row per student and assignment, a score or a reason for every submission."""
from __future__ import annotations

import csv
import warnings
from pathlib import Path

from nbgrader.api import Gradebook, MissingEntry

from .batch import submissions
from .course import Course
from .merge import load_record

COLUMNS = ["assignment", "student_id", "score", "max_score", "late_penalty", "timestamp", "status", "reason",
           "graded_on", "isolated"]


def rows(course: Course, assignments: list[str] | None = None) -> list[dict]:
    """Every student of the gradebook (and every submitted folder) for each assignment."""
    out = []
    with warnings.catch_warnings(), Gradebook(course.gradebook_url, course.course_id) as gb:
        warnings.simplefilter("ignore")  # SQLAlchemy warnings inside nbgrader's API
        for assignment in gb.assignments:
            if assignments and assignment.name not in assignments:
                continue
            students = sorted({s.id for s in gb.students} | set(submissions(course, assignment.name)))
            for student in students:
                out.append(_row(gb, course, assignment, student))
    return out


def write(course: Course, path: Path, assignments: list[str] | None = None) -> int:
    """Write the CSV (UTF-8); returns the number of rows."""
    table = rows(course, assignments)
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, COLUMNS)
        writer.writeheader()
        writer.writerows(table)
    return len(table)


def _row(gb, course: Course, assignment, student: str) -> dict:
    row = {"assignment": assignment.name, "student_id": student, "max_score": assignment.max_score,
           "score": 0.0, "late_penalty": 0.0, "timestamp": "", "graded_on": "", "isolated": ""}
    try:
        submission = gb.find_submission(assignment.name, student)
    except MissingEntry:
        submitted = course.folder("submitted", student, assignment.name).is_dir()
        return {**row, "status": "not graded" if submitted else "missing",
                "reason": "submitted but not graded yet" if submitted else "no submission"}
    record = load_record(course, assignment.name, student)
    problems = list(record.get("notes", [])) + ([record["error"]] if record.get("error") else [])
    status = "error" if record.get("error") else "graded with problems" if problems else "graded"
    if submission.needs_manual_grade:
        status, problems = "needs manual grading", problems + ["a cell needs manual grading"]
    return {**row, "score": submission.score, "late_penalty": submission.late_submission_penalty or 0.0,
            "timestamp": submission.timestamp.isoformat() if submission.timestamp else "", "status": status,
            "reason": "; ".join(problems), "graded_on": (record.get("graded_on") or {}).get("profile") or "",
            "isolated": record.get("isolated", "")}


def summary(table: list[dict]) -> str:
    """A per-student table for the terminal."""
    lines = [f"{'student':<20} {'score':>13}  {'status':<22} reason"]
    for r in table:
        score = f"{r['score']:g}/{r['max_score']:g}"
        lines.append(f"{r['student_id']:<20} {score:>13}  {r['status']:<22} {r['reason'][:100]}")
    return "\n".join(lines)
