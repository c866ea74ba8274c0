"""A one-process stand-in for ``torch.distributed`` whose ``all_reduce`` takes a known time.

:class:`FakeDist` answers as rank 0 of ``world_size`` ranks; every ``all_reduce`` sleeps
``alpha_s + bytes / bytes_per_s`` seconds (and leaves the tensor as it is), so a measurement
run against it has an exact expected bus bandwidth. ``sizes`` records the bytes of each call.
"""
from __future__ import annotations

import time


class FakeDist:
    """torch.distributed for one process: all_reduce takes alpha + bytes/beta seconds."""

    def __init__(self, world_size: int, alpha_s: float, bytes_per_s: float):
        import torch.distributed as dist

        self.ReduceOp = dist.ReduceOp
        self.world_size, self.alpha_s, self.bytes_per_s = world_size, alpha_s, bytes_per_s
        self.sizes: list[int] = []

    def get_rank(self, group=None) -> int:
        return 0

    def get_world_size(self, group=None) -> int:
        return self.world_size

    def is_initialized(self) -> bool:
        return True

    def barrier(self, group=None, async_op=False, device_ids=None):
        return None

    def broadcast(self, tensor, src=0, group=None, async_op=False):
        return None

    def all_reduce(self, tensor, op=None, group=None, async_op=False):
        nbytes = tensor.numel() * tensor.element_size()
        self.sizes.append(nbytes)
        time.sleep(self.alpha_s + nbytes / self.bytes_per_s)
        return Done() if async_op else None


class Done:
    """The handle of a finished asynchronous call."""

    def wait(self, timeout=None) -> bool:
        return True

    def is_completed(self) -> bool:
        return True
