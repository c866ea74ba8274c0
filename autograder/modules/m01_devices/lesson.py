"""Lesson 01's helpers: the small training step it times on the CPU and the accelerator, and its figures,
tables and widgets."""
from __future__ import annotations

from typing import Callable

from ...i18n import msg
from ...knowledge import recipe_bytes, training_flops
from ...lesson import LABEL, Measured, busy_labels, clearly_more, measure, title


def make_step(device="cpu", width: int = 256, depth: int = 3, batch: int = 128,
              transfer: bool = False, seed: int = 0) -> Callable[[], object]:
    """One SGD step of an MLP (``depth`` hidden layers of ``width``) on ``device``, as a function.

    The function returns the loss tensor without reading it (``.item()`` would
    synchronize). ``transfer=True`` copies the batch from host memory every step,
    as a training loop without a device-side data loader does.
    """
    import torch
    from torch import nn

    if not (isinstance(width, int) and width > 0 and isinstance(depth, int) and depth > 0
            and isinstance(batch, int) and batch > 0):
        raise ValueError(msg("m01.bad_step_args", width=width, depth=depth, batch=batch).text())
    generator = torch.Generator().manual_seed(seed)
    layers: list[nn.Module] = []
    for _ in range(depth):
        layers += [nn.Linear(width, width), nn.ReLU()]
    model = nn.Sequential(*layers, nn.Linear(width, 10))
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn(p.shape, generator=generator) * width ** -0.5)
    model = model.to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    loss_fn = nn.CrossEntropyLoss()
    x_host = torch.randn(batch, width, generator=generator)
    y_host = torch.randint(0, 10, (batch,), generator=generator)
    x, y = x_host.to(device), y_host.to(device)

    def step():
        inputs, targets = (x_host.to(device), y_host.to(device)) if transfer else (x, y)
        optimizer.zero_grad(set_to_none=True)
        loss = loss_fn(model(inputs), targets)
        loss.backward()
        optimizer.step()
        return loss

    return step


def step_threads():
    """CPU threads as exercise 01's speed-up check times a step: one on a computer without an accelerator (CPU vs
    CPU, comparable even on a shared machine: :func:`autograder.harness.one_cpu_thread`), torch's own number
    otherwise."""
    from ...harness import one_cpu_thread
    from ...hardware import best_device
    return one_cpu_thread(best_device())


def step_flops(width: int, depth: int = 3, batch: int = 128) -> float:
    """Approximate FLOPs of one step: 6 x weights x batch (forward 2, backward 4 per weight and sample)."""
    return training_flops(depth * width * width + width * 10, batch)


# ---------------------------------------------------------------- the lesson's figures, tables and widgets
RECIPES = {  # bytes per parameter: weights, gradients, optimizer states (incl. an fp32 master copy)
    name: tuple(recipe_bytes(name).values()) for name in ("adam_mixed", "adam_fp32", "sgd_momentum_fp32", "inference_bf16")}
FIT_GPUS = ("t4", "rtx_4090", "rtx_5090", "a100_sxm_80gb", "h200_sxm", "mi300x")


def _t(ko: str, en: str) -> str:
    from ...lesson import t

    return t(ko, en)


def recipe_names() -> dict:
    return {"adam_mixed": _t("Adam, 혼합 정밀도 (bf16 + fp32 마스터)", "Adam, mixed precision (bf16 + fp32 master)"),
            "adam_fp32": _t("Adam, fp32", "Adam, fp32"),
            "sgd_momentum_fp32": _t("SGD + 모멘텀, fp32", "SGD with momentum, fp32"),
            "inference_bf16": _t("추론만, bf16 가중치", "inference only, bf16 weights")}


def matmul_gflops(n: int, device: str = "cpu", budget_s: float = 0.25) -> float:
    """fp32 n x n matmul GFLOP/s on ``device``, timed with the course harness."""
    import torch

    from ...harness import time_fn

    a, b = torch.randn(n, n, device=device), torch.randn(n, n, device=device)
    return 2 * n**3 / time_fn(lambda: a @ b, device=device, budget_s=budget_s).median_s / 1e9


def profile_rows(profile, seen_tflops: float) -> list[dict]:
    """The rows of ``profile``'s table (TFLOP/s per dtype, then GB/s). A measured fp32 peak below ``seen_tflops``
    (what the lesson just measured) was measured at a busier moment: it is raised to it, and a line says so."""
    from ...reference import best_seen
    peaks = dict(profile.peak_tflops)
    if profile.measured and peaks.get("fp32"):
        peaks["fp32"], note = best_seen(peaks["fp32"], seen_tflops)
        if note is not None:
            print(note.text())
    rows = [{"dtype": dtype, "TFLOP/s": value} for dtype, value in peaks.items()]
    return rows + [{"dtype": _t("메모리 대역폭 GB/s", "memory bandwidth GB/s"), "TFLOP/s": profile.bandwidth_gbs}]


def plot_lines(x, series: dict, xlabel: str, ylabel: str, title: str, log2x: bool = True, figsize=(6.5, 3.8)):
    """Log-scale lines ``{label: values}`` over ``x``."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=figsize)
    for name, values in series.items():
        ax.plot(x, values, "o-", label=name)
    if log2x:
        ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend(fontsize=8)
    return fig


def plot_pairs(labels, first: list, second: list, names: tuple, ylabel: str, title: str, figsize=(8, 3.8)):
    """Two bars per label on a log scale."""
    import matplotlib.pyplot as plt
    import numpy as np

    x = np.arange(len(labels))
    fig, ax = plt.subplots(figsize=figsize)
    ax.bar(x - 0.2, first, 0.4, label=names[0])
    ax.bar(x + 0.2, second, 0.4, label=names[1])
    ax.set_xticks(x, list(labels), fontsize=8)
    ax.set_yscale("log")
    low, high = ax.get_ylim()
    ax.set_ylim(low, high * 30)  # headroom above the bars for the legend
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend(loc="upper left", ncol=2)
    return fig


def timer_pairs(pairs: dict) -> Measured:
    """``{name: (timer without waiting, timer that waits)}``, each a function returning seconds, as one
    ``{"no_wait": s, "wait": s}`` per pair: the pairs run in turns, twice and again while noisy, each keeping its run
    whose waiting timer was fastest. The spread is the waiting timers': one that does not wait reads a few µs, near
    the clock's resolution, whose jitter says nothing about how busy the machine is."""
    return measure(lambda name: {"no_wait": pairs[name][0](), "wait": pairs[name][1]()}, list(pairs), better=min,
                   key="wait")


def timer_lines(names, timed: Measured) -> list[str]:
    """One line per pair of :func:`timer_pairs`: that the timer without waiting measured less only where it clearly
    did (:func:`autograder.lesson.clearly_more`), else that the two did not clearly differ; then the busy label where
    the waiting timers stayed noisy."""
    lines = []
    for name, r in zip(names, timed):
        ratio = r["wait"] / r["no_wait"]
        times = f"{ratio:,.0f}" if ratio >= 10 else f"{ratio:.1f}"
        lines.append(_t(f"{name}: 기다리지 않은 타이머가 {times}배 짧게 쟀습니다: 작업 전체를 잰 것이 아닙니다",
                        f"{name}: the timer that did not wait measured {times}x less: not the whole work")
                     if clearly_more(r["wait"], r["no_wait"]) else
                     _t(f"{name}: 이번 측정에서는 두 타이머가 뚜렷이 다르지 않았습니다", f"{name}: in this run the two timers did not clearly differ"))
    return lines + busy_labels(timed)


VENDOR_COLORS = {"NVIDIA": "tab:green", "AMD": "tab:red", "Apple": "tab:gray", "Google": "tab:blue",
                 "AWS": "tab:orange", "Intel": "tab:cyan"}


def plot_memory_bandwidth(table: list[dict]):
    """Memory size and bandwidth of each device in a profiles table, side by side, one colour per vendor."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    fig, axes = plt.subplots(1, 2, figsize=(10, 4.6), sharey=True)
    names = [r["label"] for r in table]
    colors = [VENDOR_COLORS.get(r["vendor"], "tab:purple") for r in table]
    axes[0].barh(names, [r["memory_gib"] for r in table], color=colors)
    axes[0].set_xlabel(_t("메모리 (GiB)", "memory (GiB)"))
    axes[1].barh(names, [r["bandwidth_gbs"] for r in table], color=colors)
    axes[1].set_xlabel(_t("메모리 대역폭 (GB/s)", "memory bandwidth (GB/s)"))
    axes[0].invert_yaxis()
    vendors = dict.fromkeys(r["vendor"] for r in table)
    fig.legend(handles=[Patch(color=VENDOR_COLORS.get(v, "tab:purple"), label=v) for v in vendors],
               loc="lower center", ncol=len(vendors), fontsize=8)
    fig.suptitle(_t("메모리 크기와 대역폭 (사양서; Apple은 최대 구성)", "Memory size and bandwidth (spec sheets; Apple: largest configuration)"))
    fig.tight_layout(rect=(0, 0.06, 1, 1))
    return fig


def training_gb(n_params: float, recipe: str = "adam_mixed", activation_gb: float = 0.0) -> list[float]:
    """GB (10^9 bytes) of weights, gradients, optimizer states and activations."""
    return [b * n_params / 1e9 for b in RECIPES[recipe]] + [activation_gb]


def plot_training_memory(n_params_list, recipe: str = "adam_mixed", activation_gb: float = 0.0, ax=None):
    """Stacked GB per model size for a recipe, against the memory of some GPUs."""
    import matplotlib.pyplot as plt
    import numpy as np

    from ... import profiles

    ax = ax or plt.subplots(figsize=(7.5, 4))[1]
    labels = [f"{n / 1e9:g}B" for n in n_params_list]
    bottom = np.zeros(len(n_params_list))
    parts = [_t("가중치", "weights"), _t("그래디언트", "gradients"), _t("옵티마이저 상태", "optimizer states"),
             _t("활성값", "activations")]
    for i, part in enumerate(parts):
        values = np.array([training_gb(n, recipe, activation_gb)[i] for n in n_params_list])
        ax.bar(labels, values, bottom=bottom, label=part)
        bottom += values
    for pid in FIT_GPUS:
        p = profiles.get(pid)
        ax.axhline(p.memory_bytes / 1e9, color="black", lw=0.7, ls="--")
        ax.text(len(labels) - 0.5, p.memory_bytes / 1e9, f" {p.label} ({p.memory_gib:g} GiB)", va="bottom", ha="right", fontsize=8)
    ax.set_yscale("log")
    ax.set_ylabel("GB")
    ax.set_xlabel(_t("파라미터 수", "parameters"))
    ax.set_title(recipe_names()[recipe])
    ax.legend(loc="upper left", fontsize=8)
    return ax.figure


def memory_fit_explorer():
    """Sliders for the model size, activations and recipe: the memory it needs and the GPUs it fits on."""
    import ipywidgets as widgets
    import matplotlib.pyplot as plt
    from IPython.display import display

    from ... import profiles

    size = widgets.FloatLogSlider(value=1e9, base=10, min=8, max=11, step=0.05, description=_t("파라미터", "params"), style=LABEL,
                                  readout_format=".2e")
    activations = widgets.FloatSlider(value=4.0, min=0, max=80, step=1, description=_t("활성값 GB", "activ. GB"), style=LABEL)
    recipe = widgets.Dropdown(options=[(name, key) for key, name in recipe_names().items()], value="adam_mixed",
                              description=_t("방식", "recipe"), style=LABEL)

    def show(n_params, activation_gb, recipe):
        need = sum(training_gb(n_params, recipe, activation_gb))
        fig, ax = plt.subplots(figsize=(7.5, 3.6))
        plot_training_memory([n_params], recipe, activation_gb, ax=ax)
        plt.show()
        fits = [profiles.get(pid).label for pid in FIT_GPUS if profiles.get(pid).memory_bytes / 1e9 >= need]
        print(_t(f"필요: {need:,.1f} GB → 들어가는 장치: {', '.join(fits) or '없음 (여러 GPU에 나눠야 함)'}",
                 f"needed: {need:,.1f} GB → fits on: {', '.join(fits) or 'none (shard over several GPUs)'}"))

    display(widgets.VBox([size, activations, recipe, widgets.interactive_output(
        show, {"n_params": size, "activation_gb": activations, "recipe": recipe})]))


def cuda_lines() -> list[str]:
    """What torch.cuda says about each CUDA/ROCm GPU here, with the matching spec-sheet profile."""
    import torch

    from ... import profiles

    if not torch.cuda.is_available():
        return [_t("CUDA/ROCm GPU가 없어 이 셀은 건너뜁니다.", "No CUDA/ROCm GPU: this cell is skipped.")]
    lines = []
    for i in range(torch.cuda.device_count()):
        p = torch.cuda.get_device_properties(i)
        free, _total = torch.cuda.mem_get_info(i)
        kind = "ROCm" if torch.version.hip else "CUDA"
        bf16 = p.major >= 8 if not torch.version.hip else torch.cuda.is_bf16_supported()
        lines.append(f"cuda:{i} ({kind}): {p.name}, {p.total_memory / 2**30:.1f} GiB, compute capability {p.major}.{p.minor}, "
                     f"SMs/CUs {p.multi_processor_count}, free {free / 2**30:.1f} GiB, bf16 {bf16}")
        spec = profiles.match(p.name)
        lines.append("    " + _t("사양서 프로파일:", "spec-sheet profile:") + f" {spec.label if spec else '-'}")
    return lines


def nvml_summary() -> str:
    """Driver, name and memory of each NVIDIA GPU through NVML (nvidia-ml-py), or why NVML is not usable."""
    try:
        import pynvml

        pynvml.nvmlInit()
    except Exception as error:  # package missing, no NVIDIA driver, or no NVIDIA GPU
        return _t(f"NVML을 쓸 수 없습니다 ({type(error).__name__}). torch 정보만 씁니다.",
                  f"NVML is not usable ({type(error).__name__}). Using torch information only.")
    try:
        lines = [f"driver {pynvml.nvmlSystemGetDriverVersion()}"]
        for i in range(pynvml.nvmlDeviceGetCount()):
            handle = pynvml.nvmlDeviceGetHandleByIndex(i)
            memory = pynvml.nvmlDeviceGetMemoryInfo(handle)
            lines.append(f"{i}: {pynvml.nvmlDeviceGetName(handle)}, total {memory.total / 2**30:.1f} GiB, "
                         f"used {memory.used / 2**30:.1f} GiB")
        return "\n".join(lines)
    finally:
        pynvml.nvmlShutdown()


def cpu_rows(report) -> list[dict]:
    """This CPU as table rows: model, cores, caches, RAM, native bf16, unified-memory accelerators."""
    def size(n):
        return "?" if not n else f"{n / 2**20:g} MiB" if n >= 2**20 else f"{n / 2**10:g} KiB"

    cpu = report.cpu
    return [
        {"item": _t("모델", "model"), "value": cpu.model},
        {"item": _t("코어 (물리 / 논리)", "cores (physical / logical)"), "value": f"{cpu.physical_cores} / {cpu.logical_cores}"},
        {"item": _t("L1d / L2 (코어 하나) / L3 (전체)", "L1d / L2 (one core) / L3 (total)"),
         "value": f"{size(cpu.l1d_bytes)} / {size(cpu.l2_bytes)} / {size(cpu.l3_bytes)}"},
        {"item": "RAM", "value": f"{cpu.ram_bytes / 2**30:.1f} GiB" if cpu.ram_bytes else "?"},
        {"item": _t("하드웨어 bf16", "native bf16"), "value": cpu.native_bf16},
        {"item": _t("통합 메모리 가속기", "unified-memory accelerators"),
         "value": ", ".join(a.name for a in report.accelerators if a.unified_memory) or "-"},
    ]


def step_times(widths, runs: dict, budget_s: float = 0.3) -> dict:
    """Milliseconds of one training step per width, for each run ``{name: {"device": ..., "transfer": ...}}``
    (each a :class:`autograder.lesson.Measured`: measured twice, again while noisy)."""
    from ...harness import time_fn

    def ms(options, width):
        step = make_step(options["device"], width, transfer=options.get("transfer", False))
        return time_fn(step, device=options["device"], budget_s=budget_s).median_s * 1e3
    return {name: measure(lambda w, o=options: ms(o, w), widths, better=min,
                          desc=f"{_t('학습 스텝', 'training step')}: {name}") for name, options in runs.items()}


def plot_steps(widths, step_ms: dict):
    """Step time and achieved GFLOP/s against the hidden width."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 3.8))
    for name, values in step_ms.items():
        axes[0].plot(widths, values, "o-", label=name)
        axes[1].plot(widths, [step_flops(w) / (ms / 1e3) / 1e9 for w, ms in zip(widths, values)], "o-", label=name)
    for ax in axes:
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel(_t("은닉층 폭", "hidden width"))
        ax.legend(fontsize=8)
    axes[0].set_ylabel(_t("한 스텝 (ms)", "one step (ms)"))
    axes[1].set_ylabel(_t("달성 GFLOP/s", "achieved GFLOP/s"))
    name = _t("MLP 학습 한 스텝 (배치 128)", "One MLP training step (batch 128)")
    fig.suptitle(title(name, name, *step_ms.values()))   # with the busy label where the steps stayed noisy
    fig.tight_layout()
    return fig
