"""The hardware profile data (autograder/data/profiles.yaml) and its loader."""
import re

import pytest

from autograder import profiles
from autograder.profiles import DTYPES, Profile

ALL = profiles.all_of()
IDS = [p.id for p in ALL]
GPUS = [p for p in ALL if p.kind == "gpu"]


def test_loads_expected_devices():
    expected = {
        "v100_sxm2_32gb", "a100_sxm_40gb", "a100_sxm_80gb", "a100_pcie_40gb", "a100_pcie_80gb",
        "h100_sxm", "h100_pcie", "h200_sxm", "b200", "b300", "gb200", "gb300",
        "rtx_3090", "rtx_4090", "rtx_5090", "l4", "t4", "mi300x", "mi325x", "mi355x",
        "m1", "m1_pro", "m1_max", "m1_ultra", "m2", "m2_pro", "m2_max", "m2_ultra",
        "m3", "m3_pro", "m3_max", "m3_ultra", "m4", "m4_pro", "m4_max",
        "tpu_v4", "tpu_v5e", "tpu_v5p", "tpu_v6e", "tpu7x", "trainium2",
    }
    assert expected <= set(IDS)
    assert "b100" not in IDS  # announced 2024, not shipped in volume: no profile
    assert profiles.load() is profiles.load()  # cached


@pytest.mark.parametrize("p", ALL, ids=IDS)
def test_required_fields_and_sources(p):
    for key in profiles.REQUIRED:
        assert key in p.spec, key
    assert p.kind in ("gpu", "apple", "tpu", "trainium")
    assert isinstance(p.spec["year"], int) and 2015 <= p.spec["year"] <= 2030
    assert p.sources and all(re.match(r"https?://\S+$", url) for url in p.sources)
    assert p.spec["match"] and all(isinstance(m, str) for m in p.spec["match"])
    assert p.label and p.name
    assert p.bandwidth_gbs is not None and p.memory_gib is not None


@pytest.mark.parametrize("p", ALL, ids=IDS)
def test_peaks_positive_known_dtypes_and_dense_not_above_sparse(p):
    for table in (p.peak_tflops, p.sparse_tflops):
        assert set(table) <= set(DTYPES)
        assert all(v > 0 for v in table.values())
    for dtype, sparse in p.sparse_tflops.items():
        dense = p.peak_tflops.get(dtype)
        assert dense is not None, f"{dtype}: sparse figure without a dense one"
        assert dense <= sparse
        assert sparse == pytest.approx(2 * dense, rel=0.02), f"{dtype}: sparse is 2x dense"
    acc16 = p.spec.get("fp16_fp16acc_tflops")
    if acc16 is not None:
        assert acc16 >= p.peak_tflops["fp16"]


@pytest.mark.parametrize("p", ALL, ids=IDS)
def test_units(p):
    if p.kind == "apple":
        assert 50 <= p.bandwidth_gbs <= 1000
    else:
        assert 50 <= p.bandwidth_gbs <= 20000
        assert 4 <= p.memory_gib <= 300
    base, boost = p.spec.get("base_clock_mhz"), p.spec.get("boost_clock_mhz")
    if base is not None and boost is not None:
        assert 300 <= base <= boost <= 4000
    if p.spec.get("tdp_w") is not None:
        assert 10 <= p.spec["tdp_w"] <= 2000


@pytest.mark.parametrize(
    "p", [p for p in GPUS if p.vendor == "NVIDIA" and p.spec["segment"] == "datacenter"
          and p.spec["arch"] not in ("Volta", "Turing")], ids=lambda p: p.id)
def test_precision_ladder_nvidia_datacenter(p):
    fp32, tf32, bf16 = (p.peak(d) for d in ("fp32", "tf32", "bf16"))
    if None not in (fp32, tf32, bf16):
        assert fp32 <= tf32 <= bf16


CHECKABLE = [p for p in GPUS if all(p.spec.get(k) for k in
             ("sms", "tensor_cores_per_sm", "fp32_lanes_per_sm", "boost_clock_mhz"))
             and p.spec.get("fp32_at_boost", True) and "fp32" in p.peak_tflops]


def test_fp32_recompute_covers_the_main_gpus():
    assert {"h100_sxm", "a100_sxm_80gb", "rtx_4090", "t4", "v100_sxm2_32gb"} <= {p.id for p in CHECKABLE}


@pytest.mark.parametrize("p", CHECKABLE, ids=lambda p: p.id)
def test_fp32_peak_recomputes_from_sms_lanes_and_boost(p):
    s = p.spec
    recomputed = 2 * s["sms"] * s["fp32_lanes_per_sm"] * s["boost_clock_mhz"] * 1e6 / 1e12
    assert recomputed == pytest.approx(p.peak("fp32"), rel=0.03)


def test_known_figures_and_traps():
    h100 = profiles.get("h100_sxm")
    assert h100.peak("bf16") == 989.4 and h100.peak("bf16", sparse=True) == 1978.9
    assert (h100.peak("tf32"), h100.peak("fp32"), h100.peak("fp64")) == (494.7, 66.9, 33.5)
    assert h100.bandwidth_gbs == 3350 and h100.get("sms") == 132 and h100.get("l2_mb") == 50
    assert profiles.get("h100_pcie").get("sms") == 114
    assert profiles.get("h100_pcie").peak("bf16") == 756
    h200 = profiles.get("h200_sxm")
    assert h200.peak_tflops == h100.peak_tflops and h200.memory_gib == 141 and h200.bandwidth_gbs == 4800
    rtx = profiles.get("rtx_4090")
    assert rtx.peak("bf16") == 165.2 and rtx.get("fp16_fp16acc_tflops") == 330.3
    assert profiles.get("a100_sxm_80gb").peak("torch.bfloat16") == 312
    assert profiles.get("v100_sxm2_32gb").peak("bf16") is None


def test_current_generation_figures():
    """Blackwell Ultra, CDNA 3/4, TPU v6e/7x and Trainium2: dense per-chip peaks and binary capacities."""
    b200, b300, gb300 = (profiles.get(i) for i in ("b200", "b300", "gb300"))
    assert b200.get("pcie.gen") == 5 and b300.get("pcie.gen") == 6  # HGX B200 runs Gen5 x16; Gen6 from HGX B300
    assert (b300.peak("bf16"), b300.peak("fp8"), b300.peak("fp4"), b300.memory_gib) == (2250, 4500, 14000, 270)
    assert (gb300.peak("bf16"), gb300.peak("fp4"), gb300.memory_gib, gb300.bandwidth_gbs) == (2500, 15000, 279, 8000)
    for p in (b300, gb300):  # FP4 with sparsity is not twice dense on Blackwell Ultra: not stored
        assert p.peak("fp4", sparse=True) is None and p.peak("int8") is None
    assert profiles.get("mi325x").peak_tflops == profiles.get("mi300x").peak_tflops
    assert profiles.get("mi325x").memory_gib == 256 and profiles.get("mi355x").memory_gib == 288
    assert profiles.get("mi355x").peak("bf16") == 2516.6 and profiles.get("mi355x").peak("tf32") is None
    v6e, v7 = profiles.get("tpu_v6e"), profiles.get("tpu7x")
    assert (v6e.peak("bf16"), v6e.memory_gib, v6e.bandwidth_gbs) == (918, 32, 1638)
    assert (v7.peak("bf16"), v7.peak("fp8"), v7.memory_gib) == (2307, 4614, 192)
    trn2 = profiles.get("trainium2")
    assert trn2.kind == "trainium" and (trn2.peak("bf16"), trn2.peak("fp8"), trn2.memory_gib) == (667, 1299, 96)
    assert trn2.sparse_tflops == {}


def test_peak_dtype_names_and_bad_dtype():
    h100 = profiles.get("h100_sxm")
    assert h100.peak("bfloat16") == h100.peak("BF16") == h100.peak("bf16")
    assert h100.peak("float8_e4m3fn") == h100.peak("fp8")
    with pytest.raises(ValueError, match="float13") as err:
        h100.peak("float13")
    assert "자료형" in str(err.value) and "dtype" in str(err.value)


def test_get_unknown_id_is_bilingual_and_lists_ids():
    with pytest.raises(KeyError) as err:
        profiles.get("h100")
    text = str(err.value)
    assert "h100_sxm" in text and "프로파일" in text and "Unknown hardware profile" in text


def test_spec_get_dotted_and_default():
    p = profiles.get("a100_sxm_80gb")
    assert p.get("memory.type") == "HBM2e"
    assert p.get("interconnect.nvlink_links") == 12
    assert p.get("no.such.key", "dflt") == "dflt"
    assert p.get("base_clock_mhz", 0) == 0  # null in the data -> default


@pytest.mark.parametrize("name, expected", [
    ("NVIDIA H100 80GB HBM3", "h100_sxm"),
    ("NVIDIA H100 PCIe", "h100_pcie"),
    ("NVIDIA A100-SXM4-80GB", "a100_sxm_80gb"),
    ("NVIDIA A100-SXM4-40GB", "a100_sxm_40gb"),
    ("NVIDIA A100 80GB PCIe", "a100_pcie_80gb"),
    ("NVIDIA A100-PCIE-40GB", "a100_pcie_40gb"),
    ("NVIDIA GeForce RTX 4090", "rtx_4090"),
    ("NVIDIA GeForce RTX 3090", "rtx_3090"),
    ("NVIDIA GeForce RTX 5090", "rtx_5090"),
    ("NVIDIA H200", "h200_sxm"),
    ("NVIDIA B200", "b200"),
    ("NVIDIA GB200", "gb200"),
    ("NVIDIA B300 SXM6 AC", "b300"),
    ("NVIDIA GB300", "gb300"),
    ("AMD Instinct MI325X", "mi325x"),
    ("AMD Instinct MI355X", "mi355x"),
    ("Tesla V100-SXM2-32GB", "v100_sxm2_32gb"),
    ("Tesla T4", "t4"),
    ("NVIDIA L4", "l4"),
    ("AMD Instinct MI300X", "mi300x"),
    ("Apple M3 Max", "m3_max"),
    ("Apple M2", "m2"),
    ("Apple M1 Pro", "m1_pro"),
    ("Apple M1", "m1"),
    ("Apple M4 Pro", "m4_pro"),
    ("apple   m2   ultra", "m2_ultra"),
    ("TPU v4", "tpu_v4"),
    ("TPU v5 lite", "tpu_v5e"),
    ("TPU v5p", "tpu_v5p"),
    ("TPU v6 lite", "tpu_v6e"),
    ("TPU v6e", "tpu_v6e"),
    ("TPU7x", "tpu7x"),
    ("Trainium2", "trainium2"),
])
def test_match_realistic_names(name, expected):
    found = profiles.match(name)
    assert found is not None and found.id == expected


@pytest.mark.parametrize("name", [
    "H100", "NVIDIA H100", "NVIDIA A100", "NVIDIA H100 NVL", "NVIDIA H200 NVL", "NVIDIA GH200 480GB",
    "Intel(R) Xeon(R) Platinum 8470", "Intel(R) Xeon(R) CPU @ 2.20GHz", "AMD EPYC 7B13",
    "NVIDIA GeForce RTX 4090 Laptop GPU", "NVIDIA GeForce RTX 4090 D", "NVIDIA GeForce RTX 3090 Ti",
    "Tesla V100-SXM2-16GB", "NVIDIA L40S", "cpu", "", None, "Apple M5",
    "NVIDIA B100", "AMD Instinct MI350X", "TPU v7", "Trainium", "Trainium3",
])
def test_match_unknown_or_ambiguous_is_none(name):
    assert profiles.match(name) is None


def test_all_of_and_table():
    assert {p.kind for p in profiles.all_of("apple")} == {"apple"}
    assert len(profiles.all_of("tpu")) == 5
    assert [p.id for p in profiles.all_of("trainium")] == ["trainium2"]
    with pytest.raises(ValueError):
        profiles.all_of("fpga")
    rows = profiles.table(["h100_sxm", "m3_max"], fields=("label", "peak.bf16", "sparse.bf16", "memory.type", "memory_gib"))
    assert rows == [
        {"label": "H100 SXM", "peak.bf16": 989.4, "sparse.bf16": 1978.9, "memory.type": "HBM3", "memory_gib": 80.0},
        {"label": "M3 Max", "peak.bf16": None, "sparse.bf16": None, "memory.type": "LPDDR5", "memory_gib": 128.0},
    ]
    assert len(profiles.table()) == len(ALL)
    with pytest.raises(KeyError):
        profiles.table(["nope"])


def test_measured_profile_constructor_with_defaults():
    p = Profile(id="measured_cpu", name="AMD EPYC (measured)", kind="cpu", vendor="AMD",
                peak_tflops={"fp32": 0.15}, bandwidth_gbs=25.0, memory_gib=8.0, measured=True,
                sources=("measured on this machine",))
    assert p.peak("fp32") == 0.15 and p.peak("bf16") is None and p.peak("fp32", sparse=True) is None
    assert p.label == "AMD EPYC (measured)" and p.get("sms") is None
    assert hash(p) == hash(Profile(id="measured_cpu", name="x", kind="cpu", vendor="AMD", measured=True))
