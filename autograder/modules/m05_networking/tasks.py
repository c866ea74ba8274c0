"""Tasks of module 05 (networking): link arithmetic, all-reduce and all-to-all on a tree of switches, the
smallest bucket for a bus bandwidth, reading an nccl-tests log, a ring all-reduce on real gloo ranks,
fixing an all-reduce benchmark, and how far a data-parallel model scales.

A task's expected answer (``want``) carries, under ``"mistakes"``, what each known wrong answer returns on
the case (``course_answers``' ``MISTAKES``): ``score`` compares and names the mistake it recognises. The
two torch.distributed tasks run the learner's function on separate rank processes through
:mod:`autograder.ranks` (source shipped, so it works with the spawn start method); their mistakes are named
from what the ranks recorded. The measurement's reference is the core's (:func:`autograder.ranks.best_busbw`),
taken by the referee in turns with the learner's.
"""
from __future__ import annotations

import statistics
import time
from typing import Any

from ... import profiles, ranks
from ...checks import referee
from ...checks.core import Part, Task, close
from ...fakes.dist import FakeDist
from ...i18n import Message, msg
from . import logs, tables

RING_TIMEOUT_S = 45.0  # per gloo operation; only a deadlocked answer waits this long
MEASURE_SIZES = [1 << 20, 4 << 20]
SKIPPED = "skipped after an error"  # a rank's record for a tensor it never reached (shown with m05.ring_skipped)
COLLECTIVES = ("all_reduce", "all_reduce_coalesced", "reduce", "broadcast", "all_gather", "all_gather_into_tensor",
               "reduce_scatter", "reduce_scatter_tensor", "all_to_all", "all_to_all_single", "all_gather_object")


def _say(key: str, **values) -> Message:
    return msg(f"m05.{key}", **values)


def _num(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _ok(found: Any, want: Any) -> bool:
    return close(found, want, rel=1e-6, abs_tol=1e-12)


def _fmt(value: Any) -> str:
    value_f = _num(value)
    return repr(value)[:60] if value_f is None else f"{value_f:.6g}"


def _with(text: Message, hint: Message | None) -> Message:
    return text + hint if hint else text


def _part(ok: bool, text: Message, label: str | None = None, mistake: str | None = None, weight: float = 1.0,
          **values) -> Part:
    """A scored part; a failing one that is a known mistake carries that mistake's message."""
    if not ok and mistake:
        text = text + _say(f"mistake.{mistake}", **values)
    return Part(ok, text, weight=weight, mistake=None if ok else mistake,
                label=_say(f"label_{label}") if label else None)


def _known(found: Any, want: dict, same=None) -> str | None:
    """The known mistake whose answer on this case is ``found`` (by ``same(found, theirs)``), if any."""
    same = same or (lambda a, b: a == b or _ok(a, b))
    for name, theirs in want.get("mistakes", {}).items():
        if same(found, theirs) and not same(want["answer"], theirs):
            return name
    return None


def error_hint(error: str) -> Message | None:
    """A hint for the common distributed mistakes behind an error's text (gloo's, torch's)."""
    text = str(error or "")
    if "Default process group has not been initialized" in text:
        return _say("hint_dist_argument")
    if _timed_out(text):
        return _say("hint_deadlock")
    return None


def _timed_out(text: str) -> bool:
    lowered = text.lower()
    return "timed out" in lowered or "timeout" in lowered and ("send" in lowered or "recv" in lowered)


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
        {"link": {"kind": "pcie", "gen": 9, "gt_s": 20.0, "encoding": "128b/132b"}, "count": 4, "bidirectional": False},
        {"link": nvlink[4], "count": 18, "bidirectional": False},
        {"link": nvlink[5], "count": 18, "bidirectional": True},
        {"link": ndr, "count": 1, "bidirectional": False},
        {"link": ndr, "count": 8, "bidirectional": False},
    ]


def _links_answer(learner, case) -> Any:
    try:
        return learner(dict(case["link"]), case["count"], case["bidirectional"])
    except KeyError as exc:  # an encoding looked up in a table of the ones seen so far
        if exc.args and exc.args[0] == case["link"].get("encoding"):
            return {"unknown_encoding": exc.args[0]}
        raise


def _links_score(case, answer, want) -> Part:
    link = case["link"]
    what = f"{link['kind']} {link.get('gen', link.get('name', ''))} ×{case['count']}, " + \
        ("bidirectional" if case["bidirectional"] else "per direction")
    right = want["answer"]
    if isinstance(answer, dict) and "unknown_encoding" in answer:
        text = _say("links_case", case=what, expected=f"{right:.6g}", found="KeyError")
        return _part(False, text, mistake="encoding_table", encoding=answer["unknown_encoding"])
    text = _say("links_case", case=what, expected=f"{right:.6g}", found=_fmt(answer))
    return _part(_ok(answer, right), text, mistake=_known(answer, want))


# ---------------------------------------------------------------- 2. all-reduce and all-to-all on a tree
def _superpod_visible() -> list:
    h100, b200 = tables.superpod("superpod_h100")["levels"], tables.superpod("superpod_b200")["levels"]
    spine_4to1 = [dict(level) for level in b200]
    spine_4to1[2]["links"] = 256  # a quarter of the leaf-to-spine cables: 4:1 oversubscribed
    return [
        {"levels": [{key: level[key] for key in ("name", "gpus", "links", "link_rate", "unit")} for level in h100]},
        {"levels": [{key: level[key] for key in ("name", "gpus", "links", "link_rate", "unit")} for level in spine_4to1]},
        {"levels": [{"name": "node", "gpus": 8, "links": 128, "link_rate": 25, "unit": "GB/s"},
                    {"name": "leaf", "gpus": 64, "links": 64, "link_rate": 400, "unit": "Gb/s"}]},
        {"levels": [{"name": "node", "gpus": 4, "links": 24, "link_rate": 25, "unit": "GB/s"},
                    {"name": "leaf", "gpus": 128, "links": 128, "link_rate": 200, "unit": "Gb/s"},
                    {"name": "spine", "gpus": 2048, "links": 16, "link_rate": 400, "unit": "Gb/s"}]},
    ]


def _superpod_answer(learner, case) -> Any:
    result = learner([dict(level) for level in case["levels"]])
    if not isinstance(result, dict):
        return {"not_a_dict": repr(result)[:80]}
    return {"allreduce_gbs": _num(result.get("allreduce_gbs")), "allreduce_level": str(result.get("allreduce_level")),
            "alltoall_gbs": _num(result.get("alltoall_gbs")), "alltoall_level": str(result.get("alltoall_level"))}


def _superpod_score(case, answer, want) -> list[Part]:
    if "not_a_dict" in answer:
        return [Part(False, _say("superpod_not_dict", found=answer["not_a_dict"]), weight=2)]
    names = "/".join(f"{level['name']}({level['gpus']})" for level in case["levels"])
    parts = []
    for kind in ("allreduce", "alltoall"):
        pick = lambda d: (d.get(f"{kind}_gbs"), d.get(f"{kind}_level"))  # noqa: E731
        mine, right = pick(answer), pick(want["answer"])
        ok = _ok(mine[0], right[0]) and mine[1] == right[1]
        mistake = _known(answer, want, lambda a, b: _ok(pick(a)[0], pick(b)[0]) and pick(a)[1] == pick(b)[1])
        text = _say(f"superpod_{kind}", levels=names, expected=f"{right[0]:.6g} GB/s ({right[1]})",
                    found=f"{_fmt(mine[0])} ({mine[1]})")
        parts.append(_part(ok, text, label=kind, mistake=mistake))
    return parts


# ---------------------------------------------------------------- 3. how big a bucket
def _bucket_visible() -> list:
    return [
        {"n": 8, "alpha_s": 5e-6, "busbw_gbs": 450.0, "nbytes": 25e6, "target": 0.8},
        {"n": 4, "alpha_s": 2e-5, "busbw_gbs": 1.0, "nbytes": 4194304.0, "target": 0.7},
        {"n": 64, "alpha_s": 1.2e-5, "busbw_gbs": 50.0, "nbytes": 1e8, "target": 0.9},
        {"n": 2, "alpha_s": 3e-6, "busbw_gbs": 370.0, "nbytes": 1e6, "target": 0.95},
    ]


def _bucket_answer(learner, case) -> Any:
    result = learner(case["n"], case["alpha_s"], case["busbw_gbs"], case["nbytes"], case["target"])
    if not isinstance(result, dict):
        return {"not_a_dict": repr(result)[:80]}
    size = result.get("min_bytes")
    return {"fraction": _num(result.get("fraction")),
            "min_bytes": size if isinstance(size, int) and not isinstance(size, bool) else _num(size)}


def _bucket_score(case, answer, want) -> list[Part]:
    if "not_a_dict" in answer:
        return [Part(False, _say("bucket_not_dict", found=answer["not_a_dict"]), weight=2)]
    what = f"n={case['n']}, α={case['alpha_s']:.3g} s, β={case['busbw_gbs']:g} GB/s"
    right = want["answer"]
    size = answer["min_bytes"]
    size_ok = isinstance(size, int) and size in right["min_bytes_ok"]
    return [
        _part(_ok(answer["fraction"], right["fraction"]),
              _say("bucket_fraction", case=what, nbytes=f"{case['nbytes']:.4g}", expected=f"{right['fraction']:.4f}",
                   found=_fmt(answer["fraction"])),
              label="fraction", mistake=_known(answer["fraction"], {**want, "answer": right["fraction"],
                                                                   "mistakes": _field(want, "fraction")})),
        _part(size_ok, _say("bucket_size", case=what, target=f"{case['target']:g}", expected=right["min_bytes"],
                            found=_fmt(size)),
              label="min_bytes", mistake=_known(size, {**want, "answer": right["min_bytes"],
                                                        "mistakes": _field(want, "min_bytes")}, lambda a, b: a == b)),
    ]


def _field(want: dict, key: str) -> dict:
    """Each known mistake's value of one field of the answer."""
    return {name: theirs.get(key) for name, theirs in want.get("mistakes", {}).items() if isinstance(theirs, dict)}


# ---------------------------------------------------------------- 4. reading an nccl-tests log
def _read_nccl_visible() -> list:
    published = tables.nccl_log("allreduce_2x8xh100")
    sizes = [2 ** k for k in range(20, 33)]
    return [
        {"log": published["text"], "collective": published["collective"], "nbytes": 2 ** 30, "ranks": 16},
        {"log": logs.modelled_log("all_gather", 8, 1e-5, 360.0, sizes, seed=5, gpus_per_node=None),
         "collective": "all_gather", "nbytes": 2 ** 30, "ranks": 64},
        {"log": logs.modelled_log("all_to_all", 32, 2e-5, 40.0, [2 ** k for k in range(10, 31)], seed=7),
         "collective": "all_to_all", "nbytes": 2 ** 28, "ranks": 8},
    ]


def _read_nccl_answer(learner, case) -> Any:
    result = learner(case["log"], case["collective"], case["nbytes"], case["ranks"])
    if not isinstance(result, dict):
        return {"not_a_dict": repr(result)[:80]}
    count = result.get("ranks_in_log")
    return {"ranks_in_log": count if isinstance(count, int) and not isinstance(count, bool) else _num(count),
            "busbw_gbs": _num(result.get("busbw_gbs")), "seconds": _num(result.get("seconds"))}


def _read_nccl_score(case, answer, want) -> list[Part]:
    if "not_a_dict" in answer:
        return [Part(False, _say("read_not_dict", found=answer["not_a_dict"]), weight=3)]
    first = next((line for line in case["log"].splitlines() if "Collective test starting" in line), case["collective"])
    what = f"{first.split(':')[-1].strip()}, {case['nbytes']:.4g} B on {case['ranks']} ranks"
    right = want["answer"]
    parts = []
    for key, label, unit in (("ranks_in_log", "ranks", ""), ("busbw_gbs", "busbw", " GB/s"), ("seconds", "time", " s")):
        mine = answer[key]
        ok = mine == right[key] if key == "ranks_in_log" else _ok(mine, right[key])
        mistake = _known(mine, {**want, "answer": right[key], "mistakes": _field(want, key)})
        parts.append(_part(ok, _say(f"read_{label}", case=what, expected=f"{right[key]:.6g}{unit}", found=_fmt(mine)),
                           label=label, mistake=mistake))
    return parts


# ---------------------------------------------------------------- 5. ring all-reduce on gloo ranks
def _make_tensor(spec: dict, rank: int):
    """The input of ``rank`` for one tensor case: deterministic, integer-valued for exact dtypes."""
    import torch

    dtype = getattr(torch, spec["dtype"])
    gen = torch.Generator().manual_seed(spec["seed"] * 1009 + rank)
    if dtype in (torch.float32, torch.float64):
        return torch.randn(spec["shape"], generator=gen, dtype=torch.float64).to(dtype)
    return torch.randint(-8, 9, spec["shape"], generator=gen).to(dtype)


def _same(a, b) -> bool:
    import torch

    if a.is_floating_point() and a.dtype in (torch.float32, torch.float64):
        tol = 1e-5 if a.dtype == torch.float32 else 1e-10
        return torch.allclose(a, b, rtol=tol, atol=tol)
    return torch.equal(a, b)


def _diagnose(out, expected, n: int) -> dict:
    """What a wrong result looks like: how many of the n chunks are finished, and whether it is the mean."""
    import torch

    pairs = zip(torch.tensor_split(out.reshape(-1), n), torch.tensor_split(expected.reshape(-1), n))
    done = sum(1 for mine, right in pairs if mine.numel() and _same(mine, right))
    averaged = out.is_floating_point() and out.dtype in (torch.float32, torch.float64) and _same(out * n, expected)
    return {"chunks_done": done, "averaged": bool(averaged)}


def ring_program(learner, specs: list) -> list:
    """Rank side: run the learner's all-reduce on each tensor and compare with dist.all_reduce."""
    import torch
    import torch.distributed as dist

    rank, n = dist.get_rank(), dist.get_world_size()
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
        record = {"used": sorted(used), "error": None, "in_place": True, "averaged": False, "chunks_done": n}
        if not isinstance(out, torch.Tensor) or tuple(out.shape) != tuple(expected.shape) or out.dtype != expected.dtype:
            record.update(match=False, detail=f"{type(out).__name__} {getattr(out, 'dtype', '')} "
                                              f"{tuple(getattr(out, 'shape', ()))}")
        else:
            err = (out.double() - expected.double()).abs().max().item() if out.numel() else 0.0
            record.update(match=_same(out, expected), detail=f"max |error| {err:.3g}", in_place=_same(mine, expected))
            if not record["match"]:
                record.update(_diagnose(out, expected, n))
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
            wrong = [rec for rec in records if not rec.get("match")]
            out.append({"world_size": world_size, "spec": spec, "error": errors[0] if errors else None,
                        "match": all(rec.get("match") for rec in records) and not errors,
                        "used": sorted({u for rec in records for u in rec.get("used", [])}),
                        "detail": next((rec.get("detail") for rec in wrong), ""),
                        "in_place": all(rec.get("in_place", True) for rec in records),
                        "averaged": bool(wrong) and all(rec.get("averaged") for rec in wrong),
                        "chunks_done": min((rec.get("chunks_done", world_size) for rec in records), default=0)})
    return {"results": out}


def _ring_score(case, answer, want) -> list[Part]:
    parts = []
    for res in answer["results"]:
        spec = res["spec"]
        where = f"world_size={res['world_size']}, {spec['dtype']}{spec['shape']}"
        if res["error"] == SKIPPED:
            parts.append(Part(False, _say("ring_skipped", case=where)))
        elif res["error"]:
            deadlock = _timed_out(res["error"])
            parts.append(_part(False, _with(_say("ring_error", case=where, error=res["error"]),
                                            None if deadlock else error_hint(res["error"])),
                               mistake="deadlock" if deadlock else None))
        elif res["used"]:
            parts.append(_part(False, _say("ring_collective", case=where, used=", ".join(res["used"])),
                               mistake="collective"))
        elif not res["match"]:
            mistake = "averaged" if res.get("averaged") else \
                "reduce_scatter_only" if res.get("chunks_done") == 1 and res["world_size"] > 1 else None
            parts.append(_part(False, _say("ring_case", case=where, detail=res["detail"] or "-"), mistake=mistake,
                               n=res["world_size"]))
        else:
            parts.append(_part(res.get("in_place", True), _say("ring_case", case=where, detail=res["detail"] or "-"),
                               mistake="not_in_place"))
    return parts


# ---------------------------------------------------------------- 6. fixing an all-reduce benchmark
class FirstCallDist(FakeDist):
    """The fake dist whose first all_reduce of each size also pays ``setup_s``, as a real library's first call does."""

    def __init__(self, world_size: int, alpha_s: float, bytes_per_s: float, setup_s: float):
        super().__init__(world_size, alpha_s, bytes_per_s)
        self.setup_s, self._seen = setup_s, set()

    def all_reduce(self, tensor, op=None, group=None, async_op=False):
        nbytes = tensor.numel() * tensor.element_size()
        if nbytes not in self._seen:
            self._seen.add(nbytes)
            time.sleep(self.setup_s)
        return super().all_reduce(tensor, op=op, group=group, async_op=async_op)


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
    return [{"kind": "fake", "sizes": [1 << 20, 4 << 20], "world_size": 4, "alpha_s": 0.001, "bytes_per_s": 5e8,
             "setup_s": 0.3},
            {"kind": "ranks", "sizes": MEASURE_SIZES, "world_size": 4}]


def _measure_answer(learner, case) -> dict:
    if case["kind"] == "fake":
        fake = FirstCallDist(case["world_size"], case["alpha_s"], case["bytes_per_s"], case["setup_s"])
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
        if _timed_out(str(bad)):
            return [_part(False, text, mistake="rank_counts", weight=len(sizes))]
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
    n_sizes, n = len(case["sizes"]), case["world_size"]
    if not isinstance(values, list) or len(values) != n_sizes:
        return [Part(False, _say("measure_not_list", n=n_sizes, found=str(values)), weight=n_sizes)]
    too_big = answer.get("largest_call", 0) > max(case["sizes"])
    parts = []
    for size, value, expected in zip(case["sizes"], values, want):
        ok = value is not None and 0.75 * expected <= value <= 1.3 * expected
        text = _say("measure_fake", size=size, n=n, expected=f"{expected:.4g}", found=_fmt(value))
        mistake = None if ok else _measure_mistake(value / expected if value else 0.0, n, too_big)
        parts.append(_part(ok, text, mistake=mistake, setup=case["setup_s"]) if mistake or ok else
                     Part(False, _with(text, _ratio_hint_loose(value, expected))))
    return parts


def _measure_mistake(ratio: float, n: int, too_big: bool) -> str | None:
    """The known mistake behind a fake-dist value ``ratio`` times the exact busbw."""
    if too_big:
        return "elements"
    if 0.8 <= ratio * 2 * (n - 1) / n <= 1.25:
        return "algbw"
    return "no_warmup" if 0 < ratio < 0.75 else None


def _ratio_hint_loose(value, want: float) -> Message | None:
    if value is None or not want:
        return None
    ratio = value / want
    for target, key in ((1e9, "mistake.units"), (1e-9, "mistake.units")):
        if 0.8 * target <= ratio <= 1.25 * target:
            return _say(key)
    return None


# ---------------------------------------------------------------- 7. how far a data-parallel model scales
def _system(name: str, node_id: str, mfu: float, in_network: bool) -> dict:
    """A cluster of ``node_id`` nodes (data/nodes.yaml) with its GPU's dense bf16 peak and NVLink from its profile."""
    node = next(n for n in tables.nodes() if n["id"] == node_id)
    prof = profiles.get(node["profile"])
    return {"name": name, "bf16_tflops": prof.peak("bf16"), "mfu": mfu, "gpus_per_node": node["gpus"],
            "nvlink_gbs": prof.get("interconnect.nvlink_links") * prof.get("interconnect.nvlink_gbs_per_link_per_dir"),
            "nic_gbs": node["nics"] * node["nic_gbit_s"] / 8 / node["gpus"], "in_network": in_network}


def _plan_visible() -> list:
    a100 = _system("DGX A100", "dgx_a100", 0.45, False)
    h100 = _system("DGX H100", "dgx_h100", 0.4, False)
    h100_sharp = _system("DGX H100 + NVLS/SHARP", "dgx_h100", 0.4, True)
    b200 = _system("DGX B200", "dgx_b200", 0.4, False)
    nvl72 = _system("GB200 NVL72", "gb200_nvl72", 0.4, True)
    return [
        {"job": {"params": 7e9, "tokens": 2 ** 22, "target_s": 1.5, "max_gpus": 4096}, "systems": [a100, h100, b200, nvl72]},
        {"job": {"params": 7e9, "tokens": 2 ** 18, "target_s": 0.1, "max_gpus": 4096}, "systems": [h100, h100_sharp]},
        {"job": {"params": 70e9, "tokens": 2 ** 19, "target_s": 1.0, "max_gpus": 4096}, "systems": [h100, b200, nvl72]},
        {"job": {"params": 1.3e9, "tokens": 2 ** 20, "target_s": 0.12, "max_gpus": 1024}, "systems": [a100, h100]},
        {"job": {"params": 70e9, "tokens": 2 ** 18, "target_s": 0.4, "max_gpus": 4096}, "systems": [b200]},
    ]


def _plan_answer(learner, case) -> Any:
    result = learner(dict(case["job"]), [dict(system) for system in case["systems"]])
    if result is None:
        return None
    if not isinstance(result, dict):
        return {"not_a_dict": repr(result)[:80]}
    gpus = result.get("gpus")
    return {"system": str(result.get("system")), "gpus": gpus if isinstance(gpus, int) and not isinstance(gpus, bool) else
            _num(gpus), "step_s": _num(result.get("step_s"))}


def _plan_score(case, answer, want) -> list[Part]:
    job = case["job"]
    what = f"{job['params']:.3g} params, {job['tokens']} tokens/step, ≤ {job['target_s']:g} s, " + \
        ", ".join(s["name"] for s in case["systems"])
    right = want["answer"]
    pick = lambda d: None if d is None else (d.get("system"), d.get("gpus"))  # noqa: E731
    mistake = None if answer is None else _known(answer, want, lambda a, b: pick(a) == pick(b))  # None says too little
    shown = lambda d: "None" if d is None else f"{d.get('system')} × {d.get('gpus')}"  # noqa: E731
    if right is None or answer is None or "not_a_dict" in answer:
        ok = answer == right
        return [_part(ok, _say("plan_choice", case=what, expected=shown(right), found=shown(answer)), label="choice",
                      mistake=mistake, weight=3)]
    choice_ok = pick(answer) == pick(right)
    return [_part(choice_ok, _say("plan_choice", case=what, expected=shown(right), found=shown(answer)), label="choice",
                  mistake=mistake, weight=2),
            _part(_ok(answer["step_s"], right["step_s"]),
                  _say("plan_step", case=what, expected=f"{right['step_s']:.4g}", found=_fmt(answer["step_s"])),
                  label="step", mistake=None if choice_ok else mistake)]


TASKS = {
    "links": Task(title=_say("title_links"), answer=_links_answer, score=_links_score, visible=_links_visible,
                  kind="recall", level="warm-up", mistakes=("direction", "bits", "encoding", "encoding_table")),
    "superpod": Task(title=_say("title_superpod"), answer=_superpod_answer, score=_superpod_score,
                     visible=_superpod_visible, kind="transfer", level="core",
                     mistakes=("per_gpu_allreduce", "alltoall_like_allreduce", "alltoall_every_level", "bits",
                               "tie_upper")),
    "bucket": Task(title=_say("title_bucket"), answer=_bucket_answer, score=_bucket_score, visible=_bucket_visible,
                   kind="transfer", level="core", mistakes=("alpha_once", "algbw_fraction", "units", "round_down")),
    "read_nccl": Task(title=_say("title_read_nccl"), answer=_read_nccl_answer, score=_read_nccl_score,
                      visible=_read_nccl_visible, kind="transfer", level="core",
                      mistakes=("avg_line", "algbw_column", "allreduce_factor", "time_with_algbw", "time_without_factor")),
    "ring": Task(title=_say("title_ring"), answer=_ring_answer, score=_ring_score, visible=_ring_visible,
                 hint=error_hint, kind="recall", level="core",
                 mistakes=("collective", "reduce_scatter_only", "averaged", "not_in_place", "deadlock")),
    "measure": Task(title=_say("title_measure"), answer=_measure_answer, score=_measure_score,
                    visible=_measure_visible, measurement=True, reference=_measure_reference, rounds=3,
                    hint=error_hint, kind="transfer", level="core",
                    mistakes=("algbw", "elements", "no_warmup", "rank_counts")),
    "plan": Task(title=_say("title_plan"), answer=_plan_answer, score=_plan_score, visible=_plan_visible,
                 kind="transfer", level="stretch",
                 mistakes=("compute_only", "no_overlap", "nvlink_beyond_node", "one_nic", "ring_everywhere",
                           "partial_nodes")),
}
