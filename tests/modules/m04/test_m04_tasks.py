"""Module 04 checks: the reference gets full marks, stubs get nothing, typical mistakes get
partial credit, hard-coded answers fail the hidden cases, and nothing goes to stderr."""
import math
from contextlib import nullcontext

import pytest
import torch
import torch.nn as nn

from autograder.checks import CheckFailed, check, task
from autograder.checks.expected import want
from autograder.modules.m04_training_memory import tasks as C
from course_answers import m04_training_memory as A

REFERENCE = {"breakdown": A.memory_breakdown, "gpus": A.gpus_needed, "saved": A.saved_bytes,
             "accumulate": A.accumulation_step, "scaler": A.DynamicLossScaler, "amp": A.amp_step,
             "split": A.split_model}


@pytest.fixture(autouse=True)
def _fixed_seed(monkeypatch):
    monkeypatch.setenv("COURSE_GRADING_SEED", "1234")
    monkeypatch.setenv("COURSE_LANG", "both")


def _stub(*args, **kwargs):
    raise NotImplementedError()


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
    for name in ("breakdown", "gpus", "scaler", "split", "accumulate"):
        assert check(f"m04.{name}", REFERENCE[name], points=1, hidden=True) is None


def _hard_coded(task: str):
    """A learner who copied the visible answers into a table."""
    table = {}
    for case in C.TASKS[task].visible():
        table[repr(case)] = C.TASKS[task].answer(REFERENCE[task], case)
    return table


def test_hard_coded_breakdown_fails_hidden_cases():
    table = _hard_coded("breakdown")

    def learner(n, opt, prec, stage, gpus):
        case = {"params": n, "optimizer": opt, "precision": prec, "stage": stage, "gpus": gpus}
        return table.get(repr(case), {"weights": 0, "gradients": 0, "optimizer": 0, "total": 0})

    assert check("m04.breakdown", learner, points=4) is None
    earned = check("m04.breakdown", learner, points=4, hidden=True)
    assert earned is not None and earned < 4


def test_breakdown_without_sharding_gets_partial_credit():
    def no_zero(n, opt, prec, stage, gpus):
        return A.memory_breakdown(n, opt, prec, 0, 1)

    earned = check("m04.breakdown", no_zero, points=4, hidden=True)
    assert 0 < earned < 4


def test_gpus_hard_coded_fails_and_gib_mistake_loses_points():
    table = {(7_000_000_000, "h100_sxm"): {"train": 2, "infer": 1}}
    earned = check("m04.gpus", lambda n, pid: table.get((n, pid), {"train": 1, "infer": 1}), points=2, hidden=True)
    assert earned is not None and earned < 2

    def gib(n, pid):  # 10**9 instead of 2**30 bytes per vendor "GB" (the capacity is 80 GiB): too many GPUs near a boundary
        from autograder import profiles
        mem = profiles.get(pid).memory_gib * 10**9
        return {"train": max(1, math.ceil(n * 16 / (0.9 * mem))), "infer": max(1, math.ceil(n * 2 / (0.9 * mem)))}

    assert check("m04.gpus", gib, points=2) is not None  # 70B on A100 80GB: 15 instead of 16


def test_saved_bytes_without_dedup_gets_partial_credit():
    def no_dedup(model, x):
        total = []
        params = {p.untyped_storage().data_ptr() for p in model.parameters()}

        def pack(t):
            if t.untyped_storage().data_ptr() not in params:
                total.append(t.untyped_storage().nbytes())
            return t
        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            model(x)
        return sum(total)

    earned = check("m04.saved", no_dedup, points=4, hidden=True)
    assert earned is not None and 0 < earned < 4


def test_accumulation_divided_by_steps_fails_uneven_hidden_splits():
    def naive(model, loss_fn, x, y, k):
        model.zero_grad()
        total = 0.0
        parts = list(zip(torch.tensor_split(x, k), torch.tensor_split(y, k)))
        for i, (xs, ys) in enumerate(parts):
            ctx = model.no_sync() if i < len(parts) - 1 else nullcontext()
            with ctx:
                loss = loss_fn(model(xs), ys) / k
                loss.backward()
            total += loss.item()
        return total

    earned = check("m04.accumulate", naive, points=5, hidden=True)
    assert earned is not None and earned < 5


def test_accumulation_without_no_sync_or_clearing_loses_points():
    def no_sync_ignored(model, loss_fn, x, y, k):
        model.zero_grad()
        for xs, ys in zip(torch.tensor_split(x, k), torch.tensor_split(y, k)):
            (loss_fn(model(xs), ys) * len(xs) / len(x)).backward()
        return loss_fn(model(x), y).item()

    def stale(model, loss_fn, x, y, k):  # forgets to clear the previous step's gradients
        for i, (xs, ys) in enumerate(zip(torch.tensor_split(x, k), torch.tensor_split(y, k))):
            with model.no_sync() if i < k - 1 else nullcontext():
                (loss_fn(model(xs), ys) * len(xs) / len(x)).backward()
        return loss_fn(model(x), y).item()

    assert 0 < check("m04.accumulate", no_sync_ignored, points=5) < 5
    assert 0 < check("m04.accumulate", stale, points=5) < 5


def test_scaler_that_never_grows_gets_partial_credit():
    class NoGrowth(A.DynamicLossScaler):
        def step(self, grads):
            keep = self.growth_factor
            self.growth_factor = 1.0
            try:
                return super().step(grads)
            finally:
                self.growth_factor = keep

    earned = check("m04.scaler", NoGrowth, points=4, hidden=True)
    assert earned is not None and 0 < earned < 4


def test_scaler_that_steps_on_nan_fails():
    class StepsOnNan(A.DynamicLossScaler):
        def step(self, grads):
            if not all(math.isfinite(g) for g in grads):
                return self.unscale([0.0 if not math.isfinite(g) else g for g in grads])
            return super().step(grads)

    earned = check("m04.scaler", StepsOnNan, points=4, hidden=True)
    assert earned is not None and earned < 4


def test_amp_step_without_autocast_or_scaler_loses_points():
    def fp32_step(model, optimizer, scaler, x, y, loss_fn, device_type, dtype):
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
        return loss.item()

    earned = check("m04.amp", fp32_step, points=4, hidden=True)
    assert earned is not None and 0 < earned <= 2


def test_amp_step_that_forgets_zero_grad_fails_the_tracking_part():
    def no_zero(model, optimizer, scaler, x, y, loss_fn, device_type, dtype):
        with torch.autocast(device_type, dtype=dtype):
            loss = loss_fn(model(x), y)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        return loss.item()

    earned = check("m04.amp", no_zero, points=4)
    assert earned is not None and earned <= 2


def test_amp_record_is_json_and_graded_outside_the_kernel():
    case = C.TASKS["amp"].visible()[0]
    record = C.TASKS["amp"].answer(A.amp_step, case)
    import json
    again = json.loads(json.dumps(record))
    parts = C.TASKS["amp"].score(case, again, None)
    assert all(p.ok for p in parts)
    assert again["device"] == "cpu" and again["dtype"] == "bfloat16"


def test_split_that_forgets_the_second_part_fails():
    def first_only(layers, split, first, second):
        return nn.Sequential(*list(layers)[:split]).to(first)

    earned = check("m04.split", first_only, points=3, hidden=True)
    assert earned is not None and earned < 1  # only the edge case "everything on the first device" passes


def test_split_that_leaves_output_on_first_device_is_caught_with_fake_devices():
    case = C.TASKS["split"].visible()[0]
    answer = C.TASKS["split"].answer(A.split_model, case)
    answer["out_device"] = "cuda"
    assert len(C.TASKS["split"].score(case, answer, want("m04.split", case))) == 2  # two CPU placements: placement not graded
    answer["first"] = "cuda"
    assert [p.ok for p in C.TASKS["split"].score(case, answer, want("m04.split", case))] == [True, True, False]  # output compared with tolerance
    answer.update(out_device="cpu", devices=["cuda"] * len(answer["devices"]))
    parts = C.TASKS["split"].score(case, answer, want("m04.split", case))
    assert parts[-1].ok is False  # layers after the split must be on the second device


def test_learner_side_runs_without_the_answers_package(monkeypatch):
    """The grader hides course_answers from submissions: the learner's side (answer) must not need it."""
    import sys

    from autograder.checks import core

    cases = {name: core.cases_for(task(f"m04.{name}"), True, 5) for name in C.TASKS}  # drawn by the grader
    monkeypatch.setitem(sys.modules, "course_answers.m04_training_memory", None)  # any import of it now fails
    records = {}
    for name in C.TASKS:
        records[name] = core.collect(task(f"m04.{name}"), REFERENCE[name], cases[name])
        assert all(r["error"] is None for r in records[name]), (name, records[name])
    monkeypatch.delitem(sys.modules, "course_answers.m04_training_memory")
    for name in C.TASKS:
        assert core.fraction(core.score_records(task(f"m04.{name}"), records[name])) == 1.0, name
