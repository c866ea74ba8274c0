"""Sizes of a transformer language model that decide what serving it costs: the one home of these rules.

A model is a dict as in the modules' model tables: ``params``, ``weight_bytes``,
``layers``, ``kv_heads``, ``head_dim``, ``kv_bytes``.
"""
from __future__ import annotations


def kv_cache_bytes(model: dict, batch: int, context: int) -> int:
    """K and V for every layer, KV head and token: 2 x layers x kv_heads x head_dim x context x batch x bytes."""
    return (2 * int(model["layers"]) * int(model["kv_heads"]) * int(model["head_dim"])
            * int(context) * int(batch) * int(model["kv_bytes"]))


def weight_bytes(model: dict) -> float:
    """Bytes of the weights: parameters x bytes per weight."""
    return float(model["params"]) * float(model["weight_bytes"])
