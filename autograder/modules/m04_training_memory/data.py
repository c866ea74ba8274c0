"""The module's data tables, read once (lesson, tasks and references all use these)."""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from ...datafile import read_yaml

FOLDER = Path(__file__).resolve().parent / "data"


@lru_cache(maxsize=None)
def table(name: str) -> dict:
    """``data/<name>.yaml``: ``memory`` (ZeRO stages, activations, planning rule; the bytes per parameter are the
    course's, :mod:`autograder.knowledge`), ``amp`` (the tolerance of a mixed-precision step), ``scaler_logs`` or ``deepspeed``."""
    return read_yaml(FOLDER / f"{name}.yaml")
