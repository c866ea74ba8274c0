"""Module 04 checks: the reference gets full marks and stubs nothing, hidden cases defeat a table of the visible
answers, known mistakes cost points with a verdict that names them and lists what is right, a device placement
shows on a CPU-only machine, and nothing goes to stderr."""
import random
import sys

import pytest
import torch

from autograder.checks import CheckFailed, check, task
from autograder.checks import core
from autograder.modules.m04_training_memory import tasks as C
from course_answers import m04_training_memory as A

REFERENCE = {"breakdown": A.memory_breakdown, "saved": A.predict_saved, "split": A.split_by_budget,
             "scaler_log": A.read_scaler_log, "step": A.train_step, "audit": A.diagnose, "plan": A.plan_training}


@pytest.fixture(autouse=True)
def _fixed_seed(monkeypatch):
    monkeypatch.setenv("COURSE_GRADING_SEED", "1234")
    monkeypatch.setenv("COURSE_LANG", "both")


def _stub(*args, **kwargs):
    raise NotImplementedError()


def test_the_exercise_is_designed_to_make_learners_think():
    tasks = [C.TASKS[name] for name in REFERENCE]
    assert [t.level for t in tasks][0] == "warm-up" and [t.level for t in tasks][-2:] == ["stretch", "stretch"]
    assert sum(t.kind == "transfer" for t in tasks) == 6
    assert all(t.mistakes for t in tasks)


@pytest.mark.parametrize("name", sorted(REFERENCE))
def test_reference_gets_full_marks_quietly(name, capsys):
    assert check(f"m04.{name}", REFERENCE[name], points=3, hidden=True) is None
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("name", sorted(REFERENCE))
def test_stub_gets_nothing(name):
    with pytest.raises(CheckFailed):
        check(f"m04.{name}", _stub, points=3, hidden=True)


@pytest.mark.parametrize("seed", ["1", "99", "2024"])
def test_hidden_cases_change_with_the_seed_and_stay_valid(seed, monkeypatch):
    monkeypatch.setenv("COURSE_GRADING_SEED", seed)
    for name in REFERENCE:
        assert check(f"m04.{name}", REFERENCE[name], points=1, hidden=True) is None, name


def _table_of_visible_answers(name: str):
    """A learner who copied the visible answers into a table (keyed by the arguments)."""
    table = {}

    def record(*args):
        table[repr(args)] = REFERENCE[name](*args)
        return table[repr(args)]

    for case in C.TASKS[name].visible():
        C.TASKS[name].answer(record, case)
    return lambda *args: table.get(repr(args), table[next(iter(table))])


@pytest.mark.parametrize("name", ["breakdown", "saved", "scaler_log", "plan"])
def test_a_table_of_the_visible_answers_fails_the_hidden_cases(name):
    learner = _table_of_visible_answers(name)
    assert check(f"m04.{name}", learner, points=4) is None
    earned = check(f"m04.{name}", learner, points=4, hidden=True)
    assert earned is not None and earned < 4


def test_a_partial_verdict_lists_the_parts_that_are_right_and_names_the_mistake(capsys, monkeypatch):
    monkeypatch.setattr("autograder.i18n._chosen", "en")
    earned = check("m04.step", A.MISTAKES["step"]["sync_every_micro_batch"], points=3)
    shown = capsys.readouterr().out
    assert 0 < earned < 3
    assert "Known mistake: no micro-batch ran inside `model.no_sync()`" in shown
    right = [line for line in shown.splitlines() if line.lstrip().startswith("✅")]
    assert any("update (weighting, clipping)" in line for line in right)
    assert any("scaler calls" in line for line in right)


def test_gb_for_gib_is_named_by_the_visible_plan_checks(capsys, monkeypatch):
    monkeypatch.setattr("autograder.i18n._chosen", "en")
    earned = check("m04.plan", A.MISTAKES["plan"]["gb_for_gib"], points=4)
    assert earned is not None and earned < 4
    assert "Known mistake: the capacity read as GB (10^9 bytes)" in capsys.readouterr().out


def test_a_layer_left_on_the_first_device_shows_on_a_cpu_only_machine(capsys, monkeypatch):
    """Both devices were 'cpu' before, so a wrong placement passed; the meta device makes it visible."""
    monkeypatch.setattr("autograder.i18n._chosen", "en")
    wrong = A.MISTAKES["split"]["second_part_not_placed"]
    earned = check("m04.split", wrong, points=2)
    assert earned is not None and earned < 2
    assert "the layers after the split stay on the first device" in capsys.readouterr().out
    case = C.TASKS["split"].visible()[0]
    parts = C.TASKS["split"].score(case, core.canonical(C.TASKS["split"].answer(wrong, case)), A.EXPECT["split"](case))
    assert [p.ok for p in parts] == [False, False, True, True]  # placement, output device; values, gradients


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_the_step_tolerance_passes_the_reference_on_many_random_cases(dtype):
    rng = random.Random(7)
    gaps = []
    for _ in range(12):
        for case in A._step_hidden(rng)[:2]:
            case["dtype"] = dtype
            answer = core.canonical(C.TASKS["step"].answer(A.train_step, case))
            want = A.EXPECT["step"](case)
            gaps.append(C.relative_gap(answer["delta"], want["answer"]["delta"]))
            assert all(p.ok for p in C.TASKS["step"].score(case, answer, want)), case
    assert max(gaps) < C.STEP_TOLERANCE[dtype] / 2  # a margin of at least two (amp.yaml gives the measured one)


def test_every_numeric_step_mistake_lies_far_outside_the_tolerance():
    for case in C.TASKS["step"].visible():
        want = A.EXPECT["step"](case)
        for name, wrong in want["mistakes"].items():
            assert C.relative_gap(wrong["delta"], want["answer"]["delta"]) > 4 * C.STEP_TOLERANCE[case["dtype"]], name


@pytest.mark.parametrize("bug", C.BUGS)
def test_every_way_of_writing_a_planted_bug_is_diagnosed_by_the_reference(bug):
    assert {A.diagnose(C.planted_step(bug, style)) for style in range(8)} == {bug}


def test_planted_styles_change_the_code_not_the_result():
    model, x, y, loss_fn = C.mlp({"seed": 3, "sizes": [4, 6, 2], "batch": 7, "loss": "mse"})
    grads = []
    for style in range(8):
        C.planted_step("ok", style)(model, loss_fn, x, y, 3)
        grads.append(torch.cat([p.grad.flatten() for p in model.parameters()]))
    assert all(torch.allclose(g, grads[0], atol=1e-6) for g in grads)


def test_saved_answers_must_be_whole_numbers_of_bytes():
    def floats(*args):
        return {k: v + 0.5 for k, v in A.predict_saved(*args).items()}

    with pytest.raises(CheckFailed):
        check("m04.saved", floats, points=3)


def test_some_hidden_saved_cases_are_too_large_to_run():
    """Some hidden cases of task 2 are far too large to build (tens of GB): the prediction must come from the rule."""
    cases = A.HIDDEN["saved"](random.Random(3))
    assert sum(not A.measurable(c) for c in cases) == 2
    assert min(c["depth"] * 2 * c["dims"][0] * c["dims"][1] * 2 for c in cases if not A.measurable(c)) > 10**10


def test_learner_side_runs_without_the_answers_package(monkeypatch):
    """The grader hides course_answers from submissions: the learner's side (answer) must not need it."""
    cases = {name: core.cases_for(task(f"m04.{name}"), True, 5) for name in C.TASKS}  # drawn by the grader
    monkeypatch.setitem(sys.modules, "course_answers.m04_training_memory", None)  # any import of it now fails
    records = {}
    for name in C.TASKS:
        records[name] = core.collect(task(f"m04.{name}"), REFERENCE[name], cases[name])
        assert all(r["error"] is None for r in records[name]), (name, records[name])
    monkeypatch.delitem(sys.modules, "course_answers.m04_training_memory")
    for name in C.TASKS:
        assert core.fraction(core.score_records(task(f"m04.{name}"), records[name])) == 1.0, name
