"""Reference answers and hidden cases of the demo module (m00)."""
from __future__ import annotations


def add(a: float, b: float) -> float:
    return a + b


def stats(xs: list[float]) -> dict:
    return {"mean": sum(xs) / len(xs), "max": max(xs)}


def count_positive(xs: list[float]) -> int:
    return sum(1 for x in xs if x > 0)


def _lists(rng, n: int) -> list[list[float]]:
    return [[rng.randint(-50, 50) for _ in range(rng.randint(1, 6))] for _ in range(n)]


EXPECT = {
    "add": lambda case: add(*case),
    "stats": stats,
    "count": count_positive,
}

HIDDEN = {
    "add": lambda rng: [[rng.randint(-99, 99), rng.randint(-99, 99)] for _ in range(6)],
    "stats": lambda rng: _lists(rng, 3),
    "count": lambda rng: _lists(rng, 3),
}
