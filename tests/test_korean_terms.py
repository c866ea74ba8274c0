"""One Korean voice: every Korean text uses the glossary's term, never a variant it lists in ``avoid_ko``.

Korean text is the Korean of lessons, of exercise sources (solutions/: the half above a cell's ``---``), of message
catalogs, module code, data files, the glossary and the READMEs. An English term in parentheses
(활성값(activation)), code (spans, blocks, notebook code cells, ``torch.cuda.synchronize``), links, formulas and
placeholders are not prose and are left out, and so is a glossary term written in Latin letters (the name
Transformer Engine is a term; the word transformer alone is a variant of 트랜스포머).
Run one module's texts with ``-k m04``.
"""
import re

import pytest

from autograder import glossary
from fixtures.learner_text import CODE_CELL, HANGUL, groups, texts

NOT_PROSE = [
    re.compile(r"```.*?```", re.S),             # code blocks
    re.compile(r"`[^`\n]*`"),                   # inline code
    re.compile(r"\]\([^)\s]*\)"),               # link targets
    re.compile(r"https?://\S+"),                # addresses
    re.compile(r"\$[^$\n]*\$"),                 # formulas
    re.compile(r"<[^>\n]*>"),                   # HTML tags and anchors
    re.compile(r"\{[^{}\n]*\}"),                # format placeholders
    re.compile(r"\([^()\uac00-\ud7a3\n]*\)"),   # an English gloss in parentheses
]


def prose(text: str) -> str:
    for pattern in NOT_PROSE:
        text = pattern.sub(" ", text)
    return text


def _pattern(variant: str) -> re.Pattern:
    """A Latin variant matches as a whole word (any case) that is not an attribute (``dev.synchronize``); a Hangul
    one anywhere."""
    if HANGUL.search(variant):
        return re.compile(re.escape(variant))
    return re.compile(r"(?<![A-Za-z_.\-])" + re.escape(variant) + r"(?![A-Za-z_])", re.I)


NAMES = re.compile("|".join(sorted((re.escape(t.term_ko) for t in glossary.terms() if not HANGUL.search(t.term_ko)),
                                   key=len, reverse=True)))
RULES = [(t, variant, _pattern(variant)) for t in glossary.terms() for variant in t.avoid_ko]
KOREAN = {}
for group, place, lang, text in texts():
    if lang == "ko" and HANGUL.search(text) and not place.endswith(CODE_CELL):
        KOREAN.setdefault(group, []).append((place, NAMES.sub(" ", prose(text))))


def test_avoided_variants_are_not_the_terms_themselves():
    for term, variant, pattern in RULES:
        assert not pattern.search(prose(term.term_ko)), f"{term.term_en}: avoid_ko {variant!r} matches term_ko"


@pytest.mark.parametrize("group", groups())
def test_korean_text_uses_the_glossary_terms(group):
    found = []
    for place, text in KOREAN.get(group, []):
        for term, variant, pattern in RULES:
            for m in pattern.finditer(text):
                snippet = text[max(0, m.start() - 25): m.end() + 25].replace("\n", " ")
                found.append(f"{place}: {variant!r} -> {term.term_ko!r}: …{snippet}…")
    assert not found, f"{len(found)} Korean texts use a variant the glossary avoids:\n" + "\n".join(found[:60])


def test_korean_glossary_is_in_korean_order():
    rows = glossary.markdown("ko").splitlines()[2:]
    korean = [r.split(" | ")[0].lstrip("| ") for r in rows]
    hangul = [k for k in korean if HANGUL.match(k)]
    assert korean[: len(hangul)] == hangul == sorted(hangul), "Korean table: 가나다 order, Latin-initial terms after"


PARTICLE = re.compile(r"\}[`'\"]*(?:을|를|은|는|이|가|과|와|으로|로)")
PAIRED = re.compile(r"을\(를\)|이\(가\)|은\(는\)|과\(와\)|이어야\(여야\)|\(으\)로")


@pytest.mark.parametrize("group", [g for g in groups() if g.endswith("messages")])
def test_particles_after_placeholders_use_the_paired_form(group):
    """'{x}를' reads 'None를' for some values: write '{x}을(를)', and the i18n layer picks the right one."""
    found = [f"{place}: {text}" for g, place, lang, text in texts()
             if g == group and lang == "ko" and PARTICLE.search(PAIRED.sub("", text))]
    assert not found, "\n".join(found)
