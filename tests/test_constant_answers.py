"""An answer that ignores its input scores 0 on the whole task (``pytest -k constant``): every task of every
exercise, on its visible and hidden cases, gives nothing to learners that return the same thing for every input,
while its reference answers differ from case to case.

The constant learners: ``None``, ``0``, ``{}``, ``[]``, the expected answer of the first case (as data), and the
reference solution replayed (it answers the first case, then returns that same answer for every later one: the
constant that is right somewhere). A kernel cannot return anything: exercise 07's constant kernels are one that
does nothing and one that writes 0 to every output element; its timing task gets the reference kernel with constant
timing functions. A measurement task's constants run side by side with the referee's reference, as a learner's
check does: the rule looks at the rounds the learner's code gave, so the verdict does not depend on the machine's
load.
"""
import json
import re
from dataclasses import replace

import pytest

from autograder import layout
from autograder.checks import task
from autograder.checks.core import Part, Task, cases_for, collect, fraction, same_for_every_input, score_records
from autograder.checks.expected import answers, want
from autograder.grading.course import REPO
from autograder.i18n import Message
from autograder.modules.m07_kernels.device import cuda, tl, triton
from test_mistakes import graded

SEED = 20261128
CALL = re.compile(r"""check\(\s*["'](m\d\d)\.(\w+)["']\s*,\s*(\w+)""")


@pytest.fixture(autouse=True)
def _checks_score_here(monkeypatch):
    monkeypatch.setenv("COURSE_LANG", "en")
    monkeypatch.delenv("COURSE_RECORD_ANSWERS", raising=False)


def solution_names() -> dict:
    """Task id -> the name the solution notebook checks (``check("m04.audit", diagnose, ...)``)."""
    found = {}
    for path in layout.exercises("solutions", REPO):
        for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
            for module, name, obj in CALL.findall("".join(cell["source"])):
                found[f"{module}.{name}"] = obj
    return found


NAMES = solution_names()


def reference(task_id: str):
    """The reference solution of a task from ``course_answers`` (None where it lives in the notebook only)."""
    module_id, _, name = task_id.partition(".")
    source = answers(module_id)
    return getattr(source, "SOLUTIONS", {}).get(name) or getattr(source, NAMES.get(task_id, ""), None)


def replayed(fn):
    """``fn``'s answer to its first call, returned again for every later call."""
    first = []

    def again(*args, **kwargs):
        if not first:
            first.append(fn(*args, **kwargs))
        return first[0]
    return again


def returns(value):
    return lambda *args, **kwargs: value


# ---------------------------------------------------------------- exercise 07: kernels that ignore their inputs
@cuda.jit
def idle_1d(out, x, n):
    pass


@cuda.jit
def zero_1d(out, x, n):
    i = cuda.grid(1)
    if i < n:
        out[i] = 0


@cuda.jit
def idle_outer(out, a, b):
    pass


@cuda.jit
def zero_outer(out, a, b):
    c, r = cuda.grid(2)
    if r < out.shape[0] and c < out.shape[1]:
        out[r, c] = 0


@cuda.jit
def idle_axpy(out, x, y, n):
    pass


@cuda.jit
def zero_axpy(out, x, y, n):
    for i in range(cuda.grid(1), n, cuda.gridsize(1)):
        out[i] = 0


@cuda.jit
def idle_dot(out, a, b, n):
    pass


@cuda.jit
def zero_dot(out, a, b, n):
    if cuda.grid(1) == 0:
        out[0] = 0


@cuda.jit
def idle_matmul(c, a, b, m, n, k):
    pass


@cuda.jit
def zero_matmul(c, a, b, m, n, k):
    col, row = cuda.grid(2)
    if row < m and col < n:
        c[row, col] = 0


@cuda.jit
def idle_copy(dst, src):
    pass


@cuda.jit
def zero_copy(dst, src):
    i = cuda.grid(1)
    if i < dst.size:
        dst[i] = 0


@triton.jit
def idle_softmax(x_ptr, y_ptr, cols, BLOCK: tl.constexpr):
    pass


@triton.jit
def zero_softmax(x_ptr, y_ptr, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    tl.store(y_ptr + row * cols + offs, tl.zeros([BLOCK], tl.float32), mask=offs < cols)


def kernel_constants(name: str) -> dict:
    """Exercise 07's constant learners for task ``name``."""
    ref = reference(f"m07.{name}")
    if name == "guard":
        return {"idle kernel": (idle_1d, ref[1]), "zero kernel": (zero_1d, ref[1])}
    if name == "copy":  # what the copy task's answer gives is the timing's figure: a right kernel beside it scores 0
        return {"idle kernel, timing returns 100.0": (idle_copy, returns(100.0)),
                "zero kernel, timing returns None": (zero_copy, returns(None)),
                "reference kernel, timing returns 0": (ref[0], returns(0)),
                "reference kernel, timing replayed": (ref[0], replayed(ref[1]))}
    pairs = {"broadcast": (idle_outer, zero_outer), "stride": (idle_axpy, zero_axpy), "pool": (idle_1d, zero_1d),
             "dot": (idle_dot, zero_dot), "scan": (idle_1d, zero_1d), "matmul": (idle_matmul, zero_matmul),
             "softmax": (idle_softmax, zero_softmax)}[name]
    return {"idle kernel": pairs[0], "zero kernel": pairs[1]}


def constants(task_id: str) -> dict:
    """Name -> a learner that ignores its input."""
    if task_id.startswith("m07."):
        return kernel_constants(task_id.partition(".")[2])
    t = task(task_id)
    learners = {f"returns {v!r}": returns(v) for v in ((0,) if t.measurement else (None, 0, {}, []))}
    first = cases_for(t, False, SEED)[0]
    expected = want(task_id, first)
    if expected is not None:  # a task scored against the case alone has no expected answer to return
        expected = expected["answer"] if isinstance(expected, dict) and "answer" in expected else expected  # m04, m06
        learners["returns the first case's expected answer"] = returns(expected)
        if task_id in RETURNED:
            learners["returns the first case's expected result"] = returns(expected[RETURNED[task_id]])
    ref = reference(task_id)
    if ref is not None and task_id not in NOT_REPLAYED:  # m02.limits, m03.roofline: the reference is in the notebook
        learners["the reference, replayed"] = replayed(ref)
    return learners


RETURNED = {"m04.step": "loss"}  # the part of the expected answer the learner's function returns (the rest it does)
NOT_REPLAYED = {  # why a reference replayed is not a constant learner of these tasks
    "m04.step": "its answer is what the step did to the model, which a replay does on the first call only; a step "
                "that does nothing and returns a constant is 'returns ...'",
    "m05.ring": "the check runs the function anew in each case's rank processes, where a replay remembers nothing",
    "m05.measure": "the check runs the function anew per case (rank processes, a fresh fake), where a replay "
                   "remembers nothing"}
# A measurement task's run takes the referee's reference measurements (m02.measure: about 100 s on a loaded
# 2-core machine), so it gets two constants: 0 and the reference replayed. None, {} and [] are no numbers at all.


CASES = [(task_id, name) for task_id in graded() for name in constants(task_id)]


TAKEN: dict = {}  # (task, case, round's answer) -> the reference measured for it (see measured_once)


def measured_once(t):
    """``t`` whose reference measurement is taken once per case and answer, then reused: what a constant scores does
    not depend on how fresh the reference is, and each one takes seconds (m02.measure's rounds took about 100 s)."""
    if not t.measurement or t.reference is None:
        return t

    def reference(case, answer):
        key = json.dumps([t.id, case, answer], sort_keys=True, default=str)
        if key not in TAKEN:
            TAKEN[key] = t.reference(case, answer)
        return TAKEN[key]
    return replace(t, reference=reference)


@pytest.mark.parametrize("task_id,name", CASES, ids=[f"{t}:{n}" for t, n in CASES])
def test_an_answer_that_ignores_its_input_scores_nothing(task_id, name, monkeypatch):
    monkeypatch.delenv("COURSE_REFEREE", raising=False)
    t = measured_once(task(task_id))
    records = collect(t, constants(task_id)[name], cases_for(t, True, SEED), task_id)
    parts = score_records(t, records)
    assert fraction(parts) == 0.0, (
        f"{task_id} gives {name!r} {fraction(parts):.3f} of its points:\n"
        + "\n".join(f"{'✅' if p.ok else '❌'} {p.message.en}" for p in parts if p.ok)[:3000])


@pytest.mark.parametrize("task_id", [t for t in graded() if reference(t) is not None and not task(t).measurement])
def test_the_reference_answers_differ_from_case_to_case(task_id):
    """The rule can fire only when the honest answers to the same cases are not all alike."""
    t = task(task_id)
    records = collect(t, reference(task_id), cases_for(t, True, SEED), task_id)
    assert same_for_every_input(t, records) is None
    assert fraction(score_records(t, records)) == 1.0


@pytest.mark.parametrize("task_id", graded())
def test_the_cases_of_every_task_expect_different_answers(task_id):
    """Where a task has expected answers, they differ between its cases; without them (the answer is scored against
    the case alone, or measured), the cases differ (and the reference's answers, above)."""
    cases = cases_for(task(task_id), True, SEED)
    expected = {json.dumps(want(task_id, case), sort_keys=True) for case in cases}
    assert len(expected) > 1 or (expected == {"null"} and len({json.dumps(c, sort_keys=True) for c in cases}) > 1)


def test_the_verdict_names_the_constant_and_zeroes_parts_that_passed_on_any_input(monkeypatch):
    """A part right for every input (its type) and a case where the constant happens to be right: 0, one message."""
    from autograder.checks import expected
    t = Task(title=Message("제곱", "Square"), answer=lambda fn, case: fn(case), visible=lambda: [2, 3, 4],
             score=lambda case, ans, want: [Part(isinstance(ans, int), Message("정수", "an int")),
                                            Part(ans == want, Message(f"{case}²", f"{case}²"))], id="m99.square")
    monkeypatch.setattr(expected, "want", lambda tid, case: case * case)
    parts = score_records(t, collect(t, returns(9), cases_for(t, False, SEED)))
    assert fraction(parts) == 0.0
    assert "Gives the same answer for every input: 9" in parts[0].message.en and "입력" in parts[0].message.ko
    assert fraction(score_records(t, collect(t, lambda x: x * x, cases_for(t, False, SEED)))) == 1.0
    assert fraction(score_records(t, collect(t, lambda x: x * x if x < 4 else 0, cases_for(t, False, SEED)))) > 0


def test_one_answered_case_is_not_evidence():
    """With a single case (a visible check of one case), or one case that did not raise, the rule is silent."""
    t = Task(title=Message("a", "a"), answer=lambda fn, case: fn(case), score=lambda *a: Part(True, Message("", "")))
    one = [{"case": 1, "answer": 5, "error": None}]
    assert same_for_every_input(t, one) is None
    assert same_for_every_input(t, one + [{"case": 2, "answer": None, "error": "ValueError: x"}]) is None
    assert same_for_every_input(t, one + [{"case": 2, "answer": 5, "error": None}]) == "5"


def test_every_module_with_an_exercise_is_covered():
    assert {t for t, _ in CASES} == set(graded())
    assert {t.split(".")[0] for t in graded()} == {m.short for m in layout.modules(part="exercise")}

