"""Machines the checks of exercise 01 build from plain data: MLX installations and torch on other computers.

The core fakes (``autograder/fakes/devices.py``) give the device APIs of torch and MLX. This adds what the
module's tasks need on top: an MLX that really computes (lazily, as MLX does) or that fails only when it
evaluates, and the answers a real torch gives on a given GPU or Mac (bf16 through emulation, the macOS
version, Metal's recommended working set).
"""
from __future__ import annotations

import types

import numpy as np

from ...fakes.devices import broken_mlx, fake_mlx, fake_torch

METALLIB_ERROR = "[metal::Device] Unable to load the default metallib"

# name, backend: what an MLX installation offers
MLX_INSTALLS = {
    "absent": None,                  # not installed
    "broken": None,                  # mlx.core fails on first use
    "eval_fails": (True, "metal"),   # imports and builds arrays, fails when it computes
    "metal": (True, "metal"),        # a Mac: the GPU through Metal
    "cuda": (True, "cuda"),          # Linux, mlx[cuda12]: an NVIDIA GPU
    "cpu": (False, "cuda"),          # Linux, mlx[cpu]: no GPU
}


class _Array:
    """A lazy array: operations build a graph; nothing is computed until it is evaluated or read."""

    def __init__(self, thunk, core):
        self._thunk, self._core = thunk, core

    def _value(self) -> np.ndarray:
        return self._core._evaluate(self)

    def _op(self, other, fn):
        other_value = other if isinstance(other, _Array) else _Array(lambda: np.asarray(other, np.float32), self._core)
        return _Array(lambda: fn(self._value(), other_value._value()), self._core)

    def __add__(self, other): return self._op(other, np.add)
    __radd__ = __add__
    def __sub__(self, other): return self._op(other, np.subtract)
    def __rsub__(self, other): return self._op(other, lambda a, b: b - a)
    def __mul__(self, other): return self._op(other, np.multiply)
    __rmul__ = __mul__
    def __truediv__(self, other): return self._op(other, np.divide)
    def __matmul__(self, other): return self._op(other, np.matmul)
    def __neg__(self): return _Array(lambda: -self._value(), self._core)
    def sum(self, *args, **kwargs): return _Array(lambda: np.asarray(self._value().sum()), self._core)
    def item(self): return self._value().item()
    def tolist(self): return self._value().tolist()
    def __float__(self): return float(self._value())
    def __array__(self, dtype=None, copy=None): return self._value().astype(dtype) if dtype else self._value()
    def __repr__(self): return f"array({self._value().tolist()!r})"
    @property
    def shape(self): return tuple(self._value().shape)
    @property
    def size(self): return int(self._value().size)


def computing_mlx(gpu: bool, backend: str = "metal", fails: bool = False) -> types.SimpleNamespace:
    """``mlx.core`` whose arrays compute lazily (``fails``: the first evaluation raises, as a broken Metal does)."""
    core = fake_mlx(gpu, backend)

    def evaluate(array: _Array) -> np.ndarray:
        if fails:
            raise RuntimeError(METALLIB_ERROR)
        return np.asarray(array._thunk(), dtype=np.float32)

    def make(values) -> _Array:
        return _Array(lambda: np.asarray(values, np.float32), core)

    def lift(fn):
        return lambda *arrays, **kwargs: _Array(lambda: fn(*[np.asarray(a) if not isinstance(a, _Array)
                                                              else a._value() for a in arrays]), core)

    def evaluate_all(*arrays, **kwargs) -> None:
        for array in arrays:
            if isinstance(array, _Array):
                evaluate(array)

    core._evaluate = evaluate
    core.array = lambda values, dtype=None: make(values)
    core.ones = lambda shape, dtype=None, **kw: make(np.ones(shape))
    core.zeros = lambda shape, dtype=None, **kw: make(np.zeros(shape))
    core.full = lambda shape, value, dtype=None, **kw: make(np.full(shape, value))
    core.arange = lambda *args, **kw: make(np.arange(*args))
    core.add, core.subtract, core.multiply = lift(np.add), lift(np.subtract), lift(np.multiply)
    core.divide, core.matmul = lift(np.divide), lift(np.matmul)
    core.sum = lambda a, *args, **kw: _Array(lambda: np.asarray(a._value().sum()), core)
    core.mean = lambda a, *args, **kw: _Array(lambda: np.asarray(a._value().mean()), core)
    core.eval = evaluate_all
    core.float32 = "float32"
    rng = np.random.default_rng(0)
    core.random = types.SimpleNamespace(normal=lambda shape=(), *a, **kw: make(rng.standard_normal(shape)),
                                        uniform=lambda *a, shape=(), **kw: make(rng.random(shape)))
    return core


def mlx_install(name: str) -> dict:
    """Modules for ``sys.modules`` (``autograder.fakes.devices.mlx_modules``): MLX as installation ``name`` has it."""
    if name == "absent":
        return {"mlx": None, "mlx.core": None}
    if name == "broken":
        return broken_mlx("RuntimeError")
    gpu, backend = MLX_INSTALLS[name]
    core = computing_mlx(gpu, backend, fails=name == "eval_fails")
    package = types.ModuleType("mlx")
    package.__path__ = []  # a package, so that `import mlx.core` looks in sys.modules
    package.core = core
    return {"mlx": package, "mlx.core": core}


def machine_torch(machine: dict) -> types.SimpleNamespace:
    """torch as it answers on ``machine``: ``gpus`` (NVIDIA or, with ``hip``, AMD) or ``mac`` (an Apple GPU)."""
    mac = machine.get("mac")
    torch = fake_torch(gpus=machine.get("gpus") or [], hip=machine.get("hip"), mps=mac is not None, xpu=False)
    gpus = machine.get("gpus") or []

    def bf16(including_emulation: bool = True) -> bool:
        """As torch.cuda.is_bf16_supported: ROCm always; NVIDIA natively from 8.0, and through emulation on any."""
        if not gpus:
            return False
        return bool(machine.get("hip")) or gpus[0]["major"] >= 8 or including_emulation

    torch.cuda.is_bf16_supported = bf16
    if mac is not None:
        torch.backends.mps.is_macos_or_newer = lambda major, minor: tuple(mac["macos"]) >= (major, minor)
        torch.mps.recommended_max_memory = lambda: int(mac["recommended_gib"] * 2**30)
    return torch
