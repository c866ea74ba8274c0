"""Module 06 tasks: the reference gets full marks, stubs fail, wrong and hard-coded answers lose points, and the
visible checks name each known mistake (``pytest -k mistakes`` runs the catalogue; these are the module's own)."""
import copy
import re

import pytest

from autograder import reference
import course_answers.m06_choosing_hardware as A
from autograder.checks import CheckFailed, check, referee, task
from autograder.modules.m06_choosing_hardware import tasks as checks
from autograder.checks.core import cases_for, collect, fraction, score_records
from autograder.profiles import Profile


@pytest.fixture(autouse=True)
def quiet(monkeypatch, tmp_path):
    monkeypatch.setenv("COURSE_LANG", "en")
    monkeypatch.setenv("COURSE_NO_PROGRESS", "1")
    monkeypatch.setenv("COURSE_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("COURSE_GRADING_SEED", "1234")


def stub(*args, **kwargs):
    raise NotImplementedError()


REFERENCE = {"cost": A.training_cost, "claim": A.implied_mfu, "serve": A.gpus_to_serve,
             "deploy": A.cheapest_deployment, "smi_log": A.summarize_smi_log, "inventory": A.gpu_inventory}


@pytest.mark.parametrize("task", sorted(REFERENCE))
def test_reference_gets_full_marks_with_hidden_cases(task):
    assert check(f"m06.{task}", REFERENCE[task], points=3, hidden=True) is None


@pytest.mark.parametrize("seed", range(6))
def test_reference_gets_full_marks_on_other_draws(seed, monkeypatch):
    monkeypatch.setenv("COURSE_GRADING_SEED", str(seed))
    for name, fn in REFERENCE.items():
        assert check(f"m06.{name}", fn, points=3, hidden=True) is None, name


@pytest.mark.parametrize("task", sorted(REFERENCE) + ["mfu"])
def test_stub_gets_nothing(task):
    with pytest.raises(CheckFailed):
        check(f"m06.{task}", stub, points=3, hidden=True)


def test_the_exercise_climbs_and_is_mostly_transfer():
    tasks = checks.TASKS
    assert tasks["cost"].level == "warm-up" and {"deploy", "mfu"} <= {n for n, t in tasks.items() if t.level == "stretch"}
    assert 2 * sum(t.kind == "transfer" for t in tasks.values()) >= len(tasks)


def parts_of(task_id, fn, hidden=False):
    t = task(task_id)
    return score_records(t, collect(t, fn, cases_for(t, hidden, 1234), task_id))


def named(parts):
    return {p.mistake for p in parts if not p.ok and p.mistake}


def test_cost_hard_coded_answer_fails_hidden_cases():
    visible = [A.training_cost(*[c[k] for k in ("params", "tokens", "gpus", "profile", "mfu", "price")])
               for c in checks._cost_visible()[:2]]

    def memorised(params, *args):
        if args[3] > 1:
            raise ValueError("mfu")
        return visible[0] if params == 1.3e9 else visible[1]
    assert check("m06.cost", memorised, points=2) is None
    earned = check("m06.cost", memorised, points=2, hidden=True)
    assert earned is not None and earned < 1.5


def test_a_partial_verdict_lists_the_parts_that_are_right(capsys):
    def cost_forgets_gpus(*args):
        return A.MISTAKES["cost"]["cost_per_gpu"](*args)
    earned = check("m06.cost", cost_forgets_gpus, points=2)
    out = capsys.readouterr().out
    assert 0 < earned < 2 and "🟡" in out and "✅ 1.3B×8 h100_sxm → flops" in out and "❌" in out


def test_claim_verdict_rules_are_all_visible():
    verdicts = {A.implied_mfu(c)["verdict"] for c in checks._claim_visible()}
    assert verdicts == {"impossible", "optimistic", "plausible"}
    assert {c["unit"] for c in checks._claim_visible()} == {"days", "usd", "gpu_hours"}


def test_claim_hidden_cases_cover_every_verdict_and_unit():
    import random
    for seed in range(5):
        cases = A.HIDDEN["claim"](random.Random(seed))
        assert {A.implied_mfu(c)["verdict"] for c in cases} == {"impossible", "optimistic", "plausible"}
        assert {c["unit"] for c in cases} == {"days", "usd", "gpu_hours"}


def test_deploy_visible_cases_cover_tie_and_no_offer():
    answers = [A.cheapest_deployment(c["model"], c["context"], c["target"], c["offers"]) for c in checks._deploy_visible()]
    assert answers[-1] == A.NO_PLAN
    tie = checks._deploy_visible()[1]
    twin = [o["id"] for o in tie["offers"] if o["id"].startswith(answers[1]["offer"])]
    assert len(twin) == 2, "the winner of the second visible case has an identical later copy"
    last_wins = A.cheapest_deployment(tie["model"], tie["context"], tie["target"], list(reversed(tie["offers"])))
    assert last_wins["offer"] != answers[1]["offer"]


def test_deploy_on_the_real_price_table_is_not_the_cheapest_instance():
    """The trials' mistake: the lowest hourly price is not the lowest cost of the deployment."""
    case = checks._deploy_visible()[0]
    right = A.cheapest_deployment(case["model"], case["context"], case["target"], case["offers"])
    cheapest_hour = A.MISTAKES["deploy"]["hourly_price"](case["model"], case["context"], case["target"], case["offers"])
    assert right["offer"] != cheapest_hour["offer"] and right["cost_per_hour"] < cheapest_hour["cost_per_hour"]


def test_deploy_a_price_mistake_gets_no_memory_or_bandwidth_hint():
    """Learners met it: the instance's price taken as one GPU's chose a one-GPU offer, the plan the one-GPU memory
    mistake also gives, and was told about memory and bandwidth. Where two mistakes explain a plan neither is named."""
    parts = parts_of("m06.deploy", A.MISTAKES["deploy"]["price_per_gpu"], hidden=True)
    said = " ".join(p.message.en for p in parts if not p.ok)
    assert named(parts) == {"price_per_gpu"} and "memory" not in said and "bandwidth" not in said
    assert fraction(parts) <= 1 / 3 + 1e-9  # the price is the point of the task


def test_smi_log_visible_logs_show_every_cause():
    assert [A.summarize_smi_log(checks.DATA / n)["cause"] for n in checks.RUN_LOGS] == \
        [A.VISIBLE_LOGS[n][1] for n in checks.RUN_LOGS]
    assert {A.VISIBLE_LOGS[n][1] for n in checks.RUN_LOGS} == set(A.CAUSES)


def test_smi_log_with_fixed_column_positions_fails_and_is_named():
    parts = parts_of("m06.smi_log", A.MISTAKES["smi_log"]["fixed_columns"])
    assert "fixed_columns" in named(parts) and 0 < fraction(parts) < 1


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


# ---------------------------------------------------------------- the step task (answers as recorded, by hand)
STEP_CASE = {"device": "cpu", "dims": [512, 1024, 1024, 512], "batch": 128, "frozen": 1}
PEAK = 1.0  # TFLOP/s: this (stand-in) CPU's measured fp32 peak


@pytest.fixture
def fixed_peak(monkeypatch):
    """A measured CPU profile with a fixed fp32 peak, so nothing here is timed."""
    fake = Profile(id="measured_cpu_test", name="test", kind="cpu", vendor="test", peak_tflops={"fp32": PEAK},
                   bandwidth_gbs=10.0, measured=True)
    monkeypatch.setattr(reference, "measured_profile", lambda *a, **k: fake)
    return fake


def step_round(seconds, peak=PEAK, case=STEP_CASE, **overrides):
    flops = A.step_flops(case["dims"], case["batch"], case["frozen"])
    return {"flops_per_step": flops, "seconds_per_step": seconds, "peak_tflops": peak,
            "utilization": flops / seconds / (peak * 1e12), **overrides}


def step_answer(rounds, ref_seconds, walls=None, call_s=None):
    """Rounds with what the referee saw: walls, the reference, and the step's calls on the course's clock (``call_s``
    each; by default what each round reports: the clock saw what was timed)."""
    walls = [1.0] * len(rounds) if walls is None else walls
    spans = [[[call_s or r.get("seconds_per_step"), "step"]] * 4
             if isinstance(call_s or r.get("seconds_per_step"), float) else [] for r in rounds]
    return {"rounds": rounds, "observed": {"walls": walls, "reference": [{"seconds": ref_seconds}] * len(rounds),
                                           "spans": spans}}


STEP_S = A.step_flops(STEP_CASE["dims"], STEP_CASE["batch"], STEP_CASE["frozen"]) / (0.1 * PEAK * 1e12)


def step_score(case, answer):
    return checks._mfu_score(case, answer, A.EXPECT["mfu"](case))


def step_share(answer, case=STEP_CASE):
    return fraction(step_score(case, answer))


def test_step_honest_answer_gets_full_marks(fixed_peak):
    assert step_share(step_answer([step_round(STEP_S)] * 3, STEP_S)) == 1.0
    noisy = [step_round(STEP_S), step_round(3 * STEP_S), step_round(1.2 * STEP_S)]  # one round under load
    assert step_share(step_answer(noisy, STEP_S)) == 1.0
    t = checks.TASKS["mfu"]
    assert t.measurement and t.rounds >= 3 and t.reference is not None


@pytest.mark.parametrize("how", ["all_trainable", "forward_only", "first_input_grad", "no_input_grads"])
def test_step_miscounts_are_named_and_keep_partial_credit(fixed_peak, how):
    count = A._flops_if(STEP_CASE["dims"], STEP_CASE["batch"], STEP_CASE["frozen"], how)
    wrong = step_round(STEP_S, flops_per_step=count, utilization=count / STEP_S / 1e12)
    parts = step_score(STEP_CASE, step_answer([wrong] * 3, STEP_S))
    assert named(parts) == {how} and 0 < fraction(parts) < 1


def test_a_step_time_off_by_no_more_than_the_reference_spread_is_told_the_machine_was_busy(fixed_peak):
    """The reference's own step times 4x apart: a step time just outside the band is the load's doing, so no cause is
    named (``expectations.load_explains``); 20x off beside the same reference still is."""
    answer = step_answer([step_round(STEP_S / 6)] * 3, STEP_S)
    answer["observed"]["reference"] = [{"seconds": s} for s in (STEP_S, 4 * STEP_S, 4 * STEP_S)]
    parts = step_score(STEP_CASE, answer)
    assert not named(parts) and "the machine was busy" in parts[-1].message.en and fraction(parts) < 1
    answer = {**step_answer([step_round(STEP_S / 80)] * 3, STEP_S), "observed": {
        **step_answer([step_round(STEP_S / 80)] * 3, STEP_S)["observed"], "reference": answer["observed"]["reference"]}}
    assert named(step_score(STEP_CASE, answer)) == {"no_sync"}


def test_step_timed_far_from_the_reference_is_named(fixed_peak):
    parts = step_score(STEP_CASE, step_answer([step_round(STEP_S / 20)] * 3, STEP_S))
    assert named(parts) == {"no_sync"} and "Faster than the hardware can be" in parts[-1].message.en
    parts = step_score(STEP_CASE, step_answer([step_round(STEP_S * 8)] * 3, STEP_S))
    assert named(parts) == {"cold_start"} and "Slower than expected" in parts[-1].message.en


def test_step_percent_is_named(fixed_peak):
    r = step_round(STEP_S)
    parts = step_score(STEP_CASE, step_answer([dict(r, utilization=100 * r["utilization"])] * 3, STEP_S))
    assert named(parts) == {"percent"}


def test_step_measured_peak_is_accepted_within_its_band(fixed_peak):
    lo, hi = checks.MEASURED_PEAK_BAND
    for factor, ok in ((lo, True), (hi, True), (1.0, True), (0.05, False), (250.0, False)):  # 250x: an H100's fp32
        answer = step_answer([step_round(STEP_S, peak=factor * PEAK)] * 3, STEP_S)
        assert (step_share(answer) == 1.0) is ok, factor


def test_step_spec_peak_must_be_exact_and_utilization_at_most_one(monkeypatch):
    from autograder import profiles
    h100 = profiles.get("h100_sxm")
    monkeypatch.setattr(reference, "spec_profile", lambda device=None: h100)
    monkeypatch.setattr(reference, "profile_for", lambda device=None, refresh=False: h100)
    case = {**STEP_CASE, "device": "cuda"}
    peak = h100.peak("fp32")
    step = A.step_flops(case["dims"], case["batch"], case["frozen"]) / (0.3 * peak * 1e12)
    assert step_share(step_answer([step_round(step, peak=peak, case=case)] * 3, step), case) == 1.0
    near = step_answer([step_round(step, peak=1.2 * peak, case=case)] * 3, step)
    assert step_share(near, case) < 1.0


def test_step_must_be_measured_while_the_referee_watches(fixed_peak):
    constant = step_score(STEP_CASE, step_answer([step_round(STEP_S)] * 3, STEP_S, walls=[1e-4] * 3))
    assert fraction(constant) == 0.0 and "this was not measured" in constant[0].message.en
    unseen = step_score(STEP_CASE, {"rounds": [step_round(STEP_S)] * 3})
    assert fraction(unseen) == 0.0 and "while the grader watched" in unseen[0].message.en


def test_step_rejects_answers_of_the_wrong_form(fixed_peak):
    missing = {k: v for k, v in step_round(STEP_S).items() if k != "peak_tflops"}
    assert step_share(step_answer([step_round(STEP_S), missing, step_round(STEP_S)], STEP_S)) == 0.0
    assert step_share(step_answer([step_round(STEP_S, seconds_per_step=0.0)] * 3, STEP_S)) == 0.0
    assert step_share(step_answer([], STEP_S)) == 0.0


def test_step_reference_times_the_same_step(monkeypatch, fixed_peak):
    """A real (small) run with the local referee: every round observed and measured, next to the reference's
    timing of the same step. The two timings are not compared here: the machine's load may shift them."""
    monkeypatch.delenv("COURSE_REFEREE", raising=False)
    t = task("m06.mfu")
    [record] = collect(t, lambda make_step, device, dims, batch, frozen: A.step_utilization(
        make_step, device, dims, batch, frozen, budget_s=0.2), cases_for(t, False, 1234), "m06.mfu")
    answer = record["answer"]
    assert record["error"] is None and len(answer["rounds"]) == t.rounds
    assert all(set(r) == set(checks.STEP_KEYS) | {"calls"} for r in answer["rounds"])
    assert all(len(r["calls"]) == 1 and r["calls"][0] >= 4 for r in answer["rounds"])  # warm-up and 3 repeats at least
    assert len(answer["observed"]["walls"]) == t.rounds
    assert all(ref["seconds"] > 0 for ref in answer["observed"]["reference"])
    assert referee.unmeasured(answer, lambda r: r["seconds_per_step"]) is None
    parts = score_records(t, [record])
    assert all(p.ok for p in parts[:3])  # FLOPs, peak and formula, whatever the load


def test_step_on_a_cpu_runs_on_one_thread_and_counts_the_calls(monkeypatch):
    """Exercise 01's rule: CPU against CPU on one thread (both sides alike on a shared machine), the thread count
    restored after; every call of the step the learner built is counted."""
    import torch
    monkeypatch.setattr(checks, "device_of", lambda case: "cpu")
    seen, before = {}, torch.get_num_threads()

    def learner(make_step, device, dims, batch, frozen):
        seen["threads"] = torch.get_num_threads()
        step = make_step([8, 16, 4], 2, device, 1)
        for _ in range(3):
            step()
        return {"flops_per_step": 1.0, "seconds_per_step": 1.0, "peak_tflops": 1.0, "utilization": 1e-12}
    answer = checks._mfu_answer(learner, checks.TASKS["mfu"].visible()[0])
    assert seen["threads"] == 1 and torch.get_num_threads() == before and answer["calls"] == [3]


def test_step_timed_once_is_named_whatever_the_ratio(fixed_peak):
    once = step_answer([dict(step_round(1.2 * STEP_S), calls=[1])] * 3, STEP_S)  # in the band, but one cold call
    parts = step_score(STEP_CASE, once)
    assert named(parts) == {"one_call"} and 0 < fraction(parts) < 1
    many = step_answer([dict(step_round(1.2 * STEP_S), calls=[14])] * 3, STEP_S)
    assert step_share(many) == 1.0
    unbuilt = step_score(STEP_CASE, step_answer([dict(step_round(STEP_S), calls=[])] * 3, STEP_S))
    assert not unbuilt[-1].ok and "make_step" in unbuilt[-1].message.en


# ---------------------------------------------------------------- each part is diagnosed from its own value
def messages(parts):
    return "\n".join(p.message.en for p in parts if not p.ok)


def test_serving_with_int_instead_of_ceil_is_not_blamed_on_the_kv_cache():
    """Trial 01: int(total / usable) got "the KV cache holds keys and values" on the GPUs item while the KV cache was
    right, and "bandwidths add up" on a bound computed rightly from the wrong GPU count."""
    def floor_gpus(model, context, batch, gpu):
        r = A.gpus_to_serve(model, context, batch, gpu)
        total = r["total_gb"] * 1e9
        gpus = max(1, int(total / (gpu["memory_gib"] * 2**30 * gpu["usable_fraction"])))
        return dict(r, gpus=gpus, tokens_per_s_max=batch * gpus * gpu["bandwidth_gbs"] * 1e9 / total)
    parts = parts_of("m06.serve", floor_gpus)
    assert named(parts) <= {"round_gpus"} and "keys and values" not in messages(parts)
    assert "bandwidths add up" not in messages(parts) and "ceil" in messages(parts)


def test_one_gpus_bandwidth_is_named_as_such():
    parts = parts_of("m06.serve", A.MISTAKES["serve"]["one_gpu_bandwidth"])
    assert named(parts) == {"one_gpu_bandwidth"} and "Round the GPUs up" not in messages(parts)


def test_replicas_rounded_down_are_not_blamed_on_the_hourly_price():
    def floor_replicas(model, context, target, offers):
        return A._deploy(model, context, target, offers, lambda o: A.replica_batch(model, context, o, target),
                         replicas_of=lambda x: max(1, int(x)))
    parts = parts_of("m06.deploy", floor_replicas)
    assert "hourly_price" not in named(parts) and "lowest hourly price" not in messages(parts)
    assert "Round the replicas up" in messages(parts) or "ceil" in messages(parts)


@pytest.mark.parametrize("name", ["na_rows_dropped", "busy_mean"])
def test_smi_samples_and_mean_are_diagnosed_on_their_own(name):
    parts = parts_of("m06.smi_log", A.MISTAKES["smi_log"][name])
    assert named(parts) == {name} and all(p.ok for p in parts if p.label and "cause" in p.label.en)


def test_smi_bits_compared_with_single_values_miss_log_d():
    """Trial 01: `reasons in (0x20, 0x40, 0x8)` passed; log d's thermal samples all read 0x60."""
    parts = parts_of("m06.smi_log", A.MISTAKES["smi_log"]["bits_equal"])
    wrong = [p for p in parts if not p.ok]
    assert named(parts) == {"bits_equal"} and all("gpu_log_d.csv" in p.label.en for p in wrong)


def test_inventory_names_an_undecoded_bytes_name():
    parts = parts_of("m06.inventory", A.MISTAKES["inventory"]["bytes_name"])
    assert named(parts) == {"bytes_name"} and "b'NVIDIA L4'" in messages(parts)


def test_an_exception_in_the_inventory_is_named_not_cryptic():
    """Trial 01: on the real machine a shutdown after a failed init raised NVMLError_Uninitialized, reported as
    'Raised an exception on input {"real": true}'."""
    class NVMLError_Uninitialized(Exception):  # noqa: N801 (pynvml's naming)
        pass

    def raises(pynvml_module, torch_module):
        raise NVMLError_Uninitialized("Uninitialized")
    case = {"real": True}
    answer = {"rows": {"raised": "NVMLError_Uninitialized: Uninitialized"}, "detected": []}
    [part] = checks._inventory_score(case, answer, None)
    assert not part.ok and part.mistake == "shutdown_without_init" and "{" not in part.message.en
    fake = checks._inventory_answer(raises, {"nvml": [0], "fail": None, "torch": [0]})
    assert fake["rows"] == {"raised": "NVMLError_Uninitialized: Uninitialized"}


def test_claim_labels_are_in_both_languages():
    for case in checks._claim_visible():
        assert set(case["label"]) == {"ko", "en"} and re.search(r"[\uac00-\ud7a3]", case["label"]["ko"])
