"""The Korean–English glossary (data/glossary.yaml): the course's one vocabulary."""
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
    avoid_ko: tuple[str, ...] = ()  # variants Korean text must not use for this term


@lru_cache(maxsize=1)
def terms() -> tuple[Term, ...]:
    """All terms, sorted by their English name."""
    rows = read_yaml(GLOSSARY_FILE)["terms"]
    out = [Term(r["term_en"], r["term_ko"], Message(r["ko"], r["en"]), tuple(r.get("avoid_ko", ()))) for r in rows]
    return tuple(sorted(out, key=lambda t: t.term_en.lower()))


def korean_order(term: Term) -> tuple:
    """가나다 order of the Korean term, then terms that start with a Latin letter (as Korean glossaries list them)."""
    first = term.term_ko[:1]
    return (not "가" <= first <= "힣", term.term_ko.lower())


def markdown(lang: str = "both") -> str:
    """The glossary as a markdown table in ``ko`` (sorted by the Korean term, with each English term), ``en`` (no
    Hangul: one language on screen) or ``both`` languages."""
    head = {"ko": "| 한국어 | English | 설명 |", "en": "| English | Definition |",
            "both": "| 한국어 | English | 설명 | Definition |"}[lang]
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for t in sorted(terms(), key=korean_order) if lang == "ko" else terms():
        cells = {"ko": [t.term_ko, t.term_en, t.definition.ko],
                 "en": [t.term_en, t.definition.en],
                 "both": [t.term_ko, t.term_en, t.definition.ko, t.definition.en]}[lang]
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(lines)
