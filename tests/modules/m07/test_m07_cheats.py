"""Kernels that hand the check a right result without doing the kernel's work score 0, with a verdict naming what
happened: one thread computing everything with NumPy on slices, a backdoor to the array behind a traced argument,
an output changed by something other than the kernel's stores, inputs never read, a Triton "kernel" that is not
one, and renamed parameters."""
import gc

import numba
import numpy as np
import pytest

from autograder.checks import task
from autograder.checks.core import cases_for, collect, fraction, score_records
from autograder.modules.m07_kernels import device, tasks, traffic
from autograder.modules.m07_kernels.device import cuda, tl, triton
from course_answers import m07_kernels as ref

SEED = 4321


@pytest.fixture(autouse=True)
def _english(monkeypatch):
    monkeypatch.setenv("COURSE_LANG", "en")
    monkeypatch.setenv("COURSE_GRADING_SEED", str(SEED))
    monkeypatch.delenv("COURSE_RECORD_ANSWERS", raising=False)


def parts(name: str, learner) -> list:
    t = task(f"m07.{name}")
    return score_records(t, collect(t, learner, cases_for(t, False, SEED), f"m07.{name}"))


def said(found: list) -> str:
    return " ".join(p.message.en for p in found if not p.ok)


# ---------------------------------------------------------------- one thread, NumPy on slices
@cuda.jit
def one_thread_affine(out, x, n):
    if cuda.grid(1) == 0:
        out[0:n] = 3 * x[0:n] - 1


@cuda.jit
def one_thread_outer(out, a, b):
    c, r = cuda.grid(2)
    if r == 0 and c == 0:
        out[0:out.shape[0], 0:out.shape[1]] = np.outer(a[0:out.shape[0]], b[0:out.shape[1]])


@cuda.jit
def one_thread_axpy(out, x, y, n):
    if cuda.grid(1) == 0:
        out[0:n] = 2 * x[0:n] + y[0:n]


@cuda.jit
def one_thread_window(out, x, n):
    if cuda.grid(1) == 0:
        padded = np.zeros(n + 2, np.float32)
        padded[1:n + 1] = x[0:n]
        out[0:n] = padded[:-2] + padded[1:-1] + padded[2:]


@cuda.jit
def one_thread_dot(out, a, b, n):
    if cuda.grid(1) == 0:
        cuda.atomic.add(out, 0, np.dot(a[0:n], b[0:n]))


@cuda.jit
def one_thread_scan(out, x, n):
    if cuda.threadIdx.x == 0:
        out[0:n] = np.concatenate((np.zeros(1, np.float32), np.cumsum(x[0:n])[:n - 1]))


@cuda.jit
def one_thread_matmul(c, a, b, m, n, k):
    if cuda.threadIdx.x == 0 and cuda.threadIdx.y == 0 and cuda.blockIdx.x == 0 and cuda.blockIdx.y == 0:
        left, right = np.zeros((m, k), np.float32), np.zeros((n, k), np.float32)
        for k0 in range(0, k, 8):                  # 8-float slices: each element read once
            end = min(k0 + 8, k)
            for i in range(m):
                left[i, k0:end] = a[i, k0:end]
            for j in range(n):
                right[j, k0:end] = b[j, k0:end]
        c[0:m, 0:n] = left @ right.T


@cuda.jit
def one_thread_matmul_by_element(c, a, b, m, n, k):
    if cuda.threadIdx.x == 0 and cuda.threadIdx.y == 0 and cuda.blockIdx.x == 0 and cuda.blockIdx.y == 0:
        left, right = cuda.local.array((64, 64), numba.float32), cuda.local.array((64, 64), numba.float32)
        for i in range(m):                         # each element of A and B read once, by this thread
            for t in range(k):
                left[i, t] = a[i, t]
        for j in range(n):
            for t in range(k):
                right[j, t] = b[j, t]
        for i in range(m):
            for j in range(n):
                acc = numba.float32(0)
                for t in range(k):
                    acc += left[i, t] * right[j, t]
                c[i, j] = acc


@cuda.jit
def one_thread_copy(dst, src):
    if cuda.grid(1) == 0:
        for i in range(src.size):
            dst[i] = src[i]


ONE_THREAD = {"guard": (one_thread_affine, ref.blocks_for), "broadcast": one_thread_outer, "stride": one_thread_axpy,
              "pool": one_thread_window, "dot": one_thread_dot, "scan": one_thread_scan, "matmul": one_thread_matmul}


@pytest.mark.parametrize("name", sorted(ONE_THREAD))
def test_one_thread_computing_everything_with_numpy_on_slices_scores_nothing(name):
    """On a GPU a kernel has no NumPy: a slice of a traced array is a view that NumPy cannot take."""
    found = parts(name, ONE_THREAD[name])
    assert fraction(found) == 0.0
    assert "into a NumPy array" in said(found) or "unsupported operand" in said(found)


def test_one_thread_reading_everything_element_by_element_is_named_with_its_share():
    found = parts("matmul", one_thread_matmul_by_element)
    assert fraction(found) == 0.0
    assert "thread 0 of block 0 read 2304 elements of global memory; a thread of this kernel needs at most 6" \
        in said(found)


@cuda.jit
def one_thread_numpy_copy(dst, src):
    if cuda.grid(1) == 0:
        dst[0:src.size] = src[0:src.size]


def test_a_one_thread_copy_kernel_earns_nothing_for_its_measurement():
    found = parts("copy", (one_thread_copy, ref.copy_bandwidth_gbs))
    assert fraction(found) == 0.0 and "thread 0 of block 0 read 1000 elements" in said(found)
    found = parts("copy", (one_thread_numpy_copy, ref.copy_bandwidth_gbs))
    assert fraction(found) == 0.0 and "into a NumPy array" in said(found)


# ---------------------------------------------------------------- the array behind a traced argument
@cuda.jit
def naive_through_backing(c, a, b, m, n, k):
    col, row = cuda.grid(2)
    if row < m and col < n:
        acc = numba.float32(0)
        for j in range(k):
            acc += a._data[row, j] * b._data[col, j]
        c[row, col] = acc


def test_the_backing_array_is_not_reachable():
    found = parts("matmul", naive_through_backing)
    assert fraction(found) == 0.0 and "AttributeError" in said(found)


@cuda.jit
def through_a_slice(out, x):
    view = x[1:4]
    view[0] = 100                  # a view, as on a GPU: x[1] changes, and the write is recorded
    out[0] = view[0] + view[2]


def test_a_slice_is_a_traced_view():
    x, out = np.arange(4, dtype=np.float32), np.zeros(1, np.float32)
    rec = traffic.trace(through_a_slice, 1, 1, out, x)
    assert rec.error is None and out[0] == 103 and x[1] == 100
    assert rec.reads == {"x": 2} and rec.writes == {"x": 1, "out": 1} and not any(map(len, rec.unstored.values()))


_SNEAK = []


@cuda.jit
def write_around(out, x):
    i = cuda.grid(1)
    out[i] = x[i]
    if i == 0:
        _SNEAK[0][6] = 7           # the caller's array, reached another way


def test_an_element_not_left_by_a_kernel_store_is_found():
    out, x = np.zeros(8, np.float32), np.ones(8, np.float32)
    _SNEAK[:] = [out]
    try:
        rec = traffic.trace(write_around, 1, 4, out, x)
    finally:
        _SNEAK.clear()
    assert out[6] == 7 and list(rec.unstored["out"]) == [6] and list(rec.unstored["x"]) == []


@cuda.jit
def all_write_one(out):
    out[0] = cuda.threadIdx.x      # a write-write race: the last store wins, and it is a kernel store


def test_racing_stores_are_still_the_kernels_stores():
    out = np.zeros(1, np.float32)
    rec = traffic.trace(all_write_one, 1, 32, out)
    assert rec.first_race("global") is not None and list(rec.unstored["out"]) == []


_TABLE = {}


@cuda.jit
def affine_from_a_table(out, x, n):
    i = cuda.grid(1)
    if i < n:
        out[i] = _TABLE[n][i]      # the right values, from somewhere other than x


def test_a_result_that_never_read_its_input_scores_nothing():
    t = task("m07.guard")
    for case in t.visible():
        _TABLE[case["n"]] = 3 * tasks.ints(case, "x", case["n"]) - 1
    try:
        found = parts("guard", (affine_from_a_table, ref.blocks_for))
    finally:
        _TABLE.clear()
    assert fraction(found) == 0.0 and "no thread read x[0]" in said(found)


@cuda.jit
def naive_renamed(cc, left, right, m, n, k):
    col, row = cuda.grid(2)
    if row < m and col < n:
        acc = numba.float32(0)
        for j in range(k):
            acc += left[row, j] * right[col, j]
        cc[row, col] = acc


def test_renamed_parameters_are_counted_under_the_task_names():
    found = parts("matmul", naive_renamed)
    assert fraction(found) == 0.0 and any(p.mistake == "naive" for p in found if not p.ok)


def test_the_reference_solutions_keep_within_each_threads_share():
    for name in ("guard", "broadcast", "stride", "pool", "dot", "scan", "matmul"):
        assert all(p.ok for p in parts(name, ref.SOLUTIONS[name])), name


# ---------------------------------------------------------------- Triton
needs_triton = pytest.mark.skipif(device.TRITON_MISSING is not None, reason="Triton is not installed here")


@triton.jit
def masked_copy(x_ptr, y_ptr, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < cols
    tl.store(y_ptr + row * cols + offs, tl.load(x_ptr + row * cols + offs, mask=mask), mask=mask)


class _Launcher:
    """Not a Triton kernel: its launch copies x to y with a real one (right counts), then torch writes y."""

    def __getitem__(self, grid):
        def launch(x, y, cols, BLOCK):
            import torch
            masked_copy[grid](x, y, cols, BLOCK=BLOCK)
            y.copy_(torch.softmax(x.double(), dim=1).float())
        return launch


@needs_triton
def test_a_triton_task_needs_a_triton_jit_function():
    found = parts("softmax", _Launcher())
    assert fraction(found) == 0.0 and "decorated with `@triton.jit`" in said(found) and "mask" not in said(found)


def _fill_y_behind_the_kernel():
    import torch
    tensors = [o for o in gc.get_objects() if isinstance(o, torch.Tensor) and o.dim() == 2]
    for y in [t for t in tensors if torch.isnan(t).any()]:
        x = next(t for t in tensors if t.shape == y.shape and not torch.isnan(t).any())
        y.copy_(torch.softmax(x.double(), dim=1).float())


@triton.jit
def copy_then_fill(x_ptr, y_ptr, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < cols
    tl.store(y_ptr + row * cols + offs, tl.load(x_ptr + row * cols + offs, mask=mask), mask=mask)
    _fill_y_behind_the_kernel()


@needs_triton
def test_a_triton_output_not_left_by_its_stores_scores_nothing():
    found = parts("softmax", copy_then_fill)
    assert fraction(found) == 0.0 and "was not written by the kernel's `tl.store`" in said(found)


@triton.jit
def load_far_away(x_ptr, y_ptr, cols, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < cols
    tl.store(y_ptr + offs, tl.load(x_ptr + 1_000_000 + offs, mask=mask), mask=mask)


@needs_triton
def test_an_access_far_outside_is_not_called_a_missing_mask():
    found = parts("softmax", load_far_away)
    assert fraction(found) == 0.0 and "outside x and y" in said(found)
    assert not any(p.mistake == "no_mask" for p in found)
    assert any(p.mistake == "no_mask" for p in parts("softmax", ref.MISTAKES["softmax"]["no_mask"]))
