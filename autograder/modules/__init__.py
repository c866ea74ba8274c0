"""The course's modules, one folder each: ``mNN_name/`` (``m04_training_memory``), one for each record with a
package in ``data/modules.json`` (``autograder.layout``).

A module folder holds what a learner's install needs of that module: ``tasks.py``
(its graded tasks: visible cases, how to call the learner's code, how to score),
``lesson.py`` and other lesson helpers, ``messages.yaml``, ``data/`` and
``expected.json`` (the reference answers of the visible cases, written by
``instructor generate``). Reference implementations and hidden cases live apart,
in the instructor's package ``course_answers`` (one file per module, same name).

Modules import the core (``autograder.*`` outside ``modules``) and themselves,
never another module; the core reaches a module only through this registry.
"""
from __future__ import annotations

from functools import lru_cache
from importlib import import_module
from pathlib import Path

from .. import layout

ROOT = Path(__file__).resolve().parent


@lru_cache(maxsize=None)
def folders() -> dict[str, str]:
    """Module id (``"m04"``) -> folder name (``"m04_training_memory"``): the records with a package
    (``layout.modules``)."""
    return {m.short: m.package for m in layout.modules(part="package")}


def folder(module_id: str) -> str | None:
    return folders().get(module_id)


def path(module_id: str) -> Path:
    return ROOT / folders()[module_id]


def tasks(module_id: str) -> dict | None:
    """The module's ``TASKS`` (None for an unknown module id)."""
    name = folder(module_id)
    return None if name is None else import_module(f"{__name__}.{name}.tasks").TASKS
