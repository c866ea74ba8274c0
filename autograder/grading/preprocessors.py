"""The nbgrader preprocessors of isolated grading, used in place of ``Execute`` and ``SaveAutoGrades``."""
from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

from nbclient.exceptions import CellTimeoutError
from nbformat import NotebookNode
from nbgrader.api import Gradebook
from nbgrader.preprocessors import Execute, SaveAutoGrades
from traitlets import Bool, Float, Integer, List, Unicode

from .. import reference
from ..checks.core import RECORD_MIME
from ..i18n import msg
from . import records, sandbox
from .kernel import SandboxedKernelManager, kernel_env
from .watchdog import Watchdog


class SandboxedExecute(Execute):
    """Runs the notebook in a kernel inside the sandbox, under a memory and a whole-notebook time limit.

    The kernel records its checks' answers (``COURSE_RECORD_ANSWERS=1``) for this run's
    ``seed``. Output beyond ``max_output_bytes`` per cell is dropped.
    """

    isolate = Bool(True, help="Run the kernel in bubblewrap (False: no isolation).").tag(config=True)
    private_paths = List(Unicode(), help="Folders the kernel must not see.").tag(config=True)
    lock_file = Unicode("", help="Device lock shared by the workers (measurement tasks).").tag(config=True)
    seed = Integer(0, help="Seed of the hidden cases for this submission.").tag(config=True)
    memory_limit = Integer(4 * 2**30, help="Resident memory of the kernel's processes, bytes.").tag(config=True)
    notebook_timeout = Float(1800, help="Wall time of the whole notebook, seconds.").tag(config=True)
    max_output_bytes = Integer(2**20, help="Output kept per cell (answer records: 16 times this).").tag(config=True)
    notes_file = Unicode("", help="JSON lines of what happened, for the export.").tag(config=True)

    def preprocess(self, nb, resources=None, km=None):
        self._workdir = (resources or {}).get("metadata", {}).get("path") or os.getcwd()
        self._notebook = (resources or {}).get("nbgrader", {}).get("notebook", "")
        self._current, self._sizes, self._cut = None, {}, set()
        self._run = Path(tempfile.mkdtemp(prefix="aihw-"))  # short: Unix socket paths are limited to ~100 bytes
        stopped = None
        try:
            with Watchdog(lambda: self.km.pid if self.km is not None else None, self.memory_limit,
                          self.notebook_timeout) as dog:
                try:
                    nb, resources = super().preprocess(nb, resources, km=km)
                except CellTimeoutError:  # a cell ignored the interrupt after its time limit
                    stopped = "cell"
                except Exception as exc:  # the kernel died or never started: keep what ran
                    stopped = f"{type(exc).__name__}: {exc}".splitlines()[0]
        finally:
            shutil.rmtree(self._run, ignore_errors=True)
        if dog.reason or stopped:
            self._stop(nb, dog.reason, stopped)
        for index in sorted(self._cut):
            note(self.notes_file, self._notebook, msg("grading.output_cut", cell=index).en)
        return nb, resources

    def create_kernel_manager(self):
        if not self.kernel_name:
            self.kernel_name = self.nb.metadata.get("kernelspec", {}).get("name", "python3")
        home = self._run / "home"
        home.mkdir()
        cache = home / "profiles"
        if reference.cache_dir().is_dir():  # this machine's measured profiles: measure once, not per submission
            shutil.copytree(reference.cache_dir(), cache)
        extra = {"COURSE_RECORD_ANSWERS": "1", "COURSE_GRADING_SEED": str(self.seed), "COURSE_NO_PROGRESS": "1",
                 "COURSE_CACHE_DIR": str(cache)}
        if self.lock_file:
            extra["COURSE_DEVICE_LOCK"] = self.lock_file
        writable = [Path(self._workdir), self._run] + ([Path(self.lock_file)] if self.lock_file else [])
        prefix = (sandbox.command(sandbox.isolation([Path(p) for p in self.private_paths], writable))
                  if self.isolate else [])
        self.km = SandboxedKernelManager(kernel_name=self.kernel_name, config=self.config, transport="ipc",
                                         ip=str(self._run / "kernel"), connection_file=str(self._run / "kernel.json"),
                                         prefix=prefix, env=kernel_env(str(home), extra))
        return self.km

    def on_cell_execute(self, **kwargs):
        self._current = kwargs["cell_index"]

    def output(self, outs, msg_, display_id, cell_index):
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
        elif detail == "cell":
            why = msg("grading.stopped_cell", limit=self.timeout)
        else:
            why = msg("grading.stopped_kernel", detail=detail)
        note(self.notes_file, self._notebook, why.en)
        code = [i for i, c in enumerate(nb.cells) if c.cell_type == "code"]
        index = self._current if self._current is not None else (code[0] if code else None)
        if index is not None:
            nb.cells[index].outputs.append(NotebookNode(output_type="error", ename="ExecutionStopped",
                                                        evalue=why.text(), traceback=[why.text()]))


class SaveRescoredGrades(SaveAutoGrades):
    """Saves grades; a check cell's grade comes from its answer records (``records.rescore``).

    The cell's outputs are replaced by the grader's verdict, and a test cell the
    submission deleted gets 0.
    """

    seed = Integer(0, help="Seed the kernel was given (SandboxedExecute.seed).").tag(config=True)
    notes_file = Unicode("", help="JSON lines of what happened, for the export.").tag(config=True)

    def preprocess(self, nb, resources):
        self._seen = set()
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
        verdict = records.rescore(cell.source, cell.outputs, self.seed, float(cell.metadata["nbgrader"]["points"]))
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
    if path:
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps({"notebook": notebook, "reason": text}, ensure_ascii=False) + "\n")
