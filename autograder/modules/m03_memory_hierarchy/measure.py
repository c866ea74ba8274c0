"""The course's read-bandwidth measurement: the lesson's sweep (section 9), and the reference the referee measures
beside the learner's sweep in task 6. No secret, since a measurement task is graded side by side on the learner's
own device; but task 6 asks for the learner's own measurement, so its check counts the calls made here while the
learner's function runs (:data:`calls`)."""
from __future__ import annotations

from typing import Sequence

READ_BYTES_PER_CALL = 64 * 2**20  # each timed call reads at least this much, whatever the working set
calls = 0  # how many times read_bandwidth_gbs has run in this process


def read_bandwidth_gbs(nbytes: int, device: str = "cpu", budget_s: float = 0.2) -> float:
    """Read bandwidth (GB/s) over a working set of ``nbytes``: one call sums the set many times.

    ``x.expand(reps, n)`` views the same ``n`` floats ``reps`` times without copying, so
    one reduction re-reads a working set that stays ``nbytes`` large (no per-call
    overhead for small sets). CPU: one thread, so one core's L1/L2 are what is measured.
    """
    import torch

    from ...harness import time_fn

    global calls
    calls += 1
    n = max(1, int(nbytes) // 4)
    x = torch.ones(n, device=device)
    reps = max(1, READ_BYTES_PER_CALL // (4 * n))
    view = x.expand(reps, n)
    threads = 1 if str(device).startswith("cpu") else None
    timing = time_fn(lambda: view.sum(dim=1), device=device, budget_s=budget_s, threads=threads)
    return reps * n * 4 / timing.median_s / 1e9


def reference_sweep(sizes: Sequence[int], device: str = "cpu", budget_s: float = 0.2) -> list[float]:
    """The referee's sweep: :func:`read_bandwidth_gbs` for each working-set size, in order."""
    return [read_bandwidth_gbs(s, device, budget_s) for s in sizes]
