"""One source, both languages. A notebook's one source holds every text once per language, side by side: a
Markdown cell is its Korean, a line ``---``, then its English (a cell without that line is the same in both).
Code is written once. The notebook a learner opens in one language is built from the source
(:func:`for_language`), never edited by hand; ``both`` is the source's own view, for bilingual classrooms."""
from __future__ import annotations

import copy
import re

from .lesson_save import with_kernel
from .standalone import with_setup

LANGUAGES = ("ko", "en")
SEPARATOR = re.compile(r"^---[ \t]*$", re.MULTILINE)  # the line between a cell's Korean and its English
ANCHOR = re.compile(r'<a id="([A-Za-z0-9_-]+)"')  # a place a link may point at; a section's, sec-…, also names its cell
LINK = re.compile(r"\]\((?P<path>[^)\s#]*)#(?P<name>[A-Za-z0-9_-]+)\)")  # a Markdown link to an anchor


def halves(text: str) -> dict[str, str]:
    """``{"ko": ..., "en": ...}`` of a Markdown text: before and after its one ``---`` line, or the text in both.
    More than one such line is an authoring mistake (which one divides the languages?): a ValueError says where."""
    found = list(SEPARATOR.finditer(text))
    if not found:
        return {lang: text for lang in LANGUAGES}
    if len(found) > 1:
        raise ValueError(f"{len(found)} lines '---' in one cell (one divides Korean from English): {text[:80]!r}"
                         f" / 셀 하나에 '---' 줄이 {len(found)}개입니다 (한국어와 영어를 나누는 줄은 하나): {text[:80]!r}")
    line = found[0]
    return {"ko": text[:line.start()].rstrip("\n"), "en": text[line.end():].lstrip("\n")}


def for_language(nb, lang: str, name: str = ""):
    """A copy of notebook ``nb`` (nbformat) in ``lang``: each Markdown cell its half, its links to places made links
    to their cells (:func:`_to_cells`; ``name``: the file the copy is written to), the notebook's
    ``metadata.language`` set (the course's messages in its kernel follow it), its kernel named as the course
    names it (:func:`autograder.lesson_save.with_kernel`) and the set-up cell of a notebook opened alone first
    (:func:`autograder.standalone.with_setup`)."""
    if lang not in LANGUAGES:
        raise ValueError(f"unknown language {lang!r}: one of {', '.join(LANGUAGES)} / 알 수 없는 언어 {lang!r}")
    out = copy.deepcopy(nb)
    cells = {name: cell.id for cell in out.cells for name in ANCHOR.findall(cell.source)}
    for cell in out.cells:
        if cell.cell_type == "markdown":
            cell.source = _to_cells(halves(cell.source)[lang], cells, name)
    out.metadata["language"] = lang
    with_kernel(out.metadata)
    return with_setup(out, lang)


def _to_cells(text: str, cells: dict, own: str) -> str:
    """Links to an anchor made links to its cell, which JupyterLab scrolls to (``NAME.ipynb#cell-id=…``: it finds the
    cell even before drawing it; an ``<a id>`` in a cell not drawn yet is never found, and a bare ``#…`` link is
    looked up only among the drawn ones). A link within the notebook names its file ``own`` and the anchor's cell,
    looked up in ``cells``; in another notebook, a section's anchor names its cell."""
    def target(link: re.Match) -> str:
        anchor, path = link["name"], link["path"]
        cell = cells.get(anchor) if not path else anchor if anchor.startswith("sec-") else None
        return f"]({path or own}#cell-id={cell})" if cell else link[0]
    return LINK.sub(target, text)


def built(nb, lang: str, name: str = "") -> str:
    """The text of ``nb``'s notebook in ``lang`` (to be written as ``name``), as it is committed (nbformat's layout,
    a final newline)."""
    import nbformat
    return nbformat.writes(for_language(nb, lang, name)) + "\n"


def write_languages(source) -> list:
    """Write ``<stem>.ko.ipynb`` and ``<stem>.en.ipynb`` beside the one source ``source`` (each only where it
    changed; the source too where it names its kernel otherwise, :func:`autograder.lesson_save.with_kernel`);
    their paths."""
    from pathlib import Path

    import nbformat

    from .layout import in_language
    source = Path(source)
    nb = nbformat.read(source, as_version=4)
    if nb.metadata != with_kernel(copy.deepcopy(nb.metadata)):
        with_kernel(nb.metadata)
        source.write_text(nbformat.writes(nb) + "\n", encoding="utf-8")
    paths = []
    for lang in LANGUAGES:
        path = in_language(source, lang)
        text = built(nb, lang, path.name)
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
        paths.append(path)
    return paths
