"""Graded tasks of exercise 02: spec arithmetic, number formats, matmul error, throughput, 2:4 masks."""
from __future__ import annotations

import math
import random

from ..i18n import Message, msg
from . import referee
from .core import Part, Task

SPEC_KEYS = ("cuda_cores", "vector_fp32_tflops", "flops_per_tc_per_cycle", "tensor_tflops_at_clock",
             "tensor_over_vector")
LIMIT_KEYS = ("max", "smallest_normal", "smallest_subnormal", "eps")
VISIBLE_GPUS = ("h100_sxm", "a100_sxm_80gb")
NAMED = ("fp32", "tf32", "bf16", "fp16", "e4m3", "e5m2", "e3m2", "e2m3", "e2m1")
ERROR_FORMATS = ("fp32", "tf32", "bf16", "fp16", "e4m3", "e5m2", "e2m1")
REL_TOL = 1e-6


def _formats() -> dict:
    from ..m02_numbers import FORMATS
    return {name: {k: FORMATS[name][k] for k in ("name", "exp_bits", "man_bits", "bias", "special")}
            for name in NAMED}


def _fmt(case: dict) -> dict:
    return dict(case["format"])  # a copy: the learner's function may modify its argument


def _enc(value: float):
    """A float as JSON data: NaN and infinities as strings (Jupyter's messages cannot carry them)."""
    return value if math.isfinite(value) else str(value)        # 'nan', 'inf', '-inf'


def _dec(value):
    """Undo :func:`_enc` (anything else is returned as it is)."""
    return float(value) if isinstance(value, str) and value in ("nan", "inf", "-inf") else value


def _same(a, b) -> bool:
    """Equal floats, NaN equal to NaN, zeros compared with their sign."""
    if not isinstance(a, (int, float)) or isinstance(a, bool):
        return False
    if math.isnan(b):
        return math.isnan(a)
    return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)


def _close(a, b, rel=REL_TOL) -> bool:
    return isinstance(a, (int, float)) and not isinstance(a, bool) and math.isclose(a, b, rel_tol=rel, abs_tol=0.0)


def _show(values: list, limit: int = 4) -> str:
    return "; ".join(values[:limit]) + (" …" if len(values) > limit else "")


# ---------------------------------------------------------------- 1. spec arithmetic
def _spec_of(profile_id: str, clock_share: float) -> dict:
    from .. import profiles
    p = profiles.get(profile_id)
    tensor = p.peak("bf16") or p.peak("fp16")
    return {"name": p.label, "sms": p.get("sms"), "tensor_cores_per_sm": p.get("tensor_cores_per_sm"),
            "fp32_lanes_per_sm": p.get("fp32_lanes_per_sm"), "boost_clock_mhz": p.get("boost_clock_mhz"),
            "dense_tensor_tflops": tensor, "clock_mhz": round(p.get("boost_clock_mhz") * clock_share)}


def spec_profiles() -> list[str]:
    """Profiles with every figure task 1 needs (the hidden cases draw from those not shown)."""
    from .. import profiles
    need = ("sms", "tensor_cores_per_sm", "fp32_lanes_per_sm", "boost_clock_mhz")
    return [p.id for p in profiles.all_of("gpu")
            if all(p.get(k) for k in need) and (p.peak("bf16") or p.peak("fp16"))]


def _spec_visible() -> list:
    return [_spec_of("h100_sxm", 0.75), _spec_of("a100_sxm_80gb", 1.0)]


def _spec_hidden(rng: random.Random) -> list:
    others = [pid for pid in spec_profiles() if pid not in VISIBLE_GPUS]
    cases = [_spec_of(pid, rng.choice((0.6, 0.8, 0.9, 1.0))) for pid in rng.sample(others, min(4, len(others)))]
    for i in range(3):  # GPUs that do not exist: nothing to look up
        sms, tcs, clock = rng.randint(20, 200), rng.choice((4, 8)), rng.randint(900, 2600)
        per_tc = rng.choice((128, 256, 512, 1024, 2048))
        cases.append({"name": f"GPU-{i}", "sms": sms, "tensor_cores_per_sm": tcs,
                      "fp32_lanes_per_sm": rng.choice((64, 128)), "boost_clock_mhz": clock,
                      "dense_tensor_tflops": round(sms * tcs * per_tc * clock * 1e6 / 1e12, 3),
                      "clock_mhz": rng.randint(600, clock)})
    return cases


def _dict_answer(result, keys) -> dict:
    if not isinstance(result, dict):
        raise TypeError(msg("m02.need_dict", keys=", ".join(keys), found=type(result).__name__).text())
    return {k: (_enc(float(result[k])) if result.get(k) is not None else None) for k in keys}


def _spec_score(case: dict, answer: dict) -> list[Part]:
    from ..answers.m02 import gpu_numbers
    expected = gpu_numbers(case)
    parts = []
    for key in SPEC_KEYS:
        ok = _close(answer.get(key), expected[key])
        parts.append(Part(ok, msg("m02.spec_wrong", gpu=case["name"], field=key, expected=f"{expected[key]:.6g}",
                                  found=answer.get(key))))
    return parts


# ---------------------------------------------------------------- 2. decode
def _decode_visible() -> list:
    f = _formats()
    picks = {"fp16": [0x3C00, 0xC000, 0x7BFF, 0x0001, 0x7C00, 0x8000],
             "bf16": [0x3F80, 0x4049, 0x0001, 0xFF80, 0x7FC0],
             "e4m3": [0x38, 0x7E, 0x01, 0x7F, 0xB8], "e5m2": [0x3C, 0x7B, 0x01, 0x7C, 0x7D],
             "e2m1": [0x1, 0x7, 0xA]}
    return [{"format": f[name], "bits": bits} for name, bits in picks.items()]


def _decode_hidden(rng: random.Random) -> list:
    f = _formats()
    cases = [{"format": f[name], "bits": list(range(2 ** (1 + f[name]["exp_bits"] + f[name]["man_bits"])))}
             for name in ("e4m3", "e5m2", "e3m2", "e2m3", "e2m1")]          # every pattern
    for name in ("fp16", "bf16"):
        cases.append({"format": f[name], "bits": [rng.randrange(2**16) for _ in range(300)]})
    odd = _random_format(rng)
    return cases + [{"format": odd, "bits": [rng.randrange(2 ** _width(odd)) for _ in range(200)]}]


def _width(fmt: dict) -> int:
    return 1 + fmt["exp_bits"] + fmt["man_bits"]


def _random_format(rng: random.Random) -> dict:
    e, m = rng.randint(2, 6), rng.randint(1, 6)
    return {"name": f"x{e}m{m}", "exp_bits": e, "man_bits": m, "bias": 2 ** (e - 1) - 1,
            "special": rng.choice(("ieee", "fn", "none"))}


def _torch_dtype(fmt: dict):
    """The torch dtype holding exactly this format (all fields equal to a known format), else None."""
    import torch
    from ..m02_numbers import FORMATS
    known = FORMATS.get(fmt["name"])
    same = known and all(known[k] == fmt[k] for k in ("exp_bits", "man_bits", "bias", "special"))
    return getattr(torch, known["torch"]) if same and known["torch"] else None


def _decode_answer(fn, case):
    return [_enc(float(fn(bits, _fmt(case)))) for bits in case["bits"]]


def _expected_decode(case: dict) -> list[float]:
    """torch's reading of the patterns where torch has the dtype, the reference otherwise."""
    import torch
    from ..answers.m02 import decode
    dtype = _torch_dtype(case["format"])
    if dtype is not None and _width(case["format"]) in (8, 16):
        storage = torch.uint8 if _width(case["format"]) == 8 else torch.int16
        signed = [b - 65536 if storage is torch.int16 and b >= 32768 else b for b in case["bits"]]
        return torch.tensor(signed, dtype=storage).view(dtype).double().tolist()
    return [decode(b, case["format"]) for b in case["bits"]]


def _decode_score(case: dict, answer: list) -> Part:
    expected = _expected_decode(case)
    if not isinstance(answer, list) or len(answer) != len(expected):
        return Part(False, msg("m02.wrong_length", expected=len(expected), found=_len(answer)))
    answer = [_dec(a) for a in answer]
    wrong = [f"{b:#0{2 + (_width(case['format']) + 3) // 4}x} → {e!r} ({a!r})"
             for b, e, a in zip(case["bits"], expected, answer) if not _same(a, e)]
    return Part(not wrong, msg("m02.decode_wrong", fmt=case["format"]["name"], n=len(wrong),
                               total=len(expected), examples=_show(wrong)))


def _len(value) -> str:
    return str(len(value)) if isinstance(value, list) else type(value).__name__


# ---------------------------------------------------------------- 3. limits
def _limits_visible() -> list:
    f = _formats()
    return [{"format": f[name]} for name in ("fp16", "bf16", "e4m3", "e5m2", "e2m1")]


def _limits_hidden(rng: random.Random) -> list:
    f = _formats()
    return [{"format": f[name]} for name in ("fp32", "tf32", "e3m2", "e2m3")] + \
        [{"format": _random_format(rng)} for _ in range(4)]


def _limits_answer(fn, case):
    return _dict_answer(fn(_fmt(case)), LIMIT_KEYS)


def _expected_limits(fmt: dict) -> dict:
    """torch.finfo where torch has the dtype (smallest subnormal: the pattern 0...01), else the reference."""
    import torch
    from ..answers.m02 import limits
    expected = limits(fmt)
    dtype = _torch_dtype(fmt)
    if dtype is not None:
        info = torch.finfo(dtype)
        expected.update(max=float(info.max), smallest_normal=float(info.smallest_normal), eps=float(info.eps))
        storage = {8: torch.uint8, 16: torch.int16, 32: torch.int32}[_width(fmt)]
        expected["smallest_subnormal"] = float(torch.tensor([1], dtype=storage).view(dtype)[0])
    return expected


def _limits_score(case: dict, answer: dict) -> list[Part]:
    expected = _expected_limits(case["format"])
    return [Part(_close(answer.get(k), expected[k]), msg("m02.limit_wrong", fmt=case["format"]["name"], field=k,
                                                          expected=f"{expected[k]:.10g}", found=answer.get(k)))
            for k in LIMIT_KEYS]


# ---------------------------------------------------------------- 4. round
ROUND_VISIBLE = [0.0, -0.0, 1.0, 1.0625, 1.1875, -2.75, 0.3, 1e-3, 500.0, -70000.0, "inf", "-inf", "nan"]


def _f32(value: float) -> float:
    import struct
    return struct.unpack("f", struct.pack("f", value))[0] if math.isfinite(value) and abs(value) < 3.4e38 else value


def _round_visible() -> list:
    f = _formats()
    return [{"format": f[name], "values": ROUND_VISIBLE} for name in ("bf16", "fp16", "e4m3", "e2m1")]


def _round_hidden(rng: random.Random) -> list:
    f = _formats()
    fmts = [f[n] for n in ("bf16", "fp16", "e4m3", "e5m2", "e3m2", "e2m3", "e2m1")] + [_random_format(rng)]
    return [{"format": fmt, "values": _round_values(fmt, rng)} for fmt in fmts]


def _round_values(fmt: dict, rng: random.Random) -> list[float]:
    """Random magnitudes, exact ties (odd multiples of half a step) in every binade, and special values."""
    e_bits, m_bits, bias = fmt["exp_bits"], fmt["man_bits"], fmt["bias"]
    top_binade = 2**e_bits - 1 - bias
    values = [_f32(rng.gauss(0, 1) * 2.0 ** rng.uniform(-bias - m_bits - 4, top_binade + 2)) for _ in range(300)]
    for _ in range(300):   # ties between two normal numbers: significand 1.xxx1 with m_bits + 1 fraction bits
        k = rng.randint(1 - bias, top_binade)
        significand = 2 ** (m_bits + 1) + 2 * rng.randrange(2**m_bits) + 1
        values.append(_f32(rng.choice((1, -1)) * significand * 2.0 ** (k - m_bits - 1)))
    for _ in range(40):    # ties between two subnormal numbers
        values.append(_f32(rng.choice((1, -1)) * (2 * rng.randrange(2**m_bits) + 1) * 2.0 ** (-bias - m_bits)))
    return [_enc(v) for v in values] + ["inf", "-inf", "nan", -0.0, 0.0]


def _round_answer(fn, case):
    import torch
    x = torch.tensor([_dec(v) for v in case["values"]], dtype=torch.float32)
    out = torch.as_tensor(fn(x.clone(), _fmt(case)))
    if out.shape != x.shape:
        raise ValueError(msg("m02.wrong_shape", expected=tuple(x.shape), found=tuple(out.shape)).text())
    return [_enc(v) for v in out.to(torch.float64).flatten().tolist()]


def _expected_round(case: dict) -> list[float]:
    """torch's cast after clamping to +-max where torch has the dtype; the reference otherwise."""
    import torch
    from ..answers.m02 import limits, round_to_format
    x = torch.tensor([_dec(v) for v in case["values"]], dtype=torch.float32)
    dtype = _torch_dtype(case["format"])
    if dtype is not None:
        top = limits(case["format"])["max"]
        return x.clamp(-top, top).to(dtype).double().tolist()
    return round_to_format(x, case["format"]).tolist()


def _round_score(case: dict, answer: list) -> Part:
    expected = _expected_round(case)
    if not isinstance(answer, list) or len(answer) != len(expected):
        return Part(False, msg("m02.wrong_length", expected=len(expected), found=_len(answer)))
    answer = [_dec(a) for a in answer]
    wrong = [f"{x!r} → {e!r} ({a!r})" for x, e, a in zip(case["values"], expected, answer) if not _same(a, e)]
    return Part(not wrong, msg("m02.round_wrong", fmt=case["format"]["name"], n=len(wrong), total=len(expected),
                               examples=_show(wrong)))


# ---------------------------------------------------------------- 5. matmul error
def _error_visible() -> list:
    return [{"n": 64, "seed": 0, "scale": 1.0, "formats": {k: _formats()[k] for k in ERROR_FORMATS}}]


def _error_hidden(rng: random.Random) -> list:
    return [{"n": rng.choice((32, 48, 64)), "seed": rng.randrange(10**6), "scale": scale,
             "formats": {k: _formats()[k] for k in ERROR_FORMATS}}
            for scale in (rng.choice((1e-6, 1e-5)), rng.choice((1e-3, 3e-3)), rng.choice((3e4, 1e5)))]


def _error_answer(fn, case):
    formats = {k: dict(v) for k, v in case["formats"].items()}
    return _dict_answer(fn(case["n"], case["seed"], case["scale"], formats), list(case["formats"]))


def _error_score(case: dict, answer: dict) -> list[Part]:
    from ..answers.m02 import matmul_errors
    expected = matmul_errors(case["n"], case["seed"], case["scale"], case["formats"])
    where = f"n={case['n']}, seed={case['seed']}, scale={case['scale']:g}"
    parts = []
    for name, want in expected.items():
        got = answer.get(name)
        ok = isinstance(got, float) and want / 2 <= got <= want * 2
        parts.append(Part(ok, msg("m02.error_magnitude", fmt=name, where=where, expected=f"{want:.3g}",
                                  found="None" if got is None else f"{got:.3g}")))
    pairs = [(a, b) for a in expected for b in expected if expected[a] * 1.5 < expected[b]]
    flipped = [f"{a} < {b}" for a, b in pairs
               if not (isinstance(answer.get(a), float) and isinstance(answer.get(b), float)
                       and answer[a] < answer[b])]
    parts.append(Part(not flipped, msg("m02.error_order", where=where, pairs=_show(flipped)), weight=2.0))
    return parts


# ---------------------------------------------------------------- 6. measured throughput
def _measure_visible() -> list:
    from ..hardware import best_device
    return [{"dtype": "float32", "device": _device_string(best_device())}]


def _measure_hidden(rng: random.Random) -> list:
    from ..hardware import best_device
    return [{"dtype": "bfloat16", "device": _device_string(best_device())}]


def _device_string(kind: str) -> str:
    return f"{kind}:0" if kind in ("cuda", "xpu") else kind


def _measure_answer(fn, case):
    result = _dict_answer(fn(case["dtype"], case["device"]), ("n", "seconds", "tflops"))
    return {**result, "device": case["device"], "dtype": case["dtype"]}


MEASURE_SIZES = (16, 16384)  # the reference times the learner's n, kept within these bounds


def _measure_reference(case: dict, answer: dict) -> dict:
    """The course's matmul at the learner's size, in the case's dtype, on the case's device."""
    from ..reference import matmul_tflops
    n = answer.get("n") if isinstance(answer, dict) else None
    n = int(min(max(n, MEASURE_SIZES[0]), MEASURE_SIZES[1])) if isinstance(n, (int, float)) and math.isfinite(n) else 1024
    return {"tflops": matmul_tflops(case["dtype"], case["device"], budget_s=1.0, sizes=[n])["tflops"], "n": n}


def _measure_score(case: dict, answer: dict) -> list[Part]:
    from ..expectations import side_by_side
    rounds = referee.rounds(answer)
    for r in rounds or [{}]:
        n, seconds, tflops = r.get("n"), r.get("seconds"), r.get("tflops")
        if not all(isinstance(v, float) and math.isfinite(v) and v > 0 for v in (n, seconds, tflops)):
            return [Part(False, msg("m02.measure_invalid", found=f"n={n}, seconds={seconds}, tflops={tflops}"))]
    parts = []
    for r in rounds:
        implied = 2 * r["n"]**3 / r["seconds"] / 1e12
        if not math.isclose(r["tflops"], implied, rel_tol=0.02):
            parts.append(Part(False, msg("m02.measure_inconsistent", n=int(r["n"]), seconds=f"{r['seconds']:.4g}",
                                         implied=f"{implied:.4g}", found=f"{r['tflops']:.4g}")))
            break
    else:
        parts.append(Part(True, msg("m02.measure_inconsistent", n="", seconds="", implied="", found="")))
    what = Message(f"{case['dtype']} matmul ({case['device']})", f"{case['dtype']} matmul ({case['device']})")
    measured, compared = side_by_side("matmul", answer, what, lambda r: r["tflops"], lambda ref: ref["tflops"],
                                      lambda r: r["seconds"], "TFLOP/s")
    if not measured:
        return compared
    peak = _spec_peak(case)
    if peak:
        top = max(r["tflops"] for r in rounds)
        parts.append(Part(top <= 1.05 * peak, msg("m02.measure_above_peak", found=f"{top:.4g}", peak=f"{peak:.4g}")))
    return parts + compared


def _spec_peak(case: dict) -> float | None:
    """The dense spec peak of the device's dtype, if the device has a spec profile."""
    from ..reference import canonical_dtype, spec_profile
    profile = spec_profile(case["device"])
    return profile.peak(canonical_dtype(case["dtype"])) if profile is not None else None


# ---------------------------------------------------------------- 7. 2:4 mask
def _mask_visible() -> list:
    return [{"w": [[0.1, -0.9, 0.5, 0.2, 3.0, 1.0, -2.0, 0.0]]},
            {"w": [[1.0, 1.0, 1.0, 1.0], [0.0, -2.0, 2.0, 1.0]]},
            {"w": [[1.0, 2.0, 3.0]], "error": True}]


def _mask_hidden(rng: random.Random) -> list:
    cases = []
    for rows, groups, levels in ((3, 4, 3), (5, 2, 2), (8, 8, 1000), (1, 1, 1)):
        cases.append({"w": [[rng.randint(-levels, levels) / 2 for _ in range(4 * groups)] for _ in range(rows)]})
    cases.append({"w": [[rng.gauss(0, 1) for _ in range(6)] for _ in range(2)], "error": True})
    return cases


def _mask_answer(fn, case):
    import torch
    w = torch.tensor(case["w"], dtype=torch.float32)
    if case.get("error"):
        try:
            fn(w)
        except ValueError:
            return "ValueError"
        except Exception as exc:  # the wrong kind of error is an answer too
            return type(exc).__name__
        return "no error"
    return torch.as_tensor(fn(w)).to(torch.int64).tolist()


def _mask_score(case: dict, answer) -> Part:
    if case.get("error"):
        return Part(answer == "ValueError", msg("m02.mask_error", found=answer))
    import torch
    from ..answers.m02 import mask_2_4
    expected = mask_2_4(torch.tensor(case["w"])).to(torch.int64).tolist()
    if answer == expected:
        return Part(True, msg("m02.mask_ok"))
    if not isinstance(answer, list) or len(answer) != len(expected):
        return Part(False, msg("m02.wrong_length", expected=len(expected), found=_len(answer)))
    row = next(i for i, (a, e) in enumerate(zip(answer, expected)) if a != e)
    return Part(False, msg("m02.mask_wrong", row=row, w=case["w"][row], expected=expected[row], found=answer[row]))


TASKS = {
    "gpu_numbers": Task(title=msg("m02.title_spec"), answer=lambda fn, case: _dict_answer(fn(dict(case)), SPEC_KEYS),
                        score=_spec_score, visible=_spec_visible, hidden=_spec_hidden),
    "decode": Task(title=msg("m02.title_decode"), answer=_decode_answer, score=_decode_score,
                   visible=_decode_visible, hidden=_decode_hidden),
    "limits": Task(title=msg("m02.title_limits"), answer=_limits_answer, score=_limits_score,
                   visible=_limits_visible, hidden=_limits_hidden),
    "round": Task(title=msg("m02.title_round"), answer=_round_answer, score=_round_score,
                  visible=_round_visible, hidden=_round_hidden),
    "matmul_error": Task(title=msg("m02.title_error"), answer=_error_answer, score=_error_score,
                         visible=_error_visible, hidden=_error_hidden),
    "measure": Task(title=msg("m02.title_measure"), answer=_measure_answer, score=_measure_score,
                    visible=_measure_visible, hidden=_measure_hidden, measurement=True,
                    reference=_measure_reference, rounds=3),
    "mask_2_4": Task(title=msg("m02.title_mask"), answer=_mask_answer, score=_mask_score,
                     visible=_mask_visible, hidden=_mask_hidden),
}
