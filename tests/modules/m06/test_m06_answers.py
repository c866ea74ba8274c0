"""Module 06 reference answers, expected answers and hidden cases, price table and results store, checked
against independent facts."""
import json
import math
import random

import pytest

import course_answers.m06_choosing_hardware as A
from autograder import llm, modules, profiles, results
from autograder.fakes.nvml import fake_pynvml, fake_torch_cuda
from autograder.modules.m06_choosing_hardware import prices as m06_prices
from autograder.modules.m06_choosing_hardware.lesson import SAMPLE_LOG


# ---------------------------------------------------------------- training cost
def test_training_cost_by_hand():
    r = A.training_cost(8e9, 100e9, 8, "a100_sxm_40gb", 0.4, 2.0)
    assert r["flops"] == pytest.approx(4.8e21)
    seconds = 4.8e21 / (8 * 312e12 * 0.4)            # A100 dense bf16: 312 TFLOP/s (datasheet)
    assert r["hours"] == pytest.approx(seconds / 3600)
    assert r["days"] == pytest.approx(55.6446, rel=1e-4)
    assert r["gpu_hours"] == pytest.approx(8 * seconds / 3600)
    assert r["cost"] == pytest.approx(2.0 * 8 * seconds / 3600)


def test_training_cost_uses_the_profile_peak():
    h100 = A.training_cost(1e9, 1e10, 1, "h100_sxm", 0.5, 1.0)
    a100 = A.training_cost(1e9, 1e10, 1, "a100_sxm_80gb", 0.5, 1.0)
    assert a100["hours"] / h100["hours"] == pytest.approx(989.4 / 312)


@pytest.mark.parametrize("kwargs", [dict(mfu=40), dict(mfu=0), dict(gpus=-1), dict(params=float("nan"))])
def test_training_cost_rejects_bad_input(kwargs):
    args = dict(params=1e9, tokens=1e10, gpus=8, profile_id="h100_sxm", mfu=0.4, price_per_gpu_hour=2.0) | kwargs
    with pytest.raises(ValueError):
        A.training_cost(**args)


def test_training_cost_without_a_peak_is_a_clear_error():
    with pytest.raises(ValueError, match="fp8"):
        A.training_cost(1e9, 1e10, 8, "a100_sxm_80gb", 0.4, 1.0, dtype="fp8")  # Ampere has no fp8 Tensor Cores


# ---------------------------------------------------------------- the MFU a claim needs
def test_implied_mfu_by_hand():
    # 7B on 1T tokens: 4.2e22 FLOP; 64 H100s for 7 days at the dense peak give 64 x 989.4e12 x 7 x 86400 FLOP
    r = A.implied_mfu(dict(params=7e9, tokens=1e12, gpus=64, profile="h100_sxm", unit="days", claimed=7.0))
    assert r["gpu_hours"] == pytest.approx(64 * 7 * 24)
    assert r["mfu"] == pytest.approx(4.2e22 / (64 * 989.4e12 * 7 * 86400)) and r["verdict"] == "impossible"


def test_implied_mfu_units_agree():
    base = dict(params=1.3e9, tokens=26e9, gpus=8, profile="h100_sxm")
    days = A.implied_mfu(dict(base, unit="days", claimed=1.0))
    hours = A.implied_mfu(dict(base, unit="gpu_hours", claimed=8 * 24.0))
    usd = A.implied_mfu(dict(base, unit="usd", claimed=8 * 24 * 3.5, price_per_gpu_hour=3.5))
    assert days["mfu"] == pytest.approx(hours["mfu"]) == pytest.approx(usd["mfu"])


@pytest.mark.parametrize("mfu, verdict", [(1.01, "impossible"), (0.99, "optimistic"), (0.61, "optimistic"),
                                          (0.59, "plausible"), (0.05, "plausible")])
def test_implied_mfu_verdicts(mfu, verdict):
    gpu_hours = 6 * 1e9 * 2e10 / (mfu * 3600 * 989.4e12)
    assert A.implied_mfu(dict(params=1e9, tokens=2e10, gpus=8, profile="h100_sxm", unit="gpu_hours",
                              claimed=gpu_hours))["verdict"] == verdict


def test_the_lessons_llama_claim_needs_more_than_the_peak():
    """The common '8 days' for Llama 3 8B on 8 A100s needs an MFU of about 2.8 (the lesson's 56 days at 0.4)."""
    r = A.implied_mfu(dict(params=8e9, tokens=100e9, gpus=8, profile="a100_sxm_40gb", unit="days", claimed=8.0))
    assert r["mfu"] == pytest.approx(0.4 * 55.6446 / 8, rel=1e-4) and r["verdict"] == "impossible"


# ---------------------------------------------------------------- the cheapest deployment
def offer(oid, gpus, mem_gib, bw, price):
    return {"id": oid, "gpus": gpus, "memory_gib": mem_gib, "bandwidth_gbs": bw, "price_per_hour": price}


MODEL = {"params": 10e9, "weight_bytes": 2, "layers": 40, "kv_heads": 8, "head_dim": 128, "kv_bytes": 2}


def test_deployment_batch_by_memory_and_by_latency():
    per_seq = llm.kv_cache_bytes(MODEL, 1, 4096)          # 2 x 40 x 8 x 128 x 2 x 4096 bytes
    assert per_seq == 2 * 40 * 8 * 128 * 2 * 4096
    o = offer("a", 1, 80, 2000, 2.0)
    roomy = {"tokens_per_s": 100, "ms_per_token": 1000, "usable_fraction": 0.9}
    assert A.replica_batch(MODEL, 4096, o, roomy) == int((80 * 2**30 * 0.9 - 20e9) // per_seq)
    strict = dict(roomy, ms_per_token=15)                    # 15 ms x 2000 GB/s = 30 GB a step
    assert A.replica_batch(MODEL, 4096, o, strict) == int((30e9 - 20e9) // per_seq)
    assert A.replica_batch(MODEL, 4096, o, dict(roomy, ms_per_token=5)) == 0   # the weights alone take 10 ms


def test_deployment_compares_whole_deployments_and_keeps_the_first_on_a_tie():
    target = {"tokens_per_s": 20000, "ms_per_token": 50, "usable_fraction": 0.9}
    small = offer("small", 1, 48, 864, 1.2)     # cheapest hour, but slow: many replicas
    big = offer("big", 8, 80, 3350, 30.0)
    r = A.cheapest_deployment(MODEL, 4096, target, [small, big, dict(big, id="big_copy")])
    plans = {o["id"]: A._plan(MODEL, 4096, target, o, A.replica_batch(MODEL, 4096, o, target)) for o in (small, big)}
    assert r == plans["big"] and plans["big"]["cost_per_hour"] < plans["small"]["cost_per_hour"]
    assert A.cheapest_deployment(MODEL, 4096, dict(target, ms_per_token=0.5), [small, big]) == A.NO_PLAN


def test_deployment_replicas_reach_the_target():
    target = {"tokens_per_s": 5000, "ms_per_token": 40, "usable_fraction": 0.9}
    o = offer("x", 4, 80, 2000, 10.0)
    plan = A.cheapest_deployment(MODEL, 4096, target, [o])
    step = (20e9 + plan["batch"] * llm.kv_cache_bytes(MODEL, 1, 4096)) / (4 * 2000e9)
    assert step <= 0.040 and plan["replicas"] * plan["batch"] / step >= 5000
    assert (plan["replicas"] - 1) * plan["batch"] / step < 5000


# ---------------------------------------------------------------- serving
def test_kv_cache_of_a_gqa_70b_model():
    model = {"params": 70.6e9, "weight_bytes": 2, "layers": 80, "kv_heads": 8, "head_dim": 128, "kv_bytes": 2}
    assert llm.kv_cache_bytes(model, 1, 1) == 327_680                   # 2 x 80 x 8 x 128 x 2 bytes per token
    r = A.gpus_to_serve(model, 8192, 16, {"memory_gib": 80, "bandwidth_gbs": 3350, "usable_fraction": 0.9})
    assert r["weights_gb"] == pytest.approx(141.2) and r["kv_cache_gb"] == pytest.approx(42.94967296)
    assert r["gpus"] == 3                                             # 184.1 GB over 77.3 GB (72 GiB) usable each
    assert r["tokens_per_s_max"] == pytest.approx(16 * 3 * 3350e9 / 184.14967296e9)


def test_serving_memory_is_binary():
    """149.3 GB fit in two 80 GiB H100s at 90% (77.3 GB each), not in two '80 GB' ones (72 GB each)."""
    model = {"params": 70.6e9, "weight_bytes": 2, "layers": 80, "kv_heads": 8, "head_dim": 128, "kv_bytes": 2}
    gpu = {"memory_gib": 80, "bandwidth_gbs": 3350, "usable_fraction": 0.9}
    assert A.gpus_to_serve(model, 8192, 3, gpu)["gpus"] == 2
    assert A.MISTAKES["serve"]["gb_for_gib"](model, 8192, 3, gpu)["gpus"] == 3


def test_serving_needs_at_least_one_gpu():
    tiny = {"params": 1e6, "weight_bytes": 2, "layers": 2, "kv_heads": 1, "head_dim": 8, "kv_bytes": 2}
    assert A.gpus_to_serve(tiny, 16, 1, {"memory_gib": 24, "bandwidth_gbs": 300, "usable_fraction": 0.9})["gpus"] == 1


# ---------------------------------------------------------------- nvidia-smi logs: why is a run slow?
@pytest.mark.parametrize("seed", range(400))
def test_the_diagnosis_finds_the_planted_cause_with_a_margin(seed):
    """Every generated log shows its cause in 30% or more of the busy samples and any other signal in at most a few:
    far from the reference's thresholds (10%, 20% for hung), so a sensible classifier of its own agrees."""
    rng = random.Random(seed)
    cause = A.CAUSES[seed % len(A.CAUSES)]
    text = A.make_smi_log(rng, cause, rows=rng.randint(50, 140), units=rng.random() < 0.5,
                          event_name=rng.random() < 0.5, shuffle=rng.random() < 0.5, na=rng.random() < 0.5,
                          max_clock=rng.choice([1410, 1980, 2040, 2520]), power_limit=rng.choice([72.0, 400.0, 700.0]))
    shares = A.cause_shares(A.read_log(text))
    assert A.summarize_smi_text(text)["cause"] == cause
    for name, share in shares.items():
        assert share >= 0.28 if name == cause else share <= 0.06, (name, shares)


def test_the_visible_logs_are_their_recipes():
    for name in A.VISIBLE_LOGS:
        data = (SAMPLE_LOG.parent / name).read_text(encoding="utf-8")
        assert data == A.visible_log(name), name


def test_idle_is_not_throttling():
    text = A.make_smi_log(random.Random(5), "healthy", rows=60)
    rows = A.read_log(text)
    assert any(r["bits"] == 0x1 for r in rows) and A.diagnose(rows) == "healthy"


def test_hung_reads_busy_at_idle_power():
    rows = A.read_log(A.make_smi_log(random.Random(9), "hung", rows=80))
    top = max(r["power"] for r in rows)
    spinning = [r for r in rows if r["util"] == 100 and r["power"] < 0.3 * top]
    assert len(spinning) > 20 and A.diagnose(rows) == "hung"


@pytest.mark.parametrize("variant", [dict(units=False), dict(event_name=True), dict(shuffle=True)])
def test_log_format_variants_give_the_same_summary(variant):
    base = A.summarize_smi_text(A.make_smi_log(random.Random(7), "thermal", rows=100))
    other = A.summarize_smi_text(A.make_smi_log(random.Random(7), "thermal", rows=100, **variant))
    assert other == base


def test_na_values_are_skipped():
    text = A.make_smi_log(random.Random(3), "power", rows=120, na=True)
    assert "[N/A]" in text
    r = A.summarize_smi_text(text)
    assert r["samples"] == 120 and math.isfinite(r["mean_utilization"])


def test_the_lessons_sample_log_still_reads():
    from autograder.modules.m06_choosing_hardware.lesson import sample_log
    log = sample_log()
    assert len(log["reasons"]) == 90 and set(log) >= {"utilization.gpu", "memory.used", "clocks.sm", "power.draw"}
    rows = A.read_log(SAMPLE_LOG.read_text(encoding="utf-8"))  # the reference reader (by header name) agrees
    assert list(log["utilization.gpu"]) == [r["util"] for r in rows] and list(log["reasons"]) == [r["bits"] for r in rows]


def test_both_thermal_bits_keep_the_log_otherwise_the_same():
    """Log d has 0x60 (both thermal bits) on every thermal sample, so a test of the reasons with == or `in`
    misses them; everything else in the log is what the same seed gives."""
    plain = A.make_smi_log(random.Random(64), "thermal", rows=80)
    both = A.make_smi_log(random.Random(64), "thermal", rows=80, both_thermal=True)
    changed = [(a, b) for a, b in zip(plain.splitlines(), both.splitlines()) if a != b]
    assert changed and all(b.endswith("0x0000000000000060") for _, b in changed)
    assert A.summarize_smi_text(both)["cause"] == "thermal"


# ---------------------------------------------------------------- inventory with fakes
def test_inventory_from_nvml():
    nvml = fake_pynvml([0, 2])
    rows = A.gpu_inventory(nvml, fake_torch_cuda([0, 2]))
    assert [r["name"] for r in rows] == ["NVIDIA H100 80GB HBM3", "NVIDIA GeForce RTX 4090"]
    assert rows[0] == {"index": 0, "name": "NVIDIA H100 80GB HBM3", "memory_gib": 85_520_809_984 / 2**30,
                       "compute_capability": "9.0", "source": "nvml"}
    assert round(rows[0]["memory_gib"], 1) == 79.6 and nvml.calls == {"init": 1, "shutdown": 1}


@pytest.mark.parametrize("fail", ["library", "driver", "count", "memory"])
def test_inventory_falls_back_to_torch(fail):
    nvml = fake_pynvml([1], fail=fail)
    rows = A.gpu_inventory(nvml, fake_torch_cuda([1]))
    assert [r["source"] for r in rows] == ["torch"] and rows[0]["compute_capability"] == "8.0"
    assert nvml.calls["shutdown"] == nvml.calls["init"]


def test_inventory_without_anything_is_empty():
    assert A.gpu_inventory(None, None) == []
    assert A.gpu_inventory(fake_pynvml([], fail="library"), fake_torch_cuda([])) == []


def test_inventory_decodes_bytes_names():
    assert A.gpu_inventory(fake_pynvml([3], bytes_names=True), None)[0]["name"] == "NVIDIA L4"
    wrong = A.MISTAKES["inventory"]["bytes_name"](fake_pynvml([3], bytes_names=True), None)
    assert wrong[0]["name"] == b"NVIDIA L4"


# ---------------------------------------------------------------- a partly frozen step
@pytest.mark.parametrize("frozen", [0, 1, 2])
def test_step_flops_are_what_autograd_runs(frozen):
    """The count against PyTorch's own FLOP counter on the same step (forward and backward)."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode
    dims, batch = [64, 128, 96, 32], 16
    linears = [torch.nn.Linear(a, b, bias=False) for a, b in zip(dims[:-1], dims[1:])]
    for layer in linears[:frozen]:
        layer.requires_grad_(False)
    model = torch.nn.Sequential(linears[0], torch.nn.ReLU(), linears[1], torch.nn.ReLU(), linears[2])
    with FlopCounterMode(display=False) as counter:
        model(torch.randn(batch, dims[0])).square().mean().backward()
    assert A.step_flops(dims, batch, frozen) == counter.get_total_flops()
    assert A.step_flops(dims, batch, frozen) < 6 * batch * sum(a * b for a, b in zip(dims[:-1], dims[1:]))


def test_mlp_step_freezes_the_first_layers():
    import torch
    from autograder.modules.m06_choosing_hardware.lesson import mlp_step
    step = mlp_step([8, 16, 4], 2, "cpu", frozen=1)
    model = step.model
    assert [p.requires_grad for p in model.parameters()] == [False, True]
    before = [p.detach().clone() for p in model.parameters()]
    step()
    after = list(model.parameters())
    assert torch.equal(before[0], after[0]) and not torch.equal(before[1], after[1])


def test_mfu_formula():
    assert A.mfu(1e12, 2.0, 1.0) == pytest.approx(0.5)
    assert A.mfu(1e12, 1.0, 1.0, devices=4) == pytest.approx(0.25)
    with pytest.raises(ValueError):
        A.mfu(1e12, 0.0, 1.0)


# ---------------------------------------------------------------- price table
def test_price_table_is_dated_sourced_and_joined_with_profiles():
    rows = m06_prices.offers()
    assert len(rows) >= 5
    for r in rows:
        assert r["seen"] and r["source"].startswith("https://") and r["checked_via"]
        assert r["price_per_gpu_hour"] == pytest.approx(r["price_per_hour"] / r["gpus"])
        assert r["bf16_tflops"] == profiles.get(r["profile"]).peak("bf16")
    assert {r["id"] for r in rows if r.get("earlier_price")} >= {"aws_p5_48xlarge", "aws_p4d_24xlarge"}
    assert all(r["memory_gib"] == profiles.get(r["profile"]).memory_gib for r in rows)
    assert m06_prices.offers("spot") and all(r["kind"] == "spot" for r in m06_prices.offers("spot"))
    with pytest.raises(KeyError):
        m06_prices.price_per_gpu_hour("no_such_offer")


# ---------------------------------------------------------------- results store
@pytest.fixture
def store(tmp_path, monkeypatch):
    monkeypatch.setenv("COURSE_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(results, "machine", lambda: ("machine-a", {"device": "cpu"}))
    return tmp_path


def test_record_and_load(store):
    results.record("m02", "matmul_tflops_fp32", 0.14, "TFLOP/s", device="cpu", size=4096)
    results.record("m02", "matmul_tflops_fp32", 0.15, "TFLOP/s", device="cpu", size=2048)   # replaces
    results.record("m03", "bandwidth_copy_gbs", 25, "GB/s")
    loaded = results.load()
    assert set(loaded) == {"m02.matmul_tflops_fp32", "m03.bandwidth_copy_gbs"}
    assert loaded["m02.matmul_tflops_fp32"]["value"] == 0.15 and loaded["m02.matmul_tflops_fp32"]["meta"]["size"] == 2048
    assert (store / "results.json").exists()
    assert results.load("another-machine") == {}
    assert results.forget("m03") == 1 and set(results.load()) == {"m02.matmul_tflops_fp32"}


@pytest.mark.parametrize("args", [("", "k", 1.0, "s"), ("m01", "", 1.0, "s"), ("m01", "k", float("inf"), "s"),
                                  ("m01", "k", True, "s"), ("m01", "k", "1.0", "s"), ("m01", "k", 1.0, None)])
def test_record_rejects_bad_input_bilingually(store, args):
    with pytest.raises(ValueError) as err:
        results.record(*args)
    assert "results.record" in str(err.value)


def test_a_broken_file_is_ignored(store):
    (store / "results.json").write_text("{not json")
    assert results.load() == {}
    results.record("m01", "train_step_s", 0.01, "s")
    assert "m01.train_step_s" in results.load()


def test_machine_key_comes_from_reference(monkeypatch):
    from autograder import hardware, reference
    monkeypatch.setattr(hardware, "best_device", lambda: "cpu")
    monkeypatch.setattr(reference, "machine_key", lambda name: {"device": name, "x": 1})
    mid, key = results.machine()
    assert key == {"device": "cpu", "x": 1} and mid == reference._digest(key)


# ---------------------------------------------------------------- expected answers and hidden cases
def test_every_task_has_expected_answers_and_hidden_cases():
    assert set(A.EXPECT) == set(A.HIDDEN) == set(modules.tasks("m06"))


@pytest.mark.parametrize("name", sorted(A.EXPECT))
def test_expected_answers_are_json_and_depend_only_on_the_case(name):
    task = modules.tasks("m06")[name]
    cases = json.loads(json.dumps(list(task.visible()) + A.HIDDEN[name](random.Random(5))))
    for case in cases:
        want = A.EXPECT[name](case)
        assert json.loads(json.dumps(want)) == want and A.EXPECT[name](json.loads(json.dumps(case))) == want


def test_hidden_cases_are_drawn_from_the_seed():
    for name, draw in A.HIDDEN.items():
        assert draw(random.Random(3)) == draw(random.Random(3)), name


def test_visible_cases_name_no_machine():
    """expected.json is looked up by case: a case naming this machine's device would miss on another machine."""
    assert all("device" not in case for case in modules.tasks("m06")["mfu"].visible())


def test_the_invalid_cost_case_expects_the_error():
    bad = A.HIDDEN["cost"](random.Random(1))[-1]
    assert A.EXPECT["cost"](bad)["answer"] == {"raised": "ValueError"}


def test_the_real_inventory_case_has_no_expected_rows():
    assert A.EXPECT["inventory"]({"real": True}) is None
    assert A.EXPECT["inventory"]({"nvml": [2], "fail": "library", "torch": [2]})["answer"][0]["source"] == "torch"
