"""The course's decoder (:mod:`.decode`) in MLX (``mlx.core``), for Apple Silicon and wherever MLX is installed.

:func:`from_torch` copies a :class:`.decode.Decoder`'s weights into the same computation written with MLX arrays:
the same tokens come out, so a learner compares one model on two frameworks. :func:`measure_decode` times decode
as :func:`.decode.measure_decode` does, with the course's :func:`~autograder.harness.time_fn` (which evaluates MLX's
lazy results, so each sample waits for the work it timed).
"""
from __future__ import annotations

from typing import Any, Sequence

import torch

from ...harness import time_fn
from . import decode


def _mx():
    import mlx.core as mx
    return mx


class Decoder:
    """The weights of a torch :class:`.decode.Decoder` as MLX arrays, and its prefill and decode step."""

    def __init__(self, model: decode.Decoder, dtype: str = "float32"):
        mx = _mx()
        self.mx, self.shape = mx, model.shape
        self.dtype = {"float32": mx.float32, "bfloat16": mx.bfloat16}[dtype]

        def weight(t):
            return mx.array(t.detach().float().cpu().numpy()).astype(self.dtype)
        self.embed, self.norm = weight(model.embed.weight), weight(model.norm.weight)
        self.head = weight(model.head.weight)
        names = ("attn_norm", "mlp_norm", "q", "k", "v", "o", "gate", "up", "down")
        self.blocks = [{n: weight(getattr(block, n).weight) for n in names} for block in model.blocks]
        # torch's RMSNorm without an eps uses its dtype's machine epsilon
        self.eps = model.norm.eps if model.norm.eps is not None else torch.finfo(decode.DTYPES[dtype]).eps

    def _rotation(self, start: int, length: int):
        mx, d = self.mx, self.shape.head_dim
        inv_freq = 10000.0 ** (-mx.arange(0, d, 2, dtype=mx.float32) / d)
        angles = mx.arange(start, start + length, dtype=mx.float32)[:, None] * inv_freq[None, :]
        return mx.cos(angles).astype(self.dtype), mx.sin(angles).astype(self.dtype)

    def _rotate(self, x, cos, sin):
        mx = self.mx
        x1, x2 = x[..., 0::2], x[..., 1::2]
        return mx.stack((x1 * cos - x2 * sin, x1 * sin + x2 * cos), axis=-1).reshape(x.shape)

    def _attention(self, w, x, rotation, cache: list | None, layer: int, start: int):
        mx, s = self.mx, self.shape
        b, t, _ = x.shape
        groups = s.heads // s.kv_heads
        q = self._rotate((x @ w["q"].T).reshape(b, t, s.heads, s.head_dim).transpose(0, 2, 1, 3), *rotation)
        k = self._rotate((x @ w["k"].T).reshape(b, t, s.kv_heads, s.head_dim).transpose(0, 2, 1, 3), *rotation)
        v = (x @ w["v"].T).reshape(b, t, s.kv_heads, s.head_dim).transpose(0, 2, 1, 3)
        if cache is not None:
            if start:
                k = mx.concatenate([cache[layer][0][:, :, :start], k], axis=2)
                v = mx.concatenate([cache[layer][1][:, :, :start], v], axis=2)
            cache[layer] = (k, v)
        # GQA as in decode.py: a group's query heads stacked as rows, each K/V head read once for its group
        q = q.reshape(b, s.kv_heads, groups * t, s.head_dim)
        mask = None
        if t > 1:
            rows = mx.tile(mx.arange(t), groups)[:, None] + start
            mask = mx.where(mx.arange(k.shape[2])[None, :] <= rows, 0.0, -mx.inf).astype(self.dtype)
        out = mx.fast.scaled_dot_product_attention(q, k, v, scale=s.head_dim ** -0.5, mask=mask)
        return out.reshape(b, s.heads, t, s.head_dim).transpose(0, 2, 1, 3).reshape(b, t, s.d_model) @ w["o"].T

    def _run(self, ids, cache: list | None, start: int):
        mx = self.mx
        x = self.embed[ids]
        rotation = self._rotation(start, ids.shape[1])
        for layer, w in enumerate(self.blocks):
            x = x + self._attention(w, mx.fast.rms_norm(x, w["attn_norm"], self.eps), rotation, cache, layer, start)
            h = mx.fast.rms_norm(x, w["mlp_norm"], self.eps)
            gate = h @ w["gate"].T
            x = x + ((gate * mx.sigmoid(gate)) * (h @ w["up"].T)) @ w["down"].T
        return mx.fast.rms_norm(x, self.norm, self.eps) @ self.head.T

    def prefill(self, ids) -> tuple[Any, list]:
        """The prompt ``ids`` ``[B, T]`` (an MLX or NumPy integer array) in one pass: the last logits and the cache
        (per layer, keys and values of every token so far)."""
        cache = [None] * self.shape.layers
        return self._run(self.mx.array(ids), cache, 0)[:, -1], cache

    def step(self, token, cache: list, length: int):
        """One decode step after ``length`` cached tokens: the logits of ``token`` ``[B, 1]``."""
        return self._run(token, cache, length)[:, -1]


def from_torch(model: decode.Decoder, dtype: str = "float32") -> Decoder:
    """``model``'s weights in MLX (float32, or bfloat16)."""
    return Decoder(model, dtype)


def generate(model: Decoder, prompt_ids, new_tokens: int):
    """Greedy decoding with the cache: the ``new_tokens`` next tokens ``[B, new_tokens]`` (an MLX array)."""
    mx = model.mx
    logits, cache = model.prefill(prompt_ids)
    length, out = prompt_ids.shape[1], [mx.argmax(logits, axis=-1, keepdims=True)]
    for _ in range(new_tokens - 1):
        out.append(mx.argmax(model.step(out[-1], cache, length), axis=-1, keepdims=True))
        length += 1
    return mx.concatenate(out, axis=1)


def measure_decode(model: Decoder, torch_model: decode.Decoder, batch_sizes: Sequence[int] = (1, 2, 4, 8, 16),
                   prompt_len: int = 32, new_tokens: int = 16, budget_s: float = 0.25) -> list[dict]:
    """Decode tokens/s in MLX per batch size, timed as :func:`.decode.time_decode` times it: the prompt prefilled
    once, untimed; each timed call decodes ``new_tokens`` steps from the prompt's cache. The prompts are
    ``decode.prompt(torch_model, ...)``'s, so both frameworks decode the same tokens."""
    mx, rows = model.mx, []
    for batch in batch_sizes:
        ids = mx.array(decode.prompt(torch_model, int(batch), prompt_len).cpu().numpy())
        logits, cache = model.prefill(ids)
        first = mx.argmax(logits, axis=-1, keepdims=True)
        mx.eval(first, cache)

        def run():  # each step reads the cache up to its own position, so every call starts again from the prompt
            token = first
            for i in range(new_tokens):
                token = mx.argmax(model.step(token, cache, prompt_len + i), axis=-1, keepdims=True)
            return token

        timing = time_fn(run, device="mlx", budget_s=budget_s)
        rows.append({"batch": int(batch), "decode_s": timing.median_s,
                     "tokens_per_s": batch * new_tokens / timing.median_s, "spread": timing.spread})
    return rows
