"""Run a function on several torch.distributed ranks, from a notebook, on any OS; and the course's
one all-reduce bus-bandwidth measurement.

A function defined in a notebook cell cannot be pickled for the ``spawn`` start
method (macOS, Windows), so :func:`run` ships it as *source text*: the function,
the helper functions it calls and the modules it names are written to a small
module file that every rank imports. Each rank is a separate process started
with ``python -m autograder.ranks`` (on Linux one process imports torch once
and forks the ranks, which saves seconds). Ranks join a process group on
127.0.0.1 with a port that was free a moment before, their stdout/stderr go to
files (nothing reaches the notebook's stderr), every process group is destroyed,
and ranks that hang are killed after ``timeout_s``.

``run(fn, args, world_sizes=(4,))`` calls ``fn(*args)`` on every rank and
returns, for each world size, the list of the ranks' results (JSON data).
``run(program, args, learner=fn)`` calls ``program(fn, *args)`` instead: the
course's importable *program* sets up and checks, the learner's function works.

The measurement: :func:`measure_allreduce` (rank side: warm-up, a repetition count
the ranks agree on, the slowest rank's time) with :func:`bus_bandwidth`, nccl-tests'
convention; :func:`allreduce_rows` is the same as a rank program,
:func:`allreduce_busbw` starts its own ranks (module 06's report card). Module 05's
lesson, its measurement task's reference and the referee all use these.
"""
from __future__ import annotations

import builtins
import importlib
import importlib.util
import inspect
import json
import os
import platform
import shutil
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
import traceback
import types
from pathlib import Path
from typing import Any, Callable, Sequence

from .i18n import get_language, msg
from .progress import progress

PREAMBLE = "import math\nimport time\nimport torch\nimport torch.distributed as dist\n"
_PACKAGE_ROOT = str(Path(__file__).resolve().parent.parent)
_LEARNER_MODULE = "_course_rank_code"


class RanksError(RuntimeError):
    """The ranks failed, hung or returned nothing; the message says which rank and why."""


# ------------------------------------------------------------------ shipping a function as source
def _plain_constant(value: Any) -> bool:
    if isinstance(value, (bool, int, float, str, type(None))):
        return True
    if isinstance(value, (tuple, list)):
        return all(_plain_constant(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _plain_constant(v) for k, v in value.items())
    return False


def _names(code: types.CodeType) -> set[str]:
    found = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            found |= _names(const)
    return found


def _importable(obj: Any) -> bool:
    """True when ``obj`` can be imported by name from a real module file."""
    module = sys.modules.get(getattr(obj, "__module__", None) or "")
    return (module is not None and getattr(module, "__file__", None) is not None
            and getattr(module, "__name__", "") != "__main__"
            and "<locals>" not in getattr(obj, "__qualname__", "<locals>")
            and getattr(module, obj.__qualname__.split(".")[0], None) is not None)


def function_source(fn: Callable) -> str:
    """Module text that defines ``fn`` and what it uses: helper functions, modules, constants.

    Raises ValueError (bilingual) when the source cannot be found (a lambda, or code made with exec).
    """
    if not inspect.isfunction(fn):
        raise ValueError(msg("ranks.not_function", found=type(fn).__name__).text())
    parts: dict[str, str] = {}
    imports: dict[str, str] = {}
    seen: set[int] = set()

    def visit(f: Callable) -> None:
        if id(f) in seen:
            return
        seen.add(id(f))
        try:
            text = textwrap.dedent(inspect.getsource(f))
        except (OSError, TypeError):
            raise ValueError(msg("ranks.no_source", name=getattr(f, "__name__", "?")).text()) from None
        if f.__name__ == "<lambda>":
            raise ValueError(msg("ranks.no_source", name="lambda").text())
        for name in sorted(_names(f.__code__)):
            if name not in f.__globals__ or name in parts or name in imports:
                continue
            value = f.__globals__[name]
            if isinstance(value, types.ModuleType):
                real = value.__name__
                imports[name] = f"import {real}" if real == name else f"import {real} as {name}"
            elif inspect.isfunction(value) and _importable(value):
                imports[name] = f"from {value.__module__} import {value.__qualname__} as {name}"
            elif inspect.isfunction(value):
                visit(value)
            elif inspect.isclass(value) and _importable(value):
                imports[name] = f"from {value.__module__} import {value.__qualname__} as {name}"
            elif _plain_constant(value) and not hasattr(builtins, name):
                parts.setdefault(f"const:{name}", f"{name} = {value!r}\n")
        parts[f.__name__] = text

    visit(fn)
    lines = [line for line in sorted(set(imports.values())) if line not in PREAMBLE.splitlines()]
    constants = "".join(v for k, v in parts.items() if k.startswith("const:"))
    functions = "\n\n".join(v for k, v in parts.items() if not k.startswith("const:"))
    head = "\n".join([PREAMBLE.rstrip("\n"), *lines])
    return "\n\n\n".join(chunk.strip("\n") for chunk in (head, constants, functions) if chunk.strip()) + "\n"


def _target(fn: Callable | str) -> dict:
    """How a rank finds ``fn``: by module and name, or from shipped source."""
    if isinstance(fn, str):
        module, _, name = fn.partition(":")
        return {"module": module, "name": name}
    if _importable(fn):
        return {"module": fn.__module__, "name": fn.__qualname__}
    return {"source": function_source(fn), "name": fn.__name__}


# ------------------------------------------------------------------ the notebook side
def free_port() -> int:
    """A TCP port on 127.0.0.1 that nobody listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _env() -> dict:
    env = dict(os.environ)
    # like the spawn start method: the ranks see this process's import path (and this package first)
    paths = [_PACKAGE_ROOT] + [os.path.abspath(p or os.getcwd()) for p in sys.path if os.path.isdir(p or os.getcwd())]
    env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
    env.setdefault("OMP_NUM_THREADS", "1")  # several ranks share the cores
    env["PYTHONWARNINGS"] = "ignore"
    loopback = {"Linux": "lo", "Darwin": "lo0"}.get(platform.system())
    if loopback:
        env.setdefault("GLOO_SOCKET_IFNAME", loopback)
    return env


def _use_fork() -> bool:
    return platform.system() == "Linux" and hasattr(os, "fork")


# gloo's transport errors when a peer process vanished or stalled on an overloaded host: worth one more try
TRANSIENT = ("Connection reset by peer", "Connection closed by peer", "Broken pipe")


def run(fn: Callable | str, args: Sequence = (), world_sizes: Sequence[int] = (4,), *,
        learner: Callable | None = None, backend: str = "gloo", timeout_s: float = 120.0) -> list[list[Any]]:
    """Call ``fn(*args)`` (or ``fn(learner, *args)``) on each rank; one result list per world size.

    ``fn``/``learner``: a function (notebook functions are shipped as source) or ``"module:name"``.
    ``args`` must be JSON data. Raises :class:`RanksError` with a bilingual message on failure.
    A run that failed with a transport error (:data:`TRANSIENT`) is tried once more, on fresh ports.
    """
    world_sizes = [int(w) for w in world_sizes]
    if not world_sizes or min(world_sizes) < 1:
        raise ValueError(msg("ranks.bad_world", found=world_sizes).text())
    try:
        return _run_once(fn, args, world_sizes, learner, backend, timeout_s)
    except RanksError as exc:
        if not any(text in str(exc) for text in TRANSIENT):
            raise
    return _run_once(fn, args, world_sizes, learner, backend, timeout_s)


def _run_once(fn, args, world_sizes: list[int], learner, backend: str, timeout_s: float) -> list[list[Any]]:
    job_dir = Path(tempfile.mkdtemp(prefix="course_ranks_"))
    try:
        job = {"program": _target(fn), "learner": None if learner is None else _target(learner),
               "args": json.loads(json.dumps(list(args))), "backend": backend, "timeout_s": timeout_s,
               "groups": [{"world_size": w, "port": free_port()} for w in world_sizes]}
        (job_dir / "job.json").write_text(json.dumps(job), encoding="utf-8")
        deadline = time.monotonic() + 30.0 + (timeout_s + 15.0) * len(world_sizes)
        label = msg("ranks.progress", n=", ".join(map(str, world_sizes)))
        desc = f"{label.ko} / {label.en}" if get_language() == "both" else label.text()
        with progress(total=sum(world_sizes), desc=desc) as bar:
            if _use_fork():
                _wait([_start(job_dir, [])], deadline, job_dir, bar)
            else:
                for g, group in enumerate(job["groups"]):
                    _wait([_start(job_dir, [str(g), str(r)]) for r in range(group["world_size"])], deadline, job_dir, bar)
                    if not _group_ok(job_dir, g, group["world_size"]):
                        break  # the error is reported; later groups would only repeat it
        return [[_result(job_dir, g, r) for r in range(group["world_size"])]
                for g, group in enumerate(job["groups"])]
    finally:
        shutil.rmtree(job_dir, ignore_errors=True)


def _start(job_dir: Path, extra: list[str]) -> subprocess.Popen:
    tag = "_".join(extra) or "launcher"
    out = open(job_dir / f"out_{tag}.txt", "wb")
    kwargs = {"start_new_session": True} if os.name == "posix" else {}
    try:
        return subprocess.Popen([sys.executable, "-m", "autograder.ranks", str(job_dir), *extra],
                                stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                env=_env(), cwd=str(job_dir), **kwargs)
    finally:
        out.close()


def _wait(procs: list[subprocess.Popen], deadline: float, job_dir: Path, bar) -> None:
    """Wait for ``procs`` until ``deadline``, moving the progress bar as rank results appear; kill leftovers."""
    def advance() -> None:
        done = len(list(job_dir.glob("result_*.json")))
        if done > bar.n:
            bar.update(done - bar.n)

    try:
        while any(proc.poll() is None for proc in procs) and time.monotonic() < deadline:
            time.sleep(0.05)
            advance()
    finally:
        for proc in procs:
            if proc.poll() is None:
                _kill(proc)
        advance()


def _kill(proc: subprocess.Popen) -> None:
    """Kill a process this module started (and, on POSIX, the ranks it forked)."""
    try:
        if os.name == "posix":
            os.killpg(proc.pid, 9)
        else:
            proc.kill()
        proc.wait(timeout=10)
    except (ProcessLookupError, PermissionError, subprocess.TimeoutExpired, OSError):
        pass


def _result(job_dir: Path, g: int, r: int) -> Any:
    path = job_dir / f"result_{g}_{r}.json"
    if not path.exists():
        raise RanksError(msg("ranks.no_result", rank=r, log=_log_tail(job_dir)).text())
    record = json.loads(path.read_text(encoding="utf-8"))
    if not record["ok"]:
        raise RanksError(msg("ranks.failed", rank=r, error=record["error"]).text())
    return record["value"]


def _group_ok(job_dir: Path, g: int, world_size: int) -> bool:
    """True when every rank of group ``g`` wrote a successful result."""
    for r in range(world_size):
        path = job_dir / f"result_{g}_{r}.json"
        if not path.exists() or not json.loads(path.read_text(encoding="utf-8"))["ok"]:
            return False
    return True


def _log_tail(job_dir: Path, limit: int = 600) -> str:
    text = "\n".join(p.read_text(encoding="utf-8", errors="replace") for p in sorted(job_dir.glob("out_*.txt")))
    text = text.strip() or "-"
    return text[-limit:]


# ------------------------------------------------------------------ the rank side
def _load(target: dict | None, job_dir: Path, tag: str) -> Callable | None:
    if target is None:
        return None
    if "module" in target:
        obj: Any = importlib.import_module(target["module"])
        for part in target["name"].split("."):
            obj = getattr(obj, part)
        return obj
    path = job_dir / f"{_LEARNER_MODULE}_{tag}.py"
    if not path.exists():  # every rank may get here at once: each writes a file of its own, then renames it
        mine = path.with_name(f"{path.stem}.{os.getpid()}.tmp")
        mine.write_text(target["source"], encoding="utf-8")
        os.replace(mine, path)
    spec = importlib.util.spec_from_file_location(f"{_LEARNER_MODULE}_{tag}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return getattr(module, target["name"])


def _rank(job_dir: Path, job: dict, g: int, r: int) -> None:
    """Join group ``g`` as rank ``r``, run the program, write the result file."""
    from datetime import timedelta

    import torch
    import torch.distributed as dist

    group = job["groups"][g]
    record: dict = {"ok": False, "error": None}
    try:
        if job["backend"] == "nccl":
            torch.cuda.set_device(r % max(1, torch.cuda.device_count()))
        dist.init_process_group(job["backend"], init_method=f"tcp://127.0.0.1:{group['port']}", rank=r,
                                world_size=group["world_size"], timeout=timedelta(seconds=job["timeout_s"]))
        try:
            program = _load(job["program"], job_dir, "program")
            learner = _load(job["learner"], job_dir, "learner")
            args = job["args"]
            value = program(*args) if learner is None else program(learner, *args)
            record = {"ok": True, "value": json.loads(json.dumps(value))}
        finally:
            dist.destroy_process_group()
    except BaseException as exc:  # report anything, including SystemExit from learner code
        lines = traceback.format_exception(type(exc), exc, exc.__traceback__)
        record = {"ok": False, "error": "".join(lines[-4:]).strip()[-800:]}
    tmp = job_dir / f"result_{g}_{r}.tmp"
    tmp.write_text(json.dumps(record), encoding="utf-8")
    tmp.replace(job_dir / f"result_{g}_{r}.json")


def _launcher(job_dir: Path, job: dict) -> None:
    """Linux: import torch once, then fork every rank of each group in turn."""
    import torch  # noqa: F401  (imported before forking so that each rank starts warm)
    import torch.distributed  # noqa: F401

    for g, group in enumerate(job["groups"]):
        deadline = time.monotonic() + job["timeout_s"] + 10.0
        children = []
        for r in range(group["world_size"]):
            pid = os.fork()
            if pid == 0:
                code = 0
                try:
                    _rank(job_dir, job, g, r)
                except BaseException:
                    code = 1
                finally:
                    sys.stdout.flush()
                    os._exit(code)
            children.append(pid)
        pending = set(children)
        while pending and time.monotonic() < deadline:
            for pid in list(pending):
                done, _ = os.waitpid(pid, os.WNOHANG)
                if done:
                    pending.discard(pid)
            time.sleep(0.02)
        for pid in pending:  # hung ranks: ours, still unreaped, so the pid is still theirs
            os.kill(pid, 9)
            os.waitpid(pid, 0)
        if not _group_ok(job_dir, g, group["world_size"]):
            break  # the error is reported; later groups would only repeat it


# ------------------------------------------------------------------ the all-reduce measurement
# nccl-tests (doc/PERFORMANCE.md): busbw = algbw x factor(n), algbw = S / t with S the whole array
# (for all_gather / reduce_scatter: the per-rank count x n x element size).
BUSBW_FACTORS = {
    "all_reduce": lambda n: 2 * (n - 1) / n,
    "reduce_scatter": lambda n: (n - 1) / n,
    "all_gather": lambda n: (n - 1) / n,
    "all_to_all": lambda n: (n - 1) / n,
    "broadcast": lambda n: 1.0,
    "reduce": lambda n: 1.0,
    "send_recv": lambda n: 1.0,
}
GROWING_SIZES = (2**18, 2**20, 2**22, 2**24)  # bytes: what allreduce_busbw tries while its budget lasts


def bus_bandwidth(op: str, nbytes: float, seconds: float, n: int) -> float:
    """nccl-tests' bus bandwidth (GB/s) of collective ``op`` on ``n`` ranks: nbytes / seconds / 1e9 x factor(n)."""
    return nbytes / seconds / 1e9 * BUSBW_FACTORS[op](n)


def measure_allreduce(dist, sizes: Sequence[int], budget_s: float = 0.25, total_s: float | None = None,
                      device: str = "cpu", warmup: int = 3) -> list[dict]:
    """Rank side (every rank calls it): time ``dist.all_reduce`` of a float32 tensor of each size (bytes).

    Per size: ``warmup`` calls, one probe call, then as many calls as fill ``budget_s`` (at least
    3; the ranks take the largest count any of them asks for, so their calls match), timed from a
    barrier; the slowest rank's time counts. ``total_s``: a budget for everything, shared evenly by
    the sizes still to come; the ranks stop together before a size that would not fit.
    ``device="cuda"``: tensors on this rank's GPU, synchronised before the clock stops (nccl).
    Returns one row per measured size: ``nbytes``, ``seconds`` (one call), ``busbw_gbs``.
    """
    import torch

    world = dist.get_world_size()
    on_gpu = device == "cuda"
    dev = torch.device("cuda", torch.cuda.current_device()) if on_gpu else torch.device("cpu")
    sync = torch.cuda.synchronize if on_gpu else (lambda: None)
    began, rows = time.perf_counter(), []
    for i, size in enumerate(sizes):
        x = torch.ones(max(1, int(size) // 4), dtype=torch.float32, device=dev)
        for _ in range(warmup):  # the first calls set up connections and buffers
            dist.all_reduce(x)
        sync()
        start = time.perf_counter()
        dist.all_reduce(x)
        sync()
        probe = max(time.perf_counter() - start, 1e-6)
        budget, stop = budget_s, 0
        if total_s is not None:
            left = total_s - (time.perf_counter() - began)
            budget, stop = min(budget_s, left / (len(sizes) - i)), int(left < 3 * probe)
        plan = torch.tensor([max(3, int(budget / probe)), stop], dtype=torch.int64, device=dev)
        dist.all_reduce(plan, op=dist.ReduceOp.MAX)  # every rank makes the same calls
        if int(plan[1]):
            break
        reps = int(plan[0])
        dist.barrier()
        start = time.perf_counter()
        for _ in range(reps):
            dist.all_reduce(x)
        sync()
        elapsed = torch.tensor([time.perf_counter() - start], dtype=torch.float64, device=dev)
        dist.all_reduce(elapsed, op=dist.ReduceOp.MAX)  # the slowest rank sets the time
        nbytes, seconds = x.numel() * 4, float(elapsed) / reps
        rows.append({"nbytes": nbytes, "seconds": seconds, "busbw_gbs": bus_bandwidth("all_reduce", nbytes, seconds, world)})
    return rows


def allreduce_rows(sizes: list, budget_s: float = 0.25, total_s: float | None = None, device: str = "cpu") -> list[dict]:
    """Rank program: :func:`measure_allreduce` on this rank's process group."""
    import torch.distributed as dist
    return measure_allreduce(dist, sizes, budget_s, total_s, device)


def allreduce_busbw(world_size: int = 2, budget_s: float = 4.0, timeout_s: float = 120.0) -> dict | None:
    """All-reduce bus bandwidth (GB/s, nccl-tests convention: algbw x 2(n-1)/n) with gloo on CPU ranks.

    Starts ``world_size`` ranks (:func:`run`; their output is kept from the notebook); message
    sizes grow from 256 KiB while ``budget_s`` lasts (process start-up comes on top). Returns
    ``{"busbw_gbs", "nbytes", "rows", "world_size"}`` (the best size; each row has ``nbytes``,
    ``seconds``, ``busbw_gbs``), or None with a bilingual note printed if it cannot run.
    """
    try:
        rows = run(allreduce_rows, [list(GROWING_SIZES), budget_s, budget_s], [world_size], timeout_s=timeout_s)[0][0]
    except Exception as exc:  # no gloo, no subprocesses (restricted sandbox), a rank died: leave it out
        print(msg("ranks.allreduce_failed", error=f"{type(exc).__name__}: {exc}").text())
        return None
    if not rows:
        return None
    best = max(rows, key=lambda r: r["busbw_gbs"])
    return {"busbw_gbs": best["busbw_gbs"], "nbytes": best["nbytes"], "rows": rows, "world_size": world_size}


def main(argv: list[str]) -> None:
    job_dir = Path(argv[0])
    job = json.loads((job_dir / "job.json").read_text(encoding="utf-8"))
    if len(argv) == 1:
        _launcher(job_dir, job)
    else:
        _rank(job_dir, job, int(argv[1]), int(argv[2]))
    sys.stdout.flush()
    os._exit(0)  # skip torch's slow interpreter shutdown


if __name__ == "__main__":
    main(sys.argv[1:])
