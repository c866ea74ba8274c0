"""Graded tasks of exercise 02: peaks from parts and from spec sheets, number formats bit by bit, the narrowest
format for a set of values, measured matmul throughput, N:M sparsity masks.

Where torch has a format's dtype, the references (``course_answers.m02_gpu_architecture``) take torch's own reading
as the expected answer; otherwise the course's reference implementation. Visible cases that test one rule carry
its name (``rule``/``group``/``kind``), so a failing part can name the mistake that breaks it. An answer of the
wrong shape is recorded as data (``{"not_a_dict": ...}``) and the score says so in both languages.
"""
from __future__ import annotations

import math
import sys
import threading
from contextlib import contextmanager
from dataclasses import replace

from ...checks import referee
from ...checks.core import Part, Task, close
from ...datafile import read_yaml
from ...i18n import Message, msg

REL_TOL = 1e-6
NAMED = ("fp32", "tf32", "bf16", "fp16", "e4m3", "e5m2", "e3m2", "e2m3", "e2m1")


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
    """Undo :func:`enc` (anything else is returned as it is)."""
    return float(value) if isinstance(value, str) and value in ("nan", "inf", "-inf") else value


def _same(a, b) -> bool:
    """Equal floats, NaN equal to NaN, zeros compared with their sign."""
    if not isinstance(a, (int, float)) or isinstance(a, bool):
        return False
    if math.isnan(b):
        return math.isnan(a)
    return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)


def _examples(rows: list, limit: int = 4) -> Message:
    """``(input, expected, found)`` rows as the message shows them, saying which value is which."""
    more = " …" if len(rows) > limit else ""
    return Message("; ".join(f"{x} → 기댓값 {e!r}, 실제값 {a!r}" for x, e, a in rows[:limit]) + more,
                   "; ".join(f"{x} → expected {e!r}, found {a!r}" for x, e, a in rows[:limit]) + more)


def _len(value) -> str:
    return str(len(value)) if isinstance(value, list) else type(value).__name__


def _label(text: str) -> Message:
    return Message(text, text)


def _ratio(found, want) -> float | None:
    """found / want for two non-zero real numbers, else None."""
    if not (isinstance(found, (int, float)) and isinstance(want, (int, float))) or isinstance(found, bool):
        return None
    return found / want if want and math.isfinite(found) else None


def _near(ratio: float | None, *factors: float, rel: float = 1e-3) -> bool:
    return ratio is not None and any(math.isclose(ratio, f, rel_tol=rel) for f in factors)


def _number(value):
    """A real number as JSON data (NaN/inf as strings); anything else as its repr, for the message to show."""
    if isinstance(value, bool) or value is None:
        return value
    try:
        return enc(float(value))
    except (TypeError, ValueError):
        return repr(value)


def _dict_answer(result, keys) -> dict:
    """The learner's dict as plain data; anything else as ``{"not_a_dict": type name}`` (the score says so)."""
    if not isinstance(result, dict):
        return {"not_a_dict": type(result).__name__}
    return {k: _number(result.get(k)) for k in keys}


def _not_a_dict(answer, keys, label: Message | None = None) -> Part | None:
    """A failing part for an answer that was not a dict, else None."""
    if isinstance(answer, dict) and "not_a_dict" in answer:
        return Part(False, msg("m02.need_dict", keys=", ".join(f"`{k}`" for k in keys), found=answer["not_a_dict"]),
                    label=label)
    return None


def _g(value) -> str:
    """A number as a message shows it: 6 significant figures (anything else as it came)."""
    return f"{value:.6g}" if isinstance(value, (int, float)) and not isinstance(value, bool) else str(value)


def width(fmt: dict) -> int:
    return 1 + fmt["exp_bits"] + fmt["man_bits"]


def torch_dtype(fmt: dict):
    """The torch dtype holding exactly this format (all fields equal to a known format), else None."""
    import torch
    from .lesson import FORMATS
    known = FORMATS.get(fmt["name"])
    same = known and all(known[k] == fmt[k] for k in ("exp_bits", "man_bits", "bias", "special"))
    return getattr(torch, known["torch"]) if same and known["torch"] else None


# ---------------------------------------------------------------- 1. peak from parts
SPEC_KEYS = ("cuda_cores", "vector_fp32_tflops", "flops_per_tc_per_cycle", "tensor_clock_mhz", "tensor_tflops_at_clock")
SPEC_TOL = dict.fromkeys(("flops_per_tc_per_cycle", "tensor_clock_mhz", "tensor_tflops_at_clock"), 1e-3)  # a sheet
# rounds its peak (A100: 312 gives 512.2 FLOPs at 1,410 MHz): within 0.1% is the same answer
VISIBLE_GPUS = ("h100_pcie", "a100_sxm_80gb")
UNIT_SLIPS = (1e3, 1e-3, 1e6, 1e-6, 1e9, 1e-9, 1e12, 1e-12)


def spec_of(profile_id: str, clock_share: float) -> dict:
    from ... import profiles
    p = profiles.get(profile_id)
    tensor = p.peak("bf16") or p.peak("fp16")
    return {"name": p.label, "sms": p.get("sms"), "tensor_cores_per_sm": p.get("tensor_cores_per_sm"),
            "fp32_lanes_per_sm": p.get("fp32_lanes_per_sm"), "boost_clock_mhz": p.get("boost_clock_mhz"),
            "dense_tensor_tflops": tensor, "clock_mhz": round(p.get("boost_clock_mhz") * clock_share)}


def spec_profiles() -> list[str]:
    """Profiles with every figure task 1 needs."""
    from ... import profiles
    need = ("sms", "tensor_cores_per_sm", "fp32_lanes_per_sm", "boost_clock_mhz")
    return [p.id for p in profiles.all_of("gpu")
            if all(p.get(k) for k in need) and (p.peak("bf16") or p.peak("fp16"))]


def hidden_gpus() -> list[str]:
    """The profiles hidden cases draw from: neither a visible case nor a GPU the lesson works through."""
    from .lesson import PEAK_GPUS
    return [pid for pid in spec_profiles() if pid not in VISIBLE_GPUS and pid not in PEAK_GPUS]


def _spec_visible() -> list:
    return [spec_of("h100_pcie", 0.8), spec_of("a100_sxm_80gb", 0.9)]


def _at_boost(case: dict) -> dict:
    """Task 1's figures worked out with the boost clock where the sheet's Tensor Core peak assumed another one."""
    tensor_cores = case["sms"] * case["tensor_cores_per_sm"]
    return {"flops_per_tc_per_cycle": case["dense_tensor_tflops"] * 1e12 / (tensor_cores * case["boost_clock_mhz"] * 1e6),
            "tensor_clock_mhz": case["boost_clock_mhz"],
            "tensor_tflops_at_clock": case["dense_tensor_tflops"] * case["clock_mhz"] / case["boost_clock_mhz"]}


def _off_by(ratio: float | None, *factors: float, within: float = 1.5) -> bool:
    """``ratio`` within a factor ``within`` of one of ``factors`` (a power of two rounded on the way)."""
    return ratio is not None and ratio > 0 and any(abs(math.log(ratio / f)) < math.log(within) for f in factors)


def _spec_mistake(case: dict, key: str, found, want) -> str | None:
    ratio = _ratio(found, want)
    if ratio is None:
        return None
    if key == "vector_fp32_tflops" and _near(ratio, 0.5):
        return "no_fma"
    if key == "tensor_tflops_at_clock" and close(found, case["dense_tensor_tflops"], rel=1e-3):
        return "printed_peak"
    at_boost = _at_boost(case).get(key)
    if at_boost is not None and close(found, at_boost, rel=1e-3):
        return "tensor_clock"
    if key in ("flops_per_tc_per_cycle", "tensor_tflops_at_clock") and _off_by(ratio, case["sms"], 1 / case["sms"]):
        return "tensor_core_count"
    if _near(ratio, *UNIT_SLIPS):
        return "units"
    return None


def _spec_score(case: dict, answer: dict, expected: dict) -> list[Part]:
    wrong_type = _not_a_dict(answer, SPEC_KEYS, _label(case["name"]))
    if wrong_type:
        return [wrong_type]
    parts, explained = [], set()
    for key in SPEC_KEYS:
        found, want = answer.get(key), expected[key]
        ok = close(found, want, rel=SPEC_TOL.get(key, REL_TOL))
        mistake = None if ok else _spec_mistake(case, key, found, want)
        values = dict(gpu=case["name"], field=key, expected=_g(want), found=_g(found), sms=case["sms"],
                      boost=case["boost_clock_mhz"], clock=case["clock_mhz"],
                      tensor_clock=_g(expected["tensor_clock_mhz"]), per_tc=_g(expected["flops_per_tc_per_cycle"]),
                      at_boost=_g(_at_boost(case)["flops_per_tc_per_cycle"]))
        if mistake in explained:     # the same mistake again in this GPU: said once, above
            text, mistake = msg("m02.spec_same_mistake", **values), None
        else:
            text = msg(f"m02.mistake.{mistake}", **values) if mistake else msg("m02.spec_wrong", **values)
            explained.add(mistake)
        parts.append(Part(ok, text, weight=2.0 if key == "tensor_tflops_at_clock" else 1.0, mistake=mistake,
                          label=_label(f"{case['name']} → {key}")))
    return parts


# ---------------------------------------------------------------- 2. a spec sheet with traps
TRAPS = ("clock", "fp16_accumulate", "per_system", "sparse")
_MISSED = {"sparse": "sparse_as_dense", "fp16_accumulate": "fp16_accumulate", "per_system": "per_system",
           "clock": "clock"}
SHEET_KEYS = ("dense_tflops", "traps")


def spec_sheets() -> dict:
    """``data/spec_sheets.yaml``: figures as vendors print them, with their sources."""
    from pathlib import Path
    return read_yaml(Path(__file__).parent / "data" / "spec_sheets.yaml")


def _sheet_visible() -> list:
    return [{k: v for k, v in q.items() if k != "source"} for q in spec_sheets()["quotes"]]


def _sheet_answer(fn, case):
    result = fn(dict(case))
    if not isinstance(result, dict):
        return {"not_a_dict": type(result).__name__}
    traps = result.get("traps")
    traps = sorted(str(t) for t in traps) if isinstance(traps, (list, tuple, set, frozenset)) else repr(traps)
    return {"dense_tflops": _number(result.get("dense_tflops")), "traps": traps}


def _sheet_value_mistake(case: dict, ratio: float | None, traps) -> str | None:
    """The trap a wrong ``dense_tflops`` fell into (the trap list only breaks a tie of two 2x traps)."""
    said = set(traps) if isinstance(traps, list) else set()
    clocks = (case["quoted_clock_mhz"], case["clock_mhz"])
    consumer, fp16_acc = case["segment"] == "consumer", case["accumulate"] == "fp16"
    if _near(ratio, 1e3, 1e-3):
        return "pflops"
    if case["gpus"] > 1 and _near(ratio, case["gpus"]):
        return "per_system"
    if None not in clocks and clocks[0] != clocks[1] and _near(ratio, clocks[0] / clocks[1], clocks[1] / clocks[0]):
        return "clock"
    if _near(ratio, 0.5):
        if not consumer and case["accumulate"] != "fp32":
            return "halved_datacenter"
        if consumer and not fp16_acc:
            return "none_as_fp16"
    if _near(ratio, 2, 4):
        sparse, geforce = case["sparsity_footnote"], consumer and fp16_acc
        if sparse and geforce and "sparse" in said and "fp16_accumulate" not in said:
            return "fp16_accumulate"
        return "sparse_as_dense" if sparse else "fp16_accumulate" if geforce else None
    return None


def _trap_mistake(case: dict, missed: list, extra: list) -> tuple[str | None, Message | None]:
    """The mistake behind a wrong trap list and the detail that says where, or (None, None)."""
    if missed:
        return _MISSED[missed[0]], msg("m02.sheet_trap_missing", trap=missed[0])
    if "fp16_accumulate" in extra:
        if case["segment"] == "datacenter":
            return "halved_datacenter", msg("m02.sheet_trap_extra", trap="fp16_accumulate")
        if case["accumulate"] != "fp16":
            return "none_as_fp16", msg("m02.sheet_trap_extra", trap="fp16_accumulate")
    return None, None


def _sheet_score(case: dict, answer: dict, expected: dict) -> list[Part]:
    product = case["product"]
    value_label = _label(f"{product} → dense_tflops")
    trap_label = Message(f"{product} → 함정(traps)", f"{product} → traps")
    wrong_type = _not_a_dict(answer, SHEET_KEYS, value_label)
    if wrong_type:
        return [wrong_type]
    found, traps = answer.get("dense_tflops"), answer.get("traps")
    want, want_traps = expected["dense_tflops"], expected["traps"]
    facts = dict(product=product, gpus=case["gpus"], quoted=case["quoted_clock_mhz"], clock=case["clock_mhz"],
                 accumulate="None" if case["accumulate"] is None else f'"{case["accumulate"]}"')
    ok = close(found, want, rel=1e-4)
    mistake = None if ok else _sheet_value_mistake(case, _ratio(found, want), traps)
    value = msg("m02.sheet_value", expected=_g(want), found=_g(found))
    text = msg(f"m02.mistake.{mistake}", **facts, detail=value) if mistake else \
        msg("m02.sheet_wrong", product=product, detail=value)
    parts = [Part(ok, text, 2.0, mistake=mistake, label=value_label)]

    traps_ok = traps == want_traps
    shown = ", ".join(f'"{t}"' for t in traps) if isinstance(traps, list) else traps
    trap_mistake, detail = None, None
    if not traps_ok and isinstance(traps, list):
        trap_mistake, detail = _trap_mistake(case, [t for t in want_traps if t not in traps],
                                             [t for t in traps if t not in want_traps])
    if trap_mistake:
        text = msg(f"m02.mistake.{trap_mistake}", **facts, detail=detail + msg("m02.sheet_traps_found", found=shown))
        trap_mistake = None if ok else trap_mistake  # a trap left off a list whose value is right: not its mistake
    else:
        text = msg("m02.traps_wrong", product=product, expected=", ".join(f'"{t}"' for t in want_traps),
                   found=shown)
    parts.append(Part(traps_ok, text, 1.0, mistake=trap_mistake, label=trap_label))
    return parts


# ---------------------------------------------------------------- 3. decode
DECODE_MISTAKES = {"normal": "fields", "subnormal": "subnormals", "zero": "negative_zero"}


def _decode_visible() -> list:
    f = formats()
    groups = [("fp16", "normal", [0x3C00, 0xC000, 0x7BFF, 0x3555]), ("fp16", "subnormal", [0x0001, 0x03FF, 0x8200]),
              ("fp16", "zero", [0x0000, 0x8000]), ("fp16", "special", [0x7C00, 0xFC00, 0x7E00]),
              ("bf16", "normal", [0x3F80, 0x4049, 0xC2F7]), ("bf16", "subnormal", [0x0001, 0x807F]),
              ("bf16", "special", [0xFF80, 0x7FC0]),
              ("e4m3", "normal", [0x38, 0x01 | 0x08, 0xB8]), ("e4m3", "subnormal", [0x01, 0x07, 0x85]),
              ("e4m3", "special", [0x78, 0x7E, 0x7F, 0xFF]),
              ("e5m2", "normal", [0x3C, 0x7B]), ("e5m2", "subnormal", [0x01, 0x03]),
              ("e5m2", "special", [0x7C, 0x7D, 0xFE]),
              ("e2m1", "subnormal", [0x1, 0x9]), ("e2m1", "special", [0x6, 0x7, 0xF])]
    return [{"format": f[name], "rule": rule, "bits": bits} for name, rule, bits in groups]


def _decode_answer(fn, case):
    return [_number(fn(bits, _fmt(case))) for bits in case["bits"]]


def _decode_score(case: dict, answer: list, expected: list) -> Part:
    expected = [dec(e) for e in expected]
    fmt, rule = case["format"], case.get("rule")
    label = _label(f"{fmt['name']} · {rule}") if rule else None
    if not isinstance(answer, list) or len(answer) != len(expected):
        return Part(False, msg("m02.wrong_length", expected=len(expected), found=_len(answer)), label=label)
    answer = [dec(a) for a in answer]
    wrong = [(f"{b:#0{2 + (width(fmt) + 3) // 4}x}", e, a)
             for b, e, a in zip(case["bits"], expected, answer) if not _same(a, e)]
    mistake = None
    if wrong and rule:
        mistake = DECODE_MISTAKES.get(rule) or ("ieee_specials" if fmt["special"] == "ieee" else "special_rule")
    values = dict(fmt=fmt["name"], n=len(wrong), total=len(expected), examples=_examples(wrong))
    text = msg(f"m02.mistake.{mistake}", **values) if mistake else msg("m02.decode_wrong", **values)
    return Part(not wrong, text, mistake=mistake, label=label)


# ---------------------------------------------------------------- 4. limits
LIMIT_KEYS = ("max", "smallest_normal", "smallest_subnormal", "eps")
LIMIT_MISTAKES = {"max": "max_pattern", "smallest_normal": "min_exponent", "smallest_subnormal": "subnormal_min"}


def _limits_visible() -> list:
    f = formats()
    return [{"format": f[name]} for name in ("fp16", "bf16", "e4m3", "e5m2", "e2m1")]


def _limits_answer(fn, case):
    return _dict_answer(fn(_fmt(case)), LIMIT_KEYS)


def _limits_score(case: dict, answer: dict, expected: dict) -> list[Part]:
    name, parts = case["format"]["name"], []
    wrong_type = _not_a_dict(answer, LIMIT_KEYS, _label(name))
    if wrong_type:
        return [wrong_type]
    for key in LIMIT_KEYS:
        found, want = answer.get(key), expected[key]
        ok = close(found, want, rel=REL_TOL)
        mistake = None
        if not ok:
            mistake = "eps_vs_roundoff" if key == "eps" and _near(_ratio(found, want), 0.5) else LIMIT_MISTAKES.get(key)
        values = dict(fmt=name, field=key, expected=f"{want:.10g}", found=found)
        text = msg(f"m02.mistake.{mistake}", **values) if mistake else msg("m02.limit_wrong", **values)
        parts.append(Part(ok, text, mistake=mistake, label=_label(f"{name} → {key}")))
    return parts


# ---------------------------------------------------------------- 5. round
ROUND_GROUPS = {   # format -> group -> float32 inputs (exact halfway points in "ties")
    "bf16": {"ordinary": [1.0, 0.3, -2.75, 3.14159265, 1e-3, 500.0, 1e30],
             "ties": [1.00390625, 1.01171875, -3.0078125],
             "saturation": [3.4e38, -3.4e38, "inf", "-inf"],
             "subnormal": [1e-39, -5e-40, 2e-41],
             "signs": [0.0, -0.0, "nan", -1e-45]},
    "fp16": {"ordinary": [1.0, 0.1, -2.75, 1000.3, 0.007],
             "ties": [1.00048828125, 2049.0, -2051.0],
             "saturation": [65520.0, 70000.0, -1e6, "inf"],
             "subnormal": [1e-7, 3e-8, -8.940696716308594e-08],
             "signs": [-0.0, 0.0, "nan", -1e-9]},
    "e4m3": {"ordinary": [1.0, 0.3, -2.75, 90.0],
             "ties": [1.0625, 1.1875, -1.3125, 17.0],
             "saturation": [449.0, 500.0, -1e4, "inf"],
             "subnormal": [1e-3, 0.005, -0.0029296875],
             "signs": [-0.0, "nan", -1e-4]},
    "e2m1": {"ordinary": [1.0, 2.9, -3.3, 0.9],
             "ties": [0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0, -5.0],
             "saturation": [7.0, 100.0, "-inf"],
             "subnormal": [0.3, 0.6, -0.7],
             "signs": [-0.0, "nan", 0.0, -0.2]},
}


def f32(value: float) -> float:
    import struct
    return struct.unpack("f", struct.pack("f", value))[0] if math.isfinite(value) and abs(value) < 3.4e38 else value


def _round_visible() -> list:
    f = formats()
    return [{"format": f[name], "group": group, "values": values}
            for name, groups in ROUND_GROUPS.items() for group, values in groups.items()]


def _round_answer(fn, case):
    import torch
    x = torch.tensor([dec(v) for v in case["values"]], dtype=torch.float32)
    out = torch.as_tensor(fn(x.clone(), _fmt(case)))
    values = [enc(v) for v in out.to(torch.float64).flatten()[:4096].tolist()]
    return {"shape": list(out.shape), "values": values} if out.shape != x.shape else values


def _round_score(case: dict, answer: list, expected: list) -> Part:
    expected = [dec(e) for e in expected]
    name, group = case["format"]["name"], case.get("group")
    label = _label(f"{name} · {group}") if group else None
    if isinstance(answer, dict) and "shape" in answer:
        return Part(False, msg("m02.wrong_shape", expected=(len(expected),), found=tuple(answer["shape"])), label=label)
    if not isinstance(answer, list) or len(answer) != len(expected):
        return Part(False, msg("m02.wrong_length", expected=len(expected), found=_len(answer)), label=label)
    answer = [dec(a) for a in answer]
    wrong = [(repr(dec(x)), e, a) for x, e, a in zip(case["values"], expected, answer) if not _same(a, e)]
    values = dict(fmt=name, n=len(wrong), total=len(expected), examples=_examples(wrong))
    text = msg("m02.round_wrong", **values)
    shown = {}  # mistake -> the inputs that show it
    for x, e, a in zip(case["values"], expected, answer):
        mistake = None if _same(a, e) else _round_mistake(case["format"], f32(dec(x)), e, a)
        if mistake:
            shown.setdefault(mistake, []).append(repr(dec(x)))
    mistake = next(iter(shown), None)
    if mistake:
        step = math.ldexp(1.0, 1 - case["format"]["bias"] - case["format"]["man_bits"])
        text = text + msg(f"m02.mistake.{mistake}", fmt=name, shown=", ".join(shown[mistake][:4]), step=_g(step),
                          normal=_g(math.ldexp(1.0, 1 - case["format"]["bias"])))
    return Part(not wrong, text, mistake=mistake, label=label)


def _round_mistake(fmt: dict, x: float, want: float, found) -> str | None:
    """The rounding rule that ``found`` (not ``want``) for the input ``x`` shows broken, from the three numbers alone:

    - ``no_saturation``: a finite answer expected, an infinite one given;
    - ``signed_zero``: the right magnitude with the wrong sign;
    - ``subnormal_spacing``: ``x`` below the smallest normal, and the answer flushed to zero where the nearest
      subnormal is not (``|x|`` at least one subnormal step) or off the subnormal grid (0.25 in e2m1, spaced 0.5);
    - ``ties_away``: ``x`` halfway between the answer and the expected value, the answer farther from zero;
    - ``not_nearest``: the answer and the expected value on either side of ``x``, the answer farther from it and not
      zero (a zero below one subnormal step is what flushing gives too).
    """
    if not isinstance(found, (int, float)) or isinstance(found, bool) or math.isnan(x) or math.isnan(want):
        return None
    if math.isinf(found):
        return "no_saturation" if math.isfinite(want) else None
    if math.isinf(x):
        return None
    if abs(found) == abs(want):
        return "signed_zero" if math.copysign(1.0, found) != math.copysign(1.0, want) else None
    normal, step = math.ldexp(1.0, 1 - fmt["bias"]), math.ldexp(1.0, 1 - fmt["bias"] - fmt["man_bits"])
    if abs(x) < normal and abs(found) < normal:
        flushed = found == 0 and abs(x) >= step
        if flushed or (found / step) != round(found / step):
            return "subnormal_spacing"
    if abs(found - x) == abs(want - x):
        return "ties_away" if abs(found) > abs(want) else None
    if (found - x) * (want - x) < 0 and abs(found - x) > abs(want - x) and found != 0:
        return "not_nearest"
    return None


# ---------------------------------------------------------------- 6. measured throughput
MEASURE_KEYS = ("n", "seconds", "tflops")
BUDGET_S, FIRST_N, LAST_N = 0.05, 256, 8192    # the task's rule: the first n = 256, 512, ... taking >= 0.05 s
PAST_FIRST = 32   # n/2 takes about seconds/8 (n³): 32x the budget means n/2 had reached it 4 times over


def device_string(kind: str) -> str:
    return f"{kind}:0" if kind in ("cuda", "xpu") else kind


def _measure_visible() -> list:
    from ...hardware import best_device
    return [{"dtype": "float32", "device": device_string(best_device())}]


def _course_measurements() -> dict:
    """The code objects of the course's own measurements a learner could call instead of measuring -> their names;
    also :data:`TIMER`, the harness the task asks the learner to time with."""
    from ... import harness, reference, results
    from . import lesson
    found = {}
    for module, names in ((harness, ("time_fn",)),
                          (reference, ("matmul_tflops", "bandwidth_gbs", "measured_profile")),
                          (results, ("load",)),
                          (lesson, ("measured_matmuls", "odd_size_matmuls", "tf32_speeds", "sparse_24_speedup"))):
        for name in names:
            found[getattr(module, name).__code__] = f"{module.__name__}.{name}"
    return found


@contextmanager
def _watching_course_measurements():
    """Record every call into the course's measurements (however the learner's code reached them) while it runs."""
    watched, called = _course_measurements(), set()
    before, before_threads = sys.getprofile(), threading.getprofile()

    def profile(frame, event, arg):
        if event == "call" and frame.f_code in watched:
            called.add(watched[frame.f_code])
        if before is not None:
            before(frame, event, arg)
    sys.setprofile(profile)
    threading.setprofile(profile)     # threads the learner's code starts
    try:
        yield called
    finally:
        sys.setprofile(before)
        threading.setprofile(before_threads)


TIMER = "autograder.harness.time_fn"  # the task says to time with it: it warms up, synchronizes and repeats


def _measure_answer(fn, case):
    """The learner's measurement, on one torch thread on a CPU (as the reference: :func:`harness.one_cpu_thread`)."""
    from ...harness import one_cpu_thread
    with one_cpu_thread(case["device"]), _watching_course_measurements() as called:
        result = fn(case["dtype"], case["device"])
    return {**_dict_answer(result, MEASURE_KEYS), "device": case["device"], "dtype": case["dtype"],
            "reference_called": sorted(called - {TIMER}), "time_fn": TIMER in called}


MEASURE_SIZES = (16, 16384)  # the reference times the learner's n, kept within these bounds


def _measure_reference(case: dict, answer: dict) -> dict:
    """The course's matmul at the learner's size, in the case's dtype, on the case's device; taken again where it
    slowed (``referee.retaken``), keeping the faster; on a CPU on one torch thread, as the learner's rounds run."""
    from ...harness import one_cpu_thread
    from ...reference import matmul_tflops
    n = answer.get("n") if isinstance(answer, dict) else None
    n = int(min(max(n, MEASURE_SIZES[0]), MEASURE_SIZES[1])) if isinstance(n, (int, float)) and math.isfinite(n) else 1024

    def take() -> dict:
        with one_cpu_thread(case["device"]):
            return {"tflops": matmul_tflops(case["dtype"], case["device"], budget_s=1.0, sizes=[n])["tflops"], "n": n}
    return referee.retaken(["m02.measure", case, n], take, lambda r: [r["tflops"]],
                           lambda a, b: max(a, b, key=lambda r: r["tflops"]))


def _claimed_seconds(r) -> float:
    return r["seconds"]


def _clock_claims(r) -> list:
    """The round's time per multiplication came from ``time_fn`` (``referee.off_clock``)."""
    return [(r["seconds"], "time_fn")]


def _implied(r: dict) -> float:
    return 2 * r["n"]**3 / r["seconds"] / 1e12


def _consistency(rounds: list) -> Part:
    """tflops = 2·n³/seconds in every round."""
    label = msg("m02.label_consistent")
    for r in rounds:
        implied = _implied(r)
        if not math.isclose(r["tflops"], implied, rel_tol=0.02):
            mistake = "flops_n3" if _near(r["tflops"] / implied, 0.5, rel=0.02) else None
            values = dict(n=int(r["n"]), seconds=_g(r["seconds"]), implied=_g(implied), found=_g(r["tflops"]))
            return Part(False, msg(f"m02.mistake.{mistake}" if mistake else "m02.measure_inconsistent", **values),
                        mistake=mistake, label=label)
    return Part(True, msg("m02.measure_consistent"), label=label)


def _first_size(rounds: list, timed: bool = True) -> Part:
    """n is the first of 256, 512, ..., 8192 whose multiplication takes at least 0.05 s. Where the times are not
    the work's (``timed`` False: faster than the reference allows), which size came first cannot be told: the part
    fails, naming no mistake."""
    label = msg("m02.label_first_size")
    sizes = [FIRST_N * 2**k for k in range(int(math.log2(LAST_N // FIRST_N)) + 1)]
    if not timed:
        return Part(False, msg("m02.measure_first_size_untimed", budget=BUDGET_S), label=label)
    for r in rounds:
        values = dict(n=int(r["n"]), seconds=_g(r["seconds"]), half=_g(r["seconds"] / 8), budget=BUDGET_S)
        if r["n"] not in sizes or (r["seconds"] < BUDGET_S and r["n"] < LAST_N):
            return Part(False, msg("m02.mistake.not_first_size", **values), mistake="not_first_size", label=label)
        if r["n"] > FIRST_N and r["seconds"] >= PAST_FIRST * BUDGET_S:
            return Part(False, msg("m02.mistake.past_first_size", **values), mistake="past_first_size", label=label)
    return Part(True, msg("m02.measure_first_size"), label=label)


def _timed_with_time_fn(rounds: list) -> Part:
    """Every round called ``time_fn``, as the task says (one ``perf_counter`` reading is one noisy sample)."""
    label = msg("m02.label_time_fn")
    if all(r.get("time_fn") for r in rounds):
        return Part(True, msg("m02.measure_time_fn"), label=label)
    return Part(False, msg("m02.mistake.no_time_fn"), mistake="no_time_fn", label=label)


def _unmeasured(answer: dict) -> Part:
    """The one failing part of rounds that claim more time than they took: milliseconds, or no measurement."""
    rounds = referee.rounds(answer)
    worst = max(zip(rounds, referee.observed(answer).get("walls") or []),
                key=lambda pair: pair[0]["seconds"] / max(float(pair[1]), 1e-9))
    ms = any(_near(r["tflops"] / _implied(r), 1e3, rel=0.02) for r in rounds)  # tflops from seconds, seconds in ms
    mistake = "ms_not_s" if ms else "not_measured"
    return Part(False, msg(f"m02.mistake.{mistake}", claimed=_g(worst[0]["seconds"]), spent=_g(float(worst[1]))),
                mistake=mistake)


def _measure_score(case: dict, answer: dict, want) -> list[Part]:
    from ...expectations import load_explains, rules, side_by_side
    rounds = referee.rounds(answer)
    for r in rounds or [{}]:
        n, seconds, tflops = r.get("n"), r.get("seconds"), r.get("tflops")
        if not all(isinstance(v, float) and math.isfinite(v) and v > 0 for v in (n, seconds, tflops)):
            wrong_type = _not_a_dict(r, MEASURE_KEYS)
            return [wrong_type or Part(False, msg("m02.measure_invalid", found=f"n={n}, seconds={seconds}, tflops={tflops}"))]
    called = sorted({name for r in rounds for name in r.get("reference_called") or []})
    if called:
        return [Part(False, msg("m02.mistake.reference_called", names=", ".join(f"`{c}`" for c in called)),
                     mistake="reference_called")]
    consistent = _consistency(rounds)
    what = Message(f"{case['dtype']} 행렬 곱 ({case['device']})", f"{case['dtype']} matmul ({case['device']})")
    found = referee.median_ratio(answer, lambda r: r["tflops"], lambda ref: ref["tflops"])
    mine, theirs = (lambda r: r["tflops"]), (lambda ref: ref["tflops"])
    too_fast = bool(found) and found[0] > rules()["side_by_side"]["matmul"]["hi"] \
        and load_explains("matmul", answer, mine, theirs) is None  # the reference slowed: said so, no mistake named
    measured, compared = side_by_side("matmul", answer, what, mine, theirs, _claimed_seconds, "TFLOP/s",
                                      too_fast=_too_fast(case), clock_claims=_clock_claims)
    if not measured:
        why = referee.unmeasured(answer, _claimed_seconds)
        if why in ("no rounds", "not observed"):
            return compared
        if not why and not all(r.get("time_fn") for r in rounds):  # timed by hand: no time the course's clock saw
            hand = _timed_with_time_fn(rounds)
            return [replace(hand, message=hand.message + compared[0].message)]
        return compared if not why else [_unmeasured(answer)]
    if too_fast:
        compared = [replace(p, mistake="too_fast") if not p.ok else p for p in compared]
    parts = [consistent, _first_size(rounds, timed=not too_fast), _timed_with_time_fn(rounds)]
    peak = _spec_peak(case)
    if peak:
        top = max(r["tflops"] for r in rounds)
        above = top > 1.05 * peak
        parts.append(Part(not above, msg("m02.measure_above_peak", found=_g(top), peak=_g(peak)),
                          mistake="too_fast" if above else None, label=msg("m02.label_below_peak")))
    return parts + compared


def _too_fast(case: dict) -> Message:
    """The causes of a throughput above the band: on a CPU, where nothing runs asynchronously, not a synchronize."""
    return msg("m02.mistake.too_fast_cpu" if case["device"].split(":")[0] == "cpu" else "m02.mistake.too_fast")


def _spec_peak(case: dict) -> float | None:
    """The dense spec peak of the device's dtype, if the device has a spec profile."""
    from ...reference import canonical_dtype, spec_profile
    profile = spec_profile(case["device"])
    return profile.peak(canonical_dtype(case["dtype"])) if profile is not None else None


# ---------------------------------------------------------------- 7. N:M mask
def _mask_visible() -> list:
    return [{"kind": "magnitude", "n": 2, "m": 4, "w": [[0.1, -0.9, 0.5, 0.2, 3.0, 1.0, -2.0, 0.0]]},
            {"kind": "ties", "n": 2, "m": 4, "w": [[1.0, 1.0, 1.0, 1.0], [2.0, 0.5, 2.0, 2.0], [3.0, 1.0, 1.0, 1.0]]},
            {"kind": "long ties", "n": 4, "m": 32,
             "w": [[0.5, -1.0, 1.0, -1.0, 1.0, -1.0, 1.0, -1.0] * 2 + [1.0, -1.0, 1.0, -1.0, 1.0, -1.0, 1.0, 0.5] * 2]},
            {"kind": "pattern", "n": 1, "m": 2, "w": [[0.5, -0.7, 2.0, 1.0, -3.0, 3.0]]},
            {"kind": "pattern", "n": 4, "m": 8, "w": [[0.9, -0.1, 0.4, 0.3, -0.8, 0.2, 0.7, -0.6]]},
            {"kind": "shape", "n": 2, "m": 4, "w": [[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]], "error": True}]


def _mask_answer(fn, case):
    import torch
    w = torch.tensor(case["w"], dtype=torch.float32)
    if case.get("error"):
        try:
            result = fn(w, case["n"], case["m"])
        except ValueError:
            return "ValueError"
        except Exception as exc:  # the wrong kind of error is an answer too
            return type(exc).__name__
        try:  # what it returned instead, for the rule against answers that ignore their input
            return {"no error": _mask(result)}
        except Exception:
            return {"no error": repr(result)[:80]}
    return _mask(fn(w, case["n"], case["m"]))


def _mask(result) -> list:
    import torch
    return torch.as_tensor(result).to(torch.int64).tolist()


def _bits(mask, m: int) -> str:
    """A mask row as its groups of 0s and 1s ("0110 1010"), short enough to read in a verdict."""
    if not isinstance(mask, list):
        return repr(mask)
    return " ".join("".join(str(int(v)) for v in mask[i:i + m]) for i in range(0, len(mask), m))


def _mask_groups(row: list, m: int) -> list[list]:
    return [row[i:i + m] for i in range(0, len(row), m)]


def _right_magnitudes(w: list, found: list, want: list, m: int) -> bool:
    """Every group keeps as many elements, of the same magnitudes, as the expected mask (only ties differ)."""
    def kept(mask):
        return [sorted(abs(x) for x, k in zip(g, keep) if k) for g, keep in zip(_mask_groups(w, m), _mask_groups(mask, m))]
    return isinstance(found, list) and len(found) == len(w) and kept(found) == kept(want)


def _swapped(w: list, found: list, want: list) -> tuple:
    """The first element the mask should keep but dropped, and the first it kept instead ('?' where none)."""
    dropped = next((x for x, f, k in zip(w, found, want) if k and not f), "?")
    kept = next((x for x, f, k in zip(w, found, want) if f and not k), "?")
    return dropped, kept


def _mask_mistake(case: dict, row: int, found: list, want: dict) -> tuple[str | None, dict]:
    """Which rule the wrong row broke: the alternatives in ``want`` say what each mistake gives."""
    w, m = case["w"][row], case["m"]
    for name in ("magnitude", "group_size", "tie_rule"):
        other = (want.get(name) or [None] * (row + 1))[row]
        if other is not None and other != want["mask"][row] and found == other:
            break
    else:
        name = ("unstable_sort" if case.get("kind") == "long ties" else "tie_rule") \
            if _right_magnitudes(w, found, want["mask"][row], m) else None
    dropped, kept = _swapped(w, found, want["mask"][row]) if isinstance(found, list) else ("?", "?")
    return name, {"dropped": dropped, "kept": kept}


def _mask_score(case: dict, answer, expected) -> Part:
    kind = case.get("kind")
    label = _label(f"{case['n']}:{case['m']} · {kind}") if kind else None
    if case.get("error"):
        ok = answer == "ValueError"
        found = answer if isinstance(answer, str) else "no error"
        return Part(ok, msg("m02.mask_error", m=case["m"], found=found) if ok
                    else msg("m02.mistake.shape_error", m=case["m"], found=found),
                    mistake=None if ok else "shape_error", label=label)
    want = expected["mask"]
    if answer == want:
        return Part(True, msg("m02.mask_ok"), label=label)
    if not isinstance(answer, list) or len(answer) != len(want):
        return Part(False, msg("m02.wrong_length", expected=len(want), found=_len(answer)), label=label)
    row = next(i for i, (a, e) in enumerate(zip(answer, want)) if a != e)
    mistake, example = _mask_mistake(case, row, answer[row], expected)
    values = dict(n=case["n"], m=case["m"], row=row, w=case["w"][row], expected=_bits(want[row], case["m"]),
                  found=_bits(answer[row], case["m"]), **example)
    text = msg(f"m02.mistake.{mistake}", **values) if mistake else msg("m02.mask_wrong", **values)
    return Part(False, text, mistake=mistake, label=label)


# ---------------------------------------------------------------- 8. the narrowest format
EXP_RANGE, MAN_RANGE = (2, 8), (0, 23)
FIT_MISTAKES = {"range": "range", "precision": "precision", "subnormal": "subnormal_precision"}


def _fit_visible() -> list:
    """Value sets and tolerances: activations, a wide range, gradients with tiny values, a few round numbers."""
    from random import Random
    acts, wide, grads = Random(3), Random(2), Random(2)
    return [{"values": [round(acts.gauss(0, 1.5), 6) for _ in range(64)], "rel_tol": 0.05, "special": "ieee"},
            {"values": [round(wide.choice((1, -1)) * 10 ** wide.uniform(-3, 5), 9) for _ in range(64)],
             "rel_tol": 0.01, "special": "ieee"},
            {"values": [float(f"{grads.choice((1, -1)) * 10 ** grads.uniform(-5, -1):.3e}") for _ in range(64)],
             "rel_tol": 0.1, "special": "ieee"},
            {"values": [0.0, 0.5, -1.5, 3.0, 6.0, -4.0, 2.0], "rel_tol": 1e-9, "special": "none"}]


REASONS = ("range", "subnormal", "precision")
WHY_KEYS = ("without_exp_bit", "without_man_bit")
FIT_KEYS = ("exp_bits", "man_bits") + WHY_KEYS


def _fit_answer(fn, case):
    result = fn(list(case["values"]), case["rel_tol"], case["special"])
    if not isinstance(result, dict):
        return {"not_a_dict": type(result).__name__}
    out = {k: int(result[k]) if isinstance(result.get(k), (int, float)) and float(result[k]).is_integer()
           else repr(result.get(k)) for k in FIT_KEYS[:2]}
    why = {k: result[k] if k in result and result[k] in REASONS + (None,) else f"{result.get(k, 'missing')!r}"
           for k in WHY_KEYS}
    return {**out, **why}


def _unfit(case: dict, e: int, m: int, status: str) -> str:
    """Why the format E=e, M=m fails the values, as ``status`` says: ``subnormal_precision`` only where the smallest
    values are subnormals of it; smaller ones round to zero, which is a lack of range (the exponent bits)."""
    smallest = min((abs(v) for v in case["values"] if v), default=0.0)
    if status == "subnormal" and smallest < math.ldexp(1.0, 1 - (2 ** (e - 1) - 1) - m):
        return "range"
    return FIT_MISTAKES[status]


def _fit_score(case: dict, answer: dict, expected: dict) -> list[Part]:
    where = f"{len(case['values'])} values, rel_tol={case['rel_tol']:g}, special={case['special']}"
    labels = [msg(f"m02.label_{k}", where=where) for k in ("fits", "narrowest", "split")]
    wrong_type = _not_a_dict(answer, FIT_KEYS, labels[0])
    if wrong_type:
        return [wrong_type]
    e, m = answer.get("exp_bits"), answer.get("man_bits")
    want_e, want_m = expected["exp_bits"], expected["man_bits"]
    why = [Part(answer.get(k) == expected[k], msg("m02.fit_why", where=where, key=k, expected=expected[k],
                                                   found=answer.get(k)), label=msg(f"m02.label_{k}", where=where))
           for k in WHY_KEYS]
    if not (isinstance(e, int) and isinstance(m, int) and EXP_RANGE[0] <= e <= EXP_RANGE[1]
            and MAN_RANGE[0] <= m <= MAN_RANGE[1]):
        text = msg("m02.fit_invalid", where=where, exp=e, man=m)
        return [Part(False, text, label=label) for label in labels] + why
    status = expected["status"][f"{e},{m}"]
    other = expected["other_special"]
    values = dict(where=where, exp=e, man=m, bits=1 + e + m, want_exp=want_e, want_man=want_m,
                  want_bits=1 + want_e + want_m, special=case["special"], other=other["special"])
    fits = status == "ok"
    narrowest = e + m == want_e + want_m
    if (e, m) == (want_e, want_m):
        mistake = None
    elif (e, m) == (other["exp_bits"], other["man_bits"]):
        mistake = "special_ignored"
    else:
        mistake = _unfit(case, e, m, status) if not fits else "not_narrowest" if e + m > want_e + want_m else "fit_split"
    text = msg(f"m02.mistake.{mistake}", **values) if mistake else msg("m02.fit_ok", **values)
    return [Part(fits, text, mistake=None if fits else mistake, label=labels[0]),
            Part(fits and narrowest, text, mistake=mistake if fits and not narrowest else None, label=labels[1]),
            Part((e, m) == (want_e, want_m), text, mistake=mistake, label=labels[2])] + why


TASKS = {
    "gpu_numbers": Task(rule=msg("m02.rule.gpu_numbers"), central=("printed_peak", "tensor_clock"),
                        title=msg("m02.title_spec"), answer=lambda fn, case: _dict_answer(fn(dict(case)), SPEC_KEYS),
                        score=_spec_score, visible=_spec_visible, kind="recall", level="warm-up",
                        mistakes=("no_fma", "printed_peak", "tensor_clock", "tensor_core_count", "units")),
    "spec_sheet": Task(rule=msg("m02.rule.spec_sheet"), central=("sparse_as_dense",),
                       title=msg("m02.title_sheet"), answer=_sheet_answer, score=_sheet_score,
                       visible=_sheet_visible, kind="transfer", level="core",
                       mistakes=("sparse_as_dense", "fp16_accumulate", "halved_datacenter", "none_as_fp16",
                                 "per_system", "clock", "pflops")),
    "decode": Task(rule=msg("m02.rule.decode"), central=("fields", "subnormals"),
                   title=msg("m02.title_decode"), answer=_decode_answer, score=_decode_score,
                   visible=_decode_visible, kind="recall", level="core",
                   mistakes=("fields", "subnormals", "negative_zero", "ieee_specials", "special_rule")),
    "limits": Task(rule=msg("m02.rule.limits"), central=("max_pattern", "min_exponent"),
                   title=msg("m02.title_limits"), answer=_limits_answer, score=_limits_score,
                   visible=_limits_visible, kind="transfer", level="core",
                   mistakes=("max_pattern", "min_exponent", "subnormal_min", "eps_vs_roundoff")),
    "round": Task(rule=msg("m02.rule.round"), central=("not_nearest", "subnormal_spacing"),
                  title=msg("m02.title_round"), answer=_round_answer, score=_round_score,
                  visible=_round_visible, given=lambda a: a["values"] if isinstance(a, dict) else a,
                  kind="transfer", level="core",
                  mistakes=("not_nearest", "ties_away", "no_saturation", "subnormal_spacing", "signed_zero")),
    "measure": Task(rule=msg("m02.rule.measure"), central=("too_fast", "flops_n3"),
                    title=msg("m02.title_measure"), answer=_measure_answer, score=_measure_score,
                    visible=_measure_visible, measurement=True, reference=_measure_reference, rounds=3,
                    kind="recall", level="core",
                    mistakes=("flops_n3", "ms_not_s", "not_measured", "too_fast", "not_first_size",
                              "past_first_size", "reference_called", "no_time_fn")),
    "nm_mask": Task(rule=msg("m02.rule.nm_mask"), central=("magnitude", "group_size"),
                    title=msg("m02.title_mask"), answer=_mask_answer, score=_mask_score,
                    visible=_mask_visible, given=lambda a: a["no error"] if isinstance(a, dict) else a,
                    kind="recall", level="core",
                    mistakes=("magnitude", "tie_rule", "unstable_sort", "group_size", "shape_error")),
    "smallest_format": Task(rule=msg("m02.rule.smallest_format"), central=("range", "precision", "subnormal_precision"),
                            title=msg("m02.title_fit"), answer=_fit_answer, score=_fit_score,
                            visible=_fit_visible, kind="transfer", level="stretch",
                            mistakes=("range", "precision", "subnormal_precision", "special_ignored", "not_narrowest",
                                      "fit_split")),
}
