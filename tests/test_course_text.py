"""What learners read: no reference to documents they have never seen, and one title per module everywhere."""
import json
import re
from pathlib import Path

import pytest

from fixtures.learner_text import ROOT, texts

# The documents the course was commissioned from are not the learner's: "seed 004", "(seed)", "seed의",
# "시드의 …", "원자료(seed …)", "seed_claim", "source material". A random seed (seed=0, manual_seed) is fine.
COMMISSIONING = re.compile(
    r"\bseeds?\s*(?:문서\s*)?0\d\d|shared/(?:seeds|RESEARCH|COURSE|reviews)|(?<![A-Za-z0-9_])\(seed\b|\bseed(?:의|는|'s\b)|\bseed (?:value|document|material|"
    r"version|claim|price|table)|\bseed_\w+|시드의|시드 문서|원자료|자료\s*\(seed|source material", re.I)
READ_BY_LEARNERS = ["README.md", "docs/*.md", "lessons/*/*.ipynb", "solutions/*/*", "autograder/modules/*/*",
                    "autograder/modules/*/data/*", "autograder/data/*.yaml", "autograder/data/*/*"]


def learner_files() -> list[Path]:
    return sorted({p for pattern in READ_BY_LEARNERS for p in ROOT.glob(pattern)
                   if p.is_file() and p.suffix not in (".ttf", ".pyc")})


@pytest.mark.parametrize("path", learner_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_reference_to_the_commissioning_documents(path):
    text = path.read_text(encoding="utf-8")
    found = [text[max(0, m.start() - 40): m.end() + 40].replace("\n", " ") for m in COMMISSIONING.finditer(text)]
    assert not found, (f"{len(found)} references to documents learners have never seen: cite the public source or "
                       "state it as a common claim\n" + "\n".join(found[:20]))


def titles() -> dict:
    """Each module's title as its lesson's heading gives it, per language."""
    out = {}
    for path in sorted(ROOT.glob("lessons/0[1-9]_*/0[1-9]_*.*.ipynb")):
        first = json.loads(path.read_text(encoding="utf-8"))["cells"][0]["source"]
        heading = next(line for line in "".join(first).splitlines() if line.startswith("# "))
        number, _, title = heading[2:].partition(" · ")
        out[(path.parent.name, path.stem.split(".")[-1])] = (number, title.strip())
    return out


def test_every_lesson_heading_is_number_dot_title():
    for (folder, lang), (number, title) in titles().items():
        assert number == folder[:2] and title, f"{folder} ({lang}): the heading is '# {folder[:2]} · <title>'"


@pytest.mark.parametrize("page", ["README.md", "autograder/data/edition/README.md",
                                  "lessons/00_start_here/00_start_here.ko.ipynb", "lessons/00_start_here/00_start_here.en.ipynb"])
def test_module_maps_use_the_lesson_titles(page):
    text = (ROOT / page).read_text(encoding="utf-8")
    if page.endswith(".ipynb"):
        text = "\n".join("".join(c["source"]) for c in json.loads(text)["cells"] if c["cell_type"] == "markdown")
    langs = {page.split(".")[-2]} if page.endswith(".ipynb") else {"ko", "en"}
    for (folder, lang), (_, title) in titles().items():
        if lang not in langs:
            continue
        row = r"^\| \d\d \| \[([^\]]+)\]\((?:\.\./|lessons/)" + re.escape(folder) + "/" + re.escape(folder) + r"\." + lang + r"\.ipynb\)"
        links = re.findall(row, text, re.M)
        assert links, f"{page}: no row of the module map links to {folder}'s {lang} lesson"
        for link in links:
            assert link == title, f"{page}: '{link}' is not {folder}'s title '{title}'"


def test_learner_text_exists_in_both_languages():
    """A bilingual call or message with an empty side, or with Korean in its English side, is a translation left out."""
    hangul = re.compile(r"[\uac00-\ud7a3]")
    bad = [f"{place}: {text[:60]!r}" for group, place, lang, text in texts()
           if lang == "en" and group != "instructor guide" and hangul.search(text) and ".ko.ipynb" not in text and "한국어" not in text]
    assert not bad, "English text with Korean in it:\n" + "\n".join(bad[:30])
