"""Checks of module 07: references get full marks on hidden cases, blanks and stubs fail, every known mistake loses
points on the hidden cases too, hard-coded values fail, and the checks write nothing to stderr."""
import random

import pytest

from autograder.checks import CheckFailed, check, task
from autograder.checks.core import Recorded, cases_for, collect, fraction, score_records
from autograder.modules.m07_kernels import device, tasks
from autograder.modules.m07_kernels.device import cuda, tl, triton
from course_answers import m07_kernels as ref

SEED = 4321
KERNELS = [name for name in tasks.TASKS if name != "copy"]


@pytest.fixture(autouse=True)
def _english_and_seed(monkeypatch):
    monkeypatch.setenv("COURSE_LANG", "en")
    monkeypatch.setenv("COURSE_GRADING_SEED", str(SEED))
    monkeypatch.delenv("COURSE_RECORD_ANSWERS", raising=False)


def share(name: str, learner, hidden: bool = True) -> float:
    t = task(f"m07.{name}")
    return fraction(score_records(t, collect(t, learner, cases_for(t, hidden, SEED))))


@pytest.mark.parametrize("name", KERNELS)
def test_reference_gets_full_marks_without_stderr(name, capfd):
    assert check(f"m07.{name}", ref.SOLUTIONS[name], points=3, hidden=True) is None
    out, err = capfd.readouterr()
    assert "passed" in out and err == ""


@cuda.jit
def _blank(*args):
    raise NotImplementedError()


@triton.jit
def _blank_triton(x_ptr, y_ptr, cols, BLOCK: tl.constexpr):
    raise NotImplementedError()


@pytest.mark.parametrize("name", KERNELS)
def test_the_blank_kernel_is_not_implemented(name, capsys):
    learner = {"guard": (_blank, ref.blocks_for), "softmax": _blank_triton}.get(name, _blank)
    with pytest.raises(CheckFailed) as failed:
        check(f"m07.{name}", learner, points=3, hidden=True)
    assert "NotImplementedError" in str(failed.value) or "not implemented" in str(failed.value).lower()


@pytest.mark.parametrize("name,mistake", [(n, m) for n in KERNELS for m in tasks.TASKS[n].mistakes])
def test_a_known_mistake_loses_points_on_the_hidden_cases_too(name, mistake):
    wrong = ref.MISTAKES[name][mistake]
    assert share(name, wrong, hidden=True) < 1.0


@pytest.mark.parametrize("name", KERNELS)
def test_hidden_cases_change_with_the_seed(name):
    assert ref.HIDDEN[name](random.Random(1)) != ref.HIDDEN[name](random.Random(2))


@pytest.mark.parametrize("name", ["pool", "dot", "scan", "matmul"])
def test_hidden_cases_include_sizes_that_are_not_multiples_of_the_block(name):
    cases = ref.HIDDEN[name](random.Random(3))
    sizes = [c.get("n", c.get("m")) for c in cases]
    assert 1 in sizes and any(s not in (1,) and s % 16 for s in sizes)


def test_copy_reference_full_marks_on_the_simulator(capfd):
    assert check("m07.copy", ref.SOLUTIONS["copy"], points=3) is None
    out, err = capfd.readouterr()
    assert "simulator" in out and err == ""


@pytest.mark.parametrize("mistake", ["reads_only", "host_arrays", "no_synchronize"])
def test_copy_mistakes_score_nothing_for_the_measurement(mistake):
    t = task("m07.copy")
    wrong = ref.MISTAKES["copy"][mistake]
    case = t.visible()[wrong.case]
    parts = t.score(case, wrong.answer, None)
    assert any(p.mistake == mistake for p in parts) and fraction(parts) < 1.0


def test_a_guard_with_hard_coded_blocks_fails_hidden_cases():
    assert share("guard", (ref.affine, lambda n, threads: 8), hidden=False) < 1.0


def test_the_simulator_choice_is_explained():
    assert device.SIMULATED and "simulator" in device.summary().en


def test_a_missing_triton_stands_in_and_says_why():
    stand_in = device._Absent()
    fn = stand_in.jit(lambda x: x)
    assert fn(3) == 3 and stand_in.language.constexpr is not None
