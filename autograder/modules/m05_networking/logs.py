"""Logs in the format nccl-tests prints (its ``*_perf`` programs), modelled from the α-β cost model.

Exercise 05 reads logs (task 4): published ones (``data/nccl_logs.yaml``) and ones written here from a model
of a cluster, each labelled as modelled in its first line. A row is what nccl-tests' ``src/common.cu``
prints: size, count, type, redop, root, then time (µs), algbw, busbw and #wrong of the out-of-place and the
in-place run; "# Avg bus bandwidth" is the mean busbw of every row and both runs.
"""
from __future__ import annotations

import random

from ...ranks import BUSBW_FACTORS

PROGRAM = {"all_reduce": "all_reduce_perf", "all_gather": "all_gather_perf", "reduce_scatter": "reduce_scatter_perf",
           "all_to_all": "alltoall_perf"}
REDOP = {"all_reduce": "sum", "reduce_scatter": "sum", "all_gather": "none", "all_to_all": "none"}
HEADER = ("#                                                              out-of-place                       in-place\n"
          "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
          "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)")


def steps(collective: str, n: int) -> int:
    """Latency terms of a ring: 2(n-1) for an all-reduce (reduce-scatter + all-gather), n-1 otherwise."""
    return 2 * (n - 1) if collective == "all_reduce" else n - 1


def _time(seconds: float) -> str:
    """A time in µs as nccl-tests prints it: fewer decimals as it grows."""
    us = seconds * 1e6
    return f"{us:7.0f}" if us >= 10000 else f"{us:7.1f}" if us >= 100 else f"{us:7.2f}"


def _run(nbytes: int, seconds: float, factor: float) -> tuple[str, float]:
    algbw = nbytes / seconds / 1e9
    return f"  {_time(seconds)}  {algbw:6.2f}  {algbw * factor:6.2f}  {0:5d}", algbw * factor


def modelled_log(collective: str, ranks: int, alpha_s: float, plateau_gbs: float, sizes: list[int], seed: int,
                 gpus_per_node: int | None = 8, gpu: str = "NVIDIA H100 80GB HBM3") -> str:
    """An nccl-tests log of ``collective`` on ``ranks`` ranks whose ring takes ``steps·α + factor·S/plateau``.

    Each run is up to 3% slower than the model (``seed`` draws by how much), so ``plateau_gbs`` is the
    busbw large messages approach. ``gpus_per_node=None`` leaves out the device list, as a log
    pasted from the table down does.
    """
    rng = random.Random(seed)
    factor = BUSBW_FACTORS[collective](ranks)
    program = PROGRAM[collective]
    lines = ["# modelled log (exercise 05 of the AI hardware course), not a measurement",
             "# nccl-tests version 2.17.6 nccl-headers=22702 nccl-library=22702",
             f"# Collective test starting: {program}",
             f"# nThread 1 nGpus 1 minBytes {min(sizes)} maxBytes {max(sizes)} step: 2(factor) warmup iters: 5 "
             "iters: 20 agg iters: 1 validation: 1 graph: 0", "#"]
    if gpus_per_node:
        lines.append("# Using devices")
        for r in range(ranks):
            node, local = divmod(r, gpus_per_node)
            lines.append(f"#  Rank {r:2d} Group  0 Pid {4100 + r:6d} on {f'node{node:03d}':>10} device {local:2d} "
                         f"[0x{0x18 + 16 * local:02x}] {gpu}")
        lines.append("#")
    lines.append(HEADER)
    busbws = []
    for nbytes in sizes:
        model = steps(collective, ranks) * alpha_s + factor * nbytes / (plateau_gbs * 1e9)
        row = f"{nbytes:12d}  {nbytes // 4:12d}  {'float':>8}  {REDOP[collective]:>6}  {-1:6d}"
        for _ in range(2):  # out-of-place, in-place
            text, busbw = _run(nbytes, model * (1 + 0.03 * rng.random()), factor)
            row += text
            busbws.append(busbw)
        lines.append(row)
    lines += ["# Out of bounds values : 0 OK", f"# Avg bus bandwidth    : {sum(busbws) / len(busbws):g} ", "#",
              f"# Collective test concluded: {program}", "#"]
    return "\n".join(lines) + "\n"
