"""Grade one submission in its own scratch course (runs in a worker process)."""
from __future__ import annotations

import json
import os
import stat
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

from nbconvert.preprocessors import ClearMetadataPreprocessor, Preprocessor
from nbgrader.api import Gradebook
from traitlets import Unicode
from nbgrader.preprocessors import AssignLatePenalties, CheckCellMetadata, IgnorePattern, LimitOutput

from ..i18n import msg
from .course import Course, api, without_library_warnings
from .intake import admit
from .preprocessors import SandboxedExecute, SaveRescoredGrades, note
from .scratch import prepare, remove_tree


@dataclass(frozen=True)
class Limits:
    """Per cell (None: the course's ``Execute.timeout``), per notebook, memory of the kernel, and per cell that
    measures (it holds the device lock; None: the course's ``SandboxedExecute.measurement_timeout``, else the
    cell limit)."""

    cell_s: int | None = None
    notebook_s: float = 1800.0
    memory_bytes: int = 4 * 2**30
    measurement_s: int | None = None


@dataclass(frozen=True)
class Job:
    course: Course
    assignment: str
    student: str
    scratch: str  # this grading run's scratch folder (template gradebook, device lock)
    seed: int  # the assignment's (seeds.of): the hidden cases
    limits: Limits = Limits()
    isolate: bool = True
    device_key: str = ""  # seeds.submission_key: the simulated devices' parameters (never given to the kernel)
    bwrap: str | None = None  # the sandbox program, resolved once by the grader (None: this process resolves it)


@dataclass
class Outcome:
    """What grading one submission produced; plain data, merged into the gradebook by the single writer."""

    student: str
    assignment: str
    seed: int
    grades: dict = field(default_factory=dict)  # notebook -> grade cell -> [auto_score, needs_manual_grade]
    comments: dict = field(default_factory=dict)  # notebook -> solution/task cell -> auto_comment
    late: dict = field(default_factory=dict)  # notebook -> late_submission_penalty
    timestamp: str | None = None
    notes: list = field(default_factory=list)  # one-line reasons (English) for the export
    error: str | None = None
    seconds: float = 0.0
    autograded: str = ""  # the scratch folder with the autograded notebooks
    kernels: dict = field(default_factory=dict)  # notebook -> its kernel: started, failure, stderr, PATH, command

    @property
    def start_failure(self) -> str | None:
        """How a kernel of this submission failed to start (before any of its code ran), or None."""
        return next((k["failure"] for k in self.kernels.values() if k.get("failure")), None)

    @property
    def started(self) -> bool:
        """Whether a kernel of this submission started (replied to kernel_info)."""
        return any(k.get("started") for k in self.kernels.values())


@without_library_warnings
def grade(job: Job) -> Outcome:
    """Autograde ``job`` with nbgrader in a scratch course; never raises."""
    start = time.monotonic()
    outcome = Outcome(job.student, job.assignment, job.seed)
    root = Path(job.scratch) / "students" / job.student
    notes = root.parent / f"{job.student}.notes.jsonl"  # outside the folder the kernel may write to
    try:
        outcome.notes += [r.en for r in prepare(job.course, job.assignment, job.student, root,
                                                Path(job.scratch) / "template.db")]
        submitted = root / "submitted" / job.student / job.assignment
        cells = _cells(root / "gradebook.db", job.assignment)
        for name in job.course.notebooks(job.assignment):
            path = submitted / f"{name}.ipynb"
            reason = admit(path, cells.get(name)) if path.exists() else \
                msg("grading.missing_notebook", name=path.name)
            if reason is not None:
                outcome.notes.append(reason.en)
        outcome.timestamp = _received(submitted)  # nbgrader reads the same file; kept when nothing is graded
        if any(submitted.glob("*.ipynb")):  # else nothing to grade: every cell gets 0 (see merge)
            result = api(job.course, _config(job, root, notes)).autograde(job.assignment, job.student,
                                                                          force=True, create=True)
            if not result.get("success"):
                outcome.error = _last_line(result.get("error") or result.get("log") or "autograde failed")
            _read_gradebook(outcome, root / "gradebook.db")
            outcome.autograded = str(root / "autograded" / job.student / job.assignment)
    except Exception as exc:  # one broken submission never stops the class
        outcome.error = f"{type(exc).__name__}: {exc}".splitlines()[0]
    if notes.exists():
        for line in map(json.loads, notes.read_text(encoding="utf-8").splitlines()):
            if "kernel" in line:
                outcome.kernels[line["notebook"]] = line["kernel"]
            else:
                outcome.notes.append(line["reason"])
    outcome.seconds = round(time.monotonic() - start, 2)
    return outcome


PREFLIGHT = "preflight"


def preflight(job: Job) -> dict | None:
    """Start one kernel exactly as grading ``job`` would (same launcher, sandbox, environment, limits), run
    ``6 * 7`` in it and stop it: None if it answered 42, else its kernel record (``SandboxedExecute._kernel``)
    with ``why``, what went wrong. Never raises."""
    import nbformat
    root = Path(job.scratch) / f"{PREFLIGHT}-{os.getpid()}-{time.monotonic_ns()}"  # one per worker process and call
    notes, work = root / "notes.jsonl", root / "work"
    try:
        work.mkdir(parents=True)
        nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("6 * 7")])
        run = SandboxedExecute(config=_config(replace(job, device_key=""), root, notes))  # no student's devices
        run.preprocess(nb, {"metadata": {"path": str(work)}, "nbgrader": {"notebook": PREFLIGHT}})
        lines = [json.loads(line) for line in notes.read_text(encoding="utf-8").splitlines()] if notes.exists() else []
        kernel = next((line["kernel"] for line in lines if "kernel" in line), {})
        answer = [o.get("data", {}).get("text/plain") for o in nb.cells[0].outputs if o.output_type == "execute_result"]
        if kernel.get("started") and answer == ["42"]:
            return None
        reasons = "; ".join(line["reason"] for line in lines if "reason" in line)
        return {**kernel, "why": kernel.get("failure") or reasons or f"6 * 7 gave {answer or nb.cells[0].outputs}"[:300]}
    except Exception as exc:
        return {"why": f"{type(exc).__name__}: {exc}".splitlines()[0][:300]}
    finally:
        remove_tree(root)


def _config(job: Job, root: Path, notes: Path):
    config = job.course.config()
    config.CourseDirectory.root = str(root)
    config.CourseDirectory.db_url = f"sqlite:///{root / 'gradebook.db'}"
    config.Autograde.autograde_preprocessors = [SandboxedExecute, Seal, IgnorePattern, ClearMetadataPreprocessor,
                                                LimitOutput, SaveRescoredGrades, AssignLatePenalties, CheckCellMetadata]
    run = config.SandboxedExecute
    run.isolate, run.seed, run.device_key, run.notes_file = job.isolate, job.seed, job.device_key, str(notes)
    run.bwrap = job.bwrap or ""
    run.shutdown_kernel = "immediate"  # its outputs are in; a graceful shutdown only waits (~0.2 s a submission)
    run.memory_limit, run.notebook_timeout = job.limits.memory_bytes, job.limits.notebook_s
    run.lock_file = str(Path(job.scratch) / "device.lock")
    run.private_paths = [str(job.course.root), job.scratch, str(config.Exchange.get("root", "/srv/nbgrader/exchange"))]
    if job.limits.cell_s:
        run.timeout = job.limits.cell_s
    if job.limits.measurement_s:
        run.measurement_timeout = job.limits.measurement_s
    run.error_on_timeout = {"ename": TIMEOUT, "evalue": "", "traceback": []}  # the text: SandboxedExecute
    config.Seal.notes_file = str(notes)
    config.SaveRescoredGrades.seed, config.SaveRescoredGrades.notes_file = job.seed, str(notes)
    return config


TIMEOUT = "CellTimeoutError"


class Seal(Preprocessor):
    """After the kernel: remove from the notebook's folder every entry that is not a plain regular file
    (links, FIFOs, sockets, devices, hard links), so that nbgrader writes the graded notebook and
    sets permissions only on files, never through a link the submission made; and note each cell
    stopped at its time limit (a later cell's error is only a consequence)."""

    notes_file = Unicode("", help="JSON lines of what happened, for the export.").tag(config=True)

    def __call__(self, nb, resources):  # always on (nbconvert's preprocessors are off by default)
        return self.preprocess(nb, resources)

    def preprocess(self, nb, resources):
        folder = (resources or {}).get("metadata", {}).get("path")
        if folder:
            seal(Path(folder))
        notebook = (resources or {}).get("nbgrader", {}).get("notebook", "")
        for index, cell in enumerate(nb.cells):
            for out in cell.get("outputs", []) if cell.cell_type == "code" else []:
                if out.get("output_type") == "error" and out.get("ename") == TIMEOUT:
                    note(self.notes_file, notebook, msg("grading.cell_timed_out", cell=index, why=out.get("evalue")).en)
                    break
        return nb, resources


def seal(folder: Path) -> None:
    for parent, dirs, files in os.walk(folder, topdown=True, followlinks=False):
        for name in dirs + files:
            path = os.path.join(parent, name)
            try:
                info = os.lstat(path)
            except FileNotFoundError:
                continue
            if stat.S_ISDIR(info.st_mode):
                continue
            if not stat.S_ISREG(info.st_mode) or info.st_nlink != 1:
                os.unlink(path)
        dirs[:] = [d for d in dirs if os.path.isdir(os.path.join(parent, d))
                   and not os.path.islink(os.path.join(parent, d))]


def _cells(db: Path, assignment: str) -> dict[str, set[str]]:
    """The grade ids of each notebook of ``assignment`` in the scratch gradebook (the instructor's cells)."""
    with Gradebook(f"sqlite:///{db}") as gb:
        return {nb.name: {c.name for c in nb.source_cells} for nb in gb.find_assignment(assignment).notebooks}


def _read_gradebook(outcome: Outcome, db: Path) -> None:
    with Gradebook(f"sqlite:///{db}") as gb:
        try:
            submission = gb.find_submission(outcome.assignment, outcome.student)
        except Exception:
            return
        outcome.timestamp = submission.timestamp.isoformat() if submission.timestamp else None
        for nb in submission.notebooks:
            outcome.late[nb.name] = nb.late_submission_penalty
            outcome.grades[nb.name] = {g.name: [g.auto_score, g.needs_manual_grade] for g in nb.grades}
            outcome.comments[nb.name] = {c.name: c.auto_comment for c in nb.comments}


def _received(folder: Path) -> str | None:
    """The time collect wrote in ``timestamp.txt`` (naive UTC, as nbgrader keeps it), or None."""
    from nbgrader.utils import parse_utc
    try:
        return parse_utc((folder / "timestamp.txt").read_text(encoding="utf-8").strip()).isoformat()
    except (OSError, ValueError, OverflowError):
        return None


def _last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1][:300] if lines else "autograde failed"
