"""Reference answers of the demo exercise (m00) that the grading-pipeline tests use."""


def add(a: float, b: float) -> float:
    return a + b


def stats(xs: list[float]) -> dict:
    return {"mean": sum(xs) / len(xs), "max": max(xs)}


def count_positive(xs: list[float]) -> int:
    return sum(1 for x in xs if x > 0)
