"""What learners read: no reference to documents they have never seen, and one title per module everywhere."""
import json
import re
from pathlib import Path

import pytest

from autograder import layout
from autograder.grading import module_map
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


def headings() -> dict:
    """Each lesson's first heading, per module and language (the start page's too)."""
    out = {}
    for m in layout.modules(ROOT, "lesson"):
        for lang in layout.LANGS:
            first = next(c["source"] for c in json.loads(m.lesson(lang, ROOT).read_text(encoding="utf-8"))["cells"]
                         if c["cell_type"] == "markdown")  # after the set-up cell (autograder.standalone)
            out[(m, lang)] = next(line for line in "".join(first).splitlines() if line.startswith("# "))
    return out


def test_every_lesson_heading_is_number_dot_its_records_title():
    wrong = [f"{m.id} ({lang}): '{found}' is not '{m.heading(lang)}' (autograder/data/modules.json)"
             for (m, lang), found in headings().items() if not m.start and found != m.heading(lang)]
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("page", list(module_map.PAGES))
def test_module_maps_are_the_records(page):
    """Every module map (README, edition README, start page) has a row per module with a lesson, as the records
    give it: ``python -m autograder instructor module-map`` prints the difference (``--write`` fixes a README)."""
    diff = module_map.differences(page, ROOT)
    assert not diff, diff


def test_learner_text_exists_in_both_languages():
    """A bilingual call or message with an empty side, or with Korean in its English side, is a translation left out."""
    hangul = re.compile(r"[\uac00-\ud7a3]")
    bad = [f"{place}: {text[:60]!r}" for group, place, lang, text in texts()
           if lang == "en" and group != "instructor guide" and hangul.search(text) and ".ko.ipynb" not in text and "한국어" not in text]
    assert not bad, "English text with Korean in it:\n" + "\n".join(bad[:30])
