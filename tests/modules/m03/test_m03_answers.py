"""Reference answers of module 03 against independent facts (torch element sizes, spec sheets, algebra), and the
simulated GPU of task 5 against what it claims to simulate."""
import math
import random

import pytest
import torch

from autograder import profiles
from autograder.modules.m03_memory_hierarchy import analysis
from autograder.modules.m03_memory_hierarchy import tasks as checks_m03
from autograder.modules.m03_memory_hierarchy.simulated import EXAMPLE, SimulatedGPU
from course_answers import m03_memory_hierarchy as m03


@pytest.mark.parametrize("dtype,torch_dtype", [("fp64", torch.float64), ("fp32", torch.float32),
                                               ("bf16", torch.bfloat16), ("fp16", torch.float16),
                                               ("fp8", torch.float8_e4m3fn), ("int8", torch.int8)])
def test_bytes_per_element_match_torch(dtype, torch_dtype):
    assert m03.BYTES_PER_ELEMENT[dtype] == torch.empty(0, dtype=torch_dtype).element_size()


def test_intensity_formulas():
    add = m03.arithmetic_intensity("add", [1000], "fp32")
    assert add == {"flops": 1000, "bytes": 12000, "intensity": 1 / 12}
    mv = m03.arithmetic_intensity("matvec", [3, 5], "bf16")
    assert mv["flops"] == 30 and mv["bytes"] == (15 + 5 + 3) * 2
    mm = m03.arithmetic_intensity("matmul", [4096, 4096, 4096], "bf16")
    assert mm["intensity"] == pytest.approx(4096 / 3)  # square bf16 matmul: n/3, as the lesson says
    rect = m03.arithmetic_intensity("matmul", [2, 3, 4], "fp8")
    assert rect["flops"] == 48 and rect["bytes"] == 6 + 12 + 8


@pytest.mark.parametrize("op,shape,dtype", [("conv", [3], "fp32"), ("add", [3, 3], "fp32"),
                                            ("matmul", [0, 2, 2], "fp32"), ("add", [4], "fp128")])
def test_intensity_rejects_bad_input(op, shape, dtype):
    with pytest.raises(ValueError):
        m03.arithmetic_intensity(op, shape, dtype)


# ---------------------------------------------------------------- datasheet rows
def test_printed_figures_are_read_as_printed():
    assert m03.printed_number("1,979 TFLOPS*") == 1979.0 and m03.printed_number("1,307.4 TFLOPS") == 1307.4
    hopper = {"peak": "1,979 TFLOPS*", "footnote": "* With sparsity", "bandwidth": "3.35 TB/s", "memory": "80 GB"}
    ampere = {"peak": "312 TFLOPS | 624 TFLOPS*", "footnote": "* With sparsity", "bandwidth": "2,039 GB/s"}
    assert m03.dense_tflops(hopper) == 989.5 and m03.dense_tflops(ampere) == 312.0
    assert m03.dense_tflops({"peak": "1,307.4 TFLOPS", "footnote": ""}) == 1307.4
    assert m03.bandwidth_gbs(hopper) == 3350.0 and m03.bandwidth_gbs(ampere) == 2039.0
    assert m03.memory_bytes(hopper) == 80 * 2**30


@pytest.mark.parametrize("rid", checks_m03.VISIBLE_ROWS)
def test_visible_datasheet_rows_agree_with_the_profiles(rid):
    """The rows are printed figures: the dense peak within the datasheet's rounding, the bandwidth and capacity equal."""
    row, p = checks_m03.datasheets()[rid], profiles.get(rid)
    assert m03.dense_tflops(row) == pytest.approx(p.peak("bf16"), abs=0.5)
    assert m03.bandwidth_gbs(row) == p.bandwidth_gbs
    assert m03.memory_bytes(row) == p.memory_bytes


@pytest.mark.parametrize("style", ["sparse", "both", "dense"])
def test_hidden_rows_print_the_profiles_figures(style):
    for pid in m03.HIDDEN_DEVICES:
        p = profiles.get(pid)
        if not (p.peak("bf16") and p.bandwidth_gbs and p.memory_gib):
            continue
        for unit in ("TB/s", "GB/s"):
            row = m03.printed_row(p, "bf16", style, unit)
            assert m03.dense_tflops(row) == pytest.approx(p.peak("bf16"), abs=0.51), (pid, row)
            assert m03.bandwidth_gbs(row) == pytest.approx(p.bandwidth_gbs, rel=1e-3), (pid, row)
            assert m03.memory_bytes(row) == p.memory_bytes


def test_h100_datasheet_ridge_is_about_295_and_the_ridge_itself_is_compute():
    row = checks_m03.datasheets()["h100_sxm"]
    assert round(m03.datasheet_roofline(row, 1.0)["ridge"]) == 295
    at = m03.roofline_point(100.0, 1000.0, 100.0)
    assert at == {"ridge": 100.0, "attainable_tflops": 100.0, "bound": "compute"}
    assert m03.roofline_point(100.0, 1000.0, 10.0)["bound"] == "memory"


# ---------------------------------------------------------------- fusion
def test_fusion_counts_by_hand():
    n, d = 1000, 10
    silu = m03.fused_traffic([["s", "sigmoid", ["x"]], ["y", "mul", ["x", "s"]]], {"x": n}, 2)
    assert silu == {"unfused_bytes": (2 * n + 3 * n) * 2, "fused_bytes": 2 * n * 2}
    steps = [["h", "add", ["x", "b"]], ["a", "gelu", ["h"]], ["y", "add", ["a", "r"]]]
    out = m03.fused_traffic(steps, {"x": n, "b": d, "r": n}, 4)
    assert out == {"unfused_bytes": ((n + d + n) + (n + n) + (n + n + n)) * 4, "fused_bytes": (n + d + n + n) * 4}
    one = m03.fused_traffic([["y", "relu", ["x"]]], {"x": n}, 2)
    assert one["unfused_bytes"] == one["fused_bytes"] == 2 * n * 2  # nothing to fuse


def test_lesson_chain_is_four_times_its_fused_version():
    steps = [["t1", "mul", ["x", 1.5]], ["t2", "add", ["t1", 0.25]], ["t3", "relu", ["t2"]], ["y", "mul", ["t3", 2.0]]]
    out = m03.fused_traffic(steps, {"x": 10**6}, 4)
    assert out["unfused_bytes"] == 4 * out["fused_bytes"]


# ---------------------------------------------------------------- decoding
def test_llama3_8b_kv_cache_per_token():
    model = checks_m03.model("llama3_8b", 2, 2)
    assert m03.kv_cache_bytes(model, batch=1, context=1) == 128 * 1024  # 2 x 32 x 8 x 128 x 2 bytes
    out = m03.decode_bound(model, batch=1, context=0, bandwidth_gbs=3350)
    assert out["tokens_per_s"] == pytest.approx(3350e9 / (8.030e9 * 2))
    assert out["step_s"] * out["tokens_per_s"] == pytest.approx(1.0)


def test_sliding_window_layers_keep_the_last_window_tokens_only():
    """Gemma 2 9B: 21 of 42 layers keep 4096 tokens, the other 21 the whole context; Mistral 7B: all 32 keep 4096."""
    gemma, mistral = checks_m03.model("gemma2_9b", 2, 2), checks_m03.model("mistral_7b", 2, 2)
    per_token_layer = 2 * 8 * 256 * 2  # K and V, 8 KV heads, head_dim 256, bf16
    assert m03.kv_bytes_per_sequence(gemma, 8192) == per_token_layer * (21 * 8192 + 21 * 4096)
    assert m03.kv_bytes_per_sequence(gemma, 1000) == per_token_layer * 42 * 1000  # shorter than the window
    assert m03.kv_bytes_per_sequence(mistral, 32768) == m03.kv_cache_bytes(mistral, 1, 4096)  # a rolling buffer
    llama = checks_m03.model("llama3_8b", 2, 2)
    assert m03.kv_bytes_per_sequence(llama, 5000) == m03.kv_cache_bytes(llama, 1, 5000)
    out = m03.decode_bound(gemma, 16, 8192, 3350)
    assert out["kv_cache_bytes"] == 16 * per_token_layer * 21 * 12288


def test_model_parameters_follow_from_their_shapes():
    """params of the windowed models: Gemma 2 9B from the paper's non-embedding count, Mistral 7B from Table 1."""
    gemma = 42 * (3584 * 4096 * 2 + 3584 * 2048 * 2 + 3 * 3584 * 14336 + 4 * 3584) + 3584 + 256000 * 3584
    assert gemma - 256000 * 3584 == 8_324_201_984
    mistral = 32 * (4096 * 4096 * 2 + 4096 * 1024 * 2 + 3 * 4096 * 14336 + 2 * 4096) + 4096 + 2 * 32000 * 4096
    assert checks_m03.models()["gemma2_9b"]["params"] == pytest.approx(gemma, rel=1e-4)
    assert checks_m03.models()["mistral_7b"]["params"] == pytest.approx(mistral, rel=1e-4)


def test_serving_70b_on_an_h200_leaves_ten_billion_bytes():
    """The lesson's numbers: 141 GiB less 141.1 x 10^9 bytes of bf16 weights; 320 KiB of KV per token."""
    rows, model = checks_m03.datasheets(), checks_m03.model("llama3_70b", 2, 2)
    left = m03.memory_bytes(rows["h200_sxm"]) - model["params"] * 2
    assert left == pytest.approx(10.29e9, rel=1e-3) and m03.kv_cache_bytes(model, 1, 1) == 320 * 1024
    assert m03.serve_plan(model, rows["h200_sxm"], 8192, 60.0) == {"max_batch": 3, "batch": 2}
    assert m03.serve_plan(model, rows["h100_sxm"], 8192, 1.0) == {"max_batch": 0, "batch": None}


def test_serving_hits_the_compute_roof():
    rows, model = checks_m03.datasheets(), checks_m03.model("llama3_8b", 2, 2)
    roof = m03.dense_tflops(rows["h100_sxm"]) * 1e12 / (2 * model["params"])  # ~61,600 tokens/s
    assert m03.serve_plan(model, rows["h100_sxm"], 128, 0.99 * roof)["batch"] is not None
    assert m03.serve_plan(model, rows["h100_sxm"], 128, 1.01 * roof)["batch"] is None


def test_serving_bisection_finds_the_smallest_batch():
    rng = random.Random(3)
    for case in m03.HIDDEN["serve"](rng):
        plan = m03._plan(case["model"], case["row"], case["context"])
        batch = m03.serve_plan(case["model"], case["row"], case["context"], case["target_tokens_per_s"])["batch"]
        scan = next((b for b in range(1, plan["max_batch"] + 1) if plan["rate"](b) >= case["target_tokens_per_s"]), None)
        assert batch == scan


# ---------------------------------------------------------------- the simulated GPU
def _devices():
    return [c["device"] for c in checks_m03._debug_visible()] + \
           [c["device"] for c in m03.HIDDEN["debug"](random.Random(7))]


@pytest.mark.parametrize("spec", _devices(), ids=lambda s: s["name"])
def test_a_sound_measurement_reads_the_devices_bandwidth(spec):
    assert m03.copy_bandwidth_gbs(SimulatedGPU(spec)) == pytest.approx(spec["hbm_gbs"], rel=0.01)


def test_the_rules_the_task_states_measure_every_hidden_device():
    """Buffers 4x the cache, a warm-up, synchronized samples of 1 ms: within 2 % on any device the grader draws."""
    for seed in range(200):
        for case in m03.HIDDEN["debug"](random.Random(seed)):
            spec = case["device"]
            assert m03.copy_bandwidth_gbs(SimulatedGPU(spec)) == pytest.approx(spec["hbm_gbs"], rel=0.02), (seed, spec)


def test_each_planted_bug_moves_the_number_as_it_does_on_real_hardware():
    truth = EXAMPLE["hbm_gbs"]
    gbs = {name: fn(SimulatedGPU(EXAMPLE)) for name, fn in m03.MISTAKES_COPY.items()}
    assert gbs["no_synchronize"] > 10 * truth           # the clock stopped at the launch
    assert gbs["no_warm_up"] < 0.1 * truth               # page mapping timed
    assert gbs["reads_only"] == pytest.approx(truth / 2, rel=0.01)
    assert gbs["gib"] == pytest.approx(truth / 1.073741824, rel=0.01)
    assert 0.9 * truth < gbs["short_sample"] < 0.98 * truth  # a launch per 140 µs sample
    mi300x_like = checks_m03._debug_visible()[1]["device"]
    assert m03.MISTAKES_COPY["fits_in_cache"](SimulatedGPU(mi300x_like)) > 2 * mi300x_like["hbm_gbs"]


def test_the_simulated_gpu_is_asynchronous_and_deterministic():
    dev = SimulatedGPU(EXAMPLE)
    src, dst = dev.empty(2**30), dev.empty(2**30)
    start = dev.clock()
    dev.copy_(dst, src)
    assert dev.clock() - start == pytest.approx(EXAMPLE["launch_us"] * 1e-6, abs=1e-6)  # returns at once
    dev.synchronize()
    assert dev.clock() - start > 2 * 2**30 / (EXAMPLE["hbm_gbs"] * 1e9)
    assert dev.report()["clock_reads_while_busy"] == 1 and dev.report()["timed_mapping"] == 2
    assert m03.copy_bandwidth_gbs(SimulatedGPU(EXAMPLE)) == m03.copy_bandwidth_gbs(SimulatedGPU(EXAMPLE))


def test_waiting_on_the_simulated_clock_ends():
    dev = SimulatedGPU(EXAMPLE)
    start = dev.clock()
    while dev.clock() - start < 1e-3:  # a busy wait, as a budget loop does
        pass
    assert dev.report()["clock_reads"] > 1000


def test_the_simulated_gpu_refuses_what_a_gpu_refuses():
    dev = SimulatedGPU(EXAMPLE)
    with pytest.raises(MemoryError):
        dev.empty(81 * 2**30)
    a, b = dev.empty(4096), dev.empty(8192)
    with pytest.raises(ValueError):
        dev.copy_(a, b)
    with pytest.raises(ValueError):
        dev.copy_(a, a)


# ---------------------------------------------------------------- the sweep's reading
def test_sweep_knee_and_plateaus():
    llc = 32 * 2**20
    sizes = checks_m03.sweep_sizes(llc)
    assert sizes[0] == 16 * 1024 and sizes[-1] == 8 * llc and sizes == sorted(set(sizes))
    stepped = [100.0 if s <= llc / 4 else 20.0 for s in sizes]
    assert analysis.sweep_plateaus(sizes, stepped, llc) == (100.0, 20.0)
    assert analysis.sweep_knee(sizes, stepped, llc) == llc / 4
    assert analysis.sweep_knee(sizes, [50.0] * len(sizes), llc) is None


def test_sweep_sizes_reach_past_the_cache_by_the_factor_asked():
    """The sweep ends at the first size at or past beyond x LLC, whatever the LLC and the start."""
    for llc, start, beyond, per_octave in ((30 * 2**20, 48 * 1024, 6, 1), (36 * 2**20, 80 * 1024, 10, 1),
                                           (1_310_720, 96 * 1024, 8, 2), (32 * 2**20, 64 * 1024, 8, 1)):
        sizes = checks_m03.sweep_sizes(llc, start, beyond, per_octave)
        assert sizes[0] == start // 4096 * 4096 and sizes == sorted(set(sizes))
        assert sizes[-1] >= beyond * llc > sizes[-2], (llc, start, beyond)
        assert all(s % 4096 == 0 for s in sizes)
    sizes = checks_m03.sweep_sizes(30 * 2**20, 48 * 1024, 6, 1)
    assert analysis.sweep_plateaus(sizes, [1.0] * len(sizes), 30 * 2**20) == (1.0, 1.0)
    assert math.isclose(analysis.median([3.0, 1.0, 2.0, 10.0]), 2.5) and analysis.median([]) is None
