"""Hardware profiles: vendor spec sheets from ``data/profiles.yaml`` as ``Profile`` objects.

Peaks are dense TFLOP/s (TOPS for int8); sparse figures are kept apart and only
returned when asked for. ``match`` maps a device name as torch / NVML / sysctl /
JAX report it to a profile; other modules build *measured* profiles with the
same ``Profile`` class (``measured=True``).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable

from .datafile import read_yaml
from .i18n import msg

_DATA = Path(__file__).parent / "data" / "profiles.yaml"

KINDS = ("gpu", "apple", "tpu", "trainium", "cpu")
DTYPES = ("fp64", "fp64_tensor", "fp32", "tf32", "bf16", "fp16", "fp8", "fp4", "int8")
REQUIRED = ("name", "label", "vendor", "kind", "arch", "year", "match", "memory", "peak_tflops", "sources")

_ALIASES = {
    "float64": "fp64", "double": "fp64", "f64": "fp64",
    "float32": "fp32", "float": "fp32", "f32": "fp32",
    "tensorfloat32": "tf32",
    "bfloat16": "bf16",
    "float16": "fp16", "half": "fp16", "f16": "fp16",
    "float8": "fp8", "float8_e4m3fn": "fp8", "float8_e5m2": "fp8", "e4m3": "fp8", "e5m2": "fp8",
    "float4": "fp4", "nvfp4": "fp4", "mxfp4": "fp4",
}

DEFAULT_FIELDS = (
    "id", "label", "vendor", "arch", "year",
    "peak.fp32", "peak.tf32", "peak.bf16", "peak.fp8",
    "memory_gib", "bandwidth_gbs", "tdp_w",
)


def normalize_dtype(dtype: Any) -> str:
    """``torch.bfloat16``, ``"bfloat16"``, ``"BF16"`` -> ``"bf16"``; bilingual ValueError otherwise."""
    name = str(dtype).lower().removeprefix("torch.").removeprefix("jnp.").removeprefix("mlx.core.")
    name = _ALIASES.get(name, name)
    if name not in DTYPES:
        raise ValueError(str(msg("profiles.unknown_dtype", dtype=dtype, valid=", ".join(DTYPES))))
    return name


@dataclass(frozen=True)
class Profile:
    """One device: dense peaks, memory, and the raw spec entry for everything else."""

    id: str
    name: str
    kind: str
    vendor: str
    peak_tflops: dict[str, float] = field(default_factory=dict)
    sparse_tflops: dict[str, float] = field(default_factory=dict)
    bandwidth_gbs: float | None = None
    memory_gib: float | None = None  # capacity in GiB (2^30 bytes): a vendor's "80 GB" H100 holds 80 GiB
    measured: bool = False
    sources: tuple[str, ...] = ()
    spec: dict = field(default_factory=dict)

    def __hash__(self) -> int:
        return hash((self.id, self.measured))

    def peak(self, dtype: Any, sparse: bool = False) -> float | None:
        """Peak TFLOP/s for ``dtype`` (dense unless ``sparse``); None if not known."""
        table = self.sparse_tflops if sparse else self.peak_tflops
        return table.get(normalize_dtype(dtype))

    def get(self, key: str, default: Any = None) -> Any:
        """A spec field by dotted path, e.g. ``"sms"`` or ``"memory.bus_width_bits"``."""
        node: Any = self.spec
        for part in key.split("."):
            if not isinstance(node, dict) or node.get(part) is None:
                return default
            node = node[part]
        return node

    @property
    def memory_bytes(self) -> int | None:
        """Memory capacity in bytes (None if unknown)."""
        return None if self.memory_gib is None else int(self.memory_gib * 2**30)

    @property
    def label(self) -> str:
        """Short display name ("H100 SXM")."""
        return self.spec.get("label") or self.name


def _clean(table: dict | None) -> dict[str, float]:
    return {k: float(v) for k, v in (table or {}).items() if v is not None}


def _profile(pid: str, entry: dict) -> Profile:
    missing = [key for key in REQUIRED if key not in entry]
    if missing:
        raise ValueError(f"profiles.yaml: {pid} lacks {missing}")
    if entry["kind"] not in KINDS:
        raise ValueError(f"profiles.yaml: {pid} has kind {entry['kind']!r}, not one of {KINDS}")
    memory = entry["memory"] or {}
    size = memory.get("size_gib", memory.get("max_gib"))
    bandwidth = memory.get("bandwidth_gbs")
    return Profile(
        id=pid,
        name=entry["name"],
        kind=entry["kind"],
        vendor=entry["vendor"],
        peak_tflops=_clean(entry.get("peak_tflops")),
        sparse_tflops=_clean(entry.get("sparse_tflops")),
        bandwidth_gbs=None if bandwidth is None else float(bandwidth),
        memory_gib=None if size is None else float(size),
        sources=tuple(entry["sources"]),
        spec=entry,
    )


@lru_cache(maxsize=None)
def load() -> dict[str, Profile]:
    """All spec profiles by id, in file order (cached)."""
    raw = read_yaml(_DATA) or {}
    return {pid: _profile(pid, entry) for pid, entry in raw.items()}


def get(profile_id: str) -> Profile:
    """The profile ``profile_id``; KeyError (bilingual, listing valid ids) if unknown."""
    profiles = load()
    try:
        return profiles[profile_id]
    except (KeyError, TypeError):
        raise KeyError(str(msg("profiles.unknown_id", profile_id=profile_id, valid=", ".join(profiles)))) from None


@lru_cache(maxsize=None)
def _patterns() -> tuple[tuple[str, re.Pattern], ...]:
    return tuple(
        (pid, re.compile(pattern, re.IGNORECASE))
        for pid, profile in load().items()
        for pattern in profile.spec["match"]
    )


def match(device_name: str | None) -> Profile | None:
    """The profile for a reported device name; the longest matching text wins.

    None when nothing matches or two devices match equally well (ambiguous).
    """
    if not device_name:
        return None
    name = " ".join(str(device_name).replace("_", " ").split())
    best: dict[str, int] = {}
    for pid, pattern in _patterns():
        found = pattern.search(name)
        if found:
            best[pid] = max(best.get(pid, 0), found.end() - found.start())
    if not best:
        return None
    ranked = sorted(best.items(), key=lambda item: item[1], reverse=True)
    if len(ranked) > 1 and ranked[0][1] == ranked[1][1]:
        return None
    return load()[ranked[0][0]]


def all_of(kind: str | None = None) -> list[Profile]:
    """Every spec profile, or those of one ``kind`` (gpu, apple, tpu, trainium), in file order."""
    if kind is not None and kind not in KINDS:
        raise ValueError(str(msg("profiles.unknown_kind", kind=kind, valid=", ".join(KINDS))))
    return [p for p in load().values() if kind is None or p.kind == kind]


def _value(profile: Profile, name: str) -> Any:
    if name.startswith("peak."):
        return profile.peak(name[5:])
    if name.startswith("sparse."):
        return profile.peak(name[7:], sparse=True)
    if name in ("id", "name", "kind", "vendor", "label", "measured", "bandwidth_gbs", "memory_gib"):
        return getattr(profile, name)
    return profile.get(name)


def table(ids: Iterable[str] | None = None, fields: Iterable[str] = DEFAULT_FIELDS) -> list[dict]:
    """Rows (one dict per profile) for lessons to render tables from the data.

    ``fields`` are attribute names, ``peak.<dtype>`` / ``sparse.<dtype>``, or dotted
    spec paths (``memory.type``); missing values are None.
    """
    profiles = [get(pid) for pid in ids] if ids is not None else all_of()
    fields = tuple(fields)
    return [{name: _value(p, name) for name in fields} for p in profiles]
