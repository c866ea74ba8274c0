"""An exercise in one language, one class graded in both.

``generate`` writes beside each student notebook ``<notebook>.ipynb`` (both languages: the source's own view) its
language files ``<notebook>.ko.ipynb`` and ``<notebook>.en.ipynb`` (:func:`for_learner`). The gradebook knows one
notebook: a learner works in any of the three, and ``submit`` and ``collect`` take the one they worked in
(:func:`worked_in`) as the assignment's notebook. The grader and the feedback speak a graded notebook's language
(:func:`language_of`)."""
from __future__ import annotations

import json
from pathlib import Path

from .. import bilingual, layout
from ..standalone import with_hand_in

LANGUAGES = bilingual.LANGUAGES


def file_name(notebook: str, lang: str | None = None) -> str:
    """``<notebook>.ipynb`` (both languages) or ``<notebook>.<lang>.ipynb`` (:func:`autograder.layout.in_language`)."""
    return layout.in_language(Path(f"{notebook}.ipynb"), lang).name


def file_names(notebook: str) -> list[str]:
    """Every file a learner may work in for ``notebook``: the bilingual one, then each language's."""
    return [file_name(notebook)] + [file_name(notebook, lang) for lang in LANGUAGES]


def notebook_of(name: str) -> str:
    """The notebook a file (or stem) is for: ``X.ko.ipynb``, ``X.en.ipynb``, ``X.ipynb`` and ``X.ko`` -> ``X``."""
    stem = name[:-len(".ipynb")] if name.endswith(".ipynb") else name
    for lang in LANGUAGES:
        if stem.endswith(f".{lang}"):
            return stem[:-len(lang) - 1]
    return stem


def language_of(nb) -> str | None:
    """``ko``/``en``: the language a notebook was built for (its metadata ``language``), else None (both)."""
    lang = nb.get("metadata", {}).get("language")
    return lang if lang in LANGUAGES else None


def kind_of(name: str, data: bytes) -> str | None:
    """Which file a learner's notebook ``name`` is: ``ko``/``en`` (as its name says, else its metadata: ``submit``
    sends a language file under the notebook's name) or ``both`` (the bilingual release); None: unreadable."""
    stated = next((lang for lang in LANGUAGES if name.endswith(f".{lang}.ipynb")), None)
    if stated:
        return stated
    try:
        nb = json.loads(data)
        return language_of(nb) if "language" in nb.get("metadata", {}) else "both"
    except (ValueError, AttributeError):
        return None


def for_learner(nb, lang: str):
    """The student notebook ``nb`` in ``lang`` (:func:`bilingual.for_language`), ending with how to hand it in from a
    cell in that language (:func:`autograder.standalone.with_hand_in`). Its locked Markdown cells (the
    text) keep ``editable``/``deletable`` but lose their nbgrader metadata: nbgrader's autograde would otherwise put
    the gradebook's bilingual text back into each of them (OverwriteCells, with a warning per cell); a locked cell
    missing from a submission costs nothing (nbgrader adds back only graded and task cells)."""
    out = with_hand_in(bilingual.for_language(nb, lang), lang)
    for cell in out.cells:
        meta = cell.metadata.get("nbgrader", {})
        if cell.cell_type == "markdown" and not (meta.get("grade") or meta.get("solution") or meta.get("task")):
            cell.metadata.pop("nbgrader", None)
    return out


def worked_in(found: dict[str, tuple[bytes, float | None]], lang: str | None = None) -> str:
    """Which of one notebook's files (name -> (content, when it was last changed, if known)) the learner worked
    in: among those with an attempted task (all, if none has one), the one in ``lang`` where there is one, else
    the one changed last (ties and unknown times: the bilingual name, then Korean, then English)."""
    import nbformat

    from ..standalone import tasks_of

    def attempted(data: bytes) -> bool:
        try:
            return any(not g.untouched for g in tasks_of(nbformat.reads(data.decode("utf-8"), as_version=4)))
        except Exception:  # an unreadable notebook is no evidence of work; the grader says why it cannot read it
            return False

    pool = [name for name in found if attempted(found[name][0])] or list(found)
    mine = [name for name in pool if lang and name.endswith(f".{lang}.ipynb")]
    if mine:
        return mine[0]
    return max(pool, key=lambda name: (found[name][1] or 0.0, -_rank(name)))


def _rank(name: str) -> int:
    """0 for the bilingual name, then one per language in :data:`LANGUAGES`."""
    return next((i for i, lang in enumerate(LANGUAGES, 1) if name.endswith(f".{lang}.ipynb")), 0)
