"""Stand-ins for ``pynvml`` (NVML) and ``torch.cuda``, with NVML's failure modes, for any machine.

:func:`fake_pynvml` answers NVML's device queries for GPUs picked from
:data:`GPU_CATALOGUE` and can fail as a machine without the library or driver does,
or half-way through a query; it counts ``nvmlInit``/``nvmlShutdown`` calls.
:func:`fake_torch_cuda` is the ``torch`` whose ``torch.cuda`` sees the same GPUs.
"""
from __future__ import annotations

import types


class NVMLError(Exception):
    """Stand-in for ``pynvml.NVMLError`` (the real one also subclasses Exception)."""


class NVMLError_LibraryNotFound(NVMLError):  # noqa: N801 (pynvml's naming)
    pass


class NVMLError_DriverNotLoaded(NVMLError):  # noqa: N801
    pass


class NVMLError_Unknown(NVMLError):  # noqa: N801
    pass


INIT_FAILURES = {"library": NVMLError_LibraryNotFound, "driver": NVMLError_DriverNotLoaded}
GPU_CATALOGUE = (  # name, memory in bytes as NVML reports it (total framebuffer), compute capability
    ("NVIDIA H100 80GB HBM3", 85_520_809_984, (9, 0)),
    ("NVIDIA A100-SXM4-80GB", 85_899_345_920, (8, 0)),
    ("NVIDIA GeForce RTX 4090", 25_757_220_864, (8, 9)),
    ("NVIDIA L4", 24_152_899_584, (8, 9)),
    ("Tesla T4", 16_106_127_360, (7, 5)),
    ("NVIDIA H200", 150_754_820_096, (9, 0)),
)


def fake_pynvml(gpus: list, fail: str | None = None, bytes_names: bool = False) -> types.SimpleNamespace:
    """A stand-in for ``pynvml`` with ``gpus`` (catalogue indices) and one failure mode.

    ``fail``: None, ``'library'``/``'driver'`` (nvmlInit raises), or ``'count'``/``'memory'``
    (that query raises after a successful init). ``calls`` counts init and shutdown.
    """
    S = types.SimpleNamespace
    calls = {"init": 0, "shutdown": 0}
    devices = [GPU_CATALOGUE[i] for i in gpus]

    def init():
        if fail in INIT_FAILURES:
            raise INIT_FAILURES[fail]("NVML Shared Library Not Found" if fail == "library" else "Driver Not Loaded")
        calls["init"] += 1

    def shutdown():
        calls["shutdown"] += 1

    def count():
        if fail == "count":
            raise NVMLError_Unknown("Unknown Error")
        return len(devices)

    def memory(handle):
        if fail == "memory":
            raise NVMLError_Unknown("Unknown Error")
        return S(total=devices[handle][1], free=devices[handle][1] // 2, used=devices[handle][1] // 2)

    def name(handle):
        return devices[handle][0].encode() if bytes_names else devices[handle][0]

    return S(__name__="pynvml", NVMLError=NVMLError, calls=calls, nvmlInit=init, nvmlShutdown=shutdown,
             nvmlDeviceGetCount=count, nvmlDeviceGetHandleByIndex=lambda i: int(i), nvmlDeviceGetName=name,
             nvmlDeviceGetMemoryInfo=memory, nvmlDeviceGetCudaComputeCapability=lambda h: devices[h][2])


def fake_torch_cuda(gpus: list) -> types.SimpleNamespace:
    """A stand-in for ``torch`` whose ``torch.cuda`` sees ``gpus`` (catalogue indices; torch reports slightly less memory)."""
    S = types.SimpleNamespace
    devices = [GPU_CATALOGUE[i] for i in gpus]

    def props(i):
        name, total, (major, minor) = devices[int(i)]
        return S(name=name, total_memory=total - 512 * 2**20, major=major, minor=minor)

    def unavailable(*_):
        raise RuntimeError("Torch not compiled with CUDA enabled")

    return S(__name__="torch", cuda=S(is_available=lambda: bool(devices), device_count=lambda: len(devices),
                                      get_device_properties=props if devices else unavailable))
