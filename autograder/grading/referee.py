"""The grader's side of a measurement check (see :mod:`autograder.checks.referee`).

One :class:`RefereeServer` serves one kernel over a Unix socket in the kernel's run
folder. A measurement check in the cell that is running asks to begin; the server
times every learner round with its own clock and takes the reference measurement
between rounds, in this process, outside the sandbox. Its figures never go back
to the kernel: :meth:`observed` (by grade cell) is what the rescoring uses.

The server only serves the check calls written in the trusted source of the
running cell, at most ``task.rounds`` rounds per case. (The device lock is held
around the whole cell by ``SandboxedExecute``, before the kernel runs it.) While it
takes a reference the kernel is frozen (:class:`~.watchdog.Frozen`): a reference
during which a process of the kernel ran is taken again, and after ``TRIES`` such
references the case is void (nothing observed: the task scores 0). After a case's rounds the kernel asks whether to
measure it again: the server scores the attempt from its own figures and says yes, at most ``AGAIN`` times, while the
best attempt's miss is one the machine's load explains (:func:`~autograder.checks.referee.better`); the best attempt
is the one scored.
"""
from __future__ import annotations

import json
import socket
import threading
from pathlib import Path
from typing import Callable

from .. import clock
from ..checks import task as find_task
from ..checks.core import cases_for
from ..checks.referee import AGAIN, better, take_reference
from . import records
from .seeds import device_rng
from .watchdog import Frozen

MAX_LINE = 16 * 2**20  # one round's answer, as JSON
MAX_SPANS = 100_000  # spans of the course's clock a round may report
TRIES = 3  # references taken while the kernel is frozen before a round in which it kept running is void


class RefereeServer:
    """``cell()`` -> (grade id, trusted source) of the running cell, or None; ``kernel()`` -> the kernel's pid
    (None: nothing to freeze); ``device_key``: the submission's key of simulated devices (``seeds.device_rng``)."""

    def __init__(self, path: Path, seed: int, cell: Callable[[], tuple[str, str] | None],
                 kernel: Callable[[], int | None] = lambda: None, device_key: str = ""):
        self.path, self.seed, self.cell, self.kernel = Path(path), seed, cell, kernel
        self.device_key = device_key
        self.observations: dict[str, dict[str, dict]] = {}  # grade id -> "task|case" -> {walls, reference, rounds}
        self.kept: dict[str, dict[str, tuple]] = {}  # grade id -> "task|case" -> (attempts, the best attempt judged)

    def __enter__(self) -> "RefereeServer":
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._sock.bind(str(self.path))
        self.path.chmod(0o666)  # the kernel runs as another (mapped) user
        self._sock.listen(1)
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        try:
            self._sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._sock.close()
        self._thread.join(timeout=5)

    # ------------------------------------------------------------ serving
    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            with conn, conn.makefile("rw", encoding="utf-8") as stream:
                session: dict = {}
                try:
                    while True:
                        line = stream.readline(MAX_LINE)
                        if not line:
                            break
                        reply = self._handle(session, line)
                        stream.write(json.dumps(reply) + "\n")
                        stream.flush()
                except (OSError, ValueError, RecursionError):  # a broken client ends its own connection
                    pass

    def _handle(self, session: dict, line: str) -> dict:
        try:
            request = json.loads(line)
        except ValueError:
            return {"ok": False}
        if not isinstance(request, dict):
            return {"ok": False}
        op = request.get("op")
        if op == "begin":
            return self._begin(session, request.get("task"))
        if op == "end":
            session.clear()
            return {"ok": True}
        if not session or request.get("task") != session["task_id"]:
            return {"ok": False}
        if op in ("device", "call") and session["task"].simulated is not None:
            return self._device(session, op, request)
        case, rnd = request.get("case"), request.get("round")
        if op == "again":
            return self._again(session, case)
        if not (isinstance(case, int) and isinstance(rnd, int) and 0 <= case < len(session["cases"])
                and 0 <= rnd < session["task"].rounds) or case in session["void"]:
            return {"ok": False}
        seen = self.observations.setdefault(session["grade_id"], {}).setdefault(
            f"{session['task_id']}|{case}", _fresh())
        if op == "start":
            session["started"] = (case, rnd, clock.PERF())
            return {"ok": True}
        if op == "finish" and session.get("started", (None, None))[:2] == (case, rnd):
            wall = clock.PERF() - session.pop("started")[2]
            seen["spans"][rnd] = _spans(request.get("spans"))
            reference = self._reference(session["task"], session["cases"][case], request.get("answer"))
            if reference is VOID:
                session["void"].add(case)
                self.observations[session["grade_id"]].pop(f"{session['task_id']}|{case}")
                return {"ok": False}
            seen["walls"][rnd] = wall
            seen["rounds"][rnd] = request.get("answer")  # the round's answer as sent then: the one that is scored
            seen["reference"][rnd] = reference
            return {"ok": True}
        return {"ok": False}

    def _again(self, session: dict, case) -> dict:
        """Judge the attempt just made at ``case`` from this server's figures: keep it if it is the best so far,
        and say whether to measure the case again (then its next rounds start afresh)."""
        key = f"{session['task_id']}|{case}"
        tasks = self.observations.get(session["grade_id"], {})
        if not isinstance(case, int) or case in session["void"] or key not in tasks or "device" in tasks[key]:
            return {"ok": False}
        attempt = _plain(tasks[key])
        if not attempt["rounds"]:
            return {"ok": True, "again": False}
        kept = self.kept.setdefault(session["grade_id"], {})
        attempts, best = kept.get(key, (0, None))
        best = better(session["task"], session["cases"][case], attempt, best)
        kept[key] = (attempts + 1, best)
        if best[1] and attempts + 1 <= AGAIN:
            tasks[key] = _fresh()
            return {"ok": True, "again": True}
        return {"ok": True, "again": False}

    def _reference(self, task, case, answer):
        """The reference, taken while no process of the kernel runs; ``VOID`` when one ran every time."""
        for _ in range(TRIES):
            with Frozen(self.kernel()) as kernel:
                reference = take_reference(task, case, answer)
                if not kernel.worked():
                    return reference
        return VOID

    def _begin(self, session: dict, task_id) -> dict:
        running = self.cell()
        if running is None or not isinstance(task_id, str):
            return {"ok": False}
        grade_id, source = running
        call = next((c for c in records.calls(source) if c.task == task_id), None)
        if call is None:
            return {"ok": False}  # only the checks the trusted cell itself calls
        task = find_task(task_id)
        if not (task.measurement or task.simulated):
            return {"ok": False}
        session.clear()
        session.update(task_id=task_id, task=task, grade_id=grade_id, cases=cases_for(task, call.hidden, self.seed),
                       void=set())
        for key in [k for k in self.observations.get(grade_id, {}) if k.startswith(task_id + "|")
                    and task.measurement]:
            del self.observations[grade_id][key]  # a check run again starts afresh (a device replaces its case's)
            self.kept.get(grade_id, {}).pop(key, None)
        return {"ok": True}

    def _device(self, session: dict, op: str, request: dict) -> dict:
        """A simulated device held here: ``device`` makes the one of a trusted case (parameters drawn from the
        submission's key, the task and the case: the same at every grading) and tells the kernel only the attributes
        the device's ``shown`` names; ``call`` runs one of its public methods; handles stand for what is not plain
        data."""
        if op == "device":
            cases = [json.dumps(c, sort_keys=True) for c in session["cases"]]
            wanted = json.dumps(request.get("case"), sort_keys=True)
            if wanted not in cases:
                return {"ok": False}
            case = cases.index(wanted)
            made = session["task"].simulated(session["cases"][case],
                                             device_rng(self.device_key, session["task_id"], session["cases"][case]))
            session.update(device=made, handles={})
            self.observations.setdefault(session["grade_id"], {})[f"{session['task_id']}|{case}"] = {"device": made}
            public = {k: getattr(made, k) for k in getattr(made, "shown", ())}  # what the device tells its user
            methods = [m for m in dir(made) if not m.startswith("_") and callable(getattr(made, m))]
            return {"ok": True, "attrs": public, "methods": methods}
        made, name = session.get("device"), request.get("method")
        if made is None or not isinstance(name, str) or name.startswith("_") or not callable(getattr(made, name, None)):
            return {"ok": False}
        args = request.get("args") if isinstance(request.get("args"), list) else []
        try:
            args = [session["handles"][a["$handle"]] if isinstance(a, dict) and "$handle" in a else a for a in args]
            result = getattr(made, name)(*args)
        except (KeyError, TypeError) as exc:
            return {"ok": False, "error": ["TypeError", str(exc)]}
        except Exception as exc:  # the device's own errors, raised again in the kernel
            return {"ok": False, "error": [type(exc).__name__, str(exc)]}
        if result is None or isinstance(result, (int, float, str, bool, list, dict)):
            return {"ok": True, "result": result}
        ref = len(session["handles"])
        session["handles"][ref] = result
        attrs = {k: v for k, v in vars(result).items() if not k.startswith("_") and isinstance(v, (int, float, str))}
        return {"ok": True, "result": {"$handle": ref, "attrs": attrs}}

    # ------------------------------------------------------------ for the rescoring
    def observed(self) -> dict:
        """Plain data: grade id -> "task|case" -> {"walls", "reference", "spans", "rounds": [...] in round order,
        "attempts"}
        (of a case measured again, its best attempt), or for a simulated device what its ``_observed()`` says."""
        out = {}
        for grade_id, tasks in self.observations.items():
            kept = self.kept.get(grade_id, {})
            out[grade_id] = {key: v["device"]._observed() if "device" in v else
                             _flat(*kept[key]) if key in kept else _flat(1, (0.0, False, _plain(v)))
                             for key, v in tasks.items()}
        return out


VOID = object()  # a reference during which the kernel kept running


def _spans(sent) -> list:
    """The spans a round reports (``[seconds per call, label]``), as plain data: what is not such a pair is left out,
    at most ``MAX_SPANS``."""
    rows = sent if isinstance(sent, list) else []
    return [[float(r[0]), r[1][:40]] for r in rows[:MAX_SPANS] if isinstance(r, list) and len(r) == 2
            and isinstance(r[0], (int, float)) and not isinstance(r[0], bool) and isinstance(r[1], str)]


def _fresh() -> dict:
    """An attempt at a case before its rounds: by round, the answer, the wall, the reference and the spans timed."""
    return {"walls": {}, "reference": {}, "rounds": {}, "spans": {}}


def _plain(seen: dict) -> dict:
    """One attempt's figures as the answer a task scores: ``{"rounds", "observed": {"walls", "reference",
    "spans"}}``."""
    return {"rounds": _ordered(seen["rounds"]),
            "observed": {"walls": _ordered(seen["walls"]), "reference": _ordered(seen["reference"]),
                         "spans": _ordered(seen["spans"])}}


def _flat(attempts: int, judged: tuple) -> dict:
    """An attempt (``better``'s ``(score, busy, answer)``) as :meth:`RefereeServer.observed` gives it."""
    answer = judged[2]
    return {"walls": answer["observed"]["walls"], "reference": answer["observed"]["reference"],
            "spans": answer["observed"]["spans"], "rounds": answer["rounds"], "attempts": attempts}


def _ordered(by_round: dict) -> list:
    """Values of rounds 0, 1, ... up to the first missing one."""
    out = []
    while len(out) in by_round:
        out.append(by_round[len(out)])
    return out
