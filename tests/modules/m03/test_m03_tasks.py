"""Checks of module 03: references get full marks, stubs fail, typical mistakes lose points, hard-coding fails hidden cases."""
import ast
import random
from pathlib import Path

import matplotlib.pyplot as plt
import pytest

from autograder.checks import CheckFailed, check, task
from autograder.checks.core import cases_for, collect, fraction, score_records
from autograder.modules.m03_memory_hierarchy import analysis
from autograder.modules.m03_memory_hierarchy import tasks as checks
from course_answers import m03_memory_hierarchy as ref

SEED = 1234


@pytest.fixture(autouse=True)
def _english_and_seed(monkeypatch):
    monkeypatch.setenv("COURSE_LANG", "en")
    monkeypatch.setenv("COURSE_GRADING_SEED", str(SEED))
    monkeypatch.delenv("COURSE_RECORD_ANSWERS", raising=False)
    yield
    plt.close("all")


def share(name: str, fn, hidden: bool = True) -> float:
    t = task(f"m03.{name}")
    return fraction(score_records(t, collect(t, fn, cases_for(t, hidden, SEED))))


def stub(*args, **kwargs):
    raise NotImplementedError()


EXACT = {"intensity": ref.arithmetic_intensity, "roofline": ref.roofline_for_profile, "decode": ref.decode_bound,
         "capacity": ref.on_chip_capacity, "plot": ref.plot_roofline}


@pytest.mark.parametrize("task", sorted(EXACT))
def test_reference_gets_full_marks(task, capsys):
    assert check(f"m03.{task}", EXACT[task], points=3, hidden=True) is None
    assert "passed" in capsys.readouterr().out


@pytest.mark.parametrize("task", sorted(checks.TASKS))
def test_stub_fails(task):
    with pytest.raises(CheckFailed):
        check(f"m03.{task}", stub, points=3, hidden=True)


@pytest.mark.parametrize("name", sorted(EXACT))
def test_hidden_cases_change_with_the_seed(name):
    assert ref.HIDDEN[name](random.Random(1)) != ref.HIDDEN[name](random.Random(2))


def _hard_coded(name: str, fn):
    """A learner function that returns the reference's answers to the visible cases only."""
    t = task(f"m03.{name}")
    table = {repr(c): t.answer(fn, c) for c in cases_for(t, False, SEED)}
    first = next(iter(table.values()))
    return lambda *args: first


@pytest.mark.parametrize("task", ["intensity", "roofline", "decode", "capacity"])
def test_hard_coded_answer_fails_hidden_cases(task):
    assert share(task, _hard_coded(task, EXACT[task])) < 0.5


def test_intensity_forgetting_the_output_write_loses_points():
    def inputs_only(op, shape, dtype):
        r = ref.arithmetic_intensity(op, shape, dtype)
        out = shape[0] if op != "add" else shape[0]
        moved = r["bytes"] - out * ref.BYTES_PER_ELEMENT[dtype]
        return {"flops": r["flops"], "bytes": moved, "intensity": r["flops"] / moved}
    assert 0 < share("intensity", inputs_only) < 1


def test_roofline_with_a_unit_mistake_loses_points():
    def gb_as_tb(profile, dtype, intensity):  # bandwidth taken as TB/s: ridge off by 1000
        peak, bw = profile.peak(dtype), profile.bandwidth_gbs
        ridge = peak / bw
        return {"ridge": ridge, "attainable_tflops": min(peak, intensity * bw),
                "bound": "memory" if intensity < ridge else "compute"}
    assert share("roofline", gb_as_tb) < 0.5


def test_decode_without_k_and_v_factor_loses_points():
    def half_kv(model, batch, context, bw):
        r = ref.decode_bound(model, batch, context, bw)
        kv = r["kv_cache_bytes"] // 2
        step = model["params"] * model["weight_bytes"] + kv
        return {"kv_cache_bytes": kv, "bytes_per_step": step, "tokens_per_s": batch * bw * 1e9 / step}
    assert share("decode", half_kv) < 0.5


def test_capacity_with_the_seeds_256_kb_smem_loses_points():
    def seed_smem(spec):
        r = ref.on_chip_capacity(spec)
        smem = spec["sms"] * 256
        return {**r, "smem_kb": smem, "total_kb": smem + r["registers_kb"] + r["l2_kb"]}
    assert 0 < share("capacity", seed_smem) < 1


def test_wrong_return_type_is_reported_not_raised():
    assert share("intensity", lambda op, shape, dtype: 1.0) == 0.0


# ---------------------------------------------------------------- task 7: figure
def test_plot_linear_axes_and_missing_points_get_partial_credit():
    def linear(peak, bw, points):
        fig = ref.plot_roofline(peak, bw, [])
        fig.axes[0].set_xscale("linear")
        return fig
    assert 0 < share("plot", linear) < 0.8


def test_plot_two_crossing_lines_are_not_the_roof():
    import numpy as np

    def crossing(peak, bw, points):
        fig, ax = plt.subplots()
        x = np.logspace(-3, 5, 50)
        ax.loglog(x, x * bw / 1e3)
        ax.loglog(x, np.full_like(x, peak))
        for p in points:
            ax.scatter(p["intensity"], p["tflops"])
        ax.set_xlabel("FLOP/byte"); ax.set_ylabel("TFLOP/s")
        return fig
    assert share("plot", crossing) == pytest.approx(3 / 5)  # axes 1 + labels 0.5 + points 1.5 of 5; no roof


def test_plot_accepts_markers_drawn_with_plot():
    def with_markers(peak, bw, points):
        fig = ref.plot_roofline(peak, bw, [])
        fig.axes[0].plot([p["intensity"] for p in points], [p["tflops"] for p in points], "o")
        return fig
    assert share("plot", with_markers) == 1.0


def test_plot_not_a_figure():
    assert share("plot", lambda *a: "a plot") == 0.0


def test_figure_data_is_plain_json():
    import json
    fig = ref.plot_roofline(10.0, 100.0, [{"label": "p", "intensity": 1.0, "tflops": 0.05}])
    data = checks.figure_data(fig)
    json.dumps(data, allow_nan=False)
    assert data["xscale"] == "log" and data["markers"] == [[1.0, 0.05]]


# ---------------------------------------------------------------- measurements: answers as recorded, by hand
def observed(rounds, references, walls=None):
    """A measurement answer: the learner's rounds and what the referee observed (walls, references)."""
    walls = [1.0] * len(rounds) if walls is None else walls
    return {"rounds": rounds, "observed": {"walls": walls, "reference": references}}


# ---------------------------------------------------------------- task 5: copy bandwidth
COPY_CASE = {"factor": 4}


def _grading_hardware(monkeypatch, device, spec, llc=50 * 2**20):
    monkeypatch.setattr(checks, "_device", lambda: device)
    monkeypatch.setattr(checks, "last_level_cache", lambda d: llc)
    monkeypatch.setattr(checks, "_spec_bandwidth", lambda d: spec)


def copy_answer(gbs, ref_gbs, rounds=3, walls=None, device="cuda"):
    mine = [{"device": device, "nbytes": 200 * 2**20, "gbs": g} for g in ([gbs] * rounds if not isinstance(gbs, list)
                                                                        else gbs)]
    return observed(mine, [{"gbs": ref_gbs}] * len(mine), walls)


def test_copy_inside_band_and_under_spec(monkeypatch):
    _grading_hardware(monkeypatch, "cuda", 3350.0)
    parts = checks._copy_score(COPY_CASE, copy_answer(3000.0, 2900.0), None)
    assert fraction(parts) == 1.0
    assert checks.TASKS["copy"].measurement and checks.TASKS["copy"].reference is not None


def test_copy_above_spec_fails_even_inside_the_band(monkeypatch):
    _grading_hardware(monkeypatch, "cuda", 3350.0)
    parts = checks._copy_score(COPY_CASE, copy_answer(3600.0, 3000.0), None)  # 1.2x the reference: in the band
    assert parts[0].ok and not parts[-1].ok and fraction(parts) < 1.0
    assert "3350" in parts[-1].message.en


def test_copy_far_from_the_reference_loses_the_band(monkeypatch):
    _grading_hardware(monkeypatch, "cpu", None)
    one_way = checks._copy_score(COPY_CASE, copy_answer(10.0, 20.0, device="cpu"), None)  # counted only the reads
    assert fraction(one_way) == 0.0 and "Slower than expected" in one_way[0].message.en
    cached = checks._copy_score(COPY_CASE, copy_answer(100.0, 20.0, device="cpu"), None)  # a buffer that fit the cache
    assert fraction(cached) == 0.0 and "Faster than the hardware can be" in cached[0].message.en


def test_copy_cpu_has_no_spec_cap(monkeypatch):
    _grading_hardware(monkeypatch, "cpu", None)
    parts = checks._copy_score(COPY_CASE, copy_answer(20.0, 18.0, device="cpu"), None)
    assert len(parts) == 1 and parts[0].ok


@pytest.mark.parametrize("value", [float("nan"), -1.0, "fast", None])
def test_copy_rejects_non_numbers(value, monkeypatch):
    _grading_hardware(monkeypatch, "cpu", None)
    assert fraction(checks._copy_score(COPY_CASE, copy_answer(value, 20.0, device="cpu"), None)) == 0.0
    assert fraction(checks._copy_score(COPY_CASE, copy_answer([20.0, value, 20.0], 20.0, device="cpu"), None)) == 0.0
    assert fraction(checks._copy_score(COPY_CASE, observed([], []), None)) == 0.0


def test_copy_must_be_measured_while_the_referee_watches(monkeypatch):
    # a 32 MiB cache: 4 x 32 MiB read and written at 20 GB/s takes 13 ms at least
    _grading_hardware(monkeypatch, "cpu", None, llc=32 * 2**20)
    assert fraction(checks._copy_score(COPY_CASE, copy_answer(20.0, 20.0, walls=[0.014] * 3, device="cpu"), None)) == 1.0
    constant = checks._copy_score(COPY_CASE, copy_answer(20.0, 20.0, walls=[0.014, 1e-5, 0.014], device="cpu"), None)
    assert fraction(constant) == 0.0 and "this was not measured" in constant[0].message.en
    unseen = checks._copy_score(COPY_CASE, copy_answer(20.0, 20.0, walls=[], device="cpu"), None)
    assert fraction(unseen) == 0.0 and "while the grader watched" in unseen[0].message.en


def test_copy_answer_sizes_buffer_from_the_cache(monkeypatch):
    monkeypatch.setattr(checks, "_device", lambda: "cpu")
    monkeypatch.setattr(checks, "last_level_cache", lambda device: 32 * 2**20)
    seen = []
    answer = checks._copy_answer(lambda nbytes, device: seen.append((nbytes, device)) or 12.5, {"factor": 4})
    assert seen == [(128 * 2**20, "cpu")] and answer["gbs"] == 12.5


def test_copy_reference_copies_the_cases_bytes_never_the_answers(monkeypatch):
    monkeypatch.setattr(checks, "_device", lambda: "cpu")
    monkeypatch.setattr(checks, "last_level_cache", lambda device: 32 * 2**20)
    seen = []

    def bandwidth_gbs(kind, device, nbytes, budget_s=1.0):
        seen.append((kind, device, nbytes))
        return {"gbs": 21.0}
    monkeypatch.setattr("autograder.reference.bandwidth_gbs", bandwidth_gbs)
    assert checks._copy_reference({"factor": 4}, {"device": "cpu", "nbytes": 4096, "gbs": 1e6}) == {"gbs": 21.0}
    assert seen == [("copy", "cpu", 128 * 2**20)]


# ---------------------------------------------------------------- task 6: sweep
LLC = 32 * 2**20
SWEEP_CASE = {"start_kib": 64, "beyond": 8, "per_octave": 1}


@pytest.fixture
def sweep_machine(monkeypatch):
    """A CPU with a 32 MiB last-level cache; ``levels`` are the cache sizes where the knee may sit."""
    levels = [LLC]
    monkeypatch.setattr(checks, "_device", lambda: "cpu")
    monkeypatch.setattr(checks, "last_level_cache", lambda device: LLC)
    monkeypatch.setattr(checks, "cache_levels", lambda device: list(levels))
    return levels


def sweep_answer(gbs_of, reference_of=None, sizes=None, walls=None, llc=LLC):
    """Three rounds of a sweep; the reference sweep is ``reference_of`` (default: the same values)."""
    sizes = sizes or checks.sweep_sizes(LLC)
    mine = {"device": "cpu", "llc_bytes": llc, "sizes": sizes, "gbs": [gbs_of(s) for s in sizes]}
    ref = {"gbs": [(reference_of or gbs_of)(s) for s in sizes]}
    return observed([mine] * 3, [ref] * 3, walls)


def stepped(s):
    return 90.0 if s <= LLC / 2 else 20.0


def test_sweep_good_shape_full_marks(sweep_machine):
    assert fraction(checks._sweep_score(SWEEP_CASE, sweep_answer(stepped), None)) == 1.0
    assert fraction(checks._sweep_score(SWEEP_CASE, sweep_answer(lambda s: 1.5 * stepped(s), stepped), None)) == 1.0


def test_sweep_flat_or_inverted_shapes_lose_points(sweep_machine):
    # measured like the reference (the ratio is in the band), but the shape is wrong
    assert fraction(checks._sweep_score(SWEEP_CASE, sweep_answer(lambda s: 30.0), None)) == pytest.approx(0.5)
    assert fraction(checks._sweep_score(SWEEP_CASE, sweep_answer(lambda s: s / 1e6), None)) == pytest.approx(0.5)


def test_sweep_far_from_the_reference_loses_the_band(sweep_machine):
    parts = checks._sweep_score(SWEEP_CASE, sweep_answer(lambda s: 10 * stepped(s), stepped), None)
    assert fraction(parts) == pytest.approx(0.5) and "Faster than the hardware can be" in parts[0].message.en


def test_sweep_knee_far_from_every_cache_loses_the_knee_part(sweep_machine):
    answer = sweep_answer(lambda s: 90.0 if s <= 2**20 else 20.0)  # falls after 1 MiB = LLC/32
    assert fraction(checks._sweep_score(SWEEP_CASE, answer, None)) == pytest.approx(0.75)


def test_sweep_knee_may_sit_at_any_cache_level(sweep_machine):
    sweep_machine[:] = [1 * 2**20, LLC]  # a 1 MiB L2 below the 32 MiB L3
    answer = sweep_answer(lambda s: 90.0 if s <= 2**20 else 20.0)
    assert fraction(checks._sweep_score(SWEEP_CASE, answer, None)) == 1.0
    assert fraction(checks._sweep_score(SWEEP_CASE, sweep_answer(stepped), None)) == 1.0


def test_cache_levels_are_l2_and_l3_on_a_cpu_and_l2_on_a_gpu(monkeypatch):
    from types import SimpleNamespace as S
    report = S(cpu=S(l2_bytes=2**21, l3_bytes=LLC, last_level_cache_bytes=LLC),
               accelerators=[S(device="cuda:0", backend="cuda", l2_bytes=50 * 2**20, name="NVIDIA H100 80GB HBM3")])
    monkeypatch.setattr("autograder.hardware.detect", lambda *a, **k: report)
    assert checks.cache_levels("cpu") == [2**21, LLC]
    assert checks.cache_levels("cuda") == [50 * 2**20]
    assert checks.cache_levels("mps") == []


def test_sweep_wrong_length_or_values(sweep_machine):
    answer = sweep_answer(lambda s: 50.0)
    short = observed([{**r, "gbs": r["gbs"][:-1]} for r in answer["rounds"]], answer["observed"]["reference"])
    assert fraction(checks._sweep_score(SWEEP_CASE, short, None)) == 0.0
    zeros = observed([{**r, "gbs": [0.0] * len(r["gbs"])} for r in answer["rounds"]], answer["observed"]["reference"])
    assert fraction(checks._sweep_score(SWEEP_CASE, zeros, None)) == 0.0
    assert fraction(checks._sweep_score(SWEEP_CASE, observed([], []), None)) == 0.0
    old_sizes = sweep_answer(lambda s: 50.0, sizes=checks.sweep_sizes(LLC)[:-1])  # sizes not this machine's
    assert fraction(checks._sweep_score(SWEEP_CASE, old_sizes, None)) == 0.0


def test_sweep_must_be_measured_while_the_referee_watches(sweep_machine):
    constant = checks._sweep_score(SWEEP_CASE, sweep_answer(stepped, walls=[1e-4] * 3), None)
    assert fraction(constant) == 0.0 and "this was not measured" in constant[0].message.en
    unseen = checks._sweep_score(SWEEP_CASE, sweep_answer(stepped, walls=[1.0]), None)
    assert fraction(unseen) == 0.0 and "while the grader watched" in unseen[0].message.en


def test_sweep_unknown_cache_grades_speed_only(monkeypatch):
    monkeypatch.setattr(checks, "_device", lambda: "mps")
    monkeypatch.setattr(checks, "last_level_cache", lambda device: None)
    sizes = checks.sweep_sizes(2**30 // 8, 2**20, 8, 1)
    answer = sweep_answer(lambda s: 100.0 if s < 2**24 else 30.0, sizes=sizes, llc=None)
    parts = checks._sweep_score(SWEEP_CASE, answer, None)
    assert fraction(parts) == 1.0 and any(p.weight == 0 for p in parts)
    flat = checks._sweep_score(SWEEP_CASE, sweep_answer(lambda s: 30.0, sizes=sizes, llc=None), None)
    assert 0 < fraction(flat) < 1


def test_sweep_reference_sweeps_this_machines_sizes(sweep_machine, monkeypatch):
    seen = []

    def bandwidth_sweep(sizes, device, budget_s):
        seen.append((list(sizes), device))
        return [1.0] * len(sizes)
    monkeypatch.setattr(checks, "bandwidth_sweep", bandwidth_sweep)
    out = checks._sweep_reference(SWEEP_CASE, {"sizes": [4096], "gbs": [1.0]})
    assert seen == [(checks.sweep_sizes(LLC), "cpu")] and out == {"gbs": [1.0] * len(seen[0][0])}


def test_sweep_reference_on_this_cpu():
    """The reference sweep on the real CPU: in-cache sets beat sets beyond the last-level cache."""
    case = checks._sweep_visible()[0]
    answer = checks._sweep_answer(lambda sizes, device, budget_s: ref.bandwidth_sweep(sizes, device, 0.1), case)
    fast, slow = analysis.sweep_plateaus(answer["sizes"], answer["gbs"], answer["llc_bytes"])
    assert fast > slow
