"""Where kernels run: a real NVIDIA GPU, or Numba's CUDA simulator and Triton's interpreter on the CPU.

Importing this file decides once per process, before ``numba.cuda`` and ``triton`` are imported:

- Numba: with an NVIDIA GPU on which a tiny kernel compiles and runs (probed in a child process, so a broken
  CUDA set-up cannot take this kernel down), kernels compile for it; otherwise ``NUMBA_ENABLE_CUDASIM=1`` runs
  them on the simulator (threads of a block as Python threads). A choice already made in the environment, or a
  ``numba.cuda`` imported before this file, is kept. :data:`DEVICE` is what the course's timer synchronizes.
- Triton: on a GPU that PyTorch can use it compiles; otherwise ``TRITON_INTERPRET=1`` runs kernels with NumPy on
  CPU tensors. Where Triton does not install (it has wheels for Linux only), ``triton`` is None and
  :data:`TRITON_MISSING` says why.

Numba and Triton are not installed by the set-up: the first import of this file installs them (the ``kernels``
extra, :func:`autograder.optional.ensure`), saying what and why under a progress bar.
"""
from __future__ import annotations

import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path

from ... import optional
from ...i18n import Message

SIM_ENV, INTERPRET_ENV = "NUMBA_ENABLE_CUDASIM", "TRITON_INTERPRET"
PROBE = """
import numpy as np
from numba import cuda
@cuda.jit
def k(a):
    a[cuda.grid(1)] += 1
x = np.zeros(32, np.float32)
k[1, 32](x)
print("ok" if x.sum() == 32 else "wrong")
"""


def nvidia_gpu_present() -> bool:
    """An NVIDIA driver on this computer (the same test as the course's set-up)."""
    return shutil.which("nvidia-smi") is not None or Path("/proc/driver/nvidia/gpus").exists()


def _probe_real_cuda() -> str | None:
    """None when a Numba kernel compiles and runs on the GPU (in a child process), else why not."""
    env = {k: v for k, v in os.environ.items() if k != SIM_ENV}
    try:
        done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=180, env=env)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{type(exc).__name__}: {exc}"
    if done.returncode == 0 and done.stdout.strip().endswith("ok"):
        return None
    lines = (done.stderr or done.stdout).strip().splitlines()
    return lines[-1][:300] if lines else f"exit status {done.returncode}"


def _choose_numba() -> tuple[bool, Message]:
    """(simulated?, why), setting ``NUMBA_ENABLE_CUDASIM`` before numba.cuda is imported."""
    if SIM_ENV in os.environ or "numba.cuda" in sys.modules:
        return None, Message("환경에서 정한 대로", "as set in the environment")
    if not nvidia_gpu_present():
        os.environ[SIM_ENV] = "1"
        return True, Message("NVIDIA GPU가 없어 CUDA 시뮬레이터로 실행합니다",
                             "no NVIDIA GPU: kernels run on the CUDA simulator")
    problem = _probe_real_cuda()
    if problem is None:
        return False, Message("NVIDIA GPU에서 컴파일해 실행합니다", "kernels compile and run on the NVIDIA GPU")
    os.environ[SIM_ENV] = "1"
    return True, Message(f"GPU가 있지만 Numba가 커널을 컴파일하지 못해(`{problem}`) 시뮬레이터로 실행합니다. "
                         "CUDA 12 드라이버라면 `pip install numba-cuda[cu12]`(CUDA 13이면 [cu13])로 고칠 수 있습니다",
                         f"a GPU is present but Numba cannot compile for it (`{problem}`): kernels run on the "
                         "simulator. With a CUDA 12 driver, `pip install numba-cuda[cu12]` fixes it ([cu13] for CUDA 13)")


WHY_INSTALL = Message("모듈 07의 커널은 Numba(GPU가 없으면 그 CUDA 시뮬레이터)와 Triton(GPU가 없으면 그 인터프리터)으로 "
                      "돌아갑니다. 설치 명령은 이 무거운 부분(약 1 GB)을 미리 설치하지 않습니다",
                      "module 07's kernels run on Numba (its CUDA simulator without a GPU) and Triton (its "
                      "interpreter without a GPU); the set-up leaves these heavy parts (about 1 GB) until now")
NOT_INSTALLED = optional.ensure("kernels", WHY_INSTALL)  # {package: why it is missing}
if "numba" in NOT_INSTALLED:
    raise ImportError(str(Message("모듈 07에는 Numba가 필요합니다:", "Module 07 needs Numba:") + NOT_INSTALLED["numba"]))

_simulated, NUMBA_WHY = _choose_numba()
# Small teaching grids and NumPy arguments are the point here: Numba's performance warnings would go to stderr.
os.environ.setdefault("NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS", "0")
os.environ.setdefault("NUMBA_CUDA_WARN_ON_IMPLICIT_COPY", "0")
if "numba.core.config" in sys.modules:   # numba imported earlier read the environment then: read it again
    sys.modules["numba.core.config"].reload_config()
from numba import cuda  # noqa: E402  (after the choice above)

SIMULATED: bool = cuda.jit.__module__.endswith("simulator.api") if _simulated is None else _simulated


class SimulatedGPU:
    """The simulator as the course's timer sees it: ``time_fn(..., device=DEVICE)`` synchronizes with
    ``cuda.synchronize()``, as on a GPU (a no-op on the simulator, except on the check's virtual clock,
    :mod:`.clock`). Named ``cpu``, where it runs."""

    name = "cpu"

    def synchronize(self) -> None:
        cuda.synchronize()

    def __repr__(self) -> str:
        return "SimulatedGPU(cpu)"


# What the course's timer synchronizes: the GPU (torch and Numba share it), or the simulator.
DEVICE = SimulatedGPU() if SIMULATED else "cuda"


class _Absent:
    """Stands in for ``triton`` and ``triton.language`` where Triton is not installed: a kernel can still be
    defined (``@triton.jit`` returns the function as it is), and the check says why it cannot run."""

    def __getattr__(self, name: str) -> "_Absent":
        if name.startswith("__"):
            raise AttributeError(name)
        return _Absent()

    def __call__(self, *args, **kwargs):
        return args[0] if len(args) == 1 and callable(args[0]) and not kwargs else _Absent()


def _choose_triton():
    """(triton, triton.language, why not) with ``TRITON_INTERPRET`` set where no GPU can run Triton."""
    if INTERPRET_ENV not in os.environ:
        import torch
        if not torch.cuda.is_available():
            os.environ[INTERPRET_ENV] = "1"
    try:
        import triton
        import triton.language as tl
    except ImportError as exc:
        if "triton" in NOT_INSTALLED:
            return _Absent(), _Absent(), NOT_INSTALLED["triton"] + Message("Triton 부분은 건너뜁니다",
                                                                             "The Triton parts are skipped")
        system = platform.system() or sys.platform
        return _Absent(), _Absent(), Message(
            f"Triton이 설치되어 있지 않습니다({system}: Triton은 Linux용 휠만 배포합니다; {exc}). Triton 부분은 건너뜁니다",
            f"Triton is not installed ({system}: Triton publishes wheels for Linux only; {exc}). The Triton parts are skipped")
    return triton, tl, None


triton, tl, TRITON_MISSING = _choose_triton()
TRITON_INTERPRETED = os.environ.get(INTERPRET_ENV) == "1"
TRITON_DEVICE = "cpu" if TRITON_INTERPRETED else "cuda"


def gpu_name() -> str:
    """The name of the GPU Numba runs on ("GPU" where it cannot tell)."""
    try:
        name = cuda.get_current_device().name
    except Exception:  # any driver trouble: the name is only for the verdict
        return "GPU"
    return name.decode() if isinstance(name, bytes) else str(name)


def execute(kernel, grid, block, *args, names: tuple | None = None):
    """Trace ``kernel[grid, block](*args)`` on the simulator (NumPy arguments are copied first; ``names`` names
    them in the trace), and on a GPU run it there too: returns (trace, the arguments after the run that counts,
    on the GPU where there is one)."""
    import numpy as np

    from .traffic import trace
    simulated = [np.copy(a) if isinstance(a, np.ndarray) else a for a in args]
    record = trace(kernel, grid, block, *simulated, names=names)
    if record.error and record.error.startswith("NotImplementedError"):
        raise NotImplementedError()
    if SIMULATED or record.error or record.oob:   # never run an out-of-bounds kernel on a real GPU
        return record, simulated
    on_device = [cuda.to_device(a) if isinstance(a, np.ndarray) else a for a in args]
    kernel[grid, block](*on_device)
    cuda.synchronize()
    return record, [a.copy_to_host() if hasattr(a, "copy_to_host") else a for a in on_device]


def summary() -> Message:
    """Two lines on where this notebook's kernels run."""
    side = TRITON_MISSING or (Message("인터프리터(CPU, NumPy)로 실행합니다", "kernels run on the interpreter (CPU, NumPy)")
                              if TRITON_INTERPRETED else Message("GPU에서 컴파일해 실행합니다",
                                                                 "kernels compile and run on the GPU"))
    return Message(f"Numba: {NUMBA_WHY.ko}\nTriton: {side.ko}", f"Numba: {NUMBA_WHY.en}\nTriton: {side.en}")
