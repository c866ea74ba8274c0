"""Module 06 checks: the reference gets full marks, stubs fail, wrong and hard-coded answers lose points."""
import copy

import pytest

from autograder import reference
from autograder.answers import m06 as A
from autograder.checks import CheckFailed, check
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


# ---------------------------------------------------------------- the MFU task, with a quick stand-in for the reference peak
@pytest.fixture
def quick_peak(monkeypatch):
    """A stand-in reference peak ten times this machine's MLP-step rate, so the MFU lands near 0.1.

    The expected band (0.01-1.3 of the measured peak) then absorbs the noise of a busy
    machine in either direction; the full reference measurement would take 15 s.
    """
    monkeypatch.setattr(reference, "measured_profile", lambda *a, **k: fake)
    fake = Profile(id="measured_cpu_test", name="test", kind="cpu", vendor="test", peak_tflops={"fp32": 1.0},
                   bandwidth_gbs=10.0, measured=True)
    probe = A.step_mfu("cpu", [512, 1024, 512], 256, budget_s=0.3)
    rate = probe["flops_per_step"] / probe["seconds_per_step"] / 1e12
    fake = Profile(id="measured_cpu_test", name="test", kind="cpu", vendor="test", peak_tflops={"fp32": 10 * rate},
                   bandwidth_gbs=10.0, measured=True)
    return fake


def test_mfu_reference_gets_full_marks(quick_peak):
    assert check("m06.mfu", A.step_mfu, points=3, hidden=True) is None


def test_mfu_with_a_wrong_formula_gets_partial_credit(quick_peak):
    def percent(device, dims, batch):
        r = A.step_mfu(device, dims, batch, budget_s=0.3)
        return dict(r, mfu=100 * r["mfu"])                               # a percentage, not a fraction
    earned = check("m06.mfu", percent, points=3)
    assert earned is not None and 0 < earned < 3
