"""A private course folder and gradebook for each submission (nbgrader's SQLite takes one writer)."""
from __future__ import annotations

import shutil
from pathlib import Path

from nbgrader.api import Gradebook

from .course import Course, use_venv_tools


def template(course: Course, assignment: str, path: Path) -> None:
    """Copy ``assignment``'s structure (notebooks, cells, sources, due date) from the course gradebook to SQLite ``path``."""
    use_venv_tools()
    with Gradebook(course.gradebook_url, course.course_id) as src, \
            Gradebook(f"sqlite:///{path}", course.course_id) as dst:
        a = src.find_assignment(assignment)
        dst.update_or_create_assignment(a.name, duedate=a.duedate)
        for nb in a.notebooks:
            dst.update_or_create_notebook(nb.name, a.name)
            for c in nb.grade_cells:
                dst.update_or_create_grade_cell(c.name, nb.name, a.name, max_score=c.max_score, cell_type=c.cell_type)
            for c in nb.solution_cells:
                dst.update_or_create_solution_cell(c.name, nb.name, a.name)
            for c in nb.task_cells:
                dst.update_or_create_task_cell(c.name, nb.name, a.name, max_score=c.max_score, cell_type=c.cell_type)
            for c in nb.source_cells:
                dst.update_or_create_source_cell(c.name, nb.name, a.name, cell_type=c.cell_type, locked=c.locked,
                                                 source=c.source, checksum=c.checksum)


def prepare(course: Course, assignment: str, student: str, root: Path, template_db: Path) -> Path:
    """``root``/: submitted/<student>/<assignment>/ (a copy), the source's data files, gradebook.db."""
    if root.exists():
        shutil.rmtree(root)
    config = course.config().CourseDirectory
    submitted = root / config.get("submitted_directory", "submitted") / student / assignment
    shutil.copytree(course.folder("submitted", student, assignment), submitted, ignore=_skip)
    source = course.folder("source", assignment)
    if source.is_dir():  # nbgrader copies the source's other files (data) next to the graded notebook
        shutil.copytree(source, root / config.get("source_directory", "source") / assignment,
                        ignore=shutil.ignore_patterns("*.ipynb", ".ipynb_checkpoints", "__pycache__"))
    shutil.copyfile(template_db, root / "gradebook.db")
    return root


def _skip(folder: str, names: list[str]) -> set[str]:
    """Leave out checkpoints, caches and links (a link could point at another student's files)."""
    return {n for n in names if n in (".ipynb_checkpoints", "__pycache__") or Path(folder, n).is_symlink()}
