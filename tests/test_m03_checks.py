"""Checks of module 03: references get full marks, stubs fail, typical mistakes lose points, hard-coding fails hidden cases."""
import ast
import random
from pathlib import Path

import matplotlib.pyplot as plt
import pytest

from autograder.answers import m03 as ref
from autograder.checks import CheckFailed, check
from autograder.checks import m03 as checks
from autograder.checks.core import Part, cases_for, collect, fraction, score_records
from autograder.i18n import Message

SEED = 1234


@pytest.fixture(autouse=True)
def _english_and_seed(monkeypatch):
    monkeypatch.setenv("COURSE_LANG", "en")
    monkeypatch.setenv("COURSE_GRADING_SEED", str(SEED))
    monkeypatch.delenv("COURSE_RECORD_ANSWERS", raising=False)
    yield
    plt.close("all")


def share(task: str, fn, hidden: bool = True) -> float:
    t = checks.TASKS[task]
    return fraction(score_records(t, collect(t, fn, cases_for(t, hidden, SEED))))


def stub(*args, **kwargs):
    raise NotImplementedError()


EXACT = {"intensity": ref.arithmetic_intensity, "roofline": ref.roofline_for_profile, "decode": ref.decode_bound,
         "capacity": ref.on_chip_capacity, "plot": ref.plot_roofline}


def test_checks_do_not_import_answers_at_module_level():
    tree = ast.parse(Path(checks.__file__).read_text(encoding="utf-8"))
    top = [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
    assert not any("answers" in (getattr(n, "module", "") or "") for n in top)


@pytest.mark.parametrize("task", sorted(EXACT))
def test_reference_gets_full_marks(task, capsys):
    assert check(f"m03.{task}", EXACT[task], points=3, hidden=True) is None
    assert "passed" in capsys.readouterr().out


@pytest.mark.parametrize("task", sorted(checks.TASKS))
def test_stub_fails(task):
    with pytest.raises(CheckFailed):
        check(f"m03.{task}", stub, points=3, hidden=True)


@pytest.mark.parametrize("task", sorted(EXACT))
def test_hidden_cases_change_with_the_seed(task):
    t = checks.TASKS[task]
    assert t.hidden(random.Random(1)) != t.hidden(random.Random(2))


def _hard_coded(task: str, fn):
    """A learner function that returns the reference's answers to the visible cases only."""
    t = checks.TASKS[task]
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


# ---------------------------------------------------------------- task 5: copy bandwidth (scored with fakes)
class _Band:
    def __init__(self, lo, hi):
        self.lo, self.hi = lo, hi

    def part(self, value, what):
        return Part(self.lo <= value <= self.hi, Message("band", "band"))


def _fake_grading_hardware(monkeypatch, band, spec):
    import autograder.expectations as expectations
    monkeypatch.setattr(expectations, "expect", lambda kind, **kw: band)
    monkeypatch.setattr(checks, "_spec_bandwidth", lambda device: spec)


def test_copy_inside_band_and_under_spec(monkeypatch):
    _fake_grading_hardware(monkeypatch, _Band(1600, 3350), 3350.0)
    parts = checks._copy_score({"factor": 4}, {"device": "cuda", "nbytes": 2**30, "gbs": 3000.0})
    assert fraction(parts) == 1.0


def test_copy_above_spec_fails_even_inside_a_wide_band(monkeypatch):
    _fake_grading_hardware(monkeypatch, _Band(1, 10**6), 3350.0)
    parts = checks._copy_score({"factor": 4}, {"device": "cuda", "nbytes": 2**30, "gbs": 3600.0})
    assert fraction(parts) == 0.5 and not parts[-1].ok


def test_copy_cpu_has_no_spec_cap(monkeypatch):
    _fake_grading_hardware(monkeypatch, _Band(5, 40), None)
    parts = checks._copy_score({"factor": 4}, {"device": "cpu", "nbytes": 2**27, "gbs": 20.0})
    assert len(parts) == 1 and parts[0].ok


@pytest.mark.parametrize("value", [float("nan"), -1.0, "fast", None])
def test_copy_rejects_non_numbers(value):
    assert fraction(checks._copy_score({"factor": 4}, {"device": "cpu", "nbytes": 1, "gbs": value})) == 0.0


def test_copy_answer_sizes_buffer_from_the_cache(monkeypatch):
    monkeypatch.setattr(checks, "_device", lambda: "cpu")
    monkeypatch.setattr(checks, "last_level_cache", lambda device: 32 * 2**20)
    seen = []
    answer = checks._copy_answer(lambda nbytes, device: seen.append((nbytes, device)) or 12.5, {"factor": 4})
    assert seen == [(128 * 2**20, "cpu")] and answer["gbs"] == 12.5


# ---------------------------------------------------------------- task 6: sweep
LLC = 32 * 2**20


def _sweep_answer(gbs_of):
    sizes = checks.sweep_sizes(LLC)
    return {"device": "cpu", "llc_bytes": LLC, "sizes": sizes, "gbs": [gbs_of(s) for s in sizes]}


def test_sweep_good_shape_full_marks():
    answer = _sweep_answer(lambda s: 90.0 if s <= LLC / 2 else 20.0)
    assert fraction(checks._sweep_score({}, answer)) == 1.0


def test_sweep_flat_or_inverted_shapes_lose_points():
    assert fraction(checks._sweep_score({}, _sweep_answer(lambda s: 30.0))) == pytest.approx(0.25)
    assert fraction(checks._sweep_score({}, _sweep_answer(lambda s: s / 1e6))) == pytest.approx(0.25)


def test_sweep_knee_far_from_the_cache_loses_the_knee_part():
    answer = _sweep_answer(lambda s: 90.0 if s <= 2**20 else 20.0)  # falls after 1 MiB = LLC/32
    assert fraction(checks._sweep_score({}, answer)) == pytest.approx(0.75)


def test_sweep_wrong_length_or_values():
    answer = _sweep_answer(lambda s: 50.0)
    assert fraction(checks._sweep_score({}, {**answer, "gbs": answer["gbs"][:-1]})) == 0.0
    assert fraction(checks._sweep_score({}, {**answer, "gbs": [0.0] * len(answer["sizes"])})) == 0.0


def test_sweep_unknown_cache_grades_speed_only():
    sizes = checks.sweep_sizes(2**30 // 8, 2**20, 8, 1)
    answer = {"device": "mps", "llc_bytes": None, "sizes": sizes, "gbs": [100.0 if s < 2**24 else 30.0 for s in sizes]}
    parts = checks._sweep_score({}, answer)
    assert fraction(parts) == 1.0 and any(p.weight == 0 for p in parts)


def test_sweep_reference_on_this_cpu():
    """The reference sweep on the real CPU: in-cache sets beat sets beyond the last-level cache."""
    case = checks._sweep_visible()[0]
    answer = checks._sweep_answer(lambda sizes, device, budget_s: ref.bandwidth_sweep(sizes, device, 0.1), case)
    fast, slow = ref.sweep_plateaus(answer["sizes"], answer["gbs"], answer["llc_bytes"])
    assert fast > slow
