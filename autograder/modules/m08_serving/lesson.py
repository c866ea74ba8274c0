"""Lesson 08's helpers: serving costs derived from a model's shape and a device's two roofs, the batching and paging
simulations, the speculative-decoding explorer and the figures, so the lesson's cells show the numbers and the idea."""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from ... import llm
from ...datafile import read_yaml
from ...lesson import LABEL, clearly_more, t
from .decode import Shape

DATA = Path(__file__).parent / "data"


@dataclass(frozen=True)
class Model:
    """A published model the lesson serves: its label, its :class:`~.decode.Shape`, its sliding window (None: the
    whole context) and all its parameters as the paper counts them (the embedding table too)."""

    label: str
    shape: Shape
    window: int | None
    params_total: float

    def kv(self, kv_bytes: float = 2, kv_heads: int | None = None) -> dict:
        """The model record :func:`autograder.llm.kv_cache_bytes` reads (``kv_heads``: a made-up variant's)."""
        return {**self.shape.model(2, kv_bytes), "kv_heads": kv_heads or self.shape.kv_heads}


@lru_cache(maxsize=None)
def models() -> dict[str, Model]:
    """The models of ``data/lesson_models.yaml``, each joined with its record in ``data/models.yaml`` (the tasks'
    table, where its sources are)."""
    tasks = read_yaml(DATA / "models.yaml")
    found = {}
    for name, extra in read_yaml(DATA / "lesson_models.yaml").items():
        r = {**tasks.get(name, {}), **extra}
        shape = Shape(layers=r["layers"], d_model=r["heads"] * r["head_dim"], heads=r["heads"], kv_heads=r["kv_heads"],
                      ffn=r["ffn"], vocab=r["vocab"])
        found[name] = Model(r["label"], shape, r["window"], float(r["params"]))
    return found


def kv_per_sequence(m: Model, context: int, kv_bytes: float = 2, kv_heads: int | None = None) -> int:
    """KV-cache bytes of one sequence of ``context`` tokens (``llm.kv_cache_bytes``); a sliding window stops the
    cache at ``window`` tokens."""
    return llm.kv_cache_bytes(m.kv(kv_bytes, kv_heads), 1, min(context, m.window or context))


def bound_name(which: str) -> str:
    return t("메모리 한계", "memory-bound") if which == "memory" else t("연산 한계", "compute-bound")


def prefill(s: Shape, p, prompt: int, weight_bytes: float = 2, dtype: str = "bf16") -> tuple[float, str]:
    """Time to first token at the roofline of profile ``p``: 2 FLOPs per weight and prompt token against the weights
    read once and the prompt's K and V written once, the longer of the two, and which roof binds."""
    nbytes = s.weight_bytes(weight_bytes) + llm.kv_cache_bytes(s.model(weight_bytes, 2), 1, prompt)
    memory, compute = nbytes / (p.bandwidth_gbs * 1e9), prompt * s.flops_per_token() / (p.peak(dtype) * 1e12)
    return max(memory, compute), ("memory" if memory >= compute else "compute")


def sequences_that_fit(m: Model, p, context: int, weight_bytes: float = 2, kv_bytes: float = 2,
                       kv_heads: int | None = None) -> int:
    """Sequences of ``context`` tokens whose KV cache fits in the memory (GiB: ``memory_bytes``) the weights leave,
    embedding table included; 0 where the weights alone do not fit."""
    left = p.memory_bytes - m.params_total * weight_bytes
    return max(0, int(left // kv_per_sequence(m, context, kv_bytes, kv_heads)))


def cache_verdict(with_cache: float, without: float) -> str:
    """What the lesson says of decode tokens/s measured with and without the KV cache: the factor only where the
    cache is clearly faster (:func:`autograder.lesson.clearly_more`), else that this run shows no clear difference."""
    if clearly_more(with_cache, without):
        return t(f"KV 캐시가 {with_cache / without:.1f}배 빠릅니다.", f"The KV cache is {with_cache / without:.1f}x faster.")
    return t("이번 측정에서는 두 방식의 차이가 분명하지 않습니다: 장치가 바쁜지 보고 다시 실행해 보세요.",
             "This run shows no clear difference: check whether the machine is busy and run the cell again.")


def kv_waste(lengths, reserved: int, block: int) -> dict:
    """Shares of reserved KV memory that hold no token: every sequence given ``reserved`` tokens up front (static)
    against blocks of ``block`` tokens handed out as the sequence grows (paged: only its last block is part empty)."""
    lengths = np.asarray(lengths)
    paged = np.ceil(lengths / block) * block
    return {"static": 1 - lengths.sum() / (reserved * len(lengths)), "paged": 1 - lengths.sum() / paged.sum()}


def simulate_batching(out_lengths, cap: int, step_s, continuous: bool) -> dict:
    """Serve requests (all waiting at time 0, each wanting ``out_lengths[i]`` tokens) with at most ``cap`` at once.

    Static: a batch starts together and runs at its full size (finished requests are padding) until its longest
    request ends; then the next batch starts. Continuous (Orca's iteration-level scheduling): a finished request's
    slot is refilled at the next step. ``step_s(b)``: seconds of a decode step of ``b`` sequences. Returns tokens/s
    over the run, the mean seconds until a request finished and the mean time per output token a request saw."""
    queue, running, clock, done, token_s, width = list(out_lengths), [], 0.0, [], 0.0, 0
    while queue or running:
        if continuous or not running:
            while queue and len(running) < cap:
                running.append(queue.pop(0))
            width = len(running)
        seconds = step_s(len(running) if continuous else width)
        clock += seconds
        token_s += seconds * len(running)
        running = [left - 1 for left in running]
        done += [clock] * sum(1 for left in running if left == 0)
        running = [left for left in running if left > 0]
    return {"tokens_per_s": sum(out_lengths) / clock, "latency_s": float(np.mean(done)),
            "tpot_s": token_s / sum(out_lengths)}


def weight_bytes_per_param(bits: int, group: int | None = None, scale_bytes: int = 2) -> float:
    """Bytes a weight costs stored in ``bits`` bits, with one scale of ``scale_bytes`` per ``group`` weights."""
    return bits / 8 + (scale_bytes / group if group else 0.0)


def accepted_tokens(alpha, gamma):
    """Tokens one verification step yields on average: (1 − α^(γ+1)) / (1 − α) (Leviathan et al. 2023, eq. 1)."""
    alpha, gamma = np.asarray(alpha, dtype=float), np.asarray(gamma)
    return np.where(alpha < 1, (1 - alpha ** (gamma + 1)) / np.where(alpha < 1, 1 - alpha, 1), gamma + 1.0)


def speculative_speedup(alpha, gamma, cost):
    """Speed-up over plain decoding when γ draft tokens each cost ``cost`` of one target step (Leviathan et al.
    2023, Theorem 3.8): tokens per step over the step's cost, 1 + γ·c."""
    return accepted_tokens(alpha, gamma) / (1 + np.asarray(gamma) * cost)


def _axes(figsize=(6.5, 4), logx=False, logy=False):
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=figsize)
    ax.set_xscale("log" if logx else "linear")
    ax.set_yscale("log" if logy else "linear")
    ax.grid(True, which="both", alpha=0.3)
    return fig, ax


def plot_lines(x, series: dict, xlabel: str, ylabel: str, title: str, logx=False, logy=False,
               marks: dict | None = None, styles: dict | None = None):
    """Lines ``{label: y}`` over ``x``; ``marks``: vertical lines ``{label: x}``; ``styles``: a line's matplotlib
    format by label."""
    fig, ax = _axes(logx=logx, logy=logy)
    for name, y in series.items():
        ax.plot(x[: len(y)], y, (styles or {}).get(name, "-"), label=name)
    for i, (name, at) in enumerate((marks or {}).items()):
        ax.axvline(at, color="gray", linestyle=["--", ":", "-."][i % 3], label=name)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8)
    return fig


def plot_tradeoff(points: dict, xlabel: str, ylabel: str, title: str):
    """One curve per policy ``{label: [(x, y, note, ...), ...]}``, each point named by its note (the batch cap)."""
    fig, ax = _axes()
    for name, pts in points.items():
        ax.plot([p[0] for p in pts], [p[1] for p in pts], "o-", label=name)
        for x, y, note, *_ in pts:
            ax.annotate(str(note), (x, y), textcoords="offset points", xytext=(4, 4), fontsize=7)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8)
    return fig


def speculative_explorer(max_gamma: int = 12):
    """Sliders for the acceptance rate α and the draft's cost c: the speed-up for every draft length γ, the best γ."""
    import ipywidgets as w
    from IPython.display import display

    alpha = w.FloatSlider(value=0.8, min=0.0, max=0.99, step=0.01, description=t("수락률 α", "acceptance rate α"),
                          style=LABEL)
    cost = w.FloatSlider(value=0.05, min=0.0, max=1.0, step=0.01, description=t("초안 비용 c", "draft cost c"),
                         style=LABEL)
    out = w.Output()

    def show(_=None):
        gammas = np.arange(0, max_gamma + 1)
        speed = speculative_speedup(alpha.value, gammas, cost.value)
        best = int(gammas[np.argmax(speed)])
        with out:
            out.clear_output(wait=True)
            print("γ    " + " ".join(f"{g:>5d}" for g in gammas))
            print(t("속도 ", "speed") + " ".join(f"{s:5.2f}" for s in speed))
            if best == 0:
                print(t("추측 디코딩이 집니다: 어떤 γ도 보통 디코딩(γ = 0)보다 빠르지 않습니다.",
                        "Speculative decoding loses: no γ beats plain decoding (γ = 0)."))
            else:
                print(t(f"가장 좋은 γ = {best}: {speed[best]:.2f}배", f"best γ = {best}: {speed[best]:.2f}x"))

    alpha.observe(show, "value")
    cost.observe(show, "value")
    show()
    display(w.VBox([alpha, cost, out]))
