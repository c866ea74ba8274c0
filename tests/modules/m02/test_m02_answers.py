"""Reference implementations of module 02 against independent facts: torch casts, torch.finfo, the specs."""
import math

import pytest
import torch

from autograder import profiles
from autograder.modules.m02_gpu_architecture import tasks
from course_answers import m02_gpu_architecture as ref
from autograder.modules.m02_gpu_architecture.lesson import E2M1_VALUES, FORMATS, QUOTED_LIMITS, simulate, value_of

TORCH_FORMATS = [name for name, f in FORMATS.items() if f["torch"] and name != "fp32"]


def same(a: float, b: float) -> bool:
    if math.isnan(b):
        return math.isnan(a)
    return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)


def torch_values(name: str) -> list[float]:
    """Every bit pattern of a 8/16-bit torch dtype, read by torch."""
    dtype = getattr(torch, FORMATS[name]["torch"])
    width = 1 + FORMATS[name]["exp_bits"] + FORMATS[name]["man_bits"]
    codes = torch.arange(2**width, dtype=torch.int64)
    raw = codes.to(torch.uint8) if width == 8 else codes.to(torch.int16)
    return raw.view(dtype).double().tolist()


@pytest.mark.parametrize("name", TORCH_FORMATS)
def test_decode_agrees_with_torch_on_every_pattern(name):
    values = torch_values(name)
    wrong = [b for b, v in enumerate(values) if not same(ref.decode(b, FORMATS[name]), v)]
    assert not wrong, f"{name}: {wrong[:5]}"


def test_decode_e2m1_is_the_mx_table():
    got = [ref.decode(b, FORMATS["e2m1"]) for b in range(16)]
    assert got[:8] == list(E2M1_VALUES)
    assert got[8:] == [-v for v in E2M1_VALUES] and math.copysign(1, got[8]) == -1


def test_decode_rejects_patterns_that_do_not_fit():
    with pytest.raises(ValueError):
        ref.decode(256, FORMATS["e4m3"])


@pytest.mark.parametrize("name", TORCH_FORMATS + ["fp32"])
def test_limits_agree_with_torch_finfo(name):
    info = torch.finfo(getattr(torch, FORMATS[name]["torch"]))
    limits = ref.limits(FORMATS[name])
    assert limits["max"] == info.max and limits["smallest_normal"] == info.smallest_normal
    assert limits["eps"] == info.eps


@pytest.mark.parametrize("name", ["e4m3", "e5m2", "e3m2", "e2m3", "e2m1", "tf32"])
def test_limits_agree_with_the_quoted_spec_values(name):
    limits = ref.limits(FORMATS[name])
    for key, value in QUOTED_LIMITS[name].items():
        if value is not None:
            assert limits[key] == pytest.approx(value, rel=1e-15), key


def test_smallest_subnormal_is_the_pattern_one():
    for name in TORCH_FORMATS:
        assert ref.limits(FORMATS[name])["smallest_subnormal"] == torch_values(name)[1]


def random_float32(n: int, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    bits = torch.randint(-2**31, 2**31 - 1, (n,), generator=g, dtype=torch.int64).to(torch.int32)
    scaled = torch.randn(n, generator=g) * torch.exp2(torch.randint(-30, 30, (n,), generator=g).float())
    return torch.cat([bits.view(torch.float32), scaled])


@pytest.mark.parametrize("name", TORCH_FORMATS)
def test_round_agrees_with_torch_cast_after_clamp(name):
    dtype = getattr(torch, FORMATS[name]["torch"])
    top = ref.limits(FORMATS[name])["max"]
    grid = torch.tensor(sorted({v for v in torch_values(name) if math.isfinite(v)}), dtype=torch.float64)
    ties = ((grid[1:] + grid[:-1]) / 2).float()
    x = torch.cat([random_float32(20_000, 1), ties, torch.tensor([math.inf, -math.inf, math.nan, -0.0, top * 1.01])])
    expected = x.clamp(-top, top).to(dtype).double()
    got = ref.round_to_format(x, FORMATS[name])
    assert torch.equal(torch.isnan(got), torch.isnan(expected))
    keep = ~torch.isnan(expected)
    assert torch.equal(got[keep], expected[keep])
    assert torch.equal(torch.signbit(got[keep]), torch.signbit(expected[keep]))


def test_round_e2m1_ties_go_to_even():
    x = torch.tensor([0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0, 7.0, -0.1, 100.0])
    assert ref.round_to_format(x, FORMATS["e2m1"]).tolist() == [0.0, 1.0, 1.0, 2.0, 2.0, 4.0, 4.0, 6.0, -0.0, 6.0]


def test_round_output_is_representable_for_fp6():
    for name in ("e3m2", "e2m3"):
        grid = {ref.decode(b, FORMATS[name]) for b in range(64)}
        got = ref.round_to_format(torch.randn(2000) * 10, FORMATS[name]).tolist()
        assert set(got) <= grid


def test_mask_keeps_the_largest_with_lower_index_on_ties():
    w = torch.tensor([[1.0, -3.0, 3.0, 0.5, 2.0, 2.0, 2.0, 2.0]])
    assert ref.nm_mask(w, 2, 4).int().tolist() == [[0, 1, 1, 0, 1, 1, 0, 0]]
    assert ref.nm_mask(w, 1, 2).int().tolist() == [[0, 1, 1, 0, 1, 0, 1, 0]]
    assert ref.nm_mask(w, 4, 8).int().tolist() == [[0, 1, 1, 0, 1, 1, 0, 0]]
    random = torch.randn(16, 32)
    mask = ref.nm_mask(random)
    assert mask.reshape(16, -1, 4).sum(-1).eq(2).all()
    kept_min = (random.abs() * mask).reshape(16, -1, 4).masked_fill(~mask.reshape(16, -1, 4), math.inf).amin(-1)
    dropped_max = (random.abs() * ~mask).reshape(16, -1, 4).amax(-1)
    assert (kept_min >= dropped_max).all()


@pytest.mark.parametrize("shape,m", [((3,), 4), ((2, 6), 4), ((2, 2, 4), 4), ((1, 12), 8), ((2, 3), 2)])
def test_mask_rejects_bad_shapes(shape, m):
    with pytest.raises(ValueError):
        ref.nm_mask(torch.ones(shape), m // 2, m)


def test_gpu_numbers_reproduce_the_whitepaper_figures():
    """The lesson's H100 SXM: 1,024 FLOPs per Tensor Core per cycle at the 1.83 GHz the sheet's peak assumes."""
    h100 = profiles.get("h100_sxm")
    spec = {"sms": h100.get("sms"), "tensor_cores_per_sm": h100.get("tensor_cores_per_sm"),
            "fp32_lanes_per_sm": h100.get("fp32_lanes_per_sm"), "boost_clock_mhz": h100.get("boost_clock_mhz"),
            "dense_tensor_tflops": h100.peak("bf16"), "clock_mhz": 1500}
    out = ref.gpu_numbers(spec)
    assert out["cuda_cores"] == 16_896                                 # 132 SMs x 128 lanes
    assert out["vector_fp32_tflops"] == pytest.approx(h100.peak("fp32"), rel=0.01)
    assert out["flops_per_tc_per_cycle"] == 1024                       # not 989.4 / (528 x 1.98 GHz) = 946
    assert out["tensor_clock_mhz"] == pytest.approx(1830, rel=1e-3)
    assert out["tensor_tflops_at_clock"] == pytest.approx(811, rel=1e-3)   # the lesson's 528 x 1,024 x 1.5 GHz
    a100 = profiles.get("a100_sxm_80gb")
    spec = {"sms": 108, "tensor_cores_per_sm": 4, "fp32_lanes_per_sm": 64, "boost_clock_mhz": 1410,
            "dense_tensor_tflops": a100.peak("bf16"), "clock_mhz": 1410}
    out = ref.gpu_numbers(spec)
    assert out["flops_per_tc_per_cycle"] == 512 and out["tensor_clock_mhz"] == pytest.approx(1410, rel=1e-3)


@pytest.mark.parametrize("lang", ["ko", "en"])
def test_the_lesson_and_task_1_agree_on_the_clock_of_the_tensor_peak(lang):
    """The lesson works H100 SXM back to 1,024 FLOPs at 1.83 GHz and scales from that clock; the reference does too,
    and the lesson's GPUs are not task 1's cases."""
    import json
    from pathlib import Path
    from autograder import layout
    from autograder.modules.m02_gpu_architecture.lesson import PEAK_GPUS
    nb = json.loads(layout.lesson("02_gpu_architecture", lang, Path(__file__).resolve().parents[3])
                    .read_text(encoding="utf-8"))
    text = {c["id"]: "".join(c["source"]) for c in nb["cells"]}
    assert "1,024" in text["c15"] and "1.83 GHz" in text["c15"] and "811" in text["c15"]
    assert "m02.PEAK_GPUS" in text["c14"]
    cases = {c["name"] for c in tasks._spec_visible()}
    assert not cases & {profiles.get(pid).label for pid in PEAK_GPUS}
    assert not set(tasks.hidden_gpus()) & set(PEAK_GPUS)


QUOTES = {q["product"]: q for q in tasks.spec_sheets()["quotes"]}


def quote(start: str) -> dict:
    return next(q for name, q in QUOTES.items() if name.startswith(start))


def test_spec_sheet_quotes_cite_a_source_and_agree_with_the_profiles():
    """The printed figures of the visible quotes are the profiles' figures, traps included (issue 17, item 4)."""
    sources = tasks.spec_sheets()["sources"]
    assert all(q["source"] in sources and "https://" in sources[q["source"]] for q in QUOTES.values())
    h100 = profiles.get("h100_pcie")
    assert quote("H100 PCIe")["printed"] == pytest.approx(h100.peak("bf16", sparse=True), rel=1e-3)
    assert ref.dense_peak(quote("H100 PCIe"))["dense_tflops"] == pytest.approx(h100.peak("bf16"), rel=1e-3)
    for pid, start in (("rtx_3090", "RTX 3090"), ("rtx_5090", "RTX 5090")):
        p = profiles.get(pid)
        assert ref.dense_peak(quote(start))["dense_tflops"] == pytest.approx(p.peak("bf16"), rel=1e-3)
        assert quote(start)["printed"] in (p.get("fp16_fp16acc_tflops"), 2 * p.get("fp16_fp16acc_tflops"))
    assert ref.dense_peak(quote("A100, FP16"))["dense_tflops"] == profiles.get("a100_sxm_80gb").peak("fp16")
    assert ref.dense_peak(quote("GB200"))["dense_tflops"] == profiles.get("gb200").peak("bf16")


def test_dense_peak_names_each_trap_once_and_undoes_it():
    q = {"product": "X", "printed": 8 * 2 * 2 * 100 * 1.5, "unit": "TFLOPS", "format": "fp16", "sparsity_footnote": True,
         "accumulate": "fp16", "segment": "consumer", "gpus": 8, "quoted_clock_mhz": 1500, "clock_mhz": 1000}
    out = ref.dense_peak(q)
    assert out == {"dense_tflops": pytest.approx(100.0), "traps": ["clock", "fp16_accumulate", "per_system", "sparse"]}
    assert ref.dense_peak({**q, "segment": "datacenter"})["traps"] == ["clock", "per_system", "sparse"]
    assert ref.dense_peak({**q, "unit": "PFLOPS", "printed": q["printed"] / 1000})["dense_tflops"] == pytest.approx(100.0)


def test_smallest_format_finds_the_named_formats():
    """The values of e2m1 need exactly e2m1 (with no special values); fp16's values need fp16's 5 exponent bits."""
    e2m1 = [ref.decode(b, FORMATS["e2m1"]) for b in range(16)]
    assert {k: ref.smallest_format(e2m1, 1e-12, "none")[k] for k in ("exp_bits", "man_bits")} == {"exp_bits": 2, "man_bits": 1}
    fp16 = [ref.decode(b, FORMATS["fp16"]) for b in range(0x0400, 0x7C00, 37)]          # normal fp16 values
    found = ref.smallest_format(fp16, 1e-12, "ieee")
    assert (found["exp_bits"], found["man_bits"]) == (5, 10) and found["without_exp_bit"] in ("range", "subnormal")
    assert found["without_man_bit"] == "precision"


def test_fit_status_names_range_subnormal_and_precision():
    assert ref.fit_status([1e6], 0.01, 4, 7, "ieee") == "range"
    assert ref.fit_status([3e-4], 0.01, 4, 7, "ieee") == "subnormal"
    assert ref.fit_status([1.3], 0.01, 4, 2, "ieee") == "precision"
    assert ref.fit_status([0.0, 1.0, -2.0], 0.0, 2, 0, "ieee") == "ok"


def test_simulate_matches_torch_and_the_e2m1_table():
    x = torch.randn(1000) * 3
    assert torch.equal(simulate(x, "bf16"), x.bfloat16().float())
    assert set(simulate(x, "e2m1").abs().tolist()) <= set(E2M1_VALUES)
    assert simulate(torch.tensor([1000.0]), "e4m3").item() == 448.0
    assert simulate(torch.tensor([1 + 2**-12]), "tf32").item() == 1.0


@pytest.mark.parametrize("name", ["fp16", "bf16", "e4m3", "e5m2", "e2m1"])
def test_value_of_agrees_with_the_reference_decode(name):
    width = 1 + FORMATS[name]["exp_bits"] + FORMATS[name]["man_bits"]
    patterns = range(2**width) if width <= 8 else range(0, 2**width, 97)
    for bits in patterns:
        assert same(value_of(bits, name), ref.decode(bits, FORMATS[name])), bits
