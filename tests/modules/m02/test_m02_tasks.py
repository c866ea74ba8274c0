"""The graded tasks of exercise 02: full marks for the reference, zero for stubs, partial credit that names the
mistake, and hidden cases that a hard-coded answer cannot pass."""
import json
import math
import re
import sys

import pytest
import torch

from autograder.checks import CheckFailed, check, core, referee, task as find_task
from autograder.checks.expected import want
from autograder.harness import time_fn
from autograder.modules.m02_gpu_architecture import tasks
from course_answers import m02_gpu_architecture as ref

SEEDS = (1, 2, 3)


def parts(task_id: str, learner, hidden: bool = True, seed: int = 1) -> list:
    task = find_task(f"m02.{task_id}")
    return core.score_records(task, core.collect(task, learner, core.cases_for(task, hidden, seed)))


def share(task_id: str, learner, hidden: bool = True, seed: int = 1) -> float:
    return core.fraction(parts(task_id, learner, hidden, seed))


def named(task_id: str, learner, hidden: bool = False) -> set:
    return {p.mistake for p in parts(task_id, learner, hidden) if not p.ok and p.mistake}


REFERENCE = {
    "gpu_numbers": ref.gpu_numbers,
    "spec_sheet": ref.dense_peak,
    "decode": ref.decode,
    "limits": ref.limits,
    "round": ref.round_to_format,
    "nm_mask": ref.nm_mask,
    "smallest_format": ref.smallest_format,
}


@pytest.mark.parametrize("task_id", sorted(REFERENCE))
@pytest.mark.parametrize("seed", SEEDS)
def test_reference_gets_full_marks(task_id, seed):
    assert share(task_id, REFERENCE[task_id], seed=seed) == 1.0


def test_the_exercise_climbs_from_a_recall_warm_up_to_a_transfer_stretch():
    order = list(tasks.TASKS)
    assert tasks.TASKS[order[0]].level == "warm-up" and tasks.TASKS[order[-1]].level == "stretch"
    assert 2 * sum(t.kind == "transfer" for t in tasks.TASKS.values()) >= len(tasks.TASKS)


@pytest.mark.parametrize("task_id", sorted(tasks.TASKS))
def test_stub_fails_with_a_bilingual_message(task_id, capsys, monkeypatch):
    monkeypatch.setattr("autograder.hardware.best_device", lambda *a, **k: "cpu")

    def stub(*args):
        raise NotImplementedError()
    with pytest.raises(CheckFailed) as info:
        check(f"m02.{task_id}", stub, points=2)
    assert "NotImplementedError" in str(info.value) and capsys.readouterr().err == ""


@pytest.mark.parametrize("task_id", sorted(tasks.TASKS))
def test_cases_are_plain_data_and_hidden_cases_change_with_the_seed(task_id, monkeypatch):
    monkeypatch.setattr("autograder.hardware.best_device", lambda *a, **k: "cpu")
    task = find_task(f"m02.{task_id}")
    visible = core.cases_for(task, False, 1)
    assert visible == core.cases_for(task, False, 2)                        # deterministic
    json.dumps(core.cases_for(task, True, 1), allow_nan=False)   # Jupyter messages carry no NaN/inf
    if task_id != "measure":
        assert core.cases_for(task, True, 1) != core.cases_for(task, True, 2)


@pytest.mark.parametrize("task_id", sorted(REFERENCE))
def test_recorded_answers_are_strict_json(task_id):
    """Records travel in Jupyter messages, which turn NaN/inf into strings and warn on stderr."""
    task = find_task(f"m02.{task_id}")
    records = core.collect(task, REFERENCE[task_id], core.cases_for(task, True, 4))
    json.dumps(records, allow_nan=False)


def test_visible_cases_do_not_need_the_answers(monkeypatch):
    """A learner's install has no course_answers: visible cases and their expected answers still work."""
    monkeypatch.setitem(sys.modules, "course_answers.m02_gpu_architecture", None)
    monkeypatch.setattr("autograder.hardware.best_device", lambda *a, **k: "cpu")
    for name in tasks.TASKS:
        task = find_task(f"m02.{name}")
        for case in core.cases_for(task, False, 5):
            assert name == "measure" or want(task.id, case) is not None or case.get("error")
            core.score_records(task, [{"case": case, "answer": None, "error": "NotImplementedError"}])


def test_partial_verdicts_label_the_parts():
    """Every part of a visible case has a label, so a 🟡 verdict can list what is right."""
    for name, fn in REFERENCE.items():
        assert all(p.label is not None for p in parts(name, fn, hidden=False)), name


HANGUL = re.compile(r"[\uac00-\ud7a3]")


@pytest.mark.parametrize("task_id", sorted(REFERENCE))
def test_an_answer_of_the_wrong_type_is_said_in_each_language(task_id):
    """Not a dict (or not a tensor): a bilingual message, no Korean in the English line (no exception text)."""
    found = [p for p in parts(task_id, lambda *args: None, hidden=False) if not p.ok]
    assert found and all(not HANGUL.search(p.message.en) and HANGUL.search(p.message.ko) for p in found)


# ---------------------------------------------------------------- 1. the peak from the parts
def test_spec_with_the_printed_peak_for_the_running_clock_costs_the_double_weighted_part():
    def printed(spec):
        return {**ref.gpu_numbers(spec), "tensor_tflops_at_clock": spec["dense_tensor_tflops"]}
    assert share("gpu_numbers", printed) == pytest.approx(core.CENTRAL)  # the task's point: a third at most
    assert "printed_peak" in named("gpu_numbers", printed)


def test_spec_worked_at_the_boost_clock_is_named_with_the_clock_the_sheet_assumed():
    """The trial's answer (946 FLOPs per cycle, the peak scaled from the boost clock) fails H100 PCIe and says why."""
    def at_boost(spec):
        tensor_cores = spec["sms"] * spec["tensor_cores_per_sm"]
        per_tc = spec["dense_tensor_tflops"] * 1e12 / (tensor_cores * spec["boost_clock_mhz"] * 1e6)
        return {**ref.gpu_numbers(spec), "flops_per_tc_per_cycle": per_tc, "tensor_clock_mhz": spec["boost_clock_mhz"],
                "tensor_tflops_at_clock": spec["dense_tensor_tflops"] * spec["clock_mhz"] / spec["boost_clock_mhz"]}
    failed = [p for p in parts("gpu_numbers", at_boost, hidden=False) if not p.ok and p.weight]
    assert len(failed) == 3 and all("H100 PCIe" in p.message.en for p in failed)  # A100's sheet assumes its boost clock
    named_once = [p for p in failed if p.mistake == "tensor_clock"]           # explained once, then "the same mistake"
    assert len(named_once) == 1 and "1024" in named_once[0].message.en and "1619" in named_once[0].message.en
    assert all("same mistake" in p.message.en for p in failed if p.mistake is None)


def test_spec_a_lesson_faithful_answer_gets_full_marks():
    """Work back to the power of two, then the clock: the lesson's way, on the task's GPUs and clocks."""
    def lesson_way(spec):
        tensor_cores = spec["sms"] * spec["tensor_cores_per_sm"]
        per_tc = 1024 if spec["dense_tensor_tflops"] * 1e12 / (tensor_cores * spec["boost_clock_mhz"] * 1e6) > 724 \
            else 2 ** round(math.log2(spec["dense_tensor_tflops"] * 1e12 / (tensor_cores * spec["boost_clock_mhz"] * 1e6)))
        clock = spec["dense_tensor_tflops"] * 1e6 / (tensor_cores * per_tc)
        return {**ref.gpu_numbers(spec), "flops_per_tc_per_cycle": per_tc, "tensor_clock_mhz": round(clock),
                "tensor_tflops_at_clock": spec["dense_tensor_tflops"] * spec["clock_mhz"] / clock}
    assert share("gpu_numbers", lesson_way) == 1.0


def test_spec_hard_coded_for_the_visible_gpus_fails_hidden_cases():
    table = {c["name"]: ref.gpu_numbers(c) for c in tasks._spec_visible()}
    learner = lambda spec: table.get(spec["name"], table["H100 PCIe"])  # noqa: E731
    assert share("gpu_numbers", learner, hidden=False) == 1.0
    assert share("gpu_numbers", learner) < 0.5


# ---------------------------------------------------------------- 2. a spec sheet with traps
def test_spec_sheet_visible_cases_cover_every_trap_and_the_datacenter_exception():
    cases = tasks._sheet_visible()
    traps = {t for c in cases for t in ref.dense_peak(c)["traps"]}
    assert traps == set(tasks.TRAPS)
    assert any(c["accumulate"] == "fp16" and c["segment"] == "datacenter" and not ref.dense_peak(c)["traps"]
               for c in cases)
    assert any(c["unit"] == "PFLOPS" for c in cases)


def test_spec_sheet_value_right_traps_wrong_earns_the_value_part():
    """The trial's case: the value right, the trap list empty. The value parts pass; each trap part says which trap
    the list lacks, never that the (right) value is twice itself."""
    def no_traps(quote):
        return {**ref.dense_peak(quote), "traps": []}
    found = parts("spec_sheet", no_traps, hidden=False)
    assert 0.6 < core.fraction(found) < 1.0
    assert all(p.ok for p in found if p.label.en.endswith("dense_tflops"))
    failed = [p for p in found if not p.ok]
    assert failed and all(p.label.en.endswith("traps") and "lacks" in p.message.en and "twice" not in p.message.en
                          for p in failed)


def test_spec_sheet_an_unnamed_geforce_accumulation_is_not_fp16():
    """`accumulate: None` on a GeForce bf16 row is fp32 accumulation: halving it is a named mistake."""
    def halve_unnamed(quote):
        if quote["segment"] == "consumer" and quote["accumulate"] is None:
            out = ref.dense_peak(quote)
            return {"dense_tflops": out["dense_tflops"] / 2, "traps": out["traps"] + ["fp16_accumulate"]}
        return ref.dense_peak(quote)
    failed = [p for p in parts("spec_sheet", halve_unnamed, hidden=False) if not p.ok]
    assert len(failed) == 2 and {p.mistake for p in failed} == {"none_as_fp16"}


def test_spec_sheet_messages_round_the_numbers():
    def ten_percent_off(quote):
        out = ref.dense_peak(quote)
        return {**out, "dense_tflops": out["dense_tflops"] * 1.1}
    for p in parts("spec_sheet", ten_percent_off, hidden=False):
        assert not re.search(r"\d\.\d{7,}", p.message.en), p.message.en


def test_spec_sheet_traps_as_a_set_in_any_order():
    def reversed_traps(quote):
        out = ref.dense_peak(quote)
        return {"dense_tflops": out["dense_tflops"], "traps": tuple(reversed(out["traps"]))}
    assert share("spec_sheet", reversed_traps) == 1.0


def test_spec_sheet_hard_coded_answers_fail_the_hidden_quotes():
    table = {c["product"]: ref.dense_peak(c) for c in tasks._sheet_visible()}
    learner = lambda q: table.get(q["product"], {"dense_tflops": 1.0, "traps": []})  # noqa: E731
    assert share("spec_sheet", learner, hidden=False) == 1.0
    assert share("spec_sheet", learner) < 0.6


# ---------------------------------------------------------------- 3. decode
def test_decode_without_subnormals_or_specials_gets_nothing_for_those_rules():
    def naive(bits, fmt):
        e_bits, m_bits, bias = fmt["exp_bits"], fmt["man_bits"], fmt["bias"]
        sign = -1.0 if bits >> (e_bits + m_bits) else 1.0
        e, m = (bits >> m_bits) & (2**e_bits - 1), bits & (2**m_bits - 1)
        return sign * 2.0 ** (e - bias) * (1 + m / 2**m_bits)
    assert {"subnormals", "ieee_specials"} <= named("decode", naive)
    assert share("decode", naive) < 0.5


def test_decode_and_round_say_which_value_is_expected_and_which_found():
    def off(bits, fmt):
        return ref.decode(bits, fmt) * 2
    for p in parts("decode", off, hidden=False):
        if not p.ok and "0x" in p.message.en:
            assert "expected" in p.message.en and "found" in p.message.en
            assert "기댓값" in p.message.ko and "실제값" in p.message.ko
    decode_hint = [p for p in parts("decode", off, hidden=False) if p.mistake == "subnormals"]
    assert decode_hint and all("round" not in p.message.en and "반올림" not in p.message.ko for p in decode_hint)


def test_decode_by_table_lookup_of_visible_patterns_fails_hidden():
    table = {(c["format"]["name"], b): ref.decode(b, c["format"]) for c in tasks._decode_visible() for b in c["bits"]}
    learner = lambda bits, fmt: table.get((fmt["name"], bits), 0.0)  # noqa: E731
    assert share("decode", learner, hidden=False) == 1.0
    assert share("decode", learner) < 0.5


# ---------------------------------------------------------------- 4. limits
def test_limits_from_torch_finfo_only_fails_the_other_formats():
    def finfo_only(fmt):
        info = torch.finfo(getattr(torch, {"fp16": "float16", "bf16": "bfloat16", "e4m3": "float8_e4m3fn",
                                           "e5m2": "float8_e5m2", "fp32": "float32"}[fmt["name"]]))
        return {"max": info.max, "smallest_normal": info.smallest_normal, "smallest_subnormal": info.smallest_normal,
                "eps": info.eps}
    assert share("limits", finfo_only) < 0.75


# ---------------------------------------------------------------- 5. round
def test_round_with_torch_casts_only_gets_partial_credit():
    def torch_only(x, fmt):
        top = ref.limits(fmt)["max"]
        dtype = {"bf16": torch.bfloat16, "fp16": torch.float16, "e4m3": torch.float8_e4m3fn,
                 "e5m2": torch.float8_e5m2}[fmt["name"]]
        return x.clamp(-top, top).to(dtype).double()
    assert 0.2 < share("round", torch_only) < 0.8


def test_round_groups_hold_what_they_name():
    """'ties' are exact halfway points and the other groups hold none; 'saturation' is out of range."""
    for case in tasks._round_visible():
        fmt, group = case["format"], case["group"]
        x = torch.tensor([tasks.dec(v) for v in case["values"]], dtype=torch.float64)
        finite = x[torch.isfinite(x)]
        grid = ref.round_to_format(finite, fmt)
        e = (torch.frexp(finite.abs())[1].double() - 1).clamp(min=1 - fmt["bias"])
        halfway = ((finite.abs() / torch.exp2(e - fmt["man_bits"])) % 1 == 0.5)
        top = ref.limits(fmt)["max"]
        if group == "ties":
            assert halfway.all(), (fmt["name"], case["values"])
        elif group == "saturation":
            assert (x.abs() > top).all(), (fmt["name"], case["values"])
        else:
            assert not (halfway & (finite.abs() <= top)).any() or group == "subnormal", (fmt["name"], group)
        if group == "subnormal":
            assert (finite.abs() < ref.limits(fmt)["smallest_normal"]).all(), fmt["name"]
        assert grid.shape == finite.shape


# ---------------------------------------------------------------- 6. measurement (side by side, answers by hand)
@pytest.fixture
def measured(monkeypatch):
    """The measure task, optionally with a spec peak (``measured["value"]``, TFLOP/s)."""
    peak = {"value": None}
    monkeypatch.setattr(tasks, "_spec_peak", lambda case: peak["value"])
    return peak


def consistent(tflops, n=None, timed=True):
    """A learner at ``tflops`` that reports n by the task's rule (the first of 256, 512, ... to take 0.05 s), timing
    with ``time_fn`` (a stand-in workload: what it reports is made up) unless not ``timed``."""
    if n is None:
        n = next((k for k in (256 * 2**i for i in range(6)) if 2 * k**3 / (tflops * 1e12) >= 0.05), 8192)

    def learner(dtype, device):
        if timed:
            time_fn(lambda: None, budget_s=0.01, min_reps=1, warmup=0)
        return {"n": n, "seconds": 2 * n**3 / (tflops * 1e12), "tflops": tflops}
    return learner


CASE = {"dtype": "float32", "device": "cpu"}


def measure_answer(learner, case=None, reference=0.2, walls=None):
    """Three rounds of the learner's answer with what the referee observed: walls, reference TFLOP/s."""
    rounds = [tasks._measure_answer(learner, case or CASE) for _ in range(3)]
    walls = [1.0] * 3 if walls is None else walls
    refs = [reference if isinstance(reference, dict) else {"tflops": reference, "n": 1024}] * 3
    # the course's clock saw what a learner timed with time_fn report (a stand-in: its figures are made up)
    spans = [[[r["seconds"], "time_fn:0"]] if r.get("time_fn") and isinstance(r.get("seconds"), float) else []
             for r in rounds]
    return {"rounds": rounds, "observed": {"walls": walls, "reference": refs, "spans": spans}}


def run_measure(learner, case=None, **observed):
    case = case or CASE
    return core.fraction(tasks._measure_score(case, measure_answer(learner, case, **observed), None))


def test_measure_in_band_and_consistent_gets_full_marks(measured):
    assert run_measure(consistent(0.2)) == 1.0
    assert run_measure(consistent(0.5)) == 1.0  # 2.5x the reference: the luckiest of several sizes
    task = tasks.TASKS["measure"]
    assert task.measurement and task.rounds >= 3 and task.reference is not None


def test_measure_outside_the_band_loses_the_band_part(measured):
    assert 0 < run_measure(consistent(0.04)) < 1.0   # a fifth of the reference
    assert 0 < run_measure(consistent(4.0)) < 1.0    # 20x: no synchronize
    found = tasks._measure_score(CASE, measure_answer(consistent(4.0)), None)
    assert any("Faster than the hardware can be" in p.message.en and p.mistake == "too_fast" for p in found if not p.ok)
    scored = core.score_records(find_task("m02.measure"), [{"case": CASE, "answer": measure_answer(consistent(4.0)),
                                                            "error": None}])
    assert core.fraction(scored) == pytest.approx(core.CENTRAL)  # capped by core._central, whose line comes first
    assert "breaks the rule the task is about" in scored[0].message.en


def test_measure_inconsistent_numbers_lose_the_consistency_part(measured):
    def learner(dtype, device):
        time_fn(lambda: None, budget_s=0.01, min_reps=1, warmup=0)
        return {"n": 2048, "seconds": 0.1, "tflops": 0.2}
    assert 0 < run_measure(learner) < 1.0


def test_measure_above_the_dense_peak_is_flagged(measured):
    measured["value"] = 0.15        # a spec peak below the reported figure: 0.25 > 1.05 x 0.15
    assert run_measure(consistent(0.25)) < 1.0
    assert run_measure(consistent(0.15)) == 1.0


def test_measure_rejects_non_numbers(measured):
    assert run_measure(lambda dtype, device: {"n": 1024, "seconds": -1, "tflops": math.nan}) == 0.0


def test_measure_without_a_reference_figure_grades_consistency(measured):
    failed = {"error": "RuntimeError: bfloat16 matmul is not supported here"}
    case = {"dtype": "bfloat16", "device": "cpu"}
    assert run_measure(consistent(0.2), case, reference=failed) == 1.0
    found = tasks._measure_score(case, measure_answer(consistent(0.2), case, reference=failed), None)
    assert any("could not run here" in p.message.en and p.weight == 0 for p in found)
    inconsistent = lambda dtype, device: {"n": 256, "seconds": 0.01, "tflops": 0.2}  # noqa: E731
    assert run_measure(inconsistent, case, reference=failed) == 0.0  # consistency and the rule are then all there is


def test_measure_must_be_measured_while_the_referee_watches(measured):
    honest = consistent(0.2, n=2048)  # claims 86 ms per round
    assert run_measure(honest, walls=[0.1, 0.2, 0.3]) == 1.0
    assert run_measure(honest, walls=[0.1, 0.001, 0.3]) == 0.0  # one round returned at once
    assert run_measure(honest, walls=[0.1, 0.2]) == 0.0  # a round the referee did not see
    answer = measure_answer(honest)
    del answer["observed"]
    found = tasks._measure_score(CASE, answer, None)
    assert core.fraction(found) == 0.0 and "while the grader watched" in found[0].message.en


def test_measure_a_constant_answer_is_not_measured(monkeypatch):
    """The local referee's own clock, with a stand-in reference: a function that returns a constant spent
    none of the 0.5 s its result claims."""
    from dataclasses import replace
    monkeypatch.delenv("COURSE_REFEREE", raising=False)
    task = replace(find_task("m02.measure"), reference=lambda case, answer: {"tflops": 0.27, "n": 4096})
    constant = lambda dtype, device: {"n": 4096, "seconds": 0.5, "tflops": 2 * 4096**3 / 0.5 / 1e12}  # noqa: E731
    records = core.collect(task, constant, [CASE], "m02.measure")
    assert len(records[0]["answer"]["observed"]["walls"]) == task.rounds
    found = core.score_records(task, records)
    assert core.fraction(found) == 0.0 and "This was not measured" in found[0].message.en
    assert found[0].mistake == "not_measured" and len(found) == 1
    assert not HANGUL.search(found[0].message.en) and "claimed" not in found[0].message.ko  # no English in Korean


def test_measure_the_first_size_rule_names_a_fixed_n_and_the_fastest_of_several(measured):
    """The rule is visible: a fixed n = 256, the fastest of several sizes (a small one), or a size past the first."""
    fixed = consistent(0.09, n=256)
    assert "not_first_size" in {p.mistake for p in tasks._measure_score(CASE, measure_answer(fixed, reference=0.09), None)}
    fastest = consistent(0.12, n=512)            # 2.2 ms: the fastest size, far below 0.05 s
    found = tasks._measure_score(CASE, measure_answer(fastest, reference=0.09), None)
    assert "not_first_size" in {p.mistake for p in found}
    assert any("fastest of several" in p.message.en for p in found if not p.ok)
    past = consistent(0.04, n=4096)              # 3.4 s: n = 2048 would already have taken 0.43 s
    found = tasks._measure_score(CASE, measure_answer(past, reference=0.04, walls=[12.0] * 3), None)
    assert {p.mistake for p in found if not p.ok} == {"past_first_size"}
    assert run_measure(consistent(0.09), reference=0.09) == 1.0


def test_measure_calling_the_course_reference_is_caught(monkeypatch):
    """A wrapper around the course's measurement is recorded however it was imported, and scores nothing."""
    from autograder.reference import matmul_tflops

    def wrapper(dtype, device):
        r = matmul_tflops(dtype, device, budget_s=0.05, sizes=[64])
        return {"n": 64, "seconds": 2 * 64**3 / (r["tflops"] * 1e12), "tflops": r["tflops"]}
    answer = tasks._measure_answer(wrapper, CASE)
    assert answer["reference_called"] == ["autograder.reference.matmul_tflops"]
    found = tasks._measure_score(CASE, {"rounds": [answer] * 3, "observed": {"walls": [1.0] * 3,
                                                                              "reference": [{"tflops": 0.1}] * 3}}, None)
    assert core.fraction(found) == 0.0 and found[0].mistake == "reference_called"
    assert tasks._measure_answer(consistent(0.2), CASE)["reference_called"] == []

    def in_a_thread(dtype, device):
        import threading
        from autograder import results
        worker = threading.Thread(target=results.load)      # the lesson's recorded figures, read in another thread
        worker.start()
        worker.join()
        return consistent(0.2)(dtype, device)
    assert tasks._measure_answer(in_a_thread, CASE)["reference_called"] == ["autograder.results.load"]


def test_measure_must_time_with_time_fn_as_the_task_says(measured):
    """One perf_counter reading passes the wide band on a quiet machine (0.45x was seen): the rule is its own part."""
    found = tasks._measure_score(CASE, measure_answer(consistent(0.2, timed=False)), None)
    assert [p.mistake for p in found if not p.ok] == ["no_time_fn"]
    assert tasks._measure_answer(consistent(0.2), CASE)["time_fn"] is True


def test_measure_reference_times_the_learners_size_within_bounds(monkeypatch):
    seen = []

    def matmul_tflops(dtype, device, budget_s, sizes=None):
        seen.append((dtype, device, list(sizes)))
        return {"tflops": 1.0}
    monkeypatch.setattr("autograder.reference.matmul_tflops", matmul_tflops)
    assert tasks._measure_reference(CASE, {"n": 2048.0, "seconds": 1, "tflops": 1}) == {"tflops": 1.0, "n": 2048}
    tasks._measure_reference(CASE, {"n": 1e9})
    tasks._measure_reference(CASE, {"n": 3.0})
    tasks._measure_reference(CASE, {"n": math.nan})
    tasks._measure_reference(CASE, "not a dict")
    assert [s[2] for s in seen] == [[2048], [tasks.MEASURE_SIZES[1]], [tasks.MEASURE_SIZES[0]], [1024], [1024]]
    assert all(s[:2] == ("float32", "cpu") for s in seen)


def test_a_slowed_measure_reference_is_taken_again_keeping_the_faster(monkeypatch):
    """A fake matmul that comes back 2x slower once: taken again, the faster kept; at most RETAKES times (issue 27)."""
    monkeypatch.setattr(referee, "_LAST_REFERENCE", {})
    speeds = iter([1.0, 0.5, 0.9, 0.1, 0.2, 0.1])
    monkeypatch.setattr("autograder.reference.matmul_tflops", lambda *a, **k: {"tflops": next(speeds)})
    size = {"n": 2048.0}
    assert tasks._measure_reference(CASE, size) == {"tflops": 1.0, "n": 2048}
    assert tasks._measure_reference(CASE, size) == {"tflops": 0.9, "n": 2048}  # 0.5 fell 2x: taken again
    assert tasks._measure_reference(CASE, size) == {"tflops": 0.2, "n": 2048}  # at most RETAKES more
    assert next(speeds, None) is None


def test_an_honest_measure_beside_a_slowed_reference_is_told_the_machine_was_busy(measured):
    """Above the band only because the reference's own rounds slowed (13x apart): said so, no mistake named, no
    cap, and the first-size rule still judged on the learner's times."""
    slowed = [{"tflops": 0.015, "n": 2048}, {"tflops": 0.018, "n": 2048}, {"tflops": 0.2, "n": 2048}]
    answer = measure_answer(consistent(0.2))
    answer["observed"]["reference"] = slowed
    task = find_task("m02.measure")
    found = core.score_records(task, [{"case": CASE, "answer": answer, "error": None}])
    failed = [p for p in found if not p.ok]
    assert len(failed) == 1 and failed[0].mistake is None and "the machine was busy" in failed[0].message.en
    assert "Faster than the hardware" not in failed[0].message.en
    assert core.fraction(found) == pytest.approx(3 / 5)  # the band's 2 of 5 points: nothing capped


def test_measure_cases_follow_the_best_device(monkeypatch):
    monkeypatch.setattr("autograder.hardware.best_device", lambda *a, **k: "cuda")
    assert tasks._measure_visible() == [{"dtype": "float32", "device": "cuda:0"}]
    import random
    assert ref.HIDDEN["measure"](random.Random(0))[0]["dtype"] == "bfloat16"


# ---------------------------------------------------------------- 7. N:M mask
def test_mask_with_topk_ties_is_partial():
    def topk_mask(w, n, m):
        idx = w.abs().reshape(w.shape[0], -1, m).topk(n, dim=-1, largest=True, sorted=False).indices
        return torch.zeros(w.shape[0], w.shape[1] // m, m, dtype=torch.bool).scatter_(-1, idx, True).reshape(w.shape)
    assert share("nm_mask", topk_mask) < 1.0


def test_mask_fixed_at_2_4_fails_the_other_patterns():
    assert share("nm_mask", lambda w, n, m: ref.nm_mask(w, 2, 4) if w.shape[1] % 4 == 0 else ref.nm_mask(w, n, m)) < 0.8


def test_mask_by_signed_value_is_named_on_every_row_it_breaks():
    """Ranking by value, not |w|: the magnitude mistake on each case it breaks, never a tie or group-size hint."""
    def by_value(w, n, m):
        if w.shape[1] % m:
            raise ValueError("bad shape")
        groups = w.reshape(w.shape[0], -1, m)
        order = torch.sort(groups, dim=-1, descending=True, stable=True).indices
        return torch.zeros_like(groups, dtype=torch.bool).scatter_(-1, order[..., :n], True).reshape(w.shape)
    failed = [p for p in parts("nm_mask", by_value, hidden=False) if not p.ok]
    assert len(failed) >= 3 and {p.mistake for p in failed} == {"magnitude"}
    assert all("in favour of" in p.message.en and "?" not in p.message.en for p in failed)


def test_mask_a_sort_that_is_not_stable_fails_a_visible_tie_case():
    def argsort(w, n, m):
        groups = w.abs().reshape(w.shape[0], -1, m)
        keep = torch.argsort(groups, dim=-1, descending=True)[..., :n]
        return torch.zeros_like(groups, dtype=torch.bool).scatter_(-1, keep, True).reshape(w.shape)
    assert "unstable_sort" in named("nm_mask", argsort)


# ---------------------------------------------------------------- 8. the narrowest format
def test_fit_visible_cases_show_every_reason():
    reasons = set()
    for case in tasks._fit_visible():
        out = ref.smallest_format(case["values"], case["rel_tol"], case["special"])
        reasons |= {out["without_exp_bit"], out["without_man_bit"]}
    assert {"range", "subnormal", "precision"} <= reasons


def test_fit_right_format_wrong_reasons_earns_partial_credit():
    def no_reasons(values, rel_tol, special):
        return {**ref.smallest_format(values, rel_tol, special), "without_exp_bit": None, "without_man_bit": None}
    assert 0.5 < share("smallest_format", no_reasons, hidden=False) < 1.0


def test_fit_ignoring_special_is_named():
    assert named("smallest_format", lambda values, tol, special: ref.smallest_format(values, tol, "none")) \
        == {"special_ignored"}
    assert "special_ignored" in named("smallest_format", lambda values, tol, special: ref.smallest_format(values, tol, "ieee"))


def test_fit_invalid_answers_score_nothing_but_do_not_crash():
    assert share("smallest_format", lambda values, tol, special: {"exp_bits": 11, "man_bits": 3}, hidden=False) == 0.0
    assert share("smallest_format", lambda values, tol, special: {"exp_bits": "5"}, hidden=False) == 0.0


def test_rounding_e2m1_subnormals_on_a_finer_grid_is_named_as_such_not_as_the_tie_rule():
    """The learner's trial: 0.25 and 0.75 in e2m1 (whose subnormals are 0.5 apart) were blamed on the tie rule."""
    def finer_grid(x, fmt):
        bias, m_bits = fmt["bias"], fmt["man_bits"]
        a = x.abs().double()
        step = torch.exp2(torch.frexp(a)[1].double() - 1 - m_bits)   # the exponent not held at 1 - bias
        q = torch.where(a < 2.0 ** (1 - bias), torch.round(a / step) * step, ref.round_to_format(a, fmt).abs())
        return torch.copysign(q, x.double())
    named_parts = [p for p in parts("round", finer_grid, hidden=False) if not p.ok and p.weight]
    assert named_parts and {p.mistake for p in named_parts} == {"subnormal_spacing"}
    e2m1 = [p for p in named_parts if p.message.en.startswith("e2m1")]
    assert e2m1 and all("halfway" not in p.message.en for p in e2m1)
