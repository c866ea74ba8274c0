"""The single writer: one graded submission from its scratch course into the course's gradebook and folders."""
from __future__ import annotations

import hashlib
import json
import warnings
from datetime import datetime
from pathlib import Path

from nbgrader.api import Gradebook

from ..i18n import msg
from .course import Course
from .deadlines import apply_penalties
from .scratch import UnsafeFile, fresh_folder, make_folder, read_regular, source_files, write_new
from .worker import Outcome


def merge(gb: Gradebook, course: Course, outcome: Outcome, context: dict) -> None:
    """Write ``outcome``'s grades into ``gb`` (course's gradebook), its autograded notebooks and its
    grading record.

    A manual score (the formgrader's) survives every re-grade. Its cell is flagged for manual grading
    again only if what it judged changed: the cell's source, or for a test cell the answer cells
    before it (compared by checksum with the last graded version). The late penalty is nbgrader's
    plugin applied to the current scores (manual ones included).
    """
    a, s = outcome.assignment, outcome.student
    before = judged_cells(course, a, s)
    after = _judged_in(Path(outcome.autograded), course.notebooks(a)) if outcome.autograded else {}
    changed = []
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
                if grade.manual_score is None:
                    grade.needs_manual_grade = bool(needs)
                else:
                    old, new = before.get(nb.name, {}).get(grade.name), after.get(nb.name, {}).get(grade.name)
                    moved = old is not None and old != new
                    if moved:
                        changed.append(grade.name)
                    grade.needs_manual_grade = moved or bool(grade.needs_manual_grade)  # cleared in the formgrader
            for comment in nb.comments:
                comment.auto_comment = outcome.comments.get(nb.name, {}).get(comment.name)
        apply_penalties(course, submission)
        gb.db.commit()
    outcome.notes += [msg("grading.manual_changed", cell=name).en for name in changed]
    context = {**context, "judged": after or before}
    try:
        copy_autograded(course, outcome)
    except Exception as exc:  # this submission's problem, never the batch's
        reason = exc.reason.en if isinstance(exc, UnsafeFile) else f"{type(exc).__name__}: {exc}".splitlines()[0]
        reason = msg("grading.merge_failed", detail=reason).en
        outcome.notes.append(reason) if outcome.error else setattr(outcome, "error", reason)
    write_record(course, outcome, context)


def write_record(course: Course, outcome: Outcome, context: dict) -> None:
    """The grading record of ``outcome`` (its error, notes, kernels with their stderr, and ``context``), read by
    the export."""
    record = course.private("records", outcome.assignment, f"{outcome.student}.json")
    record.parent.mkdir(parents=True, exist_ok=True)
    write_new(record, json.dumps({"student": outcome.student, "assignment": outcome.assignment, "seed": outcome.seed,
                                  "error": outcome.error, "notes": outcome.notes, "seconds": outcome.seconds,
                                  "kernels": outcome.kernels, **context}, ensure_ascii=False, indent=1).encode("utf-8"))


def copy_autograded(course: Course, outcome: Outcome) -> None:
    """``autograded/<student>/<assignment>/``: the assignment's graded notebooks (plain regular files the
    grader wrote in the scratch course, read without following links) and the source's data files; nothing else."""
    a, s = outcome.assignment, outcome.student
    folder = course.folder("autograded")
    folder.mkdir(parents=True, exist_ok=True)
    dest = fresh_folder(folder, s, a)
    if not (outcome.autograded and Path(outcome.autograded).is_dir()):
        return
    scratch = Path(outcome.autograded)
    for name in course.notebooks(a):
        try:
            data = read_regular(scratch, f"{name}.ipynb")
        except FileNotFoundError:
            continue
        write_new(dest / f"{name}.ipynb", data)
    source = course.folder("source", a)
    for name in source_files(course, a):
        parts = name.split("/")
        write_new(make_folder(dest, *parts[:-1]) / parts[-1], (source / name).read_bytes())


def judged_cells(course: Course, assignment: str, student: str) -> dict:
    """notebook -> graded cell -> checksum of what it judged, for the last graded version: from its
    grading record, else from its notebooks in ``autograded/``."""
    judged = load_record(course, assignment, student).get("judged")
    if judged:
        return judged
    folder = course.folder("autograded", student, assignment)
    return _judged_in(folder, course.notebooks(assignment)) if folder.is_dir() else {}


def _judged_in(folder: Path, notebooks: list[str]) -> dict:
    import nbformat
    out = {}
    for name in notebooks:
        try:
            nb = nbformat.reads(read_regular(folder, f"{name}.ipynb").decode("utf-8"), as_version=4)
        except (OSError, ValueError):
            continue
        out[name] = cell_checksums(nb)
    return out


def cell_checksums(nb) -> dict[str, str]:
    """Each graded cell's checksum of its source, and for a test cell (graded, not a solution) also of
    the answer cells since the previous graded cell: what a manual grade of it judged."""
    sums, answers = {}, []
    for cell in nb.cells:
        meta = cell.get("metadata", {}).get("nbgrader", {})
        source = cell.source if isinstance(cell.source, str) else "".join(cell.source)
        if meta.get("grade") and meta.get("grade_id"):
            parts = [source] if meta.get("solution") else answers + [source]
            sums[meta["grade_id"]] = hashlib.sha256("\x00".join(parts).encode("utf-8")).hexdigest()
            answers = []
        elif meta.get("solution"):
            answers.append(source)
    return sums


def load_record(course: Course, assignment: str, student: str) -> dict:
    """The grading record ``merge`` wrote ({} if this submission was never graded by the pipeline)."""
    path = course.private("records", assignment, f"{student}.json")
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
