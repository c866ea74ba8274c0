"""HTML feedback per student (nbgrader generate_feedback; hidden test code removed, messages kept).

nbgrader copies and chmods what it finds next to the graded notebooks, following links: it runs
here in a private staging course that holds only the assignment's graded notebooks, each copied
from ``autograded/`` as a plain regular file. The HTML it writes is copied back into
``feedback/<student>/<assignment>/`` the same way. A student whose feedback fails is reported;
the others get theirs.
"""
from __future__ import annotations

import stat
import sys
import tempfile
from pathlib import Path

from ..i18n import msg
from .course import Course, api, succeed
from .scratch import UnsafeFile, fresh_folder, make_folder, read_regular, write_new


def feedback(course: Course, assignment: str, student: str | None = None, release: bool = False,
             out=None) -> list[Path]:
    """Write ``feedback/<student>/<assignment>/*.html``; ``release`` also puts it in the exchange.
    Returns the files written; a student whose feedback failed is printed to ``out`` with the reason."""
    out = out or sys.stdout
    graded = course.folder("autograded")
    students = [student] if student else sorted(p.name for p in graded.iterdir() if _is_dir(p / assignment)) \
        if graded.is_dir() else []
    notebooks = course.notebooks(assignment)
    problems, written = {}, []
    with tempfile.TemporaryDirectory(prefix="aihw-feedback-") as tmp:
        stage = Path(tmp)
        config = course.config()
        url = course.gradebook_url
        config.CourseDirectory.root = str(stage)
        config.CourseDirectory.db_url = url
        staged = []
        for s in students:
            try:
                if not _is_dir(graded / s) or not _is_dir(graded / s / assignment):
                    raise UnsafeFile(msg("grading.unsafe_file", name=f"{s}/{assignment}", kind="not graded"))
                dest = make_folder(stage, "autograded", s, assignment)
                for name in notebooks:
                    try:
                        write_new(dest / f"{name}.ipynb", read_regular(graded, f"{s}/{assignment}/{name}.ipynb"))
                    except FileNotFoundError:
                        continue
                staged.append(s)
            except (OSError, ValueError) as exc:
                problems[s] = exc.reason.en if isinstance(exc, UnsafeFile) else f"{type(exc).__name__}: {exc}"
        if staged:
            result = api(course, config).generate_feedback(assignment, student_id=student, force=True)
            if not result.get("success") and student:
                problems.setdefault(student, _last_line(result))
        for s in staged:
            try:
                html = {f"{n}.html": read_regular(stage, f"feedback/{s}/{assignment}/{n}.html") for n in notebooks
                        if (stage / "feedback" / s / assignment / f"{n}.html").exists()}
                if not html:
                    raise ValueError(problems.get(s) or _last_line(result))
                course.folder("feedback").mkdir(parents=True, exist_ok=True)
                dest = fresh_folder(course.folder("feedback"), s, assignment)
                for name, data in html.items():
                    write_new(dest / name, data)
                    written.append(dest / name)
            except (OSError, ValueError) as exc:
                problems[s] = exc.reason.en if isinstance(exc, UnsafeFile) else str(exc).splitlines()[0][:200]
    for s, detail in sorted(problems.items()):
        print(msg("grading.feedback_student_failed", student=s, detail=detail).text(), file=out)
    if release and written:
        succeed(api(course).release_feedback(assignment, student_id=student), "grading.feedback_failed",
                assignment=assignment)
    return sorted(written)


def _is_dir(path: Path) -> bool:
    try:
        return stat.S_ISDIR(path.lstat().st_mode)
    except OSError:
        return False


def _last_line(result: dict) -> str:
    text = (result.get("error") or "") + (result.get("log") or "")
    lines = [line for line in text.splitlines() if "rror" in line] or text.strip().splitlines() or ["failed"]
    return lines[-1].strip()[:200]
