"""Checks of module 07: references get full marks on hidden cases, blanks and stubs fail, every known mistake loses
points on the hidden cases too, hard-coded values fail, and the checks write nothing to stderr."""
import random
from time import perf_counter   # a clock imported by name, as a notebook may: the virtual clock swaps it too

import numba
import numpy as np
import pytest

from autograder.checks import CheckFailed, check, task
from autograder.checks.core import cases_for, collect, fraction, score_records
from autograder.modules.m07_kernels import device, tasks, traffic
from autograder.modules.m07_kernels.device import cuda, tl, triton
from course_answers import m07_kernels as ref

SEED = 4321
KERNELS = [name for name in tasks.TASKS if name != "copy"]


@pytest.fixture(autouse=True)
def _english_and_seed(monkeypatch):
    monkeypatch.setenv("COURSE_LANG", "en")
    monkeypatch.setenv("COURSE_GRADING_SEED", str(SEED))
    monkeypatch.delenv("COURSE_RECORD_ANSWERS", raising=False)


def share(name: str, learner, hidden: bool = True) -> float:
    t = task(f"m07.{name}")
    return fraction(score_records(t, collect(t, learner, cases_for(t, hidden, SEED))))


@pytest.mark.parametrize("name", KERNELS)
def test_reference_gets_full_marks_without_stderr(name, capfd):
    assert check(f"m07.{name}", ref.SOLUTIONS[name], points=3, hidden=True) is None
    out, err = capfd.readouterr()
    assert "passed" in out and err == ""


@cuda.jit
def _blank(*args):
    raise NotImplementedError()


@triton.jit
def _blank_triton(x_ptr, y_ptr, cols, BLOCK: tl.constexpr):
    raise NotImplementedError()


@pytest.mark.parametrize("name", KERNELS)
def test_the_blank_kernel_is_not_implemented(name, capsys):
    learner = {"guard": (_blank, ref.blocks_for), "softmax": _blank_triton}.get(name, _blank)
    with pytest.raises(CheckFailed) as failed:
        check(f"m07.{name}", learner, points=3, hidden=True)
    assert "NotImplementedError" in str(failed.value) or "not implemented" in str(failed.value).lower()


@pytest.mark.parametrize("name,mistake", [(n, m) for n in KERNELS for m in tasks.TASKS[n].mistakes])
def test_a_known_mistake_loses_points_on_the_hidden_cases_too(name, mistake):
    wrong = ref.MISTAKES[name][mistake]
    assert share(name, wrong, hidden=True) < 1.0


@pytest.mark.parametrize("name", KERNELS)
def test_hidden_cases_change_with_the_seed(name):
    assert ref.HIDDEN[name](random.Random(1)) != ref.HIDDEN[name](random.Random(2))


@pytest.mark.parametrize("name", ["pool", "dot", "scan", "matmul"])
def test_hidden_cases_include_sizes_that_are_not_multiples_of_the_block(name):
    cases = ref.HIDDEN[name](random.Random(3))
    sizes = [c.get("n", c.get("m")) for c in cases]
    assert 1 in sizes and any(s not in (1,) and s % 16 for s in sizes)


def test_copy_reference_full_marks_on_the_simulator_every_time(capfd):
    """On the virtual clock the right answer is exact: the reference never loses a point, whatever the load."""
    for _ in range(5):
        assert check("m07.copy", ref.SOLUTIONS["copy"], points=3, hidden=True) is None
    out, err = capfd.readouterr()
    assert "virtual clock" in out and err == ""


@pytest.mark.parametrize("mistake", sorted(ref.WRONG_TIMERS))
def test_a_wrong_timer_on_the_virtual_clock_is_named_and_recorded_as_in_MISTAKES(mistake):
    t = task("m07.copy")
    records = collect(t, (ref.copy_kernel, ref.WRONG_TIMERS[mistake]), cases_for(t, False, SEED), "m07.copy")
    parts = score_records(t, records)
    assert any(p.mistake == mistake and not p.ok for p in parts) and fraction(parts) == pytest.approx(1 / 3)
    recorded = ref.MISTAKES["copy"][mistake].answer["rounds"][0]
    measured = records[0]["answer"]["rounds"][0]
    assert measured["virtual"] == recorded["virtual"] and measured["gbs"] == pytest.approx(recorded["gbs"], rel=1e-9)


def test_other_right_methods_pass_on_the_virtual_clock():
    """Events, a hand-written loop after a warm-up, and a clock imported by name all time the same thing."""
    def events(n):
        src = cuda.to_device(np.ones(n, np.float32))
        dst = cuda.device_array_like(src)
        ref.copy_kernel[(n + 255) // 256, 256](dst, src)       # warm-up (compiles)
        start, end = cuda.event(), cuda.event()
        start.record()
        for _ in range(5):
            ref.copy_kernel[(n + 255) // 256, 256](dst, src)
        end.record()
        end.synchronize()
        return 2 * n * 4 * 5 / (start.elapsed_time(end) / 1e3) / 1e9

    def by_hand(n):
        src = cuda.to_device(np.ones(n, np.float32))
        dst = cuda.device_array_like(src)
        ref.copy_kernel[(n + 255) // 256, 256](dst, src)
        cuda.synchronize()
        began = perf_counter()
        for _ in range(3):
            ref.copy_kernel[(n + 255) // 256, 256](dst, src)
        cuda.synchronize()
        return 2 * n * 4 * 3 / (perf_counter() - began) / 1e9

    for timer in (events, by_hand):
        assert share("copy", (ref.copy_kernel, timer), hidden=True) == 1.0


def test_a_constant_on_the_virtual_clock_earns_nothing_for_the_measurement():
    t = task("m07.copy")
    parts = score_records(t, collect(t, (ref.copy_kernel, lambda n: 5e-4), cases_for(t, True, SEED), "m07.copy"))
    measured = [p for p in parts if p.weight == tasks.SIM_WEIGHT]
    assert measured and not any(p.ok for p in measured)


def _gpu_rounds(gbs: float) -> dict:
    copy = {"right": True, "error": None, "oob": False, "reads": 1000, "writes": 1000, "sectors": 4.0}
    rounds = [{"device": "NVIDIA H100", "simulated": False, "n": 2**26, "gbs": gbs, "copy": copy}] * 3
    spans = [[[8 * 2**26 / (gbs * 1e9), "time_fn:0"]]] * 3  # time_fn's sample on the course's clock
    return {"rounds": rounds, "observed": {"walls": [1.0] * 3, "reference": [{"gbs": 1000.0}] * 3, "spans": spans}}


def test_on_a_gpu_a_copy_not_timed_by_time_fn_earns_nothing():
    """The GPU path's figure must come from time_fn's times on the course's clock (or a slip of units named by its
    own part): one timed by hand, on a replaced clock, earns nothing."""
    t = task("m07.copy")
    for factor, measured in ((1.0, True), (0.5, True), (tasks.GIB_RATIO, True), (0.8, False)):
        answer = _gpu_rounds(1000.0)
        answer["rounds"] = [dict(r, gbs=1000.0 * factor) for r in answer["rounds"]]
        parts = t.score(t.visible()[0], answer, None)
        said = " ".join(p.message.en for p in parts)
        assert ("not measured on the course's clock" not in said) is measured, (factor, said)
        if not measured:
            assert fraction(parts) == 0.0


@pytest.mark.parametrize("gbs,mistake", [(1000.0, None), (500.0, "reads_only"), (25.0, "host_arrays"),
                                         (90000.0, "no_synchronize")])
def test_on_a_gpu_the_copy_is_compared_side_by_side(gbs, mistake):
    t = task("m07.copy")
    parts = t.score(t.visible()[0], _gpu_rounds(gbs), None)
    if mistake is None:
        assert fraction(parts) == 1.0
        shown = next(p for p in parts if p.measured).message.en
        assert "1.00x the reference" in shown and "0.6–1.8x" in shown
    else:
        assert any(p.mistake == mistake for p in parts) and fraction(parts) < 1.0


def test_on_a_gpu_a_copy_off_by_no_more_than_the_reference_spread_names_no_mistake():
    """The course's copy 2x apart between rounds (a busy GPU): a copy at 0.42x of it is not told it read only (the
    load explains the miss: ``expectations.load_explains``); 90x above it is still a missing synchronize."""
    t = task("m07.copy")
    answer = _gpu_rounds(300.0)
    answer["observed"]["reference"] = [{"gbs": g} for g in (1000.0, 500.0, 500.0)]
    parts = t.score(t.visible()[0], answer, None)
    assert not any(p.mistake for p in parts if not p.ok) and fraction(parts) < 1.0
    assert any("the machine was busy" in p.message.en for p in parts if p.measured)
    answer = {**_gpu_rounds(90000.0), "observed": {**_gpu_rounds(90000.0)["observed"],
                                                    "reference": answer["observed"]["reference"]}}
    assert any(p.mistake == "no_synchronize" for p in t.score(t.visible()[0], answer, None))


@pytest.mark.parametrize("name,mistake", [("dot", "non_atomic"), ("dot", "atomic_per_thread"), ("dot", "missing_sync"),
                                          ("pool", "missing_sync"), ("pool", "global_in_loop"),
                                          ("scan", "in_place_race"), ("matmul", "naive"),
                                          ("matmul", "early_return")])
def test_a_kernel_the_exercise_says_does_not_pass_keeps_few_points(name, mistake):
    assert share(name, ref.MISTAKES[name][mistake], hidden=False) == 0.0
    assert share(name, ref.MISTAKES[name][mistake], hidden=True) <= 0.25


def test_messages_count_in_english_and_name_an_unwritten_element_only_when_it_is_one():
    t = task("m07.guard")
    parts = score_records(t, collect(t, (ref.affine, lambda n, threads: n // threads), cases_for(t, False, SEED)))
    text = " ".join(p.message.en for p in parts)
    assert "with 0 blocks" in text and "with 7 blocks" in text and "1 blocks" not in text
    scan = task("m07.scan")
    over = score_records(scan, collect(scan, ref.MISTAKES["scan"]["rereads"], cases_for(scan, False, SEED)))
    assert all("within" not in p.message.en for p in over if not p.ok)
    wrong = score_records(scan, collect(scan, ref.MISTAKES["scan"]["inclusive"], cases_for(scan, False, SEED)))
    assert not any("no thread wrote" in p.message.en for p in wrong)


def test_a_guard_with_hard_coded_blocks_fails_hidden_cases():
    assert share("guard", (ref.affine, lambda n, threads: 8), hidden=False) < 1.0


def test_the_simulator_choice_is_explained():
    assert device.SIMULATED and "simulator" in device.summary().en


def test_a_missing_triton_stands_in_and_says_why():
    stand_in = device._Absent()
    fn = stand_in.jit(lambda x: x)
    assert fn(3) == 3 and stand_in.language.constexpr is not None


def test_a_timer_that_calls_the_course_measurement_scores_nothing():
    """The lesson's `reference_copy_gbs` gives the right number on the virtual clock; calling it is not measuring."""
    with pytest.raises(CheckFailed) as failed:
        check("m07.copy", (tasks.reference_copy, lambda n: tasks.reference_copy_gbs(n)), points=3)
    assert "reference_copy_gbs" in str(failed.value)


def _one_timed_launch(n):
    """A learner's timer: the arrays made before the clock, one launch timed, no warm-up."""
    src = cuda.to_device(np.ones(n, np.float32))
    dst = cuda.device_array_like(src)
    began = perf_counter()
    ref.copy_kernel[(n + 255) // 256, 256](dst, src)
    cuda.synchronize()
    return 2 * n * 4 / (perf_counter() - began) / 1e9


def _one_launch_no_synchronize(n):
    src = cuda.to_device(np.ones(n, np.float32))
    dst = cuda.device_array_like(src)
    began = perf_counter()
    ref.copy_kernel[(n + 255) // 256, 256](dst, src)
    return 2 * n * 4 / (perf_counter() - began) / 1e9


def _copies_inside_the_clock(n):
    began = perf_counter()
    src = cuda.to_device(np.ones(n, np.float32))
    dst = cuda.device_array_like(src)
    ref.copy_kernel[(n + 255) // 256, 256](dst, src)
    dst.copy_to_host()
    return 2 * n * 4 / (perf_counter() - began) / 1e9


@pytest.mark.parametrize("timer,mistake", [(_one_timed_launch, "no_warmup"),
                                           (_one_launch_no_synchronize, "no_synchronize"),
                                           (_copies_inside_the_clock, "timed_copies")])
def test_a_copy_before_the_clock_is_not_timed_and_a_missing_synchronize_is_named(timer, mistake):
    """Only copies made after the clock was first read are inside the timing; no synchronize at all is named even
    when the number comes out too slow (the first launch's compile was timed too)."""
    t = task("m07.copy")
    records = collect(t, (ref.copy_kernel, timer), cases_for(t, False, SEED), "m07.copy")
    parts = score_records(t, records)
    assert [p.mistake for p in parts if not p.ok] == [mistake]
    if mistake == "no_synchronize":
        assert "compiles" in next(p for p in parts if not p.ok).message.en


def test_the_counter_tells_a_tree_from_one_thread_reading_the_block():
    """The shared reads of the busiest thread: about two per level in a tree, the whole block in a serial loop."""
    n = 300
    args = (np.zeros(1, np.float32), np.ones(n, np.float32), np.ones(n, np.float32), n)
    tree = traffic.trace(ref.dot, tasks.cdiv(n, tasks.DOT_TPB), tasks.DOT_TPB, *args)
    serial = traffic.trace(ref.MISTAKES["dot"]["serial_reduction"], tasks.cdiv(n, tasks.DOT_TPB), tasks.DOT_TPB,
                           np.zeros(1, np.float32), *args[1:])
    assert tree.shared_most[0] == 2 * 6 + 1 and tree.barriers == 7
    assert serial.shared_most[0] == tasks.DOT_TPB and serial.barriers == 1


def test_contiguous_chunks_are_uncoalesced_and_the_grid_stride_loop_is_not():
    t = task("m07.stride")
    answer = t.answer(ref.MISTAKES["stride"]["contiguous_chunks"], t.visible()[0])
    assert answer["sectors"]["x"] > tasks.STRIDE_SECTORS_MAX
    assert t.answer(ref.axpy, t.visible()[0])["sectors"]["x"] <= 4.0


def test_each_block_takes_the_shared_memory_the_system_reserves():
    """Compute capability 8.0+: 1 KB per block beyond its own, so 2 KB blocks fit 76 to an H100 SM (228 KB), not 114."""
    from autograder.modules.m07_kernels.lesson import occupancy
    assert occupancy(64, 32, 2048)["by shared memory"] == 228 * 1024 // (2048 + 1024) == 76


# ---------------------------------------------------------------- a hint names a cause only where the evidence shows it
def _named(name: str, learner, hidden: bool = False) -> set:
    t = task(f"m07.{name}")
    return {p.mistake for p in score_records(t, collect(t, learner, cases_for(t, hidden, SEED))) if not p.ok}


@cuda.jit
def _scan_minus_kept_x(out, x, n):
    """The inclusive scan minus x[t], with the x[t] it loaded kept in a variable: x is read once."""
    buf = cuda.shared.array(tasks.SCAN_TPB, numba.float32)
    t = cuda.threadIdx.x
    mine = x[t] if t < n else 0
    buf[t] = mine
    cuda.syncthreads()
    offset = 1
    while offset < tasks.SCAN_TPB:
        v = buf[t - offset] if t >= offset else 0
        cuda.syncthreads()
        buf[t] += v
        cuda.syncthreads()
        offset *= 2
    if t < n:
        out[t] = buf[t] - mine


def test_an_exclusive_scan_as_the_inclusive_minus_x_read_once_is_right():
    """A learner's "inclusive - x[i]" was told it read n(n-1)/2 elements: read once, it is a right answer; read
    again, it is told that it read x twice (x_twice), not that each thread added up its prefix."""
    assert share("scan", _scan_minus_kept_x) == 1.0
    assert _named("scan", ref.MISTAKES["scan"]["x_twice"]) == {"x_twice", None}


@cuda.jit
def _outer_columns_guarded(out, a, b):
    c, r = cuda.grid(2)
    if c < out.shape[1]:             # rows and columns right; the rows left unguarded
        out[r, c] = a[r] * b[c]


@cuda.jit
def _outer_swapped_unguarded(out, a, b):
    r, c = cuda.grid(2)
    out[r, c] = a[r] * b[c]


def test_a_broadcast_is_told_rows_and_columns_swapped_only_when_a_thread_took_them_swapped():
    assert _named("broadcast", _outer_columns_guarded) == {"guard_one_dim", None}
    assert "row_col_swap" in _named("broadcast", _outer_swapped_unguarded)


@cuda.jit
def _affine_reads_next(out, x, n):
    i = cuda.grid(1)
    if i < n:
        out[i] = 3 * x[i] - 1 + 0 * x[i + 1]   # guarded, yet reads one past its own element


@cuda.jit
def _axpy_stops_short(out, x, y, n):
    for i in range(cuda.grid(1), n - 1, cuda.gridsize(1)):
        out[i] = 2 * x[i] + y[i]


@cuda.jit
def _axpy_twice(out, x, y, n):
    for i in range(cuda.grid(1), n, cuda.gridsize(1)):
        out[i] = 2 * x[i] + y[i]
        out[i] = 2 * x[i] + y[i]     # the right stride, each element written twice by its own thread


def test_an_access_or_a_gap_no_guard_or_missing_loop_explains_names_none():
    """x[i + 1] past the end is no missing or off-by-one guard; a grid-stride loop that stops one short is a loop;
    a thread writing its element twice did not step by one block."""
    assert _named("guard", (_affine_reads_next, ref.blocks_for)) == {None}
    assert _named("stride", _axpy_stops_short) == {None}
    assert _named("stride", _axpy_twice) == {None}


def test_a_naive_matmul_is_not_told_to_transpose_tiles_it_does_not_load():
    assert _named("matmul", ref.MISTAKES["matmul"]["naive"]) == {"naive", None}
