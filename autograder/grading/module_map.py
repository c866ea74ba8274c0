"""The module maps learners read, from the module records (``layout.modules``): a row per module with a lesson,
``| 04 | [title](lesson) | [exercise](exercise) |``, in the README (both languages), the learner edition's README
and the start page (both languages). ``python -m autograder instructor module-map`` says where a page disagrees
(``--write`` rewrites the READMEs' rows); ``tests/test_course_text.py`` fails on any difference."""
from __future__ import annotations

import difflib
import os
import re
from pathlib import Path

from .. import layout
from ..i18n import msg
from .course import REPO

# page -> the folder it sits in where learners read it (the edition's README is the edition's README.md)
PAGES = {"README.md": "", "autograder/data/edition/README.md": ""} | {
    layout.start().lesson(lang).as_posix(): layout.start().lesson(lang).parent.as_posix() for lang in layout.LANGS}
WRITTEN = ("README.md", "autograder/data/edition/README.md")  # the start page's rows are fixed by hand
ROW = re.compile(r"^\| \d\d \| .*\|$")


def rows(lang: str, folder: str = "", root: Path = REPO) -> list[str]:
    """The map's rows in ``lang`` for a page in ``folder`` (links relative to it) from the records of the course at
    ``root``; a page lists no link to itself."""
    out = []
    for m in layout.modules(root, "lesson"):
        lesson = m.lesson(lang)
        if lesson.parent.as_posix() == folder:
            continue
        student = layout.in_language(m.exercise("exercises"), lang)  # the exercise in the page's language
        exercise = (f"[{msg('modules.exercise_link').text(lang)}]({_link(student, folder)})"
                    if "exercise" in m.has else "–")
        out.append(f"| {m.number} | [{m.title(lang)}]({_link(lesson, folder)}) | {exercise} |")
    return out


def _link(path: Path, folder: str) -> str:
    return Path(os.path.relpath(path, folder or ".")).as_posix()


def _tables(text: str) -> list[tuple[int, int, str]]:
    """Each run of map rows in ``text``: (first line, line after the last, its language from its lesson links)."""
    lines, found, i = text.splitlines(), [], 0
    while i < len(lines):
        if ROW.match(lines[i]):
            j = next((k for k in range(i, len(lines)) if not ROW.match(lines[k])), len(lines))
            found.append((i, j, "ko" if ".ko.ipynb" in lines[i] else "en"))
            i = j
        else:
            i += 1
    return found


def _text(page: str, root: Path) -> str:
    """A page's text; a notebook's markdown cells."""
    path = root / page
    if path.suffix != ".ipynb":
        return path.read_text(encoding="utf-8")
    import nbformat
    return "\n".join(c.source for c in nbformat.read(str(path), as_version=4).cells if c.cell_type == "markdown")


def differences(page: str, root: Path = REPO) -> str:
    """How the maps of ``page`` differ from the records (a unified diff; empty when they agree)."""
    text, folder = _text(page, root), PAGES[page]
    lines, out = text.splitlines(), []
    tables = _tables(text)
    if not tables:
        return f"{page}: no module map (rows '| NN | [title](lesson) | ... |')\n"
    for start, end, lang in tables:
        out += difflib.unified_diff(lines[start:end], rows(lang, folder, root), f"{page} ({lang})", "the records",
                                    lineterm="")
    return "\n".join(out)


def write(page: str, root: Path = REPO) -> bool:
    """Rewrite the map rows of the Markdown ``page`` from the records; whether it changed."""
    path = root / page
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines()
    for start, end, lang in reversed(_tables(text)):
        lines[start:end] = rows(lang, PAGES[page], root)
    new = "\n".join(lines) + ("\n" if text.endswith("\n") else "")
    if new != text:
        path.write_text(new, encoding="utf-8")
    return new != text
