"""Module 04 lesson helpers: a tiny language model to train, peak-memory probes per backend,
the four memory-saving techniques measured side by side, and the decision diagram.

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


def grad_scaler(device: str, dtype):
    """A ``torch.amp.GradScaler`` that is on for fp16 and a pass-through for bf16/fp32."""
    import torch

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "GradScaler is enabled, but CUDA is not available" style notices
        return torch.amp.GradScaler(str(device).split(":")[0], enabled=dtype == torch.float16)


# ---------------------------------------------------------------- probes
class SavedTensorProbe:
    """CPU (any device): bytes saved for backward by each forward, plus gradients held then."""

    method = "m04.probe.saved"

    def start(self, model) -> None:
        self.model = model
        self.params = {p.untyped_storage().data_ptr() for p in model.parameters()}
        self.peak_bytes = 0

    def _grad_bytes(self) -> int:
        return sum(p.grad.numel() * p.grad.element_size() for p in self.model.parameters() if p.grad is not None)

    @contextmanager
    def forward(self):
        import torch

        seen: dict[int, int] = {}

        def pack(t):
            storage = t.untyped_storage()
            if storage.data_ptr() not in self.params:
                seen[storage.data_ptr()] = storage.nbytes()
            return t

        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            yield
        self.peak_bytes = max(self.peak_bytes, sum(seen.values()) + self._grad_bytes())

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
def train_step(model, optimizer, tokens, targets, *, probe=None, amp=None, scaler=None, micro: int = 1) -> float:
    """One optimizer step over ``micro`` micro-batches (mean loss of the whole batch); returns the loss."""
    import torch
    import torch.nn.functional as F

    probe = probe or NoProbe()
    kind = tokens.device.type
    optimizer.zero_grad(set_to_none=True)
    total = 0.0
    for x, y in zip(tokens.chunk(micro), targets.chunk(micro)):
        cast = torch.autocast(device_type=kind, dtype=amp) if amp is not None else nullcontext()
        with probe.forward(), cast:
            loss = F.cross_entropy(model(x).flatten(0, 1), y.flatten()) * (len(x) / len(tokens))
        (scaler.scale(loss) if scaler is not None else loss).backward()
        total += loss.item()
    if scaler is not None:
        scaler.step(optimizer)
        scaler.update()
    else:
        optimizer.step()
    return total


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
    """Peak memory of one training step of the tiny model with ``technique``, and its step time."""
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
