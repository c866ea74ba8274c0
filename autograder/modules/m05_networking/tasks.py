"""Tasks of module 05 (networking): link arithmetic, SuperPod levels, collective cost models,
bus bandwidth, a ring all-reduce on real gloo ranks, a bus-bandwidth measurement, and the
data-parallel roofline.

The two torch.distributed tasks run the learner's function on separate rank processes
through :mod:`autograder.ranks` (source shipped, so it works with the spawn start
method). The rank-side programs below (``ring_program``, ``busbw_program``) are
importable, which is all the ranks need; the measurement's reference is the core's
(:func:`autograder.ranks.best_busbw`), taken by the referee in turns with the learner's.
"""
from __future__ import annotations

import math
import statistics
from typing import Any

from ... import ranks
from ...checks import referee
from ...checks.core import Part, Task, close
from ...fakes.dist import FakeDist
from ...i18n import Message, msg
from . import tables

RING_TIMEOUT_S = 45.0  # per gloo operation; only a deadlocked answer waits this long
MEASURE_SIZES = [1 << 20, 4 << 20]
SKIPPED = "skipped after an error"  # a rank's record for a tensor it never reached (shown with m05.ring_skipped)
COLLECTIVES = ("all_reduce", "all_reduce_coalesced", "reduce", "broadcast", "all_gather", "all_gather_into_tensor",
               "reduce_scatter", "reduce_scatter_tensor", "all_to_all", "all_to_all_single", "all_gather_object")


def _say(key: str, **values) -> Message:
    return msg(f"m05.{key}", **values)


def _num(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _ok(found: Any, want: float) -> bool:
    return close(found, want, rel=1e-6, abs_tol=1e-12)


def _fmt(value: Any) -> str:
    value_f = _num(value)
    return repr(value)[:60] if value_f is None else f"{value_f:.6g}"


def _with(text: Message, hint: Message | None) -> Message:
    return text + hint if hint else text


def error_hint(error: str) -> Message | None:
    """A hint for the common distributed mistakes behind an error's text (gloo's, torch's)."""
    text = str(error or "")
    if "Default process group has not been initialized" in text:
        return _say("hint_dist_argument")
    lowered = text.lower()
    if "timed out" in lowered or "timeout" in lowered and ("send" in lowered or "recv" in lowered):
        return _say("hint_deadlock")
    return None


def _ratio_hint(found: Any, want: float, hints: dict[float, str]) -> Message | None:
    """A hint when ``found / want`` is one of the typical factors of a unit mistake."""
    value = _num(found)
    if value is None or want == 0 or value == 0:
        return None
    for factor, key in hints.items():
        if math.isclose(value / want, factor, rel_tol=1e-3):
            return _say(key)
    return None


# ---------------------------------------------------------------- 1. link arithmetic
def _links_visible() -> list:
    pcie = {row["gen"]: row for row in tables.pcie_links()}
    nvlink = {row["gen"]: row for row in tables.nvlink_links()}
    ndr = next(row for row in tables.network_links() if row["name"].endswith("NDR"))
    return [
        {"link": pcie[4], "count": 16, "bidirectional": False},
        {"link": pcie[4], "count": 16, "bidirectional": True},
        {"link": pcie[5], "count": 16, "bidirectional": False},
        {"link": pcie[2], "count": 1, "bidirectional": False},
        {"link": pcie[6], "count": 16, "bidirectional": True},
        {"link": nvlink[4], "count": 18, "bidirectional": False},
        {"link": nvlink[5], "count": 18, "bidirectional": True},
        {"link": ndr, "count": 1, "bidirectional": False},
        {"link": ndr, "count": 8, "bidirectional": False},
    ]


def _links_answer(learner, case) -> Any:
    return learner(dict(case["link"]), case["count"], case["bidirectional"])


def _links_score(case, answer, want) -> Part:
    link = case["link"]
    what = f"{link['kind']} {link.get('gen', link.get('name', ''))} ×{case['count']}, " + \
        ("bidirectional" if case["bidirectional"] else "per direction")
    text = _say("links_case", case=what, expected=f"{want:.6g}", found=_fmt(answer))
    if _ok(answer, want):
        return Part(True, text)
    hint = _ratio_hint(answer, want, {2.0: "hint_direction", 0.5: "hint_direction", 8.0: "hint_bits", 0.125: "hint_bits"})
    line_rate = link.get("gt_s", 0) / 8 * case["count"] * (2 if case["bidirectional"] else 1)  # no encoding taken out
    if hint is None and link["kind"] == "pcie" and line_rate != want and _ok(answer, line_rate):
        hint = _say("hint_encoding")
    return Part(False, _with(text, hint))


# ---------------------------------------------------------------- 2. SuperPod levels
def _superpod_visible() -> list:
    return [{"levels": tables.superpod("superpod_h100")["levels"]},
            {"levels": tables.superpod("superpod_seed")["levels"]}]


def _superpod_answer(learner, case) -> Any:
    result = learner([dict(level) for level in case["levels"]])
    if not isinstance(result, dict):
        return {"not_a_dict": repr(result)[:80]}
    per_gpu = result.get("per_gpu_gbs")
    return {"per_gpu_gbs": [_num(v) for v in per_gpu] if isinstance(per_gpu, (list, tuple)) else repr(per_gpu)[:80],
            "allreduce_gbs": _num(result.get("allreduce_gbs")), "bottleneck": str(result.get("bottleneck"))}


def _superpod_score(case, answer, want) -> list[Part]:
    if "not_a_dict" in answer:
        return [Part(False, _say("superpod_not_dict", found=answer["not_a_dict"]), weight=3)]
    names = "/".join(level["name"] for level in case["levels"])
    found = answer["per_gpu_gbs"]
    per_ok = isinstance(found, list) and len(found) == len(want["per_gpu_gbs"]) and \
        all(_ok(f, w) for f, w in zip(found, want["per_gpu_gbs"]))
    exp_list = ", ".join(f"{v:.4g}" for v in want["per_gpu_gbs"])
    found_list = ", ".join(_fmt(v) for v in found) if isinstance(found, list) else str(found)
    return [
        Part(per_ok, _say("superpod_per_gpu", levels=names, expected=exp_list, found=found_list)),
        Part(_ok(answer["allreduce_gbs"], want["allreduce_gbs"]),
             _say("superpod_allreduce", levels=names, expected=f"{want['allreduce_gbs']:.6g}",
                  found=_fmt(answer["allreduce_gbs"]))),
        Part(answer["bottleneck"] == want["bottleneck"],
             _say("superpod_bottleneck", levels=names, expected=want["bottleneck"], found=answer["bottleneck"])),
    ]


# ---------------------------------------------------------------- 3. cost models
def _cost_visible() -> list:
    return [
        # seed 004: AllGather of bf16[1024, 16384] on 8 x H100 (450 GB/s per direction)
        {"op": "all_gather", "nbytes": 1024 * 16384 * 2, "n": 8, "alpha_s": 0.0, "bw_gbs": 450.0},
        {"op": "reduce_scatter", "nbytes": 1024 * 16384 * 2, "n": 8, "alpha_s": 0.0, "bw_gbs": 450.0},
        # seed 001: 10B fp32 gradients (40 GB) all-reduced by 4 GPUs over PCIe 4.0 x16
        {"op": "all_reduce", "nbytes": 40e9, "n": 4, "alpha_s": 0.0, "bw_gbs": 16 * 128 / 130 * 16 / 8},
        {"op": "all_reduce", "nbytes": 1e9, "n": 8, "alpha_s": 5e-6, "bw_gbs": 450.0},
        {"op": "all_reduce_in_network", "nbytes": 1e9, "n": 8, "alpha_s": 5e-6, "bw_gbs": 450.0},
        {"op": "all_reduce", "nbytes": 4096, "n": 8, "alpha_s": 5e-6, "bw_gbs": 450.0},
        {"op": "all_to_all", "nbytes": 64e6, "n": 8, "alpha_s": 5e-6, "bw_gbs": 450.0},
        {"op": "all_reduce", "nbytes": 1e6, "n": 1, "alpha_s": 5e-6, "bw_gbs": 450.0},
    ]


def _cost_answer(learner, case) -> Any:
    return learner(case["op"], case["nbytes"], case["n"], case["alpha_s"], case["bw_gbs"])


def _cost_score(case, answer, want) -> Part:
    what = f"{case['op']}, {case['nbytes']:.4g} B, n={case['n']}, α={case['alpha_s']:.3g} s, {case['bw_gbs']:.4g} GB/s"
    ok = _ok(answer, want)
    hint = None
    if not ok and case["n"] > 1:
        hint = _ratio_hint(answer, want, {case["n"] / (case["n"] - 1): "hint_ring_factor",
                                           (case["n"] - 1) / case["n"]: "hint_ring_factor",
                                           2.0: "hint_allreduce_twice", 0.5: "hint_allreduce_twice",
                                           1e9: "hint_units", 1e-9: "hint_units"})
    return Part(ok, _with(_say("cost_case", case=what, expected=f"{want:.6g}", found=_fmt(answer)), hint))


# ---------------------------------------------------------------- 4. bus bandwidth
def _busbw_visible() -> list:
    return [
        {"op": "all_reduce", "nbytes": 1 << 30, "seconds": 0.005, "n": 8},
        {"op": "all_gather", "nbytes": 1 << 30, "seconds": 0.003, "n": 8},
        {"op": "reduce_scatter", "nbytes": 1 << 28, "seconds": 0.001, "n": 4},
        {"op": "broadcast", "nbytes": 1 << 28, "seconds": 0.001, "n": 4},
        {"op": "all_to_all", "nbytes": 1 << 26, "seconds": 0.0002, "n": 16},
        {"op": "send_recv", "nbytes": 1 << 20, "seconds": 0.0001, "n": 2},
    ]


def _busbw_answer(learner, case) -> Any:
    return learner(case["op"], case["nbytes"], case["seconds"], case["n"])


def _busbw_score(case, answer, want) -> Part:
    what = f"{case['op']}, {case['nbytes']} B in {case['seconds']:.3g} s, n={case['n']}"
    ok = _ok(answer, want)
    hint = None
    if not ok and _num(answer) is not None and want:
        if math.isclose(float(answer), case["nbytes"] / case["seconds"] / 1e9, rel_tol=1e-6):
            hint = _say("hint_algbw")
        else:
            hint = _ratio_hint(answer, want, {2 ** 30 / 1e9: "hint_gib", 1e9 / 2 ** 30: "hint_gib"})
    return Part(ok, _with(_say("busbw_case", case=what, expected=f"{want:.6g}", found=_fmt(answer)), hint))


# ---------------------------------------------------------------- 5. ring all-reduce on gloo ranks
def _make_tensor(spec: dict, rank: int):
    """The input of ``rank`` for one tensor case: deterministic, integer-valued for exact dtypes."""
    import torch

    dtype = getattr(torch, spec["dtype"])
    gen = torch.Generator().manual_seed(spec["seed"] * 1009 + rank)
    if dtype in (torch.float32, torch.float64):
        return torch.randn(spec["shape"], generator=gen, dtype=torch.float64).to(dtype)
    return torch.randint(-8, 9, spec["shape"], generator=gen).to(dtype)


def ring_program(learner, specs: list) -> list:
    """Rank side: run the learner's all-reduce on each tensor and compare with dist.all_reduce."""
    import torch
    import torch.distributed as dist

    rank = dist.get_rank()
    real = {name: getattr(dist, name) for name in COLLECTIVES if hasattr(dist, name)}
    used: set[str] = set()

    def spy(name):
        def call(*args, **kwargs):
            used.add(name)
            return real[name](*args, **kwargs)
        return call

    results = []
    for spec in specs:
        x = _make_tensor(spec, rank)
        expected = x.clone()
        mine = x.clone()
        used.clear()
        for name in real:
            setattr(dist, name, spy(name))
        try:
            out = learner(mine)
        except Exception as exc:  # report and stop: the other ranks may be waiting on this one
            results.append({"error": f"{type(exc).__name__}: {exc}"[:300]})
            break
        finally:
            for name, fn in real.items():
                setattr(dist, name, fn)
        out = mine if out is None else out
        real["all_reduce"](expected)
        record = {"used": sorted(used), "error": None}
        if not isinstance(out, torch.Tensor) or tuple(out.shape) != tuple(expected.shape) or out.dtype != expected.dtype:
            record.update(match=False, detail=f"{type(out).__name__} {getattr(out, 'dtype', '')} "
                                              f"{tuple(getattr(out, 'shape', ()))}")
        else:
            if out.is_floating_point() and out.dtype in (torch.float32, torch.float64):
                tol = 1e-5 if out.dtype == torch.float32 else 1e-10
                match = torch.allclose(out, expected, rtol=tol, atol=tol)
            else:
                match = torch.equal(out, expected)
            err = (out.double() - expected.double()).abs().max().item() if out.numel() else 0.0
            record.update(match=bool(match), detail=f"max |error| {err:.3g}")
        results.append(record)
    return results


def _ring_visible() -> list:
    specs = [{"shape": [10], "dtype": "float32", "seed": 1}, {"shape": [13], "dtype": "int64", "seed": 2},
             {"shape": [7], "dtype": "bfloat16", "seed": 3}, {"shape": [3], "dtype": "float64", "seed": 4}]
    return [{"world_sizes": [2, 4], "tensors": specs}]


def _stub_first(learner, *args) -> None:
    """Raise NotImplementedError at once for an unfinished answer, before starting any rank."""
    try:
        learner(*args)
    except NotImplementedError:
        raise
    except Exception:  # a real answer needs a process group; the ranks will run it
        pass


def _ring_answer(learner, case) -> dict:
    import torch

    _stub_first(learner, torch.zeros(4))
    groups = ranks.run(f"{__name__}:ring_program", [case["tensors"]], case["world_sizes"],
                       learner=learner, timeout_s=RING_TIMEOUT_S)
    out = []
    for world_size, results in zip(case["world_sizes"], groups):
        for i, spec in enumerate(case["tensors"]):
            records = [r[i] if i < len(r) else {"error": SKIPPED} for r in results]
            errors = sorted((rec["error"] for rec in records if rec.get("error")), key=lambda e: e == SKIPPED)
            out.append({"world_size": world_size, "spec": spec, "error": errors[0] if errors else None,
                        "match": all(rec.get("match") for rec in records) and not errors,
                        "used": sorted({u for rec in records for u in rec.get("used", [])}),
                        "detail": next((rec.get("detail") for rec in records if not rec.get("match")), "")})
    return {"results": out}


def _ring_score(case, answer, want) -> list[Part]:
    parts = []
    for res in answer["results"]:
        spec = res["spec"]
        where = f"world_size={res['world_size']}, {spec['dtype']}{spec['shape']}"
        if res["error"] == SKIPPED:
            parts.append(Part(False, _say("ring_skipped", case=where)))
        elif res["error"]:
            parts.append(Part(False, _with(_say("ring_error", case=where, error=res["error"]), error_hint(res["error"]))))
        elif res["used"]:
            parts.append(Part(False, _say("ring_collective", case=where, used=", ".join(res["used"]))))
        else:
            parts.append(Part(bool(res["match"]), _say("ring_case", case=where, detail=res["detail"] or "-")))
    return parts


# ---------------------------------------------------------------- 6. measuring bus bandwidth
def busbw_program(learner, sizes: list, repeats: int = 2) -> dict:
    """Rank side of one round: the learner's measurement, the best of ``repeats`` (contention only slows a run)."""
    import torch.distributed as dist

    world = dist.get_world_size()
    mine: list = []
    for _ in range(repeats):
        try:
            values = learner(dist, list(sizes), world)
        except Exception as exc:
            return {"learner": f"{type(exc).__name__}: {exc}"[:300]}
        if not isinstance(values, (list, tuple)) or len(values) != len(sizes):
            return {"learner": repr(values)[:80]}
        mine.append([float(v) for v in values])
    return {"learner": [max(col) for col in zip(*mine)]}


def _measure_visible() -> list:
    return [{"kind": "fake", "sizes": [1 << 20, 4 << 20], "world_size": 4, "alpha_s": 0.001, "bytes_per_s": 5e8},
            {"kind": "ranks", "sizes": MEASURE_SIZES, "world_size": 4}]


def _measure_answer(learner, case) -> dict:
    if case["kind"] == "fake":
        fake = FakeDist(case["world_size"], case["alpha_s"], case["bytes_per_s"])
        values = learner(fake, list(case["sizes"]), case["world_size"])
        return {"values": [_num(v) for v in values] if isinstance(values, (list, tuple)) else repr(values)[:80],
                "largest_call": max(fake.sizes, default=0)}
    _stub_first(learner, FakeDist(case["world_size"], 0.0, 1e12), [8], case["world_size"])
    return ranks.run(f"{__name__}:busbw_program", [case["sizes"]], [case["world_size"]],
                     learner=learner, timeout_s=60)[0][0]


def _measure_reference(case, answer) -> dict | None:
    """gloo's own all_reduce on as many ranks, started by the referee (real ranks only)."""
    if case["kind"] == "fake":
        return None
    return {"busbw": ranks.run(ranks.best_busbw, [case["sizes"]], [case["world_size"]], timeout_s=60)[0][0]}


def _one_call_seconds(sizes: list, busbw: list, n: int) -> float:
    """Seconds one all_reduce of each size takes at the reported bus bandwidths."""
    return sum(ranks.bus_bandwidth("all_reduce", s, 1.0, n) / b for s, b in zip(sizes, busbw))


def _measure_score(case, answer, want) -> list[Part]:
    found = referee.rounds(answer)
    if case["kind"] == "fake":
        return _measure_fake_score(case, found[0] if found else {"values": None}, want)
    from ...expectations import expect

    sizes, n = case["sizes"], case["world_size"]
    bad = next((r.get("learner") for r in found if not isinstance(r.get("learner"), list)
                or len(r["learner"]) != len(sizes) or not all(isinstance(v, (int, float)) and v > 0 for v in r["learner"])),
               None) if found else "-"
    if bad is not None:
        text = _say("measure_not_list", n=len(sizes), found=str(bad))
        return [Part(False, _with(text, error_hint(str(bad))), weight=len(sizes))]
    why = referee.unmeasured(answer, lambda r: _one_call_seconds(sizes, r["learner"], n))
    if why:
        key = "measure.not_observed" if why in ("no rounds", "not observed") else "measure.not_measured"
        return [Part(False, msg(key, what=_say("title_measure"), why=why), weight=len(sizes))]
    error = referee.reference_error(answer)
    if error:
        return [Part(True, msg("measure.reference_failed", what=_say("title_measure"), error=error), weight=0)]
    references = referee.observed(answer)["reference"]
    parts = []
    for i, size in enumerate(sizes):
        pairs = [(r["learner"][i] / ref["busbw"][i], r["learner"][i], ref["busbw"][i])
                 for r, ref in zip(found, references) if isinstance(ref, dict) and ref.get("busbw")]
        if not pairs:
            parts.append(Part(False, msg("measure.not_observed", what=_say("title_measure"), why="no reference")))
            continue
        ratio, value, reference = (statistics.median(p[k] for p in pairs) for k in range(3))
        band = expect("allreduce_busbw", reference=reference)
        what = _say("measure_what", size=size / 2 ** 20, n=n, reference=f"{reference:.3g}")
        parts.append(band.part(ratio * reference, what))
    return parts


def _measure_fake_score(case, answer, want) -> list[Part]:
    values = answer["values"]
    n_sizes = len(case["sizes"])
    if not isinstance(values, list) or len(values) != n_sizes:
        return [Part(False, _say("measure_not_list", n=n_sizes, found=str(values)), weight=n_sizes)]
    parts = []
    for size, value, expected in zip(case["sizes"], values, want):
        ok = value is not None and 0.75 * expected <= value <= 1.3 * expected
        text = _say("measure_fake", size=size, n=case["world_size"], expected=f"{expected:.4g}", found=_fmt(value))
        parts.append(Part(ok, text if ok else _with(text, _ratio_hint_loose(value, expected, case["world_size"]))))
    return parts


def _ratio_hint_loose(value, want: float, n: int) -> Message | None:
    if value is None or not want:
        return None
    ratio = value / want
    factor = ranks.BUSBW_FACTORS["all_reduce"](n)
    for target, key in ((1 / factor, "hint_algbw"), (0.25, "hint_elements"), (4.0, "hint_elements"),
                        (1e9, "hint_units"), (1e-9, "hint_units")):
        if 0.8 * target <= ratio <= 1.25 * target:
            return _say(key)
    return _say("hint_fake_time") if ratio < 0.75 else None


# ---------------------------------------------------------------- 7. data-parallel roofline
def _batch_visible() -> list:
    return [{"profile": "h100_sxm", "strategy": "dp", "in_network": True, "bw_gbs": None},
            {"profile": "h100_sxm", "strategy": "dp", "in_network": True, "bw_gbs": 400.0},
            {"profile": "h100_sxm", "strategy": "fsdp", "in_network": True, "bw_gbs": 400.0},
            {"profile": "b200", "strategy": "dp", "in_network": True, "bw_gbs": None},
            {"profile": "a100_sxm_80gb", "strategy": "dp", "in_network": False, "bw_gbs": None}]


def _batch_answer(learner, case) -> Any:
    if case["bw_gbs"] is None:
        return learner(case["profile"], case["strategy"], case["in_network"])
    return learner(case["profile"], case["strategy"], case["in_network"], case["bw_gbs"])


def _batch_score(case, answer, want) -> Part:
    bw = "NVLink" if case["bw_gbs"] is None else f"{case['bw_gbs']:g} GB/s"
    what = f"{case['profile']}, {case['strategy']}, in_network={case['in_network']}, {bw}"
    ok = isinstance(answer, int) and not isinstance(answer, bool) and answer == want
    hint = None
    if not ok and _num(answer) is not None:
        if isinstance(answer, float) and abs(answer - want) < 1:
            hint = _say("hint_ceil")
        else:
            hint = _ratio_hint(round(float(answer)), want, {2.0: "hint_factor_two", 0.5: "hint_factor_two"})
    return Part(ok, _with(_say("batch_case", case=what, expected=want, found=_fmt(answer)), hint))


TASKS = {
    "links": Task(title=_say("title_links"), answer=_links_answer, score=_links_score, visible=_links_visible),
    "superpod": Task(title=_say("title_superpod"), answer=_superpod_answer, score=_superpod_score,
                     visible=_superpod_visible),
    "cost": Task(title=_say("title_cost"), answer=_cost_answer, score=_cost_score, visible=_cost_visible),
    "busbw": Task(title=_say("title_busbw"), answer=_busbw_answer, score=_busbw_score, visible=_busbw_visible),
    "ring": Task(title=_say("title_ring"), answer=_ring_answer, score=_ring_score, visible=_ring_visible,
                 hint=error_hint),
    "measure": Task(title=_say("title_measure"), answer=_measure_answer, score=_measure_score,
                    visible=_measure_visible, measurement=True, reference=_measure_reference, rounds=2,
                    hint=error_hint),
    "batch": Task(title=_say("title_batch"), answer=_batch_answer, score=_batch_score, visible=_batch_visible),
}
