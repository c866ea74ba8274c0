"""Progress bars for long measurements that never write to stderr.

In a notebook tqdm.auto draws an ipywidgets bar (display output); elsewhere the
text bar goes to stdout, because nbgrader zeroes a test cell that writes to
stderr. ``COURSE_NO_PROGRESS=1`` turns bars off.
"""
from __future__ import annotations

import os
import sys


def progress(iterable=None, total=None, desc=None, leave=False, **kwargs):
    """A ``tqdm.auto.tqdm`` bar writing to stdout (usable as iterator or context manager)."""
    from tqdm.auto import tqdm

    kwargs.setdefault("file", sys.stdout)
    kwargs.setdefault("disable", os.environ.get("COURSE_NO_PROGRESS") == "1")
    return tqdm(iterable, total=total, desc=desc, leave=leave, **kwargs)
