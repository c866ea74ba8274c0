"""Reference implementations for module 02 (inside a GPU: SMs, Tensor Cores, number formats).

A format is a dict ``{"exp_bits", "man_bits", "bias", "special"}`` as in
``autograder/data/m02_formats.yaml`` (special: ``ieee``, ``fn`` or ``none``).
"""
from __future__ import annotations

import math

import torch


# ---------------------------------------------------------------- task 1: spec arithmetic
def gpu_numbers(spec: dict) -> dict:
    """Numbers that follow from a spec sheet: lanes, vector peak, FLOPs per Tensor Core per cycle.

    ``spec``: sms, tensor_cores_per_sm, fp32_lanes_per_sm, boost_clock_mhz, dense_tensor_tflops
    (dense 16-bit Tensor Core peak, fp32 accumulation) and clock_mhz (a clock the GPU runs at).
    """
    hz = spec["boost_clock_mhz"] * 1e6
    cuda_cores = spec["sms"] * spec["fp32_lanes_per_sm"]
    tensor_cores = spec["sms"] * spec["tensor_cores_per_sm"]
    vector = cuda_cores * 2 * hz / 1e12                       # an FMA counts as 2 FLOPs
    per_tc = spec["dense_tensor_tflops"] * 1e12 / (tensor_cores * hz)
    return {
        "cuda_cores": cuda_cores,
        "vector_fp32_tflops": vector,
        "flops_per_tc_per_cycle": per_tc,
        "tensor_tflops_at_clock": tensor_cores * per_tc * spec["clock_mhz"] * 1e6 / 1e12,
        "tensor_over_vector": spec["dense_tensor_tflops"] / vector,
    }


# ---------------------------------------------------------------- tasks 2-4: formats
def _fields(fmt: dict) -> tuple[int, int, int, str]:
    return int(fmt["exp_bits"]), int(fmt["man_bits"]), int(fmt["bias"]), fmt["special"]


def decode(bits: int, fmt: dict) -> float:
    """The value of the bit pattern ``bits`` (sign bit highest) in format ``fmt``."""
    e_bits, m_bits, bias, special = _fields(fmt)
    if not 0 <= bits < 2 ** (1 + e_bits + m_bits):
        raise ValueError(f"{bits} does not fit in {1 + e_bits + m_bits} bits")
    sign = -1.0 if bits >> (e_bits + m_bits) else 1.0
    e = (bits >> m_bits) & ((1 << e_bits) - 1)
    m = bits & ((1 << m_bits) - 1)
    top = (1 << e_bits) - 1
    if special == "ieee" and e == top:
        return sign * math.inf if m == 0 else math.nan
    if special == "fn" and e == top and m == (1 << m_bits) - 1:
        return math.nan
    if e == 0:                                                 # zero and subnormals
        return sign * math.ldexp(m, 1 - bias - m_bits)
    return sign * math.ldexp((1 << m_bits) + m, e - bias - m_bits)


def limits(fmt: dict) -> dict:
    """Largest finite value, smallest normal, smallest subnormal and machine epsilon."""
    e_bits, m_bits, bias, special = _fields(fmt)
    top = (1 << e_bits) - 1
    e_max = top - 1 if special == "ieee" else top              # ieee: all-ones exponent is inf/NaN
    m_max = (1 << m_bits) - (2 if special == "fn" else 1)      # fn: all-ones mantissa there is NaN
    return {
        "max": math.ldexp((1 << m_bits) + m_max, e_max - bias - m_bits),
        "smallest_normal": math.ldexp(1.0, 1 - bias),
        "smallest_subnormal": math.ldexp(1.0, 1 - bias - m_bits),
        "eps": math.ldexp(1.0, -m_bits),
    }


def round_to_format(x, fmt: dict) -> torch.Tensor:
    """Round to nearest (ties to even) onto the grid of ``fmt``, saturating at +-max (float64 out).

    |x| above the largest finite value (infinity included) becomes +-max; NaN stays NaN.
    """
    _, m_bits, bias, _ = _fields(fmt)
    x = torch.as_tensor(x, dtype=torch.float64)
    top = limits(fmt)["max"]
    a = x.abs().clamp(max=top)
    _, exponent = torch.frexp(a)                               # a = f * 2**exponent, f in [0.5, 1)
    e = (exponent.to(torch.float64) - 1).clamp(min=1 - bias)   # subnormals share the lowest binade
    step = torch.exp2(e - m_bits)
    q = (torch.round(a / step) * step).clamp(max=top)          # torch.round: half to even
    return torch.copysign(q, x)


# ---------------------------------------------------------------- task 5: matmul error
def matrices(n: int, seed: int, scale: float) -> tuple[torch.Tensor, torch.Tensor]:
    """The two float64 inputs of the error experiment (the generation the task prescribes)."""
    g = torch.Generator().manual_seed(seed)
    a = torch.randn(n, n, generator=g, dtype=torch.float64) * scale
    b = torch.randn(n, n, generator=g, dtype=torch.float64) * scale
    return a, b


def matmul_errors(n: int, seed: int, scale: float, formats: dict) -> dict:
    """Relative Frobenius error of (round(A) @ round(B)) against A @ B, per format."""
    a, b = matrices(n, seed, scale)
    exact = a @ b
    out = {}
    for name, fmt in formats.items():
        approx = round_to_format(a, fmt) @ round_to_format(b, fmt)
        out[name] = float(torch.linalg.norm(approx - exact) / torch.linalg.norm(exact))
    return out


# ---------------------------------------------------------------- task 7: 2:4 sparsity
def mask_2_4(w) -> torch.Tensor:
    """Keep the 2 largest |w| of every 4 consecutive elements of a row; ties: lower index wins."""
    w = torch.as_tensor(w)
    if w.ndim != 2 or w.shape[1] % 4:
        raise ValueError(f"need a 2-D tensor whose rows have a multiple of 4 elements, got {tuple(w.shape)}")
    groups = w.abs().reshape(w.shape[0], -1, 4)
    order = torch.sort(groups, dim=-1, descending=True, stable=True).indices
    keep = torch.zeros_like(groups, dtype=torch.bool).scatter_(-1, order[..., :2], True)
    return keep.reshape(w.shape)
