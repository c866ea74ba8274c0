"""Tasks of module 03 (memory hierarchy and roofline).

Tasks 1-4 are exact arithmetic on shapes, profiles and models (hidden cases: random
shapes, profiles the learner did not see, synthetic devices). Task 5 measures copy
bandwidth, graded side by side with the course's copy of the same bytes (see
``referee.py``), never above 1.05 x the spec. Task 6 is a working-set sweep, graded
side by side with the reference sweep, on its shape and on where its knee sits
relative to the detected last-level cache. Task 7 returns
a matplotlib Figure; ``answer`` reads plain data out of it (axis scales, line
vertices, marker positions) so the figure is graded like any other answer.
"""
from __future__ import annotations

import math
import statistics
from functools import lru_cache
from pathlib import Path
from typing import Any

from ...checks import referee
from ...checks.core import Part, Task, close
from ...datafile import read_yaml
from ...i18n import Message, msg
from . import analysis
from .measure import bandwidth_sweep

REL = 1e-9            # exact tasks: relative tolerance for floating-point rounding
SPEED_RATIO = 1.2     # sweep: in-cache sets at least this much faster than sets beyond the cache
KNEE_FACTOR = 16      # sweep: knee within LLC/16 .. 16 x LLC
SPEC_CAP = 1.05       # measured bandwidth may not exceed 1.05 x the spec sheet
MAX_VERTICES = 4000   # plot: vertices kept per line in the recorded answer

INTENSITY_KEYS = ("flops", "bytes", "intensity")
ROOFLINE_KEYS = ("ridge", "attainable_tflops", "bound")
DECODE_KEYS = ("kv_cache_bytes", "bytes_per_step", "tokens_per_s")
CAPACITY_KEYS = ("smem_kb", "registers_kb", "l2_kb", "total_kb")
CAPACITY_FIELDS = ("sms", "smem_per_sm_kb", "registers_per_sm_kb", "l2_mb")
VISIBLE_GPUS = ("h100_sxm",)


def _m(key: str, **values) -> Message:
    return msg(f"m03.{key}", **values)


def _positive(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value > 0


def _wrong(what: Message, expected: Any, found: Any) -> Message:
    return _m("expected_found", what=what, expected=expected, found=found)


def _label(case_ko: str, case_en: str, key: str) -> Message:
    return Message(f"{case_ko} → {key}", f"{case_en} → {key}")


def _as_dict(result: Any, keys: tuple[str, ...]) -> dict:
    """The learner's dict reduced to ``keys`` as plain data (numbers stay numbers)."""
    if not isinstance(result, dict):
        raise TypeError(_m("need_dict", keys=", ".join(keys), found=type(result).__name__).text())
    out = {}
    for key in keys:
        if key not in result:
            raise KeyError(_m("missing_key", key=key, keys=", ".join(keys)).text())
        value = result[key]
        out[key] = value if isinstance(value, str) else _number(value)
    return out


def _number(value: Any) -> Any:
    """ints, floats and 0-d numpy/torch values as a Python number; anything else unchanged."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return int(value)
    try:
        return float(value)
    except (TypeError, ValueError):
        return repr(value)


def _exact_parts(case_text: tuple[str, str], expected: dict, found: dict, keys: tuple[str, ...]) -> list[Part]:
    parts = []
    for key in keys:
        want, got = expected[key], found.get(key)
        ok = got == want if isinstance(want, str) else close(got, want, rel=REL, abs_tol=1e-300)
        parts.append(Part(ok, _wrong(_label(*case_text, key), _show(want), _show(got))))
    return parts


def _show(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.10g}"
    return repr(value) if isinstance(value, str) else str(value)


# ---------------------------------------------------------------- 1. arithmetic intensity
def _intensity_visible() -> list:
    return [
        {"op": "add", "shape": [1_000_000], "dtype": "fp32"},
        {"op": "matvec", "shape": [4096, 4096], "dtype": "bf16"},
        {"op": "matmul", "shape": [4096, 4096, 4096], "dtype": "bf16"},
    ]



def _intensity_answer(fn, case) -> dict:
    return _as_dict(fn(case["op"], list(case["shape"]), case["dtype"]), INTENSITY_KEYS)


def _intensity_score(case, answer, expected) -> list[Part]:
    text = f"{case['op']} {case['shape']} {case['dtype']}"
    return _exact_parts((text, text), expected, answer, INTENSITY_KEYS)


# ---------------------------------------------------------------- 2. ridge point and attainable FLOP/s

def _roofline_visible() -> list:
    return [
        {"profile": "h100_sxm", "dtype": "bf16", "intensity": 100.0},
        {"profile": "h100_sxm", "dtype": "bf16", "intensity": 1000.0},
        {"profile": "h100_sxm", "dtype": "fp32", "intensity": 0.25},
    ]



def case_profile(spec: Any):
    """A :class:`autograder.profiles.Profile` for a case: a real id or a synthetic dict."""
    from ...profiles import Profile, get
    if isinstance(spec, str):
        return get(spec)
    return Profile(id=spec["id"], name=spec["id"], kind="gpu", vendor="synthetic",
                   peak_tflops=dict(spec["peak_tflops"]), bandwidth_gbs=float(spec["bandwidth_gbs"]))


def _roofline_answer(fn, case) -> dict:
    return _as_dict(fn(case_profile(case["profile"]), case["dtype"], case["intensity"]), ROOFLINE_KEYS)


def _roofline_score(case, answer, expected) -> list[Part]:
    pid = case["profile"] if isinstance(case["profile"], str) else case["profile"]["id"]
    text = f"{pid} {case['dtype']} @ {case['intensity']:g} FLOP/byte"
    parts = _exact_parts((text, text), expected, answer, ROOFLINE_KEYS)
    if answer.get("bound") not in ("memory", "compute"):
        parts.append(Part(False, _m("bound_values"), weight=0))
    return parts


# ---------------------------------------------------------------- 3. decode bound and KV cache
@lru_cache(maxsize=1)
def models() -> dict:
    """The transformer shapes of ``data/models.yaml``."""
    return read_yaml(Path(__file__).resolve().parent / "data" / "models.yaml")


def model(name: str, weight_bytes: int, kv_bytes: int) -> dict:
    m = models()[name]
    return {"name": name, "params": m["params"], "layers": m["layers"], "kv_heads": m["kv_heads"],
            "head_dim": m["head_dim"], "weight_bytes": weight_bytes, "kv_bytes": kv_bytes}


def _decode_visible() -> list:
    return [
        {"model": model("llama3_8b", 2, 2), "batch": 1, "context": 8192, "device": "h100_sxm"},
        {"model": model("llama3_70b", 2, 2), "batch": 8, "context": 4096, "device": "h100_sxm"},
        {"model": model("llama3_70b", 2, 2), "batch": 8, "context": 4096, "device": "h200_sxm"},
    ]



def _decode_bandwidth(case) -> float:
    if "bandwidth_gbs" in case:
        return float(case["bandwidth_gbs"])
    from ...profiles import get
    return get(case["device"]).bandwidth_gbs


def _decode_answer(fn, case) -> dict:
    return _as_dict(fn(dict(case["model"]), case["batch"], case["context"], _decode_bandwidth(case)), DECODE_KEYS)


def _decode_score(case, answer, expected) -> list[Part]:
    bw = _decode_bandwidth(case)
    text = f"{case['model']['name']} batch {case['batch']} context {case['context']} @ {bw:g} GB/s"
    return _exact_parts((text, text), expected, answer, DECODE_KEYS)


# ---------------------------------------------------------------- 4. on-chip capacity
def _capacity_visible() -> list:
    return [{"profile": pid} for pid in VISIBLE_GPUS]



def capacity_spec(case) -> dict:
    if "spec" in case:
        return dict(case["spec"])
    from ...profiles import get
    return dict(get(case["profile"]).spec)


def _capacity_answer(fn, case) -> dict:
    return _as_dict(fn(capacity_spec(case)), CAPACITY_KEYS)


def _capacity_score(case, answer, expected) -> list[Part]:
    spec = capacity_spec(case)
    text = case.get("profile") or "{sms} SMs, {smem_per_sm_kb} KB SMEM, {registers_per_sm_kb} KB RF, {l2_mb} MB L2".format(**spec)
    return _exact_parts((text, text), expected, answer, CAPACITY_KEYS)


# ---------------------------------------------------------------- helpers for measurements
def _device() -> str:
    from ...hardware import best_device
    return best_device()


def last_level_cache(device: str) -> int | None:
    """Bytes of the last-level cache a working set on ``device`` meets (CPU L3, GPU L2); None if unknown."""
    from ...hardware import detect
    report = detect()
    kind = device.split(":")[0]
    if kind == "cpu":
        return report.cpu.last_level_cache_bytes
    for acc in report.accelerators:
        if acc.device.split(":")[0] == kind or acc.backend == kind:
            if acc.l2_bytes:
                return acc.l2_bytes
            from ...profiles import match
            profile = match(acc.name)
            l2 = profile.get("l2_mb") if profile else None
            return int(l2 * 2**20) if l2 else None
    return None


def _size_text(nbytes: float | None) -> str:
    if not nbytes:
        return "?"
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if nbytes >= scale:
            return f"{nbytes / scale:.3g} {unit}"
    return f"{nbytes:.0f} B"


# ---------------------------------------------------------------- 5. copy bandwidth
COPY_FLOOR = 64 * 2**20
COPY_CEILING = 2**30


def _copy_visible() -> list:
    return [{"factor": 4}]



def _copy_bytes(case, device: str) -> int:
    llc = last_level_cache(device) or COPY_FLOOR
    return int(min(max(case["factor"] * llc, COPY_FLOOR), COPY_CEILING)) // 4096 * 4096


def _copy_answer(fn, case) -> dict:
    device = _device()
    nbytes = _copy_bytes(case, device)
    return {"device": device, "nbytes": nbytes, "gbs": _number(fn(nbytes, device))}


def _copy_reference(case, answer) -> dict:
    """The course's copy of the same bytes on the same device (sizes from the case, never from the answer)."""
    from ...reference import bandwidth_gbs
    device = _device()
    return {"gbs": bandwidth_gbs("copy", device, _copy_bytes(case, device), budget_s=1.0)["gbs"]}


def _spec_bandwidth(device: str) -> float | None:
    """The spec-sheet bandwidth of ``device`` (None for CPUs and unknown devices)."""
    from ...reference import spec_profile
    profile = spec_profile(device)
    return float(profile.bandwidth_gbs) if profile is not None and profile.bandwidth_gbs else None


def _copy_score(case, answer, want) -> list[Part]:
    from ...expectations import side_by_side
    rounds = referee.rounds(answer)
    bad = next((r for r in rounds if not _positive(r.get("gbs"))), None)
    if not rounds or bad is not None:
        return [Part(False, _m("need_number", what="GB/s", found=bad.get("gbs") if bad else None))]
    device = _device()
    nbytes = _copy_bytes(case, device)
    what = _m("copy_what", device=device, nbytes=_size_text(nbytes))
    measured, parts = side_by_side("bandwidth", answer, what, lambda r: r["gbs"], lambda ref: ref["gbs"],
                                   lambda r: 2 * nbytes / (r["gbs"] * 1e9), "GB/s")
    spec = _spec_bandwidth(device)
    if measured and spec:
        gbs = max(r["gbs"] for r in rounds)
        parts.append(Part(gbs <= SPEC_CAP * spec, _m("bandwidth_above_spec", found=gbs, spec=spec)))
    return parts


# ---------------------------------------------------------------- 6. working-set sweep
SWEEP_BUDGET_S = 0.25
UNKNOWN_LLC_SMALL = 1 * 2**20
UNKNOWN_LLC_LARGE = 1 * 2**30


def sweep_sizes(llc_bytes: int, start: int = 64 * 1024, beyond: float = 8.0, per_octave: int = 1) -> list[int]:
    """Working-set sizes from ``start`` up to the first at or past ``beyond`` x the last-level cache,
    ``per_octave`` per doubling."""
    stop = beyond * llc_bytes
    sizes, k = [], 0
    while not sizes or sizes[-1] < stop:
        size = int(start * 2 ** (k / per_octave)) // 4096 * 4096 or 4096
        if not sizes or size > sizes[-1]:
            sizes.append(size)
        k += 1
    return sizes


def cache_levels(device: str) -> list[int]:
    """Sizes of the caches a working set on ``device`` meets where the bandwidth may fall (CPU: L2, L3)."""
    llc = last_level_cache(device)
    if device.split(":")[0] != "cpu":
        return [llc] if llc else []
    from ...hardware import detect
    cpu = detect().cpu
    return sorted({c for c in (cpu.l2_bytes, cpu.l3_bytes, llc) if c})


def _sweep_visible() -> list:
    return [{"start_kib": 64, "beyond": 8, "per_octave": 1}]



SWEEP_MAX_BYTES = 2**30  # the largest working set of a graded sweep (memory limits of the grader)


def _sweep_plan(case) -> tuple[str, int | None, list[int]]:
    """(device, the cache size the sweep is judged against or None, working-set sizes) for a case, here.

    A last-level cache too large to sweep past within ``SWEEP_MAX_BYTES`` (a server CPU's
    L3 shared by many cores, of which a small VM sees a part) is judged at the size that fits.
    """
    device = _device()
    llc = last_level_cache(device)
    if llc:
        llc = min(llc, SWEEP_MAX_BYTES // (2 * case["beyond"]))
        return device, llc, sweep_sizes(llc, case["start_kib"] * 1024, case["beyond"], case["per_octave"])
    return device, None, sweep_sizes(UNKNOWN_LLC_LARGE // 8, UNKNOWN_LLC_SMALL, 8, 1)  # unknown cache: 1 MiB .. 1 GiB


def _sweep_answer(fn, case) -> dict:
    device, llc, sizes = _sweep_plan(case)
    result = fn(list(sizes), device, SWEEP_BUDGET_S)
    try:
        values = [_number(v) for v in result]
    except TypeError:
        values = repr(result)[:200]
    return {"device": device, "llc_bytes": llc, "sizes": sizes, "gbs": values}


def _sweep_reference(case, answer) -> dict:
    device, _, sizes = _sweep_plan(case)
    return {"gbs": bandwidth_sweep(sizes, device, SWEEP_BUDGET_S)}


def _geomean(values) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values))


def _sweep_score(case, answer, want) -> list[Part]:
    from ...expectations import side_by_side
    device, llc, sizes = _sweep_plan(case)
    rounds = referee.rounds(answer)
    lists = [r.get("gbs") for r in rounds]
    bad = next((g for g in lists if not isinstance(g, list) or len(g) != len(sizes)), None) if lists else "-"
    if bad is not None:
        return [Part(False, _m("need_list", n=len(sizes), found=_show(bad)[:200]))]
    bad = next((g for g in lists if not all(_positive(v) for v in g)), None)
    if bad is not None:
        return [Part(False, _m("sweep_values", found=_show(bad)[:200]))]
    what = _m("sweep_what", device=device, n=len(sizes))
    measured, compared = side_by_side("sweep", answer, what, lambda r: _geomean(r["gbs"]),
                                      lambda ref: _geomean(ref["gbs"]),
                                      lambda r: sum(s / (g * 1e9) for s, g in zip(sizes, r["gbs"])), "GB/s", weight=2)
    if not measured:
        return compared
    gbs = [statistics.median(column) for column in zip(*lists)]  # each size: the median of the rounds
    a = analysis
    parts = compared
    if not llc:
        fast = [g for s, g in zip(sizes, gbs) if s <= 4 * UNKNOWN_LLC_SMALL]
        slow = [g for s, g in zip(sizes, gbs) if s >= UNKNOWN_LLC_LARGE / 2]
        ok = bool(fast and slow) and a._median(fast) >= SPEED_RATIO * a._median(slow)
        parts.append(Part(ok, _m("sweep_not_faster", fast=a._median(fast) if fast else 0.0,
                                 slow=a._median(slow) if slow else 0.0, ratio=SPEED_RATIO), weight=2))
        parts.append(Part(False, _m("sweep_llc_unknown", device=device), weight=0))
        return parts
    fast, slow = a.sweep_plateaus(sizes, gbs, llc)
    if fast is None or slow is None:
        return parts + [Part(False, _m("sweep_no_plateau", llc=_size_text(llc)), weight=2)]
    parts.append(Part(fast >= SPEED_RATIO * slow,
                      _m("sweep_not_faster", fast=fast, slow=slow, ratio=SPEED_RATIO), weight=1))
    knee = a.sweep_knee(sizes, gbs, llc)
    if knee is None:
        parts.append(Part(False, _m("sweep_no_knee"), weight=1))
    else:
        levels = cache_levels(device) or [llc]
        ok = any(c / KNEE_FACTOR <= knee <= KNEE_FACTOR * c for c in levels)
        parts.append(Part(ok, _m("sweep_knee_far", knee=_size_text(knee), llc=", ".join(map(_size_text, levels))),
                          weight=1))
    return parts


# ---------------------------------------------------------------- 7. roofline figure
def _plot_visible() -> list:
    return [{"peak_tflops": 989.4, "bandwidth_gbs": 3350.0,
             "points": [{"label": "add fp32", "intensity": 1 / 12, "tflops": 0.25},
                        {"label": "matvec bf16", "intensity": 1.0, "tflops": 2.9},
                        {"label": "matmul bf16", "intensity": 1365.0, "tflops": 750.0}]}]



def _finite_pairs(xs, ys) -> tuple[list, list]:
    out_x, out_y = [], []
    for x, y in zip(xs, ys):
        try:
            fx, fy = float(x), float(y)
        except (TypeError, ValueError):
            continue
        if math.isfinite(fx) and math.isfinite(fy):
            out_x.append(fx)
            out_y.append(fy)
    return out_x, out_y


def figure_data(fig: Any) -> dict:
    """Plain data from a roofline Figure: scales and labels of its first Axes, line vertices, marker positions."""
    from matplotlib.figure import Figure
    if not isinstance(fig, Figure):
        raise TypeError(_m("need_figure", found=type(fig).__name__).text())
    if not fig.axes:
        raise ValueError(_m("figure_no_axes").text())
    ax = fig.axes[0]
    lines, markers = [], []
    for line in ax.get_lines():
        xs, ys = _finite_pairs(line.get_xdata(orig=False), line.get_ydata(orig=False))
        marker = line.get_marker()
        if marker not in (None, "", " ", "None", "none"):
            markers.extend([x, y] for x, y in zip(xs, ys))
        if line.get_linestyle() not in ("None", "", " ", "none"):
            step = max(1, len(xs) // MAX_VERTICES)
            lines.append({"x": xs[::step], "y": ys[::step]})
    for collection in ax.collections:
        offsets = collection.get_offsets()
        xs, ys = _finite_pairs([o[0] for o in offsets], [o[1] for o in offsets])
        markers.extend([x, y] for x, y in zip(xs, ys))
    return {"xscale": ax.get_xscale(), "yscale": ax.get_yscale(), "xlabel": ax.get_xlabel(),
            "ylabel": ax.get_ylabel(), "lines": lines, "markers": markers[:MAX_VERTICES]}


def _plot_answer(fn, case) -> dict:
    import matplotlib.pyplot as plt
    points = [dict(p) for p in case["points"]]
    fig = fn(case["peak_tflops"], case["bandwidth_gbs"], points)
    try:
        return figure_data(fig)
    finally:
        from matplotlib.figure import Figure
        if isinstance(fig, Figure):
            plt.close(fig)


def _plot_score(case, answer, want) -> list[Part]:
    a = analysis
    peak, bw = case["peak_tflops"], case["bandwidth_gbs"]
    ridge = want["ridge"]
    log = answer["xscale"] == "log" and answer["yscale"] == "log"
    cover = a.roof_coverage(answer["lines"], peak, bw)
    parts = [Part(log, _m("plot_scales", x=answer["xscale"], y=answer["yscale"]), weight=1),
             Part(cover["memory"], _m("plot_memory_roof", ridge=ridge), weight=1),
             Part(cover["compute"], _m("plot_compute_roof", peak=peak), weight=1),
             Part(bool(answer["xlabel"].strip() and answer["ylabel"].strip()), _m("plot_labels"), weight=0.5)]
    for p in case["points"]:
        parts.append(Part(a.point_plotted(p, answer["markers"]),
                          _m("plot_point_missing", label=p["label"], x=p["intensity"], y=p["tflops"]),
                          weight=1.5 / len(case["points"])))
    return parts


TASKS = {
    "intensity": Task(title=_m("title.intensity"), answer=_intensity_answer, score=_intensity_score,
                      visible=_intensity_visible),
    "roofline": Task(title=_m("title.roofline"), answer=_roofline_answer, score=_roofline_score,
                     visible=_roofline_visible),
    "decode": Task(title=_m("title.decode"), answer=_decode_answer, score=_decode_score,
                   visible=_decode_visible),
    "capacity": Task(title=_m("title.capacity"), answer=_capacity_answer, score=_capacity_score,
                     visible=_capacity_visible),
    "copy": Task(title=_m("title.copy"), answer=_copy_answer, score=_copy_score, visible=_copy_visible,
                 measurement=True, reference=_copy_reference, rounds=3),
    "sweep": Task(title=_m("title.sweep"), answer=_sweep_answer, score=_sweep_score, visible=_sweep_visible,
                  measurement=True, reference=_sweep_reference, rounds=3),
    "plot": Task(title=_m("title.plot"), answer=_plot_answer, score=_plot_score,
                 visible=_plot_visible),
}
