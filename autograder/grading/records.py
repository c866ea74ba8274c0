"""Re-score a test cell from the answers it recorded, in the grader's own process.

A check run by the grader displays its answers as a record (``RECORD_MIME``).
A record counts only if it is for the task, hidden flag and seed that the
*trusted* cell source and this grading run say, and its cases are exactly the
ones the grader draws itself; the answers are then scored here by the task's
``score`` with the reference answers. Nothing the submission did to numpy,
to the checks or to IPython in its own kernel reaches this code, and a cell
without a valid record (skipped, rewritten, timed out) earns nothing.
"""
from __future__ import annotations

import ast
import contextlib
import io
import json
from dataclasses import dataclass

from ..checks import task as find_task
from ..checks.core import RECORD_MIME, CheckFailed, cases_for, fraction, report, scope, score_records
from ..i18n import msg
from .safetext import shown


@dataclass(frozen=True)
class Call:
    """One ``check("mNN.name", obj, points=P, hidden=...)`` in a test cell's source."""

    task: str
    points: float
    hidden: bool


@dataclass(frozen=True)
class Verdict:
    earned: float
    text: str  # bilingual, for the feedback (control characters escaped: ``safetext.shown``)
    reason: str | None = None  # one line for the export when nothing valid was recorded


def calls(source: str) -> list[Call]:
    """The check calls of a test cell (empty if the cell is not a check cell)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    found = []
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "check"
                and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
            keywords = {k.arg: k.value for k in node.keywords}
            points = _constant(keywords.get("points"), node.args[2] if len(node.args) > 2 else None, default=1.0)
            hidden = _constant(keywords.get("hidden"), node.args[3] if len(node.args) > 3 else None, default=False)
            found.append(Call(node.args[0].value, float(points), bool(hidden)))
    return found


def payloads(outputs: list) -> list:
    """The records displayed in a cell's outputs."""
    found = [out["data"][RECORD_MIME] for out in outputs
             if out.get("output_type") in ("display_data", "execute_result") and RECORD_MIME in out.get("data", {})]
    return [_decode(p) for p in found]


def _decode(payload):
    """Checks display their record as JSON text (NaN-safe); anything unreadable (nested too deep) is no record."""
    if not isinstance(payload, str):
        return payload
    try:
        return json.loads(payload)
    except (ValueError, RecursionError):
        return None


def rescore(source: str, outputs: list, seed: int, max_points: float, observed: dict | None = None) -> Verdict:
    """The points a check cell earns from its recorded answers (its ``calls`` must not be empty).

    ``observed``: what the grader's referee saw of this cell's measurement checks
    ("task|case" -> walls and reference) and simulated devices; it replaces whatever the kernel recorded.
    """
    found = calls(source)
    records = payloads(outputs)
    total = sum(c.points for c in found) or 1.0
    earned, texts, reasons = 0.0, [], []
    for call in found:
        task = find_task(call.task)
        expected = _dump(cases_for(task, call.hidden, seed))
        valid = [p for p in records if _valid(p, call, seed, expected)]
        if not valid:
            reason = msg("grading.no_record", task=call.task, why=_why(outputs))
            texts.append(reason.text())
            reasons.append(reason.en)
            continue
        if task.measurement or task.simulated:
            valid = [_with_observed(p, task, observed or {}) for p in valid]
        shares = [fraction(score_records(task, p["records"])) for p in valid]
        worst = valid[shares.index(min(shares))]
        earned += call.points / total * min(shares)
        parts = score_records(task, worst["records"])
        texts.append(_report(task.title, parts, call.points, scope(task, worst["records"], parts)))
    shown_text = "\n".join(shown(line) for text in texts for line in text.split("\n"))  # answers: the submission's
    return Verdict(round(max_points * earned, 2), shown_text, "; ".join(reasons) or None)


def _valid(payload, call: Call, seed: int, expected: str) -> bool:
    if not isinstance(payload, dict) or not isinstance(payload.get("records"), list):
        return False
    if (payload.get("task"), payload.get("hidden"), payload.get("seed")) != (call.task, call.hidden, seed):
        return False
    for record in payload["records"]:
        if not (isinstance(record, dict) and set(record) == {"case", "answer", "error"}
                and (record["error"] is None or isinstance(record["error"], str))):
            return False
    return _dump([r["case"] for r in payload["records"]]) == expected


def _with_observed(payload: dict, task, observed: dict) -> dict:
    """The payload with each case's ``observed`` taken from the grader, never from the kernel: for a measurement
    the rounds scored are the answers the kernel sent while the grader's clock ran; for a simulated device,
    what the grader's device did and was."""
    out = []
    for i, record in enumerate(payload["records"]):
        answer = record["answer"]
        seen = observed.get(f"{task.id}|{i}")
        if isinstance(answer, dict) and task.measurement:
            seen = seen or {}
            answer = {"rounds": seen.get("rounds", []),
                      "observed": {"walls": seen.get("walls", []), "reference": seen.get("reference", []),
                                   "spans": seen.get("spans", []), "attempts": seen.get("attempts", 1)}}
        elif isinstance(answer, dict):
            answer = {**answer, "observed": seen}
        out.append({**record, "answer": answer})
    return {**payload, "records": out}


def _why(outputs: list) -> str:
    """What the cell did instead of recording: its time limit if it was stopped there (the interrupt's
    KeyboardInterrupt is only how), else its error's name, or nothing."""
    errors = [out for out in outputs if out.get("output_type") == "error"]
    for out in sorted(errors, key=lambda o: o.get("ename") != "CellTimeoutError"):
        if out.get("ename") == "CellTimeoutError" and str(out.get("evalue") or "").strip():
            return str(out["evalue"]).strip().splitlines()[0][:160]
        else:
            text = f"{out.get('ename', 'error')}: {out.get('evalue', '')}".strip(": ").splitlines()
            return text[0][:160] if text else "error"
    return "-"


def _report(title, parts, points, checked=None) -> str:
    """The verdict text ``report`` prints (or raises) for these parts."""
    buffer = io.StringIO()
    try:
        with contextlib.redirect_stdout(buffer):
            report(title, parts, points, checked)
    except CheckFailed as failed:
        return str(failed)
    return buffer.getvalue().rstrip("\n")


def _constant(keyword, positional, default):
    node = keyword if keyword is not None else positional
    return node.value if isinstance(node, ast.Constant) else default


def _dump(value) -> str:
    return json.dumps(value, sort_keys=True)
