"""Checks of module 05 (networking): link arithmetic, SuperPod levels, collective cost
models, bus bandwidth, a ring all-reduce on real gloo ranks, a bus-bandwidth
measurement, and the data-parallel roofline.

The two torch.distributed tasks run the learner's function on separate rank
processes through :mod:`autograder.m05_ranks` (source shipped, so it works with the
spawn start method). The rank-side programs below (``ring_program``,
``busbw_program``) are importable, which is all the ranks need.
"""
from __future__ import annotations

import math
import statistics
import time
from typing import Any

from ..i18n import Message, msg
from . import referee
from .core import Part, Task

RING_TIMEOUT_S = 45.0  # per gloo operation; only a deadlocked answer waits this long
TIME_OPS = ("all_gather", "reduce_scatter", "all_reduce", "all_reduce_in_network", "all_to_all")
BUSBW_OPS = ("all_gather", "all_reduce", "all_to_all", "broadcast", "reduce", "reduce_scatter", "send_recv")
MEASURE_SIZES = [1 << 20, 4 << 20]
SKIPPED = "skipped after an error"  # a rank's record for a tensor it never reached (shown with m05.ring_skipped)
COLLECTIVES = ("all_reduce", "all_reduce_coalesced", "reduce", "broadcast", "all_gather", "all_gather_into_tensor",
               "reduce_scatter", "reduce_scatter_tensor", "all_to_all", "all_to_all_single", "all_gather_object")


def _say(key: str, **values) -> Message:
    return msg(f"m05.{key}", **values)


def _num(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _close(found: Any, want: float, rel: float = 1e-6) -> bool:
    value = _num(found)
    return value is not None and math.isclose(value, want, rel_tol=rel, abs_tol=1e-12)


def _fmt(value: Any) -> str:
    value_f = _num(value)
    if value_f is None:
        return repr(value)[:60]
    return f"{value_f:.6g}"


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
    ratio = value / want
    for factor, key in hints.items():
        if math.isclose(ratio, factor, rel_tol=1e-3):
            return _say(key)
    return None


# ---------------------------------------------------------------- 1. link arithmetic
def _links_visible() -> list:
    from .. import m05_net

    pcie = {row["gen"]: row for row in m05_net.pcie_links()}
    nvlink = {row["gen"]: row for row in m05_net.nvlink_links()}
    ndr = next(row for row in m05_net.network_links() if row["name"].endswith("NDR"))
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


def _links_hidden(rng) -> list:
    cases = []
    for _ in range(6):
        link = {"kind": "pcie", "gen": rng.randint(1, 9), "gt_s": rng.choice([2.5, 5.0, 8.0, 16.0, 24.0, 48.0, 128.0]),
                "encoding": rng.choice(["8b/10b", "128b/130b", "1b/1b", "64b/66b", "128b/132b"])}
        cases.append({"link": link, "count": rng.choice([1, 2, 4, 8, 16, 32]), "bidirectional": rng.random() < 0.5})
    for _ in range(3):
        link = {"kind": "nvlink", "gen": rng.randint(1, 9), "gbs_per_link_per_dir": rng.choice([20, 25, 50, 100, 12.5])}
        cases.append({"link": link, "count": rng.randint(1, 36), "bidirectional": rng.random() < 0.5})
    for _ in range(3):
        link = {"kind": rng.choice(["infiniband", "ethernet"]), "name": "port", "gbit_s": rng.choice([100, 200, 400, 800, 1600])}
        cases.append({"link": link, "count": rng.randint(1, 16), "bidirectional": rng.random() < 0.5})
    return cases


def _links_answer(learner, case) -> Any:
    return learner(dict(case["link"]), case["count"], case["bidirectional"])


def _links_score(case, answer) -> Part:
    from ..answers import m05

    want = m05.link_gbs(case["link"], case["count"], case["bidirectional"])
    link = case["link"]
    what = f"{link['kind']} {link.get('gen', link.get('name', ''))} ×{case['count']}, " + \
        ("bidirectional" if case["bidirectional"] else "per direction")
    text = _say("links_case", case=what, expected=f"{want:.6g}", found=_fmt(answer))
    hints = {2.0: "hint_direction", 0.5: "hint_direction", 8.0: "hint_bits", 0.125: "hint_bits"}
    if link["kind"] == "pcie":
        hints[1 / m05.encoding_efficiency(link["encoding"])] = "hint_encoding"
    hint = None if _close(answer, want) else _ratio_hint(answer, want, hints)
    return Part(_close(answer, want), text + hint if hint else text)


# ---------------------------------------------------------------- 2. SuperPod levels
def _superpod_visible() -> list:
    from .. import m05_net

    return [{"levels": m05_net.superpod("superpod_h100")["levels"]},
            {"levels": m05_net.superpod("superpod_seed")["levels"]}]


def _superpod_hidden(rng) -> list:
    cases = []
    for _ in range(4):
        gpus = rng.choice([4, 8, 72])
        levels = [{"name": "node", "gpus": gpus, "links": gpus * rng.choice([6, 12, 18]),
                   "link_rate": rng.choice([25, 50]), "unit": "GB/s"}]
        names = ["leaf", "spine", "core"]
        for name in names[: rng.randint(1, 3)]:
            under = rng.choice([2, 4, 8, 16, 32])
            gpus *= under
            oversubscribed = rng.choice([1, 1, 2, 4])
            levels.append({"name": name, "gpus": gpus, "links": gpus // oversubscribed,
                           "link_rate": rng.choice([200, 400, 800]), "unit": "Gb/s"})
        cases.append({"levels": levels})
    return cases


def _superpod_answer(learner, case) -> Any:
    result = learner([dict(level) for level in case["levels"]])
    if not isinstance(result, dict):
        return {"not_a_dict": repr(result)[:80]}
    per_gpu = result.get("per_gpu_gbs")
    return {"per_gpu_gbs": [_num(v) for v in per_gpu] if isinstance(per_gpu, (list, tuple)) else repr(per_gpu)[:80],
            "allreduce_gbs": _num(result.get("allreduce_gbs")), "bottleneck": str(result.get("bottleneck"))}


def _superpod_score(case, answer) -> list[Part]:
    from ..answers import m05

    if "not_a_dict" in answer:
        return [Part(False, _say("superpod_not_dict", found=answer["not_a_dict"]), weight=3)]
    want = m05.superpod(case["levels"])
    names = "/".join(level["name"] for level in case["levels"])
    found = answer["per_gpu_gbs"]
    per_ok = isinstance(found, list) and len(found) == len(want["per_gpu_gbs"]) and \
        all(_close(f, w) for f, w in zip(found, want["per_gpu_gbs"]))
    exp_list = ", ".join(f"{v:.4g}" for v in want["per_gpu_gbs"])
    found_list = ", ".join(_fmt(v) for v in found) if isinstance(found, list) else str(found)
    return [
        Part(per_ok, _say("superpod_per_gpu", levels=names, expected=exp_list, found=found_list)),
        Part(_close(answer["allreduce_gbs"], want["allreduce_gbs"]),
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


def _cost_hidden(rng) -> list:
    return [{"op": rng.choice(TIME_OPS), "nbytes": float(rng.choice([1, 4, 16, 64, 256]) * 10 ** rng.randint(3, 9)),
             "n": rng.choice([2, 3, 4, 8, 16, 72, 256]), "alpha_s": rng.choice([0.0, 2e-6, 5e-6, 2e-5]),
             "bw_gbs": rng.choice([25.0, 50.0, 450.0, 900.0, 31.5])} for _ in range(10)]


def _cost_answer(learner, case) -> Any:
    return learner(case["op"], case["nbytes"], case["n"], case["alpha_s"], case["bw_gbs"])


def _cost_score(case, answer) -> Part:
    from ..answers import m05

    want = m05.comm_time(case["op"], case["nbytes"], case["n"], case["alpha_s"], case["bw_gbs"])
    what = f"{case['op']}, {case['nbytes']:.4g} B, n={case['n']}, α={case['alpha_s']:.3g} s, {case['bw_gbs']:.4g} GB/s"
    ok = _close(answer, want)
    text = _say("cost_case", case=what, expected=f"{want:.6g}", found=_fmt(answer))
    hint = None
    if not ok and case["n"] > 1:
        hint = _ratio_hint(answer, want, {case["n"] / (case["n"] - 1): "hint_ring_factor",
                                           (case["n"] - 1) / case["n"]: "hint_ring_factor",
                                           2.0: "hint_allreduce_twice", 0.5: "hint_allreduce_twice",
                                           1e9: "hint_units", 1e-9: "hint_units"})
    return Part(ok, text + hint if hint else text)


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


def _busbw_hidden(rng) -> list:
    cases = [{"op": rng.choice(BUSBW_OPS), "nbytes": rng.choice([1 << k for k in range(10, 34)]),
              "seconds": rng.choice([1e-5, 3e-4, 2e-3, 0.05, 1.5]), "n": rng.choice([2, 3, 4, 8, 16, 64])}
             for _ in range(10)]
    cases.append({"op": "all_reduce", "nbytes": 1 << 20, "seconds": 0.01, "n": 1})
    return cases


def _busbw_answer(learner, case) -> Any:
    return learner(case["op"], case["nbytes"], case["seconds"], case["n"])


def _busbw_score(case, answer) -> Part:
    from ..answers import m05

    want = m05.bus_bandwidth(case["op"], case["nbytes"], case["seconds"], case["n"])
    what = f"{case['op']}, {case['nbytes']} B in {case['seconds']:.3g} s, n={case['n']}"
    ok = _close(answer, want)
    text = _say("busbw_case", case=what, expected=f"{want:.6g}", found=_fmt(answer))
    algbw = case["nbytes"] / case["seconds"] / 1e9
    hint = None
    if not ok and _num(answer) is not None and want:
        if math.isclose(float(answer), algbw, rel_tol=1e-6):
            hint = _say("hint_algbw")
        else:
            hint = _ratio_hint(answer, want, {2 ** 30 / 1e9: "hint_gib", 1e9 / 2 ** 30: "hint_gib"})
    return Part(ok, text + hint if hint else text)


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


def _ring_case(world_sizes: list, specs: list) -> dict:
    return {"world_sizes": world_sizes, "tensors": specs}


def _ring_visible() -> list:
    specs = [{"shape": [10], "dtype": "float32", "seed": 1}, {"shape": [13], "dtype": "int64", "seed": 2},
             {"shape": [7], "dtype": "bfloat16", "seed": 3}, {"shape": [3], "dtype": "float64", "seed": 4}]
    return [_ring_case([2, 4], specs)]


def _ring_hidden(rng) -> list:
    specs = []
    for dtype in ("float32", "float16", "int32", "float64", "bfloat16"):
        shape = rng.choice([[rng.randint(1, 40)], [rng.randint(2, 6), rng.randint(2, 7)], [rng.randint(50, 300)]])
        specs.append({"shape": shape, "dtype": dtype, "seed": rng.randint(1, 10_000)})
    return [_ring_case([3], specs)]


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

    from .. import m05_ranks

    _stub_first(learner, torch.zeros(4))
    groups = m05_ranks.run("autograder.checks.m05:ring_program", [case["tensors"]], case["world_sizes"],
                           learner=learner, timeout_s=RING_TIMEOUT_S)
    out = []
    for world_size, ranks in zip(case["world_sizes"], groups):
        for i, spec in enumerate(case["tensors"]):
            records = [r[i] if i < len(r) else {"error": SKIPPED} for r in ranks]
            errors = sorted((rec["error"] for rec in records if rec.get("error")), key=lambda e: e == SKIPPED)
            out.append({"world_size": world_size, "spec": spec, "error": errors[0] if errors else None,
                        "match": all(rec.get("match") for rec in records) and not errors,
                        "used": sorted({u for rec in records for u in rec.get("used", [])}),
                        "detail": next((rec.get("detail") for rec in records if not rec.get("match")), "")})
    return {"results": out}


def _ring_score(case, answer) -> list[Part]:
    parts = []
    for res in answer["results"]:
        spec = res["spec"]
        where = f"world_size={res['world_size']}, {spec['dtype']}{spec['shape']}"
        if res["error"] == SKIPPED:
            parts.append(Part(False, _say("ring_skipped", case=where)))
        elif res["error"]:
            hint = error_hint(res["error"])
            text = _say("ring_error", case=where, error=res["error"])
            parts.append(Part(False, text + hint if hint else text))
        elif res["used"]:
            parts.append(Part(False, _say("ring_collective", case=where, used=", ".join(res["used"]))))
        else:
            parts.append(Part(bool(res["match"]), _say("ring_case", case=where, detail=res["detail"] or "-")))
    return parts


# ---------------------------------------------------------------- 6. measuring bus bandwidth
class FakeDist:
    """A one-process stand-in for torch.distributed whose all_reduce takes alpha + bytes/beta seconds."""

    def __init__(self, world_size: int, alpha_s: float, bytes_per_s: float):
        import torch.distributed as dist

        self.ReduceOp = dist.ReduceOp
        self.world_size, self.alpha_s, self.bytes_per_s = world_size, alpha_s, bytes_per_s
        self.sizes: list[int] = []

    def get_rank(self, group=None) -> int:
        return 0

    def get_world_size(self, group=None) -> int:
        return self.world_size

    def is_initialized(self) -> bool:
        return True

    def barrier(self, group=None, async_op=False, device_ids=None):
        return None

    def broadcast(self, tensor, src=0, group=None, async_op=False):
        return None

    def all_reduce(self, tensor, op=None, group=None, async_op=False):
        nbytes = tensor.numel() * tensor.element_size()
        self.sizes.append(nbytes)
        time.sleep(self.alpha_s + nbytes / self.bytes_per_s)
        return _Done() if async_op else None


class _Done:
    def wait(self, timeout=None) -> bool:
        return True

    def is_completed(self) -> bool:
        return True


def expected_fake_busbw(case: dict) -> list[float]:
    n = case["world_size"]
    return [s / (case["alpha_s"] + s / case["bytes_per_s"]) / 1e9 * 2 * (n - 1) / n for s in case["sizes"]]


def reference_busbw(dist, sizes, world_size, budget_s: float = 0.25) -> list[float]:
    """The course's measurement: busbw (GB/s) of ``dist.all_reduce`` on float32 tensors of each size (bytes).

    Lives here, not in ``answers``, because it runs on the ranks of a learner's
    check, where the grader hides ``answers``.
    """
    import torch

    out = []
    for nbytes in sizes:
        x = torch.ones(max(1, int(nbytes) // 4), dtype=torch.float32)
        for _ in range(2):  # warm-up: first calls set up buffers and connections
            dist.all_reduce(x)
        start = time.perf_counter()
        dist.all_reduce(x)
        reps = torch.tensor([max(3, int(budget_s / max(time.perf_counter() - start, 1e-6)))])
        dist.all_reduce(reps, op=dist.ReduceOp.MAX)  # every rank must make the same number of calls
        dist.barrier()
        start = time.perf_counter()
        for _ in range(int(reps.item())):
            dist.all_reduce(x)
        elapsed = torch.tensor([time.perf_counter() - start])
        dist.all_reduce(elapsed, op=dist.ReduceOp.MAX)  # the slowest rank sets the time
        seconds = elapsed.item() / int(reps.item())
        out.append(x.numel() * 4 / seconds / 1e9 * 2 * (world_size - 1) / world_size)
    return out


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


def reference_program(sizes: list, repeats: int = 2) -> list[float]:
    """Rank side of the reference: gloo's own all_reduce, the best of ``repeats``."""
    import torch.distributed as dist

    world = dist.get_world_size()
    runs = [reference_busbw(dist, sizes, world) for _ in range(repeats)]
    return [max(col) for col in zip(*runs)]


def _measure_visible() -> list:
    return [{"kind": "fake", "sizes": [1 << 20, 4 << 20], "world_size": 4, "alpha_s": 0.001, "bytes_per_s": 5e8},
            {"kind": "ranks", "sizes": MEASURE_SIZES, "world_size": 4}]


def _measure_hidden(rng) -> list:
    return [{"kind": "fake", "sizes": sorted(rng.sample([1 << 19, 1 << 20, 2 << 20, 3 << 20, 6 << 20], 2)),
             "world_size": rng.choice([2, 3, 8]), "alpha_s": rng.choice([0.0005, 0.001, 0.002]),
             "bytes_per_s": rng.choice([4e8, 6e8, 1e9])}]


def _measure_answer(learner, case) -> dict:
    if case["kind"] == "fake":
        fake = FakeDist(case["world_size"], case["alpha_s"], case["bytes_per_s"])
        values = learner(fake, list(case["sizes"]), case["world_size"])
        return {"values": [_num(v) for v in values] if isinstance(values, (list, tuple)) else repr(values)[:80],
                "largest_call": max(fake.sizes, default=0)}
    from .. import m05_ranks

    _stub_first(learner, FakeDist(case["world_size"], 0.0, 1e12), [8], case["world_size"])
    ranks = m05_ranks.run("autograder.checks.m05:busbw_program", [case["sizes"]], [case["world_size"]],
                          learner=learner, timeout_s=60)[0]
    return ranks[0]


def _measure_reference(case, answer) -> dict | None:
    """gloo's own all_reduce on as many ranks, started by the referee (real ranks only)."""
    if case["kind"] == "fake":
        return None
    from .. import m05_ranks
    return {"busbw": m05_ranks.run("autograder.checks.m05:reference_program", [case["sizes"]],
                                   [case["world_size"]], timeout_s=60)[0][0]}


def _one_call_seconds(sizes: list, busbw: list, n: int) -> float:
    """Seconds one all_reduce of each size takes at the reported bus bandwidths."""
    return sum(s / (b * 1e9 * n / (2 * (n - 1))) for s, b in zip(sizes, busbw))


def _measure_score(case, answer) -> list[Part]:
    found = referee.rounds(answer)
    if case["kind"] == "fake":
        return _measure_fake_score(case, found[0] if found else {"values": None})
    from ..expectations import expect

    sizes, n = case["sizes"], case["world_size"]
    bad = next((r.get("learner") for r in found if not isinstance(r.get("learner"), list)
                or len(r["learner"]) != len(sizes) or not all(isinstance(v, (int, float)) and v > 0 for v in r["learner"])),
               None) if found else "-"
    if bad is not None:
        text, hint = _say("measure_not_list", n=len(sizes), found=str(bad)), error_hint(str(bad))
        return [Part(False, text + hint if hint else text, weight=len(sizes))]
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


def _measure_fake_score(case, answer) -> list[Part]:
    values = answer["values"]
    n_sizes = len(case["sizes"])
    if not isinstance(values, list) or len(values) != n_sizes:
        return [Part(False, _say("measure_not_list", n=n_sizes, found=str(values)), weight=n_sizes)]
    parts = []
    for size, value, want in zip(case["sizes"], values, expected_fake_busbw(case)):
        ok = value is not None and 0.75 * want <= value <= 1.3 * want
        text = _say("measure_fake", size=size, n=case["world_size"], expected=f"{want:.4g}", found=_fmt(value))
        hint = None if ok else _ratio_hint_loose(value, want, case["world_size"])
        parts.append(Part(ok, text + hint if hint else text))
    return parts


def _ratio_hint_loose(value, want: float, n: int) -> Message | None:
    if value is None or not want:
        return None
    ratio = value / want
    factor = 2 * (n - 1) / n
    for target, key in ((1 / factor, "hint_algbw"), (0.25, "hint_elements"), (4.0, "hint_elements"),
                        (1e9, "hint_units"), (1e-9, "hint_units")):
        if 0.8 * target <= ratio <= 1.25 * target:
            return _say(key)
    return _say("hint_fake_time") if ratio < 0.75 else None


# ---------------------------------------------------------------- 7. data-parallel roofline
def _batch_profiles() -> list[str]:
    from .. import profiles

    return [p.id for p in profiles.all_of("gpu") if p.get("interconnect.nvlink_links") and p.peak("bf16")]


def _batch_visible() -> list:
    return [{"profile": "h100_sxm", "strategy": "dp", "in_network": True, "bw_gbs": None},
            {"profile": "h100_sxm", "strategy": "dp", "in_network": True, "bw_gbs": 400.0},
            {"profile": "h100_sxm", "strategy": "fsdp", "in_network": True, "bw_gbs": 400.0},
            {"profile": "b200", "strategy": "dp", "in_network": True, "bw_gbs": None},
            {"profile": "a100_sxm_80gb", "strategy": "dp", "in_network": False, "bw_gbs": None}]


def _batch_hidden(rng) -> list:
    pool = _batch_profiles()
    return [{"profile": rng.choice(pool), "strategy": rng.choice(["dp", "fsdp"]), "in_network": rng.random() < 0.5,
             "bw_gbs": rng.choice([None, None, 50.0, 100.0, 400.0, 800.0])} for _ in range(8)]


def _batch_answer(learner, case) -> Any:
    if case["bw_gbs"] is None:
        return learner(case["profile"], case["strategy"], case["in_network"])
    return learner(case["profile"], case["strategy"], case["in_network"], case["bw_gbs"])


def _batch_score(case, answer) -> Part:
    from ..answers import m05

    want = m05.min_batch_for_profile(case["profile"], case["strategy"], case["in_network"], case["bw_gbs"])
    bw = "NVLink" if case["bw_gbs"] is None else f"{case['bw_gbs']:g} GB/s"
    what = f"{case['profile']}, {case['strategy']}, in_network={case['in_network']}, {bw}"
    ok = isinstance(answer, int) and not isinstance(answer, bool) and answer == want
    text = _say("batch_case", case=what, expected=want, found=_fmt(answer))
    hint = None
    if not ok and _num(answer) is not None:
        if isinstance(answer, float) and abs(answer - want) < 1:
            hint = _say("hint_ceil")
        else:
            hint = _ratio_hint(round(float(answer)), want, {2.0: "hint_factor_two", 0.5: "hint_factor_two"})
    return Part(ok, text + hint if hint else text)


TASKS = {
    "links": Task(title=_say("title_links"), answer=_links_answer, score=_links_score,
                  visible=_links_visible, hidden=_links_hidden),
    "superpod": Task(title=_say("title_superpod"), answer=_superpod_answer, score=_superpod_score,
                     visible=_superpod_visible, hidden=_superpod_hidden),
    "cost": Task(title=_say("title_cost"), answer=_cost_answer, score=_cost_score,
                 visible=_cost_visible, hidden=_cost_hidden),
    "busbw": Task(title=_say("title_busbw"), answer=_busbw_answer, score=_busbw_score,
                  visible=_busbw_visible, hidden=_busbw_hidden),
    "ring": Task(title=_say("title_ring"), answer=_ring_answer, score=_ring_score,
                 visible=_ring_visible, hidden=_ring_hidden, hint=error_hint),
    "measure": Task(title=_say("title_measure"), answer=_measure_answer, score=_measure_score,
                    visible=_measure_visible, hidden=_measure_hidden, measurement=True,
                    reference=_measure_reference, rounds=2, hint=error_hint),
    "batch": Task(title=_say("title_batch"), answer=_batch_answer, score=_batch_score,
                  visible=_batch_visible, hidden=_batch_hidden),
}
