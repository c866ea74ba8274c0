"""Stand-ins for ``torch`` device APIs and ``mlx.core``, built from plain data, so every combination of
backends can be exercised on a CPU-only machine."""
from __future__ import annotations

import contextlib
import enum
import sys
import types

GPU_CATALOGUE = (
    # name as torch reports it, nominal memory (GiB), compute capability, SMs
    ("Tesla V100-SXM2-32GB", 32, (7, 0), 80),
    ("Tesla T4", 15, (7, 5), 40),
    ("NVIDIA A100-SXM4-80GB", 80, (8, 0), 108),
    ("NVIDIA GeForce RTX 4090", 24, (8, 9), 128),
    ("NVIDIA L4", 22, (8, 9), 58),
    ("NVIDIA H100 80GB HBM3", 80, (9, 0), 132),
    ("NVIDIA H200", 141, (9, 0), 132),
    ("NVIDIA B200", 180, (10, 0), 148),
    ("NVIDIA GeForce RTX 5090", 32, (12, 0), 170),
)


def fake_torch(cuda: bool = False, mps: bool = False, xpu: bool | None = False, gpus: list | None = None,
               hip: str | None = None, xpus: list | None = None) -> types.SimpleNamespace:
    """A stand-in for the ``torch`` module with the given backends available.

    ``gpus``: dicts (name, total_memory, major, minor, sms[, bf16]) for CUDA/ROCm devices;
    ``xpu=None`` leaves ``torch.xpu`` out, as in builds older than 2.4.
    """
    import torch

    gpus = list(gpus or [])
    if cuda and not gpus:
        gpus = [{"name": "NVIDIA H100 80GB HBM3", "total_memory": 85 * 10**9, "major": 9, "minor": 0, "sms": 132}]
    if xpus is None:
        xpus = [{"name": "Intel(R) Data Center GPU Max 1550", "total_memory": 64 * 2**30}] if xpu else []
    S = types.SimpleNamespace

    def props(g: dict) -> S:
        return S(name=g["name"], total_memory=g["total_memory"], major=g["major"], minor=g["minor"],
                 multi_processor_count=g["sms"], gcnArchName=g.get("arch", "") if hip else "",
                 is_integrated=False, L2_cache_size=0)

    def pick(devices: list, i=0) -> dict:
        if not devices:
            raise RuntimeError("Torch not compiled with this backend enabled")
        text = str(i)  # 0, "cuda:1" or torch.device("cuda", 1)
        return devices[int(text.rsplit(":", 1)[1]) if ":" in text else int(text) if text.isdigit() else 0]

    def bf16_first(including_emulation: bool = True) -> bool:
        g = gpus[0] if gpus else {}
        return bool(g.get("bf16", (g.get("major", 0), g.get("minor", 0)) >= (8, 0)))

    cuda_ns = S(
        is_available=lambda: bool(gpus), device_count=lambda: len(gpus),
        get_device_properties=lambda i=0: props(pick(gpus, i)),
        get_device_name=lambda i=0: pick(gpus, i)["name"],
        get_device_capability=lambda i=0: (pick(gpus, i)["major"], pick(gpus, i)["minor"]),
        mem_get_info=lambda i=0: (pick(gpus, i)["total_memory"] // 2, pick(gpus, i)["total_memory"]),
        is_bf16_supported=bf16_first, current_device=lambda: 0, synchronize=lambda *a: None,
    )
    fake = S(
        __name__="torch", __version__=torch.__version__, device=torch.device, cuda=cuda_ns,
        backends=S(mps=S(is_available=lambda: mps, is_built=lambda: mps)),
        mps=S(synchronize=lambda: None, device_count=lambda: int(mps)),
        version=S(cuda=None if (hip or not gpus) else "12.8", hip=hip, xpu=None),
    )
    if xpu is not None:
        fake.xpu = S(
            is_available=lambda: bool(xpus), device_count=lambda: len(xpus),
            get_device_properties=lambda i=0: S(name=pick(xpus, i)["name"], total_memory=pick(xpus, i)["total_memory"],
                                                architecture=None, gpu_subslice_count=None, driver_version=None),
            get_device_name=lambda i=0: pick(xpus, i)["name"],
            is_bf16_supported=lambda: True, synchronize=lambda *a: None,
        )
    order = [n for n, on in (("cuda", bool(gpus)), ("mps", mps), ("xpu", bool(xpus))) if on]
    fake.accelerator = S(is_available=lambda: bool(order),
                         current_accelerator=lambda: torch.device(order[0]) if order else None)
    return fake


class _DeviceType(enum.Enum):
    cpu = 0
    gpu = 1


class _Device:
    def __init__(self, type, index: int = 0):  # noqa: A002 (mlx's own argument name)
        self.type = type.type if isinstance(type, _Device) else type
        self.index = index

    def __eq__(self, other) -> bool:
        return self.type == getattr(other, "type", other)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Device({self.type.name}, {self.index})"


def fake_mlx(gpu: bool, backend: str = "metal") -> types.SimpleNamespace:
    """A stand-in for ``mlx.core`` whose GPU is available (through ``backend``) or not."""
    S = types.SimpleNamespace
    state = {"default": _Device(_DeviceType.gpu if gpu else _DeviceType.cpu)}

    def kind(device):
        return device.type if isinstance(device, _Device) else device

    def set_default(device):
        if kind(device) is _DeviceType.gpu and not gpu:
            raise ValueError("[set_default_device] Device gpu is not available.")
        state["default"] = _Device(kind(device))

    return S(
        __name__="mlx.core", __version__="0.0.0+fake", cpu=_DeviceType.cpu, gpu=_DeviceType.gpu,
        DeviceType=_DeviceType, Device=_Device,
        is_available=lambda device: kind(device) is _DeviceType.cpu or gpu,
        device_count=lambda device: 1 if (kind(device) is _DeviceType.cpu or gpu) else 0,
        default_device=lambda: state["default"], set_default_device=set_default,
        metal=S(is_available=lambda: gpu and backend == "metal"),
        cuda=S(is_available=lambda: gpu and backend == "cuda"),
    )


def broken_mlx(error: str) -> dict[str, types.ModuleType]:
    """Modules for ``sys.modules``: an ``mlx`` package whose ``core`` fails on first use."""

    class Broken(types.ModuleType):
        def __getattr__(self, name):
            if name.startswith("__"):
                raise AttributeError(name)
            raise {"RuntimeError": RuntimeError, "OSError": OSError}.get(error, RuntimeError)(
                f"[metal::Device] Unable to load the default metallib ({name})")

    package = types.ModuleType("mlx")
    package.__path__ = []  # a package, so that `import mlx.core` looks in sys.modules
    core = Broken("mlx.core")
    package.core = core
    return {"mlx": package, "mlx.core": core}


@contextlib.contextmanager
def mlx_modules(replacement: dict | None):
    """Temporarily replace ``mlx`` and its submodules in ``sys.modules`` (None entries = not installed)."""
    saved = {k: v for k, v in sys.modules.items() if k == "mlx" or k.startswith("mlx.")}
    for k in saved:
        del sys.modules[k]
    sys.modules.update(replacement or {})
    try:
        yield
    finally:
        for k in [k for k in sys.modules if k == "mlx" or k.startswith("mlx.")]:
            del sys.modules[k]
        sys.modules.update(saved)
