"""Module 08's decode model: the cache gives the tokens the whole sequence gives, the roofline prediction switches
roofs where the two meet, the measurement times prefill apart and counts generated tokens only, and the CUDA and MPS
paths (bf16 support, synchronize) run with fakes on a CPU."""
import math

import numpy as np
import pytest
import torch

from autograder import llm
from autograder.fakes.devices import fake_torch
from autograder.harness import Timing
from autograder.modules.m08_serving import decode as D
from autograder.profiles import Profile, get

SMALL = D.Shape(layers=2, d_model=64, heads=4, kv_heads=2, ffn=128, vocab=512)


@pytest.fixture(scope="module")
def model():
    return D.build(SMALL, seed=1)


def test_the_cache_gives_the_tokens_that_recomputing_the_prefix_gives(model):
    ids = D.prompt(model, 3, 12, seed=2)
    with_cache = D.generate(model, ids, 20)
    assert with_cache.shape == (3, 20)
    assert torch.equal(with_cache, D.generate(model, ids, 20, cache=False))
    assert len(set(with_cache.flatten().tolist())) > 10  # the tokens depend on the context: a real test of the cache


def test_prefill_and_steps_give_the_logits_of_the_whole_sequence(model):
    ids = D.prompt(model, 2, 9, seed=3)
    logits, cache = model.prefill(ids[:, :6])  # room for 6 tokens: each step makes it grow
    steps = [logits]
    for i in range(6, 9):
        logits, cache = model.step(ids[:, i:i + 1], cache)
        steps.append(logits)
    full = model.forward_full(ids)
    assert cache.length == 9
    torch.testing.assert_close(torch.stack(steps, 1), full[:, 5:], rtol=1e-4, atol=1e-4)


def test_the_cache_holds_the_bytes_the_course_counts_for_gqa(model):
    _, cache = model.prefill(D.prompt(model, 2, 10))
    assert cache.nbytes() == llm.kv_cache_bytes(SMALL.model(4), 2, 10)
    mha = D.Shape(layers=2, d_model=64, heads=4, kv_heads=4, ffn=128, vocab=512)
    assert llm.kv_cache_bytes(mha.model(4), 2, 10) == 2 * cache.nbytes()  # 4 K/V heads instead of 2


def test_the_shape_counts_the_weights_a_step_reads(model):
    stored = sum(p.numel() for p in model.parameters())
    assert SMALL.params == stored - SMALL.embedding_params
    assert SMALL.weight_bytes(2) == 2 * SMALL.params
    assert SMALL.flops_per_token() == 2 * SMALL.params
    assert D.LAPTOP.params > 4e6


def test_a_shape_that_does_not_divide_says_so():
    with pytest.raises(ValueError, match="kv_heads"):
        D.Shape(layers=1, d_model=64, heads=4, kv_heads=3, ffn=128, vocab=16)


def test_token_ids_that_are_not_an_integer_matrix_say_what_to_pass(model):
    with pytest.raises(ValueError, match=r"\[batch, length\]"):
        D.generate(model, torch.zeros(2, 4), 3)


def test_the_same_seed_builds_the_same_model_and_bf16_where_asked():
    a, b = D.build(SMALL, seed=5), D.build(SMALL, seed=5)
    assert all(torch.equal(x, y) for x, y in zip(a.parameters(), b.parameters()))
    assert not torch.equal(a.head.weight, D.build(SMALL, seed=6).head.weight)
    half = D.build(SMALL, dtype="bfloat16", seed=5)
    assert half.head.weight.dtype == torch.bfloat16
    assert D.generate(half, D.prompt(half, 1, 4), 3).shape == (1, 3)


# ---------------------------------------------------------------- the prediction

H100 = get("h100_sxm")


def test_decode_is_bandwidth_bound_at_batch_one_and_turns_compute_bound_past_the_roofs_meeting():
    shape = D.Shape(layers=32, d_model=4096, heads=32, kv_heads=8, ffn=14336, vocab=128256)  # Llama-3-8B's sizes
    one = D.predicted_tokens_per_s(shape, 1, 128, H100, 2, "bf16")
    assert one["bound"] == "memory"
    assert one["bytes"] == shape.weight_bytes(2) + llm.kv_cache_bytes(shape.model(2), 1, 128)
    assert one["tokens_per_s"] == pytest.approx(H100.bandwidth_gbs * 1e9 / one["bytes"])
    switch = D.compute_bound_batch(shape, 128, H100, 2, "bf16")
    assert 300 < switch < 1000
    below = D.predicted_tokens_per_s(shape, math.floor(switch), 128, H100, 2, "bf16")
    above = D.predicted_tokens_per_s(shape, math.ceil(switch), 128, H100, 2, "bf16")
    assert (below["bound"], above["bound"]) == ("memory", "compute")
    assert above["tokens_per_s"] == pytest.approx(H100.peak("bf16") * 1e12 / shape.flops_per_token())


def test_a_context_whose_cache_outweighs_its_flops_never_turns_compute_bound_and_gqa_moves_that_line():
    mha = D.Shape(layers=32, d_model=4096, heads=32, kv_heads=32, ffn=11008, vocab=32000)
    gqa = D.Shape(layers=32, d_model=4096, heads=32, kv_heads=8, ffn=11008, vocab=32000)
    assert D.compute_bound_batch(mha, 256, H100, 2, "bf16") == math.inf
    assert D.predicted_tokens_per_s(mha, 4096, 256, H100, 2, "bf16")["bound"] == "memory"
    assert D.compute_bound_batch(gqa, 256, H100, 2, "bf16") < math.inf


def test_int8_weights_halve_the_weight_bytes_but_keep_the_cache_in_the_compute_dtype():
    bf16 = D.predicted_tokens_per_s(D.LAPTOP, 1, 64, H100, 2, "bf16")
    int8 = D.predicted_tokens_per_s(D.LAPTOP, 1, 64, H100, 1, "bf16", kv_bytes=2)
    kv = llm.kv_cache_bytes(D.LAPTOP.model(2), 1, 64)
    assert int8["bytes"] - kv == (bf16["bytes"] - kv) / 2


def test_a_profile_without_a_roof_says_which():
    cpu = Profile(id="measured_cpu_test", name="test CPU", kind="cpu", vendor="test", peak_tflops={"fp32": 0.1})
    with pytest.raises(ValueError, match="test CPU"):
        D.predicted_tokens_per_s(D.LAPTOP, 1, 64, cpu)


# ---------------------------------------------------------------- the measurement

class _Recorder:
    """A stand-in for ``time_fn``: calls each function once and says it took ``seconds``."""

    def __init__(self, seconds):
        self.seconds, self.calls = seconds, []

    def __call__(self, fn, **kwargs):
        self.calls.append(kwargs)
        fn()
        s = self.seconds
        return Timing(median_s=s, mean_s=s, min_s=s, p10_s=s, p90_s=s, n=1, warmup=0, device="cpu", threads=None,
                      flushed=False)


def _count(monkeypatch, model, name):
    counter = {"n": 0}
    method = getattr(model, name)

    def counted(*args, **kwargs):
        counter["n"] += 1
        return method(*args, **kwargs)

    monkeypatch.setattr(model, name, counted)
    return counter


def test_decode_is_timed_apart_from_prefill_and_counts_generated_tokens_only(monkeypatch):
    model = D.build(SMALL)
    timer = _Recorder(0.5)
    monkeypatch.setattr(D, "time_fn", timer)
    prefills, steps = _count(monkeypatch, model, "prefill"), _count(monkeypatch, model, "step")
    rows = D.measure_decode(model, (1, 4), prompt_len=8, new_tokens=5)
    assert prefills["n"] == 2 * 2  # per batch: the one that fills the cache, and the timed one; none in decode
    assert steps["n"] == 2 * 5
    assert [r["tokens_per_s"] for r in rows] == [1 * 5 / 0.5, 4 * 5 / 0.5]  # never (8 + 5) tokens per sequence
    assert [r["prefill_tokens_per_s"] for r in rows] == [8 / 0.5, 4 * 8 / 0.5]
    assert rows[0]["tpot_s"] == 0.1 and rows[0]["ttft_s"] == 0.5
    assert all(call["device"] == torch.device("cpu") for call in timer.calls)


def test_decode_without_the_cache_recomputes_the_prefix(monkeypatch):
    model = D.build(SMALL)
    monkeypatch.setattr(D, "time_fn", _Recorder(1.0))
    full = _count(monkeypatch, model, "forward_full")
    D.measure_decode(model, (2,), prompt_len=8, new_tokens=5, cache=False)
    assert full["n"] == 5


@pytest.mark.parametrize("kind", ["cuda", "mps"])
def test_an_accelerator_is_synchronized_around_every_sample(monkeypatch, kind):
    waits = []
    backend = getattr(torch, kind)
    monkeypatch.setattr(backend, "synchronize", lambda *a: waits.append(a), raising=False)
    model = D.build(SMALL)
    rows = D.measure_decode(model, (1,), prompt_len=4, new_tokens=2, device=kind, budget_s=0.02)
    assert len(waits) >= 4 and rows[0]["tokens_per_s"] > 0


def test_bf16_is_offered_where_the_device_computes_it():
    ampere = fake_torch(cuda=True, gpus=[{"name": "NVIDIA A100", "total_memory": 80 * 2**30, "major": 8,
                                          "minor": 0, "sms": 108}])
    volta = fake_torch(cuda=True, gpus=[{"name": "Tesla V100", "total_memory": 32 * 2**30, "major": 7,
                                         "minor": 0, "sms": 80}])
    assert D.dtypes("cuda", ampere) == ["float32", "bfloat16"]
    assert D.dtypes("cuda:0", volta) == ["float32"]
    assert D.dtypes("cpu") == ["float32", "bfloat16"]


def test_mps_offers_bf16_only_where_a_bf16_tensor_can_be_made():
    class OldMac:
        bfloat16 = torch.bfloat16

        @staticmethod
        def ones(*args, **kwargs):
            raise TypeError("BFloat16 is not supported on MPS")

    class NewMac(OldMac):
        @staticmethod
        def ones(*args, **kwargs):
            return None

    assert D.dtypes("mps", OldMac) == ["float32"]
    assert D.dtypes("mps", NewMac) == ["float32", "bfloat16"]


def test_int8_weights_come_from_a_library_or_the_reason_is_given(model):
    library, why = D.int8_path("cpu")
    if library is None:
        pytest.skip(why.en)
    quantized = D.int8(model)
    assert not any(type(m) is torch.nn.Linear for m in quantized.modules())  # every linear layer replaced
    assert D.generate(quantized, D.prompt(model, 2, 6), 4).shape == (2, 4)
    assert type(model.head) is torch.nn.Linear  # the original is left as it was


def test_no_int8_library_on_a_gpu_says_to_install_torchao(monkeypatch):
    import builtins
    real = builtins.__import__

    def without_torchao(name, *args, **kwargs):
        if name.startswith("torchao"):
            raise ImportError(name)
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", without_torchao)
    library, why = D.int8_path("cuda")
    assert library is None and "torchao" in why.en and "torchao" in why.ko
    with pytest.raises(RuntimeError, match="torchao"):
        D.int8(D.build(SMALL).to("meta"))


def test_the_mlx_port_decodes_the_same_tokens_and_is_timed_on_the_course_clock():
    mx = pytest.importorskip("mlx.core", reason="MLX is not installed here (the lesson's MLX cell then says why)")
    from autograder.modules.m08_serving import decode_mlx
    model = D.build(D.Shape(layers=2, d_model=64, heads=4, kv_heads=2, ffn=128, vocab=256))
    mlx_model = decode_mlx.from_torch(model)
    ids = D.prompt(model, 2, 8)
    logits, _ = mlx_model.prefill(ids.numpy())
    assert torch.allclose(torch.tensor(np.array(logits)), model.prefill(ids)[0], atol=1e-4)
    assert decode_mlx.generate(mlx_model, mx.array(ids.numpy()), 6).tolist() == D.generate(model, ids, 6).tolist()
    rows = decode_mlx.measure_decode(mlx_model, model, [1, 2], prompt_len=8, new_tokens=4, budget_s=0.01)
    assert [r["batch"] for r in rows] == [1, 2]
    assert all(r["tokens_per_s"] == r["batch"] * 4 / r["decode_s"] > 0 for r in rows)
