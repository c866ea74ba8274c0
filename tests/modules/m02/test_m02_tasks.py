"""The graded tasks of exercise 02: full marks for the reference, zero for stubs, partial for typical mistakes."""
import json
import math
import sys

import pytest
import torch

from autograder.checks import CheckFailed, check, core, task as find_task
from autograder.modules.m02_gpu_architecture import tasks
from course_answers import m02_gpu_architecture as ref

SEEDS = (1, 2, 3)


def share(task_id: str, learner, hidden: bool = True, seed: int = 1) -> float:
    task = find_task(f"m02.{task_id}")
    records = core.collect(task, learner, core.cases_for(task, hidden, seed))
    return core.fraction(core.score_records(task, records))


REFERENCE = {
    "gpu_numbers": ref.gpu_numbers,
    "decode": ref.decode,
    "limits": ref.limits,
    "round": ref.round_to_format,
    "matmul_error": ref.matmul_errors,
    "mask_2_4": ref.mask_2_4,
}


@pytest.mark.parametrize("task_id", sorted(REFERENCE))
@pytest.mark.parametrize("seed", SEEDS)
def test_reference_gets_full_marks(task_id, seed):
    assert share(task_id, REFERENCE[task_id], seed=seed) == 1.0


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
            core.score_records(task, [{"case": case, "answer": None, "error": "NotImplementedError"}])


# ---------------------------------------------------------------- 1. spec arithmetic
def test_spec_without_fma_gets_partial_credit():
    def no_fma(spec):
        out = ref.gpu_numbers(spec)
        return {**out, "vector_fp32_tflops": out["vector_fp32_tflops"] / 2, "tensor_over_vector": out["tensor_over_vector"] * 2}
    assert 0.3 < share("gpu_numbers", no_fma) < 0.8


def test_spec_hard_coded_for_the_visible_gpus_fails_hidden_cases():
    table = {c["name"]: ref.gpu_numbers(c) for c in tasks._spec_visible()}
    learner = lambda spec: table.get(spec["name"], table["H100 SXM"])
    assert share("gpu_numbers", learner, hidden=False) == 1.0
    assert share("gpu_numbers", learner) < 0.5


def test_spec_using_the_boost_clock_for_the_running_clock_loses_that_part():
    def boost_only(spec):
        return ref.gpu_numbers({**spec, "clock_mhz": spec["boost_clock_mhz"]})
    assert 0.7 < share("gpu_numbers", boost_only) < 1.0


# ---------------------------------------------------------------- 2. decode
def test_decode_without_subnormals_or_specials_is_partial():
    def naive(bits, fmt):
        e_bits, m_bits, bias = fmt["exp_bits"], fmt["man_bits"], fmt["bias"]
        sign = -1.0 if bits >> (e_bits + m_bits) else 1.0
        e, m = (bits >> m_bits) & (2**e_bits - 1), bits & (2**m_bits - 1)
        return sign * 2.0 ** (e - bias) * (1 + m / 2**m_bits)
    assert share("decode", naive) == 0.0


def test_decode_that_treats_e4m3_like_ieee_loses_e4m3():
    learner = lambda bits, fmt: ref.decode(bits, {**fmt, "special": "ieee" if fmt["special"] == "fn" else fmt["special"]})
    assert 0.5 < share("decode", learner) < 1.0


def test_decode_by_table_lookup_of_visible_patterns_fails_hidden():
    table = {(c["format"]["name"], b): ref.decode(b, c["format"]) for c in tasks._decode_visible() for b in c["bits"]}
    learner = lambda bits, fmt: table.get((fmt["name"], bits), 0.0)
    assert share("decode", learner, hidden=False) == 1.0
    assert share("decode", learner) < 0.5


# ---------------------------------------------------------------- 3. limits
def test_limits_with_the_ieee_rule_everywhere_is_partial():
    learner = lambda fmt: ref.limits({**fmt, "special": "ieee"})
    assert 0.5 < share("limits", learner) < 1.0


def test_limits_from_torch_finfo_only_fails_the_other_formats():
    def finfo_only(fmt):
        info = torch.finfo(getattr(torch, {"fp16": "float16", "bf16": "bfloat16", "e4m3": "float8_e4m3fn",
                                           "e5m2": "float8_e5m2", "fp32": "float32"}[fmt["name"]]))
        return {"max": info.max, "smallest_normal": info.smallest_normal, "smallest_subnormal": info.smallest_normal,
                "eps": info.eps}
    assert share("limits", finfo_only) < 0.75


# ---------------------------------------------------------------- 4. round
def _with_rounding(rounder):
    def learner(x, fmt):
        m_bits, bias = fmt["man_bits"], fmt["bias"]
        top = ref.limits(fmt)["max"]
        x = torch.as_tensor(x, dtype=torch.float64)
        a = x.abs().clamp(max=top)
        e = (torch.frexp(a)[1].double() - 1).clamp(min=1 - bias)
        step = torch.exp2(e - m_bits)
        return torch.copysign((rounder(a / step) * step).clamp(max=top), x)
    return learner


def test_round_half_away_from_zero_fails_the_ties():
    assert share("round", _with_rounding(lambda v: torch.floor(v + 0.5))) < 0.5


def test_round_by_truncation_fails():
    assert share("round", _with_rounding(torch.floor)) == 0.0


def test_round_without_saturation_loses_the_overflow_cases():
    def overflowing(x, fmt):
        out = ref.round_to_format(x, fmt)
        return torch.where(torch.as_tensor(x, dtype=torch.float64).abs() > ref.limits(fmt)["max"],
                           torch.copysign(torch.tensor(math.inf, dtype=torch.float64), out), out)
    assert share("round", overflowing) == 0.0


def test_round_with_torch_casts_only_gets_partial_credit():
    def torch_only(x, fmt):
        top = ref.limits(fmt)["max"]
        dtype = {"bf16": torch.bfloat16, "fp16": torch.float16, "e4m3": torch.float8_e4m3fn,
                 "e5m2": torch.float8_e5m2}[fmt["name"]]
        return x.clamp(-top, top).to(dtype).double()
    assert 0.2 < share("round", torch_only) < 0.8


# ---------------------------------------------------------------- 5. matmul error
def test_matmul_error_hard_coded_fails_hidden_scales():
    visible = tasks._error_visible()[0]
    table = ref.matmul_errors(visible["n"], visible["seed"], visible["scale"], visible["formats"])
    learner = lambda n, seed, scale, formats: dict(table)
    assert share("matmul_error", learner, hidden=False) == 1.0
    assert share("matmul_error", learner) < 0.6


def test_matmul_error_with_swapped_formats_loses_magnitude_and_order():
    def swapped(n, seed, scale, formats):
        out = ref.matmul_errors(n, seed, scale, formats)
        out["bf16"], out["e5m2"] = out["e5m2"], out["bf16"]
        return out
    assert share("matmul_error", swapped, hidden=False) < 0.75


# ---------------------------------------------------------------- 6. measurement (side by side, answers by hand)
@pytest.fixture
def measured(monkeypatch):
    """The measure task, optionally with a spec peak (``measured["value"]``, TFLOP/s)."""
    peak = {"value": None}
    monkeypatch.setattr(tasks, "_spec_peak", lambda case: peak["value"])
    return peak


def consistent(tflops, n=1024):
    return lambda dtype, device: {"n": n, "seconds": 2 * n**3 / (tflops * 1e12), "tflops": tflops}


CASE = {"dtype": "float32", "device": "cpu"}


def measure_answer(learner, case=None, reference=0.2, walls=None):
    """Three rounds of the learner's answer with what the referee observed: walls, reference TFLOP/s."""
    rounds = [tasks._measure_answer(learner, case or CASE) for _ in range(3)]
    walls = [1.0] * 3 if walls is None else walls
    refs = [reference if isinstance(reference, dict) else {"tflops": reference, "n": 1024}] * 3
    return {"rounds": rounds, "observed": {"walls": walls, "reference": refs}}


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
    parts = tasks._measure_score(CASE, measure_answer(consistent(4.0)), None)
    assert any("Faster than the hardware can be" in p.message.en for p in parts if not p.ok)


def test_measure_inconsistent_numbers_lose_the_consistency_part(measured):
    learner = lambda dtype, device: {"n": 1024, "seconds": 0.01, "tflops": 0.2}  # noqa: E731
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
    parts = tasks._measure_score(case, measure_answer(consistent(0.2), case, reference=failed), None)
    assert any("could not run here" in p.message.en and p.weight == 0 for p in parts)
    inconsistent = lambda dtype, device: {"n": 1024, "seconds": 0.01, "tflops": 0.2}  # noqa: E731
    assert run_measure(inconsistent, case, reference=failed) == 0.0  # consistency is then all there is


def test_measure_must_be_measured_while_the_referee_watches(measured):
    honest = consistent(0.2, n=2048)  # claims 86 ms per round
    assert run_measure(honest, walls=[0.1, 0.2, 0.3]) == 1.0
    assert run_measure(honest, walls=[0.1, 0.001, 0.3]) == 0.0  # one round returned at once
    assert run_measure(honest, walls=[0.1, 0.2]) == 0.0  # a round the referee did not see
    answer = measure_answer(honest)
    del answer["observed"]
    parts = tasks._measure_score(CASE, answer, None)
    assert core.fraction(parts) == 0.0 and "while the grader watched" in parts[0].message.en


def test_measure_a_constant_answer_is_not_measured(monkeypatch):
    """The local referee's own clock, with a stand-in reference: a function that returns a constant spent
    none of the 0.5 s its result claims."""
    from dataclasses import replace
    monkeypatch.delenv("COURSE_REFEREE", raising=False)
    task = replace(find_task("m02.measure"), reference=lambda case, answer: {"tflops": 0.27, "n": 4096})
    constant = lambda dtype, device: {"n": 4096, "seconds": 0.5, "tflops": 2 * 4096**3 / 0.5 / 1e12}  # noqa: E731
    records = core.collect(task, constant, [CASE], "m02.measure")
    assert len(records[0]["answer"]["observed"]["walls"]) == task.rounds
    parts = core.score_records(task, records)
    assert core.fraction(parts) == 0.0 and "this was not measured" in parts[0].message.en


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


def test_measure_cases_follow_the_best_device(monkeypatch):
    monkeypatch.setattr("autograder.hardware.best_device", lambda *a, **k: "cuda")
    assert tasks._measure_visible() == [{"dtype": "float32", "device": "cuda:0"}]
    import random
    assert ref.HIDDEN["measure"](random.Random(0))[0]["dtype"] == "bfloat16"


# ---------------------------------------------------------------- 7. 2:4 mask
def test_mask_with_topk_ties_or_no_error_is_partial():
    def topk_mask(w):
        idx = w.abs().reshape(w.shape[0], -1, 4).topk(2, dim=-1, largest=True, sorted=False).indices
        return torch.zeros(w.shape[0], w.shape[1] // 4, 4, dtype=torch.bool).scatter_(-1, idx, True).reshape(w.shape)
    assert share("mask_2_4", topk_mask) < 1.0


def test_mask_keeping_the_higher_index_on_ties_fails_the_tie_cases():
    def higher_index(w):
        return ref.mask_2_4(w.flip(-1)).flip(-1)
    visible = share("mask_2_4", higher_index, hidden=False)
    assert visible < 1.0 and share("mask_2_4", higher_index) < 0.7


def test_mask_by_signed_value_instead_of_magnitude_fails():
    def signed(w):
        w = torch.as_tensor(w)
        if w.ndim != 2 or w.shape[1] % 4:
            raise ValueError("bad shape")
        order = torch.sort(w.reshape(w.shape[0], -1, 4), dim=-1, descending=True, stable=True).indices
        return torch.zeros(w.shape[0], w.shape[1] // 4, 4, dtype=torch.bool).scatter_(-1, order[..., :2], True).reshape(w.shape)
    assert share("mask_2_4", signed) < 0.5
