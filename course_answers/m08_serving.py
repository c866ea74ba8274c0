"""Reference answers and hidden cases of module 08 (serving)."""
from __future__ import annotations


def twice(x: float) -> float:
    return 2 * x


EXPECT = {"first": twice}

HIDDEN = {"first": lambda rng: [rng.uniform(-10, 10) for _ in range(3)]}

MISTAKES = {"first": {}}
