"""Grade a class on a Dask distributed cluster: one task per submission, the single writer stays here.

``grade_class(..., scheduler="tcp://HOST:PORT")`` sends each submission as one task. A task carries
what a worker machine needs and nothing more: the course's configuration and the assignment's
source and the template gradebook (each sent once, as a task of its own), and the submission's notebooks
and ``timestamp.txt`` (read here without following links, as the local pool does). On the worker,
``grade_remote`` builds a scratch course under ``$TMPDIR/aihw-dask-<uid>/`` and calls the same
``worker.grade`` as the local pool (same sandbox, limits, re-scoring); it returns plain data: the
outcome, the graded notebooks' bytes, the machine and the hardware profile it was graded on. This
process writes the notebooks to its own scratch folder and merges (``batch._merge_one``).

Faults are Dask's: a task whose worker dies is run again on another worker; after
``distributed.scheduler.allowed-failures`` deaths (default 3) the scheduler gives up on it
(``KilledWorker``), that submission is marked with the reason, and the batch goes on. Each outcome
records how many times its worker was lost (``attempts`` in the grading record, a note in the export).

Measurements: every worker process of a machine takes the same device lock file
(``$TMPDIR/aihw-dask-<uid>/device.lock``) before a measurement cell, so at most one measurement cell
runs per machine at a time, as with the local pool. Where workers are started with
``--resources device=1`` (one such worker per device), submissions of an assignment with measurement
cells ask for that resource: they go only to those workers, one at a time per device.
"""
from __future__ import annotations

import dataclasses
import os
import shutil
import socket
import tempfile
import threading
import time
from pathlib import Path
from typing import Iterator

from ..i18n import msg
from .course import Course, GradingError
from .scratch import (TIMESTAMP, MAX_FILE_BYTES, UnsafeFile, make_folder, read_regular, remove_tree, source_files,
                      write_new)
from .worker import Job, Outcome

DEVICE = "device"  # the worker resource a measurement submission asks for (``dask worker --resources device=1``)
CONNECT_S = 30
STALE_S = 86400


# ---------------------------------------------------------------- this side: the single writer

def run(jobs: list[Job], scheduler: str, scratch: Path, out) -> Iterator[tuple[Outcome, dict]]:
    """(outcome, record context) for each job as it finishes on the cluster at ``scheduler``."""
    try:
        from distributed import Client, as_completed
        from distributed.client import FutureCancelledError  # noqa: F401 (present in every supported version)
        from distributed.scheduler import KilledWorker
    except ImportError:
        raise GradingError(msg("grading.dask_missing").text()) from None
    try:
        client = Client(scheduler, timeout=CONNECT_S, set_as_default=False)
    except (OSError, TimeoutError) as exc:
        raise GradingError(msg("grading.dask_unreachable", address=scheduler,
                               detail=f"{type(exc).__name__}: {exc}".splitlines()[0]).text()) from None
    token = f"{int(time.time())}-{os.getpid()}-{os.urandom(4).hex()}"
    futures = {}
    try:
        course, assignment = jobs[0].course, jobs[0].assignment
        workers = client.scheduler_info(n_workers=-1)["workers"] if _new_info(client) else \
            client.scheduler_info()["workers"]
        resources = {}
        if measures(course, assignment):
            if any(DEVICE in (w.get("resources") or {}) for w in workers.values()):
                resources = {DEVICE: 1}
            else:
                print(msg("grading.dask_no_device_workers").text(), file=out)
        # what every task shares, as tasks of their own: a worker that dies with them loses nothing (the
        # scheduler computes them again; scattered data would be lost with it)
        shared = client.submit(_identity, course_files(course, assignment), key=f"course-{token}", pure=False)
        template = client.submit(_identity, (scratch / "template.db").read_bytes(), key=f"template-{token}",
                                 pure=False)
        for job in jobs:
            files, refused = submission_files(course, assignment, job.student)
            spec = {"token": token, "assignment": assignment, "student": job.student, "seed": job.seed,
                    "device_key": job.device_key, "limits": dataclasses.asdict(job.limits), "isolate": job.isolate,
                    "refused": refused}
            future = client.submit(grade_remote, shared, template, files, spec, key=f"grade-{token}-{job.student}",
                                   pure=False, resources=resources or None, retries=0)
            futures[future] = job
        print(msg("grading.dask_submitted", address=scheduler, workers=len(workers), count=len(jobs)).text(), file=out)
        for future in as_completed(list(futures), loop=client.loop):
            job = futures[future]
            lost = _losses(client, future.key)
            try:
                result = future.result()
                outcome, context = _received(result, scratch)
            except KilledWorker:
                outcome = Outcome(job.student, job.assignment, job.seed,
                                  error=msg("grading.worker_killed", times=lost).en)
                context = {"graded_on": {}, "machine": "", "worker": ""}
            except Exception as exc:  # the task raised (grade_remote itself never should) or was cancelled
                detail = f"{type(exc).__name__}: {exc}".splitlines()[0][:200] if str(exc) else type(exc).__name__
                outcome = Outcome(job.student, job.assignment, job.seed, error=msg("grading.remote_failed",
                                                                                 detail=detail).en)
                context = {"graded_on": {}, "machine": "", "worker": ""}
            if lost and not outcome.error:
                outcome.notes.append(msg("grading.retried", times=lost, machine=context.get("machine") or "?").en)
            future.release()
            yield outcome, {**context, "scheduler": scheduler, "attempts": lost + 1, "retried": lost > 0}
    finally:  # interrupted or failed: tasks not finished are cancelled; the workers' scratch is removed
        try:
            pending = [f for f in futures if not f.done()]
            if pending:
                client.cancel(pending)
            client.run(cleanup, token, on_error="ignore") if _run_on_error(client) else client.run(cleanup, token)
        except Exception:
            pass
        client.close()


def _new_info(client) -> bool:
    import inspect
    return "n_workers" in inspect.signature(client.scheduler_info).parameters


def _run_on_error(client) -> bool:
    import inspect
    return "on_error" in inspect.signature(client.run).parameters


def _losses(client, key: str) -> int:
    """How many times the scheduler lost the worker running ``key`` (its ``suspicious`` count)."""
    def suspicious(dask_scheduler, key):  # nested: pickled by value, the scheduler needs no course installed
        task = dask_scheduler.tasks.get(key)
        return int(getattr(task, "suspicious", 0) or 0) if task is not None else 0
    try:
        return client.run_on_scheduler(suspicious, key=key)
    except Exception:
        return 0


def _received(result: dict, scratch: Path) -> tuple[Outcome, dict]:
    """The worker's plain data back as an Outcome whose graded notebooks are in this machine's ``scratch``."""
    outcome = Outcome(**result["outcome"])
    notebooks = result.get("notebooks") or {}
    if notebooks:
        folder = make_folder(scratch, "returned", outcome.student, outcome.assignment)
        for name, data in notebooks.items():
            write_new(folder / name, data)
        outcome.autograded = str(folder)
    else:
        outcome.autograded = ""
    context = {k: result[k] for k in ("graded_on", "machine", "worker", "isolated", "limits") if k in result}
    return outcome, context


def course_files(course: Course, assignment: str) -> dict:
    """What every task of this batch shares: the course's configuration files and the assignment's source."""
    config = {name: (course.root / name).read_bytes() for name in ("nbgrader_config.py", "nbgrader_config.json")
              if (course.root / name).is_file()}
    source = course.folder("source", assignment)
    names = [f"{n}.ipynb" for n in course.notebooks(assignment)] + source_files(course, assignment)
    return {"config": config, "source": {name: (source / name).read_bytes() for name in names}}


def submission_files(course: Course, assignment: str, student: str) -> tuple[dict, list[str]]:
    """The submission's notebooks and timestamp (plain regular files only), and why a file was left out."""
    origin, files, refused = course.folder("submitted"), {}, []
    for name in [f"{n}.ipynb" for n in course.notebooks(assignment)] + [TIMESTAMP]:
        try:
            files[name] = read_regular(origin, f"{student}/{assignment}/{name}",
                                       2**16 if name == TIMESTAMP else MAX_FILE_BYTES)
        except FileNotFoundError:
            continue
        except UnsafeFile as exc:
            refused.append(exc.reason.en)
    return files, refused


def measures(course: Course, assignment: str) -> bool:
    """Whether a notebook of the assignment has a measurement cell."""
    import nbformat
    from .preprocessors import measures as cell_measures
    for name in course.notebooks(assignment):
        path = course.folder("source", assignment, f"{name}.ipynb")
        try:
            nb = nbformat.read(str(path), as_version=4)
        except (OSError, ValueError):
            continue
        if any(cell.cell_type == "code" and cell_measures(cell) for cell in nb.cells):
            return True
    return False


# ---------------------------------------------------------------- the worker's side

def base() -> Path:
    """This machine's folder for Dask grading (shared by its worker processes): scratch courses, device lock."""
    folder = Path(tempfile.gettempdir()) / f"aihw-dask-{os.getuid() if hasattr(os, 'getuid') else 0}"
    folder.mkdir(mode=0o700, exist_ok=True)
    if folder.is_symlink() or (hasattr(os, "getuid") and folder.stat().st_uid != os.getuid()):
        raise GradingError(f"{folder} is not this user's folder")
    return folder


def _identity(data):
    return data


_detection = None


def _hardware():
    """This machine's ``graded_on``, detected once per worker process in the background (it imports torch)."""
    global _detection
    if _detection is None:
        from concurrent.futures import ThreadPoolExecutor
        from .machine import graded_on
        _detection = ThreadPoolExecutor(1, thread_name_prefix="aihw-detect").submit(graded_on)
    return _detection


def dask_setup(worker=None) -> None:
    """``dask worker --preload autograder.grading.distributed``: the grader's modules are imported and the hardware
    detected when the worker starts, not during its first submission."""
    from . import worker as _  # noqa: F401 (nbgrader, nbconvert)
    _hardware()


def grade_remote(shared: dict, template: bytes, files: dict, spec: dict) -> dict:
    """One task: grade ``spec['student']`` with ``worker.grade`` in a scratch course on this machine; plain data
    back. Never raises (an exception the client cannot unpickle would leave its future waiting)."""
    try:
        return _grade_remote(shared, template, files, spec)
    except Exception as exc:
        detail = f"{type(exc).__name__}: {exc}".splitlines()[0][:300]
        outcome = Outcome(spec["student"], spec["assignment"], spec["seed"],
                          error=msg("grading.remote_failed", detail=detail).en)
        return {"outcome": dataclasses.asdict(outcome), "notebooks": {}, "graded_on": {},
                "machine": socket.gethostname(), "worker": _worker_address()}


def _grade_remote(shared: dict, template: bytes, files: dict, spec: dict) -> dict:
    from . import sandbox, worker
    from .worker import Limits
    start = time.monotonic()
    hardware = _hardware()  # overlaps the grading
    here = base()
    _remove_stale(here, spec["token"])
    batch = here / spec["token"]
    course = _course(batch, shared, spec["assignment"])
    scratch = batch / "scratch"
    scratch.mkdir(exist_ok=True)
    _write_once(scratch / "template.db", template)
    # worker.grade locks <scratch>/device.lock: a hard link to the machine's lock file (flock locks the file,
    # whichever name opened it; filelock refuses symbolic links), so every batch of this machine shares it
    (here / "device.lock").touch()
    try:
        os.link(here / "device.lock", scratch / "device.lock")
    except FileExistsError:
        pass
    isolate = spec["isolate"]
    if isolate is None:
        isolate = sandbox.available()
    student, assignment = spec["student"], spec["assignment"]
    course.folder("submitted").mkdir(exist_ok=True)
    folder = make_folder(course.folder("submitted"), student, assignment)
    for name in os.listdir(folder):
        (folder / name).unlink()
    for name, data in files.items():
        write_new(folder / name, data)
    job = Job(course, assignment, student, str(scratch), spec["seed"], Limits(**spec["limits"]), isolate,
              spec["device_key"], sandbox.binary() if isolate else None)
    if isolate and not sandbox.available():
        outcome = Outcome(student, assignment, spec["seed"], error=msg("grading.bwrap_missing").en)
    elif (failed := _preflight(job, spec["token"])) is not None:
        outcome = Outcome(student, assignment, spec["seed"], error=msg("grading.kernel_not_started", detail=failed[
            "failure"]).en, kernels={worker.PREFLIGHT: failed})
    else:
        outcome = worker.grade(job)  # looked up at call time (tests wrap it to crash a worker)
    notebooks = {}
    if outcome.autograded and Path(outcome.autograded).is_dir():
        for name in course.notebooks(assignment):
            try:
                notebooks[f"{name}.ipynb"] = read_regular(Path(outcome.autograded), f"{name}.ipynb")
            except (FileNotFoundError, UnsafeFile):
                continue
    outcome.notes[:0] = list(spec.get("refused") or [])
    outcome.seconds = round(time.monotonic() - start, 2)
    remove_tree(scratch / "students" / student)
    (scratch / "students" / f"{student}.notes.jsonl").unlink(missing_ok=True)
    remove_tree(folder)
    data = dataclasses.asdict(outcome)
    data["autograded"] = ""
    return {"outcome": data, "notebooks": notebooks, "graded_on": hardware.result(), "machine": socket.gethostname(),
            "worker": _worker_address(), "isolated": isolate, "limits": sandbox.mechanism(isolate)}


_preflights: dict = {}  # (batch token, isolate) -> this worker process's preflight (None: its kernel answered)
_preflight_lock = threading.Lock()  # a worker's threads: the first task preflights, the others wait for it


def _preflight(job: Job, token: str) -> dict | None:
    """``worker.preflight`` once per batch in this worker process, before its first submission: a kernel record
    whose ``failure`` names the machine when it failed (counted by the batch's ``Health`` as a start failure)."""
    from . import worker
    key = (token, job.isolate)
    with _preflight_lock:
        if key not in _preflights:
            failed = worker.preflight(job)
            _preflights[key] = None if failed is None else {
                **failed, "failure": f"preflight on {socket.gethostname()}: {failed['why']}"[:300]}
        return _preflights[key]


def _course(batch: Path, shared: dict, assignment: str) -> Course:
    """This batch's course on this machine (configuration and source), made once by whichever task comes first."""
    root = batch / "course"
    if not root.is_dir():
        batch.mkdir(mode=0o700, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix="course-", dir=batch))
        for name, data in shared["config"].items():
            (staging / name).write_bytes(data)
        course = Course(staging, f"sqlite:///{staging / '.nbgrader' / 'gradebook.db'}")
        source = course.folder("source", assignment)
        for name, data in shared["source"].items():
            target = source / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        try:
            os.rename(staging, root)
        except OSError:  # another task of this machine made it first
            shutil.rmtree(staging, ignore_errors=True)
    return Course(root, f"sqlite:///{root / '.nbgrader' / 'gradebook.db'}")


def _write_once(path: Path, data: bytes) -> None:
    if path.exists():
        return
    fd, staging = tempfile.mkstemp(dir=path.parent)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
    os.replace(staging, path)


def _worker_address() -> str:
    try:
        from distributed import get_worker
        return get_worker().address
    except Exception:
        return ""


def _remove_stale(here: Path, current: str) -> None:
    """Batch folders of this machine older than a day (a grader that died without cleaning up)."""
    for folder in here.iterdir():
        try:
            if folder.name != current and folder.is_dir() and not folder.is_symlink() \
                    and time.time() - folder.stat().st_mtime > STALE_S:
                remove_tree(folder)
        except OSError:
            continue


def cleanup(token: str) -> None:
    """Remove this batch's folder on this machine (run on every worker when the batch ends)."""
    if "/" in token or token in ("", ".", ".."):
        return
    remove_tree(base() / token)
