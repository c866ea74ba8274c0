"""Tasks of module 03 (memory hierarchy and roofline).

1 ``intensity`` (warm-up): FLOPs and minimum bytes of rectangular shapes. 2 ``roofline``: the ridge point and
the attainable FLOP/s of a datasheet row as the vendor prints it (sparse figures, footnotes, TB/s). 3 ``fusion``:
the bytes of a chain of element-wise steps, one kernel per step and fused (broadcast operands, a tensor used twice).
4 ``decode``: the decode bound and the KV cache of models with sliding-window layers. 5 ``debug``: a copy-bandwidth
measurement with planted bugs, run on a simulated GPU (``simulated.py``: deterministic, so the diagnosis never
depends on the load). 6 ``sweep``: bandwidth per working-set size, graded side by side with the reference sweep
(``measure.py``) on its small sets, its shape and where its knee sits. 7 ``serve`` (stretch): the largest batch
that fits a datasheet's memory and the smallest that reaches a token rate. Exact tasks are graded per key; a wrong
key that a known mistake gives is named (the references answer each known mistake beside the right answer:
``want["mistakes"]``).
"""
from __future__ import annotations

import functools
import math
from dataclasses import replace
from functools import lru_cache
from pathlib import Path
from typing import Any

from ...checks import referee
from ...checks.core import Part, Task, close
from ...checks.keys import as_dict as _as_dict, exact_parts, number as _number, shown as _show
from ...datafile import read_yaml
from ...i18n import Message, msg
from . import analysis, measure
from .simulated import EXAMPLE, SimulatedGPU, drawn

MEASURE_REL = 0.02    # debug: a sound measurement on the simulated GPU is within 2 % of its bandwidth
BUFFER_TIMES_CACHE = 4  # debug: each buffer at least this many times the cache the device reports (the task's rule)
SPEED_RATIO = 1.2     # sweep: in-cache sets at least this much faster than sets beyond the cache
KNEE_FACTOR = 16      # sweep: knee within LLC/16 .. 16 x LLC

INTENSITY_KEYS = ("flops", "bytes", "intensity")
ROOFLINE_KEYS = ("ridge", "attainable_tflops", "bound")
FUSION_KEYS = ("unfused_bytes", "fused_bytes")
DECODE_KEYS = ("kv_cache_bytes", "bytes_per_step", "tokens_per_s")
SERVE_KEYS = ("max_batch", "batch")
VISIBLE_ROWS = ("h100_sxm", "h200_sxm", "a100_sxm_80gb")


def _m(key: str, **values) -> Message:
    return msg(f"m03.{key}", **values)


def _positive(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value > 0


_parts = functools.partial(exact_parts, mistakes="m03")  # a wrong key names m03.mistake.<name>


# ---------------------------------------------------------------- 1. arithmetic intensity
def _intensity_visible() -> list:
    return [
        {"op": "add", "shape": [1_000_000], "dtype": "fp32"},
        {"op": "matvec", "shape": [8192, 2048], "dtype": "bf16"},
        {"op": "matmul", "shape": [16, 8192, 4096], "dtype": "fp8"},
    ]


def _intensity_answer(fn, case) -> dict:
    return _as_dict(fn(case["op"], list(case["shape"]), case["dtype"]), INTENSITY_KEYS)


def _intensity_score(case, answer, want) -> list[Part]:
    return _parts(f"{case['op']} {case['shape']} {case['dtype']}", want, answer, INTENSITY_KEYS)


# ---------------------------------------------------------------- 2. a datasheet's roofline
@lru_cache(maxsize=1)
def datasheets() -> dict:
    """The datasheet rows of ``data/datasheets.yaml`` (as printed), without their sources."""
    rows = read_yaml(Path(__file__).resolve().parent / "data" / "datasheets.yaml")
    return {rid: {k: v for k, v in row.items() if k != "sources"} for rid, row in rows.items()}


def _roofline_visible() -> list:
    rows = datasheets()
    return [{"row": rows["h100_sxm"], "intensity": 100.0},
            {"row": rows["a100_sxm_80gb"], "intensity": 1000.0},
            {"row": {"device": "made-up accelerator", "format": "BF16", "peak": "300 TFLOPS*",
                     "footnote": "* Preliminary specification, subject to change", "bandwidth": "1.5 TB/s",
                     "memory": "32 GB"}, "intensity": 200.0}]


def _roofline_answer(fn, case) -> dict:
    return _as_dict(fn(dict(case["row"]), case["intensity"]), ROOFLINE_KEYS)


def _roofline_score(case, answer, want) -> list[Part]:
    parts = _parts(f"{case['row']['device']} @ {case['intensity']:g} FLOP/byte", want, answer, ROOFLINE_KEYS)
    if answer.get("bound") not in ("memory", "compute"):
        parts.append(Part(False, _m("bound_values"), weight=0))
    return parts


# ---------------------------------------------------------------- 3. fusion
def _fusion_visible() -> list:
    rows, cols = 4096, 1024
    return [
        {"name": "silu: x * sigmoid(x)", "steps": [["s", "sigmoid", ["x"]], ["y", "mul", ["x", "s"]]],
         "sizes": {"x": rows * cols}, "bytes_per_element": 2},
        {"name": "gelu(bias + x) + residual",
         "steps": [["h", "add", ["bias", "x"]], ["a", "gelu", ["h"]], ["y", "add", ["a", "res"]]],
         "sizes": {"x": rows * cols, "bias": cols, "res": rows * cols}, "bytes_per_element": 2},
        {"name": "(0.5 x)^2 + 1, mask unused",
         "steps": [["t", "mul", ["x", 0.5]], ["u", "mul", ["t", "t"]], ["y", "add", ["u", 1.0]]],
         "sizes": {"x": rows * cols, "mask": rows * cols}, "bytes_per_element": 4},
    ]


def _fusion_answer(fn, case) -> dict:
    steps = [[out, op, list(operands)] for out, op, operands in case["steps"]]
    return _as_dict(fn(steps, dict(case["sizes"]), case["bytes_per_element"]), FUSION_KEYS)


def _fusion_score(case, answer, want) -> list[Part]:
    return _parts(case.get("name", "chain"), want, answer, FUSION_KEYS)


# ---------------------------------------------------------------- 4. decode bound and KV cache
@lru_cache(maxsize=1)
def models() -> dict:
    """The transformer shapes of ``data/models.yaml``."""
    return read_yaml(Path(__file__).resolve().parent / "data" / "models.yaml")


MODEL_KEYS = ("params", "layers", "heads", "kv_heads", "head_dim", "window", "local_layers")


def model(name: str, weight_bytes: int, kv_bytes: int) -> dict:
    """A model of ``data/models.yaml`` as a task passes it: its shape (with its sliding-window layers), and bytes per
    weight and per KV element."""
    m = models()[name]
    return {"name": name, **{k: m.get(k) for k in MODEL_KEYS}, "weight_bytes": weight_bytes, "kv_bytes": kv_bytes}


def _decode_visible() -> list:
    from ...profiles import get
    return [
        {"model": model("llama3_8b", 2, 2), "batch": 16, "context": 2048, "bandwidth_gbs": get("a100_sxm_80gb").bandwidth_gbs},
        {"model": model("gemma2_9b", 2, 2), "batch": 16, "context": 8192, "bandwidth_gbs": get("h100_sxm").bandwidth_gbs},
        {"model": model("mistral_7b", 2, 2), "batch": 32, "context": 2048, "bandwidth_gbs": get("mi300x").bandwidth_gbs},
        {"model": model("llama3_70b", 1, 2), "batch": 32, "context": 8192, "bandwidth_gbs": get("mi300x").bandwidth_gbs},
    ]


def _decode_answer(fn, case) -> dict:
    return _as_dict(fn(dict(case["model"]), case["batch"], case["context"], case["bandwidth_gbs"]), DECODE_KEYS)


def _decode_score(case, answer, want) -> list[Part]:
    text = f"{case['model']['name']} batch {case['batch']} context {case['context']} @ {case['bandwidth_gbs']:g} GB/s"
    return _parts(text, want, answer, DECODE_KEYS)


# ---------------------------------------------------------------- 5. debugging a measurement (simulated GPU)
def _debug_visible() -> list:
    return [{"device": dict(EXAMPLE)},
            {"device": {"name": "simulated MI300X-like GPU", "memory_gib": 192, "cache_mib": 256, "hbm_gbs": 4300,
                        "cache_gbs": 12000, "launch_us": 8, "map_gbs": 25}}]


def _debug_device(case, rng) -> SimulatedGPU:
    return SimulatedGPU(drawn(case["device"], rng))


def _debug_answer(fn, case) -> dict:
    with referee.device("m03.debug", case) as dev:
        return {"gbs": _number(fn(dev)), "observed": dev._observed()}


def _debug_mistake(ratio: float, report: dict, device: dict) -> str | None:
    """The bug a wrong measurement on the simulated GPU shows: first a figure near half (``reads_only``: the bytes
    counted once, or only the read timed, whatever else the timer did), then what it did there (a clock read while
    copies ran, buffers that fit in the cache together: the cache was timed, or the launches where a copy runs quicker
    than it is launched; a first copy timed), then the factor it is off by, then short samples."""
    pair = 2 * report["largest_copy_bytes"]
    if 0.43 <= ratio <= 0.53:  # half (and half of GiB/s: 0.47), from a sound sample or a slightly short one
        return "reads_only"
    if report["clock_reads_while_busy"]:
        return "no_synchronize"
    if pair <= device["cache_mib"] * 2**20:
        return "launch_bound" if pair / (device["cache_gbs"] * 1e9) < device["launch_us"] * 1e-6 else "fits_in_cache"
    if report["timed_mapping"]:
        return "no_warm_up"
    if 0.88 <= ratio <= 0.945:  # 1/1.074 = 0.93
        return "gib"
    return "short_sample" if ratio < 1 and report["launch_share"] > 0.01 else None


def _debug_score(case, answer, want) -> list[Part]:
    """Scored against the device as the referee saw it (``observed``: its speeds and what was done on it)."""
    seen = answer.get("observed") if isinstance(answer.get("observed"), dict) else {}
    device = seen.get("device") or case["device"]
    label = Message(device["name"], device["name"])
    report, found, truth = seen.get("report") or {}, answer.get("gbs"), float(device["hbm_gbs"])
    if not report.get("copies") or report.get("clock_reads", 0) < 2:
        return [Part(False, _m("debug_not_measured", device=device["name"]), label=label)]
    if not _positive(found):
        return [Part(False, _m("need_number", what="GB/s", found=found), label=label)]
    text = _m("debug_what", device=device["name"], found=found, expected=truth)
    if device != case["device"]:
        text = text + _m("debug_drawn", given=case["device"]["hbm_gbs"])
    cache = int(device["cache_mib"] * 2**20)
    if close(found, truth, rel=MEASURE_REL):
        if report.get("largest_copy_bytes", 0) < BUFFER_TIMES_CACHE * cache:  # right here, by luck: the rule is 4x
            return [Part(False, text + _m("mistake.buffer_under_4x", need=_size_text(BUFFER_TIMES_CACHE * cache),
                                          found=_size_text(report.get("largest_copy_bytes"))),
                         mistake="buffer_under_4x", label=label)]
        return [Part(True, text, label=label)]
    name = _debug_mistake(found / truth, report, device)
    return [Part(False, text + _m(f"mistake.{name}", ratio=f"{found / truth:.3f}") if name else text, mistake=name,
                 label=label)]


# ---------------------------------------------------------------- helpers for the sweep
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


# ---------------------------------------------------------------- 6. working-set sweep
SWEEP_BUDGET_S = 0.05     # seconds per size: 3 rounds x (the learner's sweep + the reference's) stay within ~10 s
LLC_CAP = 16 * 2**20      # the sweep judges against the last-level cache, at most this (so it ends by 256 MiB)
SMALL_SETS = 2            # the smallest sets: a read of one of them takes well under a microsecond
SMALL_RATIO = 0.25        # ... they must reach this share of the reference, which re-reads them within one call
                          # (read once per call: 0.08x on a 2-core test machine; the reference against itself:
                          # 0.55x-2.4x there with two busy loops beside it)
UNIT_SLIP = 500           # a sweep this many times the reference reports MB/s, not GB/s


def sweep_sizes(llc_bytes: int, start: int = 16 * 1024, beyond: float = 8.0, per_octave: int = 1) -> list[int]:
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
    return [{"start_kib": 16, "beyond": 8, "per_octave": 1}]


def _sweep_plan(case) -> tuple[str, int | None, list[int]]:
    """(device, the cache size the sweep is judged against or None, working-set sizes) for a case, here.

    The judged cache is the last-level cache the device reports, at most ``LLC_CAP``: a server CPU reports an L3
    of hundreds of MiB shared by all its cores, and the sweep must reach well beyond the size it is judged against.
    """
    device = _device()
    reported = last_level_cache(device)
    llc = min(reported, LLC_CAP) if reported else None
    return device, llc, sweep_sizes(llc or LLC_CAP, case["start_kib"] * 1024, case["beyond"], case["per_octave"])


def _sweep_answer(fn, case) -> dict:
    device, llc, sizes = _sweep_plan(case)
    before = measure.calls
    result = fn(list(sizes), device, SWEEP_BUDGET_S)
    called = measure.calls - before  # the course's own measurement, run by the learner's function
    try:
        values = [_number(v) for v in result]
    except TypeError:
        values = repr(result)[:200]
    return {"device": device, "llc_bytes": llc, "sizes": sizes, "gbs": values, "reference_calls": called}


def _sweep_reference(case, answer) -> dict:
    """The course's sweep at the case's sizes, taken again where it slowed (``referee.retaken``: its geometric mean
    fell by ``referee.SPREAD`` since the last one taken for the case), keeping each size's fastest."""
    device, _, sizes = _sweep_plan(case)
    best = referee.retaken(["m03.sweep", case],
                           lambda: measure.reference_sweep(sizes, device, SWEEP_BUDGET_S),
                           lambda gbs: [_geomean(gbs)], lambda a, b: [max(x, y) for x, y in zip(a, b)])
    return {"gbs": best}


def _clock_claims(sizes: list[int]):
    """Each size's GB/s came from ``time_fn``: one call read the set a whole number of times, so its time is a whole
    number of the time a quarter of the set takes at that rate (a quarter: a count of float32 elements taken for
    bytes, or MB/s for GB/s, is still measured, and named by its own part) (``referee.off_clock``)."""
    return lambda r: [(size / (4 * gbs * 1e9), "time_fn", "units") for size, gbs in zip(sizes, r["gbs"])]


def _geomean(values) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values))


def _fastest(sweeps: list, n: int) -> list[float] | None:
    """Each size's fastest value over ``sweeps`` (lists of ``n`` GB/s): load only ever slows a measurement down, so the
    fastest round is the one least disturbed. None when no sweep is a list of ``n`` positive numbers."""
    sweeps = [g for g in sweeps if isinstance(g, list) and len(g) == n and all(_positive(v) for v in g)]
    return [max(column) for column in zip(*sweeps)] if sweeps else None


def _per_size(answer, sizes: list[int]) -> list[float] | None:
    """Per size, the learner's fastest round over the reference's fastest (None without both)."""
    mine = _fastest([r.get("gbs") for r in referee.rounds(answer)], len(sizes))
    theirs = _fastest([ref.get("gbs") for ref in referee.observed(answer).get("reference") or []
                       if isinstance(ref, dict)], len(sizes))
    return [a / b for a, b in zip(mine, theirs)] if mine and theirs else None


QUARTER = (0.22, 0.29)  # a sweep this share of the reference at its largest sets counted elements, not 4-byte floats


def _counted_elements(answer, sizes: list[int]) -> bool:
    """The larger half of the sets (where one read lasts long and no call overhead shows) near a quarter of the
    reference: the bytes were counted as float32 elements (4 bytes each)."""
    ratios = _per_size(answer, sizes)
    return bool(ratios) and QUARTER[0] <= _geomean(ratios[len(ratios) // 2:]) <= QUARTER[1]


def _small_sets(answer, sizes: list[int], elements: bool = False) -> Part:
    """The smallest sets against the reference at the same sizes (each side's fastest round per size): read once per
    call, they time the call, not the cache. ``elements``: the whole sweep is a quarter (elements counted, not
    bytes), which explains the small sets too: no call overhead is named."""
    ratios = _per_size(answer, sizes)
    ratio = _geomean(ratios[:SMALL_SETS]) if ratios else 0.0
    label = _m("label.small_sets", ratio=SMALL_RATIO)
    text = _m("sweep_small", sizes=", ".join(map(_size_text, sizes[:SMALL_SETS])), found=ratio, need=SMALL_RATIO)
    if ratio >= SMALL_RATIO:
        return Part(True, text, label=label)
    if elements:
        return Part(False, text, label=label)
    return Part(False, text + _m("mistake.call_overhead"), mistake="call_overhead", label=label)


def _too_fast(answer, device: str) -> Message:
    """What a sweep above the band says, from the evidence (a miss the load explains is said by ``side_by_side``): a
    unit slip (MB/s), else on a CPU a count of bytes (nothing there runs asynchronously), else the common causes."""
    ratio = referee.median_ratio(answer, lambda r: _geomean(r["gbs"]), lambda ref: _geomean(ref["gbs"]))
    if ratio and ratio[0] >= UNIT_SLIP:
        return _m("mistake.mb_per_s", ratio=ratio[0])
    return _m("sweep_above_cpu") if device.split(":")[0] == "cpu" else msg("measure.above")


def _faster(fast: float, slow: float) -> Part:
    """In-cache sets must be faster than the others."""
    text = _m("sweep_not_faster", fast=fast, slow=slow, ratio=SPEED_RATIO)
    return Part(fast >= SPEED_RATIO * slow, text, label=_m("label.faster", ratio=SPEED_RATIO))


def _sweep_score(case, answer, want) -> list[Part]:
    from ...expectations import load_explains, side_by_side
    device, llc, sizes = _sweep_plan(case)
    rounds = referee.rounds(answer)
    if any(r.get("reference_calls") for r in rounds if isinstance(r, dict)):
        return [Part(False, _m("mistake.reference_called"), mistake="reference_called")]
    lists = [r.get("gbs") for r in rounds]
    bad = next((g for g in lists if not isinstance(g, list) or len(g) != len(sizes)), None) if lists else "-"
    if bad is not None:
        return [Part(False, _m("need_list", n=len(sizes), found=_show(bad)[:200]))]
    bad = next((g for g in lists if not all(_positive(v) for v in g)), None)
    if bad is not None:
        return [Part(False, _m("sweep_values", found=_show(bad)[:200]))]
    what = _m("sweep_what", device=device, n=len(sizes))
    mine, theirs = (lambda r: _geomean(r["gbs"])), (lambda ref: _geomean(ref["gbs"]))
    elements = _counted_elements(answer, sizes)
    measured, parts = side_by_side("sweep", answer, what, mine, theirs,
                                   lambda r: sum(s / (g * 1e9) for s, g in zip(sizes, r["gbs"])), "GB/s", weight=2,
                                   too_slow=_m("mistake.elements_counted") if elements else _m("sweep_below"),
                                   too_fast=_too_fast(answer, device), clock_claims=_clock_claims(sizes))
    if not measured:
        return parts
    ratio = referee.median_ratio(answer, mine, theirs)
    slip = "mb_per_s" if ratio and ratio[0] >= UNIT_SLIP else "elements_counted" if elements else None
    if slip and load_explains("sweep", answer, mine, theirs) is None:
        parts = [replace(p, mistake=slip) if not p.ok else p for p in parts]
    parts.append(_small_sets(answer, sizes, elements))
    gbs = _fastest(lists, len(sizes))
    fast, slow = analysis.sweep_plateaus(sizes, gbs, llc or LLC_CAP)
    if fast is None or slow is None:
        return parts + [Part(False, _m("sweep_no_plateau", llc=_size_text(llc or LLC_CAP)), weight=2)]
    parts.append(_faster(fast, slow))
    if not llc:
        return parts + [Part(False, _m("sweep_llc_unknown", device=device, llc=_size_text(LLC_CAP)), weight=0)]
    knee = analysis.sweep_knee(sizes, gbs, llc)
    label = _m("label.knee", factor=KNEE_FACTOR)
    if knee is None:
        return parts + [Part(False, _m("sweep_no_knee"), label=label)]
    levels = cache_levels(device) or [llc]
    ok = any(c / KNEE_FACTOR <= knee <= KNEE_FACTOR * c for c in levels)
    return parts + [Part(ok, _m("sweep_knee_far", knee=_size_text(knee), llc=", ".join(map(_size_text, levels))),
                         label=label)]


# ---------------------------------------------------------------- 7. serving: batch within memory and a token rate
def _serve_visible() -> list:
    rows = datasheets()
    return [
        {"model": model("llama3_70b", 2, 2), "row": rows["h200_sxm"], "context": 8192, "target_tokens_per_s": 60.0},
        {"model": model("llama3_8b", 2, 2), "row": rows["h100_sxm"], "context": 128, "target_tokens_per_s": 65000.0},
        {"model": model("llama3_8b", 2, 2), "row": rows["a100_sxm_80gb"], "context": 32768, "target_tokens_per_s": 300.0},
        {"model": model("llama3_8b", 2, 2), "row": rows["a100_sxm_80gb"], "context": 32768, "target_tokens_per_s": 420.0},
        {"model": model("llama3_70b", 2, 2), "row": rows["h100_sxm"], "context": 4096, "target_tokens_per_s": 10.0},
    ]


def _serve_answer(fn, case) -> dict:
    found = _as_dict(fn(dict(case["model"]), dict(case["row"]), case["context"], case["target_tokens_per_s"]),
                     SERVE_KEYS)
    return {k: int(v) if isinstance(v, float) and v.is_integer() else v for k, v in found.items()}


def _serve_score(case, answer, want) -> list[Part]:
    text = f"{case['model']['name']} on {case['row']['device']}, context {case['context']}, " \
           f"{case['target_tokens_per_s']:g} tokens/s"
    return _parts(text, want, answer, SERVE_KEYS)


TASKS = {
    "intensity": Task(rule=_m("rule.intensity"), central=("output_not_counted", "elements_not_bytes"),
                      title=_m("title.intensity"), answer=_intensity_answer, score=_intensity_score,
                      visible=_intensity_visible, kind="recall", level="warm-up",
                      mistakes=("output_not_counted", "fma_as_one_flop", "elements_not_bytes")),
    "roofline": Task(rule=_m("rule.roofline"), central=("sparse_as_dense", "star_without_footnote"),
                     title=_m("title.roofline"), answer=_roofline_answer, score=_roofline_score,
                     visible=_roofline_visible, kind="transfer", level="core",
                     mistakes=("sparse_as_dense", "star_without_footnote", "tb_as_gb", "above_the_roof",
                               "tie_is_memory")),
    "fusion": Task(rule=_m("rule.fusion"), central=("fused_keeps_intermediates", "fused_writes_intermediates"),
                   title=_m("title.fusion"), answer=_fusion_answer, score=_fusion_score, visible=_fusion_visible,
                   kind="transfer", level="core",
                   mistakes=("fused_keeps_intermediates", "fused_writes_intermediates", "read_per_use",
                             "broadcast_as_full", "output_from_first_operand", "unused_input_read",
                             "writes_left_out")),
    "decode": Task(rule=_m("rule.decode"), central=("window_ignored", "window_on_every_layer"),
                   title=_m("title.decode"), answer=_decode_answer, score=_decode_score, visible=_decode_visible,
                   kind="transfer", level="core",
                   mistakes=("window_ignored", "window_on_every_layer", "window_longer_than_context", "query_heads",
                             "k_without_v", "kv_of_one_sequence", "one_token_per_step")),
    "debug": Task(rule=_m("rule.debug"), central=("no_synchronize", "fits_in_cache"),
                  title=_m("title.debug"), answer=_debug_answer, score=_debug_score, visible=_debug_visible,
                  simulated=_debug_device,
                  kind="transfer", level="core",
                  mistakes=("no_synchronize", "no_warm_up", "fits_in_cache", "launch_bound", "buffer_under_4x",
                            "short_sample", "reads_only", "gib")),
    "sweep": Task(rule=_m("rule.sweep"), central=("call_overhead",),
                  title=_m("title.sweep"), answer=_sweep_answer, score=_sweep_score, visible=_sweep_visible,
                  measurement=True, reference=_sweep_reference, rounds=3, kind="recall", level="core",
                  mistakes=("reference_called", "call_overhead", "mb_per_s", "elements_counted")),
    "serve": Task(rule=_m("rule.serve"), central=("weights_only_step", "batch_not_capped"),
                  title=_m("title.serve"), answer=_serve_answer, score=_serve_score, visible=_serve_visible,
                  kind="transfer", level="stretch",
                  mistakes=("gb_not_gib", "above_compute_roof", "weights_only_step", "round_not_floor",
                            "negative_max_batch", "batch_not_capped")),
}
