"""Does the harness lose throughput? Compare it with plain library calls timed naively, in one run.

Prints, for this machine:
- the harness's best fp32 matmul TFLOP/s (autograder.reference.matmul_tflops, torch and
  numpy) over the best of plain ``torch.matmul`` / ``numpy.matmul`` at large sizes
  (one warm-up call, then one call between two ``time.perf_counter()``); target >= 0.95;
- the harness's copy GB/s (autograder.reference.bandwidth_gbs) over the best of plain
  ``Tensor.copy_`` / ``numpy.copyto`` on the same buffer size; target >= 0.90.

Usage: ``python benchmarks/harness_vs_library.py [--budget SECONDS]`` (default 60: the
whole script stays under 2 minutes on 2 cores).
"""
from __future__ import annotations

import argparse
import os
import time

import numpy as np
import torch

from autograder.hardware import detect
from autograder.reference import bandwidth_gbs, default_bandwidth_bytes, matmul_tflops

MATMUL_TARGET = 0.95
COPY_TARGET = 0.90


def naive_matmul(sizes: list[int]) -> dict[str, float]:
    """Best TFLOP/s of one timed call per size, for torch and numpy."""
    best = {"torch": 0.0, "numpy": 0.0}
    rng = np.random.default_rng(0)
    for n in sizes:
        a = rng.standard_normal((n, n), dtype=np.float32)
        b = rng.standard_normal((n, n), dtype=np.float32)
        ta, tb = torch.from_numpy(a), torch.from_numpy(b)
        for lib, call in (("torch", lambda: torch.matmul(ta, tb)), ("numpy", lambda: np.matmul(a, b))):
            call()
            began = time.perf_counter()
            call()
            best[lib] = max(best[lib], 2 * n**3 / (time.perf_counter() - began) / 1e12)
    return best


def naive_copy(nbytes: int) -> dict[str, float]:
    """GB/s (read + write) of one timed copy, for torch and numpy."""
    src = torch.rand(nbytes // 4)
    dst = torch.empty_like(src)
    s, d = src.numpy(), dst.numpy()
    out = {}
    for lib, call in (("torch", lambda: dst.copy_(src)), ("numpy", lambda: np.copyto(d, s))):
        call()
        began = time.perf_counter()
        call()
        out[lib] = 2 * (nbytes // 4) * 4 / (time.perf_counter() - began) / 1e9
    return out


def verdict(ratio: float, target: float) -> str:
    return "PASS" if ratio >= target else "BELOW TARGET"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget", type=float, default=60.0, help="seconds for the harness measurements")
    args = parser.parse_args()
    cores = detect().cpu.physical_cores or torch.get_num_threads()
    torch.set_num_threads(cores)  # the naive side gets the same threads as the harness
    began = time.perf_counter()

    sizes = [2048, 4096]
    naive = naive_matmul(sizes)
    harness = matmul_tflops("fp32", "cpu", budget_s=0.7 * args.budget, library="best")
    naive_best = max(naive.values())
    ratio = harness["tflops"] / naive_best
    print(f"matmul fp32, {cores} threads: harness {harness['tflops'] * 1e3:.1f} GFLOP/s "
          f"({harness['library']}, n={harness['size']}, {harness['timing'].n} samples, "
          f"spread {harness['timing'].spread:.2f}); naive best {naive_best * 1e3:.1f} GFLOP/s "
          f"(torch {naive['torch'] * 1e3:.1f}, numpy {naive['numpy'] * 1e3:.1f}; n in {sizes})")
    print(f"  ratio {ratio:.3f} (target >= {MATMUL_TARGET}): {verdict(ratio, MATMUL_TARGET)}")
    fastest = 2 * harness["size"] ** 3 / harness["timing"].min_s / 1e12
    print(f"  (harness fastest sample {fastest * 1e3:.1f} GFLOP/s: ratio {fastest / naive_best:.3f}, best vs best)")

    nbytes = default_bandwidth_bytes("cpu", arrays=2)
    plain = naive_copy(nbytes)
    copy = bandwidth_gbs("copy", "cpu", nbytes=nbytes, budget_s=0.3 * args.budget)
    plain_best = max(plain.values())
    ratio = copy["gbs"] / plain_best
    print(f"copy {nbytes / 2**20:.0f} MiB: harness {copy['gbs']:.1f} GB/s ({copy['timing'].n} samples, "
          f"spread {copy['timing'].spread:.2f}); naive best {plain_best:.1f} GB/s "
          f"(torch {plain['torch']:.1f}, numpy {plain['numpy']:.1f})")
    print(f"  ratio {ratio:.3f} (target >= {COPY_TARGET}): {verdict(ratio, COPY_TARGET)}")
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0
    print(f"total {time.perf_counter() - began:.0f} s; load average {load:.1f} on {os.cpu_count()} CPUs"
          + (" (busy machine: medians include time the cores ran other processes)" if load > 1.5 else ""))


if __name__ == "__main__":
    main()
