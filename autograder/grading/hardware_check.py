"""Would the reference solutions get full marks on this machine? Grade them a few times and say why not.

The shared core of ``python -m autograder instructor check-hardware``, ``benchmarks/robustness.py``
and ``tests/test_exercises.py``: a scratch course built from ``solutions/`` (student versions
generated into it), copies of the reference or of the blank student version submitted as
students ``reference-1``, ``reference-2``, ..., graded by the class pipeline (:func:`grade_class`),
and, per run, every test cell's points and the grader's verdict text from the autograded notebook.
"""
from __future__ import annotations

import shutil
import warnings
from dataclasses import dataclass
from pathlib import Path

import nbformat
from nbgrader.api import Gradebook

from ..checks import task
from ..i18n import msg
from . import export, records
from .batch import grade_class
from .course import REPO, Course, GradingError
from .generate import generate
from .worker import Limits

VERSIONS = {"reference": "source", "student": "release"}  # which course folder each version is copied from


def exercise_modules(root: Path = REPO) -> list[str]:
    """The exercises of the course at ``root``, as nbgrader has them: each folder of ``solutions/`` with a notebook
    (any course; in this repository, the records' exercises: ``layout.problems``)."""
    return sorted({p.parent.name for p in (Path(root) / "solutions").glob("*/*.ipynb")})


def measurement_tasks(source: str) -> list[str]:
    """The measurement tasks (``Task.measurement``) that a test cell's check calls name."""
    return [call.task for call in records.calls(source) if task(call.task).measurement]


def measurements_only(notebook: nbformat.NotebookNode, repeat: int = 1) -> nbformat.NotebookNode:
    """``notebook`` without the graded cells of other tasks than measurements and without the code cells a
    learner runs for themself (neither solution nor locked: nothing graded reads them); text, setup, given code
    and every solution stay. ``repeat``: each measurement test cell that many times in a row (grade ids
    ``ID``, ``ID-r2``, ...), so one kernel grades the same check again and again."""
    def keep(cell) -> bool:
        grading = cell.metadata.get("nbgrader", {})
        if grading.get("grade"):
            return bool(measurement_tasks(cell.source))
        return cell.cell_type != "code" or bool(grading.get("solution") or grading.get("locked"))
    kept = nbformat.from_dict(notebook)
    kept.cells = [copy for cell in kept.cells if keep(cell) for copy in _repeated(cell, repeat)]
    return kept


def _repeated(cell, repeat: int) -> list:
    """``cell``, and for a graded cell ``repeat - 1`` copies after it with their own grade and cell ids."""
    grading = cell.metadata.get("nbgrader", {})
    if not grading.get("grade") or repeat <= 1:
        return [cell]
    copies = [cell]
    for k in range(2, repeat + 1):
        copy = nbformat.from_dict(cell)
        copy.metadata["nbgrader"]["grade_id"] = f"{grading['grade_id']}-r{k}"
        if "id" in copy:
            copy["id"] = f"{cell['id'][:58]}-r{k}"
        copies.append(copy)
    return copies


def scratch_course(root: Path, modules: list[str], solutions: Path = REPO / "solutions",
                   measurements: bool = False, repeat: int = 1) -> Course:
    """A course in ``root`` (empty or new) with ``modules`` copied from ``solutions`` (with ``measurements``,
    each notebook :func:`measurements_only`, its checks ``repeat`` times) and their student versions generated
    (its gradebook is ``root/.nbgrader/gradebook.db``, never the real course's)."""
    root = Path(root)
    for module in modules:
        shutil.copytree(Path(solutions) / module, root / "solutions" / module,
                        ignore=shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__"))
        for path in (root / "solutions" / module).glob("*.ipynb") if measurements else ():
            nbformat.write(measurements_only(nbformat.read(str(path), as_version=4), repeat), str(path))
    course = Course(root)
    for module in modules:
        generate(course, module)
    return course


def add_submission(course: Course, module: str, student: str, version: str = "reference") -> Path:
    """Submit the reference solution (``version="reference"``) or the unmodified student version
    (``"student"``) of ``module`` as ``student``; replaces an earlier copy."""
    target = course.folder("submitted", student, module)
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(course.folder(VERSIONS[version], module), target,
                    ignore=shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__"))
    return target


@dataclass(frozen=True)
class TaskResult:
    """One graded cell of one run: its points and the grader's text in the autograded notebook."""

    notebook: str
    cell: str  # nbgrader grade id
    tasks: tuple[str, ...]  # the check tasks it calls, e.g. ("m02.occupancy",)
    score: float
    max_score: float
    verdict: str  # the cell's output after grading: the bilingual verdict of a check cell

    @property
    def name(self) -> str:
        return f"{self.notebook}/{self.cell}" + (f" ({', '.join(self.tasks)})" if self.tasks else "")

    @property
    def full(self) -> bool:
        return self.score >= self.max_score - 1e-9


@dataclass(frozen=True)
class Run:
    """One graded copy: the export row's totals, status and reason, and its cells."""

    module: str
    student: str
    score: float
    max_score: float
    status: str
    reason: str
    tasks: tuple[TaskResult, ...]

    @property
    def full(self) -> bool:
        return self.max_score > 0 and self.score >= self.max_score - 1e-9

    @property
    def lost(self) -> list[TaskResult]:
        return [t for t in self.tasks if not t.full]

    @property
    def earned(self) -> list[TaskResult]:
        return [t for t in self.tasks if t.score > 0]


def cell_text(outputs: list) -> str:
    """What a graded cell shows: its printed text (the grader's verdict) and any error."""
    parts = []
    for out in outputs:
        if out.get("output_type") == "stream":
            parts.append(out.get("text", ""))
        elif out.get("output_type") == "error":
            parts.append(f"{out.get('ename', 'error')}: {out.get('evalue', '')}\n")
        elif "text/plain" in out.get("data", {}):
            parts.append(str(out["data"]["text/plain"]) + "\n")
    return "".join(parts).strip()


def task_results(course: Course, module: str, student: str) -> list[TaskResult]:
    """Every graded cell of ``student``'s graded ``module``, from the gradebook and the autograded notebooks."""
    out = []
    with warnings.catch_warnings(), Gradebook(course.gradebook_url, course.course_id) as gb:
        warnings.simplefilter("ignore")  # SQLAlchemy warnings inside nbgrader's API (known, harmless)
        for nb in gb.find_submission(module, student).notebooks:
            path = course.folder("autograded", student, module, f"{nb.name}.ipynb")
            graded = nbformat.read(str(path), as_version=4) if path.exists() else nbformat.v4.new_notebook()
            cells = {c.metadata.get("nbgrader", {}).get("grade_id"): c for c in graded.cells}
            for grade in nb.grades:
                cell = cells.get(grade.name)
                source = cell.source if cell is not None else ""
                out.append(TaskResult(nb.name, grade.name, tuple(c.task for c in records.calls(source)),
                                      float(grade.score or 0), float(grade.max_score or 0),
                                      cell_text(cell.get("outputs", [])) if cell is not None else ""))
    return out


def grade_copies(course: Course, module: str, runs: int, version: str = "reference", workers: int | None = None,
                 isolate: bool | None = None, out=None, limits: Limits = Limits()) -> list[Run]:
    """Grade ``runs`` copies of ``module``'s reference (or blank student version) in one class; one Run each."""
    students = [f"{version}-{i}" for i in range(1, runs + 1)]
    for student in students:
        add_submission(course, module, student, version)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", module=r"nbgrader\.")  # SQLAlchemy's, from nbgrader in this process
        grade_class(course, module, students, workers, limits, isolate=isolate, out=out)
    rows = {r["student_id"]: r for r in export.rows(course, [module])}
    return [Run(module, s, float(rows[s]["score"] or 0), float(rows[s]["max_score"] or 0), rows[s]["status"],
                rows[s]["reason"], tuple(task_results(course, module, s))) for s in students]


def check(solutions_root: Path, modules: list[str] | None, runs: int, workers: int | None = None,
          isolate: bool | None = None, out=None, scratch: Path | None = None) -> dict[str, list[Run]]:
    """Grade each reference solution of ``solutions_root/solutions`` ``runs`` times in a scratch course."""
    import tempfile
    known = exercise_modules(solutions_root)
    for module in modules or []:
        if module not in known:
            raise GradingError(msg("grading.no_assignment", assignment=module, root=solutions_root).text())
    modules = modules or known
    with tempfile.TemporaryDirectory(prefix="aihw-check-", dir=scratch) as tmp:
        course = scratch_course(Path(tmp), modules, Path(solutions_root) / "solutions")
        return {m: grade_copies(course, m, runs, "reference", workers, isolate, out) for m in modules}


def machine() -> str:
    """One line: CPU model and cores, accelerators (``autograder.hardware.detect``)."""
    from .. import hardware
    report = hardware.detect()
    cpu = report.cpu
    accelerators = ", ".join(f"{a.name} ({a.device})" for a in report.accelerators) or "none"
    return (f"{cpu.model}, {cpu.physical_cores or '?'} cores / {cpu.logical_cores or '?'} threads; "
            f"accelerators: {accelerators}")


def _points(value: float) -> str:
    return f"{value:g}"


def report(results: dict[str, list[Run]]) -> tuple[str, int]:
    """The per-module table (points of each run per task), the verdicts of lost points and a bilingual
    conclusion; returns the text and the number of tasks that lost points in some run."""
    lines, losing = [], []
    for module, runs in results.items():
        lines.append(f"## {module}")
        header = ["task"] + [f"run {i}" for i in range(1, len(runs) + 1)]
        names = list(dict.fromkeys(t.name for run in runs for t in run.tasks))
        by_run = [{t.name: t for t in run.tasks} for run in runs]
        width = max([len(header[0])] + [len(n) for n in names] + [5])
        lines.append(f"{header[0]:<{width}}  " + "  ".join(f"{h:>9}" for h in header[1:]))
        for name in names:
            cells = []
            for tasks in by_run:
                t = tasks.get(name)
                cells.append("-" if t is None else f"{_points(t.score)}/{_points(t.max_score)}" + ("" if t.full else " ✗"))
            lines.append(f"{name:<{width}}  " + "  ".join(f"{c:>9}" for c in cells))
        totals = [f"{_points(r.score)}/{_points(r.max_score)}" + ("" if r.full else " ✗") for r in runs]
        lines.append(f"{'total':<{width}}  " + "  ".join(f"{c:>9}" for c in totals))
        for i, run in enumerate(runs, 1):
            for t in run.lost:
                lines.append(f"  ✗ run {i}: {t.name} {_points(t.score)}/{_points(t.max_score)}")
                lines += [f"      {line}" for line in (t.verdict or "-").splitlines()]
                if f"{module}: {t.name}" not in losing:
                    losing.append(f"{module}: {t.name}")
            if not run.full and (run.reason or not run.lost):
                lines.append(f"  ✗ run {i}: {run.status}: {run.reason or '-'}")
                if not run.lost and f"{module}: {run.status}" not in losing:
                    losing.append(f"{module}: {run.status}")
        lines.append("")
    done = (msg("grading.check_lost", count=len(losing), tasks="; ".join(losing)) if losing
            else msg("grading.check_ok"))
    lines.append(f"{done.ko} / {done.en}")  # one line, both languages
    return "\n".join(lines), len(losing)
