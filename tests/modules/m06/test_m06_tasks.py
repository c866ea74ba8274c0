"""Module 06 tasks: the reference gets full marks, stubs fail, wrong and hard-coded answers lose points."""
import copy

import pytest

from autograder import reference
import course_answers.m06_choosing_hardware as A
from autograder.checks import CheckFailed, check, referee, task
from autograder.modules.m06_choosing_hardware import tasks as checks
from autograder.checks.core import cases_for, collect, fraction, score_records
from autograder.harness import time_fn
from autograder.profiles import Profile


@pytest.fixture(autouse=True)
def quiet(monkeypatch, tmp_path):
    monkeypatch.setenv("COURSE_LANG", "en")
    monkeypatch.setenv("COURSE_NO_PROGRESS", "1")
    monkeypatch.setenv("COURSE_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("COURSE_GRADING_SEED", "1234")


def stub(*args, **kwargs):
    raise NotImplementedError()


REFERENCE = {"cost": A.training_cost, "claim": A.check_claim, "cheapest": A.cheapest_offer, "serve": A.gpus_to_serve,
             "smi_log": A.summarize_smi_log, "inventory": A.gpu_inventory}


@pytest.mark.parametrize("task", sorted(REFERENCE))
def test_reference_gets_full_marks_with_hidden_cases(task):
    assert check(f"m06.{task}", REFERENCE[task], points=3, hidden=True) is None


@pytest.mark.parametrize("task", sorted(REFERENCE) + ["mfu"])
def test_stub_gets_nothing(task):
    with pytest.raises(CheckFailed):
        check(f"m06.{task}", stub, points=3, hidden=True)


def test_cost_forgetting_the_factor_six_is_wrong():
    def two_nd(*args):
        r = A.training_cost(*args)
        return {k: v / 3 for k, v in r.items()}
    with pytest.raises(CheckFailed):
        check("m06.cost", two_nd, points=3)


def test_cost_without_input_validation_loses_the_hidden_error_case():
    def unchecked(params, tokens, gpus, profile_id, mfu, price):
        from autograder.profiles import get
        hours = 6 * params * tokens / (gpus * get(profile_id).peak("bf16") * 1e12 * mfu) / 3600
        return {"flops": 6 * params * tokens, "hours": hours, "gpu_hours": hours * gpus, "cost": hours * gpus * price}
    assert check("m06.cost", unchecked, points=3) is None            # the visible cases pass
    earned = check("m06.cost", unchecked, points=3, hidden=True)     # the mfu=40 case does not
    assert earned is not None and 0 < earned < 3


def test_cost_hard_coded_answer_fails_hidden_cases():
    visible = [A.training_cost(8e9, 100e9, 8, "a100_sxm_40gb", 0.4, 21.957642 / 8),
               A.training_cost(70e9, 1.4e12, 1024, "h100_sxm", 0.45, 55.04 / 8)]

    def memorised(params, *args):
        return visible[0] if params == 8e9 else visible[1]
    assert check("m06.cost", memorised, points=3) is None
    earned = check("m06.cost", memorised, points=3, hidden=True)
    assert earned is not None and earned < 2


def test_claim_with_wrong_threshold_gets_partial_credit():
    def at_least_two(claim):
        r = A.check_claim(claim)
        return dict(r, flagged=r["ratio"] >= 1.5 or r["ratio"] <= 1 / 1.5)
    earned = check("m06.claim", at_least_two, points=2, hidden=True)
    assert earned is not None and 0 < earned < 2


def test_cheapest_returning_the_last_tie_loses_points():
    def last_wins(offers, job):
        return A.cheapest_offer(list(reversed(offers)), job)
    earned = check("m06.cheapest", last_wins, points=3, hidden=True)
    assert earned is not None and earned < 3


def test_serve_forgetting_values_halves_the_kv_cache():
    def keys_only(model, context, batch, gpu):
        half = dict(model, kv_bytes=model["kv_bytes"] / 2)
        return A.gpus_to_serve(half, context, batch, gpu)
    earned = check("m06.serve", keys_only, points=3, hidden=True)
    assert earned is not None and earned < 3


def test_smi_log_counting_idle_as_throttling_loses_points():
    def idle_too(path):
        r = A.summarize_smi_log(path)
        return dict(r, throttled=r["throttled"] + [{"start": "idle", "end": "idle", "reasons": ["gpu_idle"]}])
    earned = check("m06.smi_log", idle_too, points=3, hidden=True)
    assert earned is not None and earned < 3


def test_smi_log_with_fixed_column_positions_fails_hidden_layouts():
    import csv

    def by_position(path):
        with open(path) as handle:
            rows = list(csv.reader(handle, skipinitialspace=True))[1:]
        util = [float(r[1].split()[0]) for r in rows]
        mem = [float(r[2].split()[0]) for r in rows]
        return {"samples": len(rows), "mean_utilization": sum(util) / len(util), "peak_memory_mib": max(mem),
                "throttled": A.summarize_smi_log(path)["throttled"]}
    assert check("m06.smi_log", by_position, points=3) is None       # the sample has the documented order
    earned = check("m06.smi_log", by_position, points=3, hidden=True)
    assert earned is not None and earned < 3


def test_inventory_without_shutdown_or_fallback_loses_points():
    def no_shutdown(pynvml_module, torch_module):
        if pynvml_module is None:
            return A.gpu_inventory(None, torch_module)
        leaky = copy.copy(pynvml_module)
        leaky.nvmlShutdown = lambda: None
        return A.gpu_inventory(leaky, torch_module)
    earned = check("m06.inventory", no_shutdown, points=3, hidden=True)
    assert earned is not None and earned < 3

    def nvml_only(pynvml_module, torch_module):
        return A.gpu_inventory(pynvml_module, None)
    earned = check("m06.inventory", nvml_only, points=3, hidden=True)
    assert earned is not None and earned < 3


# ---------------------------------------------------------------- the MFU task (answers as recorded, by hand)
MFU_CASE = {"device": "cpu", "dims": [512, 1024, 512], "batch": 256}
PEAK = 1.0  # TFLOP/s: this (stand-in) CPU's measured fp32 peak


@pytest.fixture
def fixed_peak(monkeypatch):
    """A measured CPU profile with a fixed fp32 peak, so nothing here is timed."""
    fake = Profile(id="measured_cpu_test", name="test", kind="cpu", vendor="test", peak_tflops={"fp32": PEAK},
                   bandwidth_gbs=10.0, measured=True)
    monkeypatch.setattr(reference, "measured_profile", lambda *a, **k: fake)
    return fake


def mfu_round(seconds, peak=PEAK, case=MFU_CASE, **overrides):
    flops = A.step_flops(case["dims"], case["batch"])
    return {"flops_per_step": flops, "seconds_per_step": seconds, "peak_tflops": peak,
            "mfu": flops / seconds / (peak * 1e12), **overrides}


def mfu_answer(rounds, ref_seconds, walls=None):
    walls = [1.0] * len(rounds) if walls is None else walls
    return {"rounds": rounds, "observed": {"walls": walls, "reference": [{"seconds": ref_seconds}] * len(rounds)}}


STEP_S = A.step_flops(MFU_CASE["dims"], MFU_CASE["batch"]) / (0.1 * PEAK * 1e12)  # MFU 0.1: 16 ms a step


def mfu_score(case, answer):
    return checks._mfu_score(case, answer, A.EXPECT["mfu"](case))


def mfu_share(answer, case=MFU_CASE):
    return fraction(mfu_score(case, answer))


def test_mfu_honest_answer_gets_full_marks(fixed_peak):
    assert mfu_share(mfu_answer([mfu_round(STEP_S)] * 3, STEP_S)) == 1.0
    noisy = [mfu_round(STEP_S), mfu_round(5 * STEP_S), mfu_round(1.2 * STEP_S)]  # one round under load
    assert mfu_share(mfu_answer(noisy, STEP_S)) == 1.0
    t = checks.TASKS["mfu"]
    assert t.measurement and t.rounds >= 3 and t.reference is not None


def test_mfu_with_a_wrong_formula_gets_partial_credit(fixed_peak):
    percent = mfu_round(STEP_S)
    percent["mfu"] *= 100  # a percentage, not a fraction
    share = mfu_share(mfu_answer([percent] * 3, STEP_S))
    assert 0 < share < 1


def test_mfu_timed_far_from_the_reference_loses_the_timing_part(fixed_peak):
    parts = mfu_score(MFU_CASE, mfu_answer([mfu_round(STEP_S / 20)] * 3, STEP_S))  # no synchronize
    assert 0 < fraction(parts) < 1 and "Faster than the hardware can be" in parts[-1].message.en
    parts = mfu_score(MFU_CASE, mfu_answer([mfu_round(STEP_S * 8)] * 3, STEP_S))  # timed the first call
    assert 0 < fraction(parts) < 1 and "Slower than expected" in parts[-1].message.en


def test_mfu_measured_peak_is_accepted_within_its_band(fixed_peak):
    lo, hi = checks.MEASURED_PEAK_BAND
    assert (lo, hi) == (0.1, 10.0)
    for factor, ok in ((lo, True), (hi, True), (1.0, True), (0.05, False), (250.0, False)):  # 250x: an H100's fp32
        answer = mfu_answer([mfu_round(STEP_S, peak=factor * PEAK)] * 3, STEP_S)
        assert (mfu_share(answer) == 1.0) is ok, factor


def test_mfu_spec_peak_must_be_exact(monkeypatch):
    from autograder import profiles
    h100 = profiles.get("h100_sxm")
    monkeypatch.setattr(reference, "spec_profile", lambda device=None: h100)
    monkeypatch.setattr(reference, "profile_for", lambda device=None, refresh=False: h100)
    case = {**MFU_CASE, "device": "cuda"}
    peak = h100.peak("fp32")
    step = A.step_flops(case["dims"], case["batch"]) / (0.3 * peak * 1e12)
    assert mfu_share(mfu_answer([mfu_round(step, peak=peak, case=case)] * 3, step), case) == 1.0
    near = mfu_answer([mfu_round(step, peak=1.2 * peak, case=case)] * 3, step)
    assert mfu_share(near, case) < 1.0


def test_mfu_must_be_measured_while_the_referee_watches(fixed_peak):
    constant = mfu_score(MFU_CASE, mfu_answer([mfu_round(STEP_S)] * 3, STEP_S, walls=[1e-4] * 3))
    assert fraction(constant) == 0.0 and "this was not measured" in constant[0].message.en
    unseen = mfu_score(MFU_CASE, {"rounds": [mfu_round(STEP_S)] * 3})
    assert fraction(unseen) == 0.0 and "while the grader watched" in unseen[0].message.en


def test_mfu_rejects_answers_of_the_wrong_form(fixed_peak):
    missing = {k: v for k, v in mfu_round(STEP_S).items() if k != "peak_tflops"}
    assert mfu_share(mfu_answer([mfu_round(STEP_S), missing, mfu_round(STEP_S)], STEP_S)) == 0.0
    assert mfu_share(mfu_answer([mfu_round(STEP_S, seconds_per_step=0.0)] * 3, STEP_S)) == 0.0
    assert mfu_share(mfu_answer([], STEP_S)) == 0.0


def test_mfu_reference_times_the_same_step(monkeypatch, fixed_peak):
    """A real (small) run with the local referee: every round observed and measured, next to the reference's
    timing of the same step. The two timings are not compared here: the machine's load may shift them."""
    monkeypatch.delenv("COURSE_REFEREE", raising=False)
    t = task("m06.mfu")
    [record] = collect(t, lambda device, dims, batch: A.step_mfu(device, dims, batch, budget_s=0.2),
                       cases_for(t, False, 1234), "m06.mfu")
    answer = record["answer"]
    assert record["error"] is None and len(answer["rounds"]) == t.rounds
    assert all(set(r) == set(checks.MFU_KEYS) for r in answer["rounds"])
    assert len(answer["observed"]["walls"]) == t.rounds
    assert all(ref["seconds"] > 0 for ref in answer["observed"]["reference"])
    assert referee.unmeasured(answer, lambda r: r["seconds_per_step"]) is None
    parts = score_records(t, [record])
    assert all(p.ok for p in parts[:3])  # FLOPs, peak and formula, whatever the load
