"""The single writer: one graded submission from its scratch course into the course's gradebook and folders."""
from __future__ import annotations

import json
import shutil
import warnings
from datetime import datetime
from pathlib import Path

from nbgrader.api import Gradebook

from .course import Course
from .worker import Outcome


def merge(gb: Gradebook, course: Course, outcome: Outcome, context: dict) -> None:
    """Write ``outcome``'s grades into ``gb`` (course's gradebook; manual scores kept), its autograded
    notebooks and its grading record."""
    a, s = outcome.assignment, outcome.student
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # SQLAlchemy warnings inside nbgrader's API (known, harmless)
        gb.update_or_create_student(s)
        stamp = {"timestamp": datetime.fromisoformat(outcome.timestamp)} if outcome.timestamp else {}
        submission = gb.update_or_create_submission(a, s, **stamp)
        for nb in submission.notebooks:
            scores = outcome.grades.get(nb.name)
            for grade in nb.grades:
                auto, needs = scores.get(grade.name, [0, False]) if scores else [0, False]
                grade.auto_score = auto
                grade.needs_manual_grade = bool(needs) or grade.manual_score is not None
            for comment in nb.comments:
                comment.auto_comment = outcome.comments.get(nb.name, {}).get(comment.name)
            nb.late_submission_penalty = outcome.late.get(nb.name)
        gb.db.commit()
    dest = course.folder("autograded", s, a)
    if dest.exists():
        shutil.rmtree(dest)
    if outcome.autograded and Path(outcome.autograded).is_dir():
        shutil.copytree(outcome.autograded, dest)
    record = course.private("records", a, f"{s}.json")
    record.parent.mkdir(parents=True, exist_ok=True)
    record.write_text(json.dumps({"student": s, "assignment": a, "seed": outcome.seed, "error": outcome.error,
                                  "notes": outcome.notes, "seconds": outcome.seconds, **context},
                                 ensure_ascii=False, indent=1), encoding="utf-8")


def load_record(course: Course, assignment: str, student: str) -> dict:
    """The grading record ``merge`` wrote ({} if this submission was never graded by the pipeline)."""
    path = course.private("records", assignment, f"{student}.json")
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
