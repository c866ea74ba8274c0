"""The nbgrader preprocessors of isolated grading, used in place of ``Execute`` and ``SaveAutoGrades``."""
from __future__ import annotations

import json
import os
import shutil
import stat
import tempfile
import time
from pathlib import Path

from filelock import FileLock
from nbclient.exceptions import CellTimeoutError
from nbformat import NotebookNode
from nbgrader.api import Gradebook
from nbgrader.preprocessors import Execute, SaveAutoGrades
from traitlets import Bool, Float, Integer, List, Unicode

from ..checks import task as find_task
from ..checks.core import RECORD_MIME, cases_for
from ..checks.expected import HIDDEN_ENV
from ..checks.referee import SOCKET_ENV
from ..reference import MEMORY_LIMIT_ENV
from ..i18n import msg, speaking
from ..lesson_save import KERNELSPEC
from . import languages, records, sandbox
from .kernel import SandboxedKernelManager, kernel_env
from .referee import RefereeServer
from .scratch import remove_tree
from .watchdog import Watchdog


OBSERVED = "aihw_observed"  # resources key: what the grader's referee saw, by grade cell
MAX_DATA_BYTES = 256 * 2**20  # data files copied into the kernel's work folder, in all


def private_copy(folder: Path, dest: Path) -> Path:
    """``dest``: the regular files directly in ``folder`` (links and special files left out), at most
    ``MAX_DATA_BYTES`` in all. The kernel works there, so nothing it creates or replaces reaches ``folder``."""
    dest.mkdir()
    left = MAX_DATA_BYTES
    for entry in sorted(os.scandir(folder), key=lambda e: e.name):
        if not entry.is_file(follow_symlinks=False) or entry.name.endswith(".ipynb"):
            continue
        try:
            fd = os.open(entry.path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
        except OSError:
            continue
        with os.fdopen(fd, "rb") as src:
            size = os.fstat(src.fileno()).st_size
            if not stat.S_ISREG(os.fstat(src.fileno()).st_mode) or size > left:
                continue
            left -= size
            with open(dest / entry.name, "wb") as out:
                shutil.copyfileobj(src, out)
    return dest


def hidden_cases(nb, seed: int) -> dict:
    """The hidden cases the notebook's trusted check cells will ask for, drawn by the grader (the
    sandbox hides the references that draw them): task id -> the cases after the visible ones."""
    drawn = {}
    for cell in nb.cells:
        if cell.cell_type != "code" or not cell.metadata.get("nbgrader", {}).get("grade"):
            continue
        for call in records.calls(cell.source):
            if call.hidden and call.task not in drawn:
                try:
                    task = find_task(call.task)
                except Exception:  # an unknown task earns nothing when rescored
                    continue
                drawn[call.task] = cases_for(task, True, seed)[len(cases_for(task, False, seed)):]
    return drawn


def measures(cell) -> bool:
    """Whether a graded cell's source calls a measurement check."""
    if not cell.metadata.get("nbgrader", {}).get("grade"):
        return False
    for call in records.calls(cell.source):
        try:
            if find_task(call.task).measurement:
                return True
        except Exception:  # an unknown task earns nothing when rescored; it needs no device
            continue
    return False


class SandboxedExecute(Execute):
    """Runs the notebook in a kernel inside the sandbox, under a memory and a whole-notebook time limit.

    The kernel records its checks' answers (``COURSE_RECORD_ANSWERS=1``) for this run's
    ``seed``. Output beyond ``max_output_bytes`` per cell is dropped.
    """

    isolate = Bool(True, help="Run the kernel in bubblewrap (False: no isolation).").tag(config=True)
    private_paths = List(Unicode(), help="Folders the kernel must not see.").tag(config=True)
    lock_file = Unicode("", help="Device lock shared by the workers, held by the grader around each measurement check."
                        ).tag(config=True)
    seed = Integer(0, help="Seed of the hidden cases for this submission.").tag(config=True)
    device_key = Unicode("", help="Key of this submission's simulated devices (seeds.submission_key); the kernel "
                         "never gets it.").tag(config=True)
    memory_limit = Integer(4 * 2**30, help="Resident memory of the kernel's processes, bytes.").tag(config=True)
    notebook_timeout = Float(1800, help="Wall time of the whole notebook, seconds.").tag(config=True)
    max_output_bytes = Integer(2**20, help="Output kept per cell (answer records: 16 times this).").tag(config=True)
    notes_file = Unicode("", help="JSON lines of what happened, for the export.").tag(config=True)
    measurement_timeout = Integer(0, help="Time limit of a cell that measures (it holds the device lock), seconds, "
                                  "when shorter than the cell limit; 0: the cell limit.").tag(config=True)
    bwrap = Unicode("", help="The sandbox program, an absolute path resolved by the grader "
                    "('': sandbox.binary()).").tag(config=True)

    def preprocess(self, nb, resources=None, km=None):
        resources = resources if resources is not None else {}
        self.timeout_func = self.cell_limit
        self._notebook = resources.get("nbgrader", {}).get("notebook", "")
        self._current, self._sizes, self._cut, self._unreadable = None, {}, set(), set()
        self._started, self._km = False, None
        self._run = Path(tempfile.mkdtemp(prefix="aihw-"))  # short: Unix socket paths are limited to ~100 bytes
        folder = resources.setdefault("metadata", {}).get("path") or os.getcwd()
        self._workdir = private_copy(Path(folder), self._run / "work")
        resources["metadata"]["path"] = str(self._workdir)  # the kernel never works in a folder the grader writes
        (self._run / "cases.json").write_text(json.dumps(hidden_cases(nb, self.seed), allow_nan=True), encoding="utf-8")
        stopped = None
        try:
            with Watchdog(lambda: self.km.pid if self.km is not None else None, self.memory_limit,
                          self.notebook_timeout) as dog, \
                    RefereeServer(self._run / "referee.sock", self.seed, self._running_cell, dog.pid,
                                  self.device_key) as judge:
                self._dog = dog
                try:
                    nb, resources = super().preprocess(nb, resources, km=km)
                except CellTimeoutError:  # a cell ignored the interrupt after its time limit
                    stopped = "cell"
                except RecursionError:  # a message nested too deep to read: the grader's limit, not the kernel's death
                    stopped = "output"
                except Exception as exc:  # the kernel died or never started: keep what ran
                    stopped = f"{type(exc).__name__}: {exc}".splitlines()[0]
            resources["metadata"]["path"] = folder
            resources[OBSERVED] = judge.observed()
            kernel_record(self.notes_file, self._notebook, self._kernel(stopped if not dog.reason else None))
        finally:
            remove_tree(self._run)  # a folder the kernel left mode 000 too
        if dog.reason or stopped:
            self._stop(nb, dog.reason, stopped)
        for index in sorted(self._cut):
            note(self.notes_file, self._notebook, msg("grading.output_cut", cell=index).en)
        for index in sorted(self._unreadable):
            note(self.notes_file, self._notebook, msg("grading.output_unreadable", cell=index).en)
        return nb, resources

    def on_notebook_start(self, **kwargs):
        self._started = True  # the kernel replied to kernel_info: a death after this is no start failure

    def _kernel(self, stopped: str | None) -> dict:
        """For the grading record: whether the kernel started, how it failed to if it did not (``failure``: the
        error, the same text for kernels that failed the same way), the end of its stderr, its PATH and command."""
        km = self._km
        stderr = km.stderr() if km is not None else ""
        found = {"started": self._started, "stderr": stderr, "path": km.env.get("PATH", "") if km is not None else "",
                 "command": sandbox.describe(km.command) if km is not None else ""}
        if not self._started and stopped:  # the error only: what reaches the stderr pipe before a death can vary
            found["failure"] = stopped.replace(str(self._run), "<run>")[:300]
        return found

    def create_kernel_manager(self):
        self.kernel_name = course_kernel(self.nb, self.kernel_name, self.notes_file, self._notebook)
        home = self._run / "home"
        home.mkdir()
        extra = {"COURSE_RECORD_ANSWERS": "1", "COURSE_GRADING_SEED": str(self.seed), "COURSE_NO_PROGRESS": "1",
                 "COURSE_NO_INSTALL": "1",  # a submission's kernel installs nothing (optional.py)
                 "COURSE_CACHE_DIR": str(home / ".cache" / "ai-hardware-course"),
                 SOCKET_ENV: str(self._run / "referee.sock"), MEMORY_LIMIT_ENV: str(self.memory_limit),
                 HIDDEN_ENV: str(self._run / "cases.json")}
        if languages.language_of(self.nb):  # the course speaks the notebook's language (lesson.setup reads this)
            extra["COURSE_LANG"] = languages.language_of(self.nb)
        writable = [self._run]
        prefix = sandbox.prefix(writable, self.memory_limit, [Path(p) for p in self.private_paths], self.isolate,
                                self.bwrap or None)
        self.km = self._km = SandboxedKernelManager(
            kernel_name=self.kernel_name, config=self.config, transport="ipc", ip=str(self._run / "kernel"),
            connection_file=str(self._run / "kernel.json"), prefix=prefix, env=kernel_env(str(home), extra))
        return self.km

    def cell_limit(self, cell) -> int | None:
        """A cell's time limit (nbclient's ``timeout_func``): a measurement cell's own limit where it is shorter,
        so that a measurement cell stopped (or killed, if it ignores the interrupt) frees the device lock sooner."""
        if self.measurement_timeout and measures(cell):
            return min(self.timeout, self.measurement_timeout) if self.timeout and self.timeout > 0 \
                else self.measurement_timeout
        return self.timeout

    def preprocess_cell(self, cell, resources, index):
        """A cell whose trusted source runs a measurement check gets the device to itself: the grader takes
        the device lock before the kernel starts the cell (the wait counts against no time limit). A cell
        stopped at its time limit shows that limit."""
        why = msg("grading.cell_time_limit", limit=self.cell_limit(cell))
        self.error_on_timeout = {**self.error_on_timeout, "evalue": why.en, "traceback": [why.text()]}
        if not (self.lock_file and measures(cell)):
            return super().preprocess_cell(cell, resources, index)
        began = time.monotonic()
        with FileLock(self.lock_file):
            self._dog.pause(time.monotonic() - began)
            return super().preprocess_cell(cell, resources, index)

    def on_cell_execute(self, **kwargs):
        self._current = kwargs["cell_index"]

    def _running_cell(self) -> tuple[str, str] | None:
        """(grade id, source) of the cell running now, if it is a graded cell."""
        if self._current is None:
            return None
        cell = self.nb.cells[self._current]
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        return (grade_id, cell.source) if grade_id and cell.metadata["nbgrader"].get("grade") else None

    def output(self, outs, msg_, display_id, cell_index):
        try:
            return self._kept_output(outs, msg_, display_id, cell_index)
        except RecursionError:  # nested too deep for the grader to read: dropped, said once in the cell
            if cell_index not in self._unreadable:
                self._unreadable.add(cell_index)
                outs.append(NotebookNode(output_type="stream", name="stdout",
                                         text=msg("grading.output_unreadable", cell=cell_index).text() + "\n"))
            return None

    def _kept_output(self, outs, msg_, display_id, cell_index):
        content = msg_.get("content", {})
        record = RECORD_MIME in content.get("data", {})
        key = (cell_index, record)  # answer records have their own, larger budget
        size = len(content.get("text", "")) + sum(len(str(v)) for v in content.get("data", {}).values())
        self._sizes[key] = self._sizes.get(key, 0) + size
        if self._sizes[key] > self.max_output_bytes * (16 if record else 1):
            if cell_index not in self._cut:
                self._cut.add(cell_index)
                outs.append(NotebookNode(output_type="stream", name="stdout",
                                         text=msg("grading.output_cut", cell=cell_index).text() + "\n"))
            return None
        return super().output(outs, msg_, display_id, cell_index)

    def _stop(self, nb, reason: str | None, detail: str | None) -> None:
        """Say in the cell that was running (else the first code cell) why the notebook stopped there."""
        if reason == "memory":
            why = msg("grading.stopped_memory", limit=round(self.memory_limit / 2**30, 2))
        elif reason == "time":
            why = msg("grading.stopped_time", limit=round(self.notebook_timeout))
        elif reason == "processes":
            why = msg("grading.stopped_processes", limit=sandbox.Quota().processes)
        elif reason == "disk":
            why = msg("grading.stopped_disk", limit=round(sandbox.Quota().disk_bytes / 2**30, 2))
        elif detail == "cell" and self._current in self._cut:
            why = msg("grading.stopped_output_flood", limit=self.cell_limit(nb.cells[self._current]))
        elif detail == "cell":
            why = msg("grading.stopped_cell", limit=self.cell_limit(nb.cells[self._current])
                      if self._current is not None else self.timeout)
        elif detail == "output":
            why = msg("grading.stopped_output")
        elif not self._started:
            why = msg("grading.kernel_not_started", detail=detail)
        else:
            why = msg("grading.stopped_kernel", detail=detail)
        note(self.notes_file, self._notebook, why.en)
        code = [i for i, c in enumerate(nb.cells) if c.cell_type == "code"]
        index = self._current if self._current is not None else (code[0] if code else None)
        if index is not None:
            shown = why.text(languages.language_of(nb))
            nb.cells[index].outputs.append(NotebookNode(output_type="error", ename="ExecutionStopped",
                                                        evalue=shown, traceback=[shown]))


def course_kernel(nb, configured: str, notes_file: str, notebook: str) -> str:
    """The kernel every notebook is graded with: the course's (``configured``, else ``python3``), whatever
    kernelspec the notebook names (another or a missing kernel); a different name is noted."""
    used = configured or KERNELSPEC["name"]
    spec = nb.metadata.get("kernelspec")
    named = spec.get("name") if isinstance(spec, dict) else None
    if named is not None and named != used:
        note(notes_file, notebook, msg("grading.kernel_replaced", name=f"{notebook}.ipynb", named=str(named)[:64],
                                       used=used).en)
    return used


class SaveRescoredGrades(SaveAutoGrades):
    """Saves grades; a check cell's grade comes from its answer records (``records.rescore``).

    The cell's outputs are replaced by the grader's verdict, and a test cell the
    submission deleted gets 0.
    """

    seed = Integer(0, help="Seed the kernel was given (SandboxedExecute.seed).").tag(config=True)
    notes_file = Unicode("", help="JSON lines of what happened, for the export.").tag(config=True)

    def preprocess(self, nb, resources):
        self._seen = set()
        with speaking(languages.language_of(nb)):  # the verdicts in the notebook's language
            nb, resources = super().preprocess(nb, resources)
        with Gradebook(self.db_url) as gb:
            submitted = gb.find_submission_notebook(self.notebook_id, self.assignment_id, self.student_id)
            for grade in submitted.grades:
                if grade.name not in self._seen and grade.cell_type == "code" and grade.auto_score is None:
                    grade.auto_score, grade.needs_manual_grade = 0, False
                    note(self.notes_file, self.notebook_id, msg("grading.cell_missing", cell=grade.name).en)
            gb.db.commit()
        return nb, resources

    def _add_score(self, cell, resources) -> None:
        self._seen.add(cell.metadata["nbgrader"]["grade_id"])
        if cell.cell_type != "code" or not records.calls(cell.source):
            return super()._add_score(cell, resources)
        grade_id = cell.metadata["nbgrader"]["grade_id"]
        verdict = records.rescore(cell.source, cell.outputs, self.seed, float(cell.metadata["nbgrader"]["points"]),
                                  resources.get(OBSERVED, {}).get(grade_id, {}))
        grade = self.gradebook.find_grade(cell.metadata["nbgrader"]["grade_id"], self.notebook_id,
                                          self.assignment_id, self.student_id)
        grade.auto_score = verdict.earned
        grade.needs_manual_grade = grade.manual_score is not None
        self.gradebook.db.commit()
        if verdict.reason:
            note(self.notes_file, self.notebook_id, verdict.reason)
        cell.outputs = [NotebookNode(output_type="stream", name="stdout", text=verdict.text + "\n")]


def note(path: str, notebook: str, text: str) -> None:
    """Append one reason to the submission's notes (read by the worker for the export)."""
    _append(path, {"notebook": notebook, "reason": text})


def kernel_record(path: str, notebook: str, kernel: dict) -> None:
    """Append what is known of the notebook's kernel (``SandboxedExecute._kernel``) to the submission's notes."""
    _append(path, {"notebook": notebook, "kernel": kernel})


def _append(path: str, line: dict) -> None:
    if path:
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(line, ensure_ascii=False) + "\n")
