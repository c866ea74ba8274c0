"""Reference answers and hidden cases of module 05 (networking).

Units: GB/s = 10^9 bytes/s, per direction unless a function says otherwise; Gb/s are bits.
The bus-bandwidth rule (task 4) and the all-reduce measurement (task 6) are the core's
(:mod:`autograder.ranks`): the lesson, the referee and module 06 measure with them too, so
they are written once there and only named here.
"""
from __future__ import annotations

import math
import re

from autograder import profiles
from autograder.ranks import BUSBW_FACTORS, bus_bandwidth, measure_allreduce

__all__ = ["encoding_efficiency", "link_gbs", "level_gbs", "superpod", "comm_time", "bus_bandwidth",
           "ring_all_reduce", "allreduce_busbw", "fake_busbw", "min_batch", "min_batch_for_profile", "EXPECT", "HIDDEN"]

OPS_TIME = ("all_gather", "reduce_scatter", "all_reduce", "all_reduce_in_network", "all_to_all")


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


# ---------------------------------------------------------------- 2. SuperPod levels
def level_gbs(level: dict) -> float:
    """Bandwidth (GB/s, one direction) of all the links entering one unit of ``level``."""
    rate = level["link_rate"] / 8 if level["unit"] == "Gb/s" else level["link_rate"]
    return level["links"] * rate


def superpod(levels: list[dict]) -> dict:
    """Per-GPU bandwidth at each level, the all-reduce bandwidth of the tree and its bottleneck.

    Per GPU: min(level below, level_gbs / gpus). An all-reduce across the units of
    level i moves each unit's data once through that level, spread over the GPUs of
    one sub-unit (1 GPU below the node level): W_i = gpus_below x per_gpu_i; the
    slowest level sets the tree's all-reduce bandwidth (in-network, seed 004's model).
    """
    per_gpu, allreduce, below, gpus_below = [], [], math.inf, 1
    for level in levels:
        below = min(below, level_gbs(level) / level["gpus"])
        per_gpu.append(below)
        allreduce.append(gpus_below * below)
        gpus_below = level["gpus"]
    worst = min(range(len(levels)), key=lambda i: allreduce[i])
    return {"per_gpu_gbs": per_gpu, "allreduce_gbs": allreduce[worst], "bottleneck": levels[worst]["name"]}


# ---------------------------------------------------------------- 3. cost models
def comm_time(op: str, nbytes: float, n: int, alpha_s: float, bw_gbs: float) -> float:
    """Seconds for a collective over ``n`` GPUs, each with ``bw_gbs`` per direction.

    ``nbytes``: the full array (the all-reduce input; the gathered result of
    all_gather; the input of reduce_scatter; each rank's send buffer for all_to_all).
    Ring: n-1 steps of latency ``alpha_s`` each moving nbytes/n; all_reduce =
    reduce_scatter + all_gather. In-network (SHARP/NVLS): 2 steps (up to the switch
    and back), each GPU sends and receives nbytes once.
    """
    if op not in OPS_TIME:
        raise ValueError(f"unknown op {op!r}")
    if n <= 1:
        return 0.0
    per_byte = 1 / (bw_gbs * 1e9)
    if op == "all_reduce":
        return 2 * (n - 1) * alpha_s + 2 * (n - 1) / n * nbytes * per_byte
    if op == "all_reduce_in_network":
        return 2 * alpha_s + nbytes * per_byte
    return (n - 1) * alpha_s + (n - 1) / n * nbytes * per_byte


# ---------------------------------------------------------------- 4. bus bandwidth: autograder.ranks.bus_bandwidth


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


# ---------------------------------------------------------------- 6. bus bandwidth measurement
def allreduce_busbw(dist, sizes, world_size, budget_s: float = 0.25):
    """busbw (GB/s) of ``dist.all_reduce`` for each size: the course's own measurement (autograder.ranks)."""
    return [row["busbw_gbs"] for row in measure_allreduce(dist, sizes, budget_s)]


def fake_busbw(case: dict) -> list[float] | None:
    """The exact busbw of each size on the fake dist of a case (one all_reduce = α + bytes/β); None on real ranks."""
    if case["kind"] != "fake":
        return None
    return [bus_bandwidth("all_reduce", s, case["alpha_s"] + s / case["bytes_per_s"], case["world_size"])
            for s in case["sizes"]]


# ---------------------------------------------------------------- 7. data-parallel roofline
def min_batch(peak_tflops: float, bw_gbs: float, strategy: str, in_network: bool) -> int:
    """Smallest per-GPU batch (tokens) for which the backward pass hides the gradient traffic.

    Backward of a D x F layer: 4·b·D·F FLOPs at ``peak_tflops``. Gradients in bf16:
    2·D·F bytes; ring all-reduce moves 2x that per GPU, in-network 1x; FSDP's
    all-gather + reduce-scatter move 2x whatever the switch does. b >= k·C / (2·W).
    """
    if strategy not in ("dp", "fsdp"):
        raise ValueError(f"unknown strategy {strategy!r}")
    k = 1 if (strategy == "dp" and in_network) else 2
    ratio = k * peak_tflops * 1e12 / (2 * bw_gbs * 1e9)
    return math.ceil(ratio - 1e-9)


def min_batch_for_profile(profile_id: str, strategy: str, in_network: bool, bw_gbs: float | None = None) -> int:
    """:func:`min_batch` with the dense bf16 peak and (by default) NVLink per direction of a profile."""
    prof = profiles.get(profile_id)
    if bw_gbs is None:
        bw_gbs = prof.get("interconnect.nvlink_links") * prof.get("interconnect.nvlink_gbs_per_link_per_dir")
    return min_batch(prof.peak("bf16"), bw_gbs, strategy, in_network)


# ---------------------------------------------------------------- hidden cases
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


def _superpod_hidden(rng) -> list:
    cases = []
    for _ in range(4):
        gpus = rng.choice([4, 8, 72])
        levels = [{"name": "node", "gpus": gpus, "links": gpus * rng.choice([6, 12, 18]),
                   "link_rate": rng.choice([25, 50]), "unit": "GB/s"}]
        for name in ["leaf", "spine", "core"][: rng.randint(1, 3)]:
            gpus *= rng.choice([2, 4, 8, 16, 32])
            oversubscribed = rng.choice([1, 1, 2, 4])
            levels.append({"name": name, "gpus": gpus, "links": gpus // oversubscribed,
                           "link_rate": rng.choice([200, 400, 800]), "unit": "Gb/s"})
        cases.append({"levels": levels})
    return cases


def _cost_hidden(rng) -> list:
    return [{"op": rng.choice(OPS_TIME), "nbytes": float(rng.choice([1, 4, 16, 64, 256]) * 10 ** rng.randint(3, 9)),
             "n": rng.choice([2, 3, 4, 8, 16, 72, 256]), "alpha_s": rng.choice([0.0, 2e-6, 5e-6, 2e-5]),
             "bw_gbs": rng.choice([25.0, 50.0, 450.0, 900.0, 31.5])} for _ in range(10)]


def _busbw_hidden(rng) -> list:
    cases = [{"op": rng.choice(sorted(BUSBW_FACTORS)), "nbytes": rng.choice([1 << k for k in range(10, 34)]),
              "seconds": rng.choice([1e-5, 3e-4, 2e-3, 0.05, 1.5]), "n": rng.choice([2, 3, 4, 8, 16, 64])}
             for _ in range(10)]
    cases.append({"op": "all_reduce", "nbytes": 1 << 20, "seconds": 0.01, "n": 1})
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
             "bytes_per_s": rng.choice([4e8, 6e8, 1e9])}]


def _batch_hidden(rng) -> list:
    pool = [p.id for p in profiles.all_of("gpu") if p.get("interconnect.nvlink_links") and p.peak("bf16")]
    return [{"profile": rng.choice(pool), "strategy": rng.choice(["dp", "fsdp"]), "in_network": rng.random() < 0.5,
             "bw_gbs": rng.choice([None, None, 50.0, 100.0, 400.0, 800.0])} for _ in range(8)]


EXPECT = {
    "links": lambda case: link_gbs(case["link"], case["count"], case["bidirectional"]),
    "superpod": lambda case: superpod(case["levels"]),
    "cost": lambda case: comm_time(case["op"], case["nbytes"], case["n"], case["alpha_s"], case["bw_gbs"]),
    "busbw": lambda case: bus_bandwidth(case["op"], case["nbytes"], case["seconds"], case["n"]),
    "measure": fake_busbw,  # real ranks: graded against gloo's own all_reduce, taken by the referee
    "batch": lambda case: min_batch_for_profile(case["profile"], case["strategy"], case["in_network"], case["bw_gbs"]),
}  # "ring": scored against dist.all_reduce on the same ranks, no expected answer

HIDDEN = {
    "links": _links_hidden,
    "superpod": _superpod_hidden,
    "cost": _cost_hidden,
    "busbw": _busbw_hidden,
    "ring": _ring_hidden,
    "measure": _measure_hidden,
    "batch": _batch_hidden,
}
