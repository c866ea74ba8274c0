"""Lesson 03's helpers: the figures and widgets, so the lesson's cells show the numbers and the idea."""
from __future__ import annotations

import itertools

import numpy as np

from ...lesson import LABEL, Measured, clearly_more, measure, rises, show_table, t, title

KIB, MIB, GIB = 2**10, 2**20, 2**30


def ridge(p, dtype: str) -> float | None:
    """FLOP/byte where the memory roof meets the compute roof (None if the profile lacks a figure)."""
    peak = p.peak(dtype)
    return peak * 1e12 / (p.bandwidth_gbs * 1e9) if peak and p.bandwidth_gbs else None


def roof(p, dtype: str, x):
    """Attainable TFLOP/s at intensities ``x`` on profile ``p``."""
    return np.minimum(p.peak(dtype), np.asarray(x) * p.bandwidth_gbs / 1e3)


def _axes(figsize=(6.5, 4), log=True):
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=figsize)
    if log:
        ax.set_xscale("log")
        ax.set_yscale("log")
    return fig, ax


def plot_hierarchy(levels: list, title: str, bandwidth_label: str | None = None, unknown: str | None = None):
    """Capacity and bandwidth of each level ``(name, bytes, GB/s)``, side by side on log axes (None: ``unknown``)."""
    import matplotlib.pyplot as plt

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 0.5 + 0.55 * len(levels)), sharey=True)
    y = np.arange(len(levels))[::-1]
    ax1.barh(y, [c or 0 for _, c, _ in levels], color="tab:blue")
    ax2.barh(y, [b or 0 for _, _, b in levels], color="tab:orange")
    for yi, (_, c, b) in zip(y, levels):
        if c is None:
            ax1.text(1e7, yi, t("호스트마다 다름", "depends on the host"), va="center", fontsize=8)
        if b is None:
            ax2.text(10, yi, unknown or t("공개되지 않음", "not published"), va="center", fontsize=8)
    ax1.set_xscale("log")
    ax2.set_xscale("log")
    ax1.set_yticks(y, [name for name, _, _ in levels])
    ax1.set_xlabel(t("용량 (바이트)", "capacity (bytes)"))
    ax2.set_xlabel(bandwidth_label or t("대역폭 (GB/s)", "bandwidth (GB/s)"))
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def plot_memory_types(rows: list[dict]):
    """Bus width against the rate per pin: HBM wide and slow, GDDR narrow and fast (marker area: bandwidth)."""
    fig, ax = _axes(log=False)
    for r in rows:
        hbm = r["memory.type"].startswith("HBM")
        ax.scatter(r["memory.bus_width_bits"], r["gbit_per_pin"], s=r["bandwidth_gbs"] / 10,
                   color="tab:purple" if hbm else "tab:green", alpha=0.6)
        ax.annotate(f"{r['label']} ({r['memory.type']})", (r["memory.bus_width_bits"], r["gbit_per_pin"]),
                    fontsize=8, xytext=(-100, 6) if r["label"].startswith("H100") else (6, 6), textcoords="offset points")
    ax.set_xscale("log", base=2)
    ax.set_xticks([256, 512, 1024, 2048, 4096, 8192], ["256", "512", "1024", "2048", "4096", "8192"])
    ax.set_xlim(180, 24000)
    ax.minorticks_off()
    ax.set_xlabel(t("메모리 버스 폭 (비트)", "memory bus width (bits)"))
    ax.set_ylabel(t("핀당 속도 (Gb/s)", "rate per pin (Gb/s)"))
    ax.set_title(t("HBM: 넓고 느리게, GDDR: 좁고 빠르게", "HBM: wide and slow, GDDR: narrow and fast"), fontsize=10)
    return fig


def plot_curves(x, curves: dict, xlabel: str, ylabel: str, title: str, lines: dict | None = None):
    """Log-log curves ``{label: y}`` over ``x``, with horizontal reference lines ``{label: y}`` (gray, each its own
    dashes, named in the legend)."""
    fig, ax = _axes()
    for name, values in curves.items():
        ax.plot(x, values, label=name)
    for (name, y), style in zip((lines or {}).items(), itertools.cycle(("--", ":", "-.", (0, (6, 2, 1, 2, 1, 2))))):
        ax.axhline(y, linestyle=style, linewidth=1, color="gray", label=name)  # named in the legend: close lines' labels overlap
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend()
    return fig


def plot_roofline(p, dtype: str, points: dict, title: str):
    """One device's roof and ``points`` ({label: intensity}) placed on it."""
    x = np.logspace(-2, 4, 400)
    fig, ax = _axes(figsize=(6.5, 4.2))
    ax.plot(x, roof(p, dtype, x), color="black", label=f"{p.label} {dtype}")
    for name, i in points.items():
        ax.scatter(i, roof(p, dtype, i), zorder=3, label=f"{name}: {float(roof(p, dtype, i)):.3g} TFLOP/s")
    ax.axvline(ridge(p, dtype), color="gray", linestyle=":")
    ax.set_xlabel(t("산술 강도 (FLOP/byte)", "arithmetic intensity (FLOP/byte)"))
    ax.set_ylabel(t("도달 가능한 TFLOP/s", "attainable TFLOP/s"))
    ax.set_title(title)
    ax.legend(fontsize=8)
    return fig


def roofline_rows(ids, dtype: str, intensity: float) -> list[dict]:
    """The explorer's table: each device's ridge point, the TFLOP/s its roof allows at ``intensity`` and what bounds
    it there (memory below the ridge, compute from it on), in the learner's language."""
    from ... import profiles

    rows = []
    for p in map(profiles.get, ids):
        if not p.peak(dtype):
            rows.append({"device": p.label, "ridge": "–", "TFLOP/s": t("피크 없음", "no peak"), "bound": "–"})
            continue
        point = ridge(p, dtype)
        rows.append({"device": p.label, "ridge": round(point, 1), "TFLOP/s": round(float(roof(p, dtype, intensity)), 2),
                     "bound": t("메모리", "memory") if intensity < point else t("연산", "compute")})
    return rows


def roofline_explorer(default=("h100_sxm", "h200_sxm")):
    """Pick devices, a number format and an intensity: their rooflines, and where that intensity lands."""
    import ipywidgets as widgets
    import matplotlib.pyplot as plt
    from IPython.display import display

    from ... import profiles

    choices = [(p.label, p.id) for p in profiles.all_of() if p.bandwidth_gbs and p.peak_tflops]
    pick = widgets.SelectMultiple(options=choices, value=default, rows=8, description=t("장치", "devices"), style=LABEL)
    fmt = widgets.Dropdown(options=["fp64", "fp32", "tf32", "bf16", "fp16", "fp8", "fp4"], value="bf16",
                           description=t("형식", "format"), style=LABEL)
    point = widgets.FloatLogSlider(value=100, base=10, min=-1, max=4, step=0.05, description="FLOP/byte", style=LABEL)

    def draw(ids, dtype, intensity):
        fig, ax = _axes()
        xs = np.logspace(-1, 4, 300)
        for p in filter(lambda p: p.peak(dtype), map(profiles.get, ids)):
            line, = ax.plot(xs, roof(p, dtype, xs), label=p.label)
            ax.scatter([intensity], [float(roof(p, dtype, intensity))], color=line.get_color(), zorder=3)
        ax.axvline(intensity, color="gray", linestyle=":")
        ax.set_xlabel("FLOP/byte")
        ax.set_ylabel("TFLOP/s")
        ax.set_title(t(f"{dtype} 루프라인", f"{dtype} roofline"))
        if ax.get_lines()[:-1]:
            ax.legend(fontsize=8)
        plt.show()
        show_table(roofline_rows(ids, dtype, intensity), ["device", "ridge", "TFLOP/s", "bound"],
                   {"device": t("장치", "device"), "ridge": "ridge point", "bound": t("한계", "bound")})

    out = widgets.interactive_output(draw, {"ids": pick, "dtype": fmt, "intensity": point})
    display(widgets.HBox([pick, widgets.VBox([fmt, point])]), out)


def decode_tokens_per_s(model: dict, batch, context: int, p, weight_bytes: int = 2, kv_bytes: int = 2, dtype="bf16"):
    """Upper bound on decode tokens/s over ``batch`` (an array): the lower of the memory roof (every step reads the
    weights and each sequence's KV cache) and the compute roof (2 FLOPs per parameter per token)."""
    from ... import llm

    shape = {**model, "weight_bytes": weight_bytes, "kv_bytes": kv_bytes}
    per_step = llm.weight_bytes(shape) + llm.kv_cache_bytes(shape, 1, context) * np.asarray(batch)
    return np.minimum(batch * p.bandwidth_gbs * 1e9 / per_step, p.peak(dtype) * 1e12 / (2 * shape["params"]))


def plot_decode_batches(model: dict, context: int, gpus: list):
    """Decode tokens/s bound against the batch, on each GPU while weights and KV cache fit in its memory."""
    from ...llm import kv_cache_bytes

    batch = np.arange(1, 513)
    fig, ax = _axes()
    shape = {**model, "kv_bytes": 2}
    for p in gpus:
        kv = np.array([kv_cache_bytes(shape, b, context) for b in batch])
        fits = model["params"] * 2 + kv <= p.memory_bytes
        ax.plot(batch[fits], decode_tokens_per_s(model, batch[fits], context, p), label=f"{p.label} ({p.memory_gib:.0f} GiB)")
    ax.set_xlabel(t("배치 (동시에 디코딩하는 시퀀스 수)", "batch (sequences decoded together)"))
    ax.set_ylabel(t("토큰/s 상한", "tokens/s bound"))
    ax.set_title(t(f"{model.get('label', '')} bf16, 컨텍스트 {context}", f"{model.get('label', '')} bf16, context {context}"),
                 fontsize=10)
    ax.legend()
    return fig


def plot_bars(labels, series: dict, xlabel: str, ylabel: str):
    """Grouped bars ``{label: values}`` on a log y axis."""
    fig, ax = _axes(figsize=(6.5, 3.8), log=False)
    width, pos = 0.8 / len(series), np.arange(len(labels))
    for i, (name, values) in enumerate(series.items()):
        ax.bar(pos + (i - (len(series) - 1) / 2) * width, values, width, label=name)
    ax.set_xticks(pos, [str(v) for v in labels])
    ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.legend()
    return fig


def plot_sweep(sizes, gbs, caches, device: str):
    """Read bandwidth against the working-set size, with the caches marked. The title says that bandwidth falls
    beyond the last cache only where the points show it (the best inside half of it at least 1.2x the median beyond
    twice it, :func:`autograder.lesson.rises`), and names a busy machine where ``gbs`` (a Measured) stayed noisy."""
    llc = caches[-1][1] if caches else 0
    inside = [g for s, g in zip(sizes, gbs) if s <= llc / 2]
    beyond = [g for s, g in zip(sizes, gbs) if s >= 2 * llc]
    falls = bool(inside and beyond) and rises([float(np.median(beyond)), max(inside)])
    heading = (t(f"{device}: 작업 집합이 캐시를 벗어나면 대역폭이 떨어진다",
                 f"{device}: bandwidth falls once the working set leaves the cache") if falls else
               t(f"{device}: 작업 집합 크기별 읽기 대역폭", f"{device}: read bandwidth by working-set size"))
    fig, ax = _axes(log=False)
    ax.plot(sizes, gbs, marker="o")
    for name, size in caches:
        ax.axvline(size, color="gray", linestyle="--", linewidth=1)
        ax.text(size * 1.05, max(gbs) * 0.95, name, fontsize=9)
    ax.set_xscale("log", base=2)
    ax.set_xlabel(t("작업 집합 크기 (바이트)", "working-set size (bytes)"))
    ax.set_ylabel(t("읽기 대역폭 (GB/s)", "read bandwidth (GB/s)"))
    ax.set_title(title(heading, heading, gbs))
    return fig


def measure_roofline_points(device: str, llc: int) -> Measured:
    """(name, FLOP/byte, TFLOP/s achieved) for an fp32 add, a matvec and three matmuls, measured here, every kernel
    twice in turns and again while noisy (:func:`autograder.lesson.measure`; the result's ``spread`` is the rates')."""
    import torch

    from ...harness import time_fn

    kernels = []  # (name, FLOP/byte, FLOPs, call, budget_s)
    n = max(4 * MIB, 4 * llc // 12)
    x, y, z = (torch.rand(n, device=device) for _ in range(3))
    kernels.append(("add", n / (12 * n), n, lambda: torch.add(x, y, out=z), 0.25))
    n = 4096
    m, v = torch.rand(n, n, device=device), torch.rand(n, device=device)
    kernels.append(("matvec 4096", 2 * n**2 / (4 * (n**2 + 2 * n)), 2 * n**2, lambda: m @ v, 0.25))
    for n in ((64, 256, 1024) if device == "cpu" else (256, 1024, 4096)):
        a, b = torch.rand(n, n, device=device), torch.rand(n, n, device=device)
        kernels.append((f"matmul {n}", 2 * n**3 / (4 * 3 * n**2), 2 * n**3, lambda a=a, b=b: a @ b, 0.3))
    rates = measure(lambda k: k[2] / time_fn(k[3], device=device, budget_s=k[4]).median_s / 1e12, kernels)
    points = Measured((name, intensity, rate) for (name, intensity, *_), rate in zip(kernels, rates))
    points.spread, points.passes = rates.spread, rates.passes
    return points


def measure_fusion(kernels: dict, device: str, budget_s: float = 0.3) -> Measured:
    """The seconds of each kernel of the fusion table, ``{name: (call, bytes it moves)}``: the fastest of two runs in
    turns, again while noisy (:func:`autograder.lesson.measure`)."""
    from ...harness import time_fn
    return measure(lambda name: time_fn(kernels[name][0], device=device, budget_s=budget_s).median_s, list(kernels),
                   better=min)


def show_fusion(kernels: dict, seconds: Measured) -> None:
    """The fusion table (with the busy label where its times stayed noisy) and what it shows: the unfused 4 steps
    (second kernel) against one copy (first) and torch.compile's kernel (third, if timed); a pair is called slower or
    faster only where its times are clearly apart (:func:`autograder.lesson.clearly_more`)."""
    rows = [{"kernel": name, "ms": s * 1e3, "GB/s": moved / s / 1e9}
            for (name, (_call, moved)), s in zip(kernels.items(), seconds)]
    show_table(rows, ["kernel", "ms", "GB/s"], {"kernel": t("커널", "kernel")}, measured=seconds)
    for line in fusion_lines(seconds):
        print(line)


def fusion_lines(seconds: list[float]) -> list[str]:
    """The sentences under the fusion table, each true of ``seconds`` (copy, 4 steps[, torch.compile])."""
    copy, steps, *fused = seconds
    ratio = steps / copy
    lines = [t(f"4단계가 복사 1번보다 {ratio:.1f}배 느립니다 (바이트는 4배)", f"The 4 steps are {ratio:.1f}x slower than one copy (4x the bytes)")
             if clearly_more(steps, copy) else
             t(f"이번 측정에서는 4단계가 복사 1번보다 뚜렷이 느리지 않았습니다 (시간 비 {ratio:.1f}, 바이트 비 4)",
               f"In this run the 4 steps were not clearly slower than one copy (time ratio {ratio:.1f}, byte ratio 4)")]
    for one in fused:
        lines.append(t(f"torch.compile의 커널 하나가 4단계보다 {steps / one:.1f}배 빠릅니다", f"torch.compile's one kernel is {steps / one:.1f}x faster than the 4 steps")
                     if clearly_more(steps, one) else
                     t(f"이번 측정에서는 torch.compile의 커널이 4단계보다 뚜렷이 빠르지 않았습니다 (시간 비 {steps / one:.1f})",
                       f"In this run torch.compile's kernel was not clearly faster than the 4 steps (time ratio {steps / one:.1f})"))
    return lines


def roof_for(points: list[tuple], peak_tflops: float, gbs: float, peak_measured: bool = True) -> tuple[float, float]:
    """The measured roof ``(peak TFLOP/s, GB/s)`` the points are drawn under. A point that ran ``achieved`` FLOP/s at
    ``intensity`` FLOP/byte shows the machine can do at least that many FLOP/s and move at least ``achieved /
    intensity`` bytes/s: a measured roof below either was measured at a busier moment and is raised to it
    (:func:`autograder.reference.best_seen`), and a line says so. A spec sheet's peak (``peak_measured=False``) stays."""
    from ...reference import best_seen
    for _name, intensity, achieved in points:
        gbs, moved = best_seen(gbs, achieved * 1e3 / intensity, unit="GB/s")
        peak_tflops, ran = best_seen(peak_tflops, achieved) if peak_measured else (peak_tflops, None)
        for note in (moved, ran):
            if note is not None:
                print(note.text())
    return peak_tflops, gbs


def plot_measured_roofline(points: list[tuple], peak_tflops: float, gbs: float, device: str):
    xs = np.logspace(-2, 3.5, 300)
    fig, ax = _axes(figsize=(6.5, 4.2))
    ax.plot(xs, np.minimum(peak_tflops, xs * gbs / 1e3), color="black",
            label=t(f"지붕: {peak_tflops:.3g} TFLOP/s, {gbs:.0f} GB/s", f"roof: {peak_tflops:.3g} TFLOP/s, {gbs:.0f} GB/s"))
    for name, i, achieved in points:
        ax.scatter(i, achieved, zorder=3, label=f"{name}: {achieved:.3g} TFLOP/s")
    ax.set_xlabel(t("산술 강도 (FLOP/byte, fp32)", "arithmetic intensity (FLOP/byte, fp32)"))
    ax.set_ylabel("TFLOP/s")
    heading = t(f"{device}의 루프라인과 직접 잰 점", f"Roofline of {device} with measured points")
    ax.set_title(title(heading, heading, points))   # with the busy label where the points stayed noisy
    ax.legend(fontsize=8)
    return fig


def roof_rows(points: list[tuple], peak_tflops: float, gbs: float) -> list[dict]:
    """The measured points as table rows with their share of the roof (:func:`roof_for` raises a measured roof to the
    points). A share above 100 % (of a spec sheet's peak) is impossible, and the row says so instead of showing it."""
    rows = []
    for name, intensity, achieved in points:
        share = achieved / min(peak_tflops, intensity * gbs / 1e3)
        shown = f"{min(share, 1):.0%}" if share <= 1 + 1e-9 else t(  # 1 + 1e-9: a roof raised to the point, rounded
            "지붕 위(불가능): 이 점을 비교한 지붕보다 빠르게 잰 것입니다. 타이밍과 지붕을 확인하세요",
            "above the roof (impossible): the point measured faster than the roof it is compared with; "
            "check the timing and the roof")
        rows.append({t("커널", "kernel"): name, "FLOP/byte": round(intensity, 3), "TFLOP/s": achieved,
                     t("지붕 대비", "of the roof"): shown})
    return rows


def cache_rows(report) -> list[dict]:
    """This machine's caches and memories (from ``hardware.detect()``) as table rows."""
    cpu = report.cpu
    rows = [{"level": "L1d " + t("(코어당)", "(per core)"), "size": cpu.l1d_bytes},
            {"level": "L2 " + t("(코어당)", "(per core)"), "size": cpu.l2_bytes},
            {"level": "L3 " + t("(전체)", "(total)"), "size": cpu.l3_bytes},
            {"level": "DRAM", "size": cpu.ram_bytes}]
    for acc in report.accelerators:
        rows.append({"level": f"{acc.name} L2", "size": acc.l2_bytes})
        rows.append({"level": f"{acc.name} " + t("메모리", "memory"), "size": acc.total_memory_bytes})
    for r in rows:
        r["size"] = "?" if not r["size"] else (f"{r['size'] / GIB:.1f} GiB" if r["size"] >= GIB else f"{r['size'] / KIB:,.0f} KiB")
    return rows


def ecc_states() -> list[str]:
    """One line per NVIDIA GPU with its ECC mode (through NVML), or why none can be read here."""
    try:
        import pynvml

        pynvml.nvmlInit()
    except Exception as exc:  # no NVIDIA driver here: nothing to query
        return [t("NVIDIA 드라이버가 없어 ECC 상태를 읽을 수 없습니다:", "No NVIDIA driver, so no ECC state to read:")
                + f" {type(exc).__name__}"]
    lines = []
    try:
        for i in range(pynvml.nvmlDeviceGetCount()):
            handle = pynvml.nvmlDeviceGetHandleByIndex(i)
            try:
                current, _pending = pynvml.nvmlDeviceGetEccMode(handle)
                state = t("켜짐", "on") if current else t("꺼짐", "off")
            except pynvml.NVMLError:
                state = t("지원하지 않음", "not supported")
            lines.append(f"GPU {i} {pynvml.nvmlDeviceGetName(handle)}: ECC {state}")
    finally:
        pynvml.nvmlShutdown()
    return lines
