"""Course knowledge several modules teach, in one home (figures and sources: ``data/knowledge.yaml``).

Modules never import each other (``tests/test_layout.py``); a rule two of them need lives here, in the core below
them all: the bytes a parameter keeps per training recipe, and the training FLOPs of a model (6·N·D and its parts).
"""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from .datafile import read_yaml

PARTS = ("weights", "gradients", "optimizer")


@lru_cache(maxsize=None)
def table() -> dict:
    """``data/knowledge.yaml``: ``precisions``, ``optimizers``, ``frozen_keeps``, ``recipes``, ``flops_per_param_token``."""
    return read_yaml(Path(__file__).resolve().parent / "data" / "knowledge.yaml")


def bytes_per_param(precision: str, optimizer: str | None) -> dict:
    """Bytes per parameter of weights, gradients and optimizer states (the fp32 master copy among them) of a
    parameter trained in ``precision`` with ``optimizer``; ``optimizer=None``: not trained (frozen, or served),
    keeping only ``frozen_keeps``."""
    p = table()["precisions"][precision]
    if optimizer is None:
        return {k: p[k] if k in table()["frozen_keeps"] else 0 for k in PARTS}
    states = table()["optimizers"][optimizer]["states"]
    return {"weights": p["weights"], "gradients": p["gradients"], "optimizer": p["master"] + states * p["state"]}


def recipe_bytes(name: str) -> dict:
    """:func:`bytes_per_param` of a named recipe (``adam_mixed``, ``inference_bf16``, ... of ``recipes``)."""
    recipe = table()["recipes"][name]
    return bytes_per_param(recipe["precision"], recipe["optimizer"])


def forward_flops(params: float, tokens: float) -> float:
    """FLOPs of the forward pass of ``params`` parameters over ``tokens`` tokens (or samples): 2·N·D."""
    return table()["flops_per_param_token"]["forward"] * params * tokens


def backward_flops(params: float, tokens: float) -> float:
    """FLOPs of the backward pass (input and weight gradients of every layer): 4·N·D."""
    return table()["flops_per_param_token"]["backward"] * params * tokens


def training_flops(params: float, tokens: float) -> float:
    """FLOPs of training ``params`` parameters on ``tokens`` tokens (or samples), forward and backward: 6·N·D."""
    per = table()["flops_per_param_token"]
    return (per["forward"] + per["backward"]) * params * tokens
