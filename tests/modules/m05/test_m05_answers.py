"""Module 05: reference answers and data checked against independent facts (spec sheets, nccl-tests, seeds)."""
import math

import pytest

from autograder import profiles, ranks
from autograder.modules.m05_networking import lesson, tables
from course_answers import m05_networking as m05


def pcie(gen):
    return next(row for row in tables.pcie_links() if row["gen"] == gen)


def nvlink(gen):
    return next(row for row in tables.nvlink_links() if row["gen"] == gen)


# ---------------------------------------------------------------- links
def test_encoding_efficiency():
    assert m05.encoding_efficiency("8b/10b") == 0.8
    assert m05.encoding_efficiency("128b/130b") == 128 / 130
    assert m05.encoding_efficiency("1b/1b") == 1.0
    with pytest.raises(ValueError):
        m05.encoding_efficiency("PAM4")


def test_pcie_rates_match_published_figures():
    # Intel FPGA PCIe guide: Gen3 x16 = 15.75 GB/s per direction, doubled for duplex
    assert m05.link_gbs(pcie(3), 16) == pytest.approx(15.75, abs=0.01)
    assert m05.link_gbs(pcie(3), 16, bidirectional=True) == pytest.approx(31.5, abs=0.02)
    assert m05.link_gbs(pcie(1), 1) == pytest.approx(0.25)  # 250 MB/s per lane
    assert m05.link_gbs(pcie(4), 16) == pytest.approx(31.5, abs=0.02)  # seed 001's "32 GB/s"
    # PCI-SIG: PCIe 6.0 x16 = 256 GB/s counting both directions
    assert m05.link_gbs(pcie(6), 16, bidirectional=True) == pytest.approx(256)
    gens = [m05.link_gbs(pcie(g), 1) for g in range(3, 7)]
    assert all(b / a == pytest.approx(2, rel=0.02) for a, b in zip(gens, gens[1:]))  # each generation doubles


def test_nvlink_rows_agree_with_headlines_and_profiles():
    for row in tables.nvlink_links():
        assert m05.link_gbs(row, row["links"], bidirectional=True) == row["total_gbs_bidir"]
    for pid, gen in (("v100_sxm2_32gb", 2), ("a100_sxm_80gb", 3), ("h100_sxm", 4), ("b200", 5), ("gb200", 5)):
        prof = profiles.get(pid)
        row = nvlink(gen)
        assert prof.get("interconnect.nvlink_gen") == gen
        assert prof.get("interconnect.nvlink_links") == row["links"]
        assert prof.get("interconnect.nvlink_gbs_per_link_per_dir") == row["gbs_per_link_per_dir"]
        assert prof.get("interconnect.total_gbs_bidir") == row["total_gbs_bidir"]
    # the brief's correction of seed 001: NVLink 4 = 25 GB/s per direction per link, 18 links, 450 / 900 GB/s
    assert m05.link_gbs(nvlink(4), 18) == 450
    assert m05.link_gbs(nvlink(4), 18, bidirectional=True) == 900


def test_network_ports_in_bits():
    ndr = next(p for p in tables.network_links() if p["name"].endswith("NDR"))
    assert m05.link_gbs(ndr, 1) == 50.0
    assert m05.link_gbs({"kind": "ethernet", "gbit_s": 800}, 2, bidirectional=True) == 400.0


def test_nodes_totals_follow_from_per_gpu_nvlink():
    for node in tables.nodes():
        prof = profiles.get(node["profile"])
        per_dir = prof.get("interconnect.nvlink_links") * prof.get("interconnect.nvlink_gbs_per_link_per_dir")
        total = node["gpus"] * 2 * per_dir / 1000
        assert total == pytest.approx(node["nvlink_total_tbs_bidir"], rel=0.01), node["id"]  # NVL72: 129.6 ~ "130"
        assert node["sources"]
    h100 = next(n for n in tables.nodes() if n["id"] == "dgx_h100")
    assert (h100["gpus"], h100["switches"], h100["nics"], h100["nic_gbit_s"]) == (8, 4, 8, 400)


# ---------------------------------------------------------------- SuperPod
def test_superpod_reference_architecture():
    pod = tables.superpod("superpod_h100")
    result = m05.superpod(pod["levels"])
    assert result["per_gpu_gbs"] == [450.0, 50.0, 50.0]
    assert result["allreduce_gbs"] == 400.0 and result["bottleneck"] == "leaf"
    leaf, spine = pod["levels"][1], pod["levels"][2]
    assert leaf["links"] == leaf["gpus"]  # one NDR NIC per GPU
    assert spine["links"] == 1024  # RA Table 4: 1024 spine-leaf cables for 4 SU


def test_superpod_seed_version_and_its_error():
    result = m05.superpod(tables.superpod("superpod_seed")["levels"])
    assert result["per_gpu_gbs"] == [450.0, 50.0, 25.0]  # seed 004's table
    assert result["allreduce_gbs"] == 400.0 and result["bottleneck"] == "leaf"  # seed: 400 GB/s, set by the leaf


def test_superpod_oversubscribed_spine_becomes_bottleneck():
    levels = [{"name": "node", "gpus": 8, "links": 144, "link_rate": 25, "unit": "GB/s"},
              {"name": "leaf", "gpus": 256, "links": 256, "link_rate": 400, "unit": "Gb/s"},
              {"name": "spine", "gpus": 1024, "links": 16, "link_rate": 400, "unit": "Gb/s"}]
    result = m05.superpod(levels)
    assert result["per_gpu_gbs"][-1] == pytest.approx(800 / 1024)
    assert result["bottleneck"] == "spine" and result["allreduce_gbs"] == pytest.approx(200)


# ---------------------------------------------------------------- cost models and busbw
def test_seed_worked_examples():
    # seed 004: all-gather of bf16[1024, 16384] on 8xH100: (N-1)/N * B / W, not the seed's 9 us
    t = m05.comm_time("all_gather", 1024 * 16384 * 2, 8, 0.0, 450)
    assert t == pytest.approx(65.2e-6, rel=1e-3)
    # seed 001: 40 GB of fp32 gradients, 4 GPUs, PCIe 4.0 x16: ~1.9 s, not "tens of seconds"
    assert m05.comm_time("all_reduce", 40e9, 4, 0.0, m05.link_gbs(pcie(4), 16)) == pytest.approx(1.904, rel=1e-3)


def test_cost_model_relations():
    n, s = 8, 1e9
    ring = m05.comm_time("all_reduce", s, n, 0.0, 450)
    rs = m05.comm_time("reduce_scatter", s, n, 0.0, 450)
    ag = m05.comm_time("all_gather", s, n, 0.0, 450)
    assert ring == pytest.approx(rs + ag)
    assert m05.comm_time("all_reduce_in_network", s, n, 0.0, 450) == pytest.approx(ring * n / (2 * (n - 1)))
    assert m05.comm_time("all_reduce", 1, n, 5e-6, 450) == pytest.approx(2 * 7 * 5e-6, rel=1e-6)  # latency-bound
    assert all(m05.comm_time(op, s, 1, 1e-6, 450) == 0 for op in m05.OPS_TIME)
    with pytest.raises(ValueError):
        m05.comm_time("scatter", s, n, 0.0, 450)


def test_busbw_factors_match_nccl_tests_table():
    """The lesson's table (data/collectives.yaml, as nccl-tests writes it) and the rule the course computes with."""
    table = tables.data("collectives")["busbw_factors"]
    assert set(table) == set(ranks.BUSBW_FACTORS)
    for op, formula in table.items():
        for n in (2, 3, 8, 64):
            assert ranks.BUSBW_FACTORS[op](n) == pytest.approx(eval(formula, {"__builtins__": {}}, {"n": n}))
    # 8xH100 NVLS: algbw ~275 -> busbw ~480 with the ring factor (issue #212)
    assert m05.bus_bandwidth("all_reduce", 275e9, 1.0, 8) == pytest.approx(481.25)
    assert m05.bus_bandwidth is ranks.bus_bandwidth  # one rule: the reference is the core's


# ---------------------------------------------------------------- roofline
def test_min_batch_seed_numbers_and_profiles():
    assert 989e12 / (2 * 450e9) == pytest.approx(1098.9, abs=0.1)  # the seed's "1098"
    assert m05.min_batch(989, 450, "dp", True) == 1099
    assert m05.min_batch(989, 400, "dp", True) == 1237  # seed: 1236
    assert m05.min_batch(989, 400, "fsdp", True) == 2473  # seed: 2472
    assert m05.min_batch(989, 400, "fsdp", False) == m05.min_batch(989, 400, "dp", False)
    assert m05.min_batch_for_profile("h100_sxm", "dp", True) == math.ceil(989.4e12 / 900e9)
    # B200: compute grew with NVLink, so the DP bound is 1250, not the seed's 549
    assert m05.min_batch_for_profile("b200", "dp", True) == 1250
    assert m05.min_batch(100, 100, "dp", True) == 500  # an exact integer is not rounded up
    with pytest.raises(ValueError):
        m05.min_batch(989, 450, "tp", True)


# ---------------------------------------------------------------- lesson helpers
def test_fit_alpha_beta_recovers_the_model():
    n, alpha, beta = 4, 50e-6, 2e9
    sizes = [2**k for k in range(10, 26, 2)]
    times = [2 * (n - 1) * alpha + 2 * (n - 1) / n * s / beta for s in sizes]
    fit = lesson.fit_alpha_beta(sizes, times, n)
    assert fit["alpha_s"] == pytest.approx(alpha, rel=1e-6)
    assert fit["beta_bytes_s"] == pytest.approx(beta, rel=1e-6)


@pytest.mark.parametrize("n", [2, 3, 4, 7])
def test_ring_states_reduce_scatter_then_all_gather(n):
    states = lesson.ring_states(n)
    assert len(states) == 2 * (n - 1) + 1
    after_rs = states[n - 1]["holds"]
    for r in range(n):
        assert after_rs[r][(r + 1) % n] == list(range(n))  # rank r owns the full sum of chunk r+1
    assert all(chunk == list(range(n)) for row in states[-1]["holds"] for chunk in row)


def test_every_data_file_has_sources():
    for name in tables.NAMES:
        assert tables.sources(name), name
