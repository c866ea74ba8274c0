"""Reference implementations for module 05 (networking), used by checks/m05.py and the tests.

Units: GB/s = 10^9 bytes/s, per direction unless a function says otherwise; Gb/s are bits.
"""
from __future__ import annotations

import math
import re

OPS_TIME = ("all_gather", "reduce_scatter", "all_reduce", "all_reduce_in_network", "all_to_all")
BUSBW_FACTORS = {
    "all_reduce": lambda n: 2 * (n - 1) / n,
    "reduce_scatter": lambda n: (n - 1) / n,
    "all_gather": lambda n: (n - 1) / n,
    "all_to_all": lambda n: (n - 1) / n,
    "broadcast": lambda n: 1.0,
    "reduce": lambda n: 1.0,
    "send_recv": lambda n: 1.0,
}


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


# ---------------------------------------------------------------- 4. bus bandwidth
def bus_bandwidth(op: str, nbytes: float, seconds: float, n: int) -> float:
    """nccl-tests busbw (GB/s): algbw = nbytes / seconds, times the factor of ``op``."""
    return nbytes / seconds / 1e9 * BUSBW_FACTORS[op](n)


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
    """busbw (GB/s) of ``dist.all_reduce`` for each size: the course's own measurement (checks/m05.py)."""
    from ..checks.m05 import reference_busbw

    return reference_busbw(dist, sizes, world_size, budget_s)


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
    from .. import profiles

    prof = profiles.get(profile_id)
    if bw_gbs is None:
        bw_gbs = prof.get("interconnect.nvlink_links") * prof.get("interconnect.nvlink_gbs_per_link_per_dir")
    return min_batch(prof.peak("bf16"), bw_gbs, strategy, in_network)
