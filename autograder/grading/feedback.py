"""HTML feedback per student (nbgrader generate_feedback; hidden test code removed, messages kept)."""
from __future__ import annotations

from pathlib import Path

from .course import Course, api, succeed


def feedback(course: Course, assignment: str, student: str | None = None, release: bool = False) -> list[Path]:
    """Write ``feedback/<student>/<assignment>/*.html``; ``release`` also puts it in the exchange."""
    nbgrader = api(course)
    succeed(nbgrader.generate_feedback(assignment, student_id=student, force=True),
            "grading.feedback_failed", assignment=assignment)
    if release:
        succeed(nbgrader.release_feedback(assignment, student_id=student), "grading.feedback_failed", assignment=assignment)
    return sorted(course.folder("feedback").glob(f"{student or '*'}/{assignment}/*.html"))
