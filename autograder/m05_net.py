"""Data and small models for module 05 (networking), used by its lesson and exercise.

Tables come from ``data/m05_links.yaml`` (PCIe, NVLink, network ports),
``data/m05_nodes.yaml`` (DGX A100/H100/B200, GB200 NVL72), ``data/m05_superpod.yaml``
(SuperPod levels) and ``data/m05_collectives.yaml`` (bus-bandwidth factors, measured
all-reduce). :func:`fit_alpha_beta` fits the latency-bandwidth model to measured
all-reduce times; :func:`ring_states` replays a ring all-reduce chunk by chunk.
"""
from __future__ import annotations

import copy
from functools import lru_cache
from pathlib import Path

import yaml

_DATA = Path(__file__).parent / "data"


@lru_cache(maxsize=None)
def _load(name: str) -> dict:
    return yaml.safe_load((_DATA / f"m05_{name}.yaml").read_text(encoding="utf-8"))


def data(name: str) -> dict:
    """A copy of ``data/m05_<name>.yaml`` (links, nodes, superpod, collectives)."""
    return copy.deepcopy(_load(name))


def pcie_links() -> list[dict]:
    """PCIe generations: gen, gt_s, encoding, year (kind 'pcie')."""
    return [{"kind": "pcie", **row} for row in data("links")["pcie"]]


def nvlink_links() -> list[dict]:
    """NVLink generations: gen, arch, gpu, gbs_per_link_per_dir, links, total_gbs_bidir (kind 'nvlink')."""
    return [{"kind": "nvlink", **row} for row in data("links")["nvlink"]]


def network_links() -> list[dict]:
    """Network ports (InfiniBand, Ethernet): name, kind, gbit_s per direction, nic, used_in."""
    return data("links")["network"]


def nodes() -> list[dict]:
    """GPU nodes: DGX A100/H100/B200 and GB200 NVL72 (gpus, switches, NICs, sources)."""
    return data("nodes")["nodes"]


def superpod(name: str = "superpod_h100") -> dict:
    """A SuperPod as levels (name, gpus, links, link_rate, unit) with its sources."""
    return data("superpod")[name]


def sources(name: str) -> list[str]:
    """Every source listed in ``data/m05_<name>.yaml`` (for a lesson's reference list)."""
    found: list[str] = []

    def walk(node) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if key.endswith("sources") and isinstance(value, list):
                    found.extend(str(v) for v in value)
                else:
                    walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(_load(name))
    return list(dict.fromkeys(found))


def fit_alpha_beta(sizes, seconds, n: int) -> dict:
    """Least-squares fit of a ring all-reduce, t = 2(n-1)·alpha + 2(n-1)/n · S / beta.

    ``sizes`` in bytes, ``seconds`` per call; returns alpha (s per step), beta (bytes/s
    per direction, i.e. the bus bandwidth it tends to) and the fitted times.
    """
    import numpy as np

    s = np.asarray(sizes, dtype=float)
    t = np.asarray(seconds, dtype=float)
    steps, share = 2 * (n - 1), 2 * (n - 1) / n
    weights = 1 / t  # relative errors: small messages count as much as large ones
    design = np.stack([np.full_like(s, steps), share * s], axis=1) * weights[:, None]
    (alpha, inv_beta), *_ = np.linalg.lstsq(design, t * weights, rcond=None)
    alpha, inv_beta = max(float(alpha), 0.0), max(float(inv_beta), 1e-18)
    return {"alpha_s": alpha, "beta_bytes_s": 1 / inv_beta,
            "fit_s": [steps * alpha + share * x * inv_beta for x in s.tolist()]}


def ring_states(n: int) -> list[dict]:
    """Each step of a ring all-reduce on ``n`` ranks, as which inputs every chunk holds.

    Returns a list of {"phase", "step", "holds"}: ``holds[r][c]`` is the sorted list of
    ranks whose chunk ``c`` has been summed into rank ``r``'s copy of chunk ``c``.
    """
    holds = [[[r] for _ in range(n)] for r in range(n)]
    states = [{"phase": "start", "step": 0, "holds": copy.deepcopy(holds)}]
    for step in range(n - 1):  # reduce-scatter: rank r sends chunk r-step to r+1, which adds it
        sent = [(r, (r - step) % n, list(holds[r][(r - step) % n])) for r in range(n)]
        for r, c, part in sent:
            right = (r + 1) % n
            holds[right][c] = sorted(set(holds[right][c]) | set(part))
        states.append({"phase": "reduce-scatter", "step": step + 1, "holds": copy.deepcopy(holds)})
    for step in range(n - 1):  # all-gather: rank r sends its complete chunk r+1-step, which is copied
        sent = [(r, (r + 1 - step) % n, list(holds[r][(r + 1 - step) % n])) for r in range(n)]
        for r, c, part in sent:
            holds[(r + 1) % n][c] = part
        states.append({"phase": "all-gather", "step": step + 1, "holds": copy.deepcopy(holds)})
    return states
