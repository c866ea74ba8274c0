"""The lesson helpers of module 06: figures, tables and widgets, the sample nvidia-smi log and its
generator, and the MLP training step whose MFU the lesson and the exercise measure.

Lessons call these so a cell shows the idea in a few lines (the formulas stay in the
cells); the tasks use :data:`SAMPLE_LOG`, :func:`mlp_step` and :func:`mfu_peak` too.
Heavy libraries (matplotlib, numpy, torch, ipywidgets) are imported inside the functions.
"""
from __future__ import annotations

import math
from pathlib import Path

from ...lesson import show_table, t

SAMPLE_LOG = Path(__file__).resolve().parent / "data" / "nvidia_smi_log.csv"


# ---------------------------------------------------------------- nvidia-smi logs
REASON_BITS = {"idle": 0x1, "power": 0x4, "hw": 0x8, "thermal": 0x20, "hw_thermal": 0x40, "brake": 0x80}
LOG_COLUMNS = ("timestamp", "utilization.gpu", "memory.used", "temperature.gpu", "power.draw", "clocks.sm",
               "clocks_throttle_reasons.active")
UNITS = {"utilization.gpu": "%", "memory.used": "MiB", "power.draw": "W", "clocks.sm": "MHz"}


def make_smi_log(rng, rows: int = 80, units: bool = True, event_name: bool = False, shuffle: bool = False,
                 na: bool = False, max_clock: int = 1980, power_limit: float = 700.0,
                 start: str = "2026/03/14 09:12:01") -> str:
    """A synthetic ``nvidia-smi --query-gpu=... --format=csv -l 1`` log of a training run.

    Phases: idle (GpuIdle, low clock), warm-up, steady training with power-cap and thermal
    episodes (clock below the maximum), data-loader stalls (utilization drops, full clock),
    idle again. ``units=False`` imitates ``--format=csv,nounits``; ``event_name`` uses the
    newer ``clocks_event_reasons.active`` header; ``na`` puts '[N/A]' into some values.
    """
    import datetime as dt
    t0 = dt.datetime.strptime(start, "%Y/%m/%d %H:%M:%S")
    names = list(LOG_COLUMNS)
    if event_name:
        names[-1] = "clocks_event_reasons.active"
    samples = []
    temp, mem = 32.0, 0.0
    idle_head, idle_tail = rng.randint(3, 6), rng.randint(2, 5)
    episode, episode_kind = 0, None
    for i in range(rows):
        stamp = (t0 + dt.timedelta(seconds=i, milliseconds=rng.randint(0, 999))).strftime("%Y/%m/%d %H:%M:%S.%f")[:-3]
        phase = "idle" if i < idle_head or i >= rows - idle_tail else "train"
        reasons, clock = 0, max_clock
        if phase == "idle":
            util, power, clock, reasons = 0, rng.uniform(68, 75), 345, REASON_BITS["idle"]
            mem = 0.0
            temp = max(30.0, temp - 1.5)
        else:
            mem = min(mem + rng.uniform(6000, 14000), 71000 + rng.uniform(0, 3000)) if mem < 60000 else mem + rng.uniform(-50, 80)
            util = rng.choice([100, 100, 99, 98, 97])
            temp = min(temp + rng.uniform(0.5, 2.0), 86.0)
            power = rng.uniform(560, power_limit - 25)
            if episode == 0 and rng.random() < 0.08:
                episode, episode_kind = rng.randint(2, 6), rng.choice(["power", "power", "thermal", "stall", "hw"])
            if episode:
                episode -= 1
                if episode_kind == "power":
                    reasons, power, clock = REASON_BITS["power"], power_limit - rng.uniform(0, 2), rng.choice([1755, 1785, 1830, 1875])
                elif episode_kind == "thermal":
                    reasons, temp, clock = REASON_BITS["thermal"] | rng.choice([0, REASON_BITS["power"]]), rng.uniform(85, 88), rng.choice([1590, 1650, 1710])
                elif episode_kind == "hw":
                    reasons, clock = rng.choice([REASON_BITS["hw"] | REASON_BITS["hw_thermal"], REASON_BITS["brake"] | REASON_BITS["hw"]]), rng.choice([810, 990])
                else:  # the input pipeline stalls: the GPU waits, utilization falls, clocks stay up
                    util, power = rng.randint(20, 60), rng.uniform(250, 400)
        values = {"timestamp": stamp, "utilization.gpu": str(util), "memory.used": str(int(mem)),
                  "temperature.gpu": str(int(temp)), "power.draw": f"{power:.2f}", "clocks.sm": str(clock),
                  names[-1]: f"0x{reasons:016x}"}
        if na and rng.random() < 0.06:
            values[rng.choice(["power.draw", "utilization.gpu", "temperature.gpu"])] = "[N/A]"
        samples.append(values)
    order = list(range(len(names)))
    if shuffle:  # drawn last, so the same seed gives the same samples in any layout
        rest = order[1:]
        rng.shuffle(rest)
        order = [0] + rest
    lines = [", ".join(names[j] + (f" [{UNITS[names[j]]}]" if units and names[j] in UNITS else "") for j in order)]
    for values in samples:
        cells = []
        for j in order:
            value = values[names[j]]
            if units and names[j] in UNITS and value != "[N/A]":
                value = f"{value} {UNITS[names[j]]}"
            cells.append(value)
        lines.append(", ".join(cells))
    return "\n".join(lines) + "\n"


def read_smi_log(path: str | Path) -> dict:
    """A log's columns by header name (units dropped) as numpy arrays; ``reasons``: the throttle/event bits as ints."""
    import csv

    import numpy as np
    with open(path, newline="", encoding="utf-8") as f:
        log = [{key.split("[")[0].strip(): value for key, value in row.items()}  # "clocks.sm [MHz]" -> "clocks.sm"
               for row in csv.DictReader(f, skipinitialspace=True)]
    reason = next(c for c in ("clocks_throttle_reasons.active", "clocks_event_reasons.active") if c in log[0])
    columns = {name: np.array([float(r[name].split()[0]) for r in log])
               for name in ("utilization.gpu", "clocks.sm", "temperature.gpu", "power.draw")}
    columns["reasons"] = np.array([int(r[reason], 16) for r in log])
    return columns


def plot_smi_log(log: dict, slowed) -> None:
    """Utilization, SM clock, temperature and power over time, samples in ``slowed`` shaded red."""
    import matplotlib.pyplot as plt
    import numpy as np
    labels = {"utilization.gpu": t("사용률 (%)", "utilization (%)"), "clocks.sm": "SM clock (MHz)",
              "temperature.gpu": t("온도 (°C)", "temperature (°C)"), "power.draw": t("전력 (W)", "power (W)")}
    secs = np.arange(len(slowed))
    fig, axes = plt.subplots(4, 1, figsize=(10, 7), sharex=True)
    for ax, (name, label) in zip(axes, labels.items()):
        values = log[name]
        ax.plot(secs, values, lw=1.2)
        ax.fill_between(secs, values.min(), values.max(), where=slowed, color="tab:red", alpha=0.2, step="mid")
        ax.set_ylabel(label, fontsize=8)
        ax.grid(alpha=0.3)
    axes[-1].set_xlabel(t("초", "seconds"))
    axes[0].set_title(t("H100 학습 로그 예시: 빨강 = 전력·열 때문에 클록이 내려간 구간",
                        "Example H100 training log: red = clocks lowered by power or heat"))
    fig.tight_layout()
    plt.show()


# ---------------------------------------------------------------- comparing devices
DEVICE_FIELDS = ("label", "segment", "year", "peak.bf16", "memory_gb", "memory.type", "bandwidth_gbs",
                 "interconnect.type", "tdp_w")


def show_device_table(ids: list[str]) -> None:
    """The profiles of ``ids`` side by side: segment, year, bf16 dense peak, memory, bandwidth, GPU link, TDP."""
    from ... import profiles
    head = {"label": t("장치", "device"), "segment": t("부문", "segment"), "year": t("연도", "year"),
            "peak.bf16": "bf16 dense TFLOP/s", "memory_gb": t("메모리 (GB)", "memory (GB)"),
            "memory.type": t("종류", "type"), "bandwidth_gbs": t("대역폭 (GB/s)", "bandwidth (GB/s)"),
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
        t("대역폭 (GB/s)", "bandwidth (GB/s)"): lambda p: p.bandwidth_gbs,
        t("메모리 (GiB)", "memory (GiB)"): lambda p: p.memory_gib,
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
    x_pick = widgets.Dropdown(options=names, value=names[1], description="x")
    y_pick = widgets.Dropdown(options=names, value=names[2], description="y")
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


def show_estimates(estimate, offers: list[dict], params: float, tokens: float, gpus: int, mfu: float) -> None:
    """``estimate(params, tokens, gpus, profile, mfu, price)`` for every offer: days, GPU-hours, cost."""
    rows = []
    for o in offers:
        r = estimate(params, tokens, gpus, o["profile"], mfu, o["price_per_gpu_hour"])
        rows.append({"offer": o["id"], "gpu": o["gpu"], "days": round(r["days"], 1), "gpu_hours": round(r["gpu_hours"]),
                     "cost": round(r["cost"])})
    show_table(rows, headers={"offer": t("오퍼", "offer"), "days": t("일", "days"), "gpu_hours": t("GPU-시간", "GPU-hours"),
                              "cost": t("비용 ($)", "cost ($)")})


def cost_explorer(estimate, offers: list[dict]) -> None:
    """Sliders for parameters, tokens, GPUs and MFU and an offer picker; shows FLOPs, days, GPU-hours and cost."""
    import ipywidgets as widgets
    from IPython.display import display
    p_slider = widgets.FloatLogSlider(value=8e9, base=10, min=8, max=12, description=t("파라미터", "params"),
                                      readout_format=".2g")
    d_slider = widgets.FloatLogSlider(value=1e11, base=10, min=9, max=13.5, description=t("토큰", "tokens"),
                                      readout_format=".2g")
    g_slider = widgets.IntSlider(value=8, min=1, max=4096, description="GPUs")
    m_slider = widgets.FloatSlider(value=0.4, min=0.05, max=0.7, step=0.05, description="MFU")
    o_pick = widgets.Dropdown(options=[(f"{o['id']} (${o['price_per_gpu_hour']:.2f}/GPU-h)", o["id"]) for o in offers],
                              description=t("오퍼", "offer"))
    answer = widgets.HTML()

    def update(*_):
        o = next(x for x in offers if x["id"] == o_pick.value)
        r = estimate(p_slider.value, d_slider.value, g_slider.value, o["profile"], m_slider.value, o["price_per_gpu_hour"])
        answer.value = (f"<b>{r['flops']:.3g} FLOP</b> · <b>{r['days']:,.1f} {t('일', 'days')}</b> · "
                        f"{r['gpu_hours']:,.0f} GPU-h · <b>${r['cost']:,.0f}</b> "
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
               label=t("온디맨드 (4시간마다 체크포인트)", "on-demand (checkpoint every 4 h)"))
    ax.set_xscale("log")
    ax.set_xlabel(t("체크포인트 간격 τ (시간)", "checkpoint interval τ (hours)"))
    ax.set_ylabel(t("작업 비용 (USD)", "job cost (USD)"))
    ax.set_title(t(f"p5.48xlarge {job_hours:.0f}시간 작업: 온디맨드 {on_demand['price_per_hour']} USD/h, "
                   f"스팟 {spot['price_per_hour']:.2f} USD/h ({spot['seen']})",
                   f"A {job_hours:.0f}-hour job on p5.48xlarge: on-demand {on_demand['price_per_hour']} USD/h, "
                   f"spot {spot['price_per_hour']:.2f} USD/h ({spot['seen']})"), fontsize=10)
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    plt.show()


# ---------------------------------------------------------------- claims
def _off(ratio: float) -> bool:
    return ratio > 2 or ratio < 0.5


def show_claims(claims: list[tuple]) -> None:
    """``(claim, seed value, checked value, basis)`` rows as a table with a verdict (off by > 2x), then a bar chart."""
    import matplotlib.pyplot as plt
    rows = [{"claim": c, "seed": f"{s:,.4g}", "checked": f"{v:,.4g}", "ratio": round(s / v, 2),
             "flag": "⚠️ " + t("2배 넘게 차이", "off by > 2x") if _off(s / v) else "✓", "basis": b}
            for c, s, v, b in claims]
    show_table(rows, headers={"claim": t("주장", "claim"), "seed": t("자료 값", "seed value"),
                              "checked": t("검증 값", "checked value"), "ratio": t("비율", "ratio"),
                              "flag": t("판정", "verdict"), "basis": t("근거", "basis")})
    fig, ax = plt.subplots(figsize=(8, 4))
    ratios = [s / v for _, s, v, _ in claims]
    ax.barh(range(len(claims)), ratios, color=["tab:red" if _off(r) else "tab:gray" for r in ratios])
    ax.axvspan(0.5, 2, color="tab:green", alpha=0.12, label=t("2배 이내", "within 2x"))
    ax.set_yticks(range(len(claims)), [c.replace("$", r"\$") for c, *_ in claims], fontsize=8)
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.set_xlabel(t("자료 값 / 검증 값", "seed value / checked value"))
    ax.legend(fontsize=8)
    ax.set_title(t("자료의 주장 대 검증 값", "Claims of the source vs checked values"))
    plt.show()


# ---------------------------------------------------------------- serving
def show_serving(rows: list[dict]) -> None:
    """The serving table: model, GPU, weights and KV cache (GB), GPUs needed, tokens/s bound."""
    show_table(rows, headers={"model": t("모델", "model"), "weights_gb": t("가중치 GB", "weights GB"),
                              "kv_gb": t("KV 캐시 GB", "KV cache GB"), "gpus": t("GPU 수", "GPUs"),
                              "tok_s": t("초당 토큰 상한", "tokens/s bound")})


def plot_serving(serving, model: dict, context: int, ids: tuple = ("h100_sxm", "h200_sxm"),
                 batches: tuple = (1, 2, 4, 8, 16, 32, 64, 128)) -> None:
    """GPUs needed and tokens/s bound per GPU against the batch, for each profile in ``ids``.

    ``serving(model, context, batch, profile_id)`` returns ``gpus`` and ``tok_s`` (the lesson's function).
    """
    import matplotlib.pyplot as plt

    from ... import profiles
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(11, 3.8))
    for pid in ids:
        runs = [serving(model, context, b, pid) for b in batches]
        ax.step(batches, [r["gpus"] for r in runs], where="post", marker="o", label=profiles.get(pid).label)
        bx.plot(batches, [r["tok_s"] / r["gpus"] for r in runs], marker="o", label=profiles.get(pid).label)
    ax.set_ylabel(t("필요한 GPU 수", "GPUs needed"))
    bx.set_ylabel(t("GPU당 초당 토큰 상한", "tokens/s bound per GPU"))
    for a in (ax, bx):
        a.set_xscale("log", base=2)
        a.grid(alpha=0.3)
        a.legend(fontsize=8)
        a.set_xlabel(t("배치 (동시 요청)", "batch (concurrent requests)"))
    bx.set_yscale("log")
    fig.suptitle(t("70B bf16, 컨텍스트 8192: H200은 GPU가 덜 필요하고 GPU마다 더 빨리 읽습니다",
                   "70B bf16, context 8192: the H200 needs fewer GPUs and each reads faster"), fontsize=10)
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
    ax.set_xlabel(t("행렬 크기 n (n×n @ n×n)", "matrix size n (n×n @ n×n)"))
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
    print(f"eager {eager * 1e6:.1f} µs, CUDA graph replay {replay * 1e6:.1f} µs")


# ---------------------------------------------------------------- MFU of a training step
def mlp_step(dims: list[int], batch: int, device: str):
    """One SGD training step of a bias-free MLP (Linear layers, ReLU between) on ``device``, as a callable.

    The step: zero_grad, forward on ``torch.randn(batch, dims[0])``, ``out.square().mean()``, backward, SGD step.
    """
    import torch
    layers = []
    for a, b in zip(dims[:-1], dims[1:]):
        layers += [torch.nn.Linear(a, b, bias=False), torch.nn.ReLU()]
    model = torch.nn.Sequential(*layers[:-1]).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    x = torch.randn(batch, dims[0], device=device)

    def step():
        opt.zero_grad(set_to_none=True)
        model(x).square().mean().backward()
        opt.step()
    return step


def mfu_peak(device: str) -> float:
    """The fp32 peak (TFLOP/s) the exercise's MFU is taken against: spec sheet, else this machine's measured profile."""
    from ...reference import measured_profile, profile_for
    return profile_for(device).peak("fp32") or measured_profile(device).peak("fp32")


def plot_mfu(mfus: dict) -> None:
    """MFU by batch size (log-2 batch axis)."""
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.plot(list(mfus), list(mfus.values()), marker="o")
    ax.set_xscale("log", base=2)
    ax.grid(alpha=0.3)
    ax.set_xlabel(t("배치", "batch"))
    ax.set_ylabel("MFU")
    ax.set_title(t("작은 배치는 장치를 채우지 못합니다", "Small batches do not fill the device"))
    plt.show()
