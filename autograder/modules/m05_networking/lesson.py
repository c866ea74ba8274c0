"""The lesson helpers of module 05 (networking): its tables, figures and widgets, the α-β fit of
measured all-reduce times and the chunk-by-chunk states of a ring all-reduce.

Lessons call these so a cell shows the idea in a few lines (the formulas stay in the
cells and are passed in where a figure needs them). The data tables are re-exported
from :mod:`.tables`. Heavy libraries (matplotlib, numpy, torch, ipywidgets) are imported
inside the functions.
"""
from __future__ import annotations

import copy
import shutil
import subprocess
from typing import Callable

from ... import profiles, ranks
from ...lesson import Measured, busy_labels, measure, show_table, t, title
from ...ranks import BUSBW_FACTORS
from .tables import DATA, NAMES, data, nccl_log, network_links, nodes, nvlink_links, pcie_links, sources, superpod
from ...lesson import LABEL

__all__ = ["data", "nccl_log", "network_links", "nodes", "nvlink_links", "pcie_links", "sources", "superpod",
           "show_machine", "show_pcie", "show_nvlink", "show_ports", "plot_link_bars", "show_nodes", "show_topology",
           "show_levels", "plot_levels", "ring_widget", "plot_allreduce_times", "explore_costs",
           "show_busbw_factors", "show_log", "plot_measured_8xh100", "show_allreduce_levels", "show_min_batches",
           "plot_dp_crossing", "measure_allreduce_sizes", "allreduce_in_turns", "show_allreduce", "fit_line", "plot_busbw_fit", "show_sources", "fit_alpha_beta", "ring_states",
           "nvlink_gbs"]

PROFILE_FIELDS = ("label", "interconnect.nvlink_gen", "interconnect.nvlink_links",
                  "interconnect.nvlink_gbs_per_link_per_dir", "interconnect.total_gbs_bidir", "pcie.gen")
NODE_OF = {"a100_sxm_80gb": "dgx_a100", "h100_sxm": "dgx_h100", "h200_sxm": "dgx_h100",  # DGX H200: DGX H100's network
           "b200": "dgx_b200", "gb200": "gb200_nvl72"}
LINKS_GBS = {"NVLink 4 (H100): 450": 450.0, "NVLink 5 (B200): 900": 900.0, "PCIe 5 x16: 63": 16 * 32 * 128 / 130 / 8,
             "PCIe 4 x16: 31.5": 16 * 16 * 128 / 130 / 8, "InfiniBand NDR: 50": 50.0}  # GB/s per direction


def _plt():
    import matplotlib.pyplot as plt
    return plt


def _finish(plt) -> None:
    plt.tight_layout()
    plt.show()


def nvlink_gbs(prof) -> float:
    """NVLink of one GPU, one direction (GB/s): links x GB/s per link, from its device profile."""
    return prof.get("interconnect.nvlink_links") * prof.get("interconnect.nvlink_gbs_per_link_per_dir")


# ---------------------------------------------------------------- 0. this machine
def show_machine() -> int:
    """Print this machine's logical CPU cores and CUDA GPUs; returns the number of GPUs."""
    import torch

    from ...hardware import detect
    gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
    print(t("CPU 논리 코어", "CPU logical cores"), detect().cpu.logical_cores, "·", t("CUDA GPU", "CUDA GPUs"), gpus)
    return gpus


# ---------------------------------------------------------------- 2. links
def show_pcie(pcie: list[dict], lane_gbs: list[float]) -> None:
    """The PCIe generations with one lane's GB/s (per direction), x16 per direction and both ways."""
    show_table([{"PCIe": p["gen"], "GT/s": p["gt_s"], t("인코딩", "encoding"): p["encoding"],
                 t("레인당 GB/s", "GB/s per lane"): round(lane, 3),
                 t("x16 한 방향 GB/s", "x16 GB/s per direction"): round(16 * lane, 2),
                 t("x16 양방향 GB/s", "x16 GB/s both directions"): round(32 * lane, 1),
                 t("연도", "year"): p["year"]} for p, lane in zip(pcie, lane_gbs)])


def show_nvlink(nvlink: list[dict], per_gpu_gbs: list[float]) -> None:
    """The NVLink generations (per GPU, one direction and the two-way headline), then the same from the profiles."""
    rows = []
    for link, per_dir in zip(nvlink, per_gpu_gbs):
        assert 2 * per_dir == link["total_gbs_bidir"], link
        rows.append({"NVLink": link["gen"], "GPU": f"{link['gpu']} ({link['arch']})",
                     t("링크당 한 방향 GB/s", "GB/s per link per direction"): link["gbs_per_link_per_dir"],
                     t("GPU당 링크 수", "links per GPU"): link["links"],
                     t("GPU당 한 방향 GB/s", "GB/s per GPU per direction"): per_dir,
                     t("GPU당 양방향 GB/s (대표 숫자)", "GB/s per GPU both directions (headline)"): 2 * per_dir})
    show_table(rows)
    print(t("같은 숫자를 장치 프로파일(autograder/data/profiles.yaml)에서:",
            "The same figures from the device profiles (autograder/data/profiles.yaml):"))
    show_table(profiles.table(["v100_sxm2_32gb", "a100_sxm_80gb", "h100_sxm", "b200", "gb200"], fields=PROFILE_FIELDS))


def show_ports() -> None:
    """The network ports (InfiniBand, Ethernet) in Gb/s and GB/s per direction."""
    show_table([{t("포트", "port"): p["name"], "Gb/s": p["gbit_s"], t("한 방향 GB/s", "GB/s per direction"): p["gbit_s"] / 8,
                 "NIC": p["nic"], t("쓰이는 곳", "used in"): p["used_in"]} for p in network_links()])


def plot_link_bars(pcie: list[dict], lane_gbs: list[float], nvlink: list[dict], per_gpu_gbs: list[float]) -> None:
    """One GPU's links side by side (log scale): its PCIe x16 slot, all its NVLinks, one InfiniBand NIC."""
    plt = _plt()
    bars = [(f"PCIe {p['gen']} x16", lane * 16, "tab:gray") for p, lane in zip(pcie, lane_gbs)]
    bars += [(f"NVLink {n['gen']} ({n['gpu']})", w, "tab:green") for n, w in zip(nvlink, per_gpu_gbs)]
    bars += [(p["name"].replace("InfiniBand ", "IB "), p["gbit_s"] / 8, "tab:blue")
             for p in network_links() if p["kind"] == "infiniband"]
    fig, ax = plt.subplots(figsize=(9, 4))
    ax.barh([b[0] for b in bars], [b[1] for b in bars], color=[b[2] for b in bars])
    ax.set_xscale("log")
    ax.set_xlabel(t("GPU 하나의 한 방향 대역폭 (GB/s, 로그 눈금)", "bandwidth of one GPU, per direction (GB/s, log scale)"))
    ax.set_title(t("GPU 하나가 쓰는 링크: PCIe 슬롯, NVLink 전체, NIC 하나", "The links of one GPU: its PCIe slot, all its NVLinks, one NIC"))
    for i, b in enumerate(bars):
        ax.text(b[1] * 1.05, i, f"{b[1]:.0f}", va="center", fontsize=8)
    _finish(plt)


# ---------------------------------------------------------------- 3. the node
def show_nodes() -> None:
    """Each node: its GPUs and switches, NVLink per GPU against NIC bandwidth per GPU (NICs x Gb/s / 8 / GPUs)."""
    rows = []
    for node in nodes():
        prof = profiles.get(node["profile"])
        nvlink = nvlink_gbs(prof)
        nic = node["nics"] * node["nic_gbit_s"] / 8 / node["gpus"]
        rows.append({t("노드", "node"): node["name"], "GPU": f"{node['gpus']} × {prof.label}",
                     t("스위치", "switches"): f"{node['switches']} × {node['switch_name']}",
                     t("GPU당 NVLink, 한 방향 GB/s", "NVLink per GPU, GB/s per direction"): nvlink,
                     t("NVLink 합계 TB/s (양방향, 제조사)", "NVLink total TB/s (both ways, vendor)"): node["nvlink_total_tbs_bidir"],
                     t("= GPU 수 × 2 × GPU당", "= GPUs × 2 × per GPU"): round(node["gpus"] * 2 * nvlink / 1000, 1),
                     "NIC": f"{node['nics']} × {node['nic_gbit_s']} Gb/s",
                     t("GPU당 NIC GB/s", "NIC GB/s per GPU"): nic,
                     t("NVLink / NIC", "NVLink / NIC"): f"{nvlink / nic:.0f}×"})
    show_table(rows)


def show_topology() -> None:
    """``nvidia-smi topo -m`` where there is one, else what a DGX H100 shows."""
    if shutil.which("nvidia-smi"):
        result = subprocess.run(["nvidia-smi", "topo", "-m"], capture_output=True, text=True, timeout=30)
        print(result.stdout or result.stderr)
    else:
        print(t("이 컴퓨터에는 nvidia-smi가 없습니다. DGX H100에서는 GPU 쌍마다 NV18이 보입니다.",
                "This machine has no nvidia-smi. On a DGX H100 every GPU pair shows NV18."))


# ---------------------------------------------------------------- 4. the SuperPod
def show_levels(pod: dict, per_gpu: list[float]) -> None:
    """A SuperPod's levels: GPUs, links coming in, their total (one way) and the per-GPU bandwidth."""
    rows = []
    for level, below in zip(pod["levels"], per_gpu):
        rate = level["link_rate"] / 8 if level["unit"] == "Gb/s" else level["link_rate"]  # GB/s per link
        rows.append({t("단계", "level"): level["name"], "GPUs": level["gpus"],
                     t("들어오는 링크", "links in"): f"{level['links']} × {level['link_rate']} {level['unit']}",
                     t("합계 TB/s (한 방향)", "total TB/s (one way)"): level["links"] * rate / 1000,
                     t("GPU당 GB/s", "GB/s per GPU"): below})
    show_table(rows)


def plot_levels(pod: dict, per_gpu: list[float], w: list[float]) -> None:
    """Each level of a SuperPOD: the bandwidth one GPU has there against the all-reduce bandwidth W_i it offers."""
    import numpy as np
    plt = _plt()
    x = np.arange(len(per_gpu))
    fig, ax = plt.subplots(figsize=(7, 3.5))
    ax.bar(x - 0.2, per_gpu, 0.4, label=t("GPU당 대역폭", "bandwidth per GPU"))
    ax.bar(x + 0.2, w, 0.4, label=t("all-reduce 대역폭 W_i", "all-reduce bandwidth W_i"), color="tab:orange")
    for i, (a, b) in enumerate(zip(per_gpu, w)):
        ax.text(i - 0.2, a * 1.1, f"{a:.0f}", ha="center", fontsize=8)
        ax.text(i + 0.2, b * 1.1, f"{b:.0f}", ha="center", fontsize=8)
    ax.set_xticks(x, [level["name"] for level in pod["levels"]])
    ax.set_yscale("log")
    ax.set_ylabel(t("GB/s (한 방향, 로그)", "GB/s (one way, log)"))
    ax.set_title(t("DGX H100 SuperPOD: 단계별 GPU당 대역폭과 all-reduce 대역폭",
                   "DGX H100 SuperPOD: per-GPU and all-reduce bandwidth at each level"))
    ax.legend()
    _finish(plt)


def show_allreduce_levels(pod: dict, gpus_below: list[int], per_gpu: list[float], w: list[float]) -> None:
    """Each level's all-reduce bandwidth W_i = GPUs in one unit below x per-GPU bandwidth."""
    show_table([{t("단계", "level"): level["name"], t("아래 단위의 GPU", "GPUs per unit below"): g,
                 t("GPU당 GB/s", "GB/s per GPU"): b, "W_i GB/s": wi}
                for level, g, b, wi in zip(pod["levels"], gpus_below, per_gpu, w)])


# ---------------------------------------------------------------- 5. collectives, the ring, the cost model
def ring_widget():
    """A widget replaying a ring all-reduce: which ranks' data each rank's chunk holds after each step."""
    import ipywidgets as widgets
    import numpy as np
    plt = _plt()

    def draw_ring(n=4, step=0):
        states = ring_states(n)
        state = states[min(step, len(states) - 1)]
        counts = np.array([[len(chunk) for chunk in row] for row in state["holds"]])
        fig, ax = plt.subplots(figsize=(1.0 * n + 2.5, 0.7 * n + 1.3))
        ax.imshow(counts, cmap="Blues", vmin=0, vmax=n)
        for r in range(n):
            for c in range(n):
                ax.text(c, r, "+".join(str(k) for k in state["holds"][r][c]), ha="center", va="center", fontsize=8,
                        color="white" if counts[r, c] > n / 2 else "black")
        ax.set_xticks(range(n), [t(f"조각 {c}", f"chunk {c}") for c in range(n)])
        ax.set_yticks(range(n), [t(f"랭크 {r}", f"rank {r}") for r in range(n)])
        phase = {"start": t("시작", "start"), "reduce-scatter": "reduce-scatter", "all-gather": "all-gather"}[state["phase"]]
        ax.set_title(f"{phase} · {t('단계', 'step')} {state['step']} / {n - 1}")
        _finish(plt)

    return widgets.interact(draw_ring, n=widgets.IntSlider(value=4, min=2, max=8, description="n", style=LABEL),
                            step=widgets.IntSlider(value=3, min=0, max=14, description=t("단계", "step"), style=LABEL))


def plot_allreduce_times(ring_s: Callable, in_network_s: Callable, alpha: float = 5e-6) -> None:
    """Ring and in-network all-reduce time against array size on 8 x H100 (β = 450 GB/s per direction)."""
    import numpy as np
    plt = _plt()
    n, beta = 8, 450e9
    sizes = np.logspace(3, 10, 60)
    fig, ax = plt.subplots(figsize=(7.5, 4))
    ax.loglog(sizes, [ring_s(s, n, alpha, beta) for s in sizes], label=t("ring all-reduce", "ring all-reduce"))
    ax.loglog(sizes, [in_network_s(s, n, alpha, beta) for s in sizes], label=t("in-network all-reduce", "in-network all-reduce"))
    ax.loglog(sizes, [ring_s(s, n, 0.0, beta) for s in sizes], ":", color="gray", label=t("ring, 대역폭 항만", "ring, bandwidth term only"))
    ax.set_xlabel(t("배열 크기 (바이트)", "array size (bytes)"))
    ax.set_ylabel(t("시간 (초)", "time (s)"))
    ax.set_title(t("8×H100, α = 5 µs(가정), 한 방향 450 GB/s", "8×H100, α = 5 µs (assumed), 450 GB/s per direction"))
    ax.legend()
    _finish(plt)


def explore_costs(ring_s: Callable, in_network_s: Callable):
    """A widget: the time of all-gather/reduce-scatter, ring and in-network all-reduce for a size, n, link and α."""
    import ipywidgets as widgets

    def explore(size_mb=256.0, n=8, link="NVLink 4 (H100): 450", alpha_us=5.0):
        beta, alpha, size = LINKS_GBS[link] * 1e9, alpha_us * 1e-6, size_mb * 1e6
        ms = t("시간 ms", "time ms")
        show_table([{"op": "all_gather / reduce_scatter", ms: ring_s(size, n, alpha, beta) / 2 * 1e3},  # half of RS + AG
                    {"op": "ring all_reduce", ms: ring_s(size, n, alpha, beta) * 1e3},
                    {"op": "in-network all_reduce", ms: in_network_s(size, n, alpha, beta) * 1e3}])

    return widgets.interact(explore, size_mb=widgets.FloatLogSlider(value=256, base=10, min=-3, max=5, description="MB", style=LABEL),
                            n=widgets.IntSlider(value=8, min=2, max=256, description="n", style=LABEL), link=list(LINKS_GBS),
                            alpha_us=widgets.FloatSlider(value=5.0, min=0.0, max=50.0, description="α µs", style=LABEL))


def show_busbw_factors(n: int = 8) -> None:
    """nccl-tests' busbw / algbw factor of each collective, as written and for ``n`` ranks."""
    show_table([{t("집합 통신", "collective"): op, t("busbw / algbw", "busbw / algbw"): factor,
                 f"n = {n}": f"{BUSBW_FACTORS[op](n):.3f}"} for op, factor in data("collectives")["busbw_factors"].items()])


def show_log(name: str) -> None:
    """A published nccl-tests log (data/nccl_logs.yaml): the system it ran on, its text and its source."""
    log = nccl_log(name)
    print(log["system"])
    print(log["text"])
    print(t("출처:", "source:"), "; ".join(log["sources"]))


def plot_measured_8xh100() -> None:
    """The NVLink line rate of an H100 against nccl-tests' ring and NVLS all-reduce on 8 x H100."""
    plt = _plt()
    measured = data("collectives")["measured_allreduce_8xh100"]
    labels = [t("NVLink 회선 속도", "NVLink line rate"), t("ring busbw (측정)", "ring busbw (measured)"),
              t("NVLS busbw (측정)", "NVLS busbw (measured)"), t("NVLS algbw (측정)", "NVLS algbw (measured)")]
    values = [measured["line_rate_gbs"], measured["ring_busbw_gbs"], measured["nvls_busbw_gbs"], measured["nvls_algbw_gbs"]]
    fig, ax = plt.subplots(figsize=(7, 3))
    ax.barh(labels, values, color=["gray", "tab:blue", "tab:green", "tab:olive"])
    for i, v in enumerate(values):
        ax.text(v + 5, i, f"{v}", va="center")
    ax.set_xlabel("GB/s")
    ax.set_title(t("8×H100 all-reduce (nccl-tests, NVIDIA 개발자 답변)", "8×H100 all-reduce (nccl-tests, NVIDIA developer's answer)"))
    _finish(plt)


# ---------------------------------------------------------------- 6. scaling rooflines
def show_min_batches(min_batch: Callable) -> None:
    """Smallest per-GPU batch of DP with a ring and with in-network reduction (its best case), in the node and beyond it.

    ``min_batch(c, w, sends)``: the lesson's rule (sends = 2 for a ring or FSDP, 1 in-network). Beyond the
    node W is the leaf level's all-reduce bandwidth: the node's NICs together, capped by NVLink.
    """
    rows = []
    for pid, node_id in NODE_OF.items():
        prof = profiles.get(pid)
        c = prof.peak("bf16") * 1e12
        nvlink = nvlink_gbs(prof) * 1e9
        node = next(n for n in nodes() if n["id"] == node_id)
        beyond = min(nvlink, node["nics"] * node["nic_gbit_s"] / 8 * 1e9)
        rows.append({"GPU": prof.label, "bf16 TFLOP/s": prof.peak("bf16"),
                     t("NVLink GB/s (한 방향)", "NVLink GB/s (one way)"): nvlink / 1e9,
                     t("ring, 노드 안", "ring, in node"): min_batch(c, nvlink, 2),
                     t("in-network, 노드 안", "in-network, in node"): min_batch(c, nvlink, 1),
                     t("노드 밖 W GB/s", "W beyond node, GB/s"): beyond / 1e9,
                     t("ring·FSDP, 노드 밖", "ring or FSDP, beyond"): min_batch(c, beyond, 2),
                     t("in-network, 노드 밖", "in-network, beyond"): min_batch(c, beyond, 1)})
    show_table(rows)


def plot_dp_crossing(c: float, w: float, measured: dict) -> None:
    """One layer's backward compute against its gradient all-reduce as the per-GPU batch grows (H100).

    ``measured``: busbw of the ring and of NVLS on 8 x H100 (data/collectives.yaml), drawn beside the line-rate models.
    """
    import numpy as np
    plt = _plt()
    D, F = 8192, 32768  # an example layer; the crossing point does not depend on it
    batch = np.linspace(200, 4000, 200)
    fig, ax = plt.subplots(figsize=(7.5, 4))
    ax.plot(batch, 4 * batch * D * F / c * 1e3, color="black", label=t("역전파 계산", "backward compute"))
    ax.axhline(4 * D * F / w * 1e3, color="tab:red", ls="--", label=t("ring all-reduce / FSDP (회선 속도)", "ring all-reduce / FSDP (line rate)"))
    ax.axhline(2 * D * F / w * 1e3, color="tab:green", ls="--", label=t("in-network, 최선의 경우", "in-network, best case"))
    for key, color, label in (("ring_busbw_gbs", "tab:red", t("ring, 측정", "ring, measured")),
                              ("nvls_busbw_gbs", "tab:green", t("NVLS, 측정", "NVLS, measured"))):
        ax.axhline(4 * D * F / (measured[key] * 1e9) * 1e3, color=color, ls=":", label=label)
    ax.axvline(c / w, color="gray", ls=":")
    ax.text(c / w + 30, 4 * D * F / w * 1e3 * 0.6, f"b = C/W ≈ {c / w:.0f}")
    ax.set_xlabel(t("GPU당 배치 (토큰)", "per-GPU batch (tokens)"))
    ax.set_ylabel(t("층 하나의 시간 (ms)", "time for one layer (ms)"))
    ax.set_title(t("H100 데이터 병렬: 계산이 통신보다 길어지는 배치", "H100 data parallelism: the batch where compute outgrows communication"))
    ax.legend(fontsize=8)
    _finish(plt)


# ---------------------------------------------------------------- 8. measured on this machine
REMEASURE_S = 2.0   # at most this long measuring a noisy sweep again (each pass of the ranks takes about a second)


def measure_allreduce_sizes(sizes: list[int], world: int, backend: str, device: str, budget_s: float = 0.2) -> Measured:
    """One all-reduce's seconds per size on ``world`` ranks started once (:func:`autograder.ranks.run` of
    :func:`allreduce_in_turns`): the sizes measured in turns, the fastest of two passes, more while noisy."""
    timed = ranks.run(allreduce_in_turns, [sizes, budget_s, device], world_sizes=[world], backend=backend)[0][0]
    series = Measured(timed["seconds"])
    series.spread, series.passes = timed["spread"], timed["passes"]
    return series


def allreduce_in_turns(sizes: list[int], budget_s: float = 0.2, device: str = "cpu") -> dict:
    """Rank program: :func:`autograder.ranks.measure_allreduce` of each size, the sizes in turns as
    :func:`autograder.lesson.measure` takes them (twice, again while a size's two fastest differ by more than its
    spread limit and :data:`REMEASURE_S` allows); the ranks agree on measuring again, so all make the same calls.
    Returns ``seconds`` (the fastest per size), ``spread`` and ``passes``."""
    import torch
    import torch.distributed as dist
    dev = torch.device("cuda", torch.cuda.current_device()) if device == "cuda" else torch.device("cpu")

    def agree(again: bool) -> bool:
        flag = torch.tensor([int(again)], dtype=torch.int64, device=dev)
        dist.all_reduce(flag, op=dist.ReduceOp.MIN)   # one rank done: all are
        return bool(flag.item())
    timed = measure(lambda size: ranks.measure_allreduce(dist, [size], budget_s, None, device)[0]["seconds"], sizes,
                    better=min, budget_s=REMEASURE_S, agree=agree)
    return {"seconds": list(timed), "spread": timed.spread, "passes": timed.passes}


def show_allreduce(sizes: list[int], seconds: list[float], busbw: list[float]) -> None:
    """Measured all-reduce: size, time per call, algbw and busbw (with the busy label where ``seconds``, a
    :class:`autograder.lesson.Measured`, stayed noisy)."""
    show_table([{t("크기 (KiB)", "size (KiB)"): s // 1024, t("시간 (µs)", "time (µs)"): sec * 1e6,
                 "algbw GB/s": s / sec / 1e9, "busbw GB/s": b} for s, sec, b in zip(sizes, seconds, busbw)],
               measured=seconds)


def fit_line(fit: dict, world: int, backend: str, seconds: list[float]) -> str:
    """The fitted α and β in a sentence; where ``seconds`` (a :class:`autograder.lesson.Measured`) stayed noisy, only
    after the caveat that on this busy machine they are unreliable."""
    line = (f"{backend}, {world} {t('랭크', 'ranks')}: α = {fit['alpha_s'] * 1e6:.1f} µs / {t('단계', 'step')}, "
            f"β = {fit['beta_bytes_s'] / 1e9:.3f} GB/s ({t('큰 메시지에서 busbw가 다가가는 값', 'the busbw large messages approach')})")
    if not busy_labels(seconds):
        return line
    spread = f"{100 * seconds.spread:.0f}"
    return "\n".join([t(f"이 컴퓨터가 바빠 시간이 흔들렸으므로(변동 폭 {spread}%) 아래 α와 β는 믿을 수 없습니다:",
                         f"This machine is busy and the times stayed noisy (spread {spread} %), so this α and β are unreliable:"),
                       line])


def plot_busbw_fit(sizes: list[int], busbw: list[float], fit: dict, world: int, backend: str,
                   seconds: list[float] = ()) -> None:
    """Measured busbw against message size with the fitted α-β model and β (with the busy label where ``seconds``
    stayed noisy)."""
    import numpy as np
    plt = _plt()
    factor = BUSBW_FACTORS["all_reduce"](world)
    fig, ax = plt.subplots(figsize=(7.5, 4))
    ax.semilogx(sizes, busbw, "o", label=t("측정 busbw", "measured busbw"))
    fine = np.logspace(np.log10(sizes[0]), np.log10(sizes[-1]), 100)
    model = [s / (2 * (world - 1) * fit["alpha_s"] + factor * s / fit["beta_bytes_s"]) / 1e9 * factor for s in fine]
    ax.semilogx(fine, model, "-", label=t("α-β 모델", "α-β fit"))
    ax.axhline(fit["beta_bytes_s"] / 1e9, color="gray", ls=":", label="β")
    ax.set_xlabel(t("메시지 크기 (바이트)", "message size (bytes)"))
    ax.set_ylabel("busbw (GB/s)")
    name = t(f"{backend} all-reduce, 랭크 {world}개 (이 컴퓨터)", f"{backend} all-reduce, {world} ranks (this machine)")
    ax.set_title(title(name, name, seconds))
    ax.legend()
    _finish(plt)


def show_sources() -> None:
    """Every data file of the module with its sources (the lesson's reference list)."""
    root = DATA.parents[3]
    for name in NAMES:
        print((DATA / f"{name}.yaml").relative_to(root).as_posix())
        for source in sources(name):
            print("  -", source)


# ---------------------------------------------------------------- computations
def fit_alpha_beta(sizes, seconds, n: int) -> dict:
    """Least-squares fit of a ring all-reduce, t = 2(n-1)·alpha + 2(n-1)/n · S / beta.

    ``sizes`` in bytes, ``seconds`` per call; returns alpha (s per step), beta (bytes/s
    per direction, i.e. the bus bandwidth it tends to) and the fitted times.
    """
    import numpy as np

    s = np.asarray(sizes, dtype=float)
    t = np.asarray(seconds, dtype=float)
    steps, share = 2 * (n - 1), 2 * (n - 1) / n
    weights = 1 / t  # relative errors: small messages count as much as large ones
    design = np.stack([np.full_like(s, steps), share * s], axis=1) * weights[:, None]
    (alpha, inv_beta), *_ = np.linalg.lstsq(design, t * weights, rcond=None)
    alpha, inv_beta = max(float(alpha), 0.0), max(float(inv_beta), 1e-18)
    return {"alpha_s": alpha, "beta_bytes_s": 1 / inv_beta,
            "fit_s": [steps * alpha + share * x * inv_beta for x in s.tolist()]}


def ring_states(n: int) -> list[dict]:
    """Each step of a ring all-reduce on ``n`` ranks, as which inputs every chunk holds.

    Returns a list of {"phase", "step", "holds"}: ``holds[r][c]`` is the sorted list of
    ranks whose chunk ``c`` has been summed into rank ``r``'s copy of chunk ``c``.
    """
    holds = [[[r] for _ in range(n)] for r in range(n)]
    states = [{"phase": "start", "step": 0, "holds": copy.deepcopy(holds)}]
    for step in range(n - 1):  # reduce-scatter: rank r sends chunk r-step to r+1, which adds it
        sent = [(r, (r - step) % n, list(holds[r][(r - step) % n])) for r in range(n)]
        for r, c, part in sent:
            right = (r + 1) % n
            holds[right][c] = sorted(set(holds[right][c]) | set(part))
        states.append({"phase": "reduce-scatter", "step": step + 1, "holds": copy.deepcopy(holds)})
    for step in range(n - 1):  # all-gather: rank r sends its complete chunk r+1-step, which is copied
        sent = [(r, (r + 1 - step) % n, list(holds[r][(r + 1 - step) % n])) for r in range(n)]
        for r, c, part in sent:
            holds[(r + 1) % n][c] = part
        states.append({"phase": "all-gather", "step": step + 1, "holds": copy.deepcopy(holds)})
    return states
