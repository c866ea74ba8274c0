"""Checks of module 01 (devices): pickers, MLX, inventory, timer, CPU vs accelerator, memory.

Device availability is faked: ``fake_torch`` and ``fake_mlx`` build stand-ins for
``torch`` and ``mlx.core`` from a JSON case, so every combination can be graded
on a CPU-only machine. The timer is graded with :class:`autograder.fakes.FakeAsyncDevice`.
"""
from __future__ import annotations

import contextlib
import enum
import math
import statistics
import sys
import time
import types
from typing import Any

from ..i18n import Message, msg
from . import referee
from .core import Part, Task

# ---------------------------------------------------------------- fakes of torch and mlx.core
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


def _broken_mlx(error: str) -> dict[str, types.ModuleType]:
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
def _mlx_modules(replacement: dict | None):
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


def _say(key: str, **values) -> Message:
    return msg(f"m01.{key}", **values)


def _fmt(value: Any) -> str:
    return "None" if value is None else str(value)


# ---------------------------------------------------------------- 1. torch device picker
def _picker_visible() -> list:
    return [
        {"cuda": False, "mps": False, "xpu": False, "prefer": None},
        {"cuda": True, "mps": False, "xpu": False, "prefer": None},
        {"cuda": False, "mps": True, "xpu": False, "prefer": None},
        {"cuda": True, "mps": False, "xpu": False, "prefer": "cpu"},
        {"real": True},
    ]


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


def _picker_answer(learner, case) -> dict:
    try:
        if case.get("real"):
            result = learner()
        else:
            fake = fake_torch(cuda=case["cuda"], mps=case["mps"], xpu=case["xpu"])
            result = learner(prefer=case["prefer"], torch_module=fake)
    except ValueError:
        return {"raised": "ValueError"}
    return {"device": None if result is None else str(result).split(":")[0]}


def _picker_expected(case) -> str | None:
    """The expected device name, or None where a ValueError is expected."""
    from ..answers import m01

    if case.get("real"):
        from ..hardware import best_device
        return best_device()
    try:
        return m01.pick_device(case["prefer"], fake_torch(cuda=case["cuda"], mps=case["mps"], xpu=case["xpu"]))
    except ValueError:
        return None


def _picker_score(case, answer) -> Part:
    expected = _picker_expected(case)
    found = answer.get("device") if "device" in answer else "ValueError"
    where = _say("real_machine") if case.get("real") else _say(
        "picker_case", cuda=case["cuda"], mps=case["mps"], xpu="—" if case["xpu"] is None else case["xpu"],
        prefer=_fmt(case["prefer"]))
    want = expected if expected is not None else "ValueError"
    return Part(found == want, _say("picker_wrong", case=where, expected=want, found=_fmt(found)))


# ---------------------------------------------------------------- 2. MLX device picker
def _mlx_kind(result) -> str | None:
    if result is None:
        return None
    obj = getattr(result, "type", result)
    name = str(getattr(obj, "name", None) or obj).lower()
    return "gpu" if "gpu" in name else "cpu" if "cpu" in name else name


def _mlx_picker_visible() -> list:
    return [{"mlx": "absent"}, {"gpu": True, "backend": "metal", "prefer": None},
            {"gpu": False, "backend": "metal", "prefer": None}, {"real": True}]


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


def _real_mx():
    try:
        import mlx.core as mx
        return mx
    except Exception:  # absent or broken: the picker must return None
        return None


def _mlx_picker_answer(learner, case) -> dict:
    try:
        if case.get("real"):
            result = learner()
        elif case.get("mlx") == "absent":
            result = learner(prefer=None, mx_module=None)
        else:
            result = learner(prefer=case["prefer"], mx_module=fake_mlx(case["gpu"], case["backend"]))
    except ValueError:
        return {"raised": "ValueError"}
    return {"device": _mlx_kind(result)}


def _mlx_picker_score(case, answer) -> Part:
    from ..answers import m01

    try:
        if case.get("real"):
            expected = m01.pick_mlx_device(None, _real_mx())
        elif case.get("mlx") == "absent":
            expected = None
        else:
            expected = m01.pick_mlx_device(case["prefer"], fake_mlx(case["gpu"], case["backend"]))
        want = _fmt(expected)
    except ValueError:
        want = "ValueError"
    found = _fmt(answer["device"]) if "device" in answer else "ValueError"
    if case.get("real"):
        where = _say("real_machine")
    elif case.get("mlx") == "absent":
        where = _say("mlx_absent_case")
    else:
        where = _say("mlx_case", gpu=case["gpu"], backend=case["backend"], prefer=_fmt(case["prefer"]))
    return Part(found == want, _say("mlx_picker_wrong", case=where, expected=want, found=found))


# ---------------------------------------------------------------- 3. is MLX usable?
def _usable_hidden(rng) -> list:
    return [{"mode": "broken", "error": rng.choice(["RuntimeError", "OSError"])}, {"mode": "absent"}]


def _usable_answer(learner, case) -> dict:
    if case["mode"] == "real":
        result = learner()
    else:
        replacement = {"mlx": None, "mlx.core": None} if case["mode"] == "absent" else _broken_mlx(case["error"])
        with _mlx_modules(replacement):
            result = learner()
    return {"usable": result if isinstance(result, bool) else repr(result)}


def _usable_score(case, answer) -> Part:
    found = answer["usable"]
    if not isinstance(found, bool):
        return Part(False, _say("usable_not_bool", found=found))
    if case["mode"] == "real":
        from ..hardware import mlx_status
        expected, reason = mlx_status()
        return Part(found == expected, _say("usable_real", expected=expected, found=found, reason=reason.text("en"),
                                            reason_ko=reason.text("ko")))
    key = "usable_absent" if case["mode"] == "absent" else "usable_broken"
    return Part(found is False, _say(key, found=found))


# ---------------------------------------------------------------- 4. device inventory
ROW_KEYS = ("device", "name", "kind", "memory_gib", "compute_capability", "bf16")


def _random_gpu(rng) -> dict:
    name, gib, (major, minor), sms = rng.choice(GPU_CATALOGUE)
    return {"name": name, "total_memory": int(gib * 2**30 * rng.uniform(0.97, 0.995)),
            "major": major, "minor": minor, "sms": sms}


def _inventory_visible() -> list:
    return [{"real": True},
            {"gpus": [{"name": "NVIDIA A100-SXM4-80GB", "total_memory": 85_095_874_560, "major": 8, "minor": 0,
                       "sms": 108}], "hip": None, "xpus": []}]


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


def _case_torch(case):
    return fake_torch(gpus=case["gpus"], hip=case["hip"], xpus=case["xpus"], xpu=True)


def _inventory_answer(learner, case) -> list:
    rows = learner() if case.get("real") else learner(torch_module=_case_torch(case))
    out = []
    for row in rows:
        if not isinstance(row, dict):
            return [{"not_a_dict": repr(row)[:80]}]
        item = {}
        for key in ROW_KEYS:
            value = row.get(key)
            if key == "memory_gib" and value is not None:
                value = float(value)
            elif key == "bf16" and value is not None:
                value = bool(value)
            elif value is not None:
                value = str(value)
            item[key] = value
        out.append(item)
    return out


def _same_name(expected: str, found: str | None, kind: str) -> bool:
    if not found:
        return False
    a, b = " ".join(expected.lower().split()), " ".join(str(found).lower().split())
    if kind in ("cuda", "rocm", "xpu"):
        return a == b
    return a == b or a in b or b in a or kind == "mps"


def _inventory_score(case, answer) -> list[Part]:
    from ..answers import m01

    expected = m01.inventory() if case.get("real") else m01.inventory(_case_torch(case))
    where = _say("real_machine") if case.get("real") else \
        _say("inventory_case", n=len(case["gpus"]) + len(case["xpus"]))
    if any("not_a_dict" in r for r in answer):
        return [Part(False, _say("inventory_not_dicts", case=where))]
    found = {r.get("device"): r for r in answer}
    want_ids = [r["device"] for r in expected]
    parts = [Part(sorted(map(_fmt, found)) == sorted(want_ids) and len(answer) == len(expected),
                  _say("inventory_devices", case=where, expected=", ".join(want_ids),
                       found=", ".join(_fmt(r.get("device")) for r in answer)))]
    checks = {"name": [], "kind": [], "memory_gib": [], "compute_capability": [], "bf16": []}
    for want in expected:
        got = found.get(want["device"], {})
        kind = want["kind"]
        checks["name"].append((_same_name(want["name"], got.get("name"), kind), want, got))
        checks["kind"].append((got.get("kind") == kind, want, got))
        memory = got.get("memory_gib")
        ok = memory is not None and want["memory_gib"] is not None and math.isclose(
            memory, want["memory_gib"], rel_tol=0.02, abs_tol=0.15)
        checks["memory_gib"].append((ok, want, got))
        # NVIDIA: "major.minor"; other accelerators: None (the architecture name is accepted too)
        accepted = {want["compute_capability"]} if kind == "cuda" else {None, want["compute_capability"]}
        checks["compute_capability"].append((got.get("compute_capability") in accepted, want, got))
        checks["bf16"].append((want["bf16"] is None or got.get("bf16") == want["bf16"], want, got))
    for field, results in checks.items():
        bad = [(w, g) for ok, w, g in results if not ok]
        if not bad:
            parts.append(Part(True, _say("ok")))
            continue
        w, g = bad[0]
        key = "inventory_gb_not_gib" if field == "memory_gib" and g.get("memory_gib") and w["memory_gib"] and \
            math.isclose(g["memory_gib"] / w["memory_gib"], 2**30 / 1e9, rel_tol=0.01) else "inventory_field"
        want_value = w[field] if field != "compute_capability" or w["kind"] == "cuda" else None
        parts.append(Part(False, _say(key, field=field, case=where, device=w["device"], expected=_fmt(want_value),
                                      found=_fmt(g.get(field)))))
    return parts


# ---------------------------------------------------------------- 5. a timer for asynchronous devices
def _timer_visible() -> list:
    return [{"work_s": 0.03, "pending": 0, "cpu_s": 0.01}, {"work_s": 0.02, "pending": 0, "cpu_s": 0.02}]


def _timer_hidden(rng) -> list:
    return [{"work_s": round(rng.uniform(0.01, 0.04), 4), "pending": rng.choice([0, 12]),
             "cpu_s": round(rng.uniform(0.005, 0.02), 4)} for _ in range(3)] + \
        [{"work_s": 0.02, "pending": 10, "cpu_s": 0.01}]


def _seconds(reported) -> float | str:
    value = getattr(reported, "median_s", reported)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return f"not a number: {type(reported).__name__}"
    return float(value)


def _timer_answer(learner, case) -> dict:
    from ..fakes import FakeAsyncDevice, audit_timer

    device = FakeAsyncDevice(work_s=case["work_s"], name="fake-gpu")
    if case["pending"]:
        for _ in range(case["pending"]):  # work queued earlier must not be counted
            device.launch()
        try:
            fake_s = _seconds(learner(device.launch, device))
        finally:
            device.queued = 0
    else:
        fake_s = audit_timer(learner, device)[1]
    cpu_s = _seconds(learner(lambda: time.sleep(case["cpu_s"]), "cpu"))
    return {"fake_s": fake_s, "cpu_s": cpu_s}


def _within(value, target: float) -> bool:
    return isinstance(value, float) and 0.9 * target <= value <= 1.5 * target + 0.015  # slack: a busy scheduler


def _timer_score(case, answer) -> Part:
    found = referee.rounds(answer)
    if not found:
        return Part(False, _say("timer_not_number", found=None))
    fake_s, cpu_s, work = found[0]["fake_s"], found[0]["cpu_s"], case["work_s"]
    if isinstance(fake_s, str) or isinstance(cpu_s, str):
        return Part(False, _say("timer_not_number", found=fake_s if isinstance(fake_s, str) else cpu_s))
    if fake_s < 0.9 * work:
        return Part(False, _say("timer_no_sync", work=work * 1e3, found=fake_s * 1e3))
    if not _within(fake_s, work):
        key = "timer_pending" if case["pending"] else "timer_too_long"
        return Part(False, _say(key, work=work * 1e3, found=fake_s * 1e3, pending=case["pending"]))
    if not _within(cpu_s, case["cpu_s"]):
        return Part(False, _say("timer_cpu", work=case["cpu_s"] * 1e3, found=cpu_s * 1e3))
    why = referee.unmeasured(answer, lambda r: r["fake_s"] + r["cpu_s"])
    if why:
        key = "measure.not_observed" if why in ("no rounds", "not observed") else "measure.not_measured"
        return Part(False, msg(key, what=_say("title_timer"), why=why))
    return Part(True, _say("timer_ok"))


# ---------------------------------------------------------------- 6. CPU vs accelerator
def _speedup_widths() -> list[int]:
    """MLP widths that keep an accelerator busy (it must beat the CPU), smaller on a CPU-only machine."""
    from ..hardware import best_device

    return [1536, 2048, 2560] if best_device() != "cpu" else [384, 512, 640]


def _speedup_hidden(rng) -> list:
    return [{"width": rng.choice(_speedup_widths())}]


_TOLD: list = []


def _speedup_answer(learner, case) -> dict:
    import torch

    from ..hardware import best_device
    from ..m01_mlp import make_step

    threads = torch.get_num_threads()
    if best_device() == "cpu":  # say why this check grades what it grades (once: the check runs several rounds)
        if not _TOLD:
            print(_say("speedup_cpu_only").text())
            _TOLD.append(True)
        torch.set_num_threads(1)  # CPU vs CPU: one thread keeps both timings comparable on a shared machine
    try:
        result = learner(make_step, case["width"])
    finally:
        torch.set_num_threads(threads)
    if not isinstance(result, dict):
        return {"not_a_dict": repr(result)[:80]}
    attempt = {k: _seconds(result.get(k)) for k in ("cpu_s", "accel_s")}
    attempt["accel_device"] = str(result.get("accel_device")).split(":")[0]
    return attempt


def _speedup_reference(case, answer) -> dict:
    """The course harness timing the same steps, on the CPU and on the best device here."""
    from ..hardware import best_device
    from ..harness import time_fn
    from ..m01_mlp import make_step

    accel = best_device()
    threads = 1 if accel == "cpu" else None
    return {"cpu_s": time_fn(make_step("cpu", case["width"]), device="cpu", budget_s=0.4, threads=threads).median_s,
            "accel_s": time_fn(make_step(accel, case["width"]), device=accel, budget_s=0.4, threads=threads).median_s}


def _speedup_score(case, answer) -> list[Part]:
    from ..expectations import expect, side_by_side
    from ..hardware import best_device

    found = referee.rounds(answer)
    if not found or any("not_a_dict" in r for r in found):
        return [Part(False, _say("speedup_not_dict", found=found[0]["not_a_dict"] if found else None), weight=4)]
    bad = next((r for r in found if any(isinstance(r[k], str) or r[k] <= 0 for k in ("cpu_s", "accel_s"))), None)
    if bad is not None:
        return [Part(False, _say("timer_not_number", found=f"cpu_s={bad['cpu_s']}, accel_s={bad['accel_s']}"), weight=4)]
    best = best_device()
    parts = []
    for key, name in (("cpu_s", "CPU"), ("accel_s", best)):
        measured, compared = side_by_side("step", answer, _say("speedup_step", device=name), lambda r: r[key],
                                          lambda ref: ref[key], lambda r: r["cpu_s"] + r["accel_s"], "s",
                                          weight=1, faster_above=False)
        if not measured:
            return [Part(False, compared[0].message, weight=4)]
        parts += compared
    why = _say("speedup_why_cpu") if best == "cpu" else _say("speedup_why_accel", device=best)
    devices = {r["accel_device"] for r in found}
    parts.insert(0, Part(devices == {best}, _say("speedup_device", expected=best, found=", ".join(sorted(devices))) + why))
    ratio = statistics.median(r["cpu_s"] / r["accel_s"] for r in found)
    parts.append(expect("speedup", device=best).part(ratio, _say("speedup_what")))
    return parts


# ---------------------------------------------------------------- 7. memory: where does fine-tuning fit?
def _memory_visible() -> list:
    from .. import profiles

    ids = ("rtx_4090", "t4")
    devices = {i: profiles.get(i).memory_gb for i in ids}
    big = {i: profiles.get(i).memory_gb for i in ("a100_sxm_80gb", "h200_sxm", "mi300x", "b200")}
    return [{"n_params": 1.5e9, "activation_gb": 0.0, "devices": devices},
            {"n_params": 7e9, "activation_gb": 10.0, "devices": big},
            {"n_params": 70e9, "activation_gb": 20.0, "devices": big}]


def _memory_hidden(rng) -> list:
    from .. import profiles

    pool = [p for p in profiles.all_of() if p.memory_gb]
    cases = []
    for _ in range(5):
        chosen = rng.sample(pool, rng.randint(2, 6))
        cases.append({"n_params": float(rng.randint(1, 400) * 1e8), "activation_gb": round(rng.uniform(0, 12), 2),
                      "devices": {p.id: p.memory_gb for p in chosen}})
    cases.append({"n_params": float(rng.randint(2, 9) * 1e9), "activation_gb": 0.0,
                  "devices": {f"gpu_{i}": float(rng.randint(4, 48) * 4) for i in range(rng.randint(2, 5))}})
    cases.append({"n_params": 2e9, "activation_gb": 0.5, "devices": {"tiny_a": 8.0, "tiny_b": 16.0}})
    return cases


def _memory_answer(learner, case) -> dict:
    plan = learner(case["n_params"], case["activation_gb"], dict(case["devices"]))
    if not isinstance(plan, dict):
        return {"not_a_dict": repr(plan)[:80]}
    need = plan.get("need_gb")
    device = plan.get("device")
    return {"need_gb": float(need) if isinstance(need, (int, float)) else repr(need),
            "device": None if device is None else str(device)}


def _memory_score(case, answer) -> list[Part]:
    from ..answers import m01

    if "not_a_dict" in answer:
        return [Part(False, _say("memory_not_dict", found=answer["not_a_dict"]), weight=2)]
    want = m01.finetune_plan(case["n_params"], case["activation_gb"], case["devices"])
    where = _say("memory_case", n=case["n_params"] / 1e9, act=case["activation_gb"])
    need = answer["need_gb"]
    need_ok = isinstance(need, float) and math.isclose(need, want["need_gb"], rel_tol=1e-6, abs_tol=1e-9)
    need_msg = _say("memory_need", case=where, expected=f"{want['need_gb']:.3f}", found=_fmt(need))
    if isinstance(need, float) and not need_ok:
        need_msg = need_msg + _say("memory_hint")
    best = want["device"]
    fits = [n for n, m in case["devices"].items() if best is not None and m == case["devices"][best]]
    device_ok = answer["device"] in fits if best is not None else answer["device"] is None
    return [Part(need_ok, need_msg),
            Part(device_ok, _say("memory_device", case=where, expected=_fmt(best), found=_fmt(answer["device"])))]


TASKS = {
    "picker": Task(title=_say("title_picker"), answer=_picker_answer, score=_picker_score,
                   visible=_picker_visible, hidden=_picker_hidden),
    "mlx_picker": Task(title=_say("title_mlx_picker"), answer=_mlx_picker_answer, score=_mlx_picker_score,
                       visible=_mlx_picker_visible, hidden=_mlx_picker_hidden),
    "mlx_usable": Task(title=_say("title_mlx_usable"), answer=_usable_answer, score=_usable_score,
                       visible=lambda: [{"mode": "real"}, {"mode": "absent"}], hidden=_usable_hidden),
    "inventory": Task(title=_say("title_inventory"), answer=_inventory_answer, score=_inventory_score,
                      visible=_inventory_visible, hidden=_inventory_hidden),
    "timer": Task(title=_say("title_timer"), answer=_timer_answer, score=_timer_score,
                  visible=_timer_visible, hidden=_timer_hidden, measurement=True),
    "speedup": Task(title=_say("title_speedup"), answer=_speedup_answer, score=_speedup_score,
                    visible=lambda: [{"width": _speedup_widths()[1]}], hidden=_speedup_hidden, measurement=True,
                    reference=_speedup_reference, rounds=5),
    "memory": Task(title=_say("title_memory"), answer=_memory_answer, score=_memory_score,
                   visible=_memory_visible, hidden=_memory_hidden),
}
