"""Memory and wall-time limits on a kernel and everything it started."""
from __future__ import annotations

import threading
import time
from typing import Callable

import psutil


class Watchdog:
    """Polls the process tree of ``pid()``; kills it all past ``memory_bytes`` (resident) or ``seconds``.

    ``reason`` is then ``"memory"`` or ``"time"``. Use as a context manager.
    """

    def __init__(self, pid: Callable[[], int | None], memory_bytes: int, seconds: float, interval: float = 0.2):
        self.pid, self.memory_bytes, self.seconds, self.interval = pid, memory_bytes, seconds, interval
        self.reason: str | None = None
        self.peak_bytes = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> "Watchdog":
        self._start = time.monotonic()
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            tree = _tree(self.pid())
            used = sum(_rss(p) for p in tree)
            self.peak_bytes = max(self.peak_bytes, used)
            if used > self.memory_bytes:
                self.reason = "memory"
            elif time.monotonic() - self._start > self.seconds:
                self.reason = "time"
            if self.reason:
                for process in tree:
                    try:
                        process.kill()
                    except psutil.Error:
                        pass
                return


def _tree(pid: int | None) -> list[psutil.Process]:
    if pid is None:
        return []
    try:
        root = psutil.Process(pid)
        return [root, *root.children(recursive=True)]
    except psutil.Error:
        return []


def _rss(process: psutil.Process) -> int:
    try:
        return process.memory_info().rss
    except psutil.Error:
        return 0
