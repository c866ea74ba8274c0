"""The Korean–English glossary (data/glossary.yaml)."""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from .datafile import read_yaml
from .i18n import Message

GLOSSARY_FILE = Path(__file__).parent / "data" / "glossary.yaml"


@dataclass(frozen=True)
class Term:
    term_en: str
    term_ko: str
    definition: Message


@lru_cache(maxsize=1)
def terms() -> tuple[Term, ...]:
    """All terms, sorted by their English name."""
    rows = read_yaml(GLOSSARY_FILE)["terms"]
    out = [Term(r["term_en"], r["term_ko"], Message(r["ko"], r["en"])) for r in rows]
    return tuple(sorted(out, key=lambda t: t.term_en.lower()))


def markdown(lang: str = "both") -> str:
    """The glossary as a markdown table in ``ko``, ``en`` or ``both`` languages."""
    head = {"ko": "| 한국어 | English | 설명 |", "en": "| English | Korean | Definition |",
            "both": "| 한국어 | English | 설명 | Definition |"}[lang]
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for t in terms():
        cells = {"ko": [t.term_ko, t.term_en, t.definition.ko],
                 "en": [t.term_en, t.term_ko, t.definition.en],
                 "both": [t.term_ko, t.term_en, t.definition.ko, t.definition.en]}[lang]
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(lines)
