"""Every lesson is written once: one source with both languages side by side (``autograder.bilingual``), from which
its Korean and English notebooks are built and committed; a stale built notebook fails here."""
import json
import re
from pathlib import Path

import nbformat
import pytest

from autograder import bilingual, layout, standalone

ROOT = Path(__file__).resolve().parent.parent
HANGUL = re.compile(r"[\uac00-\ud7a3]")
LANGUAGE_LINK = re.compile(r"\[[^\]]*\]\((?:\./)?\d\d_[a-z_]+\.ko\.ipynb[^)]*\)")
SOURCES = layout.lesson_sources(ROOT)
ALL_NOTEBOOKS = layout.notebooks(ROOT)


def cells(path: Path) -> list[dict]:
    return json.loads(path.read_text(encoding="utf-8"))["cells"]


def source(cell: dict) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else src


def test_every_lesson_is_one_source_and_its_two_languages():
    folders = [m.id for m in layout.modules(ROOT, "lesson")]  # a folder without a record: tests/test_layout.py
    assert folders and all(p.is_file() for p in SOURCES), "a lesson folder without its source"
    for folder in folders:
        found = sorted(p.name for p in (ROOT / "lessons" / folder).glob("*.ipynb"))
        assert found == sorted([f"{folder}.ipynb", f"{folder}.en.ipynb", f"{folder}.ko.ipynb"]), found


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: p.parent.name)
@pytest.mark.parametrize("lang", bilingual.LANGUAGES)
def test_built_notebooks_are_current(path, lang):
    built = layout.lesson(path.parent.name, lang, ROOT)
    assert built.read_text(encoding="utf-8") == bilingual.built(nbformat.read(path, as_version=4), lang, built.name), (
        f"{built.relative_to(ROOT)} is not built from {path.relative_to(ROOT)}: edit the source, then run "
        f"`python -m autograder instructor lessons {path.parent.name}`")


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: p.parent.name)
def test_markdown_is_in_its_language(path):
    ko, en = cells(layout.lesson(path.parent.name, "ko", ROOT)), cells(layout.lesson(path.parent.name, "en", ROOT))
    for i, (a, b) in enumerate(zip(ko, en)):
        if a["cell_type"] != "markdown":
            continue
        if re.search(r"[A-Za-z\uac00-\ud7a3]{3}", source(a)):
            assert HANGUL.search(source(a)), f"ko markdown cell {i} has no Korean text: write its Korean, a line ---, its English"
        stripped = LANGUAGE_LINK.sub("", source(b))
        assert not HANGUL.search(stripped), f"en markdown cell {i} has Korean text: {HANGUL.findall(stripped)[:5]}"


def test_a_cell_is_its_korean_a_line_and_its_english():
    assert bilingual.halves("가나다\n\n---\n\nabc") == {"ko": "가나다", "en": "abc"}
    assert bilingual.halves("| a |\n|---|\n| 1 |") == {"ko": "| a |\n|---|\n| 1 |", "en": "| a |\n|---|\n| 1 |"}
    with pytest.raises(ValueError, match="'---'"):
        bilingual.halves("가\n---\nb\n---\nc")
    with pytest.raises(ValueError, match="unknown language"):
        bilingual.for_language(nbformat.v4.new_notebook(), "fr")


def test_the_lessons_command_builds_from_the_source(tmp_path):
    folder = tmp_path / "lessons" / "01_devices"
    folder.mkdir(parents=True)
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# 장치\n---\n# Devices"),
                                         nbformat.v4.new_code_cell("print(1)")])
    nbformat.write(nb, folder / "01_devices.ipynb")
    ko, en = bilingual.write_languages(folder / "01_devices.ipynb")
    # the set-up cell of a notebook opened alone first (autograder.standalone), in the notebook's language
    assert [source(c) for c in cells(ko)] == [standalone.setup_source("ko"), "# 장치", "print(1)"]
    assert [source(c) for c in cells(en)] == [standalone.setup_source("en"), "# Devices", "print(1)"]
    assert json.loads(ko.read_text(encoding="utf-8"))["metadata"]["language"] == "ko"
    stamp = en.stat().st_mtime_ns
    bilingual.write_languages(folder / "01_devices.ipynb")
    assert en.stat().st_mtime_ns == stamp, "an unchanged notebook is not written again"


@pytest.mark.parametrize("path", ALL_NOTEBOOKS, ids=lambda p: str(p.relative_to(ROOT)))
def test_committed_without_outputs(path):
    for i, cell in enumerate(cells(path)):
        if cell["cell_type"] == "code":
            assert not cell.get("outputs") and cell.get("execution_count") is None, f"cell {i} has outputs"


CELL_LINK = re.compile(r"\]\((?P<path>[^)\s#]*)#cell-id=(?P<cell>[A-Za-z0-9_-]+)\)")


def test_a_section_names_its_cell():
    for path in SOURCES:
        for cell in nbformat.read(path, as_version=4).cells:
            sections = [a for a in bilingual.ANCHOR.findall(cell.source) if a.startswith("sec-")]
            assert not sections or cell.id == sections[0], f"{path.name}: the cell of {sections[0]} has id {cell.id}"


@pytest.mark.parametrize("path", sorted(ROOT.glob("lessons/*/*.??.ipynb")) + sorted(ROOT.glob("exercises/*/*.??.ipynb")),
                         ids=lambda p: p.name)
def test_every_section_link_reaches_its_cell(path):
    """JupyterLab scrolls a link ``#cell-id=…`` to its cell; a link to an ``<a id>`` in a cell it has not drawn yet
    does not scroll (issue 29): every link of a built notebook to a place is one to a cell that exists."""
    text = "\n".join(source(c) for c in cells(path) if c["cell_type"] == "markdown")
    assert not re.search(r"\]\([^)\s]*#(sec|ref)-", text), "a link to an anchor, not to its cell"
    for link in CELL_LINK.finditer(text):
        target = (path.parent / link["path"]).resolve() if link["path"] else path
        assert target.is_file(), f"{link[0]}: no {target}"
        assert link["cell"] in {c.get("id") for c in cells(target)}, f"{link[0]}: no cell {link['cell']} in {target.name}"
