"""Reference implementations and hidden cases of module 02 (inside a GPU: SMs, Tensor Cores, number formats).

A format is a dict ``{"exp_bits", "man_bits", "bias", "special"}`` as in the module's
``data/formats.yaml`` (special: ``ieee``, ``fn`` or ``none``).
"""
from __future__ import annotations

import math
import random

import torch

from autograder.hardware import best_device
from autograder.modules.m02_gpu_architecture import tasks
from autograder.modules.m02_gpu_architecture.tasks import dec, enc, f32, formats, torch_dtype, width


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


# ---------------------------------------------------------------- expected answers of a case
def expected_decode(case: dict) -> list:
    """torch's reading of the patterns where torch has the dtype, the reference otherwise."""
    dtype = torch_dtype(case["format"])
    if dtype is not None and width(case["format"]) in (8, 16):
        storage = torch.uint8 if width(case["format"]) == 8 else torch.int16
        signed = [b - 65536 if storage is torch.int16 and b >= 32768 else b for b in case["bits"]]
        values = torch.tensor(signed, dtype=storage).view(dtype).double().tolist()
    else:
        values = [decode(b, case["format"]) for b in case["bits"]]
    return [enc(v) for v in values]


def expected_limits(fmt: dict) -> dict:
    """torch.finfo where torch has the dtype (smallest subnormal: the pattern 0...01), else the reference."""
    expected = limits(fmt)
    dtype = torch_dtype(fmt)
    if dtype is not None:
        info = torch.finfo(dtype)
        expected.update(max=float(info.max), smallest_normal=float(info.smallest_normal), eps=float(info.eps))
        storage = {8: torch.uint8, 16: torch.int16, 32: torch.int32}[width(fmt)]
        expected["smallest_subnormal"] = float(torch.tensor([1], dtype=storage).view(dtype)[0])
    return expected


def expected_round(case: dict) -> list:
    """torch's cast after clamping to +-max where torch has the dtype; the reference otherwise."""
    x = torch.tensor([dec(v) for v in case["values"]], dtype=torch.float32)
    dtype = torch_dtype(case["format"])
    if dtype is not None:
        top = limits(case["format"])["max"]
        values = x.clamp(-top, top).to(dtype).double().tolist()
    else:
        values = round_to_format(x, case["format"]).tolist()
    return [enc(v) for v in values]


EXPECT = {
    "gpu_numbers": gpu_numbers,
    "decode": expected_decode,
    "limits": lambda c: expected_limits(c["format"]),
    "round": expected_round,
    "matmul_error": lambda c: matmul_errors(c["n"], c["seed"], c["scale"], c["formats"]),
    "mask_2_4": lambda c: None if c.get("error") else mask_2_4(torch.tensor(c["w"])).to(torch.int64).tolist(),
}


# ---------------------------------------------------------------- hidden cases
def random_format(rng: random.Random) -> dict:
    e, m = rng.randint(2, 6), rng.randint(1, 6)
    return {"name": f"x{e}m{m}", "exp_bits": e, "man_bits": m, "bias": 2 ** (e - 1) - 1,
            "special": rng.choice(("ieee", "fn", "none"))}


def _spec_hidden(rng: random.Random) -> list:
    others = [pid for pid in tasks.spec_profiles() if pid not in tasks.VISIBLE_GPUS]
    cases = [tasks.spec_of(pid, rng.choice((0.6, 0.8, 0.9, 1.0))) for pid in rng.sample(others, min(4, len(others)))]
    for i in range(3):  # GPUs that do not exist: nothing to look up
        sms, tcs, clock = rng.randint(20, 200), rng.choice((4, 8)), rng.randint(900, 2600)
        per_tc = rng.choice((128, 256, 512, 1024, 2048))
        cases.append({"name": f"GPU-{i}", "sms": sms, "tensor_cores_per_sm": tcs,
                      "fp32_lanes_per_sm": rng.choice((64, 128)), "boost_clock_mhz": clock,
                      "dense_tensor_tflops": round(sms * tcs * per_tc * clock * 1e6 / 1e12, 3),
                      "clock_mhz": rng.randint(600, clock)})
    return cases


def _decode_hidden(rng: random.Random) -> list:
    f = formats()
    cases = [{"format": f[name], "bits": list(range(2 ** (1 + f[name]["exp_bits"] + f[name]["man_bits"])))}
             for name in ("e4m3", "e5m2", "e3m2", "e2m3", "e2m1")]          # every pattern
    for name in ("fp16", "bf16"):
        cases.append({"format": f[name], "bits": [rng.randrange(2**16) for _ in range(300)]})
    odd = random_format(rng)
    return cases + [{"format": odd, "bits": [rng.randrange(2 ** width(odd)) for _ in range(200)]}]


def _limits_hidden(rng: random.Random) -> list:
    f = formats()
    return [{"format": f[name]} for name in ("fp32", "tf32", "e3m2", "e2m3")] + \
        [{"format": random_format(rng)} for _ in range(4)]


def _round_values(fmt: dict, rng: random.Random) -> list:
    """Random magnitudes, exact ties (odd multiples of half a step) in every binade, and special values."""
    e_bits, m_bits, bias = fmt["exp_bits"], fmt["man_bits"], fmt["bias"]
    top_binade = 2**e_bits - 1 - bias
    values = [f32(rng.gauss(0, 1) * 2.0 ** rng.uniform(-bias - m_bits - 4, top_binade + 2)) for _ in range(300)]
    for _ in range(300):   # ties between two normal numbers: significand 1.xxx1 with m_bits + 1 fraction bits
        k = rng.randint(1 - bias, top_binade)
        significand = 2 ** (m_bits + 1) + 2 * rng.randrange(2**m_bits) + 1
        values.append(f32(rng.choice((1, -1)) * significand * 2.0 ** (k - m_bits - 1)))
    for _ in range(40):    # ties between two subnormal numbers
        values.append(f32(rng.choice((1, -1)) * (2 * rng.randrange(2**m_bits) + 1) * 2.0 ** (-bias - m_bits)))
    return [enc(v) for v in values] + ["inf", "-inf", "nan", -0.0, 0.0]


def _round_hidden(rng: random.Random) -> list:
    f = formats()
    fmts = [f[n] for n in ("bf16", "fp16", "e4m3", "e5m2", "e3m2", "e2m3", "e2m1")] + [random_format(rng)]
    return [{"format": fmt, "values": _round_values(fmt, rng)} for fmt in fmts]


def _error_hidden(rng: random.Random) -> list:
    return [{"n": rng.choice((32, 48, 64)), "seed": rng.randrange(10**6), "scale": scale,
             "formats": {k: formats()[k] for k in tasks.ERROR_FORMATS}}
            for scale in (rng.choice((1e-6, 1e-5)), rng.choice((1e-3, 3e-3)), rng.choice((3e4, 1e5)))]


def _mask_hidden(rng: random.Random) -> list:
    cases = []
    for rows, groups, levels in ((3, 4, 3), (5, 2, 2), (8, 8, 1000), (1, 1, 1)):
        cases.append({"w": [[rng.randint(-levels, levels) / 2 for _ in range(4 * groups)] for _ in range(rows)]})
    cases.append({"w": [[rng.gauss(0, 1) for _ in range(6)] for _ in range(2)], "error": True})
    return cases


HIDDEN = {
    "gpu_numbers": _spec_hidden,
    "decode": _decode_hidden,
    "limits": _limits_hidden,
    "round": _round_hidden,
    "matmul_error": _error_hidden,
    "measure": lambda rng: [{"dtype": "bfloat16", "device": tasks.device_string(best_device())}],
    "mask_2_4": _mask_hidden,
}
