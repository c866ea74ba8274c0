"""What the lessons measured on this machine, kept for the report card of module 06.

A lesson calls ``record("m02", "matmul_tflops_fp32", 0.14, "TFLOP/s", device="cpu", size=4096)``;
the value lands in one JSON file, ``$COURSE_CACHE_DIR/results.json`` (default
``~/.cache/ai-hardware-course/results.json``), under this machine's key, the same key
:func:`autograder.reference.machine_key` gives the measured profile of the best device
(device name, cores, library versions). :func:`load` returns this machine's results.
A later record of the same ``module.key`` replaces the earlier one.

What the report card reads is a typed contract, :data:`REPORT_CARD` (each key named once): the lessons record those
figures through it (``REPORT_CARD.copy.record(12.3, device="cpu")``) and the report card looks them up through it.
"""
from __future__ import annotations

import datetime as _dt
import json
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .i18n import msg

FILE_NAME = "results.json"
SCHEMA = 1


def path() -> Path:
    """The results file: ``$COURSE_CACHE_DIR/results.json`` or ``~/.cache/ai-hardware-course/results.json``."""
    from .reference import cache_dir
    return cache_dir() / FILE_NAME


def machine() -> tuple[str, dict]:
    """(id, key) of this machine: the digest and content of reference.machine_key for the best device."""
    from .hardware import best_device
    from .reference import _digest, machine_key
    key = machine_key(best_device())
    return _digest(key), key


def record(module: str, key: str, value: float, unit: str, **meta: Any) -> dict:
    """Store one measured ``value`` (in ``unit``) as ``"<module>.<key>"`` for this machine; return the entry.

    ``meta``: anything JSON can hold (device, size, dtype, intensity in FLOP/byte, ...).
    A bad argument raises a bilingual ValueError saying what to pass.
    """
    _validate(module, key, value, unit)
    entry = {"module": module, "key": key, "value": float(value), "unit": unit,
             "date": _dt.datetime.now().isoformat(timespec="seconds"), "meta": _jsonable(meta)}
    mid, mkey = machine()
    with _locked():
        data = _read()
        slot = data["machines"].setdefault(mid, {"key": mkey, "results": {}})
        slot["key"] = mkey
        slot["results"][f"{module}.{key}"] = entry
        _write(data)
    return entry


def load(machine_id: str | None = None) -> dict[str, dict]:
    """This machine's results (or those of ``machine_id``): ``{"m02.matmul_tflops_fp32": entry, ...}``."""
    mid = machine_id or machine()[0]
    return dict(_read()["machines"].get(mid, {}).get("results", {}))


def forget(module: str | None = None) -> int:
    """Remove this machine's results (of one ``module`` only, if given); return how many were removed."""
    mid = machine()[0]
    with _locked():
        data = _read()
        results = data["machines"].get(mid, {}).get("results", {})
        gone = [k for k, e in results.items() if module is None or e.get("module") == module]
        for k in gone:
            del results[k]
        _write(data)
    return len(gone)


@dataclass(frozen=True)
class Result:
    """One figure a lesson records and the report card of module 06 reads: ``<module>.<key>``, in ``unit``."""
    module: str
    key: str
    unit: str

    @property
    def id(self) -> str:
        return f"{self.module}.{self.key}"

    def record(self, value: float, **meta: Any) -> dict:
        """:func:`record` ``value`` as this result."""
        return record(self.module, self.key, value, self.unit, **meta)


@dataclass(frozen=True)
class ReportCard:
    """The results the report card reads, each key named once (lessons 02, 03 and 05 record them through these)."""
    copy: Result = Result("m03", "bandwidth_copy_gbs", "GB/s")
    triad: Result = Result("m03", "bandwidth_triad_gbs", "GB/s")
    allreduce: Result = Result("m05", "allreduce_busbw_gbs", "GB/s")
    allreduce_now: Result = Result("m06", "allreduce_busbw_gbs", "GB/s")  # the card's own, where lesson 05 left none
    matmul_dtypes: tuple = ("fp32", "bf16", "fp16")

    def matmul(self, dtype: str) -> Result:
        """The measured matmul throughput of ``dtype`` (lesson 02)."""
        return Result("m02", f"matmul_tflops_{dtype}", "TFLOP/s")

    def bandwidth(self, kind: str) -> Result:
        """The measured ``copy`` or ``triad`` bandwidth (lesson 03)."""
        return {"copy": self.copy, "triad": self.triad}[kind]

    def read(self) -> set[str]:
        """The ids of every result the card shows as its own row (it lists the other records apart)."""
        return {self.matmul(d).id for d in self.matmul_dtypes} | {
            r.id for r in (self.copy, self.triad, self.allreduce, self.allreduce_now)}


REPORT_CARD = ReportCard()


def _validate(module: Any, key: Any, value: Any, unit: Any) -> None:
    problems = (
        ("module", module, not isinstance(module, str) or not module),
        ("key", key, not isinstance(key, str) or not key),
        ("value", value, isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(float(value))),
        ("unit", unit, not isinstance(unit, str)),
    )
    for name, found, bad in problems:
        if bad:
            raise ValueError(msg(f"m06.bad_record_{name}", value=found).text())


def _jsonable(meta: dict) -> dict:
    return json.loads(json.dumps(meta, default=str))


def _read() -> dict:
    try:
        data = json.loads(path().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {"schema": SCHEMA, "machines": {}}
    if not isinstance(data, dict) or data.get("schema") != SCHEMA or not isinstance(data.get("machines"), dict):
        return {"schema": SCHEMA, "machines": {}}
    return data


def _write(data: dict) -> None:
    target = path()
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data, indent=1, ensure_ascii=False), encoding="utf-8")
    os.replace(tmp, target)  # atomic: a reader never sees half a file


def _locked():
    """An exclusive lock (any OS) around read-modify-write of the results file."""
    from filelock import FileLock
    lock = path().with_suffix(".lock")
    lock.parent.mkdir(parents=True, exist_ok=True)
    return FileLock(str(lock))
