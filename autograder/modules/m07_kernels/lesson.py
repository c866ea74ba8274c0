"""Helpers of lesson 07: occupancy from a profile's limits, the tile explorer, and the lesson's figures."""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import numpy as np

from ...datafile import read_yaml
from ...lesson import LABEL, Measured, busy_labels, clearly_more, measure, show_table, t
from .tasks import cdiv, matmul_budget


@lru_cache(maxsize=1)
def limits() -> dict:
    """Per-SM limits of compute capability 9.0 (``data/occupancy.yaml``)."""
    return read_yaml(Path(__file__).resolve().parent / "data" / "occupancy.yaml")["compute_capability_9_0"]


def occupancy(threads: int, registers: int, smem_bytes: int, profile_id: str = "h100_sxm") -> dict:
    """Blocks one SM holds at once and the share of its 64 warp slots they fill, with the limit that binds.

    Registers are handed to each warp in units of 256, and each block takes 1 KB of shared memory beyond its own;
    shared memory and the register file per SM come from the profile; the other limits from ``data/occupancy.yaml``.
    """
    from ... import profiles
    sm, lim = profiles.get(profile_id), limits()
    warps = cdiv(threads, lim["warp_size"])
    unit = lim["register_allocation_unit"]
    per_warp = cdiv(registers * lim["warp_size"], unit) * unit
    register_file = int(sm.get("registers_per_sm_kb") * 1024 // 4)
    by = {"threads": lim["max_threads_per_sm"] // (warps * lim["warp_size"]),
          "registers": register_file // (per_warp * warps) if registers <= lim["max_registers_per_thread"] else 0,
          "shared memory": int(sm.get("smem_per_sm_kb") * 1024 // (smem_bytes + lim["reserved_smem_per_block"])),
          "blocks": lim["max_blocks_per_sm"]}
    blocks = min(by.values())
    return {"blocks": blocks, "warps": blocks * warps,
            "occupancy": blocks * warps * lim["warp_size"] / lim["max_threads_per_sm"],
            "limit": min(by, key=by.get), **{f"by {k}": v for k, v in by.items()}}


def plot_traffic(sizes, naive, tiled, tile: int):
    """Counted global reads of the naive and the tiled matmul, with the tiled model 2·n²·ceil(n/T)."""
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(6.4, 3.8))
    ax.plot(sizes, naive, "o-", label=t("순진한 커널 (센 값)", "naive kernel (counted)"))
    ax.plot(sizes, tiled, "s-", label=t(f"{tile}×{tile} 타일 (센 값)", f"{tile}×{tile} tiles (counted)"))
    model = [sum(matmul_budget(n, n, n, tile).values()) for n in sizes]
    ax.plot(sizes, model, "k:", label=t("모델 2·n²·⌈n/T⌉", "model 2·n²·⌈n/T⌉"))
    ax.set_xlabel(t("행렬 크기 n (n×n)", "matrix size n (n×n)"))
    ax.set_ylabel(t("전역 메모리 읽기 (원소)", "global memory reads (elements)"))
    ax.set_yscale("log")
    ax.set_title(t("타일링이 줄이는 전역 메모리 트래픽", "The global traffic tiling saves"))
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def plot_sectors(rows: list[dict]):
    """Sectors per warp request for each access pattern (4 is the floor for 32 float32 values)."""
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(6.4, 3.2))
    ax.barh([r["pattern"] for r in rows], [r["sectors"] for r in rows], color="tab:blue")
    ax.axvline(4, color="green", linestyle="--", label=t("합병 접근: 4섹터 (128바이트)", "coalesced: 4 sectors (128 bytes)"))
    ax.axvline(32, color="red", linestyle=":", label=t("스레드마다 다른 섹터: 32", "a sector per thread: 32"))
    ax.set_xlabel(t("워프 요청당 32바이트 섹터", "32-byte sectors per warp request"))
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    return fig


def plot_intensity(points: list[tuple[str, float]], profile_id: str = "h100_sxm", dtype: str = "fp32"):
    """Arithmetic intensity from counted traffic, against the ridge point of a profile (module 03's roofline)."""
    import matplotlib.pyplot as plt

    from ... import profiles
    p = profiles.get(profile_id)
    ridge = p.peak(dtype) * 1e12 / (p.bandwidth_gbs * 1e9)
    xs = np.logspace(-2, 3, 200)
    fig, ax = plt.subplots(figsize=(6.4, 3.8))
    ax.plot(xs, np.minimum(p.peak(dtype), xs * p.bandwidth_gbs / 1e3), "k-", label=f"{p.label} {dtype}")
    for name, intensity in points:
        ax.scatter([intensity], [min(p.peak(dtype), intensity * p.bandwidth_gbs / 1e3)], zorder=3, label=name)
    ax.axvline(ridge, color="gray", linestyle=":")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("FLOP/byte")
    ax.set_ylabel(t("도달 가능한 TFLOP/s (상한)", "attainable TFLOP/s (upper bound)"))
    ax.set_title(t(f"센 트래픽으로 구한 산술 강도 (ridge ≈ {ridge:.0f})", f"Intensity from counted traffic (ridge ≈ {ridge:.0f})"))
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def plot_scan_steps(steps: list[np.ndarray]):
    """The rows of a doubling (Hillis–Steele) scan, one per step."""
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(6.4, 0.55 * len(steps) + 0.8))
    ax.imshow(np.array(steps), cmap="Blues", aspect="auto")
    for r, row in enumerate(steps):
        for c, v in enumerate(row):
            ax.text(c, r, f"{v:g}", ha="center", va="center", fontsize=8)
    ax.set_yticks(range(len(steps)), [t(f"단계 {k}", f"step {k}") for k in range(len(steps))])
    ax.set_xticks(range(len(steps[0])))
    ax.set_xlabel(t("스레드 (원소)", "thread (element)"))
    fig.tight_layout()
    return fig


def tile_explorer():
    """Matrix size and tile: global reads, arithmetic intensity and how many blocks an H100 SM holds."""
    import ipywidgets as widgets
    from IPython.display import display

    size = widgets.IntSlider(value=4096, min=256, max=16384, step=256, description="n", style=LABEL)
    tile = widgets.Dropdown(options=[4, 8, 16, 32], value=16, description=t("타일 T", "tile T"), style=LABEL)
    registers = widgets.IntSlider(value=32, min=16, max=255, step=8, description=t("레지스터", "registers"), style=LABEL)

    def show(n, tile_size, regs):
        naive = 2 * n**3
        tiled = sum(matmul_budget(n, n, n, tile_size).values())
        moved = (tiled + n * n) * 4          # float32 reads plus the n² results written
        occ = occupancy(tile_size * tile_size, regs, 2 * tile_size * tile_size * 4)
        show_table([{"quantity": t("전역 읽기: 순진한 커널", "global reads: naive"), "value": f"{naive:.3g}"},
                    {"quantity": t("전역 읽기: 타일", "global reads: tiled"), "value": f"{tiled:.3g} (÷{naive / tiled:.0f})"},
                    {"quantity": t("산술 강도 (FLOP/byte)", "arithmetic intensity (FLOP/byte)"),
                     "value": f"{2 * n**3 / moved:.2f}"},
                    {"quantity": t("블록당 공유 메모리", "shared memory per block"),
                     "value": f"{2 * tile_size * tile_size * 4 / 1024:g} KiB"},
                    {"quantity": t("SM당 블록 (H100)", "blocks per SM (H100)"),
                     "value": f"{occ['blocks']} ({t('한계', 'limit')}: {occ['limit']})"},
                    {"quantity": t("점유율", "occupancy"), "value": f"{occ['occupancy']:.0%}"}],
                   ["quantity", "value"], {"quantity": t("항목", "quantity"), "value": t("값", "value")})

    out = widgets.interactive_output(show, {"n": size, "tile_size": tile, "regs": registers})
    display(widgets.VBox([size, tile, registers]), out)


def measure_pairs(pairs: dict) -> Measured:
    """``{what: (unit, {who: rate function})}`` (rates, higher is better), every rate measured in turns
    (:func:`autograder.lesson.measure`): the best of two passes, more while noisy; the rates in the order given."""
    points = [(what, who) for what, (_, rates) in pairs.items() for who in rates]
    return measure(lambda point: pairs[point[0]][1][point[1]](), points)


def pair_lines(pairs: dict, rates: Measured) -> list[str]:
    """One line per ``what`` of :func:`measure_pairs`: its two rates, and the higher as so many times faster only where
    it is clearly higher (:func:`autograder.lesson.clearly_more`); then the busy label where they stayed
    noisy."""
    found, lines = iter(rates), []
    for what, (unit, timers) in pairs.items():
        (first, a), (second, b) = zip(timers, found)
        both = f"{what}: {first} {_rate(a)} {unit}, {second} {_rate(b)} {unit}"
        if clearly_more(a, b) or clearly_more(b, a):
            (high, x), (low, y) = sorted([(first, a), (second, b)], key=lambda pair: -pair[1])
            times = f"{x / y:,.0f}" if x / y >= 10 else f"{x / y:.1f}"
            lines.append(both + t(f": {high} 쪽이 {low}보다 {times}배 빠릅니다", f": {high} is {times}x faster than {low}"))
        else:
            lines.append(both + t(": 이번 측정에서는 뚜렷이 다르지 않았습니다", ": in this run not clearly different"))
    return lines + busy_labels(rates)


def _rate(value: float) -> str:
    return f"{value:,.0f}" if value >= 100 else f"{value:.2f}"
