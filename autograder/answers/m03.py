"""Reference answers of module 03 (memory hierarchy and roofline): the rules the checks grade against.

Units: FLOPs and bytes are plain counts; TFLOP/s = 10^12 FLOP/s; GB/s = 10^9 bytes/s;
KB = 1024 bytes and MB = 1024 KB, as NVIDIA prints on-chip sizes ("50 MB" L2).
Traffic is the *minimum* a kernel must move: each input read once, each output
written once (perfect reuse inside the chip).
"""
from __future__ import annotations

import math
from typing import Any, Sequence

BYTES_PER_ELEMENT = {"fp64": 8, "fp32": 4, "tf32": 4, "bf16": 2, "fp16": 2, "fp8": 1, "int8": 1}
OPS = {"add": 1, "matvec": 2, "matmul": 3}  # op -> number of dimensions in its shape
ROOF_TOLERANCE = 0.02                      # a plotted roof vertex may be off by 2 %


# ------------------------------------------------------------ arithmetic intensity
def arithmetic_intensity(op: str, shape: Sequence[int], dtype: str) -> dict:
    """FLOPs, minimum bytes moved and their ratio for ``op`` on ``shape`` in ``dtype``.

    ``add``: z = x + y with x, y, z of ``[n]``: n FLOPs, 3n elements moved.
    ``matvec``: y = A x with A ``[m, n]``: 2mn FLOPs, mn + n + m elements.
    ``matmul``: C = A B with A ``[m, k]``, B ``[k, n]``: 2mkn FLOPs, mk + kn + mn elements.
    """
    if op not in OPS:
        raise ValueError(f"unknown op {op!r}: use one of {sorted(OPS)}")
    if dtype not in BYTES_PER_ELEMENT:
        raise ValueError(f"unknown dtype {dtype!r}: use one of {sorted(BYTES_PER_ELEMENT)}")
    dims = [int(d) for d in shape]
    if len(dims) != OPS[op] or min(dims) < 1:
        raise ValueError(f"{op} needs {OPS[op]} positive dimensions, got {list(shape)}")
    size = BYTES_PER_ELEMENT[dtype]
    if op == "add":
        (n,) = dims
        flops, elements = n, 3 * n
    elif op == "matvec":
        m, n = dims
        flops, elements = 2 * m * n, m * n + n + m
    else:
        m, k, n = dims
        flops, elements = 2 * m * k * n, m * k + k * n + m * n
    moved = elements * size
    return {"flops": flops, "bytes": moved, "intensity": flops / moved}


# ------------------------------------------------------------ roofline
def ridge_point(peak_tflops: float, bandwidth_gbs: float) -> float:
    """Intensity (FLOP/byte) where the memory roof meets the compute roof: peak / bandwidth."""
    return peak_tflops * 1e12 / (bandwidth_gbs * 1e9)


def attainable_tflops(peak_tflops: float, bandwidth_gbs: float, intensity: float) -> float:
    """The roofline: min(peak, intensity x bandwidth), in TFLOP/s."""
    return min(peak_tflops, intensity * bandwidth_gbs * 1e9 / 1e12)


def roofline_point(peak_tflops: float, bandwidth_gbs: float, intensity: float) -> dict:
    """Ridge point, attainable TFLOP/s and the bound ("memory" below the ridge, else "compute")."""
    ridge = ridge_point(peak_tflops, bandwidth_gbs)
    return {"ridge": ridge, "attainable_tflops": attainable_tflops(peak_tflops, bandwidth_gbs, intensity),
            "bound": "memory" if intensity < ridge else "compute"}


def roofline_for_profile(profile: Any, dtype: str, intensity: float) -> dict:
    """:func:`roofline_point` with the dense peak of ``dtype`` and the bandwidth of a Profile."""
    peak = profile.peak(dtype)
    if peak is None or not profile.bandwidth_gbs:
        raise ValueError(f"profile {profile.id} has no {dtype} peak or no bandwidth")
    return roofline_point(peak, profile.bandwidth_gbs, intensity)


def matmul_intensity_for_batch(batch: int, d_in: int, d_out: int, dtype: str = "bf16") -> float:
    """Intensity of a linear layer on ``batch`` tokens: [batch, d_in] x [d_in, d_out]."""
    return arithmetic_intensity("matmul", (batch, d_in, d_out), dtype)["intensity"]


def compute_bound_batch(peak_tflops: float, bandwidth_gbs: float, d_in: int, d_out: int,
                        dtype: str = "bf16", limit: int = 1 << 20) -> int | None:
    """Smallest batch at which a linear layer reaches the ridge point (None if it never does)."""
    ridge = ridge_point(peak_tflops, bandwidth_gbs)
    if matmul_intensity_for_batch(limit, d_in, d_out, dtype) < ridge:
        return None
    low, high = 1, limit  # intensity grows with the batch: bisect
    while low < high:
        mid = (low + high) // 2
        if matmul_intensity_for_batch(mid, d_in, d_out, dtype) >= ridge:
            high = mid
        else:
            low = mid + 1
    return low


# ------------------------------------------------------------ LLM decoding
def kv_cache_bytes(model: dict, batch: int, context: int) -> int:
    """K and V for every layer, KV head and token: 2 x layers x kv_heads x head_dim x context x batch x bytes."""
    return (2 * int(model["layers"]) * int(model["kv_heads"]) * int(model["head_dim"])
            * int(context) * int(batch) * int(model["kv_bytes"]))


def decode_bound(model: dict, batch: int, context: int, bandwidth_gbs: float) -> dict:
    """Upper bound on decode throughput when every step reads all weights and the whole KV cache once.

    Returns ``kv_cache_bytes``, ``bytes_per_step`` (weights + KV cache), ``step_s`` (the
    lower bound on one decode step) and ``tokens_per_s`` (batch tokens per step).
    """
    kv = kv_cache_bytes(model, batch, context)
    step_bytes = float(model["params"]) * float(model["weight_bytes"]) + kv
    step_s = step_bytes / (bandwidth_gbs * 1e9)
    return {"kv_cache_bytes": kv, "bytes_per_step": step_bytes, "step_s": step_s,
            "tokens_per_s": batch / step_s}


# ------------------------------------------------------------ on-chip capacity
def on_chip_capacity(spec: dict) -> dict:
    """Whole-GPU shared memory, register file and L2 in KB (1 KB = 1024 bytes), and their sum."""
    sms = int(spec["sms"])
    smem = sms * float(spec["smem_per_sm_kb"])
    registers = sms * float(spec["registers_per_sm_kb"])
    l2 = float(spec["l2_mb"]) * 1024
    return {"smem_kb": smem, "registers_kb": registers, "l2_kb": l2, "total_kb": smem + registers + l2}


# ------------------------------------------------------------ working-set sweep analysis
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
    ridge = ridge_point(peak_tflops, bandwidth_gbs)
    xs = [lo, ridge, hi]
    return xs, [attainable_tflops(peak_tflops, bandwidth_gbs, x) for x in xs]


def on_roof(x: float, y: float, peak_tflops: float, bandwidth_gbs: float, tol: float = ROOF_TOLERANCE) -> bool:
    """Whether the point (intensity, TFLOP/s) lies on the roofline within ``tol``."""
    if not (x > 0 and y > 0 and math.isfinite(x) and math.isfinite(y)):
        return False
    want = attainable_tflops(peak_tflops, bandwidth_gbs, x)
    return abs(y - want) <= tol * want


def roof_coverage(lines: list[dict], peak_tflops: float, bandwidth_gbs: float) -> dict:
    """Which parts of the roof the plotted ``lines`` ({"x": [...], "y": [...]}) draw.

    A line is part of the roof when it has two or more vertices and all of them lie on
    the roofline. ``memory``: the roof lines reach down to ridge/10 with two vertices
    at or below the ridge; ``compute``: up to 10 x ridge with two vertices at or above it.
    """
    ridge = ridge_point(peak_tflops, bandwidth_gbs)
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


def plot_roofline(peak_tflops: float, bandwidth_gbs: float, points: list[dict]):
    """A log-log roofline: the roof from ridge/100 to 100 x ridge and the given points."""
    import matplotlib.pyplot as plt

    ridge = ridge_point(peak_tflops, bandwidth_gbs)
    xs, ys = roof_vertices(peak_tflops, bandwidth_gbs, ridge / 100, ridge * 100)
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot(xs, ys, color="black", label="roof")
    for p in points:
        ax.scatter([p["intensity"]], [p["tflops"]], label=p.get("label"))
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("FLOP/byte")
    ax.set_ylabel("TFLOP/s")
    return fig


# ------------------------------------------------------------ measurements (reference solutions)
def copy_bandwidth_gbs(nbytes: int, device: str = "cpu", budget_s: float = 1.0) -> float:
    """Copy bandwidth in GB/s counting read + write (2 x nbytes per copy), timed with the harness."""
    import torch

    from ..harness import time_fn

    n = max(1, int(nbytes) // 4)
    src = torch.rand(n, device=device)
    dst = torch.empty_like(src)
    timing = time_fn(lambda: dst.copy_(src), device=device, budget_s=budget_s)
    return 2 * n * 4 / timing.median_s / 1e9


READ_BYTES_PER_CALL = 64 * 2**20  # each timed call reads at least this much, whatever the working set


def read_bandwidth_gbs(nbytes: int, device: str = "cpu", budget_s: float = 0.2) -> float:
    """Read bandwidth (GB/s) over a working set of ``nbytes``: one call sums the set many times.

    ``x.expand(reps, n)`` views the same ``n`` floats ``reps`` times without copying, so
    one reduction re-reads a working set that stays ``nbytes`` large (no per-call
    overhead for small sets). CPU: one thread, so one core's L1/L2 are what is measured.
    """
    import torch

    from ..harness import time_fn

    n = max(1, int(nbytes) // 4)
    x = torch.ones(n, device=device)
    reps = max(1, READ_BYTES_PER_CALL // (4 * n))
    view = x.expand(reps, n)
    threads = 1 if str(device).startswith("cpu") else None
    timing = time_fn(lambda: view.sum(dim=1), device=device, budget_s=budget_s, threads=threads)
    return reps * n * 4 / timing.median_s / 1e9


def bandwidth_sweep(sizes: Sequence[int], device: str = "cpu", budget_s: float = 0.2) -> list[float]:
    """:func:`read_bandwidth_gbs` for each working-set size, in order."""
    return [read_bandwidth_gbs(s, device, budget_s) for s in sizes]
