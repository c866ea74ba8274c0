"""Expected bands: spec profiles (fractions of the dense peak), measured profiles, the data file."""
import pytest

from autograder import expectations, profiles, reference
from autograder.expectations import Band, expect, rules, side_by_side
from autograder.i18n import Message, both
from autograder.profiles import Profile

MATMUL = both("행렬곱 처리량", "matmul throughput")


@pytest.fixture(autouse=True)
def _both_languages(monkeypatch):
    """Messages in both languages, whatever COURSE_LANG says."""
    monkeypatch.setattr("autograder.i18n._chosen", "both")


def _measured(fp32=0.15, bf16=0.3, copy=25.0):
    return Profile(id="measured_test", name="test CPU", kind="cpu", vendor="AMD",
                   peak_tflops={"fp32": fp32, "bf16": bf16}, bandwidth_gbs=copy, measured=True)


def test_h100_bf16_band_follows_mamf():
    band = expect("matmul", profile="h100_sxm", dtype="bf16")
    peak = profiles.get("h100_sxm").peak("bf16")
    assert band.basis == "spec" and band.unit == "TFLOP/s" and band.profile_id == "h100_sxm"
    assert band.contains(794.5)  # MAMF: measured by ml-engineering
    assert not band.contains(1979)  # the sparse figure
    assert band.lo == pytest.approx(0.60 * peak) and band.hi <= 1.05 * peak
    assert "MAMF" in band.reason.en and "MAMF" in band.reason.ko


def test_mi300x_band_is_lower():
    band = expect("matmul", profile="mi300x", dtype="bf16")
    peak = profiles.get("mi300x").peak("bf16")
    assert band.contains(668.4)
    assert band.hi < 0.9 * peak


def test_no_spec_band_goes_above_the_dense_peak():
    cap = rules()["spec_cap"]
    assert cap == 1.05
    for p in profiles.all_of():
        for dt, peak in p.peak_tflops.items():
            if dt in reference.DTYPES.values():
                band = expect("matmul", profile=p, dtype=dt)
                assert band.hi <= cap * peak + 1e-9, (p.id, dt)
                assert band.lo > 0


def test_above_the_band_hints_at_a_missing_synchronize():
    band = expect("matmul", profile="h100_sxm", dtype="bf16")
    part = band.part(5000.0, MATMUL)
    assert not part.ok
    assert "synchronize" in part.message.en and "synchronize" in part.message.ko
    assert "5,000" in part.message.en and "TFLOP/s" in part.message.en
    ok = band.part(800, MATMUL)
    assert ok.ok and "synchronize" not in ok.message.en
    low = band.part(10, MATMUL)
    assert not low.ok and "thread" in low.message.en


def test_part_rejects_non_numbers():
    band = expect("matmul", profile="h100_sxm", dtype="bf16")
    assert not band.part("fast", MATMUL).ok
    assert not band.part(float("nan"), MATMUL).ok
    assert not band.contains(True)


def test_measured_profile_bands_are_relative_to_the_machine():
    prof = _measured()
    band = expect("matmul", profile=prof, dtype="fp32")
    assert band.basis == "measured"
    rule = rules()["matmul"]["measured"]
    assert band.lo == pytest.approx(rule["lo"] * 0.15) and band.hi == pytest.approx(rule["hi"] * 0.15)
    bw = expect("bandwidth", profile=prof)
    assert bw.unit == "GB/s" and bw.contains(25.0) and not bw.contains(100.0)


def test_bandwidth_spec_never_above_spec():
    band = expect("bandwidth", profile="rtx_4090")
    assert band.contains(912) and not band.contains(1100)


def test_speedup_on_cpu_only_machine_is_near_one():
    band = expect("speedup", device="cpu")
    assert band.contains(1.0) and not band.contains(10.0)
    assert "CPU" in band.reason.en and "CPU" in band.reason.ko


def test_speedup_on_an_accelerator_is_bounded_by_the_peaks():
    band = expect("speedup", profile="h100_sxm", dtype="bf16", baseline=_measured())
    ratio = profiles.get("h100_sxm").peak("bf16") / 0.3
    assert band.lo >= 1.0 and band.hi == pytest.approx(2.0 * ratio)
    assert not band.contains(1e6)  # a missing synchronize


def test_allreduce_ratio_and_absolute():
    ratio = expect("allreduce_busbw")
    assert ratio.contains(1.0) and not ratio.contains(3.0)
    absolute = expect("allreduce_busbw", reference=0.5)
    assert absolute.unit == "GB/s" and absolute.contains(0.5) and not absolute.contains(2.0)


def test_mfu_bands():
    assert not expect("mfu", profile="h100_sxm").contains(1.2)
    assert expect("mfu", profile="h100_sxm").contains(0.45)
    assert expect("mfu", profile=_measured()).contains(1.1)


def test_spec_without_the_figure_falls_back_to_measurement(monkeypatch):
    no_figure = Profile(id="bare", name="bare", kind="apple", vendor="Apple", peak_tflops={})
    monkeypatch.setattr(reference, "profile_for", lambda device=None: no_figure)
    monkeypatch.setattr(reference, "measured_profile", lambda device="cpu", **k: _measured())
    band = expect("matmul", device="mps", dtype="fp32")
    assert band.basis == "measured"
    with pytest.raises(ValueError, match="no fp32"):
        expect("matmul", profile=no_figure, dtype="fp32")


def test_bad_requests_are_explained():
    with pytest.raises(ValueError, match="Unknown kind"):
        expect("latency", profile="h100_sxm")
    with pytest.raises(ValueError, match="Unknown profile"):
        expect("matmul", profile="h999")


def test_every_rule_has_a_source_or_rationale_and_a_reason():
    data = rules()
    tables = [data["matmul"]["measured"], data["bandwidth"]["measured"], *data["matmul"]["spec"],
              *data["bandwidth"]["spec"], data["speedup"]["cpu_only"], data["speedup"]["accelerator"],
              data["allreduce_busbw"], data["mfu"]["measured"], data["mfu"]["spec"], *data["side_by_side"].values()]
    for rule in tables:
        assert (rule.get("source") or rule.get("rationale") or "").strip(), rule
        assert 0 < rule["lo"] < rule.get("hi", rule.get("hi_peak_ratio", 0)), rule
    for rule in tables:
        if "reason" in rule:
            assert rule["reason"]["ko"].strip() and rule["reason"]["en"].strip()
    for table in (data["matmul"], data["bandwidth"]):
        assert table["spec"][-1]["match"] == {}  # a catch-all rule ends every list
        for rule in table["spec"]:
            assert "reason" in rule


def test_band_is_a_value():
    band = expect("allreduce_busbw")
    assert isinstance(band, Band)
    with pytest.raises(Exception):
        band.lo = 0


# ---------------------------------------------------------------- side by side with the reference measured in turns
WHAT = Message("행렬곱", "matmul")


def _rounds(values, refs, walls=None, key="tflops"):
    walls = [1.0] * len(values) if walls is None else walls
    return {"rounds": [{"seconds": 0.01, key: v} for v in values],
            "observed": {"walls": walls, "reference": [{key: r} for r in refs]}}


def _side_by_side(answer, kind="matmul", faster_above=True, key="tflops"):
    return side_by_side(kind, answer, WHAT, lambda r: r[key], lambda ref: ref[key], lambda r: r["seconds"],
                        "TFLOP/s", weight=2.0, faster_above=faster_above)


def test_side_by_side_honest_rounds_in_band_pass():
    measured, parts = _side_by_side(_rounds([0.21, 0.18, 0.2], [0.2, 0.2, 0.19]))
    assert measured and len(parts) == 1 and parts[0].ok and parts[0].weight == 2.0
    assert "reference measured in turns" in parts[0].message.en and "expected 0.25–10x" in parts[0].message.en


@pytest.mark.parametrize("kind", ["matmul", "bandwidth", "sweep", "step"])
def test_side_by_side_band_edges_come_from_the_data_file(kind):
    rule = rules()["side_by_side"][kind]
    assert 0 < rule["lo"] < 1 < rule["hi"]
    for ratio, ok in ((rule["lo"], True), (rule["hi"], True), (0.9 * rule["lo"], False), (1.1 * rule["hi"], False)):
        assert _side_by_side(_rounds([ratio * 10.0], [10.0]), kind=kind)[1][0].ok is ok, (kind, ratio)


def test_side_by_side_a_constant_that_spent_no_time_is_not_measured():
    answer = _rounds([0.2, 0.2, 0.2], [0.2, 0.2, 0.2], walls=[1e-5, 1e-5, 1e-5])  # claims 10 ms per round
    measured, parts = _side_by_side(answer)
    assert not measured and len(parts) == 1 and not parts[0].ok and parts[0].weight == 2.0
    assert "this was not measured" in parts[0].message.en and "0.01 s claimed" in parts[0].message.en


def test_side_by_side_rounds_without_walls_were_not_observed():
    for answer in ({"rounds": [{"tflops": 0.2, "seconds": 0.01}]},
                   _rounds([0.2, 0.2], [0.2, 0.2], walls=[1.0]),
                   _rounds([], [])):
        measured, parts = _side_by_side(answer)
        assert not measured and not parts[0].ok
        assert "no round was measured while the grader watched" in parts[0].message.en


def test_side_by_side_far_above_the_band_is_too_fast():
    measured, parts = _side_by_side(_rounds([20.0, 25.0, 30.0], [0.2, 0.2, 0.2]))  # 100x: no synchronize
    assert measured and not parts[0].ok
    assert "Faster than the hardware can be" in parts[0].message.en and "125.00x the reference" in parts[0].message.en
    measured, parts = _side_by_side(_rounds([0.01, 0.01], [0.2, 0.2]))
    assert measured and not parts[0].ok and "Slower than expected" in parts[0].message.en


def test_side_by_side_for_times_a_small_ratio_is_too_fast():
    times = _rounds([0.001, 0.001], [0.1, 0.1], key="seconds")  # timed the launch, not the work
    measured, parts = _side_by_side(times, kind="step", faster_above=False, key="seconds")
    assert measured and not parts[0].ok and "Faster than the hardware can be" in parts[0].message.en
    slow = _rounds([1.0, 1.0], [0.1, 0.1], key="seconds")  # timed the warm-up too
    assert "Slower than expected" in _side_by_side(slow, kind="step", faster_above=False, key="seconds")[1][0].message.en


def test_a_miss_within_the_references_own_spread_says_the_machine_was_busy_and_a_larger_one_does_not():
    """``load_explains``: the reference's rounds 4x apart (the load slowed it) explain a miss of up to 4x beyond the
    band, and the verdict names no cause; a 200x unit slip beside the same reference, or a miss beside a steady one,
    is still named."""
    from autograder.expectations import load_explains
    slowed = [0.2, 0.05, 0.05]
    busy = _rounds([2.2, 2.2, 2.2], slowed)  # median ratio 22: 2.2x above the band's 10
    assert load_explains("matmul", busy, lambda r: r["tflops"], lambda ref: ref["tflops"]) == pytest.approx(4.0)
    said = _side_by_side(busy)[1][0]
    assert not said.ok and "the machine was busy" in said.message.en and "Faster than the hardware" not in said.message.en
    assert said.busy and "This case was measured" not in said.message.en  # measured again (referee.better), once: nothing to say
    again = {**busy, "observed": {**busy["observed"], "attempts": 3}}
    assert "This case was measured 3 times" in _side_by_side(again)[1][0].message.en
    slip = _rounds([200.0] * 3, slowed)
    assert load_explains("matmul", slip, lambda r: r["tflops"], lambda ref: ref["tflops"]) is None
    assert "Faster than the hardware can be" in _side_by_side(slip)[1][0].message.en
    assert not _side_by_side(slip)[1][0].busy  # a mistake: measuring it again would change nothing
    steady = _rounds([2.5] * 3, [0.2] * 3)
    assert load_explains("matmul", steady, lambda r: r["tflops"], lambda ref: ref["tflops"]) is None
    assert "Faster than the hardware can be" in _side_by_side(steady)[1][0].message.en
    slow = _rounds([0.02] * 3, slowed)  # below the band: the load on the learner's side, by less than the spread
    assert "the machine was busy" in _side_by_side(slow)[1][0].message.en


def test_side_by_side_the_median_round_decides():
    measured, parts = _side_by_side(_rounds([0.2, 50.0, 0.2], [0.2, 0.2, 0.2]))  # one wild round of three
    assert measured and parts[0].ok


def test_side_by_side_reference_that_could_not_run_is_said_and_weighs_nothing():
    answer = _rounds([0.2], [0.2])
    answer["observed"]["reference"] = [{"error": "RuntimeError: no bf16 here"}]
    measured, parts = _side_by_side(answer)
    assert measured and parts[0].ok and parts[0].weight == 0
    assert "could not run here" in parts[0].message.en and "no bf16 here" in parts[0].message.en


def test_side_by_side_without_comparable_numbers_fails():
    answer = _rounds([0.2], [0.2])
    answer["observed"]["reference"] = [None]
    measured, parts = _side_by_side(answer)
    assert measured and not parts[0].ok
