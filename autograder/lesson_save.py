"""A lesson a learner opens and runs stays the file the course ships: Jupyter saves lessons without outputs.

The course's Jupyter configuration (``data/jupyter/jupyter_server_config.json``, used by ``python3 -m
autograder start`` and by the class hub) makes :func:`pre_save` the server's pre-save hook. For a lesson
(``lessons/NN_topic/NN_topic.ko.ipynb`` or ``.en``, ``layout.LESSON``) it drops what running adds: outputs, execution counts, the
cell metadata JupyterLab writes (collapsed, scrolled, execution times), widget state, and the kernel and
language details of this machine (:func:`with_kernel`). A lesson that was only run is then byte for byte the committed one (``git
status`` stays clean, ``git pull`` and nbgitpuller update it); a learner's own edits to its cells are kept.
Exercises are the learner's work and are saved as they are.

Every notebook the course builds names its kernel as JupyterLab's running kernel describes it (:func:`with_kernel`),
and :class:`autograder.contents.ContentsManager` adds this Python's version when a notebook is opened: JupyterLab writes the kernel's
``kernelspec`` and ``language_info`` into a notebook when its kernel starts and marks it changed where they differ,
so an untouched notebook closes without "Save changes?".
"""
from __future__ import annotations

from typing import Any

from .layout import LESSON

KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}
# ipykernel's language_info but the version, which is each learner's Python's (autograder.contents adds it).
LANGUAGE_INFO = {"codemirror_mode": {"name": "ipython", "version": 3}, "file_extension": ".py",
                 "mimetype": "text/x-python", "name": "python", "nbconvert_exporter": "python",
                 "pygments_lexer": "ipython3"}
VOLATILE_CELL = ("collapsed", "scrolled", "execution", "trusted", "jupyter", "ExecuteTime")
VOLATILE_NOTEBOOK = ("widgets", "toc", "varInspector")


def clean(nb: dict) -> dict:
    """The notebook as the course commits it (a new dict; ``nb`` is left as it is)."""
    meta = {k: v for k, v in nb.get("metadata", {}).items() if k not in VOLATILE_NOTEBOOK}
    cells = []
    for cell in nb.get("cells", []):
        cell = dict(cell, metadata={k: v for k, v in cell.get("metadata", {}).items() if k not in VOLATILE_CELL})
        if cell.get("cell_type") == "code":
            cell.update(outputs=[], execution_count=None)
        cells.append(cell)
    return dict(nb, metadata=with_kernel(meta), cells=cells)


def with_kernel(metadata: dict) -> dict:
    """``metadata`` (changed in place and returned) naming the course's kernel as the builders write it."""
    metadata["kernelspec"] = dict(KERNELSPEC)
    metadata["language_info"] = dict(LANGUAGE_INFO, codemirror_mode=dict(LANGUAGE_INFO["codemirror_mode"]))
    return metadata


def pre_save(model: dict, path: str, **kwargs: Any) -> None:
    """Jupyter's pre-save hook: a lesson notebook is saved as :func:`clean` makes it."""
    if model.get("type") == "notebook" and isinstance(model.get("content"), dict) and LESSON.search(path):
        model["content"] = clean(model["content"])
