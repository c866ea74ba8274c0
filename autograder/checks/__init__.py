"""Graded checks. A test cell calls :func:`check` with a task id such as ``"m01.picker"``."""
from __future__ import annotations

from importlib import import_module
from typing import Any

from ..i18n import msg
from .core import CheckFailed, Part, Task, cases_for, collect, emit, grading_seed, recording, report, score_records

__all__ = ["check", "task", "CheckFailed", "Part", "Task"]


def task(task_id: str) -> Task:
    """The task registered as ``task_id`` (``"mNN.name"``: ``TASKS["name"]`` in ``checks/mNN.py``)."""
    module, _, name = task_id.partition(".")
    path = f"{__name__}.{module}"
    try:
        return import_module(path).TASKS[name]
    except ModuleNotFoundError as exc:
        if exc.name != path:  # a check module that fails to import is a bug to show, not an unknown task
            raise
    except KeyError:
        pass
    raise CheckFailed(msg("check.unknown_task", task=task_id).text())


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
    return report(t.title, score_records(t, records), points)
