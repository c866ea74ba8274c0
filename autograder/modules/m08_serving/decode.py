"""A small decoder-only transformer in plain PyTorch with random weights, its KV cache, the course's reference
decode loop, the decode roofline prediction from a device's two roofs, and the decode measurement.

Speed does not need trained weights, so nothing is downloaded: :func:`build` draws the weights from a seed. The model
is pre-norm (RMSNorm), with rotary positions, grouped-query attention (``kv_heads`` K/V heads shared by ``heads``
query heads) and a SwiGLU MLP. A decode step reads every weight but the embedding table whole, and computes 2 FLOPs
per such weight and token (``knowledge.forward_flops``).
"""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Any, Sequence

import torch
import torch.nn.functional as F
from torch import nn

from ... import knowledge, llm
from ...harness import Timing, time_fn
from ...i18n import Message

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}
timed = 0  # how many times time_decode has run in this process (the measured task's check counts the learner's)


@dataclass(frozen=True)
class Shape:
    """The sizes of a decoder-only transformer."""

    layers: int
    d_model: int
    heads: int
    kv_heads: int
    ffn: int
    vocab: int

    def __post_init__(self):
        if self.d_model % self.heads or self.heads % self.kv_heads or (self.d_model // self.heads) % 2:
            raise ValueError(Message(
                f"d_model({self.d_model})은 heads({self.heads})로, heads는 kv_heads({self.kv_heads})로 "
                "나누어떨어져야 하고 head_dim은 짝수여야 합니다.",
                f"d_model ({self.d_model}) must divide by heads ({self.heads}), heads by kv_heads ({self.kv_heads}), "
                "and head_dim must be even.").text())

    @property
    def head_dim(self) -> int:
        return self.d_model // self.heads

    @property
    def params(self) -> int:
        """The weights a decode step reads whole: per layer attention, MLP and two norms, the final norm and the
        output layer (the embedding table is not among them: a step reads one row of it per sequence)."""
        d, kv = self.d_model, self.kv_heads * self.head_dim
        attention = d * d + 2 * d * kv + d * d  # q, k, v, o
        mlp = 3 * d * self.ffn                  # gate, up, down
        return self.layers * (attention + mlp + 2 * d) + d + d * self.vocab

    @property
    def embedding_params(self) -> int:
        """The embedding table: stored, but read one row per token."""
        return self.vocab * self.d_model

    def model(self, bytes_per_element: float, kv_bytes: float | None = None) -> dict:
        """This shape as the model record of :mod:`autograder.llm` (weights and KV cache in the given bytes)."""
        return {"params": self.params, "weight_bytes": bytes_per_element, "layers": self.layers,
                "kv_heads": self.kv_heads, "head_dim": self.head_dim,
                "kv_bytes": bytes_per_element if kv_bytes is None else kv_bytes}

    def weight_bytes(self, bytes_per_element: float) -> int:
        """Bytes of the weights, which each decode step reads whole."""
        return int(llm.weight_bytes(self.model(bytes_per_element)))

    def flops_per_token(self) -> int:
        """FLOPs of one token through the model: 2 per parameter (the attention over the context left out)."""
        return int(knowledge.forward_flops(self.params, 1))


# 5.9 M parameters, 4.9 M of them read by each step (19 MB in float32): decode runs at a few hundred tokens/s on a
# 2-core CPU
LAPTOP = Shape(layers=4, d_model=256, heads=8, kv_heads=2, ffn=1024, vocab=4096)


class Cache:
    """The KV cache: per layer, keys and values of every token so far, ``[batch, kv_heads, capacity, head_dim]``,
    allocated for ``capacity`` tokens and doubled when full; ``length`` tokens are filled."""

    def __init__(self, layers: int, batch: int, kv_heads: int, head_dim: int, capacity: int, like: torch.Tensor):
        size = (batch, kv_heads, capacity, head_dim)
        self.keys = [like.new_zeros(size) for _ in range(layers)]
        self.values = [like.new_zeros(size) for _ in range(layers)]
        self.length = 0

    def extend(self, layer: int, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Store ``k``, ``v`` (``[batch, kv_heads, T, head_dim]``) after the filled tokens; return every token's."""
        start, stop = self.length, self.length + k.shape[2]
        if stop > self.keys[layer].shape[2]:
            self._grow(layer, stop)
        self.keys[layer][:, :, start:stop] = k
        self.values[layer][:, :, start:stop] = v
        return self.keys[layer][:, :, :stop], self.values[layer][:, :, :stop]

    def rewind(self, length: int) -> None:
        """Forget every token after the first ``length`` (their slots are written again): decode again from there."""
        self.length = min(int(length), self.length)

    def _grow(self, layer: int, needed: int) -> None:
        capacity = max(needed, 2 * self.keys[layer].shape[2])
        for store in (self.keys, self.values):
            old = store[layer]
            store[layer] = old.new_zeros(old.shape[:2] + (capacity,) + old.shape[3:])
            store[layer][:, :, :old.shape[2]] = old

    def nbytes(self) -> int:
        """Bytes of the filled part of the cache's tensors (what a decode step reads)."""
        return sum(t[:, :, :self.length].numel() * t.element_size() for t in self.keys + self.values)


def _rotation(head_dim: int, start: int, length: int, like: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Cosines and sines of the rotary angles of positions ``start .. start+length-1`` (computed in float32)."""
    inv_freq = 10000.0 ** (-torch.arange(0, head_dim, 2, device=like.device, dtype=torch.float32) / head_dim)
    angles = torch.outer(torch.arange(start, start + length, device=like.device, dtype=torch.float32), inv_freq)
    return angles.cos().to(like.dtype), angles.sin().to(like.dtype)


def _rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """``x`` ``[B, H, T, D]`` rotated by the angles of its positions."""
    x1, x2 = x[..., 0::2], x[..., 1::2]
    return torch.stack((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1).flatten(-2)


class _Block(nn.Module):
    def __init__(self, s: Shape):
        super().__init__()
        self.s = s
        kv = s.kv_heads * s.head_dim
        self.attn_norm, self.mlp_norm = nn.RMSNorm(s.d_model), nn.RMSNorm(s.d_model)
        self.q = nn.Linear(s.d_model, s.d_model, bias=False)
        self.k = nn.Linear(s.d_model, kv, bias=False)
        self.v = nn.Linear(s.d_model, kv, bias=False)
        self.o = nn.Linear(s.d_model, s.d_model, bias=False)
        self.gate = nn.Linear(s.d_model, s.ffn, bias=False)
        self.up = nn.Linear(s.d_model, s.ffn, bias=False)
        self.down = nn.Linear(s.ffn, s.d_model, bias=False)

    def forward(self, x: torch.Tensor, rotation, cache: Cache | None, layer: int) -> torch.Tensor:
        return self._mlp(x + self._attention(self.attn_norm(x), rotation, cache, layer))

    def _attention(self, x: torch.Tensor, rotation, cache: Cache | None, layer: int) -> torch.Tensor:
        s, (b, t, _) = self.s, x.shape
        groups = s.heads // s.kv_heads
        q = _rotate(self.q(x).view(b, t, s.heads, s.head_dim).transpose(1, 2), *rotation)
        k = _rotate(self.k(x).view(b, t, s.kv_heads, s.head_dim).transpose(1, 2), *rotation)
        v = self.v(x).view(b, t, s.kv_heads, s.head_dim).transpose(1, 2)
        start = cache.length if cache is not None else 0
        if cache is not None:
            k, v = cache.extend(layer, k, v)
        # GQA: the query heads of a group stacked as rows, so each K/V head is read once for its whole group
        q = q.reshape(b, s.kv_heads, groups * t, s.head_dim)
        mask = None
        if t > 1:  # causal: query i (at position start+i) sees keys 0 .. start+i
            rows = torch.arange(t, device=x.device).repeat(groups)[:, None] + start
            mask = torch.arange(k.shape[2], device=x.device)[None, :] <= rows
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        return self.o(out.view(b, s.heads, t, s.head_dim).transpose(1, 2).reshape(b, t, s.d_model))

    def _mlp(self, x: torch.Tensor) -> torch.Tensor:
        h = self.mlp_norm(x)
        return x + self.down(F.silu(self.gate(h)) * self.up(h))


class Decoder(nn.Module):
    """The model: :meth:`prefill` a prompt into a :class:`Cache`, :meth:`step` one token at a time with it, or
    :meth:`forward_full` over the whole sequence without one."""

    def __init__(self, shape: Shape):
        super().__init__()
        self.shape = shape
        self.embed = nn.Embedding(shape.vocab, shape.d_model)
        self.blocks = nn.ModuleList(_Block(shape) for _ in range(shape.layers))
        self.norm = nn.RMSNorm(shape.d_model)
        self.head = nn.Linear(shape.d_model, shape.vocab, bias=False)

    def _run(self, ids: torch.Tensor, cache: Cache | None) -> torch.Tensor:
        x = self.embed(ids)
        rotation = _rotation(self.shape.head_dim, cache.length if cache else 0, ids.shape[1], x)
        for layer, block in enumerate(self.blocks):
            x = block(x, rotation, cache, layer)
        return self.head(self.norm(x))

    @torch.no_grad()
    def forward_full(self, ids: torch.Tensor) -> torch.Tensor:
        """Logits ``[B, T, V]`` for every position of ``ids`` ``[B, T]``, with no cache: what each decode step
        costs when the prefix is computed again."""
        return self._run(_ids(ids), None)

    @torch.no_grad()
    def prefill(self, ids: torch.Tensor, capacity: int | None = None) -> tuple[torch.Tensor, Cache]:
        """The prompt ``ids`` ``[B, T]`` in one pass: the last position's logits ``[B, V]`` and the filled cache
        (room for ``capacity`` tokens, default ``T``; it grows when a step needs more)."""
        ids = _ids(ids)
        s, (b, t) = self.shape, ids.shape
        cache = Cache(s.layers, b, s.kv_heads, s.head_dim, max(t, capacity or t), self.embed.weight)
        logits = self._run(ids, cache)
        cache.length = t
        return logits[:, -1], cache

    @torch.no_grad()
    def step(self, ids: torch.Tensor, cache: Cache) -> tuple[torch.Tensor, Cache]:
        """One decode step: ``ids`` ``[B, 1]`` (the last tokens) after ``cache``; logits ``[B, V]``, the cache
        extended by one token (in place)."""
        logits = self._run(_ids(ids), cache)
        cache.length += 1
        return logits[:, -1], cache


def _ids(ids: Any) -> torch.Tensor:
    if not (isinstance(ids, torch.Tensor) and ids.dim() == 2 and not ids.is_floating_point() and ids.numel()):
        found = tuple(ids.shape) if isinstance(ids, torch.Tensor) else type(ids).__name__
        raise ValueError(Message(
            f"토큰 id는 [배치, 길이] 모양의 정수 텐서여야 합니다 (받은 것: {found}).",
            f"token ids must be an integer tensor of shape [batch, length] (got {found}).").text())
    return ids


def build(shape: Shape = LAPTOP, device: Any = "cpu", dtype: Any = torch.float32, seed: int = 0) -> Decoder:
    """The model of ``shape`` with weights drawn from ``seed`` (the same on every machine), on ``device`` in
    ``dtype``, in eval mode with gradients off."""
    dtype = DTYPES.get(dtype, dtype)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = Decoder(shape)
    return model.to(device=device, dtype=dtype).eval().requires_grad_(False)


def prompt(model: Decoder, batch: int, length: int, seed: int = 0) -> torch.Tensor:
    """Random token ids ``[batch, length]`` on the model's device (the same for a seed)."""
    generator = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, model.shape.vocab, (batch, length), generator=generator)
    return ids.to(model.embed.weight.device)


@torch.no_grad()
def generate(model: Decoder, prompt_ids: torch.Tensor, new_tokens: int, cache: bool = True) -> torch.Tensor:
    """Greedy decoding, the course's reference loop: the ``new_tokens`` next tokens ``[B, new_tokens]`` after
    ``prompt_ids`` ``[B, T]``. With the cache, a prefill and then one step per token; without it, the whole
    sequence again for every token."""
    prompt_ids = _ids(prompt_ids)
    if cache:
        logits, kv = model.prefill(prompt_ids, capacity=prompt_ids.shape[1] + new_tokens)
        out = [logits.argmax(-1, keepdim=True)]
        for _ in range(new_tokens - 1):
            logits, kv = model.step(out[-1], kv)
            out.append(logits.argmax(-1, keepdim=True))
        return torch.cat(out, dim=1)
    ids = prompt_ids
    for _ in range(new_tokens):
        ids = torch.cat([ids, model.forward_full(ids)[:, -1].argmax(-1, keepdim=True)], dim=1)
    return ids[:, prompt_ids.shape[1]:]


# ---------------------------------------------------------------- what the device offers

def dtypes(device: Any = "cpu", torch_module: Any = torch) -> list[str]:
    """The dtypes of :data:`DTYPES` the device computes in: float32 everywhere; bfloat16 on a CPU (PyTorch computes
    it on every CPU, fast only where the CPU has bf16 instructions), on a CUDA GPU that supports it, and on MPS
    where a bf16 tensor can be made (macOS 14 and later)."""
    kind = str(device).split(":")[0]
    if kind == "cuda":
        bf16 = torch_module.cuda.is_bf16_supported()
    elif kind == "mps":
        try:
            torch_module.ones(1, device="mps", dtype=torch_module.bfloat16)
            bf16 = True
        except (RuntimeError, TypeError):
            bf16 = False
    else:
        bf16 = True
    return ["float32", "bfloat16"] if bf16 else ["float32"]


def int8_path(device: Any = "cpu") -> tuple[str | None, Message | None]:
    """The library that makes int8-weight models here: ``("torchao", None)`` (weight-only, any device torchao runs
    on), ``("torch.ao", None)`` (``quantize_dynamic``: int8 weights, activations quantized per call; CPU only), or
    ``(None, why not)``."""
    try:
        from torchao.quantization import Int8WeightOnlyConfig, quantize_  # noqa: F401
        return "torchao", None
    except ImportError:
        pass
    if str(device).split(":")[0] == "cpu" and hasattr(torch, "ao") and torch.backends.quantized.engine != "none":
        return "torch.ao", None
    return None, Message(
        f"{device}에서 int8 가중치를 만들 라이브러리가 없습니다: "
        "torchao를 설치하면 됩니다 (pip install torchao).",
        f"no library here makes int8 weights on {device}: install torchao (pip install torchao).")


def int8(model: Decoder) -> Decoder:
    """A copy of ``model`` whose linear layers keep int8 weights, made by the library :func:`int8_path` names;
    RuntimeError with the reason where none is installed."""
    import copy
    device = model.embed.weight.device
    library, why = int8_path(device)
    if library is None:
        raise RuntimeError(why.text())
    quantized = copy.deepcopy(model)
    with warnings.catch_warnings():  # torch.ao warns that its quantized tensors are deprecated
        warnings.simplefilter("ignore")
        if library == "torchao":
            from torchao.quantization import Int8WeightOnlyConfig, quantize_
            quantize_(quantized, Int8WeightOnlyConfig())
            return quantized
        return torch.ao.quantization.quantize_dynamic(quantized, {nn.Linear}, dtype=torch.qint8)


# ---------------------------------------------------------------- the roofline prediction

def predicted_tokens_per_s(shape: Shape, batch: int, context: int, profile, bytes_per_element: float = 4,
                           dtype: str = "fp32", kv_bytes: float | None = None) -> dict:
    """Decode tokens/s on ``profile``'s two roofs: a step of ``batch`` sequences at ``context`` tokens reads every
    weight once and each sequence's KV cache (``llm.kv_cache_bytes``), and computes 2 FLOPs per parameter per token;
    it takes the longer of bytes / bandwidth and FLOPs / peak (``dtype``'s). ``kv_bytes``: bytes per cached element
    (default ``bytes_per_element``; int8 weights keep the cache in the compute dtype).

    Returns ``step_s``, ``tokens_per_s``, ``memory_s``, ``compute_s``, ``bytes``, ``flops`` and ``bound``
    (``"memory"`` or ``"compute"``: the roof that binds)."""
    peak = profile.peak(dtype)
    if not profile.bandwidth_gbs or not peak:
        raise ValueError(Message(
            f"{profile.name}의 프로파일에 메모리 대역폭이나 {dtype} 피크가 없습니다.",
            f"the profile of {profile.name} has no memory bandwidth or no {dtype} peak.").text())
    model = shape.model(bytes_per_element, kv_bytes)
    nbytes = llm.weight_bytes(model) + llm.kv_cache_bytes(model, batch, context)
    flops = batch * shape.flops_per_token()
    memory_s, compute_s = nbytes / (profile.bandwidth_gbs * 1e9), flops / (peak * 1e12)
    step_s = max(memory_s, compute_s)
    return {"batch": batch, "context": context, "step_s": step_s, "tokens_per_s": batch / step_s,
            "memory_s": memory_s, "compute_s": compute_s, "bytes": nbytes, "flops": flops,
            "bound": "memory" if memory_s >= compute_s else "compute"}


def compute_bound_batch(shape: Shape, context: int, profile, bytes_per_element: float = 4, dtype: str = "fp32",
                        kv_bytes: float | None = None) -> float:
    """The batch from which decode is compute-bound on ``profile`` (where the two roofs of
    :func:`predicted_tokens_per_s` meet); ``math.inf`` where each sequence's KV cache alone takes longer to read
    than its FLOPs take to compute (decode then never turns compute-bound)."""
    model = shape.model(bytes_per_element, kv_bytes)
    weights, per_sequence = llm.weight_bytes(model), llm.kv_cache_bytes(model, 1, context)
    bytes_per_flop_time = shape.flops_per_token() * profile.bandwidth_gbs * 1e9 / (profile.peak(dtype) * 1e12)
    return weights / (bytes_per_flop_time - per_sequence) if bytes_per_flop_time > per_sequence else math.inf


# ---------------------------------------------------------------- the measurement

def time_decode(model: Decoder, ids: torch.Tensor, new_tokens: int, device: Any = None, cache: bool = True,
                budget_s: float = 0.25, threads: int | None = None) -> Timing:
    """Seconds of one decode of ``new_tokens`` greedy steps after the prompt ``ids``, with the course's
    :func:`~autograder.harness.time_fn`: the prompt is prefilled once, untimed, and the cache rewound to it before
    each timed call (``cache=False``: the whole sequence again for each token). ``device``: what ``time_fn``
    synchronizes (default the model's: CUDA and MPS are waited for), timed on the host clock as a check's rounds are."""
    global timed
    timed += 1
    device = model.embed.weight.device if device is None else device
    length = ids.shape[1]
    logits, kv = model.prefill(ids, capacity=length + new_tokens)
    first = logits.argmax(-1, keepdim=True)

    def decode():
        kv.rewind(length)
        if cache:
            token = first
            for _ in range(new_tokens):
                logits, _ = model.step(token, kv)
                token = logits.argmax(-1, keepdim=True)
            return token
        seq = torch.cat([ids, first], dim=1)
        for _ in range(new_tokens):
            seq = torch.cat([seq, model.forward_full(seq)[:, -1].argmax(-1, keepdim=True)], dim=1)
        return seq

    return time_fn(decode, device=device, budget_s=budget_s, threads=threads, use_events=False)


def measure_decode(model: Decoder, batch_sizes: Sequence[int] = (1, 2, 4, 8, 16), prompt_len: int = 32,
                   new_tokens: int = 16, device: Any = None, cache: bool = True, budget_s: float = 0.25,
                   threads: int | None = None) -> list[dict]:
    """Prefill and decode timed apart with the course's :func:`~autograder.harness.time_fn`, one row per batch size.

    Prefill: the prompt ``[batch, prompt_len]`` into a fresh cache. Decode: :func:`time_decode`. Tokens counted are
    generated tokens only (``batch * new_tokens``), never the prompt's. Each row: ``batch``, ``prefill_s``,
    ``decode_s`` (seconds per call, medians), ``ttft_s`` (the prefill), ``tpot_s`` (decode seconds per token step),
    ``tokens_per_s`` (generated tokens per second of decode), ``prefill_tokens_per_s``, ``spread`` (the decode
    timing's p90/p10)."""
    device = model.embed.weight.device if device is None else device
    rows = []
    for batch in batch_sizes:
        ids = prompt(model, int(batch), prompt_len)
        pre = time_fn(lambda: model.prefill(ids), device=device, budget_s=budget_s, threads=threads, use_events=False)
        dec = time_decode(model, ids, new_tokens, device, cache, budget_s, threads)
        rows.append({"batch": int(batch), "prompt_len": prompt_len, "new_tokens": new_tokens, "cache": cache,
                     "prefill_s": pre.median_s, "decode_s": dec.median_s, "ttft_s": pre.median_s,
                     "tpot_s": dec.median_s / new_tokens, "tokens_per_s": batch * new_tokens / dec.median_s,
                     "prefill_tokens_per_s": batch * prompt_len / pre.median_s, "spread": dec.spread})
    return rows
