"""Matplotlib set-up so Korean text renders on any OS.

Matplotlib's default font (DejaVu Sans) has no Hangul. We ship NanumGothic
(SIL Open Font License 1.1, see fonts/OFL.txt) and add it as a per-glyph
fallback after DejaVu Sans, so Latin text looks as usual and Hangul is drawn
from NanumGothic without relying on system fonts.
"""
from __future__ import annotations

from pathlib import Path

FONT_FILE = Path(__file__).parent / "fonts" / "NanumGothic.ttf"
FONT_NAME = "NanumGothic"


def setup() -> None:
    """Register the bundled Korean font and make it the fallback for every plot."""
    from matplotlib import font_manager, rcParams

    if FONT_NAME not in {f.name for f in font_manager.fontManager.ttflist}:
        font_manager.fontManager.addfont(str(FONT_FILE))
    rcParams["font.family"] = ["DejaVu Sans", FONT_NAME]
    rcParams["axes.unicode_minus"] = True
