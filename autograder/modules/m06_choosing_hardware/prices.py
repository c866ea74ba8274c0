"""The dated hourly price table of ``data/prices.yaml`` (this folder) as offers joined with their GPU profiles.

Module 06 uses it to turn GPU-hours into money. Prices are snapshots: every offer
keeps the date it was seen and its source; dense peaks, memory and bandwidth come
from :mod:`autograder.profiles`, never from the price file.
"""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import yaml

from ... import profiles

_DATA = Path(__file__).parent / "data" / "prices.yaml"
FIELDS = ("provider", "instance", "region", "kind", "profile", "gpus", "price_per_hour", "seen", "source")


@lru_cache(maxsize=1)
def load() -> dict:
    """The parsed price file (cached); ``ValueError`` naming the entry if one lacks a field."""
    raw = yaml.safe_load(_DATA.read_text(encoding="utf-8"))
    for oid, entry in raw["offers"].items():
        missing = [f for f in FIELDS if entry.get(f) in (None, "")]
        if missing:
            raise ValueError(f"prices.yaml: {oid} lacks {missing}")
        profiles.get(entry["profile"])  # an unknown profile id fails here, bilingually
    return raw


def offers(kind: str | None = None) -> list[dict]:
    """Every offer (or those of ``kind``: on_demand, spot) with per-GPU figures from its profile.

    Each dict: ``id``, the fields of the file, ``price_per_gpu_hour``, and per GPU: ``gpu`` (label),
    ``memory_gib`` (binary, as the profiles store it), ``bf16_tflops`` (dense), ``bandwidth_gbs`` (10^9 B/s).
    """
    rows = []
    for oid, entry in load()["offers"].items():
        if kind is not None and entry["kind"] != kind:
            continue
        prof = profiles.get(entry["profile"])
        rows.append({
            "id": oid, **entry, "seen": str(entry["seen"]),
            "price_per_gpu_hour": entry["price_per_hour"] / entry["gpus"],
            "gpu": prof.label, "memory_gib": prof.memory_gib,
            "bf16_tflops": prof.peak("bf16"), "bandwidth_gbs": prof.bandwidth_gbs,
        })
    return rows


def price_per_gpu_hour(offer_id: str) -> float:
    """The hourly price of one GPU of offer ``offer_id`` (instance price / GPUs)."""
    for row in offers():
        if row["id"] == offer_id:
            return row["price_per_gpu_hour"]
    raise KeyError(f"prices.yaml has no offer {offer_id!r}; known: {', '.join(r['id'] for r in offers())}")
