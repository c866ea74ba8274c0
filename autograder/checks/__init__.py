"""Graded checks. A test cell calls :func:`check` with a task id such as ``"m01.picker"``."""
from __future__ import annotations

from dataclasses import replace
from typing import Any

from .. import modules
from ..i18n import msg
from .core import CheckFailed, Part, Task, cases_for, close, collect, emit, grading_seed, recording, report, scope, score_records

__all__ = ["check", "task", "close", "CheckFailed", "Part", "Task"]


def task(task_id: str) -> Task:
    """The task registered as ``task_id`` (``"mNN.name"``: ``TASKS["name"]`` in ``modules/mNN_*/tasks.py``)."""
    module, _, name = task_id.partition(".")
    found = (modules.tasks(module) or {}).get(name)
    if found is None:
        raise CheckFailed(msg("check.unknown_task", task=task_id).text())
    return replace(found, id=task_id)


def check(task_id: str, learner: Any, points: float, hidden: bool = False) -> float | None:
    """Grade ``learner`` (a function or value from the notebook) on task ``task_id``.

    Prints a bilingual verdict. Returns None for full marks, the points earned
    for partial credit, and raises :class:`CheckFailed` when nothing is right.
    ``hidden=True`` (present only in the instructor's version) adds random cases.
    """
    t = task(task_id)
    seed = grading_seed()
    records = collect(t, learner, cases_for(t, hidden, seed), task_id)
    emit(task_id, points, hidden, seed, records)
    if recording():  # the grader scores the record outside this kernel, with what it observed itself
        print(msg("grading.recorded").text())
        return None
    parts = score_records(t, records)
    try:
        earned = report(t.title, parts, points, scope(t, records, parts))
    except CheckFailed:
        VERDICTS[task_id] = 0.0
        raise
    VERDICTS[task_id] = points if earned is None else float(earned)
    return earned


VERDICTS: dict[str, float] = {}  # task id -> the points its last check in this kernel gave (standalone.submit_here)
