"""Where a module's notebooks are: one rule for their names, which carry the topic so that JupyterLab's tabs
tell them apart (``lessons/01_devices/01_devices.ko.ipynb``, ``solutions/01_devices/01_devices_exercise.ipynb``).
Standard library only: ``bootstrap`` uses it before the course's environment exists."""
from __future__ import annotations

import re
from pathlib import Path

LESSON = re.compile(r"(?:^|/)lessons/(\d\d_[a-z0-9_]+)/\1\.(ko|en)\.ipynb$")


def lesson(module: str, lang: str, root: Path | str = ".") -> Path:
    """A lesson notebook: ``lessons/NN_topic/NN_topic.{ko,en}.ipynb`` (built from :func:`lesson_source`)."""
    return Path(root) / "lessons" / module / f"{module}.{lang}.ipynb"


def lesson_source(module: str, root: Path | str = ".") -> Path:
    """A lesson's one source, both languages side by side (``autograder.bilingual``): ``lessons/NN_topic/NN_topic.ipynb``."""
    return Path(root) / "lessons" / module / f"{module}.ipynb"


def lesson_sources(root: Path | str = ".") -> list[Path]:
    """Every lesson's source, in module order."""
    return sorted(p for p in Path(root).glob("lessons/*/*.ipynb") if p.name == f"{p.parent.name}.ipynb")


def exercise(module: str, kind: str = "solutions", root: Path | str = ".") -> Path:
    """An exercise notebook in ``solutions/`` (the nbgrader source) or ``exercises/`` (the student version)."""
    return Path(root) / kind / module / f"{module}_exercise.ipynb"


def lessons(lang: str, root: Path | str = ".") -> list[Path]:
    """Every lesson in ``lang``, in module order."""
    return sorted(p for p in Path(root).glob(f"lessons/*/*.{lang}.ipynb") if LESSON.search(p.as_posix()))
