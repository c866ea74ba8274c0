"""Bilingual text: every sentence a learner reads from code is a Message.

The language shown is set by ``set_language`` or the ``COURSE_LANG`` environment
variable: ``ko``, ``en`` or ``both`` (the default: Korean first, then English).
Catalogued messages live in ``data/messages/*.yaml`` (the core) and in each module's
``modules/mNN_*/messages.yaml`` as ``key: {ko: ..., en: ...}``.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from .datafile import read_yaml

LANGUAGES = ("ko", "en", "both")
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
    lang = _chosen or os.environ.get("COURSE_LANG", "both")
    return lang if lang in LANGUAGES else "both"


@dataclass(frozen=True)
class Message:
    """One sentence in Korean and English."""

    ko: str
    en: str

    def format(self, **values) -> "Message":
        return Message(self.ko.format(**values), self.en.format(**values))

    def text(self, lang: str | None = None) -> str:
        lang = lang or get_language()
        if lang == "ko":
            return self.ko
        if lang == "en":
            return self.en
        return self.ko if self.ko == self.en else f"{self.ko}\n{self.en}"

    def __add__(self, other: "Message") -> "Message":
        return Message(f"{self.ko} {other.ko}", f"{self.en} {other.en}")

    def __str__(self) -> str:
        return self.text()


@lru_cache(maxsize=None)
def _catalog() -> dict[str, Message]:
    out: dict[str, Message] = {}
    for path in sorted(_DATA.glob("*.yaml")) + sorted(_MODULES.glob("*/messages.yaml")):
        for key, pair in (read_yaml(path) or {}).items():
            if key in out:
                raise ValueError(f"duplicate message key {key!r} in {path}")
            out[key] = Message(pair["ko"], pair["en"])
    return out


def msg(key: str, **values) -> Message:
    """The catalogued message ``key``, formatted with ``values``."""
    try:
        message = _catalog()[key]
    except KeyError:
        raise KeyError(f"no message {key!r} in data/messages/*.yaml or modules/*/messages.yaml") from None
    return message.format(**values) if values else message


def both(ko: str, en: str) -> Message:
    """An uncatalogued message (for text built from data, such as a profile name)."""
    return Message(ko, en)
