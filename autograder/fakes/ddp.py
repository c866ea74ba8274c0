"""A stand-in for ``DistributedDataParallel`` that records how ``no_sync`` was used (no process group needed)."""
from __future__ import annotations

from contextlib import contextmanager


class SyncRecorder:
    """Wraps a module; counts forward passes run inside and outside ``no_sync()``."""

    def __init__(self, module):
        self.module = module
        self.quiet = False
        self.in_no_sync = 0
        self.synced = 0

    @contextmanager
    def no_sync(self):
        self.quiet = True
        try:
            yield
        finally:
            self.quiet = False

    def __call__(self, x):
        if self.quiet:
            self.in_no_sync += 1
        else:
            self.synced += 1
        return self.module(x)

    def parameters(self):
        return self.module.parameters()

    def zero_grad(self, set_to_none: bool = True):
        self.module.zero_grad(set_to_none=set_to_none)
