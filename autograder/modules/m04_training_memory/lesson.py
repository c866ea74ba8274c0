"""Module 04 lesson helpers: a tiny language model to train, peak-memory probes per backend,
the four memory-saving techniques measured side by side, the decision diagram, the bytes of each
training recipe, the activation estimate of a transformer (Korthikanti et al.), the GPU calculator
and the lesson's figures.

Peak memory is read the way each backend allows: CUDA counts every allocation
(``torch.cuda.max_memory_allocated``); MPS has no peak counter, so the driver's allocated
memory is sampled after each forward pass, when the activations are alive; a CPU has no
allocator statistics in PyTorch, so the probe adds up the tensors saved for backward
(``torch.autograd.graph.saved_tensors_hooks``) and the gradients held at that moment.
"""
from __future__ import annotations

import warnings
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from typing import Any, Callable

from ...i18n import Message, msg
from ...knowledge import bytes_per_param  # the course's one rule of bytes per parameter (module 01 shows it too)
from .data import table
from ...lesson import LABEL, Measured

TECHNIQUES = ("plain", "autocast", "checkpoint", "accumulation")
MICRO_BATCHES = 4


# ---------------------------------------------------------------- the model
def tiny_lm(vocab: int = 256, dim: int = 64, heads: int = 4, layers: int = 4, checkpoint: bool = False):
    """A pre-LayerNorm decoder-only transformer small enough to train on a laptop CPU."""
    import torch.nn as nn
    import torch.nn.functional as F
    from torch.utils.checkpoint import checkpoint as ckpt

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
            self.qkv, self.proj = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
            self.fc1, self.fc2 = nn.Linear(dim, 4 * dim), nn.Linear(4 * dim, dim)

        def forward(self, x):
            b, s, d = x.shape
            q, k, v = self.qkv(self.ln1(x)).view(b, s, 3, heads, d // heads).permute(2, 0, 3, 1, 4)
            a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.proj(a.transpose(1, 2).reshape(b, s, d))
            return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))

    class TinyLM(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(vocab, dim)
            self.blocks = nn.ModuleList(Block() for _ in range(layers))
            self.ln, self.head = nn.LayerNorm(dim), nn.Linear(dim, vocab)
            self.checkpoint = checkpoint

        def forward(self, tokens):
            x = self.embed(tokens)
            for block in self.blocks:
                x = ckpt(block, x, use_reentrant=False) if self.checkpoint else block(x)
            return self.head(self.ln(x))

    return TinyLM()


def batch(size: int = 16, seq: int = 64, vocab: int = 256, seed: int = 0, device: Any = "cpu"):
    """Random token ids and next-token targets (the same for every technique)."""
    import torch

    g = torch.Generator().manual_seed(seed)
    tokens = torch.randint(vocab, (size, seq + 1), generator=g)
    return tokens[:, :-1].to(device), tokens[:, 1:].to(device)


def state_bytes(model, optimizer=None) -> dict:
    """Bytes held by weights, gradients and optimizer states right now."""
    import torch

    def nbytes(tensors):
        return sum(t.numel() * t.element_size() for t in tensors if isinstance(t, torch.Tensor))

    params = list(model.parameters())
    states = [v for s in (optimizer.state.values() if optimizer else []) for v in s.values()]
    return {"weights": nbytes(params), "gradients": nbytes(p.grad for p in params),
            "optimizer": nbytes(t for t in states if t.dim() > 0)}


# ---------------------------------------------------------------- mixed precision set-up
def amp_dtype(device: str, torch_module=None):
    """The autocast dtype to use on ``device`` (bf16 where it works, else fp16), or None."""
    torch = torch_module
    if torch is None:
        import torch
    kind = str(device).split(":")[0]
    if kind == "cuda":
        return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
    candidates = (torch.bfloat16, torch.float16)
    return next((dt for dt in candidates if amp_usable(torch, kind, dt)), None)


def amp_usable(torch, kind: str, dtype) -> bool:
    """Autocast works in ``dtype`` on ``kind``, and for fp16 so does a GradScaler step."""
    return _autocast_works(torch, kind, dtype) and (dtype != torch.float16 or _scaler_works(torch, kind))


def _autocast_works(torch, kind: str, dtype) -> bool:
    """Whether a Linear under autocast(kind, dtype) runs forward and backward in ``dtype``."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # autocast warns (and disables itself) for an unsupported dtype
            lin = torch.nn.Linear(4, 4).to(kind)
            with torch.autocast(device_type=kind, dtype=dtype):
                out = lin(torch.ones(2, 4, device=kind))
            out.float().sum().backward()
            return out.dtype == dtype
    except Exception:  # backend or dtype missing in this build
        return False


def _scaler_works(torch, kind: str) -> bool:
    """Whether torch.amp.GradScaler(kind) can scale, unscale and step here (older MPS builds cannot)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            p = torch.nn.Parameter(torch.ones(2, device=kind))
            opt = torch.optim.SGD([p], lr=0.5)
            scaler = torch.amp.GradScaler(kind)
            scaler.scale((p * p).sum()).backward()
            scaler.step(opt)
            scaler.update()
            return bool(torch.isfinite(p).all()) and float(p.detach().sum()) < 2.0
    except Exception:  # no scaler for this backend in this build
        return False


def grad_scaler(device: str, dtype, **settings):
    """A ``torch.amp.GradScaler`` (``settings``: init_scale, growth_interval, ...) on for fp16, a pass-through otherwise."""
    import torch

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "GradScaler is enabled, but CUDA is not available" style notices
        return torch.amp.GradScaler(str(device).split(":")[0], enabled=dtype == torch.float16, **settings)


# ---------------------------------------------------------------- probes
@contextmanager
def saved_for_backward(model):
    """While open, count what autograd keeps for backward: yields {storage: bytes}, each storage once and the
    model's own parameters as 0 (they are in memory anyway)."""
    import torch

    weights = {p.untyped_storage().data_ptr() for p in model.parameters()}
    kept: dict[int, int] = {}

    def keep(tensor):
        storage = tensor.untyped_storage()
        kept.setdefault(storage.data_ptr(), 0 if storage.data_ptr() in weights else storage.nbytes())
        return tensor

    with torch.autograd.graph.saved_tensors_hooks(keep, lambda tensor: tensor):
        yield kept


class SavedTensorProbe:
    """CPU (any device): bytes saved for backward by each forward, plus gradients held then."""

    method = "m04.probe.saved"

    def start(self, model) -> None:
        self.model = model
        self.peak_bytes = 0

    def _grad_bytes(self) -> int:
        return sum(p.grad.numel() * p.grad.element_size() for p in self.model.parameters() if p.grad is not None)

    @contextmanager
    def forward(self):
        with saved_for_backward(self.model) as kept:
            yield
        self.peak_bytes = max(self.peak_bytes, sum(kept.values()) + self._grad_bytes())

    def stop(self) -> int:
        return max(self.peak_bytes, self._grad_bytes())


class CudaProbe:
    """CUDA/ROCm: the caching allocator's peak above what was allocated at the start."""

    method = "m04.probe.cuda"

    def __init__(self, backend=None):
        if backend is None:
            import torch
            backend = torch.cuda
        self.backend = backend

    def start(self, model) -> None:
        self.backend.synchronize()
        self.backend.reset_peak_memory_stats()
        self.base = self.backend.memory_allocated()

    @contextmanager
    def forward(self):
        yield

    def stop(self) -> int:
        self.backend.synchronize()
        return self.backend.max_memory_allocated() - self.base


class MpsProbe:
    """Apple MPS: the Metal driver's allocated memory, sampled after every forward pass."""

    method = "m04.probe.mps"

    def __init__(self, backend=None):
        if backend is None:
            import torch
            backend = torch.mps
        self.backend = backend

    def _sample(self) -> None:
        self.backend.synchronize()
        self.peak_bytes = max(self.peak_bytes, self.backend.driver_allocated_memory())

    def start(self, model) -> None:
        self.backend.synchronize()
        self.base = self.peak_bytes = self.backend.driver_allocated_memory()

    @contextmanager
    def forward(self):
        yield
        self._sample()

    def stop(self) -> int:
        self._sample()
        return self.peak_bytes - self.base


class NoProbe:
    """Measures nothing (used while timing)."""

    def forward(self):
        return nullcontext()


def probe_for(device: str):
    """The probe that measures peak memory on ``device`` ('cuda', 'mps', anything else: saved tensors)."""
    kind = str(device).split(":")[0]
    return CudaProbe() if kind == "cuda" else MpsProbe() if kind == "mps" else SavedTensorProbe()


# ---------------------------------------------------------------- one training step
def lm_loss(model, tokens, targets, amp=None):
    """Next-token cross-entropy of ``model`` on a batch, under autocast in ``amp`` when given."""
    import torch
    import torch.nn.functional as F

    cast = torch.autocast(device_type=tokens.device.type, dtype=amp) if amp is not None else nullcontext()
    with cast:
        return F.cross_entropy(model(tokens).flatten(0, 1), targets.flatten())


def train_step(model, optimizer, tokens, targets, *, probe=None, amp=None, scaler=None, micro: int = 1) -> float:
    """One optimizer step over ``micro`` chunks of the batch (each weighted by its share); returns the loss."""
    probe = probe or NoProbe()
    optimizer.zero_grad(set_to_none=True)
    losses = []
    for chunk, chunk_targets in zip(tokens.chunk(micro), targets.chunk(micro)):
        with probe.forward():
            part = lm_loss(model, chunk, chunk_targets, amp) * (chunk.shape[0] / tokens.shape[0])
        (scaler.scale(part) if scaler is not None else part).backward()
        losses.append(part.item())
    if scaler is None:
        optimizer.step()
    else:
        scaler.step(optimizer)
        scaler.update()
    return sum(losses)


@dataclass
class Result:
    """One technique measured: peak bytes during a step and seconds per step."""

    technique: str
    peak_bytes: int | None
    step_s: float | None
    method: Message
    note: Message | None = None


def setup(technique: str, device: str, seed: int = 0, **model_kw):
    """Model, optimizer and the keyword arguments of :func:`train_step` for ``technique``."""
    import torch

    if technique not in TECHNIQUES:
        raise ValueError(f"technique은(는) {TECHNIQUES} 중 하나 / technique must be one of {TECHNIQUES}: {technique!r}")
    torch.manual_seed(seed)
    model = tiny_lm(checkpoint=technique == "checkpoint", **model_kw).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    kw: dict = {"micro": MICRO_BATCHES if technique == "accumulation" else 1}
    if technique == "autocast":
        kw["amp"] = amp_dtype(device)
        kw["scaler"] = grad_scaler(device, kw["amp"]) if kw["amp"] is not None else None
    return model, optimizer, kw


def measure(technique: str, device: str = "cpu", budget_s: float = 1.0, size: int = 8,
            timer: Callable | None = None, probe=None) -> Result:
    """Peak memory of one training step of the tiny model with ``technique``, and its step time (on a CPU, on one
    thread: a shared or busy CPU slows every technique alike instead of stalling threads that wait for each other)."""
    with one_cpu_thread(device):
        return _measure(technique, device, budget_s, size, timer, probe)


def measure_techniques(device: str = "cpu", budget_s: float = 0.3, **kw) -> Measured:
    """:func:`measure` of every technique, in turns, twice and again while a step time is noisy
    (:func:`autograder.lesson.measure`): each technique's :class:`Result` with its fastest step, carrying the spread
    that says whether the machine was busy. A technique this device cannot run has no step time and counts as
    steady."""
    from ...lesson import measure as in_turns

    def step(technique):
        result = measure(technique, device, budget_s, **kw)
        return {"step_s": result.step_s or 0.0, "result": result}
    runs = in_turns(step, list(TECHNIQUES), better=min, key="step_s")
    return runs.carried(r["result"] for r in runs)


@contextmanager
def one_cpu_thread(device: str):
    """torch on one thread while measuring on a CPU (other devices keep torch's setting)."""
    import torch

    threads = torch.get_num_threads()
    if str(device).split(":")[0] == "cpu":
        torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def _measure(technique, device, budget_s, size, timer, probe) -> Result:
    from ...harness import time_fn

    model, optimizer, kw = setup(technique, device)
    probe = probe or probe_for(device)
    method = msg(probe.method)
    if technique == "autocast" and kw["amp"] is None:
        return Result(technique, None, None, method, msg("m04.measure.no_amp", device=device))
    tokens, targets = batch(size=size, device=device)
    train_step(model, optimizer, tokens, targets, **kw)  # warm-up: creates the optimizer states
    probe.start(model)
    train_step(model, optimizer, tokens, targets, probe=probe, **kw)
    peak = probe.stop()
    timing = (timer or time_fn)(lambda: train_step(model, optimizer, tokens, targets, **kw),
                                device=device, budget_s=budget_s, warmup=0, inner=1)  # warmed up above
    note = msg("m04.measure.amp_dtype", dtype=str(kw["amp"]).replace("torch.", "")) if kw.get("amp") else None
    return Result(technique, int(peak), timing.median_s, method, note)


# ---------------------------------------------------------------- decision diagram
DIAGRAM_STEPS = ("m04.diagram.amp", "m04.diagram.accumulate", "m04.diagram.checkpoint",
                 "m04.diagram.shard", "m04.diagram.offload", "m04.diagram.split")


def decision_diagram(ax=None):
    """The order to try the techniques in, drawn with matplotlib; returns the figure."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import FancyBboxPatch

    if ax is None:
        fig, ax = plt.subplots(figsize=(10.5, 8))
    fig = ax.figure
    ax.set_xlim(0, 11)
    ax.set_ylim(0.8, 14)
    ax.axis("off")

    def box(x, y, text, color, w=5.2, h=1.0):
        ax.add_patch(FancyBboxPatch((x - w / 2, y - h / 2), w, h, boxstyle="round,pad=0.08",
                                    facecolor=color, edgecolor="#333333", linewidth=1.2))
        ax.text(x, y, text, ha="center", va="center", fontsize=9.5, wrap=True)

    def arrow(x0, y0, x1, y1, label=None, style="-|>", dashed=False):
        ax.annotate("", xy=(x1, y1), xytext=(x0, y0),
                    arrowprops=dict(arrowstyle=style, color="#333333", lw=1.2, linestyle="--" if dashed else "-"))
        if label:
            ax.text((x0 + x1) / 2 + 0.12, (y0 + y1) / 2, label, fontsize=8.5, color="#333333", va="center")

    cx = 5.6
    box(cx, 13.2, msg("m04.diagram.start").text(), "#f8d7da")
    box(cx, 11.7, msg("m04.diagram.question").text(), "#fff3cd", w=6.2, h=1.2)
    arrow(cx, 12.7, cx, 12.3)
    colors = ("#d1e7dd", "#d1e7dd", "#d1e7dd", "#cfe2ff", "#cfe2ff", "#e2d9f3")
    ys = (10.0, 8.5, 7.0, 5.5, 4.0, 2.5)
    for i, (key, y, color) in enumerate(zip(DIAGRAM_STEPS, ys, colors)):
        box(cx, y, f"{i + 1}. " + msg(key).text(), color)
        if i:
            arrow(cx, ys[i - 1] - 0.5, cx, y + 0.5, msg("m04.diagram.not_enough").text() if i == 1 else None)
        arrow(cx - 2.6, y, 1.9, min(max(y, 4.2), 9.8), dashed=True)
    arrow(cx, 11.1, cx, 10.5, msg("m04.diagram.yes").text())
    ax.annotate("", xy=(cx + 2.6, 5.5), xytext=(cx + 3.1, 11.7),
                arrowprops=dict(arrowstyle="-|>", color="#b02a37", lw=1.4, connectionstyle="angle,angleA=-90,angleB=180"))
    ax.text(cx + 3.2, 10.9, msg("m04.diagram.no").text(), color="#b02a37", fontsize=9, va="top")
    box(1.0, 7.0, msg("m04.diagram.train").text(), "#e9ecef", w=1.7, h=5.8)
    ax.text(1.9, 1.2, msg("m04.diagram.legend").text(), fontsize=8.5, color="#555555")
    ax.set_title(msg("m04.diagram.title").text(), fontsize=12)
    return fig


# ---------------------------------------------------------------- lesson figures and tables
GB, GIB = 1e9, 2**30  # model-state sizes are quoted in GB (as the ZeRO paper does); GPU capacities are binary (GiB)
RECIPES = (("fp32", "adam"), ("mixed", "adam"), ("mixed_fp32_grads", "adam"), ("bf16", "adam"), ("fp32", "momentum"),
           ("fp32", "sgd"))
PART_COLORS = (("weights", "#4c72b0"), ("gradients", "#dd8452"), ("optimizer", "#55a868"))


def part_names() -> dict:
    """The three kinds of model state, as tables and legends show them."""
    from ...lesson import t

    return {"weights": t("가중치", "weights"), "gradients": t("그래디언트", "gradients"),
            "optimizer": t("옵티마이저 상태", "optimizer states")}


def activation_estimate(layers: int, hidden: int, heads: int, seq: int, micro_batch: int, mode: str = "none") -> int:
    """Activation bytes of a transformer for one micro-batch (Korthikanti et al. 2022, ``data/memory.yaml``).

    ``mode``: "none" keeps everything, "selective" recomputes the attention scores, "full" keeps each
    layer's input and recomputes one layer at a time during the backward pass.
    """
    c = table("memory")["activations"]
    if mode not in c["modes"]:
        raise ValueError(f"mode은(는) {c['modes']} 중 하나 / mode must be one of {c['modes']}: {mode!r}")
    tokens = seq * micro_batch * hidden
    layer = c["linear"] * tokens + c["attention"] * heads * seq * seq * micro_batch
    if mode == "none":
        return layers * layer
    if mode == "selective":
        return layers * c["linear"] * tokens
    return layers * c["layer_input"] * tokens + layer


def recipe_rows(n_params: float = 7e9) -> list[dict]:
    """One row per training recipe: bytes per parameter and the model states of ``n_params`` in GB and GiB."""
    from ...lesson import t

    names, rows = part_names(), []
    for precision, optimizer in RECIPES:
        b = bytes_per_param(precision, optimizer)
        total = n_params * sum(b.values())
        rows.append({t("방식", "recipe"): f"{precision} + {optimizer}", **{names[k]: v for k, v in b.items()},
                     t("합계 B/param", "total B/param"): sum(b.values()),
                     t(f"{n_params / 1e9:g}B 모델(GB)", f"{n_params / 1e9:g}B model (GB)"): round(total / GB, 1),
                     t(f"{n_params / 1e9:g}B 모델(GiB)", f"{n_params / 1e9:g}B model (GiB)"): round(total / GIB, 1)})
    return rows


def plot_recipes(n_params: float = 7e9, profile_id: str = "h100_sxm"):
    """Stacked bars of weights, gradients and optimizer states per recipe (GiB), beside one GPU's capacity."""
    import matplotlib.pyplot as plt

    from ... import profiles
    from ...lesson import t

    gpu, names = profiles.get(profile_id), part_names()
    fig, ax = plt.subplots(figsize=(9, 3.8))
    labels, bottom = [f"{p}\n{o}" for p, o in RECIPES], [0.0] * len(RECIPES)
    for part, color in PART_COLORS:
        values = [n_params * bytes_per_param(p, o)[part] / GIB for p, o in RECIPES]
        ax.bar(labels, values, bottom=bottom, color=color, label=names[part])
        bottom = [b + v for b, v in zip(bottom, values)]
    ax.axhline(gpu.memory_gib, color="#c44e52", ls="--")
    ax.text(len(RECIPES) - 0.5, gpu.memory_gib + 3, f"{gpu.label}: {gpu.memory_gib:g} GiB", ha="right", color="#c44e52")
    ax.set_ylabel("GiB")
    ax.tick_params(axis="x", labelsize=8)
    ax.set_title(t(f"{n_params / 1e9:g}B 모델의 모델 상태(활성값 제외)",
                   f"Model states of a {n_params / 1e9:g}B model (activations not included)"))
    ax.legend()
    return fig


def activation_bytes(model, *inputs) -> int:
    """What ``model(*inputs)`` keeps for backward, counted once per storage (parameters left out)."""
    with saved_for_backward(model) as kept:
        model(*inputs)
    return sum(kept.values())


ACTIVATION_SWEEPS = {"size": [2, 4, 8, 16, 32], "seq": [16, 32, 64, 128, 256], "layers": [1, 2, 4, 8, 12]}


def activation_sweep(device: str = "cpu", base: dict | None = None) -> dict:
    """MiB of activations the tiny model saves, varying batch size, sequence length and depth one at a time."""
    import torch

    torch.manual_seed(0)
    base = base or {"size": 8, "seq": 64, "layers": 4}
    measured = {}
    with one_cpu_thread(device):
        for knob, values in ACTIVATION_SWEEPS.items():
            measured[knob] = []
            for v in values:
                cfg = {**base, knob: v}
                model = tiny_lm(layers=cfg["layers"]).to(device)
                tokens, _ = batch(size=cfg["size"], seq=cfg["seq"], device=device)
                measured[knob].append(activation_bytes(model, tokens) / 2**20)
    return measured


def plot_activation_sweep(measured: dict):
    import matplotlib.pyplot as plt

    from ...lesson import t

    names = {"size": t("배치 크기", "batch size"), "seq": t("시퀀스 길이", "sequence length"),
             "layers": t("층 수", "layers")}
    fig, axes = plt.subplots(1, 3, figsize=(12, 3.4))
    for ax, (knob, values) in zip(axes, ACTIVATION_SWEEPS.items()):
        ax.plot(values, measured[knob], "o-")
        ax.set_xlabel(names[knob])
        ax.set_ylabel("MiB")
        ax.grid(alpha=0.3)
    fig.suptitle(t("작은 트랜스포머가 역전파용으로 저장하는 활성값(측정)",
                   "Activations a small transformer saves for the backward pass (measured)"))
    fig.tight_layout()
    return fig


def activation_rows(model: dict, micro_batches=(1, 8)) -> list[dict]:
    """The activation estimate of ``model`` (layers, hidden, heads, seq) per recomputation mode, in GiB."""
    from ...lesson import t

    modes = {"none": t("없음(전부 보관)", "none (keep everything)"),
             "selective": t("선택적(어텐션 점수 재계산)", "selective (recompute the attention scores)"),
             "full": t("전체(층 입력만 보관)", "full (keep the layer inputs only)")}
    return [{t("재계산", "recomputation"): label,
             **{t(f"마이크로배치 {b} (GiB)", f"micro-batch {b} (GiB)"):
                round(activation_estimate(model["layers"], model["hidden"], model["heads"], model["seq"], b, mode) / GIB, 2)
                for b in micro_batches}}
            for mode, label in modes.items()]


# ---------------------------------------------------------------- the GPU-count calculator
def recipe_modes() -> dict:
    from ...lesson import t

    return {"mixed_adam": (t("학습: 혼합 정밀도 Adam", "train: mixed-precision Adam"), ("mixed", "adam")),
            "mixed_fp32_grads_adam": (t("학습: 혼합 정밀도 Adam, fp32 그래디언트", "train: mixed-precision Adam, fp32 gradients"),
                                      ("mixed_fp32_grads", "adam")),
            "fp32_adam": (t("학습: fp32 Adam", "train: fp32 Adam"), ("fp32", "adam")),
            "bf16_adam": (t("학습: 순수 bf16 Adam", "train: pure bf16 Adam"), ("bf16", "adam")),
            "infer": (t("추론: bf16 가중치만", "inference: bf16 weights only"), ("bf16", None))}


def split_bytes(n_params: float, mode: str, stage: int) -> tuple[float, float]:
    """(bytes every GPU keeps whole, bytes divided over the GPUs) at this ZeRO stage."""
    precision, optimizer = recipe_modes()[mode][1]
    b = bytes_per_param(precision, optimizer)
    if optimizer is None:  # inference: the weights split evenly
        return 0.0, sum(b.values()) * n_params
    sharded = table("memory")["zero_stages"][stage]
    return (sum(n_params * v for k, v in b.items() if k not in sharded),
            sum(n_params * v for k, v in b.items() if k in sharded))


def fit_rows(n_params: float, mode: str, stage: int, gpus: int, act_gib: float) -> list[dict]:
    """Each accelerator with memory: GiB needed per GPU, whether ``gpus`` of them fit, the fewest that fit."""
    import math

    from ... import profiles
    from ...lesson import t

    usable = table("memory")["planning"]["usable_fraction"]
    whole, shared = split_bytes(n_params, mode, stage)
    need = whole + shared / gpus + act_gib * GIB
    rows = []
    for p in profiles.all_of():
        if not p.memory_gib:
            continue
        room = usable * p.memory_bytes - whole - act_gib * GIB
        fewest = None if room <= 0 else (max(1, math.ceil(shared / room)) if shared else 1)
        rows.append({t("장치", "device"): p.label, t("메모리 GiB", "memory GiB"): p.memory_gib,
                     t("GPU당 필요 GiB", "needed GiB per GPU"): round(need / GIB, 1),
                     t(f"{gpus}장에 들어감", f"fits on {gpus}"): "✅" if need <= usable * p.memory_bytes else "❌",
                     t("최소 GPU 수", "minimum GPUs"): fewest if fewest is not None else "—"})
    return rows


def memory_calculator():
    """Sliders for parameters, recipe, ZeRO stage, GPUs and activations; the table of devices that fit, as the value
    of an HTML widget (an Output widget, whose prints are routed into it, has stalled headless runs until timeout)."""
    import html

    import ipywidgets as widgets
    from IPython.display import display

    from ...lesson import t, table_html

    params = widgets.FloatLogSlider(value=7e9, base=10, min=8, max=12, step=0.05, readout_format=".3g",
                                    description=t("파라미터", "parameters"), style=LABEL)
    mode = widgets.Dropdown(options=[(label, key) for key, (label, _) in recipe_modes().items()], value="mixed_adam",
                            description=t("방식", "recipe"), style=LABEL)
    stage = widgets.Dropdown(options=[0, 1, 2, 3], value=0, description="ZeRO stage", style=LABEL)
    gpus = widgets.Dropdown(options=[1, 2, 4, 8, 16, 32, 64, 128, 256, 512], value=1, description=t("GPU 수", "GPUs"), style=LABEL)
    act = widgets.FloatSlider(value=4.0, min=0, max=60, step=0.5, description=t("활성값 GiB", "activations GiB"), style=LABEL)
    view = widgets.HTML()

    def render(*_):
        rows = fit_rows(params.value, mode.value, stage.value, gpus.value, act.value)
        fits = sum(r[t(f"{gpus.value}장에 들어감", f"fits on {gpus.value}")] == "✅" for r in rows)
        summary = t(f"{len(rows)}개 장치 중 {fits}개에 들어갑니다.", f"Fits on {fits} of {len(rows)} devices.")
        view.value = f"<p>{html.escape(summary)}</p>" + table_html(rows)

    for w in (params, mode, stage, gpus, act):
        w.observe(render, names="value")
    render()
    display(widgets.VBox([widgets.HBox([params, mode]), widgets.HBox([stage, gpus, act]), view]))


def zero_rows() -> list[dict]:
    """Model states per GPU of the ZeRO paper's example at each stage, computed here beside the paper's figures."""
    from ...lesson import t

    ex = table("memory")["zero_paper_example"]
    rows = []
    for stage in range(4):
        whole, shared = split_bytes(ex["params"], "mixed_adam", stage)
        rows.append({"stage": stage, t("계산(GB)", "computed (GB)"): round((whole + shared / ex["gpus"]) / GB, 2),
                     t("ZeRO 논문(GB)", "ZeRO paper (GB)"): ex["gb_per_stage"][stage]})
    return rows


def plot_zero_stages(n_params: float = 7.5e9, profile_ids=("h100_sxm", "rtx_4090")):
    """Model states per GPU (GiB) against the GPU count, one line per ZeRO stage, beside 90 % of some GPUs."""
    import matplotlib.pyplot as plt

    from ... import profiles
    from ...lesson import t

    usable = table("memory")["planning"]["usable_fraction"]
    gpus = [1, 2, 4, 8, 16, 32, 64, 128]
    fig, ax = plt.subplots(figsize=(8, 3.8))
    for stage in range(4):
        whole, shared = split_bytes(n_params, "mixed_adam", stage)
        ax.plot(gpus, [(whole + shared / n) / GIB for n in gpus], "o-", label=f"ZeRO stage {stage}")
    for pid in profile_ids:
        p = profiles.get(pid)
        ax.axhline(usable * p.memory_gib, ls="--", color="gray")
        ax.text(gpus[-1], usable * p.memory_gib * 1.08, f"{usable:.0%} {p.label}", ha="right", fontsize=8, color="gray")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel(t("GPU 수 N", "GPUs N"))
    ax.set_ylabel(t("GPU당 모델 상태(GiB)", "model states per GPU (GiB)"))
    ax.set_title(t(f"{n_params / 1e9:g}B 모델, 혼합 정밀도 Adam", f"{n_params / 1e9:g}B model, mixed-precision Adam"))
    ax.legend(fontsize=8)
    return fig


# ---------------------------------------------------------------- mixed precision and loss scaling
def autocast_rows(device: str, dtype) -> list[dict]:
    """The dtype each common op returns under ``torch.autocast(device, dtype)``."""
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    from ...lesson import t

    x = torch.randn(8, 16, device=device)
    lin, ln = nn.Linear(16, 16).to(device), nn.LayerNorm(16).to(device)
    target = torch.randint(16, (8,), device=device)
    ops = {"linear": lambda: lin(x), "matmul": lambda: x @ x.T, "layer_norm": lambda: ln(lin(x)),
           "softmax": lambda: torch.softmax(lin(x), -1), "gelu": lambda: F.gelu(lin(x)), "sum": lambda: lin(x).sum(),
           "cross_entropy": lambda: F.cross_entropy(lin(x), target), "mse_loss": lambda: F.mse_loss(lin(x), x)}
    name = t("결과 형식", "result dtype")
    with torch.autocast(device_type=device, dtype=dtype):
        rows = [{"op": op, name: str(fn().dtype).replace("torch.", "")} for op, fn in ops.items()]
    return rows + [{"op": t("파라미터 lin.weight", "parameter lin.weight"), name: str(lin.weight.dtype).replace("torch.", "")}]


def plot_grad_scaler(steps: int = 40, overflows=(12, 13, 27)):
    """torch.amp.GradScaler's scale over ``steps`` steps with planted inf gradients; skipped steps marked."""
    import matplotlib.pyplot as plt
    import torch

    from ...lesson import t

    p = torch.nn.Parameter(torch.ones(4))
    opt = torch.optim.SGD([p], lr=1e-3)
    scaler = grad_scaler("cpu", torch.float16, init_scale=2.0**16, growth_factor=2.0, backoff_factor=0.5,
                         growth_interval=5)
    scales, skipped = [], []
    for step in range(steps):
        opt.zero_grad()
        scaler.scale((p ** 2).sum()).backward()
        if step in overflows:
            p.grad[0] = float("inf")  # an overflow, as fp16 gradients can produce
        before = p.detach().clone()
        scaler.step(opt)
        scaler.update()
        scales.append(scaler.get_scale())
        skipped.append(torch.equal(before, p.detach()))
    fig, ax = plt.subplots(figsize=(8, 3))
    ax.step(range(steps), scales, where="post")
    ax.scatter([i for i, s in enumerate(skipped) if s], [scales[i] for i, s in enumerate(skipped) if s],
               color="#c44e52", zorder=3, label=t("건너뛴 스텝(inf)", "skipped step (inf)"))
    ax.set_yscale("log", base=2)
    ax.set_xlabel(t("스텝", "step"))
    ax.set_ylabel(t("스케일", "scale"))
    ax.legend()
    ax.set_title(t("torch.amp.GradScaler의 동적 스케일", "Dynamic scale of torch.amp.GradScaler"))
    return fig


# ---------------------------------------------------------------- checkpointing
class Segmented:
    """``blocks`` run as ``k`` checkpointed segments: only each segment's input is kept for backward."""

    def __init__(self, blocks, k: int):
        self.blocks, self.k = blocks, k

    def parameters(self):
        return (p for b in self.blocks for p in b.parameters())

    def __call__(self, x):
        import math

        import torch.nn as nn
        from torch.utils.checkpoint import checkpoint

        size = math.ceil(len(self.blocks) / self.k)
        for start in range(0, len(self.blocks), size):
            x = checkpoint(nn.Sequential(*self.blocks[start:start + size]), x, use_reentrant=False)
        return x


def checkpoint_tradeoff(stack, x, ks=(1, 2, 3, 4, 5, 6, 8, 12, 16)) -> dict:
    """Measured activation bytes of ``stack`` run as k checkpointed segments, with the recomputed segment."""
    import math

    import torch.nn as nn

    with one_cpu_thread(x.device.type):
        per_block = activation_bytes(nn.Sequential(stack[0]), x)
        stored = [activation_bytes(Segmented(stack, k), x) for k in ks]
        plain = activation_bytes(nn.Sequential(*stack), x)
    recompute = [math.ceil(len(stack) / k) * per_block for k in ks]
    return {"ks": list(ks), "plain": plain, "per_block": per_block,
            "boundary": x.numel() * x.element_size(), "stored": stored, "recompute": recompute,
            "peak": [s + r for s, r in zip(stored, recompute)], "n": len(stack)}


def plot_checkpoint_tradeoff(r: dict):
    import math

    import matplotlib.pyplot as plt

    from ...lesson import t

    mib = lambda values: [v / 2**20 for v in values]  # noqa: E731
    k_star = math.sqrt(r["n"] * r["per_block"] / r["boundary"])
    fig, ax = plt.subplots(figsize=(8, 3.6))
    ax.plot(r["ks"], mib(r["stored"]), "o-", label=t("저장된 경계", "saved boundaries"))
    ax.plot(r["ks"], mib(r["recompute"]), "s-", label=t("재계산하는 구간 하나", "one segment recomputed"))
    ax.plot(r["ks"], mib(r["peak"]), "k^-", label=t("합(최대)", "sum (peak)"))
    ax.axhline(r["plain"] / 2**20, color="#c44e52", ls="--", label=t("체크포인팅 없음", "no checkpointing"))
    ax.axvline(math.sqrt(r["n"]), color="gray", ls=":", label="k = √n")
    ax.axvline(k_star, color="purple", ls=":", label="k* = √(n·a/b)")
    ax.set_xlabel(t("구간 수 k", "segments k"))
    ax.set_ylabel("MiB")
    ax.legend(fontsize=8)
    ax.set_title(t(f"블록 {r['n']}개의 활성값 메모리(측정)", f"Activation memory of {r['n']} blocks (measured)"))
    return fig


# ---------------------------------------------------------------- the four techniques measured
def technique_rows(results: list) -> list[dict]:
    from ...lesson import t

    names = technique_names()
    return [{t("방법", "technique"): names[r.technique],
             t("최대 메모리 MiB", "peak MiB"): None if r.peak_bytes is None else round(r.peak_bytes / 2**20, 2),
             t("스텝 ms", "step ms"): None if r.step_s is None else round(r.step_s * 1e3, 2),
             t("비고", "note"): r.note or ""} for r in results]


def technique_lines(results: list) -> list[str]:
    """Each technique's step time against plain training's, as a sentence true of ``results``: slower or faster only
    where the two are clearly apart (:func:`autograder.lesson.clearly_more`)."""
    from ...lesson import clearly_more, t

    names = technique_names()
    plain = next((r for r in results if r.technique == "plain" and r.step_s), None)
    lines = []
    for r in results if plain else []:
        if r is plain or not r.step_s:
            continue
        name, ratio = names[r.technique], r.step_s / plain.step_s
        if clearly_more(r.step_s, plain.step_s):
            lines.append(t(f"{name}: 이번 측정에서 스텝이 기본보다 {ratio:.1f}배 느렸습니다",
                           f"{name}: in this run a step took {ratio:.1f}x as long as plain training's"))
        elif clearly_more(plain.step_s, r.step_s):
            lines.append(t(f"{name}: 이번 측정에서 스텝이 기본보다 {1 / ratio:.1f}배 빨랐습니다",
                           f"{name}: in this run a step was {1 / ratio:.1f}x faster than plain training's"))
        else:
            lines.append(t(f"{name}: 이번 측정에서는 스텝 시간이 기본과 뚜렷이 다르지 않았습니다",
                           f"{name}: in this run the step time did not clearly differ from plain training's"))
    return lines


def technique_names() -> dict:
    from ...lesson import t

    return {"plain": t("기본", "plain"), "autocast": "autocast", "checkpoint": t("체크포인팅", "checkpointing"),
            "accumulation": t("그래디언트 누적 ×4", "accumulation ×4")}


def plot_techniques(results: list, device: str):
    """Peak memory and step time of each technique measured (the step times with the busy label where they stayed
    noisy)."""
    import matplotlib.pyplot as plt

    from ...lesson import t, title

    names, ok = technique_names(), [r for r in results if r.peak_bytes is not None]
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.6))
    axes[0].bar([names[r.technique] for r in ok], [r.peak_bytes / 2**20 for r in ok], color="#4c72b0")
    axes[0].set_ylabel("MiB")
    axes[0].set_title(t("한 스텝의 최대 메모리(워밍업 뒤 증가분)", "Peak memory of one step (above the start)"))
    axes[1].bar([names[r.technique] for r in ok], [r.step_s * 1e3 for r in ok], color="#dd8452")
    axes[1].set_ylabel("ms")
    step_time = t(f"스텝 시간({device})", f"Step time ({device})")
    axes[1].set_title(title(step_time, step_time, results))
    fig.tight_layout()
    return fig
