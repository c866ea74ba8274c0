"""A Jupyter kernel manager whose kernel runs inside the sandbox, under its limits.

The kernel listens on Unix sockets in the run folder (transport ``ipc``), which
the sandbox shares with the grader although it has no network; interrupts go
as messages on the control channel (a signal would reach bubblewrap, not the
kernel). The kernel gets a clean environment: none of the instructor's variables.
Its limits (``sandbox.prefix``) are registered under its pid while it runs, for
the watchdog, and its cgroups are removed when it is cleaned up.
"""
from __future__ import annotations

import os
import subprocess

from jupyter_client.manager import AsyncKernelManager
from traitlets import Dict, List

from . import sandbox

PASS_THROUGH = ("LANG", "LC_ALL", "LC_CTYPE", "TZ", "COURSE_LANG", "CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES",
                "ROCR_VISIBLE_DEVICES", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")


class SandboxedKernelManager(AsyncKernelManager):
    """``prefix`` (``sandbox.prefix``, or empty) goes before the kernel command; ``env`` is its whole environment."""

    prefix = List()
    env = Dict()
    _confinement = None
    _launched = None

    def format_kernel_cmd(self, extra_arguments=None):
        return list(self.prefix) + super().format_kernel_cmd(extra_arguments)

    async def _async_pre_start_kernel(self, **kw):
        self.kernel_spec.interrupt_mode = "message"
        return await super()._async_pre_start_kernel(**kw)

    async def _async_launch_kernel(self, kernel_cmd, **kw):
        kw.update(env=dict(self.env), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self._confinement = sandbox.Confinement.from_command(list(self.prefix))
        try:
            return await super()._async_launch_kernel(kernel_cmd, **kw)
        finally:
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
    """The environment of a graded kernel: PATH, locale, device selection, ``extra``; HOME in the run folder."""
    import sys
    env = {key: os.environ[key] for key in PASS_THROUGH if key in os.environ}
    bindir = os.path.dirname(sys.executable)
    env.update(PATH=os.pathsep.join([bindir, "/usr/local/bin", "/usr/bin", "/bin"]), HOME=home,
               MPLCONFIGDIR=os.path.join(home, ".matplotlib"), XDG_CACHE_HOME=os.path.join(home, ".cache"),
               PYTHONNOUSERSITE="1", PYTHONDONTWRITEBYTECODE="1", NBGRADER_EXECUTION="autograde")
    env.update(extra)
    return env
