"""The reference side of a task: its hidden cases and the expected answer of a case.

Both come from the instructor's package ``course_answers`` (``course_answers/<module
folder>.py``: ``EXPECT[name](case)`` -> the expected answer as JSON data,
``HIDDEN[name](rng)`` -> hidden cases). A learner's install does not have that
package: there the expected answers of the visible cases are read from the
module's ``expected.json``, which ``instructor generate`` writes from the same
references. While grading, the kernel gets its hidden cases from the grader
(the file named by ``COURSE_HIDDEN_CASES``), since the sandbox hides the package.
"""
from __future__ import annotations

import json
import math
import os
import random
from functools import lru_cache
from importlib import import_module
from pathlib import Path
from types import ModuleType
from typing import Any

from .. import modules
from ..i18n import msg
from .core import CheckFailed, canonical

PACKAGE = "course_answers"
HIDDEN_ENV = "COURSE_HIDDEN_CASES"
FILE = "expected.json"


class ReferenceMissing(CheckFailed):
    """The reference side of a case is not in this install (learner edition, or a stale ``expected.json``)."""


def answers(module_id: str) -> ModuleType | None:
    """``course_answers.<folder>``, or None where the instructor's package is absent (or hidden)."""
    name = f"{PACKAGE}.{modules.folder(module_id)}"
    try:
        return import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name in (PACKAGE, name):
            return None
        raise


def hidden_cases(task_id: str, rng: random.Random) -> list:
    """The hidden cases of ``task_id`` drawn with ``rng`` (the grader's, inside a grading kernel)."""
    given = os.environ.get(HIDDEN_ENV)
    if given:
        drawn = json.loads(Path(given).read_text(encoding="utf-8"))
        if task_id in drawn:
            return drawn[task_id]
    module_id, _, name = task_id.partition(".")
    source = answers(module_id)
    if source is None:
        raise ReferenceMissing(msg("check.no_hidden_cases", task=task_id).text())
    draw = getattr(source, "HIDDEN", {}).get(name)
    return [] if draw is None else list(draw(rng))


def want(task_id: str, case: Any) -> Any:
    """The expected answer for ``case`` as JSON data (None for a task scored without a reference)."""
    module_id, _, name = task_id.partition(".")
    source = answers(module_id)
    if source is not None:
        expect = getattr(source, "EXPECT", {}).get(name)
        return None if expect is None else canonical(expect(case))
    table = recorded(module_id)
    if name not in table:
        raise ReferenceMissing(msg("check.no_expected_file", task=task_id, file=FILE).text())
    if table[name] is None:
        return None
    key = _key(case)
    for seen, expected in table[name]:
        if _key(seen) == key:
            return expected
    raise ReferenceMissing(msg("check.no_expected_case", task=task_id).text())


def table(module_id: str) -> dict:
    """What ``expected.json`` holds for a module: each task's visible cases with their expected answers."""
    tasks = modules.tasks(module_id)
    source = answers(module_id)
    if source is None:
        raise ReferenceMissing(msg("check.no_hidden_cases", task=module_id).text())
    out = {}
    for name, task in sorted(tasks.items()):
        expect = getattr(source, "EXPECT", {}).get(name)
        cases = canonical(list(task.visible()))
        out[name] = None if expect is None else [[case, canonical(expect(case))] for case in cases]
    return out


def same(a: Any, b: Any) -> bool:
    """Whether two expected-answer tables agree: JSON data equal, floats to 1e-5 relative or 1e-6 absolute
    (references computed with torch differ in the last bits of float32 between CPUs, up to 1e-6 on sums of terms
    near 1; every task's tolerance is wider)."""
    if isinstance(a, float) and isinstance(b, (int, float)) or isinstance(b, float) and isinstance(a, (int, float)):
        return a == b or (math.isnan(a) and math.isnan(b)) or math.isclose(a, b, rel_tol=1e-5, abs_tol=1e-6)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return a == b


def dump(table_: dict) -> str:
    """``expected.json``'s text for a table (stable: tasks sorted, one ``[case, expected]`` a line)."""
    def line(value):
        return json.dumps(value, sort_keys=True, ensure_ascii=False, allow_nan=True)
    blocks = []
    for name in sorted(table_):
        pairs = table_[name]
        body = "null" if pairs is None else "[\n" + ",\n".join(f"  {line(p)}" for p in pairs) + "\n ]"
        blocks.append(f" {line(name)}: {body}")
    return "{\n" + ",\n".join(blocks) + "\n}\n"


@lru_cache(maxsize=None)
def recorded(module_id: str) -> dict:
    path = modules.path(module_id) / FILE
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}


def _key(case: Any) -> str:
    return json.dumps(case, sort_keys=True, allow_nan=True)
