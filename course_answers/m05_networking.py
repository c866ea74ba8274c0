"""Reference answers, known mistakes and hidden cases of module 05 (networking).

Units: GB/s = 10^9 bytes/s, per direction unless a function says otherwise; Gb/s are bits.
The bus-bandwidth factors are the core's (:mod:`autograder.ranks`), as is the all-reduce measurement the
referee takes beside the learner's in task 6 (which the learner must not call: :func:`allreduce_busbw` here is
the task's own solution).

``EXPECT[task](case)`` gives the expected answer and, under ``"mistakes"``, what each known wrong
answer of ``MISTAKES[task]`` returns on that case: a task's ``score`` names a mistake when the learner's
answer is that one (tasks whose runs depend on the machine name theirs from what the run recorded).
"""
from __future__ import annotations

import math
import re

from autograder.checks.core import Recorded, canonical
from autograder.knowledge import backward_flops, bytes_per_param, forward_flops
from autograder.modules.m05_networking import logs
from autograder.modules.m05_networking.tasks import (MEASURE_BUDGET_S, MEASURE_LIMIT_S, RING_TIMEOUT_S, SLOWEST,
                                                     TASKS, fake_busbw)
from autograder.ranks import BUSBW_FACTORS, bus_bandwidth

__all__ = ["link_gbs", "superpod", "bucket", "read_nccl", "ring_all_reduce", "allreduce_busbw", "plan",
           "fake_busbw", "EXPECT", "HIDDEN", "MISTAKES"]


# ---------------------------------------------------------------- 1. link arithmetic
def encoding_efficiency(encoding: str) -> float:
    """``"128b/130b"`` -> 128/130: payload bits per line bit."""
    found = re.fullmatch(r"\s*(\d+)b/(\d+)b\s*", str(encoding))
    if not found:
        raise ValueError(f"unknown encoding {encoding!r}")
    return int(found.group(1)) / int(found.group(2))


def link_gbs(link: dict, count: int, bidirectional: bool = False) -> float:
    """GB/s of ``count`` lanes (PCIe), links (NVLink) or ports (network) of ``link``."""
    kind = link["kind"]
    if kind == "pcie":
        one = link["gt_s"] * encoding_efficiency(link["encoding"]) / 8
    elif kind == "nvlink":
        one = link["gbs_per_link_per_dir"]
    elif kind in ("infiniband", "ethernet"):
        one = link["gbit_s"] / 8
    else:
        raise ValueError(f"unknown link kind {kind!r}")
    return one * count * (2 if bidirectional else 1)


def _links_both_ways(link, count, bidirectional=False):
    return link_gbs(link, count, not bidirectional)


def _links_bits(link, count, bidirectional=False):
    return link["gbit_s"] * count * (2 if bidirectional else 1) if "gbit_s" in link else link_gbs(link, count, bidirectional)


def _links_no_encoding(link, count, bidirectional=False):
    if link["kind"] != "pcie":
        return link_gbs(link, count, bidirectional)
    return link["gt_s"] / 8 * count * (2 if bidirectional else 1)


def _links_table(link, count, bidirectional=False):
    efficiency = {"8b/10b": 0.8, "128b/130b": 128 / 130, "1b/1b": 1.0}  # the lesson's three, copied
    if link["kind"] != "pcie":
        return link_gbs(link, count, bidirectional)
    return link["gt_s"] * efficiency[link["encoding"]] / 8 * count * (2 if bidirectional else 1)


# ---------------------------------------------------------------- 2. a tree: all-reduce vs all-to-all
def _rate_gbs(level: dict) -> float:
    return level["link_rate"] / 8 if level["unit"] == "Gb/s" else level["link_rate"]


def superpod(levels: list[dict]) -> dict:
    """All-reduce and all-to-all bus bandwidth of a tree of levels, and the level that sets each.

    Level i's links, shared by its GPUs, give each GPU r_i = links x rate / gpus. An all-reduce
    reduces inside each unit first, so a unit of level i-1 (g GPUs; 1 at the node level) sends its
    data once, spread over its g GPUs: W_i = g x r_i. In an all-to-all over the N GPUs of the tree,
    each GPU sends S/N to every GPU; what leaves a unit of g GPUs, S(N-g)/N per GPU, crosses level i:
    busbw_i = r_i (N-1)/(N-g). The smallest sets the whole (the lower level on a tie).
    """
    n = levels[-1]["gpus"]
    allreduce, alltoall, below = [], [], 1
    for level in levels:
        share = level["links"] * _rate_gbs(level) / level["gpus"]
        allreduce.append(below * share)
        alltoall.append(share * (n - 1) / (n - below))
        below = level["gpus"]
    ar = min(range(len(levels)), key=allreduce.__getitem__)
    aa = min(range(len(levels)), key=alltoall.__getitem__)
    return {"allreduce_gbs": allreduce[ar], "allreduce_level": levels[ar]["name"],
            "alltoall_gbs": alltoall[aa], "alltoall_level": levels[aa]["name"]}


def _tree_variant(levels, *, allreduce, alltoall, upper_on_tie=False, bits=False):
    """A wrong version of :func:`superpod`: each level's figure from ``allreduce(g, r)``, ``alltoall(g, r, n)``."""
    n = levels[-1]["gpus"]
    ar, aa, below = [], [], 1
    for level in levels:
        rate = level["link_rate"] if bits else _rate_gbs(level)
        share = level["links"] * rate / level["gpus"]
        ar.append(allreduce(below, share))
        aa.append(alltoall(below, share, n))
        below = level["gpus"]
    pick = (lambda v: max(i for i in range(len(v)) if v[i] == min(v))) if upper_on_tie else (lambda v: v.index(min(v)))
    i, j = pick(ar), pick(aa)
    return {"allreduce_gbs": ar[i], "allreduce_level": levels[i]["name"],
            "alltoall_gbs": aa[j], "alltoall_level": levels[j]["name"]}


def _right_ar(g, r):
    return g * r


def _right_aa(g, r, n):
    return r * (n - 1) / (n - g)


MISTAKES_SUPERPOD = {
    "per_gpu_allreduce": lambda levels: _tree_variant(levels, allreduce=lambda g, r: r, alltoall=_right_aa),
    "alltoall_like_allreduce": lambda levels: _tree_variant(levels, allreduce=_right_ar, alltoall=lambda g, r, n: g * r),
    "alltoall_every_level": lambda levels: _tree_variant(levels, allreduce=_right_ar, alltoall=lambda g, r, n: r),
    "bits_levels": lambda levels: _tree_variant(levels, allreduce=_right_ar, alltoall=_right_aa, bits=True),
    "tie_upper": lambda levels: _tree_variant(levels, allreduce=_right_ar, alltoall=_right_aa, upper_on_tie=True),
}


# ---------------------------------------------------------------- 3. how big a bucket
def bucket(n: int, alpha_s: float, busbw_gbs: float, nbytes: float, target: float) -> dict:
    """A ring all-reduce of ``nbytes``: the share of its bus bandwidth β it reaches, and the smallest size reaching ``target``.

    t(S) = 2(n-1)α + 2(n-1)/n · S/β and busbw(S) = 2(n-1)/n · S/t, so busbw/β = S / (S + nαβ): the
    latency and transfer terms are equal at S = nαβ (half of β), and busbw >= f·β  <=>  S >= f/(1-f) · nαβ.
    """
    half = n * alpha_s * busbw_gbs * 1e9
    return {"fraction": nbytes / (nbytes + half), "min_bytes": math.ceil(target / (1 - target) * half * (1 - 1e-12))}


def _bucket_sizes_ok(case: dict) -> list[int]:
    """Every whole size that is the smallest to reach the target, allowing for rounding at an exact boundary."""
    beta = case["busbw_gbs"] * 1e9
    need = case["target"] / (1 - case["target"]) * case["n"] * case["alpha_s"] * beta
    nearest = round(need)
    return sorted({math.ceil(need * (1 - 1e-12))} | ({nearest, nearest + 1} if abs(need - nearest) < 1e-6 * need else set()))


def _bucket_alpha_once(n, alpha_s, busbw_gbs, nbytes, target):
    return bucket(n, alpha_s / (2 * (n - 1)), busbw_gbs, nbytes, target)  # one α where a ring pays 2(n-1)


def _bucket_ring_steps(n, alpha_s, busbw_gbs, nbytes, target):
    return bucket(n, alpha_s * 2 * (n - 1) / n, busbw_gbs, nbytes, target)  # 2(n-1)·α·β where n·α·β belongs


def _bucket_algbw(n, alpha_s, busbw_gbs, nbytes, target):
    beta = busbw_gbs * 1e9
    t = 2 * (n - 1) * alpha_s + 2 * (n - 1) / n * nbytes / beta
    factor = 2 * (n - 1) / n
    # algbw = S/t >= f·β  <=>  S (1 - f·factor) >= f·β·2(n-1)α
    need = target * beta * 2 * (n - 1) * alpha_s / (1 - target * factor) if target * factor < 1 else float("inf")
    return {"fraction": nbytes / t / beta, "min_bytes": math.ceil(need) if math.isfinite(need) else -1}


def _bucket_units(n, alpha_s, busbw_gbs, nbytes, target):
    return bucket(n, alpha_s, busbw_gbs / 1e9, nbytes, target)


def _bucket_floor(n, alpha_s, busbw_gbs, nbytes, target):
    out = bucket(n, alpha_s, busbw_gbs, nbytes, target)
    out["min_bytes"] = math.floor(target / (1 - target) * n * alpha_s * busbw_gbs * 1e9)
    return out


def _bucket_round(n, alpha_s, busbw_gbs, nbytes, target):
    out = bucket(n, alpha_s, busbw_gbs, nbytes, target)
    out["min_bytes"] = round(target / (1 - target) * n * alpha_s * busbw_gbs * 1e9)
    return out


# ---------------------------------------------------------------- 4. reading an nccl-tests log
def _rows(log: str) -> list[list[str]]:
    return [line.split() for line in log.splitlines()
            if line.strip() and not line.lstrip().startswith("#") and len(line.split()) >= 13 and line.split()[0].isdigit()]


def _ranks_from(log: str, collective: str) -> int:
    """The device list's length; without one, n solved from busbw/algbw = factor(n) at the largest message."""
    listed = len(re.findall(r"^#\s+Rank\s+\d+\s", log, re.M))
    if listed:
        return listed
    row = max(_rows(log), key=lambda r: float(r[-7]))
    ratio = float(row[-6]) / float(row[-7])
    return round(2 / (2 - ratio)) if collective == "all_reduce" else round(1 / (1 - ratio))


def read_nccl(log: str, collective: str, nbytes: float, ranks: int) -> dict:
    """The ranks of the run, its peak bus bandwidth, and the time of ``collective`` on ``nbytes`` over ``ranks`` ranks at that busbw."""
    busbw = max(max(float(r[-6]), float(r[-2])) for r in _rows(log))
    return {"ranks_in_log": _ranks_from(log, collective), "busbw_gbs": busbw,
            "seconds": nbytes * BUSBW_FACTORS[collective](ranks) / (busbw * 1e9)}


def _read_avg_line(log, collective, nbytes, ranks):
    busbw = float(re.search(r"Avg bus bandwidth\s*:\s*([\d.]+)", log).group(1))
    return {**read_nccl(log, collective, nbytes, ranks), "busbw_gbs": busbw,
            "seconds": nbytes * BUSBW_FACTORS[collective](ranks) / (busbw * 1e9)}


def _read_algbw(log, collective, nbytes, ranks):
    algbw = max(max(float(r[-7]), float(r[-3])) for r in _rows(log))
    return {**read_nccl(log, collective, nbytes, ranks), "busbw_gbs": algbw,
            "seconds": nbytes * BUSBW_FACTORS[collective](ranks) / (algbw * 1e9)}


def _read_allreduce_factor(log, collective, nbytes, ranks):
    return {**read_nccl(log, collective, nbytes, ranks), "ranks_in_log": _ranks_from(log, "all_reduce")}


def _read_first_row(log, collective, nbytes, ranks):
    row = next(r for r in _rows(log) if float(r[-7]) > 0 and float(r[-6]) > 0)  # the smallest message that shows
    ratio = float(row[-6]) / float(row[-7])
    count = round(2 / (2 - ratio)) if collective == "all_reduce" else round(1 / (1 - ratio))
    return {**read_nccl(log, collective, nbytes, ranks), "ranks_in_log": count}


def _read_time_algbw(log, collective, nbytes, ranks):
    row = max(_rows(log), key=lambda r: max(float(r[-6]), float(r[-2])))
    algbw = float(row[-7]) if float(row[-6]) >= float(row[-2]) else float(row[-3])
    return {**read_nccl(log, collective, nbytes, ranks), "seconds": nbytes / (algbw * 1e9)}


def _read_no_factor(log, collective, nbytes, ranks):
    out = read_nccl(log, collective, nbytes, ranks)
    return {**out, "seconds": nbytes / (out["busbw_gbs"] * 1e9)}


def _read_log_ranks(log, collective, nbytes, ranks):
    out = read_nccl(log, collective, nbytes, ranks)
    return {**out, "seconds": nbytes * BUSBW_FACTORS[collective](out["ranks_in_log"]) / (out["busbw_gbs"] * 1e9)}


def _read_gib(log, collective, nbytes, ranks):
    out = read_nccl(log, collective, nbytes, ranks)
    return {**out, "seconds": nbytes * BUSBW_FACTORS[collective](ranks) / (out["busbw_gbs"] * 2**30)}


# ---------------------------------------------------------------- 5. ring all-reduce
def ring_all_reduce(tensor):
    """Sum ``tensor`` over all ranks in place with a ring of isend/recv (reduce-scatter, all-gather)."""
    import torch
    import torch.distributed as dist

    n, rank = dist.get_world_size(), dist.get_rank()
    if n == 1:
        return tensor
    chunks = list(torch.tensor_split(tensor.view(-1), n))
    right, left = (rank + 1) % n, (rank - 1) % n

    def shift(send_i: int, recv_i: int):
        buf = torch.empty_like(chunks[recv_i])
        req = dist.isend(chunks[send_i].contiguous(), right)
        dist.recv(buf, left)
        req.wait()
        return buf

    for step in range(n - 1):  # reduce-scatter: rank r ends owning chunk r+1
        recv_i = (rank - step - 1) % n
        chunks[recv_i].add_(shift((rank - step) % n, recv_i))
    for step in range(n - 1):  # all-gather of the owned chunks
        recv_i = (rank - step) % n
        chunks[recv_i].copy_(shift((rank + 1 - step) % n, recv_i))
    return tensor


def _ring_recorded(**change) -> Recorded:
    """What the ring check records for its visible case when every result has ``change`` applied."""
    case = TASKS["ring"].visible()[0]
    results = [{"world_size": w, "spec": spec, "error": None, "match": True, "used": [], "detail": "max |error| 0",
                "in_place": True, "averaged": False, "chunks_done": w, "wrong_rank": None, "wrong_chunks": [], **change}
               for w in case["world_sizes"] for spec in case["tensors"]]
    return Recorded({"results": results})


GLOO_TIMEOUT = ("RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:534] Timed out waiting "
                f"{RING_TIMEOUT_S * 1000:.0f}ms for send operation to complete")

GLOO_MISMATCH = ("what():  [enforce fail at ../third_party/gloo/gloo/transport/tcp/pair.cc:456] op.preamble.length <= "
                 "op.nbytes. 4 vs 0. Received data size doesn't match expected size.")


# ---------------------------------------------------------------- 6. bus bandwidth measurement
def allreduce_busbw(dist, sizes, world_size, budget_s: float = MEASURE_BUDGET_S):
    """busbw (GB/s) of ``dist.all_reduce`` for each size: warm-up, a count the ranks agree on, the slowest rank's time."""
    import time

    import torch

    results = []
    for nbytes in sizes:
        x = torch.ones(max(1, nbytes // 4), dtype=torch.float32)  # bytes -> float32 elements
        for _ in range(2):  # the first calls set up connections and buffers
            dist.all_reduce(x)
        start = time.perf_counter()
        dist.all_reduce(x)
        reps = torch.tensor([max(3, int(budget_s / max(time.perf_counter() - start, 1e-6)))])
        dist.all_reduce(reps, op=dist.ReduceOp.MAX)  # every rank makes the same number of calls
        dist.barrier()
        start = time.perf_counter()
        for _ in range(int(reps)):
            dist.all_reduce(x)
        elapsed = torch.tensor([time.perf_counter() - start])
        dist.all_reduce(elapsed, op=dist.ReduceOp.MAX)  # a collective takes as long as its slowest rank
        results.append(bus_bandwidth("all_reduce", x.numel() * 4, float(elapsed) / int(reps), world_size))
    return results


def _measured(values: list, largest_call: int, course_calls: int = 0) -> Recorded:
    """The fake case's record (visible case 0) for a measurement that reported ``values``."""
    return Recorded({"rounds": [{"values": values, "largest_call": largest_call, "course_calls": course_calls}],
                     "observed": {"walls": [5.0], "reference": [None]}}, case=0)


def _measure_mistakes() -> dict:
    case = TASKS["measure"].visible()[0]
    right, n, top = fake_busbw(case), case["world_size"], max(case["sizes"])
    setup = case["setup_s"]
    first_call = [bus_bandwidth("all_reduce", s, SLOWEST * (case["alpha_s"] + s / case["bytes_per_s"] + setup / 10), n)
                  for s in case["sizes"]]  # ten timed calls, the first of them paying the setup
    hung = {"learner": GLOO_TIMEOUT.replace("send", "recv").replace(f"{RING_TIMEOUT_S * 1000:.0f}ms",
                                                                    f"{MEASURE_LIMIT_S * 1000:.0f}ms"),
            "calls": [41, 40, 40, 40], "course_calls": 0}
    rounds = TASKS["measure"].rounds
    return {"algbw": _measured([v * n / (2 * (n - 1)) for v in right], top),
            "elements": _measured([v / 4 for v in right], 4 * top),
            "no_warmup": _measured(first_call, top),
            "not_slowest": _measured([v * SLOWEST for v in right], top),
            "course_measurement": _measured(right, top, course_calls=len(case["sizes"]) * 8),
            "rank_counts": Recorded({"rounds": [hung] * rounds,
                                     "observed": {"walls": [7.0] * rounds, "reference": [None] * rounds}}, case=1)}


# ---------------------------------------------------------------- 7. how far a model scales
def _step_s(job: dict, system: dict, gpus: int, *, comm=True, overlap=True, nvlink_beyond=False, one_nic=False,
            ring_only=False) -> float:
    """One data-parallel step: forward, then backward overlapped with the gradient all-reduce."""
    rate = gpus * system["mfu"] * system["bf16_tflops"] * 1e12
    forward, backward = forward_flops(job["params"], job["tokens"]) / rate, backward_flops(job["params"], job["tokens"]) / rate
    seconds = 0.0
    if comm and gpus > 1:
        width = system["gpus_per_node"]
        beyond = system["nic_gbs"] * (1 if one_nic else width)
        w = system["nvlink_gbs"] if gpus <= width or nvlink_beyond else min(system["nvlink_gbs"], beyond)
        share = 1.0 if system["in_network"] and not ring_only else 2 * (gpus - 1) / gpus
        gradients = bytes_per_param("mixed", "adam")["gradients"] * job["params"]  # bf16 gradients: 2·P bytes
        seconds = share * gradients / (w * 1e9)
    return forward + (max(backward, seconds) if overlap else backward + seconds)


def _plan(job: dict, systems: list[dict], whole_nodes: bool = True, tie_first: bool = False, **model) -> dict | None:
    best = None
    for system in systems:
        width = system["gpus_per_node"]
        counts = range(1, job["max_gpus"] + 1) if not whole_nodes else \
            [g for g in list(range(1, width + 1)) + list(range(2 * width, job["max_gpus"] + 1, width)) if g <= job["max_gpus"]]
        for gpus in counts:
            step = _step_s(job, system, gpus, **model)
            if step <= job["target_s"]:
                if best is None or (gpus < best["gpus"] if tie_first else (gpus, step) < (best["gpus"], best["step_s"])):
                    best = {"system": system["name"], "gpus": gpus, "step_s": step}
                break
    return best


def plan(job: dict, systems: list[dict]) -> dict | None:
    """The fewest GPUs (then the shortest step) of any system whose data-parallel step meets ``target_s``; None if none does."""
    return _plan(job, systems)


# ---------------------------------------------------------------- known mistakes
MISTAKES = {
    "links": {"direction": _links_both_ways, "bits": _links_bits, "encoding": _links_no_encoding,
              "encoding_table": _links_table},
    "superpod": MISTAKES_SUPERPOD,
    "bucket": {"alpha_once": _bucket_alpha_once, "ring_steps": _bucket_ring_steps, "algbw_fraction": _bucket_algbw,
               "units": _bucket_units, "round_down": _bucket_floor},
    "read_nccl": {"avg_line": _read_avg_line, "algbw_column": _read_algbw, "allreduce_factor": _read_allreduce_factor,
                  "first_row": _read_first_row, "time_with_algbw": _read_time_algbw,
                  "time_without_factor": _read_no_factor, "log_ranks": _read_log_ranks, "gib": _read_gib},
    "ring": {"collective": _ring_recorded(used=["all_reduce"]),
             "reduce_scatter_only": _ring_recorded(match=False, chunks_done=1, detail="max |error| 12"),
             "averaged": _ring_recorded(match=False, averaged=True, chunks_done=0, detail="max |error| 3"),
             "not_in_place": _ring_recorded(in_place=False),
             "deadlock": _ring_recorded(error=GLOO_TIMEOUT, match=False),
             "unmatched": _ring_recorded(error=GLOO_MISMATCH, match=False,  # a send skipped for an empty chunk
                                         waited={"rank": 0, "peer": 3, "step": 1, "numel": 0, "chunk": None, "sent": 1})},
    "measure": _measure_mistakes(),
    "plan": {"compute_only": lambda job, systems: _plan(job, systems, comm=False),
             "no_overlap": lambda job, systems: _plan(job, systems, overlap=False),
             "nvlink_beyond_node": lambda job, systems: _plan(job, systems, nvlink_beyond=True),
             "one_nic": lambda job, systems: _plan(job, systems, one_nic=True),
             "ring_everywhere": lambda job, systems: _plan(job, systems, ring_only=True),
             "partial_nodes": lambda job, systems: _plan(job, systems, whole_nodes=False),
             "tie_first": lambda job, systems: _plan(job, systems, tie_first=True)},
}


def _with_mistakes(task: str, case, right) -> dict:
    """The expected answer and what each wrong function of ``MISTAKES[task]`` answers on ``case``."""
    wrong = {}
    for name, fn in MISTAKES[task].items():
        try:
            wrong[name] = canonical(TASKS[task].answer(fn, case))
        except Exception:  # a mistake that fails on this case has nothing to compare
            continue
    return {"answer": right, "mistakes": wrong}


# ---------------------------------------------------------------- hidden cases
def _links_hidden(rng) -> list:
    cases = []
    for _ in range(6):
        link = {"kind": "pcie", "gen": rng.randint(1, 9), "gt_s": rng.choice([2.5, 5.0, 8.0, 16.0, 24.0, 48.0, 128.0]),
                "encoding": rng.choice(["8b/10b", "128b/130b", "1b/1b", "64b/66b", "128b/132b", "256b/257b"])}
        cases.append({"link": link, "count": rng.choice([1, 2, 4, 8, 16, 32]), "bidirectional": rng.random() < 0.5})
    for _ in range(3):
        link = {"kind": "nvlink", "gen": rng.randint(1, 9), "gbs_per_link_per_dir": rng.choice([20, 25, 50, 100, 12.5])}
        cases.append({"link": link, "count": rng.randint(1, 36), "bidirectional": rng.random() < 0.5})
    for _ in range(3):
        link = {"kind": rng.choice(["infiniband", "ethernet"]), "name": "port", "gbit_s": rng.choice([100, 200, 400, 800, 1600])}
        cases.append({"link": link, "count": rng.randint(1, 16), "bidirectional": rng.random() < 0.5})
    return cases


def _superpod_hidden(rng) -> list:
    cases = []
    for _ in range(5):
        gpus = rng.choice([4, 8, 72])
        levels = [{"name": "node", "gpus": gpus, "links": gpus * rng.choice([4, 6, 12, 18]),
                   "link_rate": rng.choice([25, 50]), "unit": "GB/s"}]
        for name in ["leaf", "spine", "core"][: rng.randint(1, 3)]:
            gpus *= rng.choice([2, 4, 8, 16, 32])
            oversubscribed = rng.choice([1, 1, 2, 4, 16])
            levels.append({"name": name, "gpus": gpus, "links": max(1, gpus // oversubscribed),
                           "link_rate": rng.choice([200, 400, 800]), "unit": "Gb/s"})
        cases.append({"levels": levels})
    return cases


def _bucket_hidden(rng) -> list:
    return [{"n": rng.choice([2, 3, 4, 8, 16, 64, 256]), "alpha_s": rng.choice([2e-6, 5e-6, 1.2e-5, 3e-5, 1e-4]),
             "busbw_gbs": rng.choice([1.5, 25.0, 50.0, 370.0, 450.0, 900.0]),
             "nbytes": float(rng.choice([1, 4, 25, 64, 256]) * 10 ** rng.randint(4, 8)),
             "target": rng.choice([0.5, 0.75, 0.8, 0.9, 0.95, 0.99])} for _ in range(8)]


def _read_nccl_hidden(rng) -> list:
    cases = []
    for _ in range(3):
        collective = rng.choice(sorted(logs.PROGRAM))
        ranks = rng.choice([2, 3, 4, 8, 12, 16, 32, 64])
        busbw = rng.choice([20.0, 45.0, 90.0, 180.0, 370.0, 480.0])
        listed = ranks > 16 or busbw < 50 or rng.random() < 0.5
        low, high = rng.choice([3, 10, 20]), rng.choice([30, 32, 33])
        log = logs.modelled_log(collective, ranks, rng.choice([3e-6, 8e-6, 2e-5]), busbw,
                                [2 ** k for k in range(low, high + 1)], rng.randrange(10 ** 6),
                                gpus_per_node=rng.choice([4, 8]) if listed else None)
        cases.append({"log": log, "collective": collective, "nbytes": rng.choice([2 ** 20, 10 ** 8, 2 ** 30, 5e9]),
                      "ranks": rng.choice([2, 8, 16, 64, 256, 1024])})
    return cases


def _ring_hidden(rng) -> list:
    specs = []
    for dtype in ("float32", "float16", "int32", "float64", "bfloat16"):
        shape = rng.choice([[rng.randint(1, 40)], [rng.randint(2, 6), rng.randint(2, 7)], [rng.randint(50, 300)]])
        specs.append({"shape": shape, "dtype": dtype, "seed": rng.randint(1, 10_000)})
    return [{"world_sizes": [3], "tensors": specs}]


def _measure_hidden(rng) -> list:
    return [{"kind": "fake", "sizes": sorted(rng.sample([1 << 19, 1 << 20, 2 << 20, 3 << 20, 6 << 20], 2)),
             "world_size": rng.choice([2, 3, 8]), "alpha_s": rng.choice([0.0005, 0.001, 0.002]),
             "bytes_per_s": rng.choice([4e8, 6e8, 1e9]), "setup_s": rng.choice([0.2, 0.3])}]


def _plan_hidden(rng) -> list:
    cases = []
    pool = TASKS["plan"].visible()[0]["systems"]
    for _ in range(4):
        systems = []
        for system in rng.sample(pool, rng.randint(1, 3)):
            systems.append({**system, "mfu": rng.choice([0.3, 0.4, 0.5]), "in_network": rng.random() < 0.5 and system["in_network"]})
        job = {"params": rng.choice([1.3e9, 7e9, 13e9, 70e9]), "tokens": rng.choice([2 ** 18, 2 ** 20, 2 ** 22]),
               "max_gpus": rng.choice([64, 512, 4096])}
        one = _step_s(job, systems[0], 1)
        job["target_s"] = one / 10 ** rng.uniform(0.3, 3.3)
        cases.append({"job": job, "systems": systems})
    return cases


EXPECT = {
    "links": lambda case: _with_mistakes("links", case, link_gbs(case["link"], case["count"], case["bidirectional"])),
    "superpod": lambda case: _with_mistakes("superpod", case, superpod(case["levels"])),
    "bucket": lambda case: _with_mistakes("bucket", case, {**bucket(*(case[k] for k in ("n", "alpha_s", "busbw_gbs", "nbytes", "target"))),
                                                           "min_bytes_ok": _bucket_sizes_ok(case)}),
    "read_nccl": lambda case: _with_mistakes("read_nccl", case, read_nccl(case["log"], case["collective"], case["nbytes"],
                                                                          case["ranks"])),
    "measure": lambda case: fake_busbw(case) if case["kind"] == "fake" else None,  # real ranks: against gloo's own
                                                                                     # all_reduce, taken by the referee
    "plan": lambda case: _with_mistakes("plan", case, plan(case["job"], case["systems"])),
}  # "ring": scored against dist.all_reduce on the same ranks, no expected answer

HIDDEN = {
    "links": _links_hidden,
    "superpod": _superpod_hidden,
    "bucket": _bucket_hidden,
    "read_nccl": _read_nccl_hidden,
    "ring": _ring_hidden,
    "measure": _measure_hidden,
    "plan": _plan_hidden,
}
