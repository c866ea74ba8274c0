"""A Jupyter kernel manager whose kernel runs inside the sandbox, under its limits.

The kernel listens on Unix sockets in the run folder (transport ``ipc``), which
the sandbox shares with the grader although it has no network; interrupts go
as messages on the control channel (a signal would reach bubblewrap, not the
kernel). The kernel gets a clean environment: none of the instructor's variables.
Its limits (``sandbox.prefix``) are registered under its pid while it runs, for
the watchdog, and its cgroups are removed when it is cleaned up. What the launcher,
the sandbox and the kernel write to stderr is read through a pipe; the last
``STDERR_KEPT`` bytes are kept for the submission's grading record (``stderr()``).
"""
from __future__ import annotations

import os
import subprocess
import threading

from jupyter_client.manager import AsyncKernelManager
from traitlets import Dict, List

from . import sandbox

PASS_THROUGH = ("LANG", "LC_ALL", "LC_CTYPE", "TZ", "COURSE_LANG", "CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES",
                "ROCR_VISIBLE_DEVICES", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")


STDERR_KEPT = 16 * 2**10  # bytes: a start failure's traceback fits; a kernel that floods stderr costs nothing


class StderrTail:
    """The read end of a pipe, read to its end in a daemon thread; only the last ``STDERR_KEPT`` bytes are kept."""

    def __init__(self, fd: int):
        self._kept, self._total = b"", 0
        self._thread = threading.Thread(target=self._read, args=(fd,), daemon=True)
        self._thread.start()

    def _read(self, fd: int) -> None:
        with os.fdopen(fd, "rb", buffering=0) as pipe:
            while chunk := pipe.read(65536):
                self._total += len(chunk)
                self._kept = (self._kept + chunk)[-STDERR_KEPT:]

    def text(self, wait_s: float = 2.0) -> str:
        """What was kept (after waiting up to ``wait_s`` for the pipe's end), with how much was cut before it."""
        self._thread.join(wait_s)
        cut = self._total - len(self._kept)
        return (f"[{cut} bytes before cut]\n" if cut else "") + self._kept.decode("utf-8", "replace")


class SandboxedKernelManager(AsyncKernelManager):
    """``prefix`` (``sandbox.prefix``, or empty) goes before the kernel command; ``env`` is its whole environment."""

    prefix = List()
    env = Dict()
    _confinement = None
    _launched = None
    _stderr = None
    command: list[str] = []  # what was launched

    def stderr(self) -> str:
        """The end of what the kernel's processes wrote to stderr ('' before it was launched)."""
        return self._stderr.text() if self._stderr is not None else ""

    def format_kernel_cmd(self, extra_arguments=None):
        return list(self.prefix) + super().format_kernel_cmd(extra_arguments)

    async def _async_pre_start_kernel(self, **kw):
        self.kernel_spec.interrupt_mode = "message"
        return await super()._async_pre_start_kernel(**kw)

    async def _async_launch_kernel(self, kernel_cmd, **kw):
        read, write = os.pipe()
        kw.update(env=dict(self.env), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=write)
        self._confinement = sandbox.Confinement.from_command(list(self.prefix))
        self._stderr, self.command = StderrTail(read), list(kernel_cmd)
        try:
            return await super()._async_launch_kernel(kernel_cmd, **kw)
        finally:
            os.close(write)  # the kernel's processes hold it now: the pipe ends when the last of them does
            self._launched = self.pid
            if self._confinement is not None and self._launched is not None:
                sandbox.register(self._launched, self._confinement)

    async def _async_cleanup_resources(self, restart: bool = False) -> None:
        try:
            await super()._async_cleanup_resources(restart=restart)
        finally:
            if self._confinement is not None:
                self._confinement.release()  # its counters stay readable by a watchdog that saw it
                sandbox.forget(self._launched)

    @property
    def pid(self) -> int | None:
        process = getattr(self.provisioner, "process", None)
        return process.pid if process is not None else None


def kernel_env(home: str, extra: dict[str, str]) -> dict[str, str]:
    """The environment of a graded kernel: PATH, locale, device selection, the language (``COURSE_LANG``, else
    both: not the grader's locale), ``extra``; HOME in the run folder."""
    import sys
    env = {key: os.environ[key] for key in PASS_THROUGH if key in os.environ}
    env.setdefault("COURSE_LANG", "both")  # what a submission prints is graded in both languages unless the class chose one
    bindir = os.path.dirname(sys.executable)
    env.update(PATH=os.pathsep.join([bindir, "/usr/local/bin", "/usr/bin", "/bin"]), HOME=home,
               MPLCONFIGDIR=os.path.join(home, ".matplotlib"), XDG_CACHE_HOME=os.path.join(home, ".cache"),
               PYTHONNOUSERSITE="1", PYTHONDONTWRITEBYTECODE="1", NBGRADER_EXECUTION="autograde")
    env.update(extra)
    return env
