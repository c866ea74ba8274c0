"""Reference answers and hidden cases of module 01 (devices)."""
from __future__ import annotations

import time
from typing import Any, Callable

from autograder import hardware, profiles
from autograder.fakes.devices import GPU_CATALOGUE, fake_mlx, fake_torch
from autograder.modules.m01_devices.lesson import RECIPES
from autograder.modules.m01_devices.tasks import case_torch, speedup_widths

TORCH_PRIORITY = ("cuda", "mps", "xpu")
TORCH_NAMES = TORCH_PRIORITY + ("cpu",)
MLX_NAMES = ("gpu", "cpu")
# 16: bf16 weights 2 + bf16 grads 2 + fp32 master 4 + Adam m 4 + v 4 (ZeRO, Sec. 3.1), the lesson's recipe
ADAM_MIXED_BYTES_PER_PARAM = sum(RECIPES["adam_mixed"])


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


# ---------------------------------------------------------------- expected answers of a case (cases marked
# "real" are this machine: the task reads the course's own detection for them, so they expect nothing here)
def _picker(case) -> str | None:
    if case.get("real"):
        return None
    try:
        return pick_device(case["prefer"], fake_torch(cuda=case["cuda"], mps=case["mps"], xpu=case["xpu"]))
    except ValueError:
        return None


def _mlx_picker(case) -> str | None:
    if case.get("real"):
        return None
    if case.get("mlx") == "absent":
        return "None"
    try:
        return str(pick_mlx_device(case["prefer"], fake_mlx(case["gpu"], case["backend"])))
    except ValueError:
        return "ValueError"


EXPECT = {
    "picker": _picker,
    "mlx_picker": _mlx_picker,
    "inventory": lambda case: None if case.get("real") else inventory(case_torch(case)),
    "memory": lambda case: finetune_plan(case["n_params"], case["activation_gb"], case["devices"]),
}


# ---------------------------------------------------------------- hidden cases
def _picker_hidden(rng) -> list:
    cases = [{"cuda": c, "mps": m, "xpu": x, "prefer": None}
             for c in (False, True) for m in (False, True) for x in (False, True)]
    cases += [{"cuda": c, "mps": m, "xpu": None, "prefer": None} for c, m in ((False, False), (False, True))]
    for _ in range(6):
        flags = {"cuda": rng.random() < 0.5, "mps": rng.random() < 0.5, "xpu": rng.random() < 0.5}
        on = [n for n in ("cuda", "mps", "xpu", "cpu") if n == "cpu" or flags[n]]
        off = [n for n in ("cuda", "mps", "xpu") if not flags[n]]
        cases.append({**flags, "prefer": rng.choice(on)})
        if off:
            cases.append({**flags, "prefer": rng.choice(off)})
    cases.append({"cuda": True, "mps": False, "xpu": False, "prefer": rng.choice(["tpu", "gpu", "CUDA0"])})
    rng.shuffle(cases)
    return cases


def _mlx_picker_hidden(rng) -> list:
    cases = []
    for gpu in (True, False):
        for backend in ("metal", "cuda"):
            cases.append({"gpu": gpu, "backend": backend, "prefer": None})
            cases.append({"gpu": gpu, "backend": backend, "prefer": "cpu"})
    cases.append({"gpu": True, "backend": rng.choice(["metal", "cuda"]), "prefer": "gpu"})
    cases.append({"gpu": False, "backend": rng.choice(["metal", "cuda"]), "prefer": "gpu"})
    cases.append({"gpu": rng.random() < 0.5, "backend": "metal", "prefer": rng.choice(["tpu", "mps", "GPU:1"])})
    cases.append({"mlx": "absent"})
    rng.shuffle(cases)
    return cases


def _random_gpu(rng) -> dict:
    name, gib, (major, minor), sms = rng.choice(GPU_CATALOGUE)
    return {"name": name, "total_memory": int(gib * 2**30 * rng.uniform(0.97, 0.995)),
            "major": major, "minor": minor, "sms": sms}


def _inventory_hidden(rng) -> list:
    cases = [{"gpus": [_random_gpu(rng) for _ in range(rng.randint(1, 4))], "hip": None, "xpus": []}
             for _ in range(3)]
    cases.append({"gpus": [], "hip": None, "xpus": []})
    cases.append({"gpus": [{"name": "AMD Instinct MI300X", "total_memory": int(192 * 2**30 * 0.99), "major": 9,
                            "minor": 4, "sms": 304, "arch": "gfx942:sramecc+:xnack-", "bf16": True}] * 2,
                  "hip": "6.4.43482", "xpus": []})
    cases.append({"gpus": [], "hip": None,
                  "xpus": [{"name": "Intel(R) Data Center GPU Max 1100", "total_memory": int(48 * 2**30)}]})
    rng.shuffle(cases)
    return cases


def _memory_hidden(rng) -> list:
    pool = [p for p in profiles.all_of() if p.memory_gib]
    cases = []
    for _ in range(5):
        chosen = rng.sample(pool, rng.randint(2, 6))
        cases.append({"n_params": float(rng.randint(1, 400) * 1e8), "activation_gb": round(rng.uniform(0, 12), 2),
                      "devices": {p.id: p.memory_bytes / 1e9 for p in chosen}})
    cases.append({"n_params": float(rng.randint(2, 9) * 1e9), "activation_gb": 0.0,
                  "devices": {f"gpu_{i}": float(rng.randint(4, 48) * 4) for i in range(rng.randint(2, 5))}})
    cases.append({"n_params": 2e9, "activation_gb": 0.5, "devices": {"tiny_a": 8.0, "tiny_b": 16.0}})
    return cases


HIDDEN = {
    "picker": _picker_hidden,
    "mlx_picker": _mlx_picker_hidden,
    "mlx_usable": lambda rng: [{"mode": "broken", "error": rng.choice(["RuntimeError", "OSError"])}, {"mode": "absent"}],
    "inventory": _inventory_hidden,
    "timer": lambda rng: [{"work_s": round(rng.uniform(0.01, 0.04), 4), "pending": rng.choice([0, 12]),
                           "cpu_s": round(rng.uniform(0.005, 0.02), 4)} for _ in range(3)]
    + [{"work_s": 0.02, "pending": 10, "cpu_s": 0.01}],
    "speedup": lambda rng: [{"width": rng.choice(speedup_widths())}],
    "memory": _memory_hidden,
}
