"""Bilingual text: every sentence a learner reads from code is a Message.

The language shown, ``ko``, ``en`` or ``both`` (Korean first, then English), is set in code by
``set_language``, else decided by :func:`autograder.language.chosen` (``--lang``, ``COURSE_LANG``,
the remembered choice, the locale, else both); ``remember_language`` remembers a learner's choice.
Catalogued messages live in ``data/messages/*.yaml`` (the core) and in each module's
``modules/mNN_*/messages.yaml`` as ``key: {ko: ..., en: ...}``.
"""
from __future__ import annotations

import contextlib
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from . import language, layout
from .datafile import read_yaml
from .language import LANGUAGES
_DATA = Path(__file__).parent / "data" / "messages"
_MODULES = Path(__file__).parent / "modules"
_chosen: str | None = None


def set_language(lang: str) -> None:
    """Show messages in ``ko``, ``en`` or ``both``."""
    global _chosen
    if lang not in LANGUAGES:
        raise ValueError(f"언어는 {LANGUAGES} 중 하나여야 합니다 / language must be one of {LANGUAGES}: {lang!r}")
    _chosen = lang


def get_language() -> str:
    """The language set in code, else the chosen one (:func:`autograder.language.chosen`)."""
    return _chosen or language.chosen()


def remember_language(lang: str) -> None:
    """Remember a learner's choice (``ko``, ``en`` or ``both``) for the course's commands and new kernels; says so."""
    if lang not in LANGUAGES:
        raise ValueError(f"언어는 {LANGUAGES} 중 하나여야 합니다 / language must be one of {LANGUAGES}: {lang!r}")
    print(language.keep(lang) or language.pick("이미 기억된 언어입니다.", "Already the remembered language.", lang))


def t(ko: str, en: str) -> str:
    """Text for the current language (``"ko / en"`` when both are shown)."""
    return language.pick(ko, en, get_language(), " / ")


@dataclass(frozen=True)
class Message:
    """One sentence in Korean and English."""

    ko: str
    en: str

    def format(self, **values) -> "Message":
        """Fill the placeholders of both languages; a value that is a Message gives each language its own text."""
        ko = {k: v.ko if isinstance(v, Message) else v for k, v in values.items()}
        en = {k: v.en if isinstance(v, Message) else v for k, v in values.items()}
        return Message(josa(self.ko.format(**ko)), self.en.format(**en))

    def text(self, lang: str | None = None) -> str:
        return language.pick(self.ko, self.en, lang or get_language())

    def __add__(self, other: "Message") -> "Message":
        return Message(f"{self.ko} {other.ko}", f"{self.en} {other.en}")

    def __str__(self) -> str:
        return self.text()


# A Korean particle after a value that may end in a vowel or a consonant is written in its paired form,
# "{x}을(를)"; :func:`josa` picks the one that fits where the word before it ends in Hangul or a digit.
_PAIRS = {"을(를)": ("을", "를"), "이(가)": ("이", "가"), "은(는)": ("은", "는"), "과(와)": ("과", "와"),
          "이어야(여야)": ("이어야", "여야"), "(으)로": ("으로", "로")}
_PAIRED = re.compile(r"([^\s`'\"]?)([`'\"]*)(" + "|".join(re.escape(k) for k in _PAIRS) + ")")
_DIGIT_CODA = {"0": "ㅇ", "1": "ㄹ", "3": "ㅁ", "6": "ㄱ", "7": "ㄹ", "8": "ㄹ"}  # 영 일 삼 육 칠 팔; 2 4 5 9: a vowel
_TENS_CODA = {1: "ㅂ", 2: "ㄱ", 3: "ㄴ"}  # a whole number ending in 10, 100, 1000 (십 백 천); 10000 and up: 만


def _coda(before: str) -> str | None:
    """The final consonant of how ``before`` ends when read in Korean ('' for none), None for a Latin letter."""
    char = before[-1:]
    if "가" <= char <= "힣":
        index = (ord(char) - 0xAC00) % 28
        return "" if index == 0 else "ㄹ" if index == 8 else "ㄱ"
    if not char.isdigit():
        return None
    number = re.search(r"[\d.]+$", before).group(0)
    zeros = len(number) - len(number.rstrip("0"))
    if zeros and "." not in number and number.rstrip("0"):
        return _TENS_CODA.get(zeros, "ㄴ")
    return _DIGIT_CODA.get(char, "")


def josa(text: str) -> str:
    """Resolve paired Korean particles ("{x}을(를)" -> "5를", "값을") after Hangul or digits; keep the pair elsewhere."""
    def pick(match: re.Match) -> str:
        char, closers, pair = match.group(1), match.group(2), match.group(3)
        coda = _coda(text[: match.start(1) + len(char)]) if char else None
        if coda is None:
            return match.group(0)
        with_coda, without = _PAIRS[pair]
        bare = coda in ("", "ㄹ") if pair == "(으)로" else coda == ""
        return char + closers + (without if bare else with_coda)
    return _PAIRED.sub(pick, text)


@lru_cache(maxsize=None)
def _catalog() -> dict[str, Message]:
    out: dict[str, Message] = {}
    own = [_MODULES / m.package / "messages.yaml" for m in layout.modules(part="package")]
    for path in sorted(_DATA.glob("*.yaml")) + [p for p in own if p.exists()]:
        for key, pair in (read_yaml(path) or {}).items():
            if key in out:
                raise ValueError(f"duplicate message key {key!r} in {path}")
            out[key] = Message(pair["ko"], pair["en"])
    return out


def msg(key: str, /, **values) -> Message:
    """The catalogued message ``key``, formatted with ``values``."""
    try:
        message = _catalog()[key]
    except KeyError:
        raise KeyError(f"no message {key!r} in data/messages/*.yaml or modules/*/messages.yaml") from None
    return message.format(**values) if values else message


def both(ko: str, en: str) -> Message:
    """An uncatalogued message (for text built from data, such as a profile name)."""
    return Message(ko, en)


@contextlib.contextmanager
def speaking(lang: str | None):
    """Messages in ``lang`` inside the block (None: as they are), then exactly as chosen before it."""
    global _chosen
    before = _chosen
    if lang:
        set_language(lang)
    try:
        yield
    finally:
        _chosen = before
