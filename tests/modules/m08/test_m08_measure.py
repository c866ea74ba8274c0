"""Module 08's measured decode task: an honest decode loop timed with ``time_fn`` passes; each methodology mistake is
named from its evidence on the virtual GPU (exact, any load) and, where a CPU shows it, on the device case; a time
the course's clock did not see scores nothing. The device case's band is judged on recorded rounds, so no test here
depends on the machine's load."""
import time
from pathlib import Path

import pytest
import torch

from autograder import clock
from autograder.checks.core import Task, collect, fraction
from autograder.datafile import read_yaml
from autograder.harness import summary_times, time_fn
from autograder.i18n import Message
from autograder.modules.m08_serving import measure as M

DEVICE, VIRTUAL = M.visible()
CPU_CASE = {**DEVICE, "device": "cpu"}


def _decoder(model, prompt_ids, new_tokens):
    length = prompt_ids.shape[1]
    logits, cache = model.prefill(prompt_ids, capacity=length + new_tokens)
    first = logits.argmax(-1, keepdim=True)

    def decode():
        cache.rewind(length)
        token, out = first, []
        for _ in range(new_tokens):
            logits, _ = model.step(token, cache)
            token = logits.argmax(-1, keepdim=True)
            out.append(token)
        return torch.cat(out, 1)
    return decode


def _result(decode, seconds, tokens):
    return {"tokens": decode(), "seconds": seconds, "tokens_per_s": tokens / seconds}


def right(model, prompt_ids, new_tokens, device):
    decode = _decoder(model, prompt_ids, new_tokens)
    return _result(decode, time_fn(decode, device=device, budget_s=0.2).median_s, prompt_ids.shape[0] * new_tokens)


def prompt_counted(model, prompt_ids, new_tokens, device):
    decode = _decoder(model, prompt_ids, new_tokens)
    batch, length = prompt_ids.shape
    return _result(decode, time_fn(decode, device=device, budget_s=0.2).median_s, batch * (length + new_tokens))


def no_synchronize(model, prompt_ids, new_tokens, device):
    decode = _decoder(model, prompt_ids, new_tokens)  # time_fn's device left at its default, "cpu"
    return _result(decode, time_fn(decode, budget_s=0.2).median_s, prompt_ids.shape[0] * new_tokens)


def prefill_timed(model, prompt_ids, new_tokens, device):
    length = prompt_ids.shape[1]

    def decode():
        logits, cache = model.prefill(prompt_ids, capacity=length + new_tokens)
        token, out = logits.argmax(-1, keepdim=True), []
        for _ in range(new_tokens):
            logits, _ = model.step(token, cache)
            token = logits.argmax(-1, keepdim=True)
            out.append(token)
        return torch.cat(out, 1)
    return _result(decode, time_fn(decode, device=device, budget_s=0.2).median_s, prompt_ids.shape[0] * new_tokens)


def recompute_prefix(model, prompt_ids, new_tokens, device):
    first = model.forward_full(prompt_ids)[:, -1].argmax(-1, keepdim=True)
    start = torch.cat([prompt_ids, first], 1)

    def decode():
        ids = start
        for _ in range(new_tokens):
            ids = torch.cat([ids, model.forward_full(ids)[:, -1].argmax(-1, keepdim=True)], 1)
        return ids[:, start.shape[1]:]
    return _result(decode, time_fn(decode, device=device, budget_s=0.2).median_s, prompt_ids.shape[0] * new_tokens)


def reference_called(model, prompt_ids, new_tokens, device):
    from autograder.modules.m08_serving.decode import time_decode
    decode = _decoder(model, prompt_ids, new_tokens)
    seconds = time_decode(model, prompt_ids, new_tokens, device, budget_s=0.2).median_s
    return _result(decode, seconds, prompt_ids.shape[0] * new_tokens)


def by_hand(model, prompt_ids, new_tokens, device):
    decode = _decoder(model, prompt_ids, new_tokens)
    began = time.perf_counter()
    decode()
    return _result(decode, time.perf_counter() - began, prompt_ids.shape[0] * new_tokens)


TASK = Task(title=Message("디코딩", "decode"), answer=M.answer, score=M.score, visible=M.visible, measurement=True,
            reference=M.reference, rounds=2, mistakes=M.MISTAKES, id="m08.decode")


def _graded(fn, case):
    record, = collect(TASK, fn, [case], TASK.id)
    assert record["error"] is None, record["error"]
    return record["answer"], M.score(case, record["answer"])


def _named(parts):
    return [p.mistake for p in parts if not p.ok and p.mistake]


# ---------------------------------------------------------------- the virtual GPU: exact, under any load
@pytest.fixture(scope="module")
def honest_virtual():
    return _graded(right, VIRTUAL)


def test_an_honest_loop_gets_the_virtual_gpus_exact_decode_time(honest_virtual):
    answer, parts = honest_virtual
    assert fraction(parts) == 1.0, [p.message.en for p in parts if not p.ok]
    step_s, launch_s = VIRTUAL["step_ms"] / 1e3, VIRTUAL["launch_us"] / 1e6
    for r in answer["rounds"]:
        assert r["seconds"] == pytest.approx(VIRTUAL["new_tokens"] * step_s + launch_s, rel=1e-9)
    assert answer["observed"]["reference"][0]["seconds"] == pytest.approx(answer["rounds"][0]["seconds"], rel=1e-9)


@pytest.mark.parametrize("fn", [prompt_counted, no_synchronize, prefill_timed, recompute_prefix, reference_called],
                         ids=lambda fn: fn.__name__)
def test_each_mistake_is_named_on_the_virtual_gpu_and_no_other(fn):
    _, parts = _graded(fn, VIRTUAL)
    assert _named(parts) == [fn.__name__]
    assert fraction(parts) < 1.0
    mine = next(p for p in parts if p.mistake == fn.__name__)
    assert mine.message.ko != mine.message.en and mine.message.ko.strip()


SHORT = {**VIRTUAL, "batch": 3, "prompt_len": 16, "new_tokens": 4, "step_ms": 1.0, "launch_us": 800.0}


@pytest.mark.parametrize("fn", [right, no_synchronize], ids=lambda fn: fn.__name__)
def test_a_short_decode_on_a_slow_launching_device_is_judged_alike(fn):
    answer, parts = _graded(fn, SHORT)
    assert _named(parts) == ([] if fn is right else [fn.__name__]) and (fraction(parts) == 1.0) is (fn is right)
    instant = {**answer, "observed": {**answer["observed"], "walls": [1e-5] * len(answer["rounds"])}}
    assert fraction(M.score(SHORT, instant)) == 0.0  # four steps are enough to tell a round that ran none


def test_a_virtual_record_that_returned_at_once_or_lacks_what_the_check_saw_earns_nothing(honest_virtual):
    answer, _ = honest_virtual
    instant = {**answer, "observed": {**answer["observed"], "walls": [1e-5] * len(answer["rounds"])}}
    assert fraction(M.score(VIRTUAL, instant)) == 0.0
    bare = {**answer, "rounds": [{k: v for k, v in r.items() if k != "virtual"} for r in answer["rounds"]]}
    parts = M.score(VIRTUAL, bare)
    assert fraction(parts) == 0.0 and "grader watched" in parts[0].message.en


def test_a_time_the_course_clock_did_not_see_scores_nothing():
    for case in (VIRTUAL, CPU_CASE):
        _, parts = _graded(by_hand, case)
        assert fraction(parts) == 0.0
        assert "course's clock" in parts[0].message.en


def test_the_virtual_gpu_keeps_the_spans_and_sees_a_timing_that_did_not_wait():
    gpu = M.VirtualGPU(launch_s=1e-3)
    with clock.held_by(gpu):
        began = clock.begin()
        gpu.launch("step", 0.01)
        clock.end(1, "mine")  # queued work not waited for
        clock.begin()
        gpu.launch("step", 0.01)
        gpu.synchronize()
        clock.end(1, "mine")
    facts = gpu.facts()
    assert began == 0.0 and facts["unsynchronized"] == 1 and facts["timed"]["step"] == 2
    assert facts["spans"] == [[pytest.approx(1e-3), "mine"], [pytest.approx(0.020), "mine"]]


# ---------------------------------------------------------------- the device case: evidence and recorded rounds
@pytest.fixture(scope="module")
def honest():
    """One real honest grading of the CPU case (its band is load-dependent: only its other parts are asserted)."""
    return _graded(right, CPU_CASE)


def test_an_honest_loop_on_the_device_counts_generated_tokens_and_times_the_steps(honest):
    answer, parts = honest
    assert [p.ok for p in parts[:3]] == [True, True, True]
    assert parts[-1].measured  # the side-by-side part judged the rounds (its verdict depends on the load)
    assert answer["rounds"][0]["calls"]["prefill"] == 1


def _recorded(rounds, references, seconds_seen=None):
    """Rounds as a check records them: the referee's walls and references, and time_fn's spans."""
    spans = [[[s, "time_fn:0"] for s in seconds_seen or [r["seconds"]] * 5] for r in rounds]
    walls = [10 * r["seconds"] for r in rounds]
    return {"rounds": rounds, "observed": {"walls": walls, "reference": references, "spans": spans}}


def _round(seconds, tokens_per_s=None, calls=None):
    tokens = [[1, 2]] * 4
    generated = CPU_CASE["batch"] * CPU_CASE["new_tokens"]
    return {"tokens": tokens, "expected_tokens": tokens, "seconds": seconds,
            "tokens_per_s": tokens_per_s or generated / seconds,
            "calls": calls or {"prefill": 1, "step": 160, "forward_full": 0}}


REF = {"seconds": 0.1, "tokens_per_s": 640.0}


def test_recorded_rounds_within_the_band_pass_and_outside_it_fail():
    inside = _recorded([_round(0.11), _round(0.12)], [REF, REF])
    assert fraction(M.score(CPU_CASE, inside)) == 1.0
    outside = _recorded([_round(0.3), _round(0.31)], [REF, REF])  # 0.33x the reference, the reference steady
    parts = M.score(CPU_CASE, outside)
    assert not parts[-1].ok and _named(parts) == []


@pytest.mark.parametrize("name, round_", [
    ("prompt_counted", _round(0.1, tokens_per_s=4 * (32 + 16) / 0.1)),
    ("prefill_timed", _round(0.1, calls={"prefill": 12, "step": 176, "forward_full": 0})),
    ("recompute_prefix", _round(0.1, calls={"prefill": 0, "step": 0, "forward_full": 176})),
    ("recompute_prefix", _round(0.1, calls={"prefill": 176, "step": 0, "forward_full": 0})),
])
def test_recorded_mistakes_on_the_device_are_named(name, round_):
    parts = M.score(CPU_CASE, _recorded([round_, round_], [REF, REF]))
    assert _named(parts) == [name]


def test_a_recorded_time_off_the_course_clock_scores_nothing():
    answer = _recorded([_round(0.1), _round(0.1)], [REF, REF], seconds_seen=[0.13, 0.14, 0.15])
    parts = M.score(CPU_CASE, answer)
    assert fraction(parts) == 0.0 and "course's clock" in parts[0].message.en
    assert summary_times([0.13, 0.14, 0.15])  # the times a round's seconds must be one of


def test_wrong_tokens_fail_their_part():
    wrong = {**_round(0.1), "tokens": [[9, 9]] * 4}
    parts = M.score(CPU_CASE, _recorded([wrong, wrong], [REF, REF]))
    assert [p.ok for p in parts] == [True, True, False, True]


@pytest.mark.parametrize("result", [3.5, {"seconds": 0.1, "tokens_per_s": 640.0}, {"tokens": [], "seconds": -1,
                                                                                   "tokens_per_s": 1.0}])
def test_an_answer_of_the_wrong_shape_says_which_keys(result):
    parts = M.score(CPU_CASE, {"rounds": [M._plain(result)], "observed": {}})
    assert len(parts) == 1 and not parts[0].ok and "tokens_per_s" in parts[0].message.en


def test_every_message_is_in_both_languages_and_every_mistake_has_one():
    texts = read_yaml(Path(M.__file__).resolve().parent / "messages.yaml")
    measure = {key: pair for key, pair in texts.items() if key.startswith("m08.measure.")}
    assert all(pair["ko"].strip() and pair["en"].strip() and pair["ko"] != pair["en"] for pair in measure.values())
    assert {f"m08.measure.mistake_{name}" for name in M.MISTAKES} | {f"m08.mistake.{name}" for name in M.MISTAKES} \
        <= set(texts)
