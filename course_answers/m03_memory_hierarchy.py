"""Reference answers and hidden cases of module 03 (memory hierarchy and roofline).

Units: FLOPs and bytes are plain counts; TFLOP/s = 10^12 FLOP/s; GB/s = 10^9 bytes/s;
KB = 1024 bytes and MB = 1024 KB, as NVIDIA prints on-chip sizes ("50 MB" L2).
Traffic is the *minimum* a kernel must move: each input read once, each output
written once (perfect reuse inside the chip).
"""
from __future__ import annotations

from typing import Any, Sequence

from autograder import profiles
from autograder.llm import kv_cache_bytes
from autograder.modules.m03_memory_hierarchy import tasks
from autograder.modules.m03_memory_hierarchy.analysis import roof, roof_vertices
from autograder.modules.m03_memory_hierarchy.measure import bandwidth_sweep, read_bandwidth_gbs  # noqa: F401 (solutions)

BYTES_PER_ELEMENT = {"fp64": 8, "fp32": 4, "tf32": 4, "bf16": 2, "fp16": 2, "fp8": 1, "int8": 1}
OPS = {"add": 1, "matvec": 2, "matmul": 3}  # op -> number of dimensions in its shape


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
    """The roofline: min(peak, intensity x bandwidth), in TFLOP/s (the rule the figure check reads too)."""
    return roof(peak_tflops, bandwidth_gbs, intensity)


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

    from autograder.harness import time_fn

    n = max(1, int(nbytes) // 4)
    src = torch.rand(n, device=device)
    dst = torch.empty_like(src)
    timing = time_fn(lambda: dst.copy_(src), device=device, budget_s=budget_s)
    return 2 * n * 4 / timing.median_s / 1e9




# ---------------------------------------------------------------- expected answers of a case
def _decode(case) -> dict:
    bandwidth = case.get("bandwidth_gbs") or profiles.get(case["device"]).bandwidth_gbs
    return decode_bound(case["model"], case["batch"], case["context"], float(bandwidth))


EXPECT = {
    "intensity": lambda c: arithmetic_intensity(c["op"], c["shape"], c["dtype"]),
    "roofline": lambda c: roofline_for_profile(tasks.case_profile(c["profile"]), c["dtype"], c["intensity"]),
    "decode": _decode,
    "capacity": lambda c: on_chip_capacity(tasks.capacity_spec(c)),
    "plot": lambda c: {"ridge": ridge_point(c["peak_tflops"], c["bandwidth_gbs"])},
}


# ---------------------------------------------------------------- hidden cases
def _intensity_hidden(rng) -> list:
    dtypes = ("fp64", "fp32", "bf16", "fp16", "fp8", "int8")
    cases = [{"op": "add", "shape": [rng.randint(1, 10**8)], "dtype": rng.choice(dtypes)},
             {"op": "matvec", "shape": [rng.randint(1, 20000), rng.randint(1, 20000)], "dtype": rng.choice(dtypes)},
             {"op": "matvec", "shape": [1, 1], "dtype": "fp32"},
             {"op": "matmul", "shape": [1, 8192, 8192], "dtype": "bf16"},
             {"op": "matmul", "shape": [rng.randint(1, 512), rng.randint(512, 16384), rng.randint(512, 16384)],
              "dtype": "fp8"}]
    for _ in range(4):
        cases.append({"op": "matmul", "shape": [rng.randint(1, 20000) for _ in range(3)], "dtype": rng.choice(dtypes)})
    return cases


def _synthetic_profile(rng, name: str) -> dict:
    dtype = rng.choice(("bf16", "fp16", "fp8", "fp32"))
    return {"id": name, "peak_tflops": {dtype: round(rng.uniform(5, 5000), 1)},
            "bandwidth_gbs": round(rng.uniform(50, 9000), 1), "dtype": dtype}


def _roofline_hidden(rng) -> list:
    cases = []
    for pid, dtype in (("h200_sxm", "bf16"), ("a100_sxm_80gb", "bf16"), ("rtx_4090", "fp16"),
                       ("mi300x", "bf16"), ("h100_pcie", "fp8"), ("t4", "fp16"), ("tpu_v5p", "bf16")):
        p = profiles.get(pid)
        if p.peak(dtype) and p.bandwidth_gbs:
            ridge = p.peak(dtype) * 1e12 / (p.bandwidth_gbs * 1e9)  # around the ridge: both bounds get tested
            cases.append({"profile": pid, "dtype": dtype, "intensity": round(ridge * rng.uniform(0.05, 20), 3)})
    for i in range(3):
        synth = _synthetic_profile(rng, f"synthetic_{i}")
        cases.append({"profile": synth, "dtype": synth["dtype"], "intensity": round(rng.uniform(0.1, 3000), 3)})
    # exactly on the ridge: 100 TFLOP/s over 1000 GB/s is 100 FLOP/byte, and there the roof is flat
    cases.append({"profile": {"id": "synthetic_ridge", "peak_tflops": {"bf16": 100.0}, "bandwidth_gbs": 1000.0},
                  "dtype": "bf16", "intensity": 100.0})
    return cases


def _decode_hidden(rng) -> list:
    cases = [{"model": tasks.model("llama3_8b", 1, 1), "batch": 64, "context": 2048, "device": "h200_sxm"},
             {"model": tasks.model("llama3_70b", 1, 2), "batch": rng.randint(1, 64), "context": rng.randint(1, 32768),
              "device": rng.choice(["a100_sxm_80gb", "mi300x", "b200"])}]
    for i in range(3):
        layers, kv_heads, head_dim = rng.randint(4, 120), rng.choice([1, 2, 4, 8, 16]), rng.choice([64, 96, 128, 256])
        model = {"name": f"synthetic_{i}", "params": float(rng.randint(10**8, 10**12)), "layers": layers,
                 "kv_heads": kv_heads, "head_dim": head_dim, "weight_bytes": rng.choice([1, 2, 4]),
                 "kv_bytes": rng.choice([1, 2])}
        cases.append({"model": model, "batch": rng.randint(1, 256), "context": rng.randint(1, 131072),
                      "bandwidth_gbs": round(rng.uniform(100, 8000), 1)})
    return cases


def _capacity_hidden(rng) -> list:
    known = [p.id for p in profiles.all_of("gpu")
             if p.id not in tasks.VISIBLE_GPUS and all(p.get(f) is not None for f in tasks.CAPACITY_FIELDS)]
    cases = [{"profile": pid} for pid in rng.sample(known, min(4, len(known)))]
    for _ in range(3):
        cases.append({"spec": {"sms": rng.randint(8, 200), "smem_per_sm_kb": rng.choice([48, 64, 100, 164, 228, 256]),
                               "registers_per_sm_kb": rng.choice([64, 128, 256]),
                               "l2_mb": rng.choice([2, 4, 6, 40, 50, 60, 72, 96, 126])}})
    return cases


def _plot_hidden(rng) -> list:
    cases = []
    for _ in range(2):
        peak, bw = round(rng.uniform(5, 3000), 1), round(rng.uniform(50, 8000), 1)
        ridge = peak * 1e3 / bw
        points = []
        for i in range(rng.randint(2, 5)):
            x = ridge * 10 ** rng.uniform(-2, 2)
            top = min(peak, x * bw / 1e3)
            points.append({"label": f"p{i}", "intensity": round(x, 6), "tflops": round(top * rng.uniform(0.05, 0.95), 6)})
        cases.append({"peak_tflops": peak, "bandwidth_gbs": bw, "points": points})
    return cases


HIDDEN = {
    "intensity": _intensity_hidden,
    "roofline": _roofline_hidden,
    "decode": _decode_hidden,
    "capacity": _capacity_hidden,
    "copy": lambda rng: [{"factor": rng.choice([6, 8])}],
    "sweep": lambda rng: [{"start_kib": rng.choice([48, 80, 96]), "beyond": rng.choice([6, 10]), "per_octave": 1}],
    "plot": _plot_hidden,
}
