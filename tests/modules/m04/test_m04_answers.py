"""Module 04 reference answers, checked against independent facts: the ZeRO paper's
figures, byte counts of real torch tensors, torch.amp.GradScaler and full-batch gradients."""
import json
import math
import random

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from course_answers import m04_training_memory as A
from autograder.modules.m04_training_memory.tasks import Checkpointed, blocks

GB = 1e9


def test_mixed_precision_adam_is_16_bytes_per_parameter():
    # ZeRO paper, Section 3.1: 2 (fp16 params) + 2 (fp16 grads) + K=12 (fp32 copy, m, v)
    b = A.memory_breakdown(1, "adam", "mixed", 0, 1)
    assert (b["weights"], b["gradients"], b["optimizer"], b["total"]) == (2, 2, 12, 16)


def test_fp32_adam_is_also_16_bytes_and_sgd_8():
    assert A.memory_breakdown(1, "adamw", "fp32", 0, 1)["total"] == 16
    assert A.memory_breakdown(1, "sgd", "fp32", 0, 1)["total"] == 8
    assert A.memory_breakdown(1, "sgd", "mixed", 0, 1)["optimizer"] == 4  # the fp32 master copy stays


@pytest.mark.parametrize("stage,gb", list(enumerate([120, 31.4, 16.6, 1.88])))
def test_zero_paper_figure_1(stage, gb):
    # 7.5B parameters, Nd = 64: 120 GB, 31.4 GB, 16.6 GB, 1.88 GB of model states per GPU
    total = A.memory_breakdown(7.5e9, "adam", "mixed", stage, 64)["total"] / GB
    assert total == pytest.approx(gb, rel=0.01)


def test_breakdown_matches_real_adam_tensors():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(17, 33), nn.ReLU(), nn.Linear(33, 5))
    opt = torch.optim.AdamW(model.parameters())
    model(torch.randn(4, 17)).sum().backward()
    opt.step()
    n = sum(p.numel() for p in model.parameters())
    real = {
        "weights": sum(p.numel() * p.element_size() for p in model.parameters()),
        "gradients": sum(p.grad.numel() * p.grad.element_size() for p in model.parameters()),
        "optimizer": sum(t.numel() * t.element_size() for s in opt.state.values() for t in s.values() if t.dim()),
    }
    want = A.memory_breakdown(n, "adamw", "fp32", 0, 1)
    assert all(want[k] == real[k] for k in real)


def test_breakdown_matches_momentum_buffers():
    model = nn.Linear(10, 3)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    model(torch.randn(2, 10)).sum().backward()
    opt.step()
    states = sum(t.numel() * t.element_size() for s in opt.state.values() for t in s.values() if t is not None)
    assert A.memory_breakdown(10 * 3 + 3, "momentum", "fp32", 0, 1)["optimizer"] == states


def test_zero_stages_shard_in_order():
    b = [A.memory_breakdown(1e9, "adam", "mixed", s, 8) for s in range(4)]
    assert b[1]["optimizer"] == b[0]["optimizer"] / 8 and b[1]["gradients"] == b[0]["gradients"]
    assert b[2]["gradients"] == b[0]["gradients"] / 8 and b[2]["weights"] == b[0]["weights"]
    assert b[3]["weights"] == b[0]["weights"] / 8
    assert b[3]["total"] == pytest.approx(b[0]["total"] / 8)


@pytest.mark.parametrize("bad", [dict(optimizer="lion"), dict(precision="fp8"), dict(zero_stage=4), dict(n_gpus=0)])
def test_breakdown_rejects_bad_input_in_both_languages(bad):
    args = dict(n_params=1e6, optimizer="adam", precision="mixed", zero_stage=0, n_gpus=1) | bad
    with pytest.raises(ValueError) as info:
        A.memory_breakdown(**args)
    assert "/" in str(info.value)


def test_gpus_needed_uses_profile_memory():
    assert A.gpus_needed(7_000_000_000, "h100_sxm") == {"train": 2, "infer": 1}       # 112 GB / 77.3 GB usable (0.9 x 80 GiB)
    assert A.gpus_needed(70_000_000_000, "a100_sxm_80gb") == {"train": 15, "infer": 2}  # 1120 / 77.3, 140 / 77.3
    assert A.gpus_needed(405_000_000_000, "h200_sxm") == {"train": math.ceil(405e9 * 16 / (0.9 * 141 * 2**30)),
                                                          "infer": math.ceil(405e9 * 2 / (0.9 * 141 * 2**30))}


def test_gpus_for_is_exact_at_the_boundary():
    assert A.gpus_for(4_831_838_208, 80, 16, 0.9) == 1       # exactly 72 GiB
    assert A.gpus_for(4_831_838_209, 80, 16, 0.9) == 2
    assert A.gpus_for(0, 80, 16, 0.9) == 1


def test_saved_bytes_counts_each_storage_once_and_skips_parameters():
    b, d, h = 5, 7, 11
    model = nn.Sequential(nn.Linear(d, h), nn.ReLU(), nn.Linear(h, d))
    # Linear 1 saves its input x; ReLU saves its output, which Linear 2 also saves (one storage);
    # Linear 2's weight is a parameter (skipped).
    assert A.saved_bytes(model, torch.zeros(b, d)) == 4 * (b * d + b * h)
    assert A.saved_bytes(model.to(torch.bfloat16), torch.zeros(b, d, dtype=torch.bfloat16)) == 2 * (b * d + b * h)


@pytest.mark.parametrize("seed", range(6))
def test_checkpointing_saves_fewer_bytes(seed):
    rng = random.Random(seed)
    case = {"dims": [rng.choice([8, 24]), rng.choice([32, 96])], "depth": rng.randrange(3, 7),
            "act": rng.choice(["relu", "gelu", "tanh"]), "batch": rng.randrange(2, 20),
            "dtype": rng.choice(["float32", "bfloat16"]), "segments": rng.randrange(2, 4)}
    model, x = blocks(case)
    assert A.saved_bytes(Checkpointed(model, case["segments"]), x) < A.saved_bytes(model, x)


def _problem(batch=10):
    torch.manual_seed(1)
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 3))
    return model, torch.randn(batch, 4), torch.randn(batch, 3)


def _grads(model):
    return torch.cat([p.grad.flatten() for p in model.parameters()])


@pytest.mark.parametrize("n_micro", [1, 2, 3, 4, 10])
def test_accumulation_equals_full_batch_even_for_uneven_splits(n_micro):
    model, x, y = _problem()
    F.mse_loss(model(x), y).backward()
    full = _grads(model)
    loss = A.accumulation_step(model, F.mse_loss, x, y, n_micro)
    assert torch.allclose(_grads(model), full, atol=1e-6)
    assert loss == pytest.approx(F.mse_loss(model(x), y).item(), rel=1e-5)


def test_dividing_by_the_number_of_steps_is_wrong_for_uneven_splits():
    model, x, y = _problem(batch=10)
    F.mse_loss(model(x), y).backward()
    full = _grads(model)
    model.zero_grad()
    for xs, ys in zip(torch.tensor_split(x, 3), torch.tensor_split(y, 3)):  # 4, 3, 3 samples
        (F.mse_loss(model(xs), ys) / 3).backward()
    assert not torch.allclose(_grads(model), full, atol=1e-6)


def test_accumulation_skips_sync_until_the_last_micro_batch():
    from autograder.fakes.ddp import SyncRecorder

    model, x, y = _problem()
    wrapped = SyncRecorder(model)
    A.accumulation_step(wrapped, F.mse_loss, x, y, 4)
    assert (wrapped.in_no_sync, wrapped.synced) == (3, 1)


@pytest.mark.parametrize("seed", range(5))
def test_loss_scaler_behaves_like_torch_grad_scaler(seed):
    rng = random.Random(seed)
    args = dict(init_scale=float(2 ** rng.randrange(3, 12)), growth_factor=rng.choice([2.0, 4.0]),
                backoff_factor=rng.choice([0.5, 0.25]), growth_interval=rng.randrange(1, 4))
    ours = A.DynamicLossScaler(**args)
    p = nn.Parameter(torch.ones(3))
    opt = torch.optim.SGD([p], lr=0.1)
    theirs = torch.amp.GradScaler("cpu", **args)
    for _ in range(25):
        bad = rng.random() < 0.3
        opt.zero_grad()
        before = p.detach().clone()
        theirs.scale((p * 2).sum()).backward()
        if bad:
            p.grad[rng.randrange(3)] = float(rng.choice(["inf", "nan"]))
        scaled = p.grad.tolist()
        theirs.step(opt)
        theirs.update()
        result = ours.step(scaled)
        assert (result is None) == bool(torch.equal(p.detach(), before))
        assert ours.get_scale() == theirs.get_scale()
        if result is not None:
            assert result == pytest.approx([2.0, 2.0, 2.0])


def test_loss_scaler_defaults_match_torch():
    s = A.DynamicLossScaler()
    assert (s.get_scale(), s.growth_factor, s.backoff_factor, s.growth_interval) == (65536.0, 2.0, 0.5, 2000)
    assert s.scale(1.5) == 1.5 * 65536


def test_loss_scaler_never_grows_to_infinity():
    s = A.DynamicLossScaler(init_scale=1e308, growth_factor=10.0, growth_interval=1)
    s.step([1.0])
    assert s.get_scale() == 1e308


def test_amp_step_runs_linear_layers_in_bf16_on_cpu():
    model, x, y = _problem(batch=8)
    seen = []
    model[0].register_forward_hook(lambda m, i, out: seen.append(out.dtype))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    scaler = torch.amp.GradScaler("cpu", enabled=False)
    before = model[0].weight.detach().clone()
    loss = A.amp_step(model, opt, scaler, x, y, F.mse_loss, "cpu", torch.bfloat16)
    assert seen == [torch.bfloat16] and isinstance(loss, float)
    assert model[0].weight.dtype == torch.float32 and not torch.equal(model[0].weight, before)


@pytest.mark.parametrize("split", [0, 1, 2, 3])
def test_split_model_equals_unsplit(split):
    model, x, _ = _problem()
    want = model(x)
    got = A.split_model(model, split, "cpu", "cpu")(x)
    assert torch.equal(got, want)


def test_deepspeed_examples_parse_and_keep_the_batch_rule():
    from autograder.modules.m04_training_memory.data import table

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
