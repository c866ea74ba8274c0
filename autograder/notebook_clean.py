"""Git's clean filter for lesson notebooks: what a learner's run adds is not a change to the course.

``git status`` and ``git add`` see a lesson through this filter (``.gitattributes``:
``lessons/**/*.ipynb filter=course-notebook``; ``python3 -m autograder setup`` and
the class server's setup configure the filter). It drops outputs and execution
counts, the cell metadata JupyterLab writes (collapsed, scrolled, execution
times), widget state, and rewrites the kernel and language information to the
course's, in nbformat's own layout, so a lesson opened and run is byte for byte
the committed one. Standard library only: git runs it with the course's Python.
"""
from __future__ import annotations

import json
import sys

KERNELSPEC = {"display_name": "Python 3", "language": "python", "name": "python3"}
VOLATILE_CELL = ("collapsed", "scrolled", "execution", "trusted", "jupyter", "ExecuteTime")
VOLATILE_NOTEBOOK = ("widgets", "toc", "varInspector")


def clean(nb: dict) -> dict:
    """The notebook as the course commits it."""
    meta = {k: v for k, v in nb.get("metadata", {}).items() if k not in VOLATILE_NOTEBOOK}
    meta["kernelspec"] = dict(KERNELSPEC)
    meta["language_info"] = {"name": "python"}
    cells = []
    for cell in nb.get("cells", []):
        cell = dict(cell, metadata={k: v for k, v in cell.get("metadata", {}).items() if k not in VOLATILE_CELL})
        if cell.get("cell_type") == "code":
            cell.update(outputs=[], execution_count=None)
        cell["source"] = _lines(cell.get("source", ""))
        cells.append(cell)
    return dict(nb, metadata=meta, cells=cells)


def _lines(source) -> list[str]:
    """nbformat's on-disk form of a multi-line string: a list of lines, each but the last ending in a newline."""
    text = "".join(source) if isinstance(source, list) else source
    return text.splitlines(keepends=True)


def dumps(nb: dict) -> str:
    """The same text ``nbformat.write`` produces."""
    return json.dumps(nb, sort_keys=True, indent=1, ensure_ascii=False) + "\n"


def main() -> int:
    text = sys.stdin.buffer.read().decode("utf-8")
    try:
        out = dumps(clean(json.loads(text)))
    except ValueError:  # not a notebook (a merge conflict, a half-written file): leave it to git as it is
        out = text
    sys.stdout.buffer.write(out.encode("utf-8"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
