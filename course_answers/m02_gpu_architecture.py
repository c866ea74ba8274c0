"""Reference implementations, hidden cases and known mistakes of module 02 (inside a GPU: SMs, Tensor Cores,
number formats).

A format is a dict ``{"exp_bits", "man_bits", "bias", "special"}`` as in the module's ``data/formats.yaml``
(special: ``ieee``, ``fn`` or ``none``).
"""
from __future__ import annotations

import math
import random

import torch

from autograder import profiles
from autograder.checks.core import Recorded
from autograder.hardware import best_device
from autograder.modules.m02_gpu_architecture import tasks
from autograder.modules.m02_gpu_architecture.tasks import dec, enc, f32, formats, torch_dtype, width


# ---------------------------------------------------------------- task 1: the peak from the parts
def gpu_numbers(spec: dict) -> dict:
    """Numbers that follow from a spec sheet: lanes, vector peak, FLOPs per Tensor Core per cycle, the clock the
    sheet's Tensor Core peak assumes, and the peak at another clock.

    ``spec``: sms, tensor_cores_per_sm, fp32_lanes_per_sm, boost_clock_mhz, dense_tensor_tflops
    (dense 16-bit Tensor Core peak, fp32 accumulation) and clock_mhz (a clock the GPU runs at).
    A Tensor Core does a power-of-two number of FLOPs per cycle; where the peak divided at the boost clock is not one,
    the sheet computed its Tensor Core peak at a lower clock (H100 SXM: 1,024 FLOPs at 1.83 GHz, not 946 at 1.98).
    """
    hz = spec["boost_clock_mhz"] * 1e6
    cuda_cores = spec["sms"] * spec["fp32_lanes_per_sm"]
    tensor_cores = spec["sms"] * spec["tensor_cores_per_sm"]
    per_tc = 2.0 ** round(math.log2(spec["dense_tensor_tflops"] * 1e12 / (tensor_cores * hz)))
    return {
        "cuda_cores": cuda_cores,
        "vector_fp32_tflops": cuda_cores * 2 * hz / 1e12,                # an FMA counts as 2 FLOPs
        "flops_per_tc_per_cycle": per_tc,
        "tensor_clock_mhz": spec["dense_tensor_tflops"] * 1e12 / (tensor_cores * per_tc) / 1e6,
        "tensor_tflops_at_clock": tensor_cores * per_tc * spec["clock_mhz"] * 1e6 / 1e12,
    }


# ---------------------------------------------------------------- task 2: a spec sheet with traps
def dense_peak(quote: dict) -> dict:
    """One GPU's dense 16-bit peak with fp32 accumulation at the clock to plan with, and the traps the figure had."""
    tflops = quote["printed"] * (1000 if quote["unit"] == "PFLOPS" else 1)
    traps = []
    if quote["sparsity_footnote"]:
        tflops, traps = tflops / 2, traps + ["sparse"]
    if quote["accumulate"] == "fp16" and quote["segment"] == "consumer":
        tflops, traps = tflops / 2, traps + ["fp16_accumulate"]       # GeForce: fp32 accumulation at half rate
    if quote["gpus"] > 1:
        tflops, traps = tflops / quote["gpus"], traps + ["per_system"]
    if quote["clock_mhz"] and quote["quoted_clock_mhz"] and quote["clock_mhz"] != quote["quoted_clock_mhz"]:
        tflops, traps = tflops * quote["clock_mhz"] / quote["quoted_clock_mhz"], traps + ["clock"]
    return {"dense_tflops": tflops, "traps": sorted(traps)}


# ---------------------------------------------------------------- tasks 3-5: formats
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


# ---------------------------------------------------------------- task 6: measurement (the solution's own)
def measure_matmul(dtype: str, device: str) -> dict:
    """TFLOP/s of the first square matmul n = 256, 512, ... that takes at least 0.05 s (at most 8192)."""
    from autograder.harness import time_fn
    dt = getattr(torch, dtype)
    n = 256
    while True:
        a = torch.randn(n, n, dtype=dt, device=device)
        b = torch.randn(n, n, dtype=dt, device=device)
        seconds = time_fn(lambda: a @ b, device=device, budget_s=0.4).median_s
        if seconds >= 0.05 or n >= 8192:
            return {"n": n, "seconds": seconds, "tflops": 2 * n**3 / seconds / 1e12}
        n *= 2


# ---------------------------------------------------------------- task 7: N:M sparsity
def nm_mask(w, n: int = 2, m: int = 4) -> torch.Tensor:
    """Keep the n largest |w| of every m consecutive elements of a row; ties: lower index wins."""
    w = torch.as_tensor(w)
    if w.ndim != 2 or w.shape[1] % m:
        raise ValueError(f"need a 2-D tensor whose rows have a multiple of {m} elements, got {tuple(w.shape)}")
    return _keep_largest(w.abs(), n, m)


def _keep_largest(score: torch.Tensor, n: int, m: int) -> torch.Tensor:
    """The n largest scores of every m consecutive elements of a row (a stable sort: ties keep the lower index)."""
    groups = score.reshape(score.shape[0], -1, m)
    order = torch.sort(groups, dim=-1, descending=True, stable=True).indices
    keep = torch.zeros_like(groups, dtype=torch.bool).scatter_(-1, order[..., :n], True)
    return keep.reshape(score.shape)


def expected_mask(case: dict) -> dict | None:
    """The mask, and what the known mistakes give on the same rows (the check names the one a wrong row matches)."""
    if case.get("error"):
        return None
    w, n, m = torch.tensor(case["w"]), case["n"], case["m"]
    rows = lambda mask: mask.to(torch.int64).tolist()  # noqa: E731
    fixed = (n, m) != (2, 4) and w.shape[1] % 4 == 0
    return {"mask": rows(nm_mask(w, n, m)),
            "magnitude": rows(_keep_largest(w, n, m)),                       # by value, not |w|
            "tie_rule": rows(nm_mask(w.flip(-1), n, m).flip(-1)),             # the higher index on ties
            "group_size": rows(nm_mask(w, 2, 4)) if fixed else None}


# ---------------------------------------------------------------- task 8: the narrowest format
def family(exp_bits: int, man_bits: int, special: str) -> dict:
    """The format with IEEE's bias 2^(E-1) - 1."""
    return {"name": f"e{exp_bits}m{man_bits}", "exp_bits": exp_bits, "man_bits": man_bits,
            "bias": 2 ** (exp_bits - 1) - 1, "special": special}


def fit_status(values, rel_tol: float, exp_bits: int, man_bits: int, special: str) -> str:
    """'ok' when every value rounds within rel_tol, else why not: 'range', 'subnormal' or 'precision'."""
    fmt = family(exp_bits, man_bits, special)
    x = torch.as_tensor(values, dtype=torch.float64)
    bad = (round_to_format(x, fmt) - x).abs() > rel_tol * x.abs()
    if not bad.any():
        return "ok"
    lim, worst = limits(fmt), x[bad].abs()
    return "range" if (worst > lim["max"]).any() else "subnormal" if (worst < lim["smallest_normal"]).any() else "precision"


def smallest_format(values, rel_tol: float, special: str = "ieee") -> dict:
    """The fewest bits (then the most exponent bits) whose rounding keeps every value within rel_tol, and why
    one exponent bit less and one mantissa bit less fail."""
    lo, hi = tasks.EXP_RANGE
    for bits in range(lo, hi + tasks.MAN_RANGE[1] + 1):        # exponent + mantissa bits
        for e in range(min(hi, bits), lo - 1, -1):
            m = bits - e
            if tasks.MAN_RANGE[0] <= m <= tasks.MAN_RANGE[1] and fit_status(values, rel_tol, e, m, special) == "ok":
                return {"exp_bits": e, "man_bits": m,
                        "without_exp_bit": fit_status(values, rel_tol, e - 1, m, special) if e > lo else None,
                        "without_man_bit": fit_status(values, rel_tol, e, m - 1, special) if m > 0 else None}
    raise ValueError("no format of the family meets the tolerance")


def expected_fit(case: dict) -> dict:
    """The answer, the status of every format of the family and the answer under the other rule for special values
    (the check names why a wrong one fails)."""
    answer = smallest_format(case["values"], case["rel_tol"], case["special"])
    status = {f"{e},{m}": fit_status(case["values"], case["rel_tol"], e, m, case["special"])
              for e in range(tasks.EXP_RANGE[0], tasks.EXP_RANGE[1] + 1)
              for m in range(tasks.MAN_RANGE[0], tasks.MAN_RANGE[1] + 1)}
    other = "none" if case["special"] == "ieee" else "ieee"
    flipped = smallest_format(case["values"], case["rel_tol"], other)
    return {**answer, "status": status,
            "other_special": {"special": other, "exp_bits": flipped["exp_bits"], "man_bits": flipped["man_bits"]}}


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
    "spec_sheet": dense_peak,
    "decode": expected_decode,
    "limits": lambda c: expected_limits(c["format"]),
    "round": expected_round,
    "nm_mask": expected_mask,
    "smallest_format": expected_fit,
}


# ---------------------------------------------------------------- hidden cases
def random_format(rng: random.Random) -> dict:
    e, m = rng.randint(2, 6), rng.randint(1, 6)
    return {"name": f"x{e}m{m}", "exp_bits": e, "man_bits": m, "bias": 2 ** (e - 1) - 1,
            "special": rng.choice(("ieee", "fn", "none"))}


def _spec_hidden(rng: random.Random) -> list:
    others = tasks.hidden_gpus()
    cases = [tasks.spec_of(pid, rng.choice((0.6, 0.8, 0.9, 1.0))) for pid in rng.sample(others, min(3, len(others)))]
    for i in range(4):  # GPUs that do not exist: nothing to look up; every other one's sheet assumes a lower clock
        sms, tcs, boost = rng.randint(20, 200), rng.choice((4, 8)), rng.randint(900, 2600)
        per_tc = rng.choice((128, 256, 512, 1024, 2048))
        sheet_clock = boost if i % 2 else round(boost * rng.uniform(0.8, 0.95))
        cases.append({"name": f"GPU-{i}", "sms": sms, "tensor_cores_per_sm": tcs,
                      "fp32_lanes_per_sm": rng.choice((64, 128)), "boost_clock_mhz": boost,
                      "dense_tensor_tflops": round(sms * tcs * per_tc * sheet_clock * 1e6 / 1e12, 3),
                      "clock_mhz": rng.randint(600, boost)})
    return cases


def _quote(rng: random.Random, product: str, dense: float, segment: str) -> dict:
    """A figure as a sheet might print it: some of the traps, in TFLOPS or PFLOPS.

    Only fp16 has an fp16-accumulation mode; a row that does not name its accumulation (None) is a bf16 row or a
    datacenter row (GeForce fp16 rows name theirs, as the whitepapers do)."""
    fmt = rng.choice(("bf16", "fp16"))
    fp16_acc = fmt == "fp16" and rng.random() < 0.6
    unnamed = (None, "fp32") if fmt == "bf16" or segment == "datacenter" else ("fp32",)
    sparse, gpus = rng.random() < 0.5, rng.choice((1, 1, 4, 8, 72))
    printed = dense * (2 if sparse else 1) * (2 if fp16_acc and segment == "consumer" else 1) * gpus
    quoted = rng.choice((None, rng.randint(1200, 2600)))
    unit = "PFLOPS" if printed >= 20_000 else "TFLOPS"
    return {"product": product, "printed": round(printed / (1000 if unit == "PFLOPS" else 1), 3), "unit": unit,
            "format": fmt, "sparsity_footnote": sparse,
            "accumulate": "fp16" if fp16_acc else rng.choice(unnamed), "segment": segment, "gpus": gpus,
            "quoted_clock_mhz": quoted, "clock_mhz": round(quoted * rng.uniform(0.55, 0.95)) if quoted else None}


def _sheet_hidden(rng: random.Random) -> list:
    pool = [p for p in profiles.all_of("gpu") if p.vendor == "NVIDIA" and p.peak("bf16")]
    cases = [_quote(rng, p.label, p.peak("bf16"), p.get("segment") or "datacenter") for p in rng.sample(pool, 5)]
    for i in range(3):   # products that do not exist
        cases.append(_quote(rng, f"X{rng.randint(10, 99)}0-{i}", round(rng.uniform(50, 3000), 1),
                            rng.choice(("consumer", "datacenter"))))
    return cases


def rule_of(bits: int, fmt: dict) -> str:
    """Which rule of the task decodes a pattern: 'zero', 'subnormal', 'special' (all-ones exponent) or 'normal'."""
    e_bits, m_bits, _, _ = _fields(fmt)
    e, m = (bits >> m_bits) & ((1 << e_bits) - 1), bits & ((1 << m_bits) - 1)
    return "special" if e == (1 << e_bits) - 1 else "normal" if e else "subnormal" if m else "zero"


def _by_rule(fmt: dict, patterns: list) -> list:
    """One case per rule, as the visible cases are grouped (so a wrong rule costs a part and is named)."""
    groups = {}
    for bits in patterns:
        groups.setdefault(rule_of(bits, fmt), []).append(bits)
    return [{"format": fmt, "rule": rule, "bits": bits} for rule, bits in sorted(groups.items())]


def _decode_hidden(rng: random.Random) -> list:
    f = formats()
    cases = []
    for name in ("e4m3", "e5m2", "e3m2", "e2m3", "e2m1"):                    # every pattern
        cases += _by_rule(f[name], list(range(2 ** width(f[name]))))
    for name in ("fp16", "bf16"):
        cases += _by_rule(f[name], [rng.randrange(2**16) for _ in range(300)] + [0, 0x8000, 1, 0x8001])
    odd = random_format(rng)
    return cases + _by_rule(odd, [rng.randrange(2 ** width(odd)) for _ in range(200)] + [0, 1 << (width(odd) - 1), 1])


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


def _mask_hidden(rng: random.Random) -> list:
    cases = []
    for (n, m), (rows, groups, levels) in zip(((2, 4), (1, 2), (4, 8), (1, 4), (2, 4)),
                                              ((3, 4, 3), (5, 3, 2), (4, 2, 3), (2, 5, 1000), (8, 8, 1000))):
        cases.append({"n": n, "m": m, "w": [[rng.randint(-levels, levels) / 2 for _ in range(m * groups)]
                                            for _ in range(rows)]})
    levels = rng.randint(2, 4)      # long groups with many ties: a sort that is not stable shuffles them
    cases.append({"n": 8, "m": 32, "w": [[rng.randint(-levels, levels) / 2 for _ in range(64)] for _ in range(2)]})
    cases.append({"n": 1, "m": 2, "w": [[rng.gauss(0, 1) for _ in range(5)] for _ in range(2)], "error": True})
    cases.append({"n": 4, "m": 8, "w": [[rng.gauss(0, 1) for _ in range(12)]], "error": True})
    return cases


def _fit_hidden(rng: random.Random) -> list:
    """Value sets over random ranges with random tolerances, both families of special values."""
    cases = []
    for decades, tol, zeros in ((2, 0.1, 0), (5, 0.02, 2), (9, 0.05, 1), (1, 0.3, 0), (3, 0.004, 0)):
        low = rng.uniform(-9, 3)
        values = [rng.choice((1, -1)) * 10 ** rng.uniform(low, low + decades) for _ in range(rng.randint(20, 120))]
        cases.append({"values": values + [0.0] * zeros, "rel_tol": tol, "special": rng.choice(("ieee", "none"))})
    return cases


HIDDEN = {
    "gpu_numbers": _spec_hidden,
    "spec_sheet": _sheet_hidden,
    "decode": _decode_hidden,
    "limits": _limits_hidden,
    "round": _round_hidden,
    "measure": lambda rng: [{"dtype": "bfloat16", "device": tasks.device_string(best_device())}],
    "nm_mask": _mask_hidden,
    "smallest_format": _fit_hidden,
}


# ---------------------------------------------------------------- known mistakes (run through the visible checks)
def _spec_with(**change):
    def wrong(spec):
        out = gpu_numbers(spec)
        for key, rule in change.items():
            out[key] = rule(spec, out)
        return out
    return wrong


def _sheet_ignoring(trap: str, halve_datacenter: bool = False):
    def wrong(quote):
        changed = dict(quote)
        if trap == "sparse":
            changed["sparsity_footnote"] = False
        elif trap == "fp16_accumulate":
            changed["segment"] = "datacenter"
        elif trap == "per_system":
            changed["gpus"] = 1
        elif trap == "clock":
            changed["clock_mhz"] = quote["quoted_clock_mhz"]
        elif trap == "pflops":
            changed["unit"] = "TFLOPS"
        out = dense_peak(changed)
        if halve_datacenter and quote["accumulate"] == "fp16" and quote["segment"] == "datacenter":
            out = {"dense_tflops": out["dense_tflops"] / 2, "traps": sorted(out["traps"] + ["fp16_accumulate"])}
        return out
    return wrong


def _sheet_unnamed_as_fp16(quote):
    """Every GeForce figure that does not name fp32 accumulation read as fp16-accumulate (halved)."""
    if quote["segment"] == "consumer" and quote["accumulate"] is None:
        return dense_peak({**quote, "accumulate": "fp16"})
    return dense_peak(quote)


def _decode_without(rule: str):
    def wrong(bits, fmt):
        e_bits, m_bits, bias, special = _fields(fmt)
        e = (bits >> m_bits) & ((1 << e_bits) - 1)
        m = bits & ((1 << m_bits) - 1)
        if rule == "fields":                        # the exponent read from the wrong place
            return decode(bits, fmt) * 2.0 if e not in (0, (1 << e_bits) - 1) else decode(bits, fmt)
        if rule == "subnormals" and e == 0 and m:   # as if normal
            sign = -1.0 if bits >> (e_bits + m_bits) else 1.0
            return sign * math.ldexp((1 << m_bits) + m, -bias - m_bits)
        if rule == "negative_zero" and e == 0 and m == 0:
            return 0.0
        if rule == "ieee_specials" and special == "ieee":
            return decode(bits, {**fmt, "special": "none"})
        if rule == "special_rule" and special != "ieee":
            return decode(bits, {**fmt, "special": "ieee"})
        return decode(bits, fmt)
    return wrong


def _limits_with(key: str, rule):
    def wrong(fmt):
        return {**limits(fmt), key: rule(fmt)}
    return wrong


def _rounding(rounder=torch.round, saturate=True, subnormals=True, signed=True):
    """round_to_format with one rule changed."""
    def wrong(x, fmt):
        _, m_bits, bias, _ = _fields(fmt)
        x = torch.as_tensor(x, dtype=torch.float64)
        top = limits(fmt)["max"]
        a = x.abs().clamp(max=top) if saturate else x.abs()
        e = torch.frexp(a)[1].double() - 1
        if subnormals:
            e = e.clamp(min=1 - bias)
        step = torch.exp2(e - m_bits)
        q = rounder(a / step) * step
        q = q.clamp(max=top) if saturate else torch.where(q > top, torch.full_like(q, math.inf), q)
        if not subnormals:
            q = torch.where(a < 2.0 ** (1 - bias), torch.zeros_like(q), q)
        return torch.copysign(q, x) if signed else torch.where(x < 0, -q, q)
    return wrong


def _recorded(tflops_of=lambda n, s: 2 * n**3 / s / 1e12, seconds=0.2, n=2048, walls=(1.0, 1.0, 1.0),
              reference=0.09, called=(), timed=True) -> Recorded:
    """Three rounds as a check records them (on a CPU that does about 0.09 TFLOP/s; timed with time_fn, whose one
    sample the course's clock kept, unless not ``timed``)."""
    rounds = [{"n": float(n), "seconds": seconds, "tflops": tflops_of(n, seconds), "reference_called": list(called),
               "time_fn": timed}] * 3
    spans = [[seconds, "time_fn:0"]] if timed else []  # time_fn's samples on the course's clock
    return Recorded({"rounds": rounds, "observed": {"walls": list(walls), "spans": [spans] * 3,
                                                    "reference": [{"tflops": reference, "n": n}] * 3}})


def _mask_wrong(rule: str):
    def wrong(w, n=2, m=4):
        w = torch.as_tensor(w)
        if rule == "shape_error":
            usable = w[:, : w.shape[1] - w.shape[1] % m]
            return torch.cat([nm_mask(usable, n, m), torch.zeros(w.shape[0], w.shape[1] % m, dtype=torch.bool)], 1)
        if rule == "group_size":
            n, m = 2, 4
            if w.shape[1] % 4:
                raise ValueError("rows must have a multiple of 4 elements")
        if rule == "magnitude":
            if w.ndim != 2 or w.shape[1] % m:
                raise ValueError("bad shape")
            order = torch.sort(w.reshape(w.shape[0], -1, m), dim=-1, descending=True, stable=True).indices
            keep = torch.zeros(w.shape[0], w.shape[1] // m, m, dtype=torch.bool).scatter_(-1, order[..., :n], True)
            return keep.reshape(w.shape)
        if rule == "tie_rule":   # keeps the higher index on ties
            return nm_mask(w.flip(-1), n, m).flip(-1)
        if rule == "unstable_sort":   # argsort without stable=True: equal values in any order
            if w.ndim != 2 or w.shape[1] % m:
                raise ValueError("bad shape")
            groups = w.abs().reshape(w.shape[0], -1, m)
            keep = torch.zeros_like(groups, dtype=torch.bool).scatter_(
                -1, torch.argsort(groups, dim=-1, descending=True)[..., :n], True)
            return keep.reshape(w.shape)
        return nm_mask(w, n, m)
    return wrong


def _fit_wrong(rule: str):
    """A search that leaves out one of the rules (the reasons it gives are those of the reference)."""
    def wrong(values, rel_tol, special):
        if rule == "special_ignored":                                       # every format read as special="none"
            return smallest_format(values, rel_tol, "none")
        right = smallest_format(values, rel_tol, special)
        reasons = {k: right[k] for k in ("without_exp_bit", "without_man_bit")}
        return {**reasons, **pick(values, rel_tol, special)}

    def pick(values, rel_tol, special):
        mantissa = max(0, math.ceil(math.log2(1 / rel_tol)) - 1)            # half an ulp within rel_tol
        nonzero = [abs(v) for v in values if v]
        if rule == "range":                                                 # precision only
            return {"exp_bits": 2, "man_bits": mantissa}
        if rule == "precision":                                             # range only, no mantissa bits
            for e in range(2, 9):
                lim = limits(family(e, 0, special))
                if lim["smallest_normal"] <= min(nonzero) and lim["max"] >= max(nonzero):
                    return {"exp_bits": e, "man_bits": 0}
        if rule == "subnormal_precision":   # smallest subnormal below the smallest value, largest value below max
            for e in range(2, 9):
                lim = limits(family(e, mantissa, special))
                if lim["smallest_subnormal"] <= min(nonzero) and lim["max"] >= max(nonzero):
                    return {"exp_bits": e, "man_bits": mantissa}
        if rule == "not_narrowest":                                         # eps, not half of it
            found = smallest_format(values, rel_tol, special)
            return {"exp_bits": found["exp_bits"], "man_bits": found["man_bits"] + 1}
        if rule == "fit_split":                                             # fewest exponent bits first
            for bits in range(2, 32):
                for e in range(2, min(8, bits) + 1):
                    if 0 <= bits - e <= 23 and fit_status(values, rel_tol, e, bits - e, special) == "ok":
                        return {"exp_bits": e, "man_bits": bits - e}
        return smallest_format(values, rel_tol, special)
    return wrong


MISTAKES = {
    "gpu_numbers": {
        "no_fma": _spec_with(vector_fp32_tflops=lambda s, o: o["vector_fp32_tflops"] / 2),
        "printed_peak": _spec_with(tensor_tflops_at_clock=lambda s, o: s["dense_tensor_tflops"]),
        "tensor_clock": _spec_with(   # all at the boost clock: 946 FLOPs per cycle on an H100 SXM, not 1,024
            flops_per_tc_per_cycle=lambda s, o: s["dense_tensor_tflops"] * 1e12 / (
                s["sms"] * s["tensor_cores_per_sm"] * s["boost_clock_mhz"] * 1e6),
            tensor_clock_mhz=lambda s, o: s["boost_clock_mhz"],
            tensor_tflops_at_clock=lambda s, o: s["dense_tensor_tflops"] * s["clock_mhz"] / s["boost_clock_mhz"]),
        "tensor_core_count": _spec_with(flops_per_tc_per_cycle=lambda s, o: o["flops_per_tc_per_cycle"] * s["sms"]),
        "units": _spec_with(vector_fp32_tflops=lambda s, o: o["vector_fp32_tflops"] * 1e6),
    },
    "spec_sheet": {
        "sparse_as_dense": _sheet_ignoring("sparse"),
        "fp16_accumulate": _sheet_ignoring("fp16_accumulate"),
        "halved_datacenter": _sheet_ignoring("", halve_datacenter=True),
        "none_as_fp16": _sheet_unnamed_as_fp16,
        "per_system": _sheet_ignoring("per_system"),
        "clock": _sheet_ignoring("clock"),
        "pflops": _sheet_ignoring("pflops"),
    },
    "decode": {rule: _decode_without(rule)
               for rule in ("fields", "subnormals", "negative_zero", "ieee_specials", "special_rule")},
    "limits": {
        "max_pattern": lambda fmt: {**limits(fmt), "max": limits({**fmt, "special": "ieee"})["max"]},
        "min_exponent": _limits_with("smallest_normal", lambda f: math.ldexp(1.0, -int(f["bias"]))),
        "subnormal_min": _limits_with("smallest_subnormal", lambda f: math.ldexp(1.0, 1 - int(f["bias"]))),
        "eps_vs_roundoff": _limits_with("eps", lambda f: math.ldexp(1.0, -int(f["man_bits"]) - 1)),
    },
    "round": {
        "not_nearest": _rounding(rounder=torch.floor),
        "ties_away": _rounding(rounder=lambda v: torch.floor(v + 0.5)),
        "no_saturation": _rounding(saturate=False),
        "subnormal_spacing": _rounding(subnormals=False),
        "signed_zero": _rounding(signed=False),
    },
    "measure": {
        "flops_n3": _recorded(lambda n, s: n**3 / s / 1e12),
        "ms_not_s": _recorded(lambda n, s: 2 * n**3 / (s / 1000) / 1e12, seconds=200.0),
        "not_measured": _recorded(seconds=2.0, n=4096),
        "too_fast": _recorded(seconds=0.2 / 50),
        "not_first_size": _recorded(seconds=0.0004, n=256, walls=(0.5, 0.5, 0.5)),   # a fixed n = 256
        "past_first_size": _recorded(seconds=1.8, n=4096, walls=(8.0, 8.0, 8.0)),     # n = 2048 already took 0.2 s
        "reference_called": _recorded(called=("autograder.reference.matmul_tflops",)),
        "no_time_fn": _recorded(timed=False),                                          # one perf_counter reading
    },
    "nm_mask": {rule: _mask_wrong(rule) for rule in ("magnitude", "tie_rule", "unstable_sort", "group_size",
                                                     "shape_error")},
    "smallest_format": {rule: _fit_wrong(rule)
                        for rule in ("range", "precision", "subnormal_precision", "special_ignored", "not_narrowest",
                                     "fit_split")},
}
