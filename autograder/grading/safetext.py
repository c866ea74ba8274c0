"""Text a submission wrote (an exception's message, a file name), made safe to show to a person.

Two rules, each in one function: :func:`shown` for a terminal, a page and a CSV cell (no control
character acts: it is written as an escape), :func:`spreadsheet` for a CSV cell (no formula runs).
"""
from __future__ import annotations

import unicodedata

# bidirectional embeddings, overrides and isolates: they reorder the text shown after them
_BIDI = {0x202A, 0x202B, 0x202C, 0x202D, 0x202E, 0x2066, 0x2067, 0x2068, 0x2069}
FORMULA = ("=", "+", "-", "@", "\t", "\r")  # what a spreadsheet reads as the start of a formula


def shown(text: str) -> str:
    """``text`` with every control character (C0, DEL, C1, line and paragraph separators, bidirectional
    overrides) written as its escape (``\\x1b``, ``\\u202e``): it cannot move the cursor, clear a line,
    recolour the terminal or reorder what follows. The result is one line; Hangul and emoji are kept."""
    return "".join(_escape(c) if _control(c) else c for c in str(text))


def _control(char: str) -> bool:
    return unicodedata.category(char) in ("Cc", "Zl", "Zp") or ord(char) in _BIDI


def _escape(char: str) -> str:
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def spreadsheet(value):
    """A CSV cell a spreadsheet shows as text: a text beginning with ``= + - @`` (or a tab or carriage
    return) gets a leading apostrophe; numbers and other text are unchanged."""
    return "'" + value if isinstance(value, str) and value.startswith(FORMULA) else value
