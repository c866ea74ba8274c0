"""Reference answers of module 01 (devices): the rules the checks grade against."""
from __future__ import annotations

import time
from typing import Any, Callable

TORCH_PRIORITY = ("cuda", "mps", "xpu")
TORCH_NAMES = TORCH_PRIORITY + ("cpu",)
MLX_NAMES = ("gpu", "cpu")
ADAM_MIXED_BYTES_PER_PARAM = 16  # bf16 weights 2 + bf16 grads 2 + fp32 master 4 + Adam m 4 + v 4 (ZeRO, Sec. 3.1)


def _available(torch_module, name: str) -> bool:
    """Whether torch backend ``name`` is usable; a backend missing from this torch build is not."""
    if name == "cpu":
        return True
    if name == "mps":
        backend = getattr(getattr(torch_module, "backends", None), "mps", None)
    else:
        backend = getattr(torch_module, name, None)
    check = getattr(backend, "is_available", None)
    return bool(check()) if check is not None else False


def pick_device(prefer: str | None = None, torch_module=None) -> str:
    """'cuda' > 'mps' > 'xpu' > 'cpu', or ``prefer`` if it is available (ValueError otherwise)."""
    if torch_module is None:
        import torch as torch_module
    if prefer is not None:
        if prefer not in TORCH_NAMES:
            raise ValueError(f"unknown device {prefer!r}: use one of {TORCH_NAMES}")
        if not _available(torch_module, prefer):
            raise ValueError(f"{prefer!r} is not available here")
        return prefer
    return next((name for name in TORCH_PRIORITY if _available(torch_module, name)), "cpu")


def pick_mlx_device(prefer: str | None = None, mx_module=None) -> str | None:
    """'gpu' if MLX has a usable GPU else 'cpu'; ``prefer`` overrides; None without MLX."""
    if mx_module is None:
        return None
    if prefer is not None and prefer not in MLX_NAMES:
        raise ValueError(f"unknown MLX device {prefer!r}: use 'gpu' or 'cpu'")
    gpu = bool(mx_module.is_available(mx_module.gpu))
    if prefer == "gpu" and not gpu:
        raise ValueError("MLX has no usable GPU here")
    return prefer or ("gpu" if gpu else "cpu")


def mlx_usable() -> bool:
    """True if ``mlx.core`` imports and evaluates a tiny computation."""
    try:
        import mlx.core as mx
        mx.eval(mx.array([1.0]) + 1)
        return True
    except Exception:  # absent, broken install, or no working backend
        return False


def inventory(torch_module=None, cpu_row: dict | None = None) -> list[dict]:
    """One row per device (CPU first, then CUDA/ROCm, MPS, XPU), as ``hardware.HardwareReport.rows()``.

    MLX is left out: on a Mac it is the same GPU as MPS.
    """
    from .. import hardware

    if torch_module is None:
        rows = hardware.detect().rows()
    else:
        rows = [cpu_row or hardware.detect().rows()[0]] + hardware.detect(
            torch=torch_module, pynvml=None, mlx=None, cpuinfo=None).rows()[1:]
    return [r for r in rows if r["kind"] != "mlx"]


def time_call(fn: Callable[[], Any], device: Any, repeats: int = 5) -> float:
    """Median seconds per call of ``fn`` on ``device``: warm up, synchronize before and after."""
    sync = synchronizer(device)
    fn()
    sync()
    samples = []
    for _ in range(repeats):
        sync()
        start = time.perf_counter()
        fn()
        sync()
        samples.append(time.perf_counter() - start)
    return sorted(samples)[len(samples) // 2]


def synchronizer(device: Any) -> Callable[[], None]:
    """How to wait for ``device``: its own ``synchronize``, torch's per backend, or nothing (CPU)."""
    if hasattr(device, "synchronize"):
        return device.synchronize
    kind = str(device).split(":")[0]
    if kind in ("cuda", "mps", "xpu"):
        import torch
        return getattr(torch, kind).synchronize
    return lambda: None


def finetune_plan(n_params: float, activation_gb: float, devices: dict[str, float]) -> dict:
    """GB needed to fine-tune with Adam in mixed precision, and the smallest device that fits."""
    need = ADAM_MIXED_BYTES_PER_PARAM * n_params / 1e9 + activation_gb
    fitting = [(memory, name) for name, memory in devices.items() if memory >= need]
    return {"need_gb": need, "device": min(fitting)[1] if fitting else None}


def compare_devices(make_step: Callable[..., Callable[[], Any]], width: int = 512) -> dict:
    """Seconds per training step on the CPU and on the best accelerator (the CPU again when there is none)."""
    accel = pick_device()
    return {"cpu_s": time_call(make_step("cpu", width), "cpu"),
            "accel_s": time_call(make_step(accel, width), accel), "accel_device": accel}
