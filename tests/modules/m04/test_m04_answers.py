"""Module 04 reference answers, checked against independent facts: the ZeRO paper's figures and Megatron-LM's
bytes per parameter, byte counts of real torch tensors, saved-tensor hooks, torch.amp.GradScaler's own logs,
full-batch gradients and a brute-force search of training plans."""
import itertools
import json
import random
import warnings

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from autograder import profiles
from autograder.fakes.ddp import SyncRecorder
from autograder.modules.m04_training_memory import lesson as M
from autograder.modules.m04_training_memory import tasks as C
from autograder.modules.m04_training_memory.data import FOLDER, table
from course_answers import m04_training_memory as A

GB = 1e9


# ---------------------------------------------------------------- task 1
def test_mixed_precision_adam_is_16_bytes_per_parameter():
    # ZeRO paper, Section 3.1: 2 (fp16 params) + 2 (fp16 grads) + K=12 (fp32 copy, m, v)
    b = A.memory_breakdown(1, 0, "adam", "mixed", 0, 1)
    assert (b["weights"], b["gradients"], b["optimizer"], b["total"]) == (2, 2, 12, 16)


def test_megatron_keeps_fp32_gradients_18_bytes_per_parameter():
    # Megatron Core, "Distributed Optimizer": float16 param, fp32 grads -> 18 bytes (non-distributed)
    assert A.memory_breakdown(1, 0, "adam", "mixed_fp32_grads", 0, 1)["total"] == 18
    assert A.memory_breakdown(1, 0, "adamw", "fp32", 0, 1)["total"] == 16
    assert A.memory_breakdown(1, 0, "sgd", "fp32", 0, 1)["total"] == 8
    assert A.memory_breakdown(1, 0, "sgd", "mixed", 0, 1)["optimizer"] == 4  # the fp32 master copy stays


@pytest.mark.parametrize("stage,gb", list(enumerate([120, 31.4, 16.6, 1.88])))
def test_zero_paper_figure_1(stage, gb):
    # 7.5B parameters, Nd = 64: 120 GB, 31.4 GB, 16.6 GB, 1.88 GB of model states per GPU
    total = A.memory_breakdown(7.5e9, 0, "adam", "mixed", stage, 64)["total"] / GB
    assert total == pytest.approx(gb, rel=0.01)


def test_breakdown_matches_real_adam_tensors():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(17, 33), nn.ReLU(), nn.Linear(33, 5))
    opt = torch.optim.AdamW(model.parameters())
    model(torch.randn(4, 17)).sum().backward()
    opt.step()
    n = sum(p.numel() for p in model.parameters())
    real = M.state_bytes(model, opt)
    want = A.memory_breakdown(n, 0, "adamw", "fp32", 0, 1)
    assert all(want[k] == real[k] for k in real)


def test_breakdown_matches_momentum_buffers():
    model = nn.Linear(10, 3)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    model(torch.randn(2, 10)).sum().backward()
    opt.step()
    states = sum(t.numel() * t.element_size() for s in opt.state.values() for t in s.values() if t is not None)
    assert A.memory_breakdown(10 * 3 + 3, 0, "momentum", "fp32", 0, 1)["optimizer"] == states


def test_zero_stages_shard_in_order():
    b = [A.memory_breakdown(1e9, 0, "adam", "mixed", s, 8) for s in range(4)]
    assert b[1]["optimizer"] == b[0]["optimizer"] / 8 and b[1]["gradients"] == b[0]["gradients"]
    assert b[2]["gradients"] == b[0]["gradients"] / 8 and b[2]["weights"] == b[0]["weights"]
    assert b[3]["weights"] == b[0]["weights"] / 8
    assert b[3]["total"] == pytest.approx(b[0]["total"] / 8)


def test_frozen_parameters_keep_their_weights_only():
    # 1B parameters, 900M frozen, mixed-precision Adam: 1e9 x 2 (every weight) + 1e8 x (2 + 12) (the trained ones)
    b = A.memory_breakdown(1e9, 9e8, "adam", "mixed", 0, 1)
    assert (b["weights"], b["gradients"], b["optimizer"]) == (2e9, 2e8, 1.2e9)
    assert A.memory_breakdown(1e9, 1e9, "adam", "mixed", 2, 8)["total"] == 2e9  # stages 1 and 2 shard nothing frozen
    assert A.memory_breakdown(1e9, 1e9, "adam", "mixed", 3, 8)["total"] == 2e9 / 8  # stage 3 shards frozen weights


def test_frozen_parameters_match_real_adam_tensors():
    """A model with a frozen layer: its weights are there, its gradients and optimizer states are not."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(17, 33), nn.ReLU(), nn.Linear(33, 5))
    model[0].requires_grad_(False)
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad])
    model(torch.randn(4, 17)).sum().backward()
    opt.step()
    n = sum(p.numel() for p in model.parameters())
    frozen = sum(p.numel() for p in model[0].parameters())
    real = M.state_bytes(model, opt)
    want = A.memory_breakdown(n, frozen, "adamw", "fp32", 0, 1)
    assert all(want[k] == real[k] for k in real)


@pytest.mark.parametrize("bad", [dict(optimizer="lion"), dict(precision="fp8"), dict(zero_stage=4), dict(n_gpus=0),
                                 dict(n_frozen=2e6)])
def test_breakdown_rejects_bad_input_in_both_languages(bad):
    args = dict(n_params=1e6, n_frozen=0, optimizer="adam", precision="mixed", zero_stage=0, n_gpus=1) | bad
    with pytest.raises(ValueError) as info:
        A.memory_breakdown(**args)
    assert "/" in str(info.value)


# ---------------------------------------------------------------- task 2
def test_saved_bytes_of_one_block_by_hand():
    b, d, h = 5, 7, 11
    # Linear 1 saves its input x; ReLU saves its output, which Linear 2 also saves (one storage);
    # the weights are parameters (left out).
    case = {"dims": [d, h], "depth": 1, "act": "relu", "batch": b, "dtype": "float32", "segments": 1}
    model, x = C.blocks(case)
    assert M.activation_bytes(model, x) == 4 * (b * d + b * h) == A.predict_saved(d, h, 1, "relu", b, "float32", 2)["plain"]


@pytest.mark.parametrize("seed", range(12))
def test_the_rule_predicts_what_the_hooks_measure(seed):
    rng = random.Random(seed)
    depth = rng.randrange(2, 8)
    case = {"dims": [rng.choice([3, 8, 24]), rng.choice([5, 32, 96])], "depth": depth, "act": A.ACTS[seed % 5],
            "batch": rng.randrange(1, 20), "dtype": ("float32", "bfloat16")[seed % 2], "segments": rng.randrange(2, depth + 1)}
    d, h = case["dims"]
    predicted = A.predict_saved(d, h, depth, case["act"], case["batch"], case["dtype"], case["segments"])
    assert predicted == A.measured_saved(case)
    assert predicted["checkpointed"] < predicted["plain"]


def test_visible_saved_cases_are_measured_not_predicted():
    for case in C.TASKS["saved"].visible():
        assert A.measurable(case) and A.EXPECT["saved"](case)["answer"] == A.measured_saved(case)


# ---------------------------------------------------------------- task 3
@pytest.mark.parametrize("budget", [0, 500, 2304, 4000, 6656, 10**6])  # 2304 and 6656: exactly full
def test_split_by_budget_keeps_the_longest_prefix_that_fits(budget):
    case = {"seed": 0, "widths": [8, 16, 16, 4], "budget": budget, "batch": 5}
    layers, x = C.sequence(case)
    costs = [16 * sum(p.numel() for p in layer.parameters()) for layer in layers]
    k = max(i for i in range(len(costs) + 1) if sum(costs[:i]) <= budget)
    record = C.placement(layers, x, A.split_by_budget, case)
    per_param = [i for i, layer in enumerate(layers) for _ in layer.parameters()]
    assert record == {"devices": ["cpu" if i < k else "meta" for i in per_param], "out": "meta", "error": None}
    split = A.split_by_budget(layers, budget, "cpu", "cpu")
    assert torch.equal(split(x), layers(x))


# ---------------------------------------------------------------- task 4
def _torch_log(args: dict, steps: int, bad: set) -> list:
    """What torch.amp.GradScaler reports after each step when the steps in ``bad`` overflow."""
    p = nn.Parameter(torch.ones(2))
    opt = torch.optim.SGD([p], lr=1e-3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        scaler = torch.amp.GradScaler("cpu", **args)
    scales = []
    for step in range(steps):
        opt.zero_grad()
        scaler.scale(p.sum()).backward()
        if step in bad:
            p.grad[0] = float("inf")
        scaler.step(opt)
        scaler.update()
        scales.append(scaler.get_scale())
    return scales


@pytest.mark.parametrize("interval,growth,backoff,bad", [(3, 2.0, 0.5, {1, 9}), (2, 4.0, 0.25, {4, 5, 11}),
                                                         (5, 1.5, 0.125, {0, 12})])
def test_read_scaler_log_recovers_torch_grad_scaler_settings(interval, growth, backoff, bad):
    args = {"init_scale": 1024.0, "growth_factor": growth, "backoff_factor": backoff, "growth_interval": interval}
    scales = _torch_log(args, 18, bad)
    read = A.read_scaler_log(1024.0, scales)
    assert read["skipped"] == sorted(bad)
    assert (read["growth_factor"], read["backoff_factor"], read["growth_interval"]) == (growth, backoff, interval)
    longer = _torch_log(args, 18 + 3 * interval, bad)  # no overflow after step 17: the next growth comes as said
    assert next(i for i in range(18, len(longer)) if longer[i] > longer[i - 1]) == read["next_growth"]


def test_visible_logs_are_what_grad_scaler_recorded():
    for log, seed in zip(table("scaler_logs")["logs"], (0, 2)):
        assert A.scaler_trace(random.Random(seed), steps=28) == log
    assert "seed 0, 28 steps" in (FOLDER / "scaler_logs.yaml").read_text()


# ---------------------------------------------------------------- task 5
def _step_case(dtype="float16", max_norm=0.5, batch=7, n_micro=3):
    return {"seed": 11, "sizes": [5, 9, 3], "batch": batch, "n_micro": n_micro, "loss": "ce", "dtype": dtype,
            "max_norm": max_norm}


def test_train_step_clips_the_true_gradient_norm():
    case = _step_case()
    answer = C.TASKS["step"].answer(A.train_step, case)
    applied = torch.tensor(answer["delta"]) / -C.STEP_LR
    assert float(applied.norm()) == pytest.approx(case["max_norm"], rel=1e-3)  # clipped to max_norm, unscaled


def test_train_step_equals_one_full_batch_step_when_nothing_clips():
    case = _step_case(dtype="bfloat16", max_norm=1e6)
    model, x, y, loss_fn = C.mlp(case)
    loss_fn(model(x), y).backward()
    full = torch.cat([p.grad.flatten() for p in model.parameters()])
    answer = C.TASKS["step"].answer(A.train_step, case)
    assert C.relative_gap(answer["delta"], (-C.STEP_LR * full).tolist()) < C.STEP_TOLERANCE["bfloat16"] / 2
    assert answer["in_no_sync"] == 2 and answer["synced"] == 1
    assert answer["calls"] == {"scale": 3, "unscale_": 1, "step": 1, "update": 1}


# ---------------------------------------------------------------- task 6
@pytest.mark.parametrize("wrong,blind_to", [("no_sync_probe", {"sync_every", "never_sync"}), ("no_stale_probe", {"stale"}),
                                            ("even_splits_only", {"equal_weights"})])
def test_each_wrong_diagnosis_misses_exactly_its_bugs(wrong, blind_to):
    diagnose = A.MISTAKES["audit"][wrong]
    missed = {bug for bug in C.BUGS for style in range(8) if diagnose(C.planted_step(bug, style)) != bug}
    assert missed == blind_to


def test_the_diagnosis_reads_the_no_sync_counts_of_the_fake_ddp():
    wrapped = SyncRecorder(nn.Linear(3, 2))
    C.planted_step("ok", 0)(wrapped, F.mse_loss, torch.randn(6, 3), torch.randn(6, 2), 3)
    assert (wrapped.in_no_sync, wrapped.synced) == (2, 1)


# ---------------------------------------------------------------- task 7
def test_activation_estimate_is_korthikanti_equation_1():
    ex = table("memory")["example_model"]  # GPT-3 175B: 5as/h = 80 (Korthikanti et al., Section 4.1)
    s, h, a = ex["seq"], ex["hidden"], ex["heads"]
    assert 5 * a * s / h == 80
    assert M.activation_estimate(1, h, a, s, 1, "none") == s * h * (34 + 80)
    assert M.activation_estimate(1, h, a, s, 1, "selective") == 34 * s * h
    assert M.activation_estimate(ex["layers"], h, a, s, 1, "full") == ex["layers"] * 2 * s * h + s * h * (34 + 80)


def _brute_force(model, profile_id, global_batch):
    """Every (gpus, stage, recompute, micro-batch) that fits, by plain float arithmetic, in the task's order."""
    usable = 0.9 * profiles.get(profile_id).memory_gib * 2**30
    L, h, a, s = model["layers"], model["hidden"], model["heads"], model["seq"]
    fits = []
    for n, stage, mode in itertools.product(range(1, global_batch + 1), range(4), ("none", "selective", "full")):
        if global_batch % n:
            continue
        trained = model["params"] - model["frozen"]
        states = sum(v / (n if k in {1: ["o"], 2: ["o", "g"], 3: ["o", "g", "w"]}.get(stage, []) else 1)
                     for k, v in {"w": 2 * model["params"], "g": 2 * trained, "o": 12 * trained}.items())
        for b in range(1, global_batch // n + 1):
            layer = s * b * h * (34 + 5 * a * s / h)
            act = {"none": L * layer, "selective": L * 34 * s * b * h, "full": L * 2 * s * b * h + layer}[mode]
            if (global_batch // n) % b == 0 and states + act <= usable:
                fits.append((n, stage, ("none", "selective", "full").index(mode), -b))
    return fits


@pytest.mark.parametrize("case", C.TASKS["plan"].visible() + A.HIDDEN["plan"](random.Random(5)))
def test_plan_is_the_first_of_all_fitting_plans_in_the_stated_order(case):
    fits = _brute_force(case["model"], case["profile"], case["global_batch"])
    plan = A.plan_training(case["model"], case["profile"], case["global_batch"])
    if not fits:
        assert plan is None
    else:
        n, stage, mode, b = min(fits)
        assert plan == {"gpus": n, "stage": stage, "recompute": ("none", "selective", "full")[mode], "micro_batch": -b}


def test_the_binary_capacity_changes_a_visible_plan():
    case = C.TASKS["plan"].visible()[2]
    right = A.plan_training(case["model"], case["profile"], case["global_batch"])
    wrong = A.MISTAKES["plan"]["gb_for_gib"](case["model"], case["profile"], case["global_batch"])
    assert right["gpus"] < wrong["gpus"]


# ---------------------------------------------------------------- data files
def test_deepspeed_examples_parse_and_keep_the_batch_rule():
    ds = table("deepspeed")
    for name, text in ds["configs"].items():
        cfg = json.loads(text)
        micro, accum = cfg["train_micro_batch_size_per_gpu"], cfg["gradient_accumulation_steps"]
        assert cfg.get("train_batch_size", micro * accum * ds["gpus"]) == micro * accum * ds["gpus"], name
        zero = cfg["zero_optimization"]
        assert "offload_param" not in zero or zero["stage"] == 3, name  # offload_param: stage 3 only
        assert not ("fp16" in cfg and "bf16" in cfg), name
    with pytest.raises(json.JSONDecodeError):
        json.loads(ds["with_comments"])


def test_every_figure_in_the_memory_table_has_a_source():
    text = (FOLDER / "memory.yaml").read_text(encoding="utf-8")
    for cited in ("arXiv:1910.02054", "arXiv:2205.05198", "arXiv:2005.14165"):
        assert cited in text
