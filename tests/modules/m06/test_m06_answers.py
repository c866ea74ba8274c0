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
from autograder.modules.m06_choosing_hardware.lesson import SAMPLE_LOG, make_smi_log


# ---------------------------------------------------------------- training cost and claims
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


def test_seed_claim_is_flagged_as_optimistic():
    r = A.check_claim(dict(params=8e9, tokens=100e9, gpus=8, profile="a100_sxm_40gb", mfu=0.4, claimed_days=8.0))
    assert r["flagged"] and r["ratio"] == pytest.approx(8 / 55.6446, rel=1e-4)


@pytest.mark.parametrize("factor, flagged", [(1.99, False), (2.01, True), (0.51, False), (0.49, True), (1.0, False)])
def test_claim_flag_boundaries(factor, flagged):
    days = A.training_cost(1e9, 2e10, 8, "h100_sxm", 0.4, 1.0)["days"]
    claim = dict(params=1e9, tokens=2e10, gpus=8, profile="h100_sxm", mfu=0.4, claimed_days=days * factor)
    assert A.check_claim(claim)["flagged"] is flagged


# ---------------------------------------------------------------- offers
def offer(name, gpus, mem, tflops, price):
    return {"name": name, "gpus": gpus, "memory_gb_per_gpu": mem, "tflops_per_gpu": tflops, "price_per_hour": price}


def test_cheapest_offer_respects_memory_deadline_and_ties():
    job = {"flops": 1e20, "mfu": 0.5, "memory_gb": 100, "deadline_hours": 48}
    offers = [offer("small", 1, 80, 1000, 1.0),         # too little memory
              offer("slow", 2, 80, 10, 0.1),            # misses the deadline
              offer("ok", 2, 80, 1000, 8.0),
              offer("ok_copy", 2, 80, 1000, 8.0)]       # same cost, later: loses the tie
    r = A.cheapest_offer(offers, job)
    hours = 1e20 / (2 * 1000e12 * 0.5) / 3600
    assert r == {"name": "ok", "cost": pytest.approx(hours * 8.0), "hours": pytest.approx(hours)}
    assert A.cheapest_offer(offers, dict(job, deadline_hours=1e-6)) == {"name": None, "cost": None, "hours": None}


def test_cheapest_offer_on_the_price_table():
    rows = [{"name": o["id"], "gpus": o["gpus"], "memory_gb_per_gpu": o["memory_gb_per_gpu"],
             "tflops_per_gpu": o["bf16_tflops"], "price_per_hour": o["price_per_hour"]} for o in m06_prices.offers("on_demand")]
    job = {"flops": 6 * 7e9 * 5e9, "mfu": 0.35, "memory_gb": 112.0, "deadline_hours": 48.0}
    assert A.cheapest_offer(rows, job)["name"] == "lambda_8x_h100_sxm"


# ---------------------------------------------------------------- serving
def test_kv_cache_of_a_gqa_70b_model():
    model = {"params": 70.6e9, "weight_bytes": 2, "layers": 80, "kv_heads": 8, "head_dim": 128, "kv_bytes": 2}
    assert llm.kv_cache_bytes(model, 1, 1) == 327_680                   # 2 x 80 x 8 x 128 x 2 bytes per token
    r = A.gpus_to_serve(model, 8192, 16, {"memory_gb": 80, "bandwidth_gbs": 3350, "usable_fraction": 0.9})
    assert r["weights_gb"] == pytest.approx(141.2) and r["kv_cache_gb"] == pytest.approx(42.94967296)
    assert r["gpus"] == 3                                             # 184.1 GB over 72 GB usable each
    assert r["tokens_per_s_max"] == pytest.approx(16 * 3 * 3350e9 / 184.14967296e9)


def test_serving_needs_at_least_one_gpu():
    tiny = {"params": 1e6, "weight_bytes": 2, "layers": 2, "kv_heads": 1, "head_dim": 8, "kv_bytes": 2}
    assert A.gpus_to_serve(tiny, 16, 1, {"memory_gb": 24, "bandwidth_gbs": 300, "usable_fraction": 0.9})["gpus"] == 1


# ---------------------------------------------------------------- nvidia-smi logs
def test_sample_log_summary():
    r = A.summarize_smi_log(SAMPLE_LOG)
    assert r["samples"] == 90 and 0 < r["mean_utilization"] < 100
    assert r["peak_memory_mib"] == max(float(line.split(", ")[2].split()[0]) for line in SAMPLE_LOG.read_text().splitlines()[1:])
    assert len(r["throttled"]) == 3
    assert {x for i in r["throttled"] for x in i["reasons"]} >= {"sw_power_cap", "sw_thermal_slowdown", "hw_slowdown"}


def test_idle_is_not_throttling():
    r = A.summarize_smi_text(SAMPLE_LOG.read_text())
    starts = [i["start"] for i in r["throttled"]]
    first_rows = [line.split(", ")[0] for line in SAMPLE_LOG.read_text().splitlines()[1:5]]  # idle: 0x1, 345 MHz
    assert not set(first_rows) & set(starts)


@pytest.mark.parametrize("variant", [dict(units=False), dict(event_name=True), dict(shuffle=True)])
def test_log_format_variants_give_the_same_summary(variant):
    base = A.summarize_smi_text(make_smi_log(random.Random(7), rows=100))
    other = A.summarize_smi_text(make_smi_log(random.Random(7), rows=100, **variant))
    assert other == base


def test_na_values_are_skipped():
    text = make_smi_log(random.Random(3), rows=120, na=True)
    assert "[N/A]" in text
    r = A.summarize_smi_text(text)
    assert r["samples"] == 120 and math.isfinite(r["mean_utilization"])


# ---------------------------------------------------------------- inventory with fakes
def test_inventory_from_nvml():
    nvml = fake_pynvml([0, 2])
    rows = A.gpu_inventory(nvml, fake_torch_cuda([0, 2]))
    assert [r["name"] for r in rows] == ["NVIDIA H100 80GB HBM3", "NVIDIA GeForce RTX 4090"]
    assert rows[0] == {"index": 0, "name": "NVIDIA H100 80GB HBM3", "memory_gb": 85_520_809_984 / 1e9,
                       "compute_capability": "9.0", "source": "nvml"}
    assert nvml.calls == {"init": 1, "shutdown": 1}


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


# ---------------------------------------------------------------- MFU formula
def test_step_flops_and_mfu():
    assert A.step_flops([4, 8, 2], 10) == 6 * 10 * (4 * 8 + 8 * 2)
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
    assert {r["id"] for r in rows if r.get("seed_claim")} >= {"aws_p5_48xlarge", "aws_p4d_24xlarge"}
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
    assert modules.tasks("m06")["mfu"].visible() == [{"dims": [512, 1024, 512], "batch": 256}]


def test_the_invalid_cost_case_expects_the_error():
    [bad] = [c for c in A.HIDDEN["cost"](random.Random(1)) if c.get("expect_error")]
    assert A.EXPECT["cost"](bad) == {"raised": "ValueError"}


def test_the_real_inventory_case_has_no_expected_rows():
    assert A.EXPECT["inventory"]({"real": True}) is None
    assert A.EXPECT["inventory"]({"nvml": [2], "fail": "library", "torch": [2]})[0]["source"] == "torch"
