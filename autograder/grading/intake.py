"""Repair or reject one submitted notebook before nbgrader reads it.

nbgrader stops on a notebook it cannot read and on duplicate cell ids (jupyter/nbgrader#1083).
A notebook that cannot be read at all is removed from the scratch copy (nbgrader then gives
its cells 0); one with repairable faults is rewritten. Either way the reason is returned.
"""
from __future__ import annotations

import json
import uuid
import warnings
from pathlib import Path

import nbformat

from ..i18n import Message, msg


def admit(path: Path, cells: set[str] | None = None) -> Message | None:
    """Make ``path`` readable by nbgrader (or delete it); the reason, or None if it was fine.
    ``cells``: the grade ids of the assignment's notebook (nbgrader stops on a graded cell it does not know)."""
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(raw, dict) or not isinstance(raw.get("cells", []), list):
            raise ValueError("not a notebook")
        version = raw.get("nbformat")
        if version not in (3, 4):
            path.unlink(missing_ok=True)
            return msg("grading.bad_nbformat", name=path.name, version=str(version)[:20])
        minor = raw.get("nbformat_minor", 0)
        if version == 4 and (not isinstance(minor, int) or minor > nbformat.v4.nbformat_minor):
            path.unlink(missing_ok=True)
            return msg("grading.too_new_nbformat", name=path.name, version=version, minor=str(minor)[:20])
        schema = _schema(raw)
        if schema is not None:
            path.unlink(missing_ok=True)
            return msg("grading.bad_schema", name=path.name, version=schema)
        with warnings.catch_warnings():  # nbformat warns as it repairs duplicate cell ids
            warnings.simplefilter("ignore")
            nb = nbformat.reads(json.dumps(raw), as_version=4)
        fixed = _repair_ids(nb) | _repair_grade_ids(nb) | _repair_foreign_cells(nb, cells) | _repair_cells(nb)
    except (OSError, ValueError, UnicodeDecodeError, KeyError, TypeError, AttributeError) as exc:
        path.unlink(missing_ok=True)
        return msg("grading.unreadable", name=path.name, error=(str(exc) or type(exc).__name__).splitlines()[0][:120])
    if version == 3:
        fixed.add("nbformat 3 -> 4")
    if fixed:
        nbformat.write(nb, str(path))
    return msg("grading.repaired", name=path.name, what=", ".join(sorted(fixed))) if fixed else None


def _schema(raw: dict):
    """The first nbgrader metadata schema version that is not nbgrader's (nbgrader stops on it), or None."""
    from nbgrader.nbgraderformat import SCHEMA_VERSION
    cells = raw.get("cells")
    if cells is None:  # nbformat 3: cells in worksheets
        cells = [c for w in raw.get("worksheets") or [] if isinstance(w, dict) for c in w.get("cells") or []]
    for cell in cells:
        meta = cell.get("metadata", {}).get("nbgrader") if isinstance(cell, dict) and isinstance(
            cell.get("metadata"), dict) else None
        if isinstance(meta, dict) and meta.get("schema_version", 0) != SCHEMA_VERSION:
            return str(meta.get("schema_version", 0))[:20]
    return None


def _repair_ids(nb) -> set[str]:
    seen, fixed = set(), set()
    for cell in nb.cells:
        if not isinstance(cell.get("id"), str) or cell.get("id") in seen:
            cell["id"] = uuid.uuid4().hex[:8]
            fixed.add("duplicate cell ids")
        seen.add(cell["id"])
    return fixed


def _repair_grade_ids(nb) -> set[str]:
    """Copies of an nbgrader cell: the last one stays graded (as nbgrader's DeduplicateIds
    would, but without leaving the empty metadata that its CheckCellMetadata then rejects)."""
    last = {}
    for index, cell in enumerate(nb.cells):
        grade_id = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
        if grade_id is not None:
            last[grade_id] = index
    fixed = set()
    for index, cell in enumerate(nb.cells):
        grade_id = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
        if grade_id is not None and last[grade_id] != index:
            del cell.metadata["nbgrader"]
            fixed.add("duplicated graded cells")
    return fixed


def _repair_foreign_cells(nb, cells: set[str] | None) -> set[str]:
    """A cell marked for nbgrader (graded, a solution, locked) that is none of the assignment's cells runs
    as an ordinary cell: its nbgrader metadata is removed (its points would count for nothing; nbgrader
    would stop on it)."""
    from nbgrader import utils
    foreign = []
    for cell in nb.cells if cells is not None else []:
        marked = utils.is_grade(cell) or utils.is_solution(cell) or utils.is_locked(cell) or utils.is_task(cell)
        if marked and cell.metadata["nbgrader"].get("grade_id") not in cells:
            foreign.append(str(cell.metadata["nbgrader"].get("grade_id"))[:40])
            del cell.metadata["nbgrader"]
    return {f"cells marked for grading that are not the assignment's ({', '.join(foreign)})"} if foreign else set()


def _repair_cells(nb) -> set[str]:
    """Give every cell the fields its type needs (a cell turned from code to markdown keeps stray outputs)."""
    fixed = set()
    for cell in nb.cells:
        if cell.get("cell_type") not in ("code", "markdown", "raw"):
            cell["cell_type"] = "raw"
            fixed.add("unknown cell type")
        if not isinstance(cell.get("source", ""), (str, list)):
            cell["source"] = ""
            fixed.add("bad cell source")
        cell.setdefault("metadata", {})
        if cell["cell_type"] == "code":
            cell.setdefault("outputs", [])
            cell.setdefault("execution_count", None)
        else:
            for key in ("outputs", "execution_count"):
                if key in cell:
                    del cell[key]
    try:
        nbformat.validate(nb)
    except nbformat.ValidationError as exc:
        raise ValueError(f"invalid notebook: {exc.message}") from None
    return fixed
