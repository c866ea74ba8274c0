"""The second line of limits on a kernel and everything it started: polled, for what the kernel's own
mechanisms (cgroups, resource limits; see ``sandbox``) do not stop by themselves or do not report."""
from __future__ import annotations

import os
import threading
import time
from typing import Callable

import psutil

from . import sandbox

FLOOD = 64  # processes in one tree that make a memory breach a fork flood


class Watchdog:
    """Polls the process tree of ``pid()``; kills it all when it is past a limit, and says which in ``reason``.

    ``"memory"``: the kernel's memory cgroup killed a process or holds more than ``memory_bytes`` (anonymous
    and tmpfs pages); without one, the tree's proportional resident memory plus the sandbox's /tmp and
    /dev/shm past ``memory_bytes``. ``"processes"``: tasks (processes and threads) at the limit, or forks
    refused by the pids cgroup, or the memory limit passed by a tree of ``FLOOD`` processes or more (a fork flood:
    each child copies the pages it writes, so memory can run out before the process limit). ``"disk"``: the writable folders past their size. ``"time"``: past ``seconds``.
    The limits other than memory and time, the folders and the cgroups come from the kernel's registered
    ``sandbox.Confinement``; a process without one is watched for memory and time only. Use as a context manager.
    """

    def __init__(self, pid: Callable[[], int | None], memory_bytes: int, seconds: float, interval: float = 0.2):
        self.pid, self.memory_bytes, self.seconds, self.interval = pid, memory_bytes, seconds, interval
        self.reason: str | None = None
        self.peak_bytes = self.peak_processes = 0
        self._seen: dict[int, sandbox.Confinement] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> "Watchdog":
        self._start = time.monotonic()
        self._thread.start()
        return self

    def pause(self, seconds: float) -> None:
        """Do not count ``seconds`` (spent waiting for the device, not running) against the time limit."""
        self._start += seconds

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        for pid, confinement in self._seen.items():
            counters = confinement.counters()  # after the kernel died: was it the memory group's OOM killer?
            if self.reason is None and counters.get("oom_kills"):
                self.reason = "processes" if self.peak_processes >= FLOOD else "memory"
            confinement.release()
            sandbox.forget(pid)

    def _run(self) -> None:
        tick = 0
        while not self._stop.wait(self.interval):
            root = self.pid()
            confinement = sandbox.confinement(root)
            if confinement is not None:
                self._seen[root] = confinement
            tree = _tree(root)
            self.reason = self._check(tree, confinement, disk=tick % 5 == 0)
            tick += 1
            if self.reason:
                sandbox.kill_tree([p.pid for p in tree])
                return

    def _check(self, tree: list[psutil.Process], confinement: sandbox.Confinement | None, disk: bool) -> str | None:
        counters = confinement.counters() if confinement is not None else {}
        self.peak_processes = max(self.peak_processes, len(tree))
        if confinement is not None and (counters.get("pids_refused")
                                        or sum(_threads(p) for p in tree) >= confinement.quota.processes):
            return "processes"
        used = confinement.cgroup_memory() if confinement is not None else None
        if used is None:  # proportional share: pages a fork shares with its parent count once
            used = sum(_pss(p) for p in tree)
            used += confinement.tmpfs_used([p.pid for p in tree]) if confinement is not None else 0
        self.peak_bytes = max(self.peak_bytes, used)
        if used > self.memory_bytes or counters.get("oom_kills"):
            return "processes" if len(tree) >= FLOOD else "memory"
        if disk and confinement is not None and confinement.disk_used() > confinement.quota.disk_bytes:
            return "disk"
        if time.monotonic() - self._start > self.seconds:
            return "time"
        return None


def _tree(pid: int | None) -> list[psutil.Process]:
    if pid is None:
        return []
    try:
        root = psutil.Process(pid)
        return [root, *root.children(recursive=True)]
    except psutil.Error:
        return []


def _pss(process: psutil.Process) -> int:
    try:
        return process.memory_full_info().pss
    except (psutil.Error, AttributeError):
        try:
            return process.memory_info().rss
        except psutil.Error:
            return 0


def _threads(process: psutil.Process) -> int:
    try:
        return process.num_threads()
    except psutil.Error:
        return 0


class Frozen:
    """The processes of a kernel stopped with SIGSTOP (its process tree, and its pids cgroup where it has one),
    so that nothing of it runs while the grader takes a reference measurement. Use as a context manager;
    :meth:`worked` says whether any of them ran after all had stopped (a process that escaped the freeze,
    or one that another one woke). Works as an unprivileged user, with and without bubblewrap or cgroups."""

    def __init__(self, pid: int | None, settle_s: float = 5.0):
        self.pid, self.settle_s = pid, settle_s
        self.stopped: dict[int, psutil.Process] = {}

    def __enter__(self) -> "Frozen":
        for _ in range(20):  # until no process of the kernel is left running (a fork may race the first pass)
            new = [p for p in _members(self.pid) if p.pid not in self.stopped]
            if not new:
                break
            for process in new:
                try:
                    process.suspend()
                    self.stopped[process.pid] = process
                except psutil.Error:
                    pass
        deadline = time.monotonic() + self.settle_s
        while not all(_halted(pid) for pid in self.stopped) and time.monotonic() < deadline:
            time.sleep(0.002)
        self._cpu = _cpu_times(self.stopped.values())
        return self

    def worked(self) -> bool:
        """Whether a process of the kernel used CPU time, or a new one started, since all were stopped."""
        return (any(p.pid not in self.stopped for p in _members(self.pid))
                or _cpu_times(self.stopped.values()) != self._cpu)

    def __exit__(self, *exc) -> None:
        for process in self.stopped.values():
            try:
                process.resume()
            except psutil.Error:
                pass


def _members(pid: int | None) -> list[psutil.Process]:
    """The kernel's processes: its tree, and every process in its pids cgroup (where a process that left the
    tree still is)."""
    found = {p.pid: p for p in _tree(pid)}
    confinement = sandbox.confinement(pid)
    if confinement is not None and confinement.cgroups.get("pids"):
        try:
            listed = open(f"{confinement.cgroups['pids']}/cgroup.procs").read().split()
        except OSError:
            listed = []
        for member in map(int, listed):
            try:
                found.setdefault(member, psutil.Process(member))
            except psutil.Error:
                pass
    return list(found.values())


def _halted(pid: int) -> bool:
    """Every thread of ``pid`` is stopped (or the process is gone)."""
    try:
        states = [open(f"/proc/{pid}/task/{tid}/stat").read().rpartition(")")[2].split()[0]
                  for tid in os.listdir(f"/proc/{pid}/task")]
    except OSError:
        return True
    except (IndexError, ValueError):
        return False
    return all(state in "TtZX" for state in states)


def _cpu_times(processes) -> dict[int, tuple]:
    out = {}
    for process in processes:
        try:
            times = process.cpu_times()
            out[process.pid] = (times.user, times.system)
        except psutil.Error:
            pass  # gone (killed while stopped): it did no work
    return out
