"""Reference answers of module 03 against independent facts (torch element sizes, spec sheets, algebra)."""
import math

import pytest
import torch

from autograder import profiles
from autograder.modules.m03_memory_hierarchy import analysis
from autograder.modules.m03_memory_hierarchy import tasks as checks_m03
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
    assert mm["intensity"] == pytest.approx(4096 / 3)  # square bf16 matmul: n/3
    rect = m03.arithmetic_intensity("matmul", [2, 3, 4], "fp8")
    assert rect["flops"] == 48 and rect["bytes"] == 6 + 12 + 8


@pytest.mark.parametrize("op,shape,dtype", [("conv", [3], "fp32"), ("add", [3, 3], "fp32"),
                                            ("matmul", [0, 2, 2], "fp32"), ("add", [4], "fp128")])
def test_intensity_rejects_bad_input(op, shape, dtype):
    with pytest.raises(ValueError):
        m03.arithmetic_intensity(op, shape, dtype)


def test_h100_bf16_ridge_is_about_295():
    h100 = profiles.get("h100_sxm")
    assert m03.ridge_point(h100.peak("bf16"), h100.bandwidth_gbs) == pytest.approx(989.4 / 3.35, rel=1e-12)
    assert round(m03.ridge_point(h100.peak("bf16"), h100.bandwidth_gbs)) == 295


def test_roofline_point_bounds_and_ridge_edge():
    below = m03.roofline_point(100.0, 1000.0, 10.0)
    assert below == {"ridge": 100.0, "attainable_tflops": 10.0, "bound": "memory"}
    at = m03.roofline_point(100.0, 1000.0, 100.0)
    assert at["bound"] == "compute" and at["attainable_tflops"] == 100.0
    assert m03.roofline_point(100.0, 1000.0, 1e4)["attainable_tflops"] == 100.0


def test_h200_same_ridge_formula_lower_ridge():
    h100, h200 = profiles.get("h100_sxm"), profiles.get("h200_sxm")
    assert h100.peak("bf16") == h200.peak("bf16")
    r100 = m03.roofline_for_profile(h100, "bf16", 1.0)
    r200 = m03.roofline_for_profile(h200, "bf16", 1.0)
    assert r200["attainable_tflops"] / r100["attainable_tflops"] == pytest.approx(4800 / 3350)


def test_compute_bound_batch_for_h100_linear_layer():
    h100 = profiles.get("h100_sxm")
    b = m03.compute_bound_batch(h100.peak("bf16"), h100.bandwidth_gbs, 8192, 8192)
    ridge = m03.ridge_point(h100.peak("bf16"), h100.bandwidth_gbs)
    assert m03.matmul_intensity_for_batch(b, 8192, 8192) >= ridge > m03.matmul_intensity_for_batch(b - 1, 8192, 8192)
    assert b == math.ceil(ridge * 8192 / (8192 - 2 * ridge))  # closed form B = R d / (d - 2R)
    assert m03.compute_bound_batch(h100.peak("bf16"), h100.bandwidth_gbs, 256, 256) is None  # never reaches 295


def test_llama3_8b_kv_cache_per_token():
    model = {"params": 8.03e9, "layers": 32, "kv_heads": 8, "head_dim": 128, "weight_bytes": 2, "kv_bytes": 2}
    assert m03.kv_cache_bytes(model, batch=1, context=1) == 128 * 1024  # 2 x 32 x 8 x 128 x 2 bytes
    out = m03.decode_bound(model, batch=1, context=0, bandwidth_gbs=3350)
    assert out["tokens_per_s"] == pytest.approx(3350e9 / (8.03e9 * 2))
    assert out["step_s"] * out["tokens_per_s"] == pytest.approx(1.0)


def test_h100_on_chip_capacity_matches_whitepaper():
    cap = m03.on_chip_capacity(profiles.get("h100_sxm").spec)
    assert cap["registers_kb"] == 33792            # whitepaper: register file size / GPU
    assert cap["smem_kb"] == 132 * 228
    assert cap["l2_kb"] == 50 * 1024
    assert cap["total_kb"] == cap["registers_kb"] + cap["smem_kb"] + cap["l2_kb"]


def test_sweep_knee_and_plateaus():
    llc = 32 * 2**20
    sizes = checks_m03.sweep_sizes(llc)
    assert sizes[0] == 64 * 1024 and sizes[-1] == 8 * llc and sizes == sorted(set(sizes))
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
    # enough sets beyond the cache for the slow plateau (>= 4 x LLC) and below it for the fast one
    sizes = checks_m03.sweep_sizes(30 * 2**20, 48 * 1024, 6, 1)
    assert analysis.sweep_plateaus(sizes, [1.0] * len(sizes), 30 * 2**20) == (1.0, 1.0)


def test_roof_coverage_rules():
    peak, bw = 989.4, 3350.0
    ridge = m03.ridge_point(peak, bw)
    xs, ys = analysis.roof_vertices(peak, bw, ridge / 100, ridge * 100)
    assert analysis.roof_coverage([{"x": xs, "y": ys}], peak, bw) == {"memory": True, "compute": True}
    # two straight lines that cross the roof are not the roof
    full = [{"x": [0.1, 1e4], "y": [0.1 * bw / 1e3, 1e4 * bw / 1e3]}, {"x": [0.1, 1e4], "y": [peak, peak]}]
    assert analysis.roof_coverage(full, peak, bw) == {"memory": False, "compute": False}
    only_memory = [{"x": [ridge / 100, ridge], "y": [ridge / 100 * bw / 1e3, peak]}]
    assert analysis.roof_coverage(only_memory, peak, bw) == {"memory": True, "compute": False}


def test_plot_roofline_reference_figure():
    import matplotlib.pyplot as plt
    fig = m03.plot_roofline(100.0, 1000.0, [{"label": "a", "intensity": 1.0, "tflops": 0.5}])
    try:
        ax = fig.axes[0]
        assert ax.get_xscale() == ax.get_yscale() == "log"
        assert list(ax.collections[0].get_offsets()[0]) == [1.0, 0.5]
    finally:
        plt.close(fig)
