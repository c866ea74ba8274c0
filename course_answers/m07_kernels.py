"""Reference answers, hidden cases and known mistakes of module 07 (writing kernels).

The expected values of a case come from NumPy on the case's inputs (:func:`tasks.ints`); the kernels below are
the reference solutions (the exercise's solution cells hold the same code) and the known wrong answers.
"""
from __future__ import annotations

import numba
import numpy as np

from autograder.checks.core import Recorded
from autograder.harness import time_fn
from autograder.modules.m07_kernels import tasks
from autograder.modules.m07_kernels.device import DEVICE, cuda, tl, triton
from autograder.modules.m07_kernels.tasks import DOT_TPB, POOL_TPB, SCAN_TPB, TILE

# ================================================================ reference solutions


@cuda.jit
def affine(out, x, n):
    i = cuda.grid(1)
    if i < n:
        out[i] = 3 * x[i] - 1


def blocks_for(n, threads):
    return (n + threads - 1) // threads


@cuda.jit
def outer(out, a, b):
    c, r = cuda.grid(2)
    if r < out.shape[0] and c < out.shape[1]:
        out[r, c] = a[r] * b[c]


@cuda.jit
def axpy(out, x, y, n):
    for i in range(cuda.grid(1), n, cuda.gridsize(1)):
        out[i] = 2 * x[i] + y[i]


@cuda.jit
def window3(out, x, n):
    tile = cuda.shared.array(POOL_TPB + 2, numba.float32)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    tile[t + 1] = x[i] if i < n else 0
    if t == 0:
        tile[0] = x[i - 1] if i > 0 else 0
    if t == POOL_TPB - 1:
        tile[POOL_TPB + 1] = x[i + 1] if i + 1 < n else 0
    cuda.syncthreads()
    if i < n:
        out[i] = tile[t] + tile[t + 1] + tile[t + 2]


@cuda.jit
def dot(out, a, b, n):
    part = cuda.shared.array(DOT_TPB, numba.float32)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    part[t] = a[i] * b[i] if i < n else 0
    cuda.syncthreads()
    step = DOT_TPB // 2
    while step > 0:
        if t < step:
            part[t] += part[t + step]
        cuda.syncthreads()
        step //= 2
    if t == 0:
        cuda.atomic.add(out, 0, part[0])


@cuda.jit
def exclusive_scan(out, x, n):
    buf = cuda.shared.array(SCAN_TPB, numba.float32)
    t = cuda.threadIdx.x
    buf[t] = x[t - 1] if 0 < t < n else 0
    cuda.syncthreads()
    offset = 1
    while offset < SCAN_TPB:
        v = buf[t - offset] if t >= offset else 0
        cuda.syncthreads()
        buf[t] += v
        cuda.syncthreads()
        offset *= 2
    if t < n:
        out[t] = buf[t]


@cuda.jit
def matmul_abt(c, a, b, m, n, k):
    sa = cuda.shared.array((TILE, TILE), numba.float32)
    sb = cuda.shared.array((TILE, TILE), numba.float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    row = cuda.blockIdx.y * TILE + ty      # the row of C and of A this thread computes
    col = cuda.blockIdx.x * TILE + tx      # the column of C: a row of B
    b_row = cuda.blockIdx.x * TILE + ty    # the row of B this thread loads
    acc = numba.float32(0)
    for k0 in range(0, k, TILE):
        sa[ty, tx] = a[row, k0 + tx] if row < m and k0 + tx < k else 0
        sb[tx, ty] = b[b_row, k0 + tx] if b_row < n and k0 + tx < k else 0   # read along k, transpose here
        cuda.syncthreads()
        for j in range(TILE):
            acc += sa[ty, j] * sb[j, tx]
        cuda.syncthreads()
    if row < m and col < n:
        c[row, col] = acc


@triton.jit
def softmax_rows(x_ptr, y_ptr, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < cols
    x = tl.load(x_ptr + row * cols + offs, mask=mask, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    e = tl.exp(x)
    tl.store(y_ptr + row * cols + offs, e / tl.sum(e, axis=0), mask=mask)


@cuda.jit
def copy_kernel(dst, src):
    i = cuda.grid(1)
    if i < src.size:
        dst[i] = src[i]


def copy_bandwidth_gbs(n, budget_s=1.0):
    src = cuda.to_device(np.ones(n, np.float32))
    dst = cuda.device_array_like(src)
    blocks = (n + 255) // 256
    timing = time_fn(lambda: copy_kernel[blocks, 256](dst, src), device=DEVICE, budget_s=budget_s)
    return 2 * n * 4 / timing.median_s / 1e9


SOLUTIONS = {"guard": (affine, blocks_for), "broadcast": outer, "stride": axpy, "pool": window3, "dot": dot,
             "scan": exclusive_scan, "matmul": matmul_abt, "softmax": softmax_rows,
             "copy": (copy_kernel, copy_bandwidth_gbs)}


# ================================================================ expected answers (NumPy on the case's inputs)
def _guard(c):
    return {"out": tasks._values(3 * tasks.ints(c, "x", c["n"]) - 1)}


def _broadcast(c):
    return {"out": tasks._values(np.outer(tasks.ints(c, "a", c["rows"]), tasks.ints(c, "b", c["cols"])))}


def _stride(c):
    return {"out": tasks._values(2 * tasks.ints(c, "x", c["n"]) + tasks.ints(c, "y", c["n"]))}


def _pool(c):
    x = np.pad(tasks.ints(c, "x", c["n"]), 1)
    return {"out": tasks._values(x[:-2] + x[1:-1] + x[2:])}


def _dot(c):
    return {"out": tasks._values(np.array([tasks.ints(c, "a", c["n"]) @ tasks.ints(c, "b", c["n"])]))}


def _scan(c):
    x = tasks.ints(c, "x", c["n"])
    return {"out": tasks._values(np.concatenate([[0], np.cumsum(x)[:-1]])), "x_last": float(x[-1])}


def _matmul(c):
    a, b = tasks.ints(c, "a", (c["m"], c["k"])), tasks.ints(c, "b", (c["n"], c["k"]))
    return {"c": tasks._values(a @ b.T)}


def _softmax(c):
    x = tasks.softmax_inputs(c).astype(np.float64)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return {"y": tasks._values((e / e.sum(axis=1, keepdims=True)).astype(np.float32))}


EXPECT = {"guard": _guard, "broadcast": _broadcast, "stride": _stride, "pool": _pool, "dot": _dot, "scan": _scan,
          "matmul": _matmul, "softmax": _softmax}


# ================================================================ hidden cases
def _guard_hidden(rng):
    threads = rng.choice([32, 64, 256])
    return [{"n": rng.randint(2, 2500), "threads": threads, "seed": rng.randrange(10**6)},
            {"n": 3 * threads, "threads": threads, "seed": rng.randrange(10**6)},
            {"n": 1, "threads": 32, "seed": rng.randrange(10**6)},
            {"n": threads + 1, "threads": threads, "seed": rng.randrange(10**6)}]


def _broadcast_hidden(rng):
    return [{"rows": 1, "cols": rng.randint(2, 40), "seed": rng.randrange(10**6)},
            {"rows": rng.randint(2, 40), "cols": 1, "seed": rng.randrange(10**6)},
            {"rows": rng.randint(2, 40), "cols": rng.randint(2, 40), "seed": rng.randrange(10**6)}]


def _stride_hidden(rng):
    return [{"n": rng.randint(200, 1500), "blocks": rng.choice([1, 3]), "threads": rng.choice([32, 64]),
             "seed": rng.randrange(10**6)},
            {"n": 1, "blocks": 2, "threads": 32, "seed": rng.randrange(10**6)},
            {"n": rng.randint(65, 200), "blocks": 2, "threads": 32, "seed": rng.randrange(10**6)}]


def _pool_hidden(rng):
    return [{"n": 1, "seed": rng.randrange(10**6)}, {"n": POOL_TPB + 1, "seed": rng.randrange(10**6)},
            {"n": rng.randint(2, 400), "seed": rng.randrange(10**6)}]


def _dot_hidden(rng):
    return [{"n": 1, "seed": rng.randrange(10**6)}, {"n": rng.randint(65, 700), "seed": rng.randrange(10**6)},
            {"n": rng.choice([2 * DOT_TPB, 3 * DOT_TPB, 5 * DOT_TPB]) + rng.randint(1, DOT_TPB - 1),
             "seed": rng.randrange(10**6)}]


def _scan_hidden(rng):
    return [{"n": 1, "seed": rng.randrange(10**6)}, {"n": rng.randint(2, 127), "seed": rng.randrange(10**6)},
            {"n": 2, "seed": rng.randrange(10**6)}]


def _matmul_hidden(rng):
    return [{"m": 1, "n": 1, "k": 1, "seed": rng.randrange(10**6)},
            {"m": rng.randint(17, 40), "n": rng.randint(2, 16), "k": rng.randint(17, 40), "seed": rng.randrange(10**6)},
            {"m": rng.randint(2, 16), "n": rng.randint(17, 36), "k": rng.randint(2, 15), "seed": rng.randrange(10**6)}]


def _softmax_hidden(rng):
    return [{"rows": 1, "cols": 1, "seed": rng.randrange(10**6), "scale": 1.0},
            {"rows": rng.randint(2, 6), "cols": rng.randint(2, 300), "seed": rng.randrange(10**6), "scale": 300.0},
            {"rows": rng.randint(2, 6), "cols": rng.choice([64, 128]), "seed": rng.randrange(10**6), "scale": 2.0}]


HIDDEN = {"guard": _guard_hidden, "broadcast": _broadcast_hidden, "stride": _stride_hidden, "pool": _pool_hidden,
          "dot": _dot_hidden, "scan": _scan_hidden, "matmul": _matmul_hidden, "softmax": _softmax_hidden,
          "copy": lambda rng: [{"factor": rng.choice([6, 8]), "seed": rng.randrange(10**6),
                                "sim_n": rng.choice([1536, 2000, 2560]), "sim_gbs": round(rng.uniform(2e-4, 8e-4), 6)}]}


# ================================================================ known mistakes
@cuda.jit
def _affine_no_guard(out, x, n):
    i = cuda.grid(1)
    out[i] = 3 * x[i] - 1


@cuda.jit
def _affine_le(out, x, n):
    i = cuda.grid(1)
    if i <= n:
        out[i] = 3 * x[i] - 1


@cuda.jit
def _outer_swapped(out, a, b):
    r, c = cuda.grid(2)
    if r < out.shape[0] and c < out.shape[1]:
        out[r, c] = a[r] * b[c]


@cuda.jit
def _outer_rows_only(out, a, b):
    c, r = cuda.grid(2)
    if r < out.shape[0]:
        out[r, c] = a[r] * b[c]


@cuda.jit
def _axpy_no_loop(out, x, y, n):
    i = cuda.grid(1)
    if i < n:
        out[i] = 2 * x[i] + y[i]


@cuda.jit
def _axpy_block_stride(out, x, y, n):
    for i in range(cuda.grid(1), n, cuda.blockDim.x):
        out[i] = 2 * x[i] + y[i]


@cuda.jit
def _axpy_chunks(out, x, y, n):
    g = cuda.gridsize(1)
    per = (n + g - 1) // g           # each thread a contiguous chunk: a warp's threads are per elements apart
    t = cuda.grid(1)
    for i in range(t * per, min((t + 1) * per, n)):
        out[i] = 2 * x[i] + y[i]


@cuda.jit
def _window_no_sync(out, x, n):
    tile = cuda.shared.array(POOL_TPB + 2, numba.float32)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    tile[t + 1] = x[i] if i < n else 0
    if t == 0:
        tile[0] = x[i - 1] if i > 0 else 0
    if t == POOL_TPB - 1:
        tile[POOL_TPB + 1] = x[i + 1] if i + 1 < n else 0
    if i < n:
        out[i] = tile[t] + tile[t + 1] + tile[t + 2]


@cuda.jit
def _window_early_return(out, x, n):
    tile = cuda.shared.array(POOL_TPB + 2, numba.float32)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    if i >= n:
        return                      # the spare threads of the last block never reach the barrier
    tile[t + 1] = x[i]
    if t == 0:
        tile[0] = x[i - 1] if i > 0 else 0
    if t == POOL_TPB - 1 or i == n - 1:
        tile[t + 2] = x[i + 1] if i + 1 < n else 0
    cuda.syncthreads()
    out[i] = tile[t] + tile[t + 1] + tile[t + 2]


@cuda.jit
def _window_no_halo(out, x, n):
    tile = cuda.shared.array(POOL_TPB, numba.float32)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    tile[t] = x[i] if i < n else 0
    cuda.syncthreads()
    if i < n:
        left = tile[t - 1] if t > 0 else 0
        right = tile[t + 1] if t + 1 < POOL_TPB else 0
        out[i] = left + tile[t] + right


@cuda.jit
def _window_global(out, x, n):
    i = cuda.grid(1)
    if i < n:
        s = x[i]
        if i > 0:
            s += x[i - 1]
        if i + 1 < n:
            s += x[i + 1]
        out[i] = s


@cuda.jit
def _dot_no_sync(out, a, b, n):
    part = cuda.shared.array(DOT_TPB, numba.float32)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    part[t] = a[i] * b[i] if i < n else 0
    cuda.syncthreads()
    step = DOT_TPB // 2
    while step > 0:
        if t < step:
            part[t] += part[t + step]
        step //= 2
    if t == 0:
        cuda.atomic.add(out, 0, part[0])


@cuda.jit
def _dot_early_return(out, a, b, n):
    part = cuda.shared.array(DOT_TPB, numba.float32)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    if i >= n:
        return
    part[t] = a[i] * b[i]
    cuda.syncthreads()
    step = DOT_TPB // 2
    while step > 0:
        if t < step:
            part[t] += part[t + step]
        cuda.syncthreads()
        step //= 2
    if t == 0:
        cuda.atomic.add(out, 0, part[0])


@cuda.jit
def _dot_plain_add(out, a, b, n):
    part = cuda.shared.array(DOT_TPB, numba.float32)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    part[t] = a[i] * b[i] if i < n else 0
    cuda.syncthreads()
    step = DOT_TPB // 2
    while step > 0:
        if t < step:
            part[t] += part[t + step]
        cuda.syncthreads()
        step //= 2
    if t == 0:
        out[0] += part[0]


@cuda.jit
def _dot_atomic_each(out, a, b, n):
    i = cuda.grid(1)
    if i < n:
        cuda.atomic.add(out, 0, a[i] * b[i])


@cuda.jit
def _dot_serial(out, a, b, n):
    part = cuda.shared.array(DOT_TPB, numba.float32)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    part[t] = a[i] * b[i] if i < n else 0
    cuda.syncthreads()
    if t == 0:                      # thread 0 adds the block's 64 values one after another
        s = numba.float32(0)
        for j in range(DOT_TPB):
            s += part[j]
        cuda.atomic.add(out, 0, s)


@cuda.jit
def _scan_one_barrier(out, x, n):
    buf = cuda.shared.array(SCAN_TPB, numba.float32)
    t = cuda.threadIdx.x
    buf[t] = x[t - 1] if 0 < t < n else 0
    cuda.syncthreads()
    offset = 1
    while offset < SCAN_TPB:
        if t >= offset:
            buf[t] += buf[t - offset]
        cuda.syncthreads()
        offset *= 2
    if t < n:
        out[t] = buf[t]


@cuda.jit
def _scan_early_return(out, x, n):
    buf = cuda.shared.array(SCAN_TPB, numba.float32)
    t = cuda.threadIdx.x
    if t >= n:
        return
    buf[t] = x[t - 1] if t > 0 else 0
    cuda.syncthreads()
    offset = 1
    while offset < n:
        v = buf[t - offset] if t >= offset else 0
        cuda.syncthreads()
        buf[t] += v
        cuda.syncthreads()
        offset *= 2
    out[t] = buf[t]


@cuda.jit
def _scan_each_prefix(out, x, n):
    t = cuda.threadIdx.x
    if t < n:
        total = numba.float32(0)
        for j in range(t):
            total += x[j]           # every thread reads its whole prefix from global memory
        out[t] = total


@cuda.jit
def _scan_inclusive(out, x, n):
    buf = cuda.shared.array(SCAN_TPB, numba.float32)
    t = cuda.threadIdx.x
    buf[t] = x[t] if t < n else 0
    cuda.syncthreads()
    offset = 1
    while offset < SCAN_TPB:
        v = buf[t - offset] if t >= offset else 0
        cuda.syncthreads()
        buf[t] += v
        cuda.syncthreads()
        offset *= 2
    if t < n:
        out[t] = buf[t]


@cuda.jit
def _scan_serial(out, x, n):
    buf = cuda.shared.array(SCAN_TPB, numba.float32)
    t = cuda.threadIdx.x
    buf[t] = x[t] if t < n else 0
    cuda.syncthreads()
    if t == 0:                      # thread 0 scans the block one element after another
        run = numba.float32(0)
        for j in range(SCAN_TPB):
            v = buf[j]
            buf[j] = run
            run += v
    cuda.syncthreads()
    if t < n:
        out[t] = buf[t]


@cuda.jit
def _scan_inclusive_minus_x(out, x, n):
    buf = cuda.shared.array(SCAN_TPB, numba.float32)
    t = cuda.threadIdx.x
    buf[t] = x[t] if t < n else 0
    cuda.syncthreads()
    offset = 1
    while offset < SCAN_TPB:
        v = buf[t - offset] if t >= offset else 0
        cuda.syncthreads()
        buf[t] += v
        cuda.syncthreads()
        offset *= 2
    if t < n:
        out[t] = buf[t] - x[t]      # the inclusive scan minus x[t], read from global memory a second time


@cuda.jit
def _matmul_naive(c, a, b, m, n, k):
    col, row = cuda.grid(2)
    if row < m and col < n:
        acc = numba.float32(0)
        for j in range(k):
            acc += a[row, j] * b[col, j]
        c[row, col] = acc


@cuda.jit
def _matmul_one_barrier(c, a, b, m, n, k):
    sa = cuda.shared.array((TILE, TILE), numba.float32)
    sb = cuda.shared.array((TILE, TILE), numba.float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    row = cuda.blockIdx.y * TILE + ty
    col = cuda.blockIdx.x * TILE + tx
    b_row = cuda.blockIdx.x * TILE + ty
    acc = numba.float32(0)
    for k0 in range(0, k, TILE):
        sa[ty, tx] = a[row, k0 + tx] if row < m and k0 + tx < k else 0
        sb[tx, ty] = b[b_row, k0 + tx] if b_row < n and k0 + tx < k else 0
        cuda.syncthreads()
        for j in range(TILE):
            acc += sa[ty, j] * sb[j, tx]
    if row < m and col < n:
        c[row, col] = acc


@cuda.jit
def _matmul_early_return(c, a, b, m, n, k):
    sa = cuda.shared.array((TILE, TILE), numba.float32)
    sb = cuda.shared.array((TILE, TILE), numba.float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    row = cuda.blockIdx.y * TILE + ty
    col = cuda.blockIdx.x * TILE + tx
    b_row = cuda.blockIdx.x * TILE + ty
    if row >= m or col >= n:
        return                      # threads past the edge of C leave before the barriers
    acc = numba.float32(0)
    for k0 in range(0, k, TILE):
        sa[ty, tx] = a[row, k0 + tx] if k0 + tx < k else 0
        sb[tx, ty] = b[b_row, k0 + tx] if b_row < n and k0 + tx < k else 0
        cuda.syncthreads()
        for j in range(TILE):
            acc += sa[ty, j] * sb[j, tx]
        cuda.syncthreads()
    c[row, col] = acc


@cuda.jit
def _matmul_column_loads(c, a, b, m, n, k):
    sa = cuda.shared.array((TILE, TILE), numba.float32)
    sb = cuda.shared.array((TILE, TILE), numba.float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    row = cuda.blockIdx.y * TILE + ty
    col = cuda.blockIdx.x * TILE + tx
    acc = numba.float32(0)
    for k0 in range(0, k, TILE):
        sa[ty, tx] = a[row, k0 + tx] if row < m and k0 + tx < k else 0
        sb[ty, tx] = b[col, k0 + ty] if col < n and k0 + ty < k else 0   # threadIdx.x down a column of B
        cuda.syncthreads()
        for j in range(TILE):
            acc += sa[ty, j] * sb[j, tx]
        cuda.syncthreads()
    if row < m and col < n:
        c[row, col] = acc


@cuda.jit
def _matmul_no_boundary(c, a, b, m, n, k):
    sa = cuda.shared.array((TILE, TILE), numba.float32)
    sb = cuda.shared.array((TILE, TILE), numba.float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    row = cuda.blockIdx.y * TILE + ty
    col = cuda.blockIdx.x * TILE + tx
    b_row = cuda.blockIdx.x * TILE + ty
    acc = numba.float32(0)
    for k0 in range(0, k, TILE):
        sa[ty, tx] = a[row, k0 + tx]
        sb[tx, ty] = b[b_row, k0 + tx]
        cuda.syncthreads()
        for j in range(TILE):
            acc += sa[ty, j] * sb[j, tx]
        cuda.syncthreads()
    c[row, col] = acc


@triton.jit
def _softmax_no_max(x_ptr, y_ptr, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < cols
    e = tl.exp(tl.load(x_ptr + row * cols + offs, mask=mask, other=-float("inf")))
    tl.store(y_ptr + row * cols + offs, e / tl.sum(e, axis=0), mask=mask)


@triton.jit
def _softmax_other_zero(x_ptr, y_ptr, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < cols
    x = tl.load(x_ptr + row * cols + offs, mask=mask, other=0.0)
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(y_ptr + row * cols + offs, e / tl.sum(e, axis=0), mask=mask)


@triton.jit
def _softmax_no_mask(x_ptr, y_ptr, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * cols + offs)
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(y_ptr + row * cols + offs, e / tl.sum(e, axis=0))


MISTAKES = {
    "guard": {"no_guard": (_affine_no_guard, blocks_for), "off_by_one_guard": (_affine_le, blocks_for),
              "too_few_blocks": (affine, lambda n, threads: n // threads),
              "extra_block": (affine, lambda n, threads: n // threads + 1)},
    "broadcast": {"row_col_swap": _outer_swapped, "guard_one_dim": _outer_rows_only},
    "stride": {"no_loop": _axpy_no_loop, "stride_block_only": _axpy_block_stride,
               "contiguous_chunks": _axpy_chunks},
    "pool": {"missing_sync": _window_no_sync, "early_return": _window_early_return, "no_halo": _window_no_halo,
             "global_in_loop": _window_global},
    "dot": {"missing_sync": _dot_no_sync, "early_return": _dot_early_return, "non_atomic": _dot_plain_add,
            "atomic_per_thread": _dot_atomic_each, "serial_reduction": _dot_serial},
    "scan": {"in_place_race": _scan_one_barrier, "early_return": _scan_early_return, "rereads": _scan_each_prefix,
             "inclusive": _scan_inclusive, "serial_scan": _scan_serial, "x_twice": _scan_inclusive_minus_x},
    "matmul": {"naive": _matmul_naive, "missing_sync": _matmul_one_barrier, "early_return": _matmul_early_return,
               "uncoalesced_b": _matmul_column_loads, "no_boundary": _matmul_no_boundary},
    "softmax": {"no_max": _softmax_no_max, "other_zero": _softmax_other_zero, "no_mask": _softmax_no_mask},
}


# ---------------------------------------------------------------- task 9: timing functions with a planted mistake
# Run on the simulator's virtual clock they give the numbers recorded below (tests/modules/m07 runs them).
def _device_arrays(n):
    src = cuda.to_device(np.ones(n, np.float32))
    return src, cuda.device_array_like(src), (n + 255) // 256


def _gbs_reads_only(n):
    src, dst, blocks = _device_arrays(n)
    return n * 4 / time_fn(lambda: copy_kernel[blocks, 256](dst, src), device=DEVICE).median_s / 1e9


def _gbs_gib(n):
    src, dst, blocks = _device_arrays(n)
    return 2 * n * 4 / time_fn(lambda: copy_kernel[blocks, 256](dst, src), device=DEVICE).median_s / 2**30


def _gbs_host_arrays(n):
    src, dst = np.ones(n, np.float32), np.zeros(n, np.float32)
    blocks = (n + 255) // 256
    return 2 * n * 4 / time_fn(lambda: copy_kernel[blocks, 256](dst, src), device=DEVICE).median_s / 1e9


def _gbs_timed_copies(n):
    host = np.ones(n, np.float32)
    blocks = (n + 255) // 256

    def step():
        src = cuda.to_device(host)
        dst = cuda.device_array_like(src)
        copy_kernel[blocks, 256](dst, src)
        return dst.copy_to_host()
    return 2 * n * 4 / time_fn(step, device=DEVICE).median_s / 1e9


def _gbs_no_synchronize(n):
    src, dst, blocks = _device_arrays(n)
    return 2 * n * 4 / time_fn(lambda: copy_kernel[blocks, 256](dst, src)).median_s / 1e9   # device "cpu": no sync


def _gbs_no_warmup(n):
    import time
    src, dst, blocks = _device_arrays(n)
    began = time.perf_counter()
    for _ in range(10):
        copy_kernel[blocks, 256](dst, src)
    cuda.synchronize()
    return 2 * n * 4 * 10 / (time.perf_counter() - began) / 1e9


WRONG_TIMERS = {"reads_only": _gbs_reads_only, "gib": _gbs_gib, "host_arrays": _gbs_host_arrays,
                "timed_copies": _gbs_timed_copies, "no_synchronize": _gbs_no_synchronize,
                "no_warmup": _gbs_no_warmup}


def _sim_recorded(gbs: float, launches: int, synchronizes: int, transfers: int = 1, implicit: int = 0,
                  reference_calls: int = 0, timed_transfers: int = 0) -> Recorded:
    """What the check records for a timing function on the virtual clock of the visible case (5e-4 GB/s)."""
    copy = {"right": True, "error": None, "oob": False, "reads": 1000, "writes": 1000, "sectors": 4.0}
    facts = {"bandwidth_gbs": tasks.SIM_GBS, "launches": launches, "implicit": implicit, "transfers": transfers,
             "timed_transfers": timed_transfers, "synchronizes": synchronizes, "compiles": 1,
             "moved": 8 * tasks.SIM_ELEMENTS}
    round_ = {"device": "cpu", "simulated": True, "n": tasks.SIM_ELEMENTS, "gbs": gbs, "copy": copy, "virtual": facts,
              "reference_calls": reference_calls}
    return Recorded({"rounds": [round_] * 3, "observed": {"walls": [1.0] * 3, "reference": [{"simulated": True}] * 3}})


MISTAKES["copy"] = {
    "reads_only": _sim_recorded(0.00024999923706288727, launches=15, synchronizes=29),
    "gib": _sim_recorded(0.0004656598662266271, launches=15, synchronizes=29),
    "host_arrays": _sim_recorded(1.2195121043499135e-05, launches=4, synchronizes=7, transfers=0, implicit=4),
    "timed_copies": _sim_recorded(2.380952034948242e-05, launches=4, synchronizes=7, transfers=8,
                                  timed_transfers=8),
    "no_synchronize": _sim_recorded(0.03276144771348328, launches=999, synchronizes=0),
    "no_warmup": _sim_recorded(0.00019795087498170118, launches=10, synchronizes=1),
    "reference_called": _sim_recorded(0.0005, launches=15, synchronizes=29, reference_calls=1),
}
