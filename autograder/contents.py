"""The course's Jupyter file manager (``data/jupyter/jupyter_server_config.json``): Jupyter's own, but a notebook
naming the course's kernel (:func:`autograder.lesson_save.with_kernel`) is opened with this Python's version in its
``language_info``, as its kernel reports it on start; JupyterLab, which writes the kernel's details into the notebook
and marks it changed where they differ, then finds nothing to change."""
from __future__ import annotations

import sys

from jupyter_server.services.contents.largefilemanager import AsyncLargeFileManager

from .lesson_save import LANGUAGE_INFO


class ContentsManager(AsyncLargeFileManager):
    """The kernel ``python3`` is this Python (ipykernel's own kernelspec), so its version is this one's."""

    async def get(self, path, content=True, type=None, format=None, **kwargs):
        model = await super().get(path, content=content, type=type, format=format, **kwargs)
        if model.get("type") == "notebook" and isinstance(model.get("content"), dict):
            info = model["content"].get("metadata", {}).get("language_info")
            if info == LANGUAGE_INFO:
                info["version"] = sys.version.split()[0]
        return model
