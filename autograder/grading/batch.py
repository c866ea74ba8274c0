"""Grade a class in parallel: N workers, each submission in its own scratch course, one gradebook writer."""
from __future__ import annotations

import ctypes
import multiprocessing
import os
import signal
import sqlite3
import sys
import tempfile
import threading
import time
from collections import Counter
from datetime import datetime
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

from nbgrader.api import Gradebook, MissingEntry

from ..i18n import msg
from ..progress import progress
from . import sandbox, seeds
from .course import Course, GradingError, use_venv_tools
from .generate import generate
from .machine import graded_on
from .merge import merge, write_record
from .roster import id_problem
from .scratch import remove_tree, template
from .safetext import shown
from .worker import Job, Limits, Outcome, grade, preflight


def submissions(course: Course, assignment: str) -> list[str]:
    """Student ids (that the id rule accepts) with a submitted folder for ``assignment``."""
    folder = course.folder("submitted")
    if not folder.is_dir():
        return []
    return sorted(p.parent.name for p in folder.glob(f"*/{assignment}")
                  if p.is_dir() and not p.is_symlink() and not p.parent.is_symlink() and not id_problem(p.parent.name))


def grade_class(course: Course, assignment: str, students: list[str] | None = None, workers: int | None = None,
                limits: Limits = Limits(), isolate: bool | None = None, out=None,
                scheduler: str | None = None, new_seed: bool = False) -> list[Outcome]:
    """Autograde ``students`` (default: every submission) and merge the results; returns one Outcome each.

    Every grading of an assignment uses its seed and device secret (``seeds.of``; ``new_seed``: drawn again, for
    the whole class only, kept only if the batch completes where the gradebook is SQLite).

    ``isolate``: None = bubblewrap if available (else a notice), True = require it, False = no sandbox.
    ``scheduler``: a Dask scheduler's address (``tcp://host:8786``): one task per submission on its
    workers (see distributed.py; each worker decides ``isolate=None`` for itself); None = the local pool.

    No partial batch is written: before the first submission, one kernel is started as grading starts them
    (``worker.preflight``); outcomes are merged once every submission is graded and the batch's kernels
    started (``Health``), else :class:`BatchStopped` and the gradebook is untouched. After Ctrl-C, what was
    graded is merged (complete per submission).
    """
    use_venv_tools()
    for student in students or []:
        if id_problem(student):
            raise GradingError(id_problem(student).text())
    submitted = submissions(course, assignment)
    unknown = sorted(set(students or []) - set(submitted))
    if unknown:
        raise GradingError(msg("grading.not_submitted", assignment=assignment, students=", ".join(unknown)).text())
    if new_seed and students is not None:
        raise GradingError(msg("grading.new_seed_whole_class", assignment=assignment).text())
    students = students if students is not None else submitted
    if not students:
        raise GradingError(msg("grading.nothing_submitted", assignment=assignment,
                               folder=course.folder("submitted")).text())
    out = out or sys.stdout
    isolate = _isolation(isolate, out) if scheduler is None else isolate
    _ensure_in_gradebook(course, assignment)
    workers = max(1, min(workers or os.cpu_count() or 1, len(students)))
    _remove_stale_scratch()
    backup = backup_gradebook(course, out)
    scratch = Path(tempfile.mkdtemp(prefix=SCRATCH_PREFIX))
    (scratch / OWNER).write_text(_owner(os.getpid()), encoding="utf-8")
    graded, pending, stream = [], [], None  # outcomes as they finished; those not merged yet, with their context
    try:
        template(course, assignment, scratch / "template.db")
        (scratch / "device.lock").touch()
        drawn = seeds.of(course, assignment, new=new_seed)
        if new_seed:
            print(msg("grading.new_seed", assignment=assignment).text(), file=out)
        bwrap = sandbox.binary() if isolate else None  # resolved once, here: every worker launches this path
        jobs = [Job(course, assignment, s, str(scratch), drawn.seed, limits, isolate,
                    seeds.submission_key(drawn.secret, assignment, s), bwrap) for s in students]
        if scheduler is not None:
            from .distributed import run
            results = stream = run(jobs, scheduler, scratch, out)  # context: the worker's machine and hardware
        else:
            print(msg("grading.pool_started", count=len(jobs), workers=workers).text(), file=out)
            mechanism = sandbox.mechanism(isolate)
            hardware = _in_background(graded_on)  # detection (imports torch) overlaps the first gradings
            stream = _run(jobs, workers)
            results = ((o, lambda: {"graded_on": hardware(), "isolated": isolate, "limits": mechanism})
                       for o in stream)
        health = Health(len(jobs))
        for outcome, context in progress(results, total=len(jobs), desc=msg("grading.progress").text("en"),
                                         leave=True):
            graded.append(outcome)
            pending.append((outcome, context))
            health.check(outcome)
        _merge_all(course, pending)
    except KeyboardInterrupt:  # what was graded is complete per submission: kept
        if stream is not None:
            stream.close()  # the workers stop before the gradebook is written
        _merge_all(course, pending)
        raise GradingError(msg("grading.interrupted", graded=len(graded), total=len(students)).text()) from None
    except BatchStopped:  # nothing was merged
        raise
    except BaseException:
        if backup is not None:
            restore_gradebook(course, backup)
            print(msg("grading.gradebook_restored", backup=backup).text(), file=out)
        raise
    finally:
        if stream is not None:
            stream.close()  # a stopped batch: queued submissions are not started, running ones are stopped
        remove_tree(scratch)
    return sorted(graded, key=lambda o: o.student)


def _merge_all(course: Course, pending: list) -> None:
    """Merge each (outcome, context) of ``pending``, removing it once merged (a context that is a function is
    called first)."""
    with Gradebook(course.gradebook_url, course.course_id) as gb:
        while pending:
            outcome, context = pending[0]
            _merge_one(gb, course, outcome, context() if callable(context) else context)
            pending.pop(0)


class BatchStopped(GradingError):
    """The batch's kernels do not start: nothing was merged. The message says why (both languages, evidence)."""


STOP_AFTER = 3  # kernels that failed to start the same way. Nothing of a submission but its notebooks reaches the
# kernel, and a kernel fails to start before it runs them: a start failure is the machine's. One or two can be a
# passing hiccup (a start timeout on a loaded machine), the batch goes on and they say so; three alike, with no
# kernel of the batch started, or being most of its kernels, is a broken machine


class Health:
    """Whether the batch's kernels start. The batch stops when ``STOP_AFTER`` of them failed to start the same
    way (``Outcome.start_failure``) before any started, or when those are most of the kernels so far. A kernel
    that died while running a submission's code started: that is the submission's, never the batch's."""

    def __init__(self, total: int):
        self.total, self.started, self.failed, self.seen = total, 0, Counter(), 0
        self.example: dict[str, Outcome] = {}

    def check(self, outcome: Outcome) -> None:
        """Count ``outcome``'s kernel; raise :class:`BatchStopped` if the batch is broken."""
        self.seen += 1
        why = outcome.start_failure
        if why:
            self.failed[why] += 1
            self.example.setdefault(why, outcome)
        elif outcome.started:
            self.started += 1
        if not self.failed:
            return
        why, count = self.failed.most_common(1)[0]
        if count >= STOP_AFTER and (self.started == 0 or 2 * count > self.started + sum(self.failed.values())):
            kernel = next(k for k in self.example[why].kernels.values() if k.get("failure") == why)
            raise BatchStopped(kernel_failure(msg("grading.batch_stopped", count=count, seen=self.seen,
                                                  started=self.started, left=self.total - self.seen, why=why),
                                              kernel))


def kernel_failure(message, kernel: dict) -> str:
    """``message`` and the evidence: the kernel's PATH, its command and (once) the last lines of its stderr."""
    stderr = "\n".join(shown(line) for line in (kernel.get("stderr") or "").splitlines()[-STDERR_LINES:])
    return "\n".join([message.text(), msg("grading.kernel_evidence", path=shown(kernel.get("path") or "?"),
                                            command=shown(kernel.get("command") or "?")).text(), stderr or "-"])


STDERR_LINES = 20  # of a kernel's stderr, in a message (the grading record keeps more)


def _in_background(fn):
    """Start ``fn()`` in a daemon thread; returns a function that waits for its result. A Ctrl-C or the
    interpreter's exit never waits for the thread (a ThreadPoolExecutor's threads are joined at both)."""
    box = {}

    def run():
        try:
            box["value"] = fn()
        except Exception as exc:
            box["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()

    def result():
        thread.join()
        if "error" in box:
            raise box["error"]
        return box["value"]
    return result


def _merge_one(gb: Gradebook, course: Course, outcome: Outcome, context: dict) -> None:
    """``merge``; if it fails, the submission gets the error (its grades rolled back) and the batch goes on."""
    try:
        merge(gb, course, outcome, context)
    except Exception as exc:
        gb.db.rollback()
        outcome.error = msg("grading.merge_failed", detail=f"{type(exc).__name__}: {exc}".splitlines()[0][:200]).en
        try:
            write_record(course, outcome, context)
        except Exception:
            pass


SCRATCH_PREFIX = "aihw-grade-"
OWNER = "owner.pid"
BACKUPS_KEPT = 5


def backup_gradebook(course: Course, out) -> Path | None:
    """Copy a SQLite gradebook (sqlite3's backup API) to ``.nbgrader/backups/gradebook-<time>.db``,
    keeping the last few; other databases: one line saying backup is the database's job."""
    url = course.gradebook_url
    if not url.startswith("sqlite:///"):
        print(msg("grading.backup_not_sqlite").text(), file=out)
        return None
    db = Path(url[len("sqlite:///"):])
    if not db.exists():
        return None
    folder = course.private("backups")
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"gradebook-{datetime.now().strftime('%Y%m%d-%H%M%S-%f')}.db"
    _copy_sqlite(db, path)
    for old in sorted(folder.glob("gradebook-*.db"))[:-BACKUPS_KEPT]:
        old.unlink(missing_ok=True)
    return path


def restore_gradebook(course: Course, backup: Path) -> None:
    """Put ``backup`` back into the course's SQLite gradebook."""
    _copy_sqlite(backup, Path(course.gradebook_url[len("sqlite:///"):]))


def _copy_sqlite(src: Path, dst: Path) -> None:
    """Copy one SQLite database onto another with sqlite3's backup API (consistent while others read it)."""
    source, target = sqlite3.connect(src), sqlite3.connect(dst)
    try:
        with target:
            source.backup(target)
    finally:
        source.close()
        target.close()


def _owner(pid: int) -> str:
    try:
        import psutil
        return f"{pid} {psutil.Process(pid).create_time()}"
    except Exception:
        return f"{pid} 0"


def _remove_stale_scratch(max_age_s: float = 86400) -> None:
    """Scratch folders of earlier runs that were killed: older than a day, or whose grader is gone."""
    for folder in Path(tempfile.gettempdir()).glob(f"{SCRATCH_PREFIX}*"):
        try:
            info = os.lstat(folder)
            if not os.path.isdir(folder) or os.path.islink(folder) or info.st_uid != os.getuid():
                continue
            owner = (folder / OWNER).read_text(encoding="utf-8").split() if (folder / OWNER).is_file() else []
            gone = bool(owner) and _owner(int(owner[0])) != " ".join(owner)
            if gone or time.time() - info.st_mtime > max_age_s:
                remove_tree(folder)
        except (OSError, ValueError):
            continue


def _worker_setup() -> None:
    """Worker initializer (Linux): the worker is killed when its parent goes (``kill -9`` of the grader), and it runs
    in a session of its own. The sandboxed kernel does (bubblewrap's new session), and Linux schedules each session
    as a group: the referee's reference measurements, taken in the worker, then get the same share of the CPU as
    the learner's measurement they are compared with, whatever else runs in the grader's session."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
    try:
        os.setsid()
    except (OSError, AttributeError):
        pass


def _run(jobs: list[Job], workers: int):
    """Outcomes as they finish (in this process when there is one worker), after ``worker.preflight`` passed
    where the submissions are graded (else :class:`BatchStopped`)."""
    if workers == 1:
        _preflight(preflight(jobs[0]))
        yield from map(grade, jobs)
        return
    pool = ProcessPoolExecutor(workers, mp_context=_context(), initializer=_worker_setup)
    finished = False
    try:
        _preflight(pool.submit(preflight, jobs[0]).result())
        futures = {pool.submit(grade, job): job for job in jobs}
        for future in as_completed(futures):
            job = futures[future]
            try:
                yield future.result()
            except Exception as exc:  # the worker process itself died
                yield Outcome(job.student, job.assignment, job.seed, error=f"worker failed: {type(exc).__name__}: {exc}")
        finished = True
    finally:  # interrupted or failed: queued submissions are not started, and the workers (in their own sessions,
        # out of reach of Ctrl-C) are stopped rather than finishing the submissions they hold
        if not finished:
            _stop_workers(pool)
        pool.shutdown(wait=True, cancel_futures=True)


def _preflight(failed: dict | None) -> None:
    """Stop before grading when the preflight kernel failed (``worker.preflight``'s answer)."""
    if failed is not None:
        raise BatchStopped(kernel_failure(msg("grading.preflight_failed", why=failed["why"]), failed))


def _stop_workers(pool: ProcessPoolExecutor) -> None:
    """Kill the pool's worker processes and everything they started. Each worker is frozen first, so that it
    launches nothing between the look at its descendants and the kill: a sandbox whose worker died before
    bubblewrap armed --die-with-parent would otherwise live on, its kernel waiting forever."""
    import psutil
    workers = []
    for process in list((getattr(pool, "_processes", None) or {}).values()):
        try:
            workers.append(psutil.Process(process.pid))
            workers[-1].suspend()
        except (psutil.Error, ValueError, TypeError):
            pass
    doomed = []
    for worker in workers:
        try:
            doomed += worker.children(recursive=True)
        except psutil.Error:
            pass
    for process in [*doomed, *workers]:
        try:
            process.kill()
        except psutil.Error:
            pass


def _context():
    """forkserver where there is one: workers start fast (modules preloaded once) and safely (not
    forked from a process with threads); spawn elsewhere."""
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("spawn")
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(["autograder.grading.worker"])
    return context


def _isolation(wanted: bool | None, out) -> bool:
    if wanted is False:
        print(msg("grading.no_isolation").text(), file=out)
        return False
    if sandbox.available():
        return True
    if wanted:
        raise GradingError(msg("grading.bwrap_missing").text())
    print(msg("grading.no_isolation").text(), file=out)
    return False


def _ensure_in_gradebook(course: Course, assignment: str) -> None:
    """nbgrader grades only assignments in the gradebook: record it from the source (exercises/ untouched)."""
    with Gradebook(course.gradebook_url, course.course_id) as gb:
        try:
            gb.find_assignment(assignment)
            return
        except MissingEntry:
            pass
    with tempfile.TemporaryDirectory() as release:
        generate(course, assignment, release_dir=Path(release))
