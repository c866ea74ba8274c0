"""How module 03's tasks read a measured sweep (its plateaus and knee) and a plotted roofline.

Grading logic, not answers: it is the same in a learner's install and the instructor's.
"""
from __future__ import annotations

import math
from typing import Sequence

ROOF_TOLERANCE = 0.02  # a plotted roof vertex may be off by 2 %


def roof(peak_tflops: float, bandwidth_gbs: float, intensity: float) -> float:
    """The roofline at ``intensity`` FLOP/byte, in TFLOP/s."""
    return min(peak_tflops, intensity * bandwidth_gbs / 1e3)


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else 0.5 * (ordered[mid - 1] + ordered[mid])


def sweep_plateaus(sizes: Sequence[int], gbs: Sequence[float], llc_bytes: int) -> tuple[float | None, float | None]:
    """Median bandwidth of the sets that fit well inside the last-level cache (<= LLC/4) and far beyond it (>= 4 LLC)."""
    inside = [g for s, g in zip(sizes, gbs) if s <= llc_bytes / 4]
    beyond = [g for s, g in zip(sizes, gbs) if s >= 4 * llc_bytes]
    return (_median(inside) if inside else None, _median(beyond) if beyond else None)


def sweep_knee(sizes: Sequence[int], gbs: Sequence[float], llc_bytes: int) -> int | None:
    """The largest size still above the geometric mean of the two plateaus (where the fall begins)."""
    fast, slow = sweep_plateaus(sizes, gbs, llc_bytes)
    if not fast or not slow or fast <= slow:
        return None
    threshold = math.sqrt(fast * slow)
    above = [s for s, g in zip(sizes, gbs) if g >= threshold and s < 4 * llc_bytes]
    return max(above) if above else None


# ------------------------------------------------------------ roofline figure
def roof_vertices(peak_tflops: float, bandwidth_gbs: float, lo: float, hi: float) -> tuple[list[float], list[float]]:
    """The roof as three vertices: (lo, lo x bw), the ridge, (hi, peak)."""
    ridge = peak_tflops * 1e3 / bandwidth_gbs
    xs = [lo, ridge, hi]
    return xs, [roof(peak_tflops, bandwidth_gbs, x) for x in xs]


def on_roof(x: float, y: float, peak_tflops: float, bandwidth_gbs: float, tol: float = ROOF_TOLERANCE) -> bool:
    """Whether the point (intensity, TFLOP/s) lies on the roofline within ``tol``."""
    if not (x > 0 and y > 0 and math.isfinite(x) and math.isfinite(y)):
        return False
    want = roof(peak_tflops, bandwidth_gbs, x)
    return abs(y - want) <= tol * want


def roof_coverage(lines: list[dict], peak_tflops: float, bandwidth_gbs: float) -> dict:
    """Which parts of the roof the plotted ``lines`` ({"x": [...], "y": [...]}) draw.

    A line is part of the roof when it has two or more vertices and all of them lie on
    the roofline. ``memory``: the roof lines reach down to ridge/10 with two vertices
    at or below the ridge; ``compute``: up to 10 x ridge with two vertices at or above it.
    """
    ridge = peak_tflops * 1e3 / bandwidth_gbs
    xs: list[float] = []
    for line in lines:
        pts = [(x, y) for x, y in zip(line.get("x", []), line.get("y", []))
               if x is not None and y is not None]
        if len(pts) >= 2 and all(on_roof(x, y, peak_tflops, bandwidth_gbs) for x, y in pts):
            xs.extend(x for x, _ in pts)
    below = [x for x in xs if x <= ridge * (1 + 1e-9)]  # the ridge vertex ends both segments
    above = [x for x in xs if x >= ridge * (1 - 1e-9)]
    return {"memory": len(below) >= 2 and min(below) <= ridge / 10,
            "compute": len(above) >= 2 and max(above) >= ridge * 10}


def point_plotted(point: dict, markers: list[list[float]], rel: float = 1e-6) -> bool:
    """Whether ``point`` (intensity, tflops) is among the plotted marker positions."""
    x, y = float(point["intensity"]), float(point["tflops"])
    return any(abs(mx - x) <= rel * abs(x) and abs(my - y) <= rel * abs(y) for mx, my in markers)


