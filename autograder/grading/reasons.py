"""Reasons in both languages for the export and the feedback.

The grader's notes are kept as one English line each (the preprocessors and grading records write
``Message.en``). Each line came from a catalogued message, so its Korean text is found again by
matching the line against the English templates of ``data/messages/*.yaml`` and formatting the
Korean template with the same values (values that are themselves messages are translated too).
A line that matches nothing (an exception's own text) stays as it is in both columns.
"""
from __future__ import annotations

import re
import string
from functools import lru_cache

from ..i18n import Message, _catalog


@lru_cache(maxsize=1)
def _patterns() -> list[tuple[re.Pattern, Message]]:
    out = []
    for message in _catalog().values():
        parts, seen, literal = [], set(), 0
        try:
            parsed = list(string.Formatter().parse(message.en))
        except ValueError:
            continue
        fields = [f for _, f, _, _ in parsed if f is not None]
        if not fields or any(not f.isidentifier() for f in fields):
            continue
        for text, field, _, _ in parsed:
            parts.append(re.escape(text))
            literal += len(text)
            if field is None:
                continue
            parts.append(f"(?P={field})" if field in seen else f"(?P<{field}>.+?)")
            seen.add(field)
        if literal >= 4:
            out.append((re.compile("".join(parts), re.S), message))
    out.sort(key=lambda p: -len(p[0].pattern))
    return out


def _plain(message: Message) -> bool:
    return "{" not in message.en


@lru_cache(maxsize=1)
def _fixed() -> dict[str, Message]:
    return {m.en: m for m in _catalog().values() if _plain(m)}


def bilingual(text: str, depth: int = 0) -> Message:
    """The Korean and English of one English reason line."""
    text = str(text)
    if "; " in text and depth < 3:  # several reasons joined: each on its own if each is known
        pieces = [_match(p, depth + 1) for p in text.split("; ")]
        if all(pieces):
            return Message("; ".join(p.ko for p in pieces), text)
    return _match(text, depth) or Message(text, text)


def _match(text: str, depth: int) -> Message | None:
    if text in _fixed():
        return _fixed()[text]
    if depth >= 4:
        return None
    for pattern, message in _patterns():
        found = pattern.fullmatch(text)
        if found:
            ko = {k: bilingual(v, depth + 1).ko for k, v in found.groupdict().items()}
            try:
                return Message(_format(message.ko, ko), text)
            except (KeyError, ValueError, IndexError):
                continue
    return None


def _format(template: str, values: dict) -> str:
    """``template`` with ``values`` as plain text (a ``!r`` conversion in it is dropped: the value is already text)."""
    return re.sub(r"\{(\w+)(![rsa])?(:[^}]*)?\}", lambda m: str(values[m.group(1)]), template)


def join(reasons: list) -> Message:
    """Several reasons (English lines or Messages) as one line per language."""
    items = [r if isinstance(r, Message) else bilingual(r) for r in reasons if r]
    return Message("; ".join(i.ko for i in items), "; ".join(i.en for i in items))
