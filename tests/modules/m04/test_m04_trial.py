"""Exercise 04 after a learner's trial: wrong answers that passed now fail, each known mistake is named only by its
own name, the answers a learner built from the lesson's helpers do not pass, and the verdicts say what happened
(Korean labels, the output device, the exception of a failed forward pass).

The learner's answers below are the trial's, adapted to the tasks' present signatures (the frozen parameters of
tasks 1 and 7) wherever that is not the mistake itself."""
import math
from contextlib import nullcontext

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from autograder import knowledge, layout, profiles
from autograder.checks import check, task
from autograder.checks.core import cases_for, collect, score_records
from autograder.fakes.ddp import SyncRecorder
from autograder.modules.m04_training_memory import lesson as mem
from autograder.modules.m04_training_memory import tasks as C
from autograder.modules.m04_training_memory.data import table
from course_answers import m04_training_memory as A

NAMES = {"breakdown": "memory_breakdown", "saved": "predict_saved", "split": "split_by_budget",
         "scaler_log": "read_scaler_log", "step": "train_step", "audit": "diagnose", "plan": "plan_training"}


@pytest.fixture(autouse=True)
def _english(monkeypatch):
    monkeypatch.setenv("COURSE_GRADING_SEED", "1234")
    monkeypatch.setattr("autograder.i18n._chosen", "en")


def visible_parts(name: str, learner) -> list:
    """The scored parts of the visible checks (not the verdict's note that an answer broke the task's rule)."""
    t = task(f"m04.{name}")
    return [p for p in score_records(t, collect(t, learner, cases_for(t, False, 0), f"m04.{name}")) if p.weight]


def learner(name: str, source: str):
    """A learner's function from its source, run in the namespace the exercise's setup cell gives."""
    namespace = {"math": math, "nullcontext": nullcontext, "torch": torch, "nn": nn, "F": F, "profiles": profiles,
                 "SyncRecorder": SyncRecorder, "mem": mem}
    exec(source, namespace)
    return namespace[NAMES[name]]


# ---------------------------------------------------------------- every known mistake, and only its own name
CASES = [(name, mistake) for name in NAMES for mistake in C.TASKS[name].mistakes]


@pytest.mark.parametrize("name,mistake", CASES, ids=[f"{n}.{m}" for n, m in CASES])
def test_each_known_mistake_is_named_by_its_own_name_only(name, mistake):
    """A misdiagnosis is worse than none: no failing part of a known wrong answer names another mistake."""
    failing = [p for p in visible_parts(name, A.MISTAKES[name][mistake]) if not p.ok]
    named = {p.mistake for p in failing} - {None}
    assert named == {mistake}, f"{name}.{mistake} is named {named or 'nothing'}"


# ---------------------------------------------------------------- answers one helper away (tasks 1 and 7)
T1_HELPER = '''
def memory_breakdown(n_params, n_frozen, optimizer, precision, zero_stage, n_gpus):
    from autograder.modules.m04_training_memory.data import table
    b = mem.bytes_per_param(precision, optimizer)
    sharded = table("memory")["zero_stages"][zero_stage]
    out = {k: n_params * v / (n_gpus if k in sharded else 1) for k, v in b.items()}
    out["total"] = sum(out.values())
    return out
'''
T7_HELPER = '''
def plan_training(model, profile_id, global_batch):
    P, L, h, a, s = model["params"], model["layers"], model["hidden"], model["heads"], model["seq"]
    usable = 0.9 * profiles.get(profile_id).memory_bytes
    for n in [n for n in range(1, global_batch + 1) if global_batch % n == 0]:
        for z in (0, 1, 2, 3):
            whole, shared = mem.split_bytes(P, "mixed_adam", z)
            for r in ("none", "selective", "full"):
                for b in [b for b in range(global_batch // n, 0, -1) if (global_batch // n) % b == 0]:
                    if whole + shared / n + mem.activation_estimate(L, h, a, s, b, r) <= usable:
                        return {"gpus": n, "stage": z, "recompute": r, "micro_batch": b}
    return None
'''


@pytest.mark.parametrize("name,source", [("breakdown", T1_HELPER), ("plan", T7_HELPER)])
def test_an_answer_built_from_the_lesson_helpers_does_not_pass(name, source):
    """The lesson's helpers compute every parameter as trained: the frozen parameters the tasks add are the learner's."""
    parts = visible_parts(name, learner(name, source))
    assert not all(p.ok for p in parts)
    assert {p.mistake for p in parts if not p.ok} == {"frozen_trained"}
    earned = check(f"m04.{name}", learner(name, source), points=4, hidden=True)
    assert earned is not None and earned < 4


# ---------------------------------------------------------------- wrong answers that passed the visible checks
T1_SGD_NO_MASTER = '''
BYTES = {"fp32": (4, 4, 0, 4), "mixed": (2, 2, 4, 4), "mixed_fp32_grads": (2, 4, 4, 4), "bf16": (2, 2, 0, 2)}
STATES = {"sgd": 0, "momentum": 1, "adam": 2, "adamw": 2}

def memory_breakdown(n_params, n_frozen, optimizer, precision, zero_stage, n_gpus):
    w, g, master, state = BYTES[precision]
    trained = n_params - n_frozen
    weights, grads = n_params * w, trained * g
    opt = trained * (master * (STATES[optimizer] > 0) + STATES[optimizer] * state)
    if zero_stage >= 1: opt /= n_gpus
    if zero_stage >= 2: grads /= n_gpus
    if zero_stage >= 3: weights /= n_gpus
    return {"weights": weights, "gradients": grads, "optimizer": opt, "total": weights + grads + opt}
'''
T3_STRICT = '''
def split_by_budget(layers, budget_bytes, first, second):
    used, k = 0, 0
    for layer in layers:
        need = 16 * sum(p.numel() for p in layer.parameters())
        if used + need >= budget_bytes:
            break
        used += need
        k += 1
    head, tail = layers[:k].to(first), layers[k:].to(second)

    class Split(nn.Module):
        def __init__(self):
            super().__init__()
            self.head, self.tail = head, tail

        def forward(self, x):
            return self.tail(self.head(x.to(first)).to(second))
    return Split()
'''
T4_GROWTH_GAP = '''
def read_scaler_log(init_scale, scales):
    # the growth interval as the distance between two growths; skipped steps do not reset the count
    skipped, growth, backoff, grows = [], None, None, []
    prev = init_scale
    for i, s in enumerate(scales):
        if s < prev:
            skipped.append(i); backoff = s / prev
        elif s > prev:
            growth = s / prev; grows.append(i)
        prev = s
    interval = grows[1] - grows[0] if len(grows) > 1 else grows[0] + 1
    return {"skipped": skipped, "growth_factor": growth, "backoff_factor": backoff,
            "growth_interval": interval, "next_growth": grows[-1] + interval}
'''
T5_NO_ZERO_GRAD = '''
def train_step(model, optimizer, scaler, inputs, targets, loss_fn, n_micro, max_norm, device_type, dtype):
    batch = len(inputs)
    xs, ys = torch.tensor_split(inputs, n_micro), torch.tensor_split(targets, n_micro)
    total = 0.0
    for i, (x, y) in enumerate(zip(xs, ys)):
        ctx = model.no_sync() if hasattr(model, "no_sync") and i < n_micro - 1 else nullcontext()
        with ctx:
            with torch.autocast(device_type=device_type, dtype=dtype):
                loss = loss_fn(model(x), y) * (len(x) / batch)
            scaler.scale(loss).backward()
        total += loss.item()
    scaler.unscale_(optimizer)
    torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
    scaler.step(optimizer)
    scaler.update()
    return float(total)
'''


def test_mixed_precision_sgd_without_its_master_copy_fails_a_visible_case():
    failing = [p for p in visible_parts("breakdown", learner("breakdown", T1_SGD_NO_MASTER)) if not p.ok]
    assert failing and {p.mistake for p in failing} == {"no_master"}


def test_a_layer_that_fills_the_budget_exactly_belongs_on_the_first_device():
    """'At most the budget': a strict comparison fails the visible case whose first layer costs exactly the budget
    (16 x 70 = 1120 bytes, whole numbers: no float rounding decides it)."""
    case = C.TASKS["split"].visible()[-1]
    layers, _ = C.sequence(case)
    assert 16 * sum(p.numel() for p in layers[0].parameters()) == case["budget"]
    failing = [p for p in visible_parts("split", learner("split", T3_STRICT)) if not p.ok]
    assert failing and {p.mistake for p in failing} == {"budget_exclusive"}


def test_an_interval_measured_between_growths_fails_and_is_named():
    """The third visible log has a skipped step between its first two growths (and between its last two)."""
    parts = visible_parts("scaler_log", learner("scaler_log", T4_GROWTH_GAP))
    interval = [p for p in parts if not p.ok and "growth interval" in p.label.en]
    assert interval and all(p.mistake == "reset_only_on_growth" for p in interval)


def test_a_step_that_never_clears_the_gradients_fails_every_visible_case():
    """In fp16 the check's old gradients are as large as the scaled ones, so unscale_ cannot hide them."""
    parts = visible_parts("step", learner("step", T5_NO_ZERO_GRAD))
    failing = [p for p in parts if not p.ok]
    assert len(failing) == len(C.TASKS["step"].visible())
    assert {p.mistake for p in failing} == {"stale_grads"}


def test_the_stale_gradients_of_the_check_move_every_fp16_case_far_outside_the_tolerance():
    for case in C.TASKS["step"].visible():
        want = A.EXPECT["step"](case)
        assert "stale_grads" in want["mistakes"], case
        wrong = C.TASKS["step"].answer(A.MISTAKES["step"]["stale_grads"], case)
        assert C.relative_gap(wrong["delta"], want["answer"]["delta"]) > 10 * C.STEP_TOLERANCE[case["dtype"]]


# ---------------------------------------------------------------- misdiagnoses: each wrong answer gets its own name
T2_CEIL = '''
def predict_saved(d, h, depth, act, batch, dtype, segments):
    nbytes = {"float32": 4, "bfloat16": 2}[dtype]
    per_block = batch * (d + (2 if act in ("gelu", "silu") else 1) * h) * nbytes
    seg_size = -(-depth // segments)
    last = depth - seg_size * (segments - 1)
    return {"plain": depth * per_block, "checkpointed": (segments - 1) * batch * d * nbytes + last * per_block}
'''
T3_FOUR_BYTES = T3_STRICT.replace("16 *", "4 *").replace(">= budget_bytes", "> budget_bytes")
T6_SYNCED_UNREAD = '''
def diagnose(step):
    def grads(model):
        return torch.cat([p.grad.flatten() for p in model.parameters()])

    def run(batch, n_micro, prefill=None, wrap=False):
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(3, 5), nn.Tanh(), nn.Linear(5, 2)).double()
        x, y = torch.randn(batch, 3, dtype=torch.float64), torch.randn(batch, 2, dtype=torch.float64)
        F.mse_loss(model(x), y).backward()
        want = grads(model).clone()
        for p in model.parameters():
            p.grad = None if prefill is None else torch.full_like(p, prefill)
        target = SyncRecorder(model) if wrap else model
        step(target, F.mse_loss, x, y, n_micro)
        return grads(model), want, target

    _, _, rec = run(6, 3, wrap=True)
    if rec.in_no_sync == 0:
        return "sync_every"
    got, want, _ = run(6, 1, prefill=1.0)
    if not torch.allclose(got, want):
        return "stale"
    got, want, _ = run(6, 2)
    if torch.allclose(got, 2 * want):
        return "unweighted"
    if not torch.allclose(got, want):
        return "last_only"
    got, want, _ = run(7, 2)
    return "ok" if torch.allclose(got, want) else "equal_weights"
'''
T7_SMALLEST = '''
def plan_training(model, profile_id, global_batch):
    P, T = model["params"], model["params"] - model["frozen"]
    L, h, a, s = model["layers"], model["hidden"], model["heads"], model["seq"]
    usable = 0.9 * profiles.get(profile_id).memory_bytes

    def states(z, n):
        w, g, o = 2 * P, 2 * T, 12 * T
        if z >= 1: o /= n
        if z >= 2: g /= n
        if z >= 3: w /= n
        return w + g + o

    def acts(r, b):
        layer = s * b * h * (34 + 5 * a * s / h)
        return {"none": L * layer, "selective": L * 34 * s * b * h, "full": L * 2 * s * b * h + layer}[r]

    for n in [n for n in range(1, global_batch + 1) if global_batch % n == 0]:
        per_gpu = global_batch // n
        for z in (0, 1, 2, 3):
            for r in ("none", "selective", "full"):
                for b in [b for b in range(1, per_gpu + 1) if per_gpu % b == 0]:
                    if states(z, n) + acts(r, b) <= usable:
                        return {"gpus": n, "stage": z, "recompute": r, "micro_batch": b}
    return None
'''


@pytest.mark.parametrize("name,source,mistake", [("saved", T2_CEIL, "ceil_segments"),
                                                 ("split", T3_FOUR_BYTES, "weights_only"),
                                                 ("audit", T6_SYNCED_UNREAD, "synced_not_read"),
                                                 ("plan", T7_SMALLEST, "smallest_micro_batch")])
def test_a_misdiagnosed_answer_of_the_trial_gets_its_own_name(name, source, mistake):
    failing = [p for p in visible_parts(name, learner(name, source)) if not p.ok]
    assert failing and {p.mistake for p in failing} - {None} == {mistake}


def test_the_gpu_count_of_a_visible_plan_is_not_a_power_of_two_twice():
    plans = [A.plan_training(c["model"], c["profile"], c["global_batch"]) for c in C.TASKS["plan"].visible()]
    assert sum(p is not None and p["gpus"] & (p["gpus"] - 1) != 0 for p in plans) >= 2


# ---------------------------------------------------------------- what the verdicts say
def test_failed_log_items_are_labelled_in_korean_not_by_raw_keys():
    answer = C.TASKS["scaler_log"].answer(A.MISTAKES["scaler_log"]["interval_off_by_one"],
                                          C.TASKS["scaler_log"].visible()[0])
    case = C.TASKS["scaler_log"].visible()[0]
    parts = C.TASKS["scaler_log"].score(case, answer, A.EXPECT["scaler_log"](case))
    details = [p.message.ko.splitlines()[-1] for p in parts if not p.ok]  # the line under the mistake's name
    assert details and all(("증가 간격:" in line or "다음 증가 스텝:" in line) and "·" not in line for line in details)


def _split_parts(mistake: str, case_index: int = 0) -> list:
    case = C.TASKS["split"].visible()[case_index]
    answer = C.TASKS["split"].answer(A.MISTAKES["split"][mistake], case)
    return C.TASKS["split"].score(case, answer, A.EXPECT["split"](case))


def test_a_failed_forward_pass_shows_its_exception():
    placement, output, *_ = _split_parts("activations_not_moved")
    assert placement.ok and not output.ok
    assert "failed: RuntimeError" in output.message.en and "should be on" not in output.message.en


def test_a_wrong_placement_with_the_output_on_the_right_device_fails_the_placement_only():
    placement, output, *_ = _split_parts("weights_only")
    assert not placement.ok and output.ok
    assert "output" not in placement.message.en.split("Known mistake")[-1].split(".", 1)[1]


def test_the_placement_messages_use_the_korean_for_placement_not_batch():
    text = "\n".join(m.ko for m in (C._say("split_placement_label"), C._say("split_devices", case="c", expected=1, found=2)))
    assert "배치" not in text and "장치 할당" in text


def test_one_thousand_million_parameters_read_as_people_write_them():
    label = C._say("case_breakdown", params=C._count(1e9), frozen=C._count(0.0), optimizer="adam", precision="fp32",
                   stage=0, gpus=1)
    assert label.en == "1B parameters (0 frozen), adam, fp32, ZeRO stage 0, n_gpus = 1"
    assert "GPUs" not in label.en and "e+09" not in label.en


def test_the_frozen_rule_is_data():
    assert knowledge.table()["frozen_keeps"] == ["weights"]


@pytest.mark.parametrize("name,mistake", [("step", "equal_weights"), ("step", "unweighted"), ("split", "graph_cut")])
def test_every_failing_item_of_these_wrong_answers_names_the_mistake(name, mistake):
    """The trial's equal-weights step was named on its batch-5 item only: now every failing item says why (the loss
    items too), and a graph cut that leaves the output without gradients is named instead of raising."""
    failing = [p for p in visible_parts(name, A.MISTAKES[name][mistake]) if not p.ok]
    assert failing and all(p.mistake == mistake for p in failing)


def test_the_lesson_does_not_hand_over_the_step_of_task_5():
    """The lesson shows a one-batch mixed-precision step and an accumulation loop with summed losses; it no longer
    says that task 5 is these parts put together, nor writes the task's weighting (mean loss x share) as code."""
    from pathlib import Path

    import nbformat

    root = Path(__file__).resolve().parents[3]
    for lang in ("ko", "en"):
        nb = nbformat.read(layout.lesson("04_training_memory", lang, root), as_version=4)
        text = "\n".join(c.source for c in nb.cells)
        assert "과제 5" not in text and "task 5" not in text.lower()
        assert "* len(x) / batch_size" not in text and 'reduction="sum") / batch_size' in text


def test_the_korean_the_trial_found_awkward_is_gone():
    """Exercise text and messages: '반올림 오차' (not '몫'), '기댓값', the ZeRO sentence and task 3's intro rewritten."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[3]
    text = layout.exercise("04_training_memory", "solutions", root).read_text(encoding="utf-8") + (
        root / "autograder/modules/m04_training_memory/messages.yaml").read_text(encoding="utf-8")
    for awkward in ("반올림 몫", "기대값", "장에 나누어(÷", "보여야 하는 과제 3"):
        assert awkward not in text, awkward
    assert "반올림 오차" in text and "ZeRO stage에 따라 다음을 `n_gpus`장에 나눕니다" in text


def test_the_segment_rule_of_checkpoint_sequential_is_stated_in_the_task_and_the_lesson():
    """The trial found the rule only by experiment: task 2 and lesson section 6 now state it, in both languages."""
    from pathlib import Path

    import nbformat

    root = Path(__file__).resolve().parents[3]
    task2 = next(c.source for c in nbformat.read(layout.exercise("04_training_memory", "solutions", root),
                                                 as_version=4).cells if c.get("id") == "saved-md")
    korean, english = task2.split("\n---\n")
    assert "마지막을 뺀 구간은 `depth // segments` 블록씩" in korean
    assert "every segment but the last has `depth // segments` blocks" in english
    for lang in ("ko", "en"):
        lesson = "\n".join(c.source for c in nbformat.read(layout.lesson("04_training_memory", lang, root),
                                                             as_version=4).cells)
        assert "`len(layers) // segments`" in lesson
