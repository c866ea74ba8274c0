"""Module 05: reference answers and data checked against independent facts (spec sheets, nccl-tests, published figures)."""
import json
import math
import re
from pathlib import Path

import pytest

from autograder import layout, profiles, ranks
from autograder.modules.m05_networking import lesson, logs, tables
from course_answers import m05_networking as m05

ROOT = Path(__file__).resolve().parents[3]


def pcie(gen):
    return next(row for row in tables.pcie_links() if row["gen"] == gen)


def nvlink(gen):
    return next(row for row in tables.nvlink_links() if row["gen"] == gen)


def markdown(lang: str) -> str:
    cells = json.loads(layout.lesson("05_networking", lang, ROOT).read_text(encoding="utf-8"))["cells"]
    return "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")


# ---------------------------------------------------------------- units and links
def test_gib_count_is_about_6_9_percent_smaller_in_both_lessons():
    """A count in GiB is 1/1.0737 of the count in GB: 6.9% smaller; the GB count is 7.4% larger (issue 17, item 6)."""
    assert 1 - 1e9 / 2**30 == pytest.approx(0.0687, abs=1e-4) and 2**30 / 1e9 - 1 == pytest.approx(0.0737, abs=1e-4)
    for lang in ("ko", "en"):
        units = markdown(lang).split('<a id="sec-links">')[0]
        assert "6.9%" in units and "7.4%" in units, lang


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
    assert m05.link_gbs(pcie(4), 16) == pytest.approx(31.5, abs=0.02)  # the often-quoted "32 GB/s"
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
    # NVLink 4 = 25 GB/s per direction per link, 18 links: 450 / 900 GB/s
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


# ---------------------------------------------------------------- SuperPods: all-reduce and all-to-all
def test_superpod_reference_architecture():
    pod = tables.superpod("superpod_h100")
    result = m05.superpod(pod["levels"])
    assert result["allreduce_gbs"] == 400.0 and result["allreduce_level"] == "leaf"
    assert result["alltoall_gbs"] == pytest.approx(50 * 1023 / 1016) and result["alltoall_level"] == "leaf"
    leaf, spine = pod["levels"][1], pod["levels"][2]
    assert leaf["links"] == leaf["gpus"]  # one NDR NIC per GPU
    assert spine["links"] == 1024  # RA Table 4: 1024 spine-leaf cables for 4 SU


def test_superpod_node_count_is_one_node_fewer_in_all():
    """The DGX H100 RA builds 127 nodes (1,016 GPUs) for 4 SU, not 124 (one node fewer per SU) (issue 17, item 5)."""
    text = (Path(tables.DATA) / "superpod.yaml").read_text(encoding="utf-8")
    assert "127 nodes" in text and "1016 GPUs" in text and "per SU goes" not in text
    assert 127 * 8 + 4 == 1020  # the RA's node/UFM-to-leaf cables: every node's 8 plus the 4 UFM appliances
    for lang, words in (("en", ("1,016", "127", "124", "992")), ("ko", ("1,016", "127", "124", "992"))):
        section = markdown(lang).split('<a id="sec-superpod">')[1].split('<a id="sec-collectives">')[0]
        assert all(w in section for w in words), lang


def test_oversubscription_shows_in_the_all_to_all_not_in_the_all_reduce():
    levels = [dict(level) for level in tables.superpod("superpod_b200")["levels"]]
    full = m05.superpod(levels)
    levels[2]["links"] //= 4  # 4:1 leaf-to-spine
    thin = m05.superpod(levels)
    assert thin["allreduce_gbs"] == full["allreduce_gbs"] == 400.0 and thin["allreduce_level"] == "leaf"
    assert thin["alltoall_level"] == "spine" and thin["alltoall_gbs"] == pytest.approx(12.5 * 1023 / 768)
    levels[2]["links"] = 16  # 64:1: now the spine sets the all-reduce too
    starved = m05.superpod(levels)
    assert starved["allreduce_level"] == "spine" and starved["allreduce_gbs"] == pytest.approx(256 * 16 * 50 / 1024)


def test_all_to_all_busbw_from_first_principles():
    """Each GPU sends S/N to every GPU; what leaves a unit of g GPUs, S(N-g)/N, crosses the level above."""
    levels = [{"name": "node", "gpus": 4, "links": 8, "link_rate": 100, "unit": "GB/s"},
              {"name": "leaf", "gpus": 16, "links": 16, "link_rate": 400, "unit": "Gb/s"}]
    n, s = 16, 1.0
    t_node, t_leaf = s * (n - 1) / n / 200, s * (n - 4) / n / 50  # r = 200 and 50 GB/s per GPU
    busbw = s * (n - 1) / n / max(t_node, t_leaf)
    assert m05.superpod(levels)["alltoall_gbs"] == pytest.approx(busbw)


# ---------------------------------------------------------------- buckets
def test_bucket_fraction_is_the_busbw_of_the_alpha_beta_model():
    n, alpha, beta, size = 8, 5e-6, 450.0, 25e6
    t = 2 * (n - 1) * alpha + 2 * (n - 1) / n * size / (beta * 1e9)
    busbw = ranks.bus_bandwidth("all_reduce", size, t, n)
    out = m05.bucket(n, alpha, beta, size, 0.8)
    assert out["fraction"] == pytest.approx(busbw / beta)
    assert out["min_bytes"] == 72_000_000  # 0.8/0.2 x 8 x 5 us x 450 GB/s: DDP's 25 MB reaches only 58%
    smallest = out["min_bytes"]
    assert m05.bucket(n, alpha, beta, smallest, 0.8)["fraction"] >= 0.8 - 1e-12
    assert m05.bucket(n, alpha, beta, smallest - 1, 0.8)["fraction"] < 0.8


# ---------------------------------------------------------------- nccl-tests logs
def test_published_log_reads_as_nccl_tests_wrote_it():
    log = tables.nccl_log("allreduce_2x8xh100")
    assert log["sources"] and log["collective"] == "all_reduce"
    out = m05.read_nccl(log["text"], "all_reduce", 2**30, 16)
    assert out["ranks_in_log"] == 16 and out["busbw_gbs"] == 338.82
    rows = [line.split() for line in log["text"].splitlines() if line.strip() and not line.startswith("#")]
    avg = sum(float(r[7]) + float(r[11]) for r in rows) / (2 * len(rows))
    assert avg == pytest.approx(70.742, abs=2e-3)  # "Avg bus bandwidth": every size and both runs (unrounded)
    for r in rows:  # busbw = algbw x 2(n-1)/n, to the printed precision
        assert float(r[7]) == pytest.approx(float(r[6]) * 30 / 16, abs=0.02)


@pytest.mark.parametrize("collective", sorted(logs.PROGRAM))
@pytest.mark.parametrize("n", [2, 3, 8, 16])
def test_modelled_logs_give_back_their_ranks_and_plateau(collective, n):
    sizes = [2 ** k for k in range(10, 33)]
    text = logs.modelled_log(collective, n, 1e-5, 180.0, sizes, seed=n, gpus_per_node=None)
    assert "modelled" in text.splitlines()[0] and "Rank" not in text
    out = m05.read_nccl(text, collective, 1e9, n)
    assert out["ranks_in_log"] == n
    assert 0.95 * 180 < out["busbw_gbs"] <= 180.0
    listed = logs.modelled_log(collective, n, 1e-5, 180.0, sizes, seed=n)
    assert len(re.findall(r"^#\s+Rank\s+\d+", listed, re.M)) == n


# ---------------------------------------------------------------- how far a model scales
def test_plan_step_model():
    h100 = {"name": "h", "bf16_tflops": 1000.0, "mfu": 0.5, "gpus_per_node": 8, "nvlink_gbs": 450.0, "nic_gbs": 50.0,
            "in_network": False}
    job = {"params": 1e9, "tokens": 1e6, "target_s": 10.0, "max_gpus": 64}
    flops = 6e15 / (8 * 500e12)
    comm = 2 * 7 / 8 * 2e9 / 450e9
    assert m05._step_s(job, h100, 8) == pytest.approx(flops / 3 + max(2 * flops / 3, comm))
    beyond = 2 * 15 / 16 * 2e9 / 400e9  # W = min(NVLink, 8 NICs x 50) = 400 GB/s
    assert m05._step_s(job, h100, 16) == pytest.approx(flops / 6 + max(flops / 3, beyond))
    assert m05._step_s(job, {**h100, "in_network": True}, 16) == pytest.approx(flops / 6 + max(flops / 3, 2e9 / 400e9))


def test_plan_finds_the_communication_floor():
    """A 7B model at 2^18 tokens per step: a ring's all-reduce (~70 ms) floors the step, in-network halves it."""
    ring = {"name": "ring", "bf16_tflops": 989.4, "mfu": 0.4, "gpus_per_node": 8, "nvlink_gbs": 450.0, "nic_gbs": 50.0,
            "in_network": False}
    job = {"params": 7e9, "tokens": 2**18, "target_s": 0.06, "max_gpus": 8192}
    assert m05.plan(job, [ring]) is None  # no GPU count beats the ring's 2 x 14 GB / 400 GB/s = 70 ms
    found = m05.plan(job, [ring, {**ring, "name": "sharp", "in_network": True}])
    assert found["system"] == "sharp" and found["gpus"] % 8 == 0 and found["step_s"] <= 0.06


# ---------------------------------------------------------------- busbw factors and lesson helpers
def test_busbw_factors_match_nccl_tests_table():
    """The lesson's table (data/collectives.yaml, as nccl-tests writes it) and the rule the course computes with."""
    table = tables.data("collectives")["busbw_factors"]
    assert set(table) == set(ranks.BUSBW_FACTORS)
    for op, formula in table.items():
        for n in (2, 3, 8, 64):
            assert ranks.BUSBW_FACTORS[op](n) == pytest.approx(eval(formula, {"__builtins__": {}}, {"n": n}))
    # 8xH100 NVLS: algbw ~275 -> busbw ~480 with the ring factor (issue #212)
    assert ranks.bus_bandwidth("all_reduce", 275e9, 1.0, 8) == pytest.approx(481.25)
    measured = tables.data("collectives")["measured_allreduce_8xh100"]
    assert measured["nvls_busbw_gbs"] / measured["ring_busbw_gbs"] == pytest.approx(1.3, abs=0.01)  # not 2x


def test_lesson_leads_with_the_ring_bound():
    """Data parallelism: C/W with a ring (~2,200 on H100), in-network C/(2W) as the best case, measured 1.3x (item 3)."""
    c = profiles.get("h100_sxm").peak("bf16") * 1e12
    assert math.ceil(c / 450e9) == 2199 and math.ceil(c / 400e9) == 2474 and math.ceil(c / 900e9) == 1100
    for lang in ("ko", "en"):
        roofline = markdown(lang).split('<a id="sec-roofline">')[1].split('<a id="sec-practice">')[0]
        assert roofline.index("C / W") < roofline.index("C / (2W)"), lang
        assert all(w in roofline for w in ("2,200", "1,100", "1.3", "2,470")), lang


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
