"""The data tables of module 05 (networking), read by its lesson, its tasks and the exercise.

``data/links.yaml`` (PCIe, NVLink, network ports), ``data/nodes.yaml`` (DGX A100/H100/B200,
GB200 NVL72), ``data/superpod.yaml`` (SuperPod levels), ``data/collectives.yaml``
(bus-bandwidth factors as nccl-tests writes them, measured all-reduce) and ``data/nccl_logs.yaml``
(published nccl-tests logs), each with its sources.
"""
from __future__ import annotations

import copy
from functools import lru_cache
from pathlib import Path

from ...datafile import read_yaml

DATA = Path(__file__).resolve().parent / "data"
NAMES = ("links", "nodes", "superpod", "collectives", "nccl_logs")


@lru_cache(maxsize=None)
def _load(name: str) -> dict:
    return read_yaml(DATA / f"{name}.yaml")


def data(name: str) -> dict:
    """A copy of ``data/<name>.yaml`` (links, nodes, superpod, collectives, nccl_logs)."""
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


def nccl_log(name: str) -> dict:
    """A published nccl-tests log: collective, system, sources and its text."""
    return data("nccl_logs")["logs"][name]


def sources(name: str) -> list[str]:
    """Every source listed in ``data/<name>.yaml`` (for a lesson's reference list)."""
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
