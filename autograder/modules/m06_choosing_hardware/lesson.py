"""The lesson helpers of module 06: figures, tables and widgets, the commonly quoted claims checked against
the data, the sample nvidia-smi log, and the MLP training step the lesson and the exercise time.

Lessons call these so a cell shows the idea in a few lines (the formulas stay in the
cells); the tasks use :func:`mlp_step` and :func:`mfu_peak` too.
Heavy libraries (matplotlib, numpy, torch, ipywidgets) are imported inside the functions.
"""
from __future__ import annotations

import math
from pathlib import Path

from ...knowledge import recipe_bytes, training_flops
from ...lesson import show_table, t, title
from ...lesson import LABEL

SAMPLE_LOG = Path(__file__).resolve().parent / "data" / "nvidia_smi_log.csv"


# ---------------------------------------------------------------- nvidia-smi logs
SAMPLE_COLUMNS = ("utilization.gpu", "memory.used", "temperature.gpu", "power.draw", "clocks.sm")  # after the timestamp


def sample_log() -> dict:
    """The lesson's sample log as numpy arrays: the columns of the lesson's command, in its order, with units;
    ``reasons``: the last column's bit mask as an integer. (It reads this one file: other logs have other layouts.)"""
    import numpy as np
    rows = [line.split(", ") for line in SAMPLE_LOG.read_text(encoding="utf-8").splitlines()[1:] if line]
    log = {name: np.array([float(row[i].split()[0]) for row in rows]) for i, name in enumerate(SAMPLE_COLUMNS, 1)}
    log["reasons"] = np.array([int(row[-1], 16) for row in rows])
    return log


def run_log(name: str) -> Path:
    """Where the course package keeps a visible log of exercise 06's smi task (``gpu_log_a.csv`` …): the notebook
    finds it wherever it is opened."""
    return SAMPLE_LOG.parent / name


def plot_smi_log(log: dict, slowed=None, title: str | None = None) -> None:
    """Utilization, SM clock, temperature and power over time; samples in ``slowed`` (a boolean mask) shaded red.

    ``log``: column name -> values (arrays or lists; None or nan where a value is missing).
    """
    import matplotlib.pyplot as plt
    import numpy as np
    labels = {"utilization.gpu": t("사용률(%)", "utilization (%)"), "clocks.sm": t("SM 클록(MHz)", "SM clock (MHz)"),
              "temperature.gpu": t("온도(°C)", "temperature (°C)"), "power.draw": t("전력(W)", "power (W)")}
    fig, axes = plt.subplots(4, 1, figsize=(10, 7), sharex=True)
    for ax, (name, label) in zip(axes, labels.items()):
        values = np.array(log[name], dtype=float)  # None -> nan
        secs = np.arange(len(values))
        ax.plot(secs, values, lw=1.2)
        if slowed is not None:
            ax.fill_between(secs, np.nanmin(values), np.nanmax(values), where=slowed, color="tab:red", alpha=0.2,
                            step="mid")
        ax.set_ylabel(label, fontsize=8)
        ax.grid(alpha=0.3)
    axes[-1].set_xlabel(t("초", "seconds"))
    axes[0].set_title(title or t("H100 학습 로그 예시: 빨강 = 전력·열 때문에 클록이 내려간 구간",
                                 "Example H100 training log: red = clocks lowered by power or heat"))
    fig.tight_layout()
    plt.show()


# ---------------------------------------------------------------- comparing devices
DEVICE_FIELDS = ("label", "segment", "year", "peak.bf16", "sparse.bf16", "memory_gib", "memory.type",
                 "bandwidth_gbs", "interconnect.type", "tdp_w")


def show_device_table(ids: list[str]) -> None:
    """The profiles of ``ids`` side by side: segment, year, bf16 dense and sparse peaks, memory (GiB), bandwidth, link, TDP."""
    from ... import profiles
    head = {"label": t("장치", "device"), "segment": t("부문", "segment"), "year": t("연도", "year"),
            "peak.bf16": "bf16 dense TFLOP/s", "sparse.bf16": t("bf16 희소(2:4)", "bf16 sparse (2:4)"),
            "memory_gib": t("메모리(GiB)", "memory (GiB)"),
            "memory.type": t("종류", "type"), "bandwidth_gbs": t("대역폭(GB/s)", "bandwidth (GB/s)"),
            "interconnect.type": t("GPU 간 링크", "GPU link"), "tdp_w": "TDP (W)"}
    show_table(profiles.table(ids, DEVICE_FIELDS), DEVICE_FIELDS, head)


def _color(p) -> str:
    return "tab:blue" if p.get("segment") == "datacenter" else "tab:orange"


def plot_device_trends(gpus: list) -> None:
    """bf16 dense peak and bandwidth by year (circle size = memory) and bf16 TFLOP/s per TDP watt."""
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.2))
    for p in gpus:
        for ax, value in ((axes[0], p.peak("bf16")), (axes[1], p.bandwidth_gbs)):
            ax.scatter(p.get("year"), value, s=p.memory_gib * 2, color=_color(p), alpha=0.7)
            ax.annotate(p.label, (p.get("year"), value), fontsize=7, xytext=(4, 2), textcoords="offset points")
    for ax, title, unit in ((axes[0], t("bf16 dense 피크", "bf16 dense peak"), "TFLOP/s"),
                            (axes[1], t("메모리 대역폭", "memory bandwidth"), "GB/s")):
        ax.set_yscale("log")
        ax.set_title(title, fontsize=10)
        ax.set_xlabel(t("출시 연도", "year"))
        ax.set_ylabel(unit)
        ax.grid(alpha=0.3)
    ranked = sorted(gpus, key=lambda p: p.peak("bf16") / p.get("tdp_w"))
    axes[2].barh([p.label for p in ranked], [p.peak("bf16") / p.get("tdp_w") for p in ranked],
                 color=[_color(p) for p in ranked])
    axes[2].set_xlabel(t("bf16 dense TFLOP/s / TDP (W)", "bf16 dense TFLOP/s per TDP watt"))
    axes[2].set_title(t("와트당 성능", "performance per watt"), fontsize=10)
    fig.suptitle(t("원 크기 = 메모리, 파랑 = 데이터센터, 주황 = 소비자용",
                   "circle size = memory, blue = datacenter, orange = consumer"), fontsize=10)
    fig.tight_layout()
    plt.show()


def device_metrics() -> dict:
    """Axis name -> value of a profile: year, bf16 peak, bandwidth, memory, TDP, TFLOP/s per W, ridge point."""
    return {
        t("연도", "year"): lambda p: p.get("year"),
        "bf16 dense TFLOP/s": lambda p: p.peak("bf16"),
        t("대역폭(GB/s)", "bandwidth (GB/s)"): lambda p: p.bandwidth_gbs,
        t("메모리(GiB)", "memory (GiB)"): lambda p: p.memory_gib,
        "TDP (W)": lambda p: p.get("tdp_w"),
        t("TFLOP/s / W", "TFLOP/s per W"): lambda p: p.peak("bf16") / p.get("tdp_w"),
        t("ridge point (FLOP/byte)", "ridge point (FLOP/byte)"): lambda p: p.peak("bf16") * 1e12 / (p.bandwidth_gbs * 1e9),
    }


def device_explorer(gpus: list, metrics: dict | None = None) -> None:
    """Two dropdowns pick the x and y metric (:func:`device_metrics`); the scatter of ``gpus`` redraws."""
    import ipywidgets as widgets
    import matplotlib.pyplot as plt
    from IPython.display import display
    metrics = metrics or device_metrics()
    names = list(metrics)
    x_pick = widgets.Dropdown(options=names, value=names[1], description="x", style=LABEL)
    y_pick = widgets.Dropdown(options=names, value=names[2], description="y", style=LABEL)
    out = widgets.Output()

    def redraw(*_):
        with out:
            out.clear_output(wait=True)
            fig, ax = plt.subplots(figsize=(7, 4.2))
            for p in gpus:
                x, y = metrics[x_pick.value](p), metrics[y_pick.value](p)
                ax.scatter(x, y, color=_color(p))
                ax.annotate(p.label, (x, y), fontsize=8, xytext=(4, 2), textcoords="offset points")
            ax.set_xlabel(x_pick.value)
            ax.set_ylabel(y_pick.value)
            ax.grid(alpha=0.3)
            plt.show()

    x_pick.observe(redraw, "value")
    y_pick.observe(redraw, "value")
    display(widgets.HBox([x_pick, y_pick]), out)
    redraw()


# ---------------------------------------------------------------- cost
def show_offers(offers: list[dict]) -> None:
    """The price table: provider, instance, kind, GPU, GPUs, $ per hour and per GPU-hour, the date seen."""
    show_table([{**o, "price_per_gpu_hour": round(o["price_per_gpu_hour"], 3)} for o in offers],
               ["provider", "instance", "kind", "gpu", "gpus", "price_per_hour", "price_per_gpu_hour", "seen"],
               {"provider": t("제공자", "provider"), "instance": t("인스턴스", "instance"), "kind": t("종류", "kind"),
                "gpu": "GPU", "gpus": t("GPU 수", "GPUs"), "price_per_hour": t("시간당 $", "$ per hour"),
                "price_per_gpu_hour": t("GPU-시간당 $", "$ per GPU-hour"), "seen": t("확인한 날", "seen")})


def show_estimates(days, offers: list[dict], params: float, tokens: float, gpus: int, mfu: float) -> None:
    """``days(params, tokens, gpus, profile, mfu)`` for every offer, with the GPU-hours and the bill it makes."""
    rows = []
    for o in offers:
        d = days(params, tokens, gpus, o["profile"], mfu)
        rows.append({"offer": o["id"], "gpu": o["gpu"], "days": round(d, 1), "gpu_hours": round(d * 24 * gpus),
                     "cost": round(d * 24 * gpus * o["price_per_gpu_hour"])})
    show_table(rows, headers={"offer": t("오퍼", "offer"), "days": t("일", "days"), "gpu_hours": t("GPU 시간", "GPU-hours"),
                              "cost": t("비용($)", "cost ($)")})


def cost_explorer(days, offers: list[dict]) -> None:
    """Sliders for parameters, tokens, GPUs and MFU and an offer picker; shows FLOPs, days, GPU-hours and cost."""
    import ipywidgets as widgets
    from IPython.display import display
    p_slider = widgets.FloatLogSlider(value=8e9, base=10, min=8, max=12, description=t("파라미터", "params"), style=LABEL,
                                      readout_format=".2g")
    d_slider = widgets.FloatLogSlider(value=1e11, base=10, min=9, max=13.5, description=t("토큰", "tokens"), style=LABEL,
                                      readout_format=".2g")
    g_slider = widgets.IntSlider(value=8, min=1, max=4096, description=t("GPU 수", "GPUs"), style=LABEL)
    m_slider = widgets.FloatSlider(value=0.4, min=0.05, max=0.7, step=0.05, description="MFU", style=LABEL)
    o_pick = widgets.Dropdown(options=[(f"{o['id']} (${o['price_per_gpu_hour']:.2f}/GPU-h)", o["id"]) for o in offers],
                              description=t("오퍼", "offer"), style=LABEL)
    answer = widgets.HTML()

    def update(*_):
        o = next(x for x in offers if x["id"] == o_pick.value)
        d = days(p_slider.value, d_slider.value, g_slider.value, o["profile"], m_slider.value)
        gpu_hours = d * 24 * g_slider.value
        answer.value = (f"<b>{training_flops(p_slider.value, d_slider.value):.3g} FLOP</b> · <b>{d:,.1f} {t('일', 'days')}</b> · "
                        f"{gpu_hours:,.0f} GPU-h · <b>${gpu_hours * o['price_per_gpu_hour']:,.0f}</b> "
                        f"({t('토큰/파라미터', 'tokens per parameter')} {d_slider.value / p_slider.value:.0f})")

    for w in (p_slider, d_slider, g_slider, m_slider, o_pick):
        w.observe(update, "value")
    display(widgets.VBox([p_slider, d_slider, g_slider, m_slider, o_pick, answer]))
    update()


def plot_spot(offers: list[dict], overhead, job_hours: float, checkpoint_h: float,
              rates: tuple = (0.02, 0.1, 0.3), on_demand_id: str = "aws_p5_48xlarge") -> None:
    """Cost of a ``job_hours`` job on spot against the checkpoint interval τ, one curve per interruption rate.

    ``overhead(tau, rate)``: the extra time as a share of the job; the optimum τ* = √(2δ/λ) is in the legend.
    The on-demand line checkpoints every 4 hours.
    """
    import matplotlib.pyplot as plt
    import numpy as np
    on_demand = next(o for o in offers if o["id"] == on_demand_id)
    spot = next(o for o in offers if o["id"] == on_demand_id + "_spot")
    tau = np.logspace(-1.5, 1.5, 200)
    fig, ax = plt.subplots(figsize=(8, 4))
    for lam, style in zip(rates, ("-", "--", ":")):
        ax.plot(tau, job_hours * (1 + overhead(tau, lam)) * spot["price_per_hour"], style, color="tab:green",
                label=t(f"스팟, 시간당 중단 {lam}", f"spot, {lam} interruptions/h")
                + f" (τ* = {math.sqrt(2 * checkpoint_h / lam):.2f} h)")
    ax.axhline(job_hours * (1 + checkpoint_h / 4) * on_demand["price_per_hour"], color="tab:red",
               label=t("온디맨드(4시간마다 체크포인트)", "on-demand (checkpoint every 4 h)"))
    ax.set_xscale("log")
    ax.set_xlabel(t("체크포인트 간격 τ(시간)", "checkpoint interval τ (hours)"))
    ax.set_ylabel(t("작업 비용(USD)", "job cost (USD)"))
    ax.set_title(t(f"p5.48xlarge {job_hours:.0f}시간 작업: 온디맨드 {on_demand['price_per_hour']} USD/h, "
                   f"스팟 {spot['price_per_hour']:.2f} USD/h ({spot['seen']})",
                   f"A {job_hours:.0f}-hour job on p5.48xlarge: on-demand {on_demand['price_per_hour']} USD/h, "
                   f"spot {spot['price_per_hour']:.2f} USD/h ({spot['seen']})"), fontsize=10)
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    plt.show()


# ---------------------------------------------------------------- claims
CLAIMS = Path(__file__).resolve().parent / "data" / "claims.yaml"
CLAIM_TOLERANCE = 0.05  # quoted / checked within 5% is the same figure rounded; anything more is a real deviation


def checked_value(check: dict, days=None) -> float:
    """The value a claim is checked against: a profile's dense peak or bandwidth, a price, a training estimate.

    ``days(params, tokens, gpus, profile, mfu)``: the lesson's training-time estimate (for ``training_days`` and
    ``training_cost``, the latter at the offer's price when the claim was made).
    """
    from ... import profiles
    from . import prices
    (kind, arg), = check.items()
    if kind == "peak":
        return profiles.get(arg[0]).peak(arg[1])
    if kind == "bandwidth":
        return profiles.get(arg).bandwidth_gbs
    if kind == "price":
        return next(o["price_per_hour"] for o in prices.offers() if o["id"] == arg)
    if kind == "training_memory":
        return arg["params"] * sum(recipe_bytes(arg["recipe"]).values()) / 1e9
    run = [arg[k] for k in ("params", "tokens", "gpus", "profile", "mfu")]
    if kind == "training_days":
        return days(*run)
    offer = next(o for o in prices.offers() if o["id"] == arg["offer"])
    return days(*run) * 24 * offer["earlier_price"]  # kind == "training_cost"


def claim_rows(days) -> list[dict]:
    """Every claim of ``data/claims.yaml``: quoted and checked value, their ratio, flagged beyond the tolerance."""
    from ...datafile import read_yaml
    rows = []
    from . import prices
    earlier = {o["id"]: o.get("earlier_price") for o in prices.offers()}
    for c in read_yaml(CLAIMS)["claims"]:
        checked = checked_value(c["checked"], days)
        quoted = c["quoted"] if "quoted" in c else earlier[c["checked"]["price"]]
        ratio = quoted / checked
        rows.append({"id": c["id"], "claim": t(c["claim"]["ko"], c["claim"]["en"]), "quoted": quoted,
                     "checked": checked, "ratio": ratio, "flagged": abs(ratio - 1) > CLAIM_TOLERANCE,
                     "cause": t(c["cause"]["ko"], c["cause"]["en"]) if c.get("cause") else ""})
    return rows


def show_claims(rows: list[dict]) -> None:
    """The claims as a table (ratio = quoted / checked, ⚠️ with the known cause beyond 5%), then a bar chart."""
    import matplotlib.pyplot as plt
    def number(v):
        return f"{v:,.0f}" if abs(v) >= 1000 else f"{v:.4g}"
    show_table([{**r, "quoted": number(r["quoted"]), "checked": number(r["checked"]), "ratio": round(r["ratio"], 2),
                 "flag": "⚠️" if r["flagged"] else "✓"} for r in rows],
               ["claim", "quoted", "checked", "ratio", "flag", "cause"],
               {"claim": t("주장", "claim"), "quoted": t("인용된 값", "quoted"), "checked": t("검증 값", "checked"),
                "ratio": t("비율", "ratio"), "flag": t("판정", "verdict"), "cause": t("원인", "cause")})
    fig, ax = plt.subplots(figsize=(8, 4.5))
    ax.barh(range(len(rows)), [r["ratio"] for r in rows], color=["tab:red" if r["flagged"] else "tab:gray" for r in rows])
    ax.axvspan(1 - CLAIM_TOLERANCE, 1 + CLAIM_TOLERANCE, color="tab:green", alpha=0.25,
               label=t("±5%: 같은 값", "±5%: the same figure"))
    ax.set_yticks(range(len(rows)), [r["claim"].replace("$", r"\$") for r in rows], fontsize=8)
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.set_xlabel(t("인용된 값 / 검증 값", "quoted / checked"))
    ax.legend(fontsize=8)
    ax.set_title(t("자주 인용되는 수치 대 검증 값", "Commonly quoted figures vs checked values"))
    plt.show()


# ---------------------------------------------------------------- serving
def show_serving(rows: list[dict]) -> None:
    """The serving table: model, GPU, GPUs, weights, KV cache per sequence, sequences that fit, ms per token."""
    show_table(rows, headers={"model": t("모델", "model"), "gpus": t("GPU 수", "GPUs"),
                              "weights_gb": t("가중치 GB", "weights GB"), "kv_gb": t("시퀀스당 KV GB", "KV GB per sequence"),
                              "fit": t("들어가는 시퀀스", "sequences that fit"),
                              "ms": t("그때 토큰당 ms", "ms per token then")})


def plot_batch_tradeoff(weights: float, kv_per_seq: float, memory: float, bandwidth: float, title: str,
                        batches: tuple = (1, 2, 4, 8, 16, 32, 64, 128, 256)) -> None:
    """Decode ms per token and tokens/s against the batch for one deployment (bytes; bytes/s), memory limit marked.

    One decode step reads the weights and every sequence's KV cache once: step = (weights + b·kv) / bandwidth.
    """
    import matplotlib.pyplot as plt
    import numpy as np
    b = np.array(batches, dtype=float)
    step_s = (weights + b * kv_per_seq) / bandwidth
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(11, 3.8))
    ax.plot(b, step_s * 1e3, marker="o")
    bx.plot(b, b / step_s, marker="o", color="tab:green")
    fit = (memory - weights) / kv_per_seq
    for a in (ax, bx):
        a.set_xscale("log", base=2)
        a.grid(alpha=0.3)
        a.set_xlabel(t("배치(동시에 디코딩하는 시퀀스)", "batch (sequences decoded together)"))
        if fit >= 1:
            a.axvline(fit, color="tab:red", ls="--", label=t("메모리가 허락하는 배치", "batch memory allows"))
            a.legend(fontsize=8)
    ax.set_ylabel(t("토큰당 ms(한 스텝)", "ms per token (one step)"))
    bx.set_ylabel(t("초당 토큰(상한)", "tokens/s (bound)"))
    bx.set_yscale("log")
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    plt.show()


# ---------------------------------------------------------------- small operations, CUDA graphs
def plot_call_overhead(device: str, sizes: tuple = (16, 32, 64, 128, 256, 512, 1024)) -> None:
    """Achieved GFLOP/s of n x n matmuls by n on ``device``: small ones are dominated by call overhead."""
    import matplotlib.pyplot as plt
    import torch

    from ...harness import time_fn
    achieved = []
    for n in sizes:
        a, b = torch.randn(n, n, device=device), torch.randn(n, n, device=device)
        seconds = time_fn(lambda: a @ b, device=device, budget_s=0.15).median_s
        achieved.append(2 * n**3 / seconds / 1e9)
    fig, ax = plt.subplots(figsize=(7, 3.8))
    ax.plot(sizes, achieved, marker="o")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.grid(alpha=0.3)
    ax.set_xlabel(t("행렬 크기 n(n×n @ n×n)", "matrix size n (n×n @ n×n)"))
    ax.set_ylabel("GFLOP/s")
    ax.set_title(t(f"{device}: 작은 연산은 호출 오버헤드가 지배합니다", f"{device}: small operations are dominated by call overhead"))
    plt.show()


def cuda_graph_replay() -> None:
    """Time three small CUDA operations eagerly and as one captured CUDA graph (capture once, replay with one launch)."""
    import torch

    from ...harness import time_fn
    static_in = torch.randn(64, 64, device="cuda")
    side = torch.cuda.Stream()                 # warm up on a side stream first (cuBLAS sets up outside the capture)
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            (static_in @ static_in).relu() @ static_in
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        (static_in @ static_in).relu() @ static_in
    eager = time_fn(lambda: (static_in @ static_in).relu() @ static_in, device="cuda", budget_s=0.3).median_s
    replay = time_fn(graph.replay, device="cuda", budget_s=0.3).median_s
    print(t(f"즉시 실행 {eager * 1e6:.1f} µs, CUDA graph 재생 {replay * 1e6:.1f} µs",
            f"eager {eager * 1e6:.1f} µs, CUDA graph replay {replay * 1e6:.1f} µs"))


# ---------------------------------------------------------------- MFU of a training step
def mlp_step(dims: list[int], batch: int, device: str, frozen: int = 0):
    """One SGD training step of a bias-free MLP (Linear layers, ReLU between) on ``device``, as a callable.

    The first ``frozen`` Linear layers do not train (``requires_grad_(False)``); SGD gets the others.
    The step: zero_grad, forward on ``torch.randn(batch, dims[0])``, ``out.square().mean()``, backward, SGD step.
    """
    import torch
    linears = [torch.nn.Linear(a, b, bias=False) for a, b in zip(dims[:-1], dims[1:])]
    for layer in linears[:frozen]:
        layer.requires_grad_(False)
    layers = []
    for layer in linears:
        layers += [layer, torch.nn.ReLU()]
    model = torch.nn.Sequential(*layers[:-1]).to(device)
    opt = torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=1e-3)
    x = torch.randn(batch, dims[0], device=device)

    def step():
        opt.zero_grad(set_to_none=True)
        model(x).square().mean().backward()
        opt.step()
    step.model = model
    return step


def mfu_peak(device: str) -> float:
    """The fp32 peak (TFLOP/s) the exercise's MFU is taken against: spec sheet, else this machine's measured profile."""
    from ...reference import measured_profile, profile_for
    return profile_for(device).peak("fp32") or measured_profile(device).peak("fp32")


def mfu_by_batch(achieved: dict, peak: float, measured: bool) -> tuple[dict, float]:
    """MFU per batch, and the peak it is taken of: each step's TFLOP/s (``{batch: TFLOP/s}``) over the peak. A measured
    peak below a step's rate was measured at a busier moment: it is raised to that rate
    (:func:`autograder.reference.best_seen`) and a line says so, so no MFU above 1 is shown. A spec sheet's peak
    stays as it is."""
    from ...reference import best_seen
    if measured:
        peak, note = best_seen(peak, *achieved.values())
        if note is not None:
            print(note.text())
    return {batch: rate / peak for batch, rate in achieved.items()}, peak


def plot_mfu(mfus: dict, measured=()) -> None:
    """MFU by batch size (log-2 batch axis). The title states that larger batches fill the device better only when
    the points rise, and names a busy machine when ``measured`` (the :class:`autograder.lesson.Measured` rates the
    MFUs come from) stayed noisy; an MFU above 1 (of a spec peak) is impossible, and the figure says so."""
    import matplotlib.pyplot as plt
    values = list(mfus.values())
    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.plot(list(mfus), values, marker="o")
    ax.set_xscale("log", base=2)
    ax.grid(alpha=0.3)
    ax.set_xlabel(t("배치", "batch"))
    ax.set_ylabel("MFU")
    ax.set_title(title(t("작은 배치는 장치를 채우지 못합니다", "Small batches do not fill the device"),
                       t("배치 크기별 MFU: 이번 측정에서는 배치가 클수록 오르지 않았습니다",
                         "MFU by batch size: in this run it did not rise with the batch"),
                       *([values, measured] if len(measured) else [values])))
    if max(values) > 1:
        ax.axhline(1.0, color="red", lw=1)
        ax.text(0.02, 0.95, t("MFU가 1을 넘을 수는 없습니다: 스텝이 비교한 피크보다 빨랐다고 잰 것입니다. 타이밍과 피크를 확인하세요.",
                              "An MFU above 1 is impossible: the step measured faster than the peak it is compared with. "
                              "Check the timing and the peak."), transform=ax.transAxes, va="top", fontsize=8, color="red",
                wrap=True)
    plt.show()
