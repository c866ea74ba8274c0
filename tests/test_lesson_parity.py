"""Every lesson exists in Korean and English with the same cells and identical code."""
import json
import re
from pathlib import Path

import pytest

from autograder import layout

ROOT = Path(__file__).resolve().parent.parent
HANGUL = re.compile(r"[\uac00-\ud7a3]")
LANGUAGE_LINK = re.compile(r"\[[^\]]*\]\((?:\./)?\d\d_[a-z_]+\.ko\.ipynb[^)]*\)")
KO_LESSONS = layout.lessons("ko", ROOT)
ALL_NOTEBOOKS = layout.notebooks(ROOT)


def cells(path: Path) -> list[dict]:
    return json.loads(path.read_text(encoding="utf-8"))["cells"]


def source(cell: dict) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else src


def test_every_lesson_has_both_languages():
    en = {p.parent.name for p in layout.lessons("en", ROOT)}
    ko = {p.parent.name for p in KO_LESSONS}
    assert ko, "no lessons found"
    assert ko == en, f"lessons without a pair: {sorted(ko ^ en)}"


@pytest.mark.parametrize("ko_path", KO_LESSONS, ids=lambda p: p.parent.name)
def test_pair_has_same_cells_and_identical_code(ko_path):
    ko, en = cells(ko_path), cells(layout.lesson(ko_path.parent.name, "en", ROOT))
    assert [c["cell_type"] for c in ko] == [c["cell_type"] for c in en]
    for i, (a, b) in enumerate(zip(ko, en)):
        if a["cell_type"] == "code":
            assert source(a) == source(b), f"code cell {i} differs between ko and en"


@pytest.mark.parametrize("ko_path", KO_LESSONS, ids=lambda p: p.parent.name)
def test_markdown_is_in_its_language(ko_path):
    ko, en = cells(ko_path), cells(layout.lesson(ko_path.parent.name, "en", ROOT))
    for i, (a, b) in enumerate(zip(ko, en)):
        if a["cell_type"] != "markdown":
            continue
        if re.search(r"[A-Za-z\uac00-\ud7a3]{3}", source(a)):
            assert HANGUL.search(source(a)), f"ko markdown cell {i} has no Korean text"
        stripped = LANGUAGE_LINK.sub("", source(b))
        assert not HANGUL.search(stripped), f"en markdown cell {i} has Korean text: {HANGUL.findall(stripped)[:5]}"


@pytest.mark.parametrize("path", ALL_NOTEBOOKS, ids=lambda p: str(p.relative_to(ROOT)))
def test_committed_without_outputs(path):
    for i, cell in enumerate(cells(path)):
        if cell["cell_type"] == "code":
            assert not cell.get("outputs") and cell.get("execution_count") is None, f"cell {i} has outputs"
