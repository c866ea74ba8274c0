"""Graded tasks of exercise 02: spec arithmetic, number formats, matmul error, throughput, 2:4 masks.

Where torch has a format's dtype, the references (``course_answers.m02_gpu_architecture``) take torch's
own reading as the expected answer; otherwise the course's reference implementation.
"""
from __future__ import annotations

import math

from ...checks import referee
from ...checks.core import Part, Task, close
from ...i18n import Message, msg

SPEC_KEYS = ("cuda_cores", "vector_fp32_tflops", "flops_per_tc_per_cycle", "tensor_tflops_at_clock",
             "tensor_over_vector")
LIMIT_KEYS = ("max", "smallest_normal", "smallest_subnormal", "eps")
VISIBLE_GPUS = ("h100_sxm", "a100_sxm_80gb")
NAMED = ("fp32", "tf32", "bf16", "fp16", "e4m3", "e5m2", "e3m2", "e2m3", "e2m1")
ERROR_FORMATS = ("fp32", "tf32", "bf16", "fp16", "e4m3", "e5m2", "e2m1")
REL_TOL = 1e-6


def formats() -> dict:
    from .lesson import FORMATS
    return {name: {k: FORMATS[name][k] for k in ("name", "exp_bits", "man_bits", "bias", "special")}
            for name in NAMED}


def _fmt(case: dict) -> dict:
    return dict(case["format"])  # a copy: the learner's function may modify its argument


def enc(value: float):
    """A float as JSON data: NaN and infinities as strings (Jupyter's messages cannot carry them)."""
    return value if math.isfinite(value) else str(value)        # 'nan', 'inf', '-inf'


def dec(value):
    """Undo :func:`_enc` (anything else is returned as it is)."""
    return float(value) if isinstance(value, str) and value in ("nan", "inf", "-inf") else value


def _same(a, b) -> bool:
    """Equal floats, NaN equal to NaN, zeros compared with their sign."""
    if not isinstance(a, (int, float)) or isinstance(a, bool):
        return False
    if math.isnan(b):
        return math.isnan(a)
    return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)


def _show(values: list, limit: int = 4) -> str:
    return "; ".join(values[:limit]) + (" …" if len(values) > limit else "")


# ---------------------------------------------------------------- 1. spec arithmetic
def spec_of(profile_id: str, clock_share: float) -> dict:
    from ... import profiles
    p = profiles.get(profile_id)
    tensor = p.peak("bf16") or p.peak("fp16")
    return {"name": p.label, "sms": p.get("sms"), "tensor_cores_per_sm": p.get("tensor_cores_per_sm"),
            "fp32_lanes_per_sm": p.get("fp32_lanes_per_sm"), "boost_clock_mhz": p.get("boost_clock_mhz"),
            "dense_tensor_tflops": tensor, "clock_mhz": round(p.get("boost_clock_mhz") * clock_share)}


def spec_profiles() -> list[str]:
    """Profiles with every figure task 1 needs (the hidden cases draw from those not shown)."""
    from ... import profiles
    need = ("sms", "tensor_cores_per_sm", "fp32_lanes_per_sm", "boost_clock_mhz")
    return [p.id for p in profiles.all_of("gpu")
            if all(p.get(k) for k in need) and (p.peak("bf16") or p.peak("fp16"))]


def _spec_visible() -> list:
    return [spec_of("h100_sxm", 0.75), spec_of("a100_sxm_80gb", 1.0)]



def _dict_answer(result, keys) -> dict:
    if not isinstance(result, dict):
        raise TypeError(msg("m02.need_dict", keys=", ".join(keys), found=type(result).__name__).text())
    return {k: (enc(float(result[k])) if result.get(k) is not None else None) for k in keys}


def _spec_score(case: dict, answer: dict, expected: dict) -> list[Part]:
    parts = []
    for key in SPEC_KEYS:
        ok = close(answer.get(key), expected[key], rel=REL_TOL)
        parts.append(Part(ok, msg("m02.spec_wrong", gpu=case["name"], field=key, expected=f"{expected[key]:.6g}",
                                  found=answer.get(key))))
    return parts


# ---------------------------------------------------------------- 2. decode
def _decode_visible() -> list:
    f = formats()
    picks = {"fp16": [0x3C00, 0xC000, 0x7BFF, 0x0001, 0x7C00, 0x8000],
             "bf16": [0x3F80, 0x4049, 0x0001, 0xFF80, 0x7FC0],
             "e4m3": [0x38, 0x7E, 0x01, 0x7F, 0xB8], "e5m2": [0x3C, 0x7B, 0x01, 0x7C, 0x7D],
             "e2m1": [0x1, 0x7, 0xA]}
    return [{"format": f[name], "bits": bits} for name, bits in picks.items()]



def width(fmt: dict) -> int:
    return 1 + fmt["exp_bits"] + fmt["man_bits"]



def torch_dtype(fmt: dict):
    """The torch dtype holding exactly this format (all fields equal to a known format), else None."""
    import torch
    from .lesson import FORMATS
    known = FORMATS.get(fmt["name"])
    same = known and all(known[k] == fmt[k] for k in ("exp_bits", "man_bits", "bias", "special"))
    return getattr(torch, known["torch"]) if same and known["torch"] else None


def _decode_answer(fn, case):
    return [enc(float(fn(bits, _fmt(case)))) for bits in case["bits"]]



def _decode_score(case: dict, answer: list, expected: list) -> Part:
    expected = [dec(e) for e in expected]
    if not isinstance(answer, list) or len(answer) != len(expected):
        return Part(False, msg("m02.wrong_length", expected=len(expected), found=_len(answer)))
    answer = [dec(a) for a in answer]
    wrong = [f"{b:#0{2 + (width(case['format']) + 3) // 4}x} → {e!r} ({a!r})"
             for b, e, a in zip(case["bits"], expected, answer) if not _same(a, e)]
    return Part(not wrong, msg("m02.decode_wrong", fmt=case["format"]["name"], n=len(wrong),
                               total=len(expected), examples=_show(wrong)))


def _len(value) -> str:
    return str(len(value)) if isinstance(value, list) else type(value).__name__


# ---------------------------------------------------------------- 3. limits
def _limits_visible() -> list:
    f = formats()
    return [{"format": f[name]} for name in ("fp16", "bf16", "e4m3", "e5m2", "e2m1")]



def _limits_answer(fn, case):
    return _dict_answer(fn(_fmt(case)), LIMIT_KEYS)



def _limits_score(case: dict, answer: dict, expected: dict) -> list[Part]:
    return [Part(close(answer.get(k), expected[k], rel=REL_TOL), msg("m02.limit_wrong", fmt=case["format"]["name"], field=k,
                                                          expected=f"{expected[k]:.10g}", found=answer.get(k)))
            for k in LIMIT_KEYS]


# ---------------------------------------------------------------- 4. round
ROUND_VISIBLE = [0.0, -0.0, 1.0, 1.0625, 1.1875, -2.75, 0.3, 1e-3, 500.0, -70000.0, "inf", "-inf", "nan"]


def f32(value: float) -> float:
    import struct
    return struct.unpack("f", struct.pack("f", value))[0] if math.isfinite(value) and abs(value) < 3.4e38 else value


def _round_visible() -> list:
    f = formats()
    return [{"format": f[name], "values": ROUND_VISIBLE} for name in ("bf16", "fp16", "e4m3", "e2m1")]




def _round_answer(fn, case):
    import torch
    x = torch.tensor([dec(v) for v in case["values"]], dtype=torch.float32)
    out = torch.as_tensor(fn(x.clone(), _fmt(case)))
    if out.shape != x.shape:
        raise ValueError(msg("m02.wrong_shape", expected=tuple(x.shape), found=tuple(out.shape)).text())
    return [enc(v) for v in out.to(torch.float64).flatten().tolist()]



def _round_score(case: dict, answer: list, expected: list) -> Part:
    expected = [dec(e) for e in expected]
    if not isinstance(answer, list) or len(answer) != len(expected):
        return Part(False, msg("m02.wrong_length", expected=len(expected), found=_len(answer)))
    answer = [dec(a) for a in answer]
    wrong = [f"{x!r} → {e!r} ({a!r})" for x, e, a in zip(case["values"], expected, answer) if not _same(a, e)]
    return Part(not wrong, msg("m02.round_wrong", fmt=case["format"]["name"], n=len(wrong), total=len(expected),
                               examples=_show(wrong)))


# ---------------------------------------------------------------- 5. matmul error
def _error_visible() -> list:
    return [{"n": 64, "seed": 0, "scale": 1.0, "formats": {k: formats()[k] for k in ERROR_FORMATS}}]



def _error_answer(fn, case):
    formats = {k: dict(v) for k, v in case["formats"].items()}
    return _dict_answer(fn(case["n"], case["seed"], case["scale"], formats), list(case["formats"]))


def _error_score(case: dict, answer: dict, expected: dict) -> list[Part]:
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
    from ...hardware import best_device
    return [{"dtype": "float32", "device": device_string(best_device())}]



def device_string(kind: str) -> str:
    return f"{kind}:0" if kind in ("cuda", "xpu") else kind


def _measure_answer(fn, case):
    result = _dict_answer(fn(case["dtype"], case["device"]), ("n", "seconds", "tflops"))
    return {**result, "device": case["device"], "dtype": case["dtype"]}


MEASURE_SIZES = (16, 16384)  # the reference times the learner's n, kept within these bounds


def _measure_reference(case: dict, answer: dict) -> dict:
    """The course's matmul at the learner's size, in the case's dtype, on the case's device."""
    from ...reference import matmul_tflops
    n = answer.get("n") if isinstance(answer, dict) else None
    n = int(min(max(n, MEASURE_SIZES[0]), MEASURE_SIZES[1])) if isinstance(n, (int, float)) and math.isfinite(n) else 1024
    return {"tflops": matmul_tflops(case["dtype"], case["device"], budget_s=1.0, sizes=[n])["tflops"], "n": n}


def _measure_score(case: dict, answer: dict, want) -> list[Part]:
    from ...expectations import side_by_side
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
    from ...reference import canonical_dtype, spec_profile
    profile = spec_profile(case["device"])
    return profile.peak(canonical_dtype(case["dtype"])) if profile is not None else None


# ---------------------------------------------------------------- 7. 2:4 mask
def _mask_visible() -> list:
    return [{"w": [[0.1, -0.9, 0.5, 0.2, 3.0, 1.0, -2.0, 0.0]]},
            {"w": [[1.0, 1.0, 1.0, 1.0], [0.0, -2.0, 2.0, 1.0]]},
            {"w": [[1.0, 2.0, 3.0]], "error": True}]



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


def _mask_score(case: dict, answer, expected) -> Part:
    if case.get("error"):
        return Part(answer == "ValueError", msg("m02.mask_error", found=answer))
    if answer == expected:
        return Part(True, msg("m02.mask_ok"))
    if not isinstance(answer, list) or len(answer) != len(expected):
        return Part(False, msg("m02.wrong_length", expected=len(expected), found=_len(answer)))
    row = next(i for i, (a, e) in enumerate(zip(answer, expected)) if a != e)
    return Part(False, msg("m02.mask_wrong", row=row, w=case["w"][row], expected=expected[row], found=answer[row]))


TASKS = {
    "gpu_numbers": Task(title=msg("m02.title_spec"), answer=lambda fn, case: _dict_answer(fn(dict(case)), SPEC_KEYS),
                        score=_spec_score, visible=_spec_visible),
    "decode": Task(title=msg("m02.title_decode"), answer=_decode_answer, score=_decode_score,
                   visible=_decode_visible),
    "limits": Task(title=msg("m02.title_limits"), answer=_limits_answer, score=_limits_score,
                   visible=_limits_visible),
    "round": Task(title=msg("m02.title_round"), answer=_round_answer, score=_round_score,
                  visible=_round_visible),
    "matmul_error": Task(title=msg("m02.title_error"), answer=_error_answer, score=_error_score,
                         visible=_error_visible),
    "measure": Task(title=msg("m02.title_measure"), answer=_measure_answer, score=_measure_score,
                    visible=_measure_visible, measurement=True,
                    reference=_measure_reference, rounds=3),
    "mask_2_4": Task(title=msg("m02.title_mask"), answer=_mask_answer, score=_mask_score,
                     visible=_mask_visible),
}
