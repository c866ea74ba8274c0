"""How module 03's sweep task reads a measured sweep: its plateaus and its knee.

Grading logic, not answers: it is the same in a learner's install and the instructor's.
"""
from __future__ import annotations

import math
from typing import Sequence


def median(values: list[float]) -> float | None:
    """The median of ``values`` (None for none)."""
    if not values:
        return None
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else 0.5 * (ordered[mid - 1] + ordered[mid])


def sweep_plateaus(sizes: Sequence[int], gbs: Sequence[float], llc_bytes: int) -> tuple[float | None, float | None]:
    """Median bandwidth of the sets that fit well inside the last-level cache (<= LLC/4) and far beyond it (>= 4 LLC)."""
    return (median([g for s, g in zip(sizes, gbs) if s <= llc_bytes / 4]),
            median([g for s, g in zip(sizes, gbs) if s >= 4 * llc_bytes]))


def sweep_knee(sizes: Sequence[int], gbs: Sequence[float], llc_bytes: int) -> int | None:
    """The largest size still above the geometric mean of the two plateaus (where the fall begins)."""
    fast, slow = sweep_plateaus(sizes, gbs, llc_bytes)
    if not fast or not slow or fast <= slow:
        return None
    threshold = math.sqrt(fast * slow)
    above = [s for s, g in zip(sizes, gbs) if g >= threshold and s < 4 * llc_bytes]
    return max(above) if above else None
