"""A busy machine (issue 27 item 5): no stored measurement is trusted later, and no lesson lies about its points.

A learner's profile was measured while the machine was busy, 89x too low: lesson 06 then printed an MFU of 44 and a
report card at 10,720 % of peak, exercise 06 marked a live peak wrong, lesson 01 titled falling points "bigger fills
the device better" and lesson 03 showed `add` at 143 % of the roof. The unit tests hold the rules on fake timings;
the last test seeds such a profile and runs the lessons and exercise 06's check.
"""
import ast
import itertools
import json
import re
from pathlib import Path

import pytest

from autograder import layout, lesson, reference, results
from autograder.i18n import get_language, set_language
from autograder.profiles import Profile

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def english():
    before = get_language()
    set_language("en")
    yield
    set_language(before)


def scripted(values):
    """``fn(point)`` that returns ``values[point]`` pass after pass (the last one repeated), counting its calls."""
    passes = {p: iter(itertools.chain(v, itertools.repeat(v[-1]))) for p, v in values.items()}
    calls = []

    def fn(point):
        calls.append(point)
        return next(passes[point])
    return fn, calls


# ---------------------------------------------------------------- the spread rule (fake timings)
def test_a_quiet_series_is_measured_twice_in_turns_and_not_labelled(english):
    fn, calls = scripted({64: [5.0, 5.1], 128: [9.0, 8.8], 256: [20.0, 20.5]})
    series = lesson.measure(fn, [64, 128, 256])
    assert calls == [64, 128, 256] * 2 and series == [5.1, 9.0, 20.5] and series.passes == 2
    assert series.spread < lesson.SPREAD_LIMIT and series.busy is None


def test_a_noisy_series_is_measured_again_and_labelled_when_it_stays_noisy(english):
    fn, calls = scripted({64: [30.0, 3.0], 128: [1.0]})   # one fast pass at 64, never seen again
    series = lesson.measure(fn, [64, 128])
    assert series.passes == lesson.MAX_PASSES and len(calls) == 2 * lesson.MAX_PASSES
    assert series == [30.0, 1.0] and series.spread == pytest.approx(0.9)
    assert series.busy.en == "this machine is busy: spread 90 %" and "90" in series.busy.ko and "바쁩니다" in series.busy.ko
    assert lesson.title("rising", "flat", series).splitlines() == ["flat", "this machine is busy: spread 90 %"]


def test_a_busy_moment_measured_again_is_not_labelled(english):
    fn, _ = scripted({64: [30.0, 29.0], 128: [0.06, 40.0, 41.0]})  # one pass caught a busy moment, the next two agree
    series = lesson.measure(fn, [64, 128])
    assert series.passes == 3 and series == [30.0, 41.0] and series.busy is None


def test_the_budget_bounds_the_measuring_again():
    fn, calls = scripted({64: [30.0, 3.0]})
    series = lesson.measure(fn, [64], budget_s=0.0)
    assert series.passes == 2 and len(calls) == 2 and series.busy is not None


def test_times_keep_the_fastest():
    fn, _ = scripted({1: [3.0, 1.0], 2: [2.0, 2.1]})
    assert lesson.measure(fn, [1, 2], better=min)[:2] == [1.0, 2.0]


def test_a_table_of_runs_keeps_the_fastest_run_and_says_when_it_stayed_noisy(english, monkeypatch):
    fn, _ = scripted({"copy": [{"gbs": 10.0, "n": 1}, {"gbs": 12.0, "n": 2}, {"gbs": 11.5, "n": 3}],
                      "triad": [{"gbs": 30.0, "n": 1}, {"gbs": 3.0, "n": 2}]})
    found = lesson.measure(fn, ["copy", "triad"], key="gbs")
    assert [r["n"] for r in found] == [2, 1] and found.busy is not None   # triad's 30 was never seen again
    shown = []
    monkeypatch.setattr("IPython.display.display", lambda html: shown.append(html.data))
    lesson.show_table([{"kernel": "copy"}], measured=found)
    lesson.show_table([{"kernel": "copy"}], measured=lesson.measure(fn, ["copy"], key="gbs"))
    assert shown[0].endswith("<p>this machine is busy: spread 90 %</p>") and shown[1].endswith("</table>")


def test_a_title_never_states_a_trend_its_points_contradict(english):
    """Lesson 01's busy-machine points: n = 64 at 30 GFLOP/s, n = 128 at 0.06, measured steadily (no busy label)."""
    fn, _ = scripted({64: [30.0], 128: [0.06], 256: [20.0], 512: [25.0], 1024: [40.0]})
    falling = lesson.measure(fn, [64, 128, 256, 512, 1024])
    assert falling.busy is None and lesson.title("bigger fills the device better", "no trend", falling) == "no trend"
    fn, _ = scripted({64: [5.0], 128: [9.0], 256: [20.0]})
    assert lesson.title("bigger fills the device better", "no trend", lesson.measure(fn, [64, 128, 256])) == \
        "bigger fills the device better"
    assert lesson.title("bigger fills the device better", "no trend") == "no trend"   # no points: no trend


def test_the_mfu_and_roof_figures_say_what_their_points_show(english, monkeypatch):
    import matplotlib.pyplot as plt

    from autograder.modules.m03_memory_hierarchy import lesson as m03
    from autograder.modules.m06_choosing_hardware import lesson as m06
    monkeypatch.setattr(plt, "show", lambda: None)
    fn, _ = scripted({8: [0.01, 0.03, 0.01], 32: [0.02], 128: [0.04], 512: [0.05]})   # 0.03 seen once: noisy
    rates = lesson.measure(fn, [8, 32, 128, 512])
    try:
        m06.plot_mfu({b: r / 0.1 for b, r in zip([8, 32, 128, 512], rates)}, rates)
        assert plt.gcf().axes[0].get_title().splitlines() == ["MFU by batch size: in this run it did not rise with the batch",
                                                              "this machine is busy: spread 67 %"]
        plt.close("all")
        sweep = lesson.measure(scripted({1: [10.0], 2: [10.0], 8: [2.0], 16: [2.0]})[0], [1, 2, 8, 16])
        m03.plot_sweep([1, 2, 8, 16], sweep, [("L2", 4)], "cpu")
        assert plt.gcf().axes[0].get_title() == "cpu: bandwidth falls once the working set leaves the cache"
        plt.close("all")
        m03.plot_sweep([1, 2, 8, 16], [2.0, 2.0, 10.0, 10.0], [("L2", 4)], "cpu")
        assert plt.gcf().axes[0].get_title() == "cpu: read bandwidth by working-set size"
    finally:
        plt.close("all")



def test_the_fusion_table_is_measured_in_turns_and_says_slower_only_where_its_times_show_it(english, monkeypatch, capsys):
    """Lesson 03's fusion table (a copy, the unfused 4 steps, torch.compile's kernel) on a fake harness's times."""
    from types import SimpleNamespace

    from autograder import harness
    from autograder.modules.m03_memory_hierarchy import lesson as m03
    shown, timed = [], []
    monkeypatch.setattr("IPython.display.display", lambda html: shown.append(html.data))

    def fusion(times):
        """The lesson's two calls on kernels whose ``call`` is the name its fake harness times (8 MB moved each)."""
        runs = {name: iter(itertools.chain(v, itertools.repeat(v[-1]))) for name, v in times.items()}
        monkeypatch.setattr(harness, "time_fn", lambda call, device, budget_s: timed.append(call) or
                            SimpleNamespace(median_s=next(runs[call])))
        kernels = {name: (name, 8e6) for name in times}
        seconds = m03.measure_fusion(kernels, "cpu")
        m03.show_fusion(kernels, seconds)
        return seconds, capsys.readouterr().out

    # the 4 steps caught one fast moment, never seen again: not called slower, and the table says the machine is busy
    seconds, out = fusion({"copy": [0.010], "4 steps": [0.009, 0.030]})
    assert timed[:4] == ["copy", "4 steps"] * 2 and seconds == [0.010, 0.009] and seconds.busy is not None
    assert shown[-1].endswith("<p>this machine is busy: spread 70 %</p>")
    assert "not clearly slower than one copy (time ratio 0.9, byte ratio 4)" in out and "x slower" not in out

    seconds, out = fusion({"copy": [0.010], "4 steps": [0.040], "torch.compile": [0.011]})   # steady and clear
    assert seconds.busy is None and shown[-1].endswith("</table>") and "<td>0.8</td>" in shown[-1]   # 8 MB in 10 ms
    assert out.splitlines() == ["The 4 steps are 4.0x slower than one copy (4x the bytes)",
                                "torch.compile's one kernel is 3.6x faster than the 4 steps"]
    _, out = fusion({"copy": [0.010], "4 steps": [0.040], "torch.compile": [0.045]})   # compiled, and no faster
    assert "torch.compile's kernel was not clearly faster than the 4 steps (time ratio 0.9)" in out and "x faster" not in out


def test_lesson_01s_two_timers_claim_only_what_their_times_show(english):
    """Lesson 01's pairs of timers (without and with waiting for the work), scripted."""
    from autograder.modules.m01_devices import lesson as m01

    def pair(no_wait, wait):
        runs = [iter(itertools.chain(v, itertools.repeat(v[-1]))) for v in (no_wait, wait)]
        return (lambda: next(runs[0])), (lambda: next(runs[1]))

    pairs = {"fake GPU": pair([2e-6, 1e-6, 3e-6], [0.050]),   # a launch's µs jitter says nothing of the machine
             "blocking": pair([0.020], [0.021]),                # a device whose launch waits: the timers agree
             "half": pair([0.010], [0.015])}
    timed = m01.timer_pairs(pairs)
    assert timed.passes == 2 and timed.busy is None and [r["wait"] for r in timed] == [0.050, 0.021, 0.015]
    assert m01.timer_lines(pairs, timed) == [
        "fake GPU: the timer that did not wait measured 25,000x less: not the whole work",
        "blocking: in this run the two timers did not clearly differ",
        "half: the timer that did not wait measured 1.5x less: not the whole work"]
    pairs = {"busy": pair([0.020], [0.021, 0.080])}   # the waiting timer stays noisy
    timed = m01.timer_pairs(pairs)
    assert timed.busy is not None and m01.timer_lines(pairs, timed) == [
        "busy: in this run the two timers did not clearly differ", "this machine is busy: spread 74 %"]

def test_lesson_02s_matmuls_keep_the_task_size_are_timed_in_turns_and_compare_only_where_clear(english, monkeypatch):
    """Lesson 02's table of matmul TFLOP/s per dtype, on a fake ``reference.matmul_tflops`` (TFLOP/s per dtype and size)."""
    from autograder import reference
    from autograder.modules.m02_gpu_architecture import lesson as m02
    calls = []

    def matmuls(rates):
        runs = {key: iter(itertools.chain(v, itertools.repeat(v[-1]))) for key, v in rates.items()}
        monkeypatch.setattr(reference, "matmul_tflops", lambda dt, device, budget_s, sizes: calls.append((dt, sizes[0]))
                            or {"tflops": next(runs[dt, sizes[0]])})
        calls.clear()
        return m02.measured_matmuls("cpu", sorted({dt for dt, _ in rates}, reverse=True), None)

    # fp32 first takes 0.05 s at n = 512 (n = 1024 would be faster: never timed); its one fast run is never seen again
    found = matmuls({("float32", 256): [0.002], ("float32", 512): [0.003, 0.001], ("float32", 1024): [0.1],
                     ("bfloat16", 256): [0.00001]})
    assert calls[:3] == [("float32", 256), ("float32", 512), ("bfloat16", 256)]     # the size search: pass 1
    assert calls[3:] == [("float32", 512), ("bfloat16", 256)] * (lesson.MAX_PASSES - 1)   # then the dtypes in turns
    assert [(r["dtype"], r["n"], r["tflops"]) for r in found] == [("float32", 512, 0.003), ("bfloat16", 256, 0.00001)]
    assert found.busy.en == "this machine is busy: spread 67 %"
    assert m02.matmul_lines(found) == ["bfloat16: 300x slower than float32 in this run"]

    found = matmuls({("float32", 256): [0.0006], ("bfloat16", 256): [0.0006, 0.00055]})   # steady and close
    assert found.passes == 2 and found.busy is None
    assert m02.matmul_lines(found) == ["bfloat16: in this run not clearly different from float32"]
    found = matmuls({("float32", 256): [0.0006], ("bfloat16", 256): [0.0002]})
    assert m02.matmul_lines(found) == ["bfloat16: 3.0x slower than float32 in this run"]


def test_lesson_04s_techniques_are_timed_in_turns_and_compared_with_plain_only_where_clear(english, monkeypatch):
    """Lesson 04's table and step-time plot of the four techniques, on a fake ``measure`` (step seconds per pass)."""
    import matplotlib.pyplot as plt

    from autograder.modules.m04_training_memory import lesson as m04
    calls = []

    def techniques(steps):
        runs = {name: iter(itertools.chain(v, itertools.repeat(v[-1]))) for name, v in steps.items()}
        def measure(technique, device, budget_s):
            calls.append(technique)
            step_s = next(runs[technique])
            return m04.Result(technique, None if step_s is None else 1 << 20, step_s, "method")
        monkeypatch.setattr(m04, "measure", measure)
        calls.clear()
        return m04.measure_techniques("cpu")

    # no autocast on this device (no step time); plain caught one fast moment, never seen again
    found = techniques({"plain": [0.010, 0.030], "autocast": [None], "checkpoint": [0.011], "accumulation": [0.024]})
    assert calls == list(m04.TECHNIQUES) * lesson.MAX_PASSES
    assert [r.step_s for r in found] == [0.010, None, 0.011, 0.024] and found.busy is not None
    assert m04.technique_lines(found) == [
        "checkpointing: in this run the step time did not clearly differ from plain training's",
        "accumulation ×4: in this run a step took 2.4x as long as plain training's"]
    try:
        m04.plot_techniques(found, "cpu")
        assert plt.gcf().axes[1].get_title().splitlines() == ["Step time (cpu)", "this machine is busy: spread 67 %"]
    finally:
        plt.close("all")

    found = techniques({"plain": [0.010], "autocast": [0.004, 0.0041], "checkpoint": [0.013], "accumulation": [0.011]})
    assert calls == list(m04.TECHNIQUES) * 2 and found.busy is None
    assert m04.technique_lines(found) == [
        "autocast: in this run a step was 2.5x faster than plain training's",
        "checkpointing: in this run a step took 1.3x as long as plain training's",
        "accumulation ×4: in this run the step time did not clearly differ from plain training's"]


def test_lesson_05s_sweep_is_timed_in_turns_by_ranks_that_agree_and_its_fit_is_caveated_when_busy(english, monkeypatch,
                                                                                                    capsys):
    """Lesson 05's all-reduce sweep: the rank program run in this process on a fake ``measure_allreduce`` (seconds
    per size and pass) and a fake all-reduce standing for the other ranks' wish to measure again."""
    import matplotlib.pyplot as plt
    import torch.distributed as dist

    from autograder import ranks
    from autograder.modules.m05_networking import lesson as m05
    shown, calls = [], []
    monkeypatch.setattr("IPython.display.display", lambda html: shown.append(html.data))
    monkeypatch.setattr(plt, "show", lambda: None)
    monkeypatch.setattr(ranks, "run", lambda fn, args, world_sizes, backend: [[fn(*args)]])

    def sweep(times, others=(1,)):
        runs = {size: iter(itertools.chain(v, itertools.repeat(v[-1]))) for size, v in times.items()}
        monkeypatch.setattr(ranks, "measure_allreduce", lambda d, sizes, budget_s, total_s, device: calls.append(sizes[0])
                            or [{"seconds": next(runs[sizes[0]])}])
        wishes = itertools.chain(others, itertools.repeat(others[-1]))   # the other ranks' wish to measure again
        monkeypatch.setattr(dist, "all_reduce", lambda flag, op: flag.clamp_(max=next(wishes)))
        calls.clear()
        return m05.measure_allreduce_sizes(list(times), 4, "gloo", "cpu")

    sizes = [4096, 1 << 20, 16 << 20]
    seconds = sweep({4096: [1e-4], 1 << 20: [2e-3, 2.1e-3], 16 << 20: [0.030, 0.031]})   # steady
    assert calls == sizes * 2 and seconds == [1e-4, 2e-3, 0.030] and seconds.busy is None
    fit = m05.fit_alpha_beta(sizes, seconds, 4)
    assert m05.fit_line(fit, 4, "gloo", seconds).startswith("gloo, 4 ranks: α = ")
    m05.show_allreduce(sizes, seconds, [1.0, 2.0, 3.0])
    assert shown[-1].endswith("</table>")

    seconds = sweep({4096: [1e-4, 3e-4], 1 << 20: [2e-3], 16 << 20: [0.030]})   # one fast moment at 4 KiB
    assert calls == sizes * lesson.MAX_PASSES and seconds.busy is not None and seconds.passes == lesson.MAX_PASSES
    line = m05.fit_line(m05.fit_alpha_beta(sizes, seconds, 4), 4, "gloo", seconds)
    assert line.splitlines()[0] == ("This machine is busy and the times stayed noisy (spread 67 %), so this α and β "
                                    "are unreliable:") and line.splitlines()[1].startswith("gloo, 4 ranks: α = ")
    m05.show_allreduce(sizes, seconds, [1.0, 2.0, 3.0])
    assert shown[-1].endswith("<p>this machine is busy: spread 67 %</p>")
    try:
        m05.plot_busbw_fit(sizes, [1.0, 2.0, 3.0], fit, 4, "gloo", seconds)
        assert plt.gcf().axes[0].get_title().splitlines() == ["gloo all-reduce, 4 ranks (this machine)",
                                                              "this machine is busy: spread 67 %"]
    finally:
        plt.close("all")

    seconds = sweep({4096: [1e-4, 3e-4], 1 << 20: [2e-3], 16 << 20: [0.030]}, others=(1, 0))   # after two passes
    assert calls == sizes * 2 and seconds.passes == 2 and seconds.busy is not None   # another is out of time: all stop
    assert capsys.readouterr().err == ""


def test_lesson_07s_gpu_pairs_are_timed_in_turns_and_called_faster_only_where_clear(english):
    """Lesson 07's GPU section (course kernels against PyTorch's and cuBLAS's), on scripted rates (no GPU here)."""
    from autograder.modules.m07_kernels import lesson as m07
    fn, calls = scripted({"ours": [700.0], "torch": [1400.0, 1300.0], "tile": [1.1, 0.2], "cublas": [1.2]})
    pairs = {"copy": ("GB/s", {"course kernel": lambda: fn("ours"), "PyTorch": lambda: fn("torch")}),
             "matmul 2048": ("TFLOP/s", {"tile-8 kernel": lambda: fn("tile"), "cuBLAS": lambda: fn("cublas")})}
    rates = m07.measure_pairs(pairs)
    assert calls == ["ours", "torch", "tile", "cublas"] * lesson.MAX_PASSES and rates == [700.0, 1400.0, 1.1, 1.2]
    assert m07.pair_lines(pairs, rates) == [   # the tile kernel's one fast run is never seen again: no claim, busy
        "copy: course kernel 700 GB/s, PyTorch 1,400 GB/s: PyTorch is 2.0x faster than course kernel",
        "matmul 2048: tile-8 kernel 1.10 TFLOP/s, cuBLAS 1.20 TFLOP/s: in this run not clearly different",
        "this machine is busy: spread 82 %"]
    fn, calls = scripted({"ours": [700.0], "torch": [650.0], "tile": [0.5], "cublas": [20.0]})
    rates = m07.measure_pairs(pairs)
    assert calls == ["ours", "torch", "tile", "cublas"] * 2 and rates.busy is None
    assert m07.pair_lines(pairs, rates) == [
        "copy: course kernel 700 GB/s, PyTorch 650 GB/s: in this run not clearly different",
        "matmul 2048: tile-8 kernel 0.50 TFLOP/s, cuBLAS 20.00 TFLOP/s: cuBLAS is 40x faster than tile-8 kernel"]


# ---------------------------------------------------------------- no share of a measured peak passes 100 %
def test_a_measured_peak_is_raised_to_what_was_just_seen_and_says_so(english):
    assert reference.best_seen(0.065, 0.03) == (0.065, None)
    peak, note = reference.best_seen(0.00073, 0.065, 0.02)
    assert peak == 0.065 and "0.00073 TFLOP/s" in note.en and "raised to 0.065 TFLOP/s" in note.en and note.ko


def test_mfu_of_a_measured_peak_never_passes_one(capsys, english):
    from autograder.modules.m06_choosing_hardware import lesson as m06
    mfus, peak = m06.mfu_by_batch({8: 0.01, 128: 0.0321}, 0.00073, measured=True)   # the trial's 44.0 at batch 128
    assert peak == 0.0321 and mfus == {8: pytest.approx(0.01 / 0.0321), 128: 1.0}
    assert "raised to 0.0321 TFLOP/s" in capsys.readouterr().out
    mfus, peak = m06.mfu_by_batch({8: 10.0}, 67.0, measured=False)   # a spec sheet's peak stays
    assert peak == 67.0 and not capsys.readouterr().out


def test_the_roof_is_raised_to_a_point_above_it(capsys, english):
    """Lesson 03 showed `add` at 143 % of a copy bandwidth measured at a busier moment."""
    from autograder.modules.m03_memory_hierarchy import lesson as m03
    points = [("add", 1 / 12, 0.002), ("matmul 1024", 85.3, 0.15)]   # add: 24 GB/s against a 16.8 GB/s roof
    peak, gbs = m03.roof_for(points, peak_tflops=0.1, gbs=16.8)
    assert gbs == pytest.approx(24.0) and peak == pytest.approx(0.15)
    out = capsys.readouterr().out
    assert "raised to 24 GB/s" in out and "raised to 0.15 TFLOP/s" in out
    shares = [r["of the roof"] for r in m03.roof_rows(points, peak, gbs)]
    assert shares == ["100%", "100%"]
    assert m03.roof_for(points, peak_tflops=0.1, gbs=16.8, peak_measured=False)[0] == 0.1   # a spec peak stays


@pytest.fixture
def stale_profile(monkeypatch, tmp_path):
    """A measured CPU profile that stays 89x too low (as a cache no quick measurement raised)."""
    monkeypatch.setenv("COURSE_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(results, "machine", lambda: ("test-machine", {"device": "cpu"}))
    stale = Profile(id="measured_cpu_test", name="test CPU", kind="cpu", vendor="test",
                    peak_tflops={"fp32": 0.00073}, bandwidth_gbs=0.2, measured=True,
                    spec={"date": "2026-11-22", "matmul": {"fp32": {"tflops": 0.00073, "size": 256}},
                          "bandwidth": {"copy": {"gbs": 0.2}, "triad": {"gbs": 0.25}}})
    monkeypatch.setattr(reference, "measured_profile", lambda *a, **k: stale)
    monkeypatch.setattr(reference, "spec_profile", lambda device=None: None)
    return stale


def test_the_report_card_never_passes_100_percent_and_says_why(stale_profile, english):
    from autograder.modules.m06_choosing_hardware import report
    results.record("m02", "matmul_tflops_fp32", 0.0783, "TFLOP/s", device="cpu", size=1024)   # 10,720 % in the trial
    results.record("m03", "bandwidth_copy_gbs", 0.474, "GB/s", device="cpu")                 # 237 %
    rows = report.rows(report.gather("cpu", allreduce=False))
    fp32 = next(r for r in rows if r["what"] == "matmul fp32")
    copy = next(r for r in rows if r["what"] == "copy bandwidth")
    assert fp32["pct"] == 100.0 and "raised to 0.0783 TFLOP/s" in fp32["note"]
    assert copy["pct"] == 100.0 and "raised to 0.474 GB/s" in copy["note"]
    assert all(r["pct"] is None or r["pct"] <= 100 for r in rows)


def test_exercise_06_accepts_a_live_peak_measured_beside_its_rounds(stale_profile):
    """The trial's learner took a live peak (0.065 TFLOP/s) as the lesson does, against a stored 0.00073: marked wrong.
    A peak the referee measured now beside the rounds is an honest reference too."""
    import course_answers.m06_choosing_hardware as A
    from autograder.modules.m06_choosing_hardware import tasks
    case = {"device": "cpu", "dims": [512, 1024, 1024, 512], "batch": 128, "frozen": 1}
    flops = A.step_flops(case["dims"], case["batch"], case["frozen"])

    def answer(peak, live):
        rounds = [{"flops_per_step": flops, "seconds_per_step": 0.02, "peak_tflops": peak,
                   "utilization": flops / 0.02 / (peak * 1e12)}] * 3
        refs = [{"seconds": 0.02, **({"peak_tflops": live} if live else {})}] * 3
        spans = [[[0.02, "step"]] * 4] * 3  # the step's calls on the course's clock
        return {"rounds": rounds, "observed": {"walls": [1.0] * 3, "reference": refs, "spans": spans}}

    def peak_part(peak, live):
        parts = tasks._mfu_score(case, answer(peak, live), A.EXPECT["mfu"](case))
        return next(p for p in parts if p.label is not None and "peak_tflops" in p.label.en)

    assert peak_part(0.065, 0.058).ok                       # live against live: right
    assert "0.058" in peak_part(0.065, 0.058).message.en   # and the verdict names the live reference it was held to
    assert not peak_part(0.065, None).ok                   # only a stale stored figure: what the trial saw
    assert peak_part(0.00073, 0.058).ok                     # the stored figure, as the task text says, stays right
    assert not peak_part(67.0, 0.058).ok                    # a GPU's spec peak is no CPU's


# ---------------------------------------------------------------- lessons and exercise 06 on a profile 89x too low
def seed_stale_cache(factor: float = 89.0) -> dict:
    """Write this machine's measured profile, ``factor`` times below a live measurement, as ``reference._save`` does."""
    name = "cpu"
    live_tflops = reference.matmul_tflops("fp32", name, budget_s=0.5)["tflops"]
    live_gbs = reference.bandwidth_gbs("copy", name, budget_s=0.3)["gbs"]
    timing = {"median_s": 1.0, "spread": 1.0, "n": 3, "threads": 1}
    record = {"key": reference.machine_key(name), "date": "2026-11-20", "budget_s": 15.0,
              "matmul": {dt: {"tflops": live_tflops / factor, "size": 256, "library": "torch", **timing}
                         for dt in ("fp32", "bf16")},
              "bandwidth": {kind: {"gbs": live_gbs / factor, "nbytes": 2**27, **timing} for kind in ("copy", "triad")}}
    reference._save(reference._cache_path(name), record)
    return record


def run_lesson(number_topic: str) -> list:
    import nbclient
    import nbformat
    path = layout.lesson(number_topic, "en", ROOT)
    nb = nbformat.read(path, as_version=4)
    nbclient.NotebookClient(nb, timeout=300, resources={"metadata": {"path": str(path.parent)}}).execute()
    return nb.cells


def outputs(cells) -> str:
    text = []
    for cell in cells:
        for out in cell.get("outputs", []):
            text.append(out.get("text", ""))
            for kind in ("text/plain", "text/html"):
                text.append((out.get("data") or {}).get(kind, ""))
    return "\n".join(text)


def table_column(html: str, header: str) -> list[str]:
    """The cells under ``header`` in every HTML table of ``html`` that has it."""
    found = []
    for table in re.findall(r"<table>.*?</table>", html, re.S):
        heads = re.findall(r"<th>(.*?)</th>", table, re.S)
        if header in heads:
            at = heads.index(header)
            found += [re.findall(r"<td>(.*?)</td>", row, re.S)[at] for row in re.findall(r"<tr>(.*?)</tr>", table, re.S)
                      if "<td>" in row]
    return found


def test_lessons_and_exercise_06_on_a_profile_89x_too_low(tmp_path, monkeypatch):
    """No figure a lesson prints exceeds 100 % of a peak, and exercise 06's check passes an honest live peak."""
    monkeypatch.setenv("COURSE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("COURSE_NO_PROGRESS", "1")
    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.setenv("COURSE_LANG", "en")   # the .en notebooks' language (the kernel cannot see their names here)
    monkeypatch.chdir(tmp_path)
    stored = seed_stale_cache()
    assert json.loads(reference._cache_path("cpu").read_text())["matmul"]["fp32"]["tflops"] == \
        stored["matmul"]["fp32"]["tflops"]

    text = outputs(run_lesson("03_memory_hierarchy"))   # first: it records the bandwidths the report card compares
    roof = table_column(text, "of the roof")
    assert len(roof) == 5 and all(v.endswith("%") and int(v[:-1]) <= 100 for v in roof), roof

    text = outputs(run_lesson("01_devices"))
    fp32 = [v for d, v in zip(table_column(text, "dtype"), table_column(text, "TFLOP/s")) if d == "fp32"]
    assert fp32 and float(fp32[0]) > 10 * stored["matmul"]["fp32"]["tflops"]   # not the stale figure

    text = outputs(run_lesson("06_choosing_hardware"))
    mfu = re.search(r"MFU: (\{.*?\})", text)
    assert mfu and all(0 < v <= 1 for v in ast.literal_eval(mfu.group(1)).values()), mfu
    shares = [float(v) for v in table_column(text, "% of peak") if v]
    assert shares and all(v <= 100 for v in shares), shares

    # exercise 06's task 7: the reference solution and a learner who takes a live peak as lesson cell 30 does
    import course_answers.m06_choosing_hardware as A
    from autograder.checks import task
    from autograder.checks.core import cases_for, collect, score_records
    from autograder.harness import time_fn

    def live_peak(make_step, device, dims, batch, frozen):
        seconds = time_fn(make_step(dims, batch, device, frozen), device=device, budget_s=0.3).median_s
        peak = reference.matmul_tflops("fp32", device, budget_s=0.4)["tflops"]
        flops = A.step_flops(dims, batch, frozen)
        return {"flops_per_step": flops, "seconds_per_step": seconds, "peak_tflops": peak,
                "utilization": flops / seconds / (peak * 1e12)}

    monkeypatch.delenv("COURSE_REFEREE", raising=False)
    t = task("m06.mfu")
    for learner in (A.step_utilization, live_peak):
        [record] = collect(t, learner, cases_for(t, False, 1234), "m06.mfu")
        parts = score_records(t, [record])
        assert record["error"] is None and all(p.ok for p in parts[:3]), [p.message.en for p in parts[:3]]
