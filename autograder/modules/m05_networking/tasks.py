"""Tasks of module 05 (networking): link arithmetic, all-reduce and all-to-all on a tree of switches, the
smallest bucket for a bus bandwidth, reading an nccl-tests log, a ring all-reduce on real gloo ranks,
fixing an all-reduce benchmark, and how far a data-parallel model scales.

A task's expected answer (``want``) carries, under ``"mistakes"``, what each known wrong answer returns on
the case (``course_answers``' ``MISTAKES``): ``score`` names a mistake only when the learner's answer is that
one and no other (:func:`_known`). The two torch.distributed tasks run the learner's function on separate
rank processes through :mod:`autograder.ranks` (source shipped, so it works with the spawn start method) with
a short process-group timeout, so a deadlock costs seconds; their mistakes are named from what the ranks
recorded. The measurement's reference is the core's (:func:`autograder.ranks.measure_allreduce`), taken by the
referee in turns with the learner's on ranks of its own; the check counts the learner's calls to it, since the
task asks them to write their own. The fake dist of the measurement runs on a clock of its own (no sleeping).
"""
from __future__ import annotations

import math
import sys
import time
import weakref
from typing import Any

from ... import clock, profiles, ranks
from ...checks import referee
from ...checks.core import Part, Task, close
from ...fakes.dist import Done, FakeDist
from ...i18n import Message, msg
from . import logs, tables

RING_TIMEOUT_S = 6.0  # seconds a gloo operation may wait in the ring task: only a deadlocked answer waits this long
DEADLOCK_MEMORY_S = 60.0  # the ring's later cases within this long after a deadlock of the same function are skipped
# Limits of a round on the measurement's ranks. A busy machine stretches wall time, not a process's processor time:
# what bounds the learner's work is counted in processor seconds, and wall time only backs it up, generously.
MEASURE_LIMIT_S = 3.0  # seconds a gloo operation may wait; processor seconds a round's measurement may take on a rank
HARD_LIMIT_S = 6.0  # processor seconds after which a rank's round (a loop that never ends) is ended (SIGPROF)
WAIT_S = 60.0  # wall seconds the check waits for a round on the ranks (a loop that sleeps forever), however busy
START_S = 60.0  # wall seconds the measurement's ranks may take to start (import torch, join the process group)
IDLE_S = 60.0  # the most they wait, idle, for the next round
LIFETIME_S = 300.0  # gloo's timeout for the measurement's ranks, and (+10 s) the most they may live
FAKE_LIMIT_S = 5.0  # the most a measurement may take on the fake dist's clock
STUB_LIMIT_S = 0.5  # the same for the quick call (no sizes) that finds an unfinished answer before starting ranks
MEASURE_SIZES = [1 << 20, 4 << 20]
FAKE_WEIGHT = 2.0  # a fake-dist case weighs this, a case on the ranks 1 (as the core weighs a case that raised): the
# fake's numbers are exact, so the task's rule shows there, and an answer that raises there keeps no more than one
# that breaks the rule
MEASURE_BUDGET_S = 0.1  # the reference's time budget per size, as the task text suggests to the learner
SLOWEST = 3.0  # the fake world's slowest rank: its clock reads this many times rank 0's
SLOW_CLOCK = 0.5  # on the real ranks, the last rank's clock runs at this rate while the learner measures
SKIPPED = "skipped after an error"  # a rank's record for a tensor it never reached (shown with m05.ring_skipped)
DEADLOCKED = "skipped after a deadlock"  # a later group's record once a group's ranks timed out
CLOCKS = ("perf_counter", "monotonic", "time")  # the time module's clocks (and their _ns forms) a fake dist runs
P2P = ("send", "recv", "isend", "irecv")  # the point-to-point calls the ring check logs, per rank, as they are made
COLLECTIVES = ("all_reduce", "all_reduce_coalesced", "reduce", "broadcast", "all_gather", "all_gather_into_tensor",
               "reduce_scatter", "reduce_scatter_tensor", "all_to_all", "all_to_all_single", "all_gather_object")


def _say(key: str, **values) -> Message:
    return msg(f"m05.{key}", **values)


def _num(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _ok(found: Any, want: Any) -> bool:
    return close(found, want, rel=1e-6, abs_tol=1e-12)


def _fmt(value: Any) -> str:
    """A found value as the verdict shows it: an integer in full, a float to 6 figures (a large whole one with
    its ``.0``, so that it is not mistaken for the integer), anything else as its repr."""
    if _int(value):
        return str(value)
    value_f = _num(value)
    if value_f is None:
        return repr(value)[:60]
    if value_f.is_integer() and 1e6 <= abs(value_f) < 1e16:
        return f"{value_f:.1f}"
    return f"{value_f:.6g}"


def _bytes(value: float) -> str:
    """A byte count: whole numbers in full with thousands separators."""
    return f"{int(value):,}" if float(value).is_integer() else f"{value:.4g}"


def _then(text: Message, more: Message | None) -> Message:
    """``text``, then ``more`` as a sentence of its own: a value never runs into the hint that follows it."""
    if more is None:
        return text

    def join(a: str, b: str) -> str:
        a = a.rstrip()
        return f"{a} {b}" if a.endswith((".", "!", "?", ":")) else f"{a}. {b}"
    return Message(join(text.ko, more.ko), join(text.en, more.en))


def _part(ok: bool, text: Message, label: str | None = None, mistake: str | None = None, weight: float = 1.0,
          **values) -> Part:
    """A scored part; a failing one that is a known mistake carries that mistake's message."""
    if not ok and mistake:
        text = _then(text, _say(f"mistake.{mistake}", **values))
    return Part(ok, text, weight=weight, mistake=None if ok else mistake,
                label=_say(f"label_{label}") if label else None)


def _known(found: Any, want: dict, same=None, shared: dict | None = None) -> str | None:
    """The known mistake whose answer on this case is ``found`` (by ``same(found, theirs)``), when exactly one is.

    A mistake whose answer here is the right one, or that another mistake shares, names nothing: the verdict
    names a mistake only when it is the one answer that explains what was found. ``shared``: mistakes that
    give the same answer on some cases, and the one whose message names them all.
    """
    same = same or (lambda a, b: a == b or _ok(a, b))
    matches = [name for name, theirs in want.get("mistakes", {}).items()
               if same(found, theirs) and not same(want["answer"], theirs)]
    if len(matches) > 1 and shared:
        return shared.get(frozenset(matches))
    return matches[0] if len(matches) == 1 else None


def _field(want: dict, key: str) -> dict:
    """Each known mistake's value of one field of the answer."""
    return {name: theirs.get(key) for name, theirs in want.get("mistakes", {}).items() if isinstance(theirs, dict)}


def error_hint(error: str) -> Message | None:
    """A hint for the common distributed mistakes behind an error's text (gloo's, torch's) in the ring task: no process
    group (the dist argument), or a send that timed out (every rank sending first)."""
    text = str(error or "")
    if "Default process group has not been initialized" in text:
        return _say("hint_dist_argument")
    if _timed_out(text) and "send" in text.lower():
        return _say("hint_deadlock")
    return None


def _deadlocked_sending(res: dict) -> bool:
    """The evidence of the deadlock of blocking sends: every rank's log ends in a blocking send, or, where the ranks
    left no log (a recorded answer), gloo's timeout of a send operation."""
    if "all_sending" in res:
        return bool(res["all_sending"])
    return _timed_out(res["error"]) and "send" in res["error"].lower()


def _timed_out(text: str) -> bool:
    lowered = text.lower()
    return "timed out" in lowered or "timeout" in lowered and ("send" in lowered or "recv" in lowered)


def _ranks_failed(exc: Exception, limit_s: float, unit: str = "s") -> ranks.RanksError:
    """A short error for ranks that died or hung past ``limit_s`` (the rank runner's own message repeats the log
    in both languages): the last line of the log that names an error, if one does."""
    last = _log_error(exc)
    return ranks.RanksError(f"the ranks did not all finish within {limit_s:g} {unit}" + (f" ({last})." if last else "."))


def _log_error(exc: Exception) -> str:
    """The last line of a rank error's log that names an error (gloo's, Python's), shortened."""
    lines = [line.strip() for line in str(exc).splitlines() if ("Error" in line or "what():" in line) and line.isascii()]
    return lines[-1][:240] if lines else ""


MISMATCH = ("collective mismatch", "doesn't match expected size")  # gloo's words when the ranks' calls differ


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


def _link_what(case) -> Message:
    """The case in words: what link, how many, which way."""
    link, count = case["link"], case["count"]
    kind = link["kind"]
    if kind == "pcie":
        what = _say("links_pcie", gen=link.get("gen"), count=count)
    elif kind == "nvlink":
        what = _say("links_nvlink", gen=link.get("gen"), count=count)
    else:
        what = _say("links_port", name=link.get("name", kind), count=count)
    return _say("links_what", link=what, way=_say("both_ways" if case["bidirectional"] else "one_way"))


def _links_score(case, answer, want) -> Part:
    right = want["answer"]
    if isinstance(answer, dict) and "unknown_encoding" in answer:
        text = _say("links_case", case=_link_what(case), expected=f"{right:.6g}", found="KeyError")
        return _part(False, text, mistake="encoding_table", encoding=answer["unknown_encoding"])
    text = _say("links_case", case=_link_what(case), expected=f"{right:.6g}", found=_fmt(answer))
    return _part(_ok(answer, right), text, mistake=_known(answer, want))


# ---------------------------------------------------------------- 2. all-reduce and all-to-all on a tree
def _superpod_visible() -> list:
    h100, b200 = tables.superpod("superpod_h100")["levels"], tables.superpod("superpod_b200")["levels"]
    spine_4to1 = [dict(level) for level in b200]
    spine_4to1[2]["links"] = 256  # a quarter of the leaf-to-spine cables: 4:1 oversubscribed
    keys = ("name", "gpus", "links", "link_rate", "unit")
    return [
        {"name": "DGX H100 SuperPOD", "levels": [{key: level[key] for key in keys} for level in h100]},
        {"name": "DGX B200 SuperPOD, 4:1", "levels": [{key: level[key] for key in keys} for level in spine_4to1]},
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


def _same_tree(a: dict, b: dict) -> bool:
    """The same answer in all four fields."""
    return all(_ok(a.get(f"{kind}_gbs"), b.get(f"{kind}_gbs")) and a.get(f"{kind}_level") == b.get(f"{kind}_level")
               for kind in ("allreduce", "alltoall"))


def _superpod_score(case, answer, want) -> list[Part]:
    if "not_a_dict" in answer:
        return [Part(False, _say("superpod_not_dict", found=answer["not_a_dict"]), weight=2)]
    levels = "/".join(f"{level['name']}({level['gpus']})" for level in case["levels"])
    tree = f"{case['name']}: {levels}" if case.get("name") else levels
    mistake = _known(answer, want, _same_tree)  # the whole answer, both collectives, is that mistake's
    parts = []
    for kind in ("allreduce", "alltoall"):
        mine, right = (answer.get(f"{kind}_gbs"), answer.get(f"{kind}_level")), \
            (want["answer"][f"{kind}_gbs"], want["answer"][f"{kind}_level"])
        ok = _ok(mine[0], right[0]) and mine[1] == right[1]
        text = _say(f"superpod_{kind}", levels=tree, expected=f"{right[0]:.6g} GB/s ({right[1]})",
                    found=f"{_fmt(mine[0])} ({mine[1]})")
        parts.append(_part(ok, text, label=kind, mistake=mistake))
    return parts


# ---------------------------------------------------------------- 3. how big a bucket
def _bucket_visible() -> list:
    return [
        {"n": 8, "alpha_s": 5e-6, "busbw_gbs": 450.0, "nbytes": 25e6, "target": 0.8},
        {"n": 4, "alpha_s": 2e-5, "busbw_gbs": 1.0, "nbytes": 4194304.0, "target": 0.65},
        {"n": 64, "alpha_s": 1.2e-5, "busbw_gbs": 50.0, "nbytes": 1e8, "target": 0.9},
        {"n": 2, "alpha_s": 3e-6, "busbw_gbs": 370.0, "nbytes": 1e6, "target": 0.95},
    ]


def _bucket_answer(learner, case) -> Any:
    result = learner(case["n"], case["alpha_s"], case["busbw_gbs"], case["nbytes"], case["target"])
    if not isinstance(result, dict):
        return {"not_a_dict": repr(result)[:80]}
    size = result.get("min_bytes")
    return {"fraction": _num(result.get("fraction")), "min_bytes": size if _int(size) else _num(size)}


def _bucket_score(case, answer, want) -> list[Part]:
    if "not_a_dict" in answer:
        return [Part(False, _say("bucket_not_dict", found=answer["not_a_dict"]), weight=2)]
    what = f"n={case['n']}, α={case['alpha_s']:.3g} s, β={case['busbw_gbs']:g} GB/s"
    right = want["answer"]
    size = answer["min_bytes"]
    size_ok = _int(size) and size in right["min_bytes_ok"]
    size_text = _say("bucket_size", case=what, target=f"{case['target']:g}", expected=right["min_bytes"],
                     found=_fmt(size))
    if not _int(size) and size is not None and float(size).is_integer() and int(size) in right["min_bytes_ok"]:
        size_text = _then(size_text, _say("bucket_not_int"))
    return [
        _part(_ok(answer["fraction"], right["fraction"]),
              _say("bucket_fraction", case=what, nbytes=_bytes(case["nbytes"]), expected=f"{right['fraction']:.4f}",
                   found=_fmt(answer["fraction"])),
              label="fraction", mistake=_known(answer["fraction"], {**want, "answer": right["fraction"],
                                                                   "mistakes": _field(want, "fraction")})),
        _part(size_ok, size_text, label="min_bytes",
              mistake=_known(size, {**want, "answer": right["min_bytes"], "mistakes": _field(want, "min_bytes")},
                             lambda a, b: a == b)),
    ]


# ---------------------------------------------------------------- 4. reading an nccl-tests log
def _read_nccl_visible() -> list:
    published = tables.nccl_log("allreduce_2x8xh100")
    sizes = [2 ** k for k in range(20, 33)]
    return [
        {"log": published["text"], "collective": published["collective"], "nbytes": 2 ** 30, "ranks": 16},
        {"log": logs.modelled_log("all_reduce", 4, 1e-5, 45.0, [2 ** k for k in range(3, 31)], seed=4,
                                  gpus_per_node=None),
         "collective": "all_reduce", "nbytes": 2 ** 28, "ranks": 16},
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
    what = _say("read_what", collective=case["collective"], nbytes=_bytes(case["nbytes"]), ranks=case["ranks"])
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
    """What a wrong result looks like: which of the n chunks are wrong, and whether it is the mean."""
    import torch

    pairs = zip(torch.tensor_split(out.reshape(-1), n), torch.tensor_split(expected.reshape(-1), n))
    wrong = [i for i, (mine, right) in enumerate(pairs) if not _same(mine, right)]
    done = sum(1 for chunk in torch.tensor_split(expected.reshape(-1), n) if chunk.numel()) - len(wrong)
    averaged = out.is_floating_point() and out.dtype in (torch.float32, torch.float64) and _same(out * n, expected)
    return {"chunks_done": done, "wrong_chunks": wrong, "averaged": bool(averaged)}


def ring_program(learner, specs: list, stop_dir: str | None = None) -> list:
    """Rank side: run the learner's all-reduce on each tensor and compare with dist.all_reduce.

    ``stop_dir``: a folder shared by the groups of one check; a group whose ranks timed out (a deadlock) leaves a
    file there, and the groups after it run nothing (each would wait out the same timeout).
    """
    import os

    import torch
    import torch.distributed as dist

    rank, n = dist.get_rank(), dist.get_world_size()
    stop = os.path.join(stop_dir, "deadlocked") if stop_dir else None
    if stop and os.path.exists(stop):
        return [{"error": DEADLOCKED}]
    log = _P2PLog(os.path.join(stop_dir, f"p2p_{n}_{rank}.jsonl") if stop_dir else None)
    real = {name: getattr(dist, name) for name in (*COLLECTIVES, *P2P) if hasattr(dist, name)}
    used: set[str] = set()

    def spy(name):
        def call(*args, **kwargs):
            if name in P2P:
                log.call(name, args, kwargs)
            else:
                used.add(name)
            return real[name](*args, **kwargs)
        return call

    results = []
    for i, spec in enumerate(specs):
        x = _make_tensor(spec, rank)
        expected = x.clone()
        mine = x.clone()
        used.clear()
        log.start(i, mine, n)
        for name in real:
            setattr(dist, name, spy(name))
        try:
            out = learner(mine)
        except Exception as exc:  # report and stop: the other ranks may be waiting on this one
            error = f"{type(exc).__name__}: {exc}"[:300]
            results.append({"error": error})
            log.write({"record": results[-1]})
            if stop and _timed_out(error):
                open(stop, "w").close()
            break
        finally:
            for name, fn in real.items():
                setattr(dist, name, fn)
        out = mine if out is None else out
        try:
            real["all_reduce"](expected)
        except Exception as exc:  # another rank stopped in this tensor: its record says why
            results.append({"error": f"{type(exc).__name__}: {exc}"[:300]})
            break
        record = {"used": sorted(used), "error": None, "in_place": True, "averaged": False, "chunks_done": n,
                  "wrong_chunks": [], "rank": rank}
        if not isinstance(out, torch.Tensor) or tuple(out.shape) != tuple(expected.shape) or out.dtype != expected.dtype:
            record.update(match=False, detail=f"{type(out).__name__} {getattr(out, 'dtype', '')} "
                                              f"{tuple(getattr(out, 'shape', ()))}")
        else:
            err = (out.double() - expected.double()).abs().max().item() if out.numel() else 0.0
            record.update(match=_same(out, expected), detail=f"max |error| {err:.3g}", in_place=_same(mine, expected))
            if not record["match"]:
                record.update(_diagnose(out, expected, n))
        results.append(record)
        log.write({"record": record})
    return results


class _P2PLog:
    """One rank's point-to-point calls in the ring check, each written as it is made (a rank that gloo ends, or one
    that waits forever, leaves what it did): which tensor, send or receive, the peer, elements, the chunk."""

    def __init__(self, path: str | None):
        self.path, self.tensor, self.mine, self.n = path, 0, None, 1

    def start(self, tensor: int, mine, n: int) -> None:
        self.tensor, self.mine, self.n = tensor, mine, n

    def write(self, entry: dict) -> None:
        import json

        if self.path:
            with open(self.path, "a", encoding="utf-8") as out:
                out.write(json.dumps({"tensor": self.tensor, **entry}) + "\n")

    def call(self, name: str, args: tuple, kwargs: dict) -> None:
        tensor = args[0] if args else kwargs.get("tensor")
        peer = args[1] if len(args) > 1 else kwargs.get("dst", kwargs.get("src"))
        numel = int(getattr(tensor, "numel", lambda: -1)())
        self.write({"op": "send" if "send" in name else "recv", "blocking": not name.startswith("i"),
                    "peer": peer if isinstance(peer, int) else None, "numel": numel, "chunk": self._chunk(tensor)})

    def _chunk(self, tensor) -> int | None:
        """The chunk of the rank's tensor (``torch.tensor_split(flat, n)``) that ``tensor`` is a view of, if it is one."""
        try:
            if tensor.untyped_storage().data_ptr() != self.mine.untyped_storage().data_ptr() or not tensor.numel():
                return None
            offset = tensor.storage_offset() - self.mine.storage_offset()
        except Exception:  # not a tensor, or not one torch can place
            return None
        size, extra = divmod(self.mine.numel(), self.n)
        start = 0
        for chunk in range(self.n):
            end = start + size + (chunk < extra)
            if start <= offset < end:
                return chunk
            start = end
        return None


def _p2p_logs(stop_dir: str, world_size: int) -> list[list[dict]]:
    """Each rank's :class:`_P2PLog` entries of a group (an empty list for a rank that wrote none)."""
    import json
    import os

    logs = []
    for rank in range(world_size):
        path = os.path.join(stop_dir, f"p2p_{world_size}_{rank}.jsonl")
        try:
            with open(path, encoding="utf-8") as found:
                logs.append([json.loads(line) for line in found if line.endswith("\n")])
        except OSError:
            logs.append([])
    return logs


def unmatched(logs: list[list[dict]], tensor: int) -> dict | None:
    """The first receive of tensor ``tensor`` that no send matched, by what the ranks logged: the rank that waited, the
    rank it waited for, which of their messages (the step) and its elements and chunk, and what the peer sent as that
    message (None: nothing); else a blocking send no receive matched. None when every call met its partner."""
    calls = [[e for e in log if e.get("tensor") == tensor and "op" in e] for log in logs]
    found = None
    for rank, mine in enumerate(calls):
        for peer in {e["peer"] for e in mine if e["peer"] is not None}:
            if not 0 <= peer < len(calls):
                continue
            recvs = [e for e in mine if e["op"] == "recv" and e["peer"] == peer]
            sends = [e for e in calls[peer] if e["op"] == "send" and e["peer"] == rank]
            for k, recv in enumerate(recvs):
                sent = sends[k]["numel"] if k < len(sends) else None
                if sent != recv["numel"]:
                    seen = {"rank": rank, "peer": peer, "step": k + 1, "numel": recv["numel"], "chunk": recv["chunk"],
                            "sent": sent}
                    found = min(found or seen, seen, key=lambda d: (d["step"], d["rank"]))
                    break
    return found


def all_sending(logs: list[list[dict]], tensor: int) -> bool:
    """Every rank of the group stopped in a blocking send of tensor ``tensor`` (the deadlock of sends first)."""
    calls = [[e for e in log if e.get("tensor") == tensor and "op" in e] for log in logs]
    return all(c and c[-1]["op"] == "send" and c[-1]["blocking"] for c in calls)


def _from_logs(stop_dir: str, case: dict, error: str) -> list | None:
    """The ranks' records as :func:`autograder.ranks.run` returns them, rebuilt from their logs when the run failed (gloo
    ended a rank): a rank without a record of a tensor it reached gets ``error``. None when no rank logged anything."""
    groups, seen = [], False
    for world_size in case["world_sizes"]:
        group = []
        for log in _p2p_logs(stop_dir, world_size):
            seen = seen or bool(log)
            records = [e["record"] for e in log if "record" in e]
            if log and len(records) < len(case["tensors"]) and not (records and records[-1].get("error")):
                records.append({"error": error or "the rank ended"})
            group.append(records or [{"error": error or "the rank ended"}])
        groups.append(group)
    return groups if seen else None


_deadlocked = weakref.WeakKeyDictionary()  # learner -> time.monotonic() of its last deadlock in the ring task


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
    import shutil
    import tempfile

    import torch

    _stub_first(learner, torch.zeros(4))
    if time.monotonic() - _deadlocked.get(learner, -math.inf) < DEADLOCK_MEMORY_S:  # a case of this check hung
        return {"results": [{"world_size": w, "spec": spec, "error": DEADLOCKED, "match": False, "used": [],
                             "detail": ""} for w in case["world_sizes"] for spec in case["tensors"]]}
    stop_dir = tempfile.mkdtemp(prefix="course_ring_")
    try:
        try:
            groups = ranks.run(f"{__name__}:ring_program", [case["tensors"], stop_dir], case["world_sizes"],
                               learner=learner, timeout_s=RING_TIMEOUT_S)
        except ranks.RanksError as exc:
            groups = _from_logs(stop_dir, case, _log_error(exc))
            if groups is None:
                raise _ranks_failed(exc, RING_TIMEOUT_S) from None
        logs = {w: _p2p_logs(stop_dir, w) for w in case["world_sizes"]}
    finally:
        shutil.rmtree(stop_dir, ignore_errors=True)
    out = []
    if any(_timed_out(str(rec.get("error"))) for results in groups for r in results for rec in r):
        _deadlocked[learner] = time.monotonic()
    for world_size, results in zip(case["world_sizes"], groups):
        skipped = any(r[:1] == [{"error": DEADLOCKED}] for r in results)
        for i, spec in enumerate(case["tensors"]):
            records = [{"error": DEADLOCKED} if skipped else r[i] if i < len(r) else {"error": SKIPPED}
                       for r in results]
            errors = sorted((rec["error"] for rec in records if rec.get("error")),
                            key=lambda e: (e == SKIPPED, not _timed_out(e)))  # a timeout names the deadlock
            wrong = [rec for rec in records if not rec.get("match")]
            first = next((rec for rec in wrong if rec.get("wrong_chunks")), {})
            if errors and errors[0] not in (SKIPPED, DEADLOCKED):
                out.append({"waited": unmatched(logs[world_size], i),
                            "all_sending": all_sending(logs[world_size], i)} if any(logs[world_size]) else {})
            else:
                out.append({})
            out[-1].update({"world_size": world_size, "spec": spec, "error": errors[0] if errors else None,
                        "match": all(rec.get("match") for rec in records) and not errors,
                        "used": sorted({u for rec in records for u in rec.get("used", [])}),
                        "detail": next((rec.get("detail") for rec in wrong), ""),
                        "in_place": all(rec.get("in_place", True) for rec in records),
                        "averaged": bool(wrong) and all(rec.get("averaged") for rec in wrong),
                        "chunks_done": min((rec.get("chunks_done", world_size) for rec in records), default=0),
                        "wrong_rank": first.get("rank"), "wrong_chunks": first.get("wrong_chunks", [])})
    return {"results": out}


def _ring_score(case, answer, want) -> list[Part]:
    parts = []
    for res in answer["results"]:
        spec = res["spec"]
        where = f"world_size={res['world_size']}, {spec['dtype']}{spec['shape']}"
        if res["error"] in (SKIPPED, DEADLOCKED):
            parts.append(Part(False, _say("ring_skipped" if res["error"] == SKIPPED else "ring_after_deadlock",
                                          case=where)))
        elif res["error"] and res.get("waited"):
            waited = res["waited"]
            parts.append(_part(False, _then(_say("ring_error", case=where, error=res["error"]), _say(
                "ring_waited", rank=waited["rank"], peer=waited["peer"], step=waited["step"], numel=waited["numel"],
                chunk=Message("", "") if waited["chunk"] is None else Message(f", 조각 {waited['chunk']}",
                                                                               f", chunk {waited['chunk']}"),
                sent=_say("ring_sent_nothing") if waited["sent"] is None else _say("ring_sent", numel=waited["sent"]))),
                mistake="unmatched"))
        elif res["error"]:
            deadlock = _deadlocked_sending(res)
            parts.append(_part(False, _then(_say("ring_error", case=where, error=res["error"]),
                                            None if deadlock else error_hint(res["error"])),
                               mistake="deadlock" if deadlock else None))
        elif res["used"]:
            parts.append(_part(False, _say("ring_collective", case=where, used=", ".join(res["used"])),
                               mistake="collective"))
        elif not res["match"]:
            mistake = "averaged" if res.get("averaged") else \
                "reduce_scatter_only" if res.get("chunks_done") == 1 and res["world_size"] > 1 else None
            text = _say("ring_case", case=where, detail=res["detail"] or "-")
            if not mistake and res.get("wrong_chunks"):
                text = _then(text, _say("ring_wrong_chunks", rank=res["wrong_rank"], n=res["world_size"],
                                        chunks=", ".join(map(str, res["wrong_chunks"]))))
            parts.append(_part(False, text, mistake=mistake, n=res["world_size"]))
        else:
            ok = res.get("in_place", True)
            parts.append(_part(ok, _say("ring_case" if ok else "ring_in_place", case=where, detail=res["detail"] or "-"),
                               mistake="not_in_place"))
    return parts


# ---------------------------------------------------------------- 6. fixing an all-reduce benchmark
def _in_course_measurement() -> bool:
    """True when :func:`autograder.ranks.measure_allreduce` (the course's measurement) is on the call stack."""
    code, frame = ranks.measure_allreduce.__code__, sys._getframe(1)
    while frame is not None:
        if frame.f_code is code:
            return True
        frame = frame.f_back
    return False


class FirstCallDist(FakeDist):
    """The fake dist of task 6: one all_reduce takes ``alpha_s + bytes / bytes_per_s`` seconds on rank 0's clock.

    As a real library, the first all_reduce of each size also pays ``setup_s``. Rank 0 is not the slowest rank:
    the slowest one's clock reads ``slowest`` times rank 0's, and an all_reduce with ``op=MAX`` of a small float
    tensor (the ranks' times) returns it. ``course_calls`` counts the calls made by the course's own measurement.

    Used as ``with FirstCallDist(...) as dist:``, it runs on a clock of its own: inside the block, in the thread
    that entered it, the ``time`` module's clocks read the real time plus the time the all_reduces took, and
    nothing sleeps (a check then takes no time, and no load on the machine changes its numbers). Outside a block
    each all_reduce sleeps. A measurement still calling all_reduce after ``limit_s`` on that clock is stopped
    (TimeoutError).
    """

    def __init__(self, world_size: int, alpha_s: float, bytes_per_s: float, setup_s: float,
                 slowest: float = SLOWEST, limit_s: float = FAKE_LIMIT_S):
        super().__init__(world_size, alpha_s, bytes_per_s)
        self.setup_s, self.slowest, self.limit_s, self._seen = setup_s, slowest, limit_s, set()
        self.course_calls, self._spent, self._owner, self._real = 0, 0.0, None, None
        self._began = time.perf_counter()

    def __enter__(self) -> "FirstCallDist":
        import threading

        self._owner, self._spent = threading.get_ident(), 0.0
        self._real = {name: getattr(time, name) for name in (*CLOCKS, *(f"{c}_ns" for c in CLOCKS))}
        self._began = self._real["perf_counter"]()
        for name in CLOCKS:
            setattr(time, name, self._clock(self._real[name], ns=False))
            setattr(time, f"{name}_ns", self._clock(self._real[f"{name}_ns"], ns=True))
        self._held = clock.Reading(time.perf_counter)  # the course's timing (time_fn) reads this clock too
        clock.hold(self._held)
        return self

    def __exit__(self, *exc) -> None:
        clock.release(getattr(self, "_held", None))
        for name, fn in (self._real or {}).items():
            setattr(time, name, fn)
        self._real = None

    def _clock(self, real, ns: bool):
        import threading

        def read():
            ahead = self._spent if threading.get_ident() == self._owner else 0.0
            return real() + (int(ahead * 1e9) if ns else ahead)
        return read

    def all_reduce(self, tensor, op=None, group=None, async_op=False):
        if _in_course_measurement():
            self.course_calls += 1
        now = self._real["perf_counter"]() if self._real else time.perf_counter()
        if now + self._spent - self._began > self.limit_s:
            raise TimeoutError(f"the fake dist stops a measurement after {self.limit_s:g} s.")
        nbytes = tensor.numel() * tensor.element_size()
        self.sizes.append(nbytes)
        seconds = self.alpha_s + nbytes / self.bytes_per_s
        if nbytes not in self._seen:
            self._seen.add(nbytes)
            seconds += self.setup_s
        if self._real is None:
            time.sleep(seconds)
        else:
            self._spent += seconds
        if op == self.ReduceOp.MAX and tensor.is_floating_point() and tensor.numel() <= 16:
            tensor.mul_(self.slowest)  # the ranks' times: the slowest rank's is the largest
        return Done() if async_op else None


def fake_busbw(case: dict) -> list[float]:
    """The exact busbw of each size on the fake dist of a case: one all_reduce takes ``SLOWEST`` times
    α + bytes/β on the slowest rank's clock, and that is the time of the collective."""
    return [ranks.bus_bandwidth("all_reduce", s, SLOWEST * (case["alpha_s"] + s / case["bytes_per_s"]),
                                case["world_size"]) for s in case["sizes"]]


def busbw_program(learner, sizes: list, timeout_s: float | None = None, slow_clock: float = 1.0) -> dict:
    """Rank side of one round: run the learner's measurement once on this rank's process group.

    Counts this rank's collective calls (ranks that make different numbers of calls wait on each other) and those
    the course's own measurement made. ``timeout_s``: the learner's collectives run on a process group of the same
    ranks whose operations give up after that long, so a rank left waiting reports instead of hanging.
    ``slow_clock``: the last rank's clocks (``time.perf_counter``, ``monotonic``, ``time``) run at this rate while
    the learner measures. Ranks never agree exactly on time; this makes the disagreement certain: a rank that
    picks its number of calls by its own clock then makes more calls than the others. (A slow clock reads less,
    so the slowest rank's time, the largest, is still the true one.)
    """
    import inspect
    from datetime import timedelta

    import torch.distributed as dist

    world = dist.get_world_size()
    clocks = _slowed(slow_clock) if slow_clock != 1.0 and world > 1 and dist.get_rank() == world - 1 else {}
    real = {name: getattr(dist, name) for name in (*COLLECTIVES, "barrier") if hasattr(dist, name)}
    group = dist.new_group(list(range(world)), timeout=timedelta(seconds=timeout_s)) if timeout_s else None
    counts = {"calls": 0, "course_calls": 0}

    def spy(name):
        signature = inspect.signature(real[name])

        def call(*args, **kwargs):
            counts["calls"] += 1
            counts["course_calls"] += _in_course_measurement()
            if group is not None and "group" in signature.parameters:
                bound = signature.bind_partial(*args, **kwargs)
                if bound.arguments.get("group") is None:
                    bound.arguments["group"] = group
                    args, kwargs = bound.args, bound.kwargs
            return real[name](*args, **kwargs)
        return call

    began, processor = time.perf_counter(), time.process_time()
    for name in real:
        setattr(dist, name, spy(name))
    originals = {name: getattr(time, name) for name in clocks}
    for name, fn in clocks.items():
        setattr(time, name, fn)
    try:
        values = learner(dist, list(sizes), world)
    except Exception as exc:
        return {"learner": f"{type(exc).__name__}: {exc}"[:300], **counts}
    finally:
        for name, fn in originals.items():
            setattr(time, name, fn)
        for name, fn in real.items():
            setattr(dist, name, fn)
    if not isinstance(values, (list, tuple)) or len(values) != len(sizes):
        return {"learner": repr(values)[:80], **counts}
    return {"learner": [_number_or_repr(v) for v in values], "seconds": time.perf_counter() - began,
            "cpu_seconds": time.process_time() - processor, **counts}


def _slowed(rate: float) -> dict:
    """Replacements for the ``time`` module's clocks that run at ``rate`` from now on."""
    def slow(clock):
        zero = clock()
        return lambda: zero + (clock() - zero) * rate

    def slow_ns(clock):
        zero = clock()
        return lambda: zero + int((clock() - zero) * rate)
    return {"perf_counter": slow(time.perf_counter), "monotonic": slow(time.monotonic), "time": slow(time.time),
            "perf_counter_ns": slow_ns(time.perf_counter_ns), "monotonic_ns": slow_ns(time.monotonic_ns),
            "time_ns": slow_ns(time.time_ns)}


def _number_or_repr(value: Any) -> Any:
    """A number (a one-element tensor or a numpy float too) as a float, anything else as its short repr."""
    try:
        return float(value)
    except (TypeError, ValueError, RuntimeError):
        return repr(value)[:40]


def _write_json(path: str, record: dict) -> None:
    """Write ``record`` to ``path`` whole (a reader never sees half a file)."""
    import json
    import os

    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w", encoding="utf-8") as out:
        json.dump(record, out)
    os.replace(tmp, path)


def busbw_rounds(learner, sizes: list, folder: str, rounds: int) -> None:
    """Rank side of the measurement task: one process group for every round of a check.

    Before each round the ranks wait, idle, for the kernel's ``go_<round>`` file in ``folder`` (the referee
    measures meanwhile), run :func:`busbw_program` (``learner`` None: the course's measurement, the referee's
    reference) and write ``round_<round>_<rank>.json``. A ``stop`` file,
    a failed round or :data:`IDLE_S` without a signal ends the program. Where the OS has ``setitimer``, a round
    that spends :data:`HARD_LIMIT_S` of processor time (a loop that never ends) ends the rank's process: load
    stretches an honest round's wall time, never its processor time.
    """
    import os
    import signal

    import torch.distributed as dist

    rank = dist.get_rank()
    timer = getattr(signal, "setitimer", None)  # ITIMER_PROF: this process's processor time, every thread
    for r in range(rounds):
        deadline = time.monotonic() + IDLE_S
        while not os.path.exists(os.path.join(folder, f"go_{r}")):
            if os.path.exists(os.path.join(folder, "stop")) or time.monotonic() > deadline:
                return
            time.sleep(0.01)
        if timer:
            timer(signal.ITIMER_PROF, HARD_LIMIT_S)
        if learner is None:
            record = {"learner": [row["busbw_gbs"] for row in ranks.measure_allreduce(dist, sizes, MEASURE_BUDGET_S)]}
        else:
            record = busbw_program(learner, sizes, MEASURE_LIMIT_S, SLOW_CLOCK)
        if timer:
            timer(signal.ITIMER_PROF, 0)
        _write_json(os.path.join(folder, f"round_{r}_{rank}.json"), record)
        if not isinstance(record["learner"], list):
            return  # the process group may be stuck: the check repeats this round's record


def reference_rounds(sizes: list, folder: str, rounds: int) -> None:
    """Rank program of the referee's reference: :func:`busbw_rounds` of the course's own measurement."""
    busbw_rounds(None, sizes, folder, rounds)


class _RankRounds:
    """The gloo ranks for the rounds of one check, started once (a start costs seconds: importing torch).

    A thread holds :func:`autograder.ranks.run` of :func:`busbw_rounds` (the learner's measurement) or, with
    ``learner`` None, of :func:`reference_rounds`; :meth:`measure` starts one round and returns every rank's
    record of it. A failed round is given again to the rounds after it.
    """

    def __init__(self, learner, case: dict, rounds: int):
        import tempfile
        import threading

        self.folder, self.world, self.rounds = tempfile.mkdtemp(prefix="course_busbw_"), case["world_size"], rounds
        self.done, self.error, self.failed, self.last = 0, None, None, time.monotonic()
        self.thread = threading.Thread(target=self._run, args=(learner, case["sizes"]), daemon=True)
        self.thread.start()

    def _run(self, learner, sizes) -> None:
        program = f"{__name__}:{'reference_rounds' if learner is None else 'busbw_rounds'}"
        try:
            ranks.run(program, [sizes, self.folder, self.rounds], [self.world], learner=learner, timeout_s=LIFETIME_S)
        except Exception as exc:  # reported by measure() if a round's records are missing
            self.error = exc

    def finished(self) -> bool:
        return self.done >= self.rounds

    def usable(self) -> bool:
        """Still the ranks of this check: rounds left, the last one (or the start) lately, and alive or failed (then
        replayed)."""
        return (not self.finished() and time.monotonic() - self.last < IDLE_S / 2
                and (self.failed is not None or self.thread.is_alive()))

    def measure(self) -> list[dict]:
        """Every rank's record of the next round."""
        import json
        import os

        r, self.done = self.done, self.done + 1
        if self.failed is not None:
            return self.failed
        open(os.path.join(self.folder, f"go_{r}"), "w").close()
        paths = [os.path.join(self.folder, f"round_{r}_{k}.json") for k in range(self.world)]
        deadline = time.monotonic() + WAIT_S + (START_S if r == 0 else 0.0)
        while not all(os.path.exists(path) for path in paths):
            if not self.thread.is_alive() or time.monotonic() > deadline:
                self.close()
                if self.error is not None and any(words in str(self.error) for words in MISMATCH):
                    self.failed = [{"learner": _log_error(self.error), "mismatch": True}]
                    return self.failed  # gloo ended the ranks: their calls did not match
                if self.error is not None:
                    raise _ranks_failed(self.error, HARD_LIMIT_S, "s of processor time") from None
                raise TimeoutError(f"the measurement took longer than {WAIT_S:g} s.")
            time.sleep(0.005)
        self.last = time.monotonic()
        records = []
        for path in paths:
            with open(path, encoding="utf-8") as found:
                records.append(json.load(found))
        if any(not isinstance(rec.get("learner"), list) for rec in records):
            self.failed = records
        return records

    def close(self) -> None:
        import os
        import shutil

        self.done = self.rounds
        try:
            open(os.path.join(self.folder, "stop"), "w").close()
        except OSError:
            pass
        self.thread.join(timeout=10.0)
        shutil.rmtree(self.folder, ignore_errors=True)


def _measure_visible() -> list:
    return [{"kind": "fake", "sizes": [1 << 20, 4 << 20], "world_size": 4, "alpha_s": 0.001, "bytes_per_s": 5e8,
             "setup_s": 0.2},
            {"kind": "ranks", "sizes": MEASURE_SIZES, "world_size": 4}]


_replays: dict = {}  # (learner, case) -> [the fake case's answer, rounds of this check still to give it to]
_sessions: dict = {}  # (learner, case) -> its _RankRounds while a check's rounds run


def _measure_answer(learner, case) -> dict:
    if case["kind"] == "fake":
        return _fake_answer(learner, case)
    key = (learner, repr(case))
    session = _sessions.get(key)
    if session is None or not session.usable():
        with FirstCallDist(case["world_size"], 0.0, 1e12, 0.0, limit_s=STUB_LIMIT_S) as fake:  # no sizes: at once
            _stub_first(learner, fake, [], case["world_size"])
        session = _sessions[key] = _RankRounds(learner, case, TASKS["measure"].rounds)
    records = _next_round(_sessions, key, session)
    answer = dict(records[0])
    calls = [r.get("calls") for r in records if "calls" in r]
    failed = next((r["learner"] for r in records if not isinstance(r["learner"], list)), None)
    if failed is not None:
        answer["learner"] = failed
    if len(set(calls)) > 1:  # the ranks did not make the same calls: one waited for a partner that never came
        answer["calls"] = calls
    elif failed is None and (spent := max(r.get("cpu_seconds", 0) for r in records)) > MEASURE_LIMIT_S:
        raise TimeoutError(f"the measurement took {spent:.1f} s of processor time on a rank "
                           f"(limit {MEASURE_LIMIT_S:g} s for all sizes).")
    answer["course_calls"] = sum(r.get("course_calls", 0) for r in records)
    return answer


def _fake_answer(learner, case) -> dict:
    """The learner's measurement on the fake dist. Its clock is exact, so each round would repeat the first one's
    numbers: the first round runs the learner and the check's other rounds get the same answer at once."""
    key = (learner, repr(case))
    replay = _replays.get(key)
    if replay:
        replay[1] -= 1
        if replay[1] <= 0:
            del _replays[key]
        return replay[0]
    with FirstCallDist(case["world_size"], case["alpha_s"], case["bytes_per_s"], case["setup_s"]) as fake:
        try:
            values = learner(fake, list(case["sizes"]), case["world_size"])
        except NotImplementedError:
            raise
        except Exception as exc:  # scored as the case it is (FAKE_WEIGHT a size), not the core's one part
            values = {"raised": f"{type(exc).__name__}: {exc}"[:300]}
    answer = {"values": [_num(v) for v in values] if isinstance(values, (list, tuple)) else
              values if isinstance(values, dict) and "raised" in values else repr(values)[:80],
              "largest_call": max(fake.sizes, default=0), "course_calls": fake.course_calls}
    if TASKS["measure"].rounds > 1:
        _replays[key] = [answer, TASKS["measure"].rounds - 1]
    return answer


def _next_round(sessions: dict, key, session: _RankRounds) -> list[dict]:
    """Every rank's record of ``session``'s next round; the ranks are let go after the last one."""
    try:
        return session.measure()
    finally:
        if session.finished():
            sessions.pop(key, None)
            session.close()


_references: dict = {}  # repr(case) -> the referee's _RankRounds while a check's rounds run


def _measure_reference(case, answer) -> dict | None:
    """gloo's own all_reduce on as many ranks, measured by the course (:func:`autograder.ranks.measure_allreduce`)
    on ranks the referee starts once per check (real ranks, after a round that measured)."""
    if case["kind"] == "fake" or not isinstance(answer, dict) or not isinstance(answer.get("learner"), list):
        return None
    key = repr(case)
    session = _references.get(key)
    if session is None or not session.usable():
        session = _references[key] = _RankRounds(None, case, TASKS["measure"].rounds)
    records = _next_round(_references, key, session)
    if not isinstance(records[0].get("learner"), list):
        raise ranks.RanksError(str(records[0].get("learner"))[:200])
    return {"busbw": records[0]["learner"]}


def measure_hint(error: str) -> Message | None:
    """A hint for an error of the measurement task: the dist argument, a measurement too long, ranks that hung."""
    text = str(error or "")
    if "Default process group has not been initialized" in text:
        return _say("hint_dist_argument")
    if "the fake dist stops" in text or "the measurement took" in text:
        return _say("hint_too_long", fake=f"{FAKE_LIMIT_S:g}", ranks=f"{MEASURE_LIMIT_S:g}")
    if "RanksError" in text or _timed_out(text):
        return _say("hint_ranks_hung")
    return None


def _one_call_seconds(sizes: list, busbw: list, n: int) -> float:
    """Seconds one all_reduce of each size takes at the reported bus bandwidths."""
    return sum(ranks.bus_bandwidth("all_reduce", s, 1.0, n) / b for s, b in zip(sizes, busbw))


def _measure_score(case, answer, want) -> list[Part]:
    found = referee.rounds(answer)
    if case["kind"] == "fake":
        return _measure_fake_score(case, found[0] if found else {"values": None}, want)
    from ...expectations import side_by_side

    sizes, n = case["sizes"], case["world_size"]
    course = max((r.get("course_calls") or 0 for r in found if isinstance(r, dict)), default=0)
    if course:
        return [_part(False, _say("measure_course", calls=course), mistake="course_measurement")]
    bad = next((r for r in found if not isinstance(r.get("learner"), list) or len(r["learner"]) != len(sizes)
                or not all(isinstance(v, (int, float)) and v > 0 for v in r["learner"])), None) if found else {}
    if bad is not None:
        text = _say("measure_not_list", n=len(sizes), found=str(bad.get("learner", "-")))
        if bad.get("calls") or bad.get("mismatch"):
            seen = _say("measure_calls", calls=", ".join(map(str, bad["calls"]))) if bad.get("calls") else \
                _say("measure_mismatch")
            return [_part(False, seen, mistake="rank_counts")]  # gloo's own words add nothing
        return [Part(False, _then(text, measure_hint(str(bad.get("learner")))))]
    parts = []
    for i, size in enumerate(sizes):
        what = _say("measure_what", size=f"{size / 2 ** 20:g}", n=n)
        measured, scored = side_by_side("allreduce", answer, what, lambda r, i=i: r["learner"][i],
                                        lambda ref, i=i: ref["busbw"][i],
                                        lambda r: _one_call_seconds(sizes, r["learner"], n), "GB/s",
                                        weight=1.0 / len(sizes))
        if not measured:
            return [Part(False, p.message) for p in scored]
        parts.extend(scored)
    return parts


def _measure_fake_score(case, answer, want) -> list[Part]:
    values = answer["values"]
    n_sizes, n = len(case["sizes"]), case["world_size"]
    weight = FAKE_WEIGHT
    if isinstance(values, dict) and "raised" in values:
        text = _say("measure_raised", n=n, error=values["raised"])
        return [Part(False, _then(text, measure_hint(values["raised"])), weight=weight)]
    if not isinstance(values, list) or len(values) != n_sizes:
        return [Part(False, _say("measure_not_list", n=n_sizes, found=str(values)), weight=weight)]
    if answer.get("course_calls"):
        return [_part(False, _say("measure_course", calls=answer["course_calls"]), mistake="course_measurement",
                      weight=weight)]
    too_big = answer.get("largest_call", 0) > max(case["sizes"])  # a tensor of more bytes than the size asked
    ratios = [value / expected if value and value > 0 else 0.0 for value, expected in zip(values, want)]
    mistake = _measure_mistake(ratios, n, too_big)
    parts = []
    for size, value, expected, ratio in zip(case["sizes"], values, want, ratios):
        ok = not too_big and 0.75 <= ratio <= 1.3
        text = _say("measure_fake", size=_bytes(size), n=n, expected=f"{expected:.4g}", found=_fmt(value))
        if ok or mistake:
            parts.append(_part(ok, text, mistake=mistake, weight=weight / n_sizes, setup=f"{case['setup_s']:g}",
                               slowest=f"{SLOWEST:g}", largest=_bytes(answer.get("largest_call", 0))))
        else:
            parts.append(Part(False, _then(text, _ratio_hint_loose(value, expected)), weight=weight / n_sizes))
    return parts


def _measure_mistake(ratios: list[float], n: int, too_big: bool) -> str | None:
    """The known mistake behind fake-dist values ``ratios`` times the exact busbw, judged on every size at once:
    a factor left out scales every size alike, a missing warm-up weighs on each size differently."""
    if too_big:
        return "elements"

    def every(factor: float) -> bool:
        return all(0.8 * factor <= r <= 1.25 * factor for r in ratios)
    algbw = n / (2 * (n - 1))  # algbw / busbw; 1 on two ranks, where the two are the same
    if algbw < 1 and every(algbw):
        return "algbw"
    if every(SLOWEST) or (algbw < 1 and every(SLOWEST * algbw)):
        return "not_slowest"
    return "no_warmup" if any(0 < r < 0.75 for r in ratios) else None


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
        {"job": {"params": 1.3e9, "tokens": 2 ** 19, "target_s": 1.0, "max_gpus": 1024}, "systems": [b200, nvl72]},
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


def _plan_what(case) -> Message:
    job = case["job"]
    return _say("plan_what", params=f"{job['params'] / 1e9:g}", tokens=f"{job['tokens']:,}",
                target=f"{job['target_s']:g}", systems=", ".join(s["name"] for s in case["systems"]))


def _plan_score(case, answer, want) -> list[Part]:
    what = _plan_what(case)
    right = want["answer"]
    pick = lambda d: None if d is None else (d.get("system"), d.get("gpus"))  # noqa: E731
    mistake = _known(answer, want, lambda a, b: pick(a) == pick(b))
    shown = lambda d: _say("plan_none") if d is None else f"{d.get('system')} × {d.get('gpus')}"  # noqa: E731
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
                  kind="recall", level="warm-up", mistakes=("direction", "bits", "encoding", "encoding_table"),
                  rule=_say("rule.links"), central=("direction", "bits", "encoding")),
    "superpod": Task(title=_say("title_superpod"), answer=_superpod_answer, score=_superpod_score,
                     visible=_superpod_visible, kind="transfer", level="core",
                     mistakes=("per_gpu_allreduce", "alltoall_like_allreduce", "alltoall_every_level", "bits_levels",
                               "tie_upper"),
                     rule=_say("rule.superpod"),
                     central=("per_gpu_allreduce", "alltoall_like_allreduce", "alltoall_every_level")),
    "bucket": Task(title=_say("title_bucket"), answer=_bucket_answer, score=_bucket_score, visible=_bucket_visible,
                   kind="transfer", level="core", mistakes=("alpha_once", "ring_steps", "algbw_fraction", "units", "round_down"),
                   rule=_say("rule.bucket"), central=("alpha_once", "ring_steps", "algbw_fraction")),
    "read_nccl": Task(title=_say("title_read_nccl"), answer=_read_nccl_answer, score=_read_nccl_score,
                      visible=_read_nccl_visible, kind="transfer", level="core",
                      mistakes=("avg_line", "algbw_column", "allreduce_factor", "first_row", "time_with_algbw",
                                "time_without_factor", "log_ranks", "gib"),
                      rule=_say("rule.read_nccl"),
                      central=("algbw_column", "time_with_algbw", "time_without_factor")),
    "ring": Task(title=_say("title_ring"), answer=_ring_answer, score=_ring_score, visible=_ring_visible,
                 hint=error_hint, kind="recall", level="core",
                 mistakes=("collective", "reduce_scatter_only", "averaged", "not_in_place", "deadlock", "unmatched"),
                 rule=_say("rule.ring"), central=("collective", "reduce_scatter_only")),
    "measure": Task(title=_say("title_measure"), answer=_measure_answer, score=_measure_score,
                    visible=_measure_visible, measurement=True, reference=_measure_reference, rounds=2,
                    hint=measure_hint, kind="transfer", level="core",
                    mistakes=("algbw", "elements", "no_warmup", "not_slowest", "rank_counts", "course_measurement"),
                    rule=_say("rule.measure"), central=("algbw", "no_warmup", "not_slowest")),
    "plan": Task(title=_say("title_plan"), answer=_plan_answer, score=_plan_score, visible=_plan_visible,
                 kind="transfer", level="stretch",
                 mistakes=("compute_only", "no_overlap", "nvlink_beyond_node", "one_nic", "ring_everywhere",
                           "partial_nodes", "tie_first"),
                 rule=_say("rule.plan"), central=("compute_only", "no_overlap")),
}
