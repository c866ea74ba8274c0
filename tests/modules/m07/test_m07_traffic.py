"""The traffic counter is exact: counts, sectors, races and bounds against hand-computed values for small sizes."""
import numba
import numpy as np
import pytest

from autograder.modules.m07_kernels import device, traffic
from autograder.modules.m07_kernels.device import cuda, tl, triton
from autograder.modules.m07_kernels.tasks import cdiv, matmul_budget

T = 4


@cuda.jit
def add_one(out, x, n):
    i = cuda.grid(1)
    if i < n:
        out[i] = x[i] + 1


@cuda.jit
def naive_mm(c, a, b):
    col, row = cuda.grid(2)
    if row < c.shape[0] and col < c.shape[1]:
        acc = numba.float32(0)
        for k in range(a.shape[1]):
            acc += a[row, k] * b[k, col]
        c[row, col] = acc


@cuda.jit
def tiled_mm(c, a, b):
    sa = cuda.shared.array((T, T), numba.float32)
    sb = cuda.shared.array((T, T), numba.float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    row, col = cuda.blockIdx.y * T + ty, cuda.blockIdx.x * T + tx
    m, k = a.shape
    n = b.shape[1]
    acc = numba.float32(0)
    for k0 in range(0, k, T):
        sa[ty, tx] = a[row, k0 + tx] if row < m and k0 + tx < k else 0
        sb[ty, tx] = b[k0 + ty, col] if k0 + ty < k and col < n else 0
        cuda.syncthreads()
        for j in range(T):
            acc += sa[ty, j] * sb[j, tx]
        cuda.syncthreads()
    if row < m and col < n:
        c[row, col] = acc


@cuda.jit
def copy_rows(dst, src):
    col, row = cuda.grid(2)
    if row < src.shape[0] and col < src.shape[1]:
        dst[row, col] = src[row, col]


@cuda.jit
def copy_cols(dst, src):
    row, col = cuda.grid(2)
    if row < src.shape[0] and col < src.shape[1]:
        dst[row, col] = src[row, col]


@cuda.jit
def shift_racy(out, x):
    s = cuda.shared.array(32, numba.float32)
    t = cuda.threadIdx.x
    s[t] = x[t]
    out[t] = s[(t + 1) % 32]


@cuda.jit
def shift_synced(out, x):
    s = cuda.shared.array(32, numba.float32)
    t = cuda.threadIdx.x
    s[t] = x[t]
    cuda.syncthreads()
    out[t] = s[(t + 1) % 32]


@cuda.jit
def read_unwritten(out, x):
    s = cuda.shared.array(32, numba.float32)
    t = cuda.threadIdx.x
    if t < 16:
        s[t] = x[t]
    cuda.syncthreads()
    out[t] = s[t]


@cuda.jit
def total_plain(out, x):
    i = cuda.grid(1)
    if i < x.size:
        out[0] += x[i]


@cuda.jit
def total_atomic(out, x):
    i = cuda.grid(1)
    if i < x.size:
        cuda.atomic.add(out, 0, x[i])


@cuda.jit
def read_before(out, x):
    i = cuda.grid(1)
    out[i] = x[i - 1]


@cuda.jit
def shift_early_exit(out, x):
    s = cuda.shared.array(32, numba.float32)
    t = cuda.threadIdx.x
    if t >= 24:
        return                      # these threads never reach the barrier the others wait at
    s[t] = x[t]
    cuda.syncthreads()
    out[t] = s[(t + 1) % 24]


def test_the_module_runs_on_the_simulator_here():
    assert device.SIMULATED and str(device.DEVICE.name) == "cpu"


def test_a_thread_that_returns_before_a_barrier_is_named():
    x = np.arange(32, dtype=np.float32)
    early = traffic.trace(shift_early_exit, 1, 32, np.zeros(32, np.float32), x)
    assert early.skipped_barrier == ((0, 0, 0), (24, 0, 0), 0, 1)
    assert traffic.trace(shift_synced, 1, 32, np.zeros(32, np.float32), x).skipped_barrier is None


def test_a_guarded_map_reads_and_writes_each_element_once():
    x, out = np.arange(100, dtype=np.float32), np.zeros(100, np.float32)
    rec = traffic.trace(add_one, 4, 32, out, x, 100)
    assert rec.error is None and rec.threads == 128
    assert rec.reads == {"x": 100} and rec.writes == {"out": 100}
    assert np.array_equal(out, x + 1) and not rec.races
    assert int(rec.written["out"].max()) == 1 and int((rec.written["out"] == 0).sum()) == 0
    # 3 full warps of 4 sectors and a warp of 4 threads reading 16 bytes: 13 sectors over 4 requests
    assert rec.sectors["x"] == 13 and rec.requests["x"] == 4


@pytest.mark.parametrize("n", [4, 8, 12])
def test_matmul_traffic_matches_the_hand_count(n):
    rng = np.random.default_rng(n)
    a, b = rng.integers(-3, 4, (n, n)).astype(np.float32), rng.integers(-3, 4, (n, n)).astype(np.float32)
    grid = (cdiv(n, T), cdiv(n, T))
    c = np.zeros((n, n), np.float32)
    naive = traffic.trace(naive_mm, grid, (T, T), c, a, b)
    assert np.array_equal(c, a @ b)
    assert naive.reads == {"a": n**3, "b": n**3} and naive.writes == {"c": n * n}
    c = np.zeros((n, n), np.float32)
    tiled = traffic.trace(tiled_mm, grid, (T, T), c, a, b)
    assert np.array_equal(c, a @ b) and not tiled.races
    assert dict(tiled.reads) == matmul_budget(n, n, n, T) == {"a": n * n * (n // T), "b": n * n * (n // T)}
    tiles = (n // T) ** 2 * (n // T)              # blocks × tile steps
    assert tiled.shared_writes == 2 * T * T * tiles and tiled.shared_reads == 2 * T * T * T * tiles


def test_sectors_per_request_coalesced_and_not():
    src = np.arange(32 * 32, dtype=np.float32).reshape(32, 32)
    rows = traffic.trace(copy_rows, (1, 32), (32, 1), np.zeros_like(src), src)
    cols = traffic.trace(copy_cols, (1, 32), (32, 1), np.zeros_like(src), src)
    assert rows.sectors_per_request("src") == 4.0 and rows.sectors_per_request("dst") == 4.0
    assert cols.sectors_per_request("src") == 32.0 and cols.sectors_per_request("dst") == 32.0


def test_a_missing_barrier_is_a_race_and_a_barrier_removes_it():
    x = np.arange(32, dtype=np.float32)
    racy = traffic.trace(shift_racy, 1, 32, np.zeros(32, np.float32), x)
    race = racy.first_race("shared")
    assert race is not None and race.kind == "read-write" and race.phase == 0
    synced = traffic.trace(shift_synced, 1, 32, np.zeros(32, np.float32), x)
    assert synced.races == []


def test_reading_shared_memory_nobody_wrote_is_found():
    rec = traffic.trace(read_unwritten, 1, 32, np.zeros(32, np.float32), np.arange(32, dtype=np.float32))
    kinds = {r.kind for r in rec.races}
    assert kinds == {"uninitialised"}


def test_a_plain_global_update_races_and_an_atomic_does_not():
    x = np.ones(64, np.float32)
    plain = traffic.trace(total_plain, 2, 32, np.zeros(1, np.float32), x)
    assert plain.first_race("global") is not None and plain.atomics["out"] == 0
    out = np.zeros(1, np.float32)
    atomic = traffic.trace(total_atomic, 2, 32, out, x)
    assert atomic.races == [] and atomic.atomics["out"] == 64 and out[0] == 64
    assert atomic.reads == {"x": 64, "out": 64} and atomic.writes == {"out": 64}


def test_a_negative_index_is_out_of_bounds_not_wrapped():
    rec = traffic.trace(read_before, 1, 8, np.zeros(8, np.float32), np.arange(8, dtype=np.float32))
    assert rec.error and rec.oob and rec.oob[0][:3] == ("x", (-1,), "read")


def test_not_a_kernel_is_named():
    with pytest.raises(traffic.NotAKernel):
        traffic.trace(lambda out: None, 1, 1, np.zeros(1))


@pytest.mark.skipif(device.TRITON_MISSING is not None, reason="Triton is not installed here")
def test_triton_loads_and_stores_are_counted_and_stray_loads_stopped():
    import torch

    @triton.jit
    def double(src, dst, total, CHUNK: tl.constexpr):
        idx = tl.program_id(0) * CHUNK + tl.arange(0, CHUNK)
        keep = idx < total
        tl.store(dst + idx, 2 * tl.load(src + idx, mask=keep), mask=keep)

    @triton.jit
    def double_unmasked(src, dst, total, CHUNK: tl.constexpr):
        idx = tl.program_id(0) * CHUNK + tl.arange(0, CHUNK)
        tl.store(dst + idx, 2 * tl.load(src + idx))

    src, dst = torch.arange(100, dtype=torch.float32), torch.zeros(100)
    rec = traffic.trace_triton(lambda: double[(4,)](src, dst, 100, CHUNK=32), {"src": src, "dst": dst})
    assert rec.error is None and rec.loads["src"] == 100 and rec.stores["dst"] == 100
    assert torch.equal(dst, 2 * src)
    far = traffic.trace_triton(lambda: double_unmasked[(8,)](src, dst, 100, CHUNK=32), {"src": src, "dst": dst})
    assert far.error and far.outside
