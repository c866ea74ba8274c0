"""Tasks of module 01 (devices): find a device, read a machine, fit a fine-tuning job, time honestly, audit a timer.

Devices are faked: torch and MLX of other machines (``machines.py`` over ``autograder/fakes/devices.py``) and a
GPU on a virtual clock (``virtual.py``), so every task grades the same on any computer, under any load; the
expected answers come from the references. A case marked ``real`` is this machine, judged by the course's own
detection. Only the CPU-vs-accelerator task measures real time, side by side with the course's harness.
Each task names the known mistakes its visible cases catch (``Task.mistakes``, messages ``m01.mistake.*``).
"""
from __future__ import annotations

import statistics
import time
from typing import Any

from ... import clock as course_clock
from ...checks import referee
from ...checks.core import Part, Task, close
from ...fakes.devices import fake_torch, mlx_modules
from ...i18n import Message, msg
from ...knowledge import recipe_bytes
from .machines import machine_torch, mlx_install
from .virtual import VirtualCPU, VirtualGPU


def _say(key: str, **values) -> Message:
    return msg(f"m01.{key}", **values)


def _fmt(value: Any) -> str:
    return "None" if value is None else str(value)


def _wrong(key: str, mistake: str | None = None, label: str | None = None, weight: float = 1.0,
           **values) -> Part:
    """A failing part: the catalogued mistake's message when one is recognised, else message ``key``."""
    message = _say(key, **values)
    if mistake is not None:
        message = message + _say(f"mistake.{mistake}", **values)
    return Part(False, message, weight, mistake=mistake, label=_say(label) if label else None)


def _right(where: Message, label: str | None = None) -> Part:
    """A passing part, named by its case (and part), so that a verdict counts every item it checked."""
    named = _say(label) if label else None
    return Part(True, _say("passed", case=where if named is None else where + named), label=named)


def _pair(expected: float, found: Any, decimals: int, unit: str) -> dict:
    """``expected`` and ``found`` written alike, with their unit: ``decimals`` places, more where that would make
    them look equal."""
    if not close(found, found):  # not a real number (or NaN): shown as it is
        return {"expected": f"{expected:.{decimals}f} {unit}", "found": _fmt(found)}
    while decimals < 9 and f"{expected:.{decimals}f}" == f"{found:.{decimals}f}":
        decimals += 1
    return {"expected": f"{expected:.{decimals}f} {unit}", "found": f"{found:.{decimals}f} {unit}"}


def _raised(exc: BaseException) -> dict:
    return {"raised": f"{type(exc).__name__}: {exc}"[:200]}


# ---------------------------------------------------------------- 1. torch device picker (warm-up)
def _picker_visible() -> list:
    return [
        {"cuda": False, "mps": False, "xpu": False, "prefer": None},
        {"cuda": True, "mps": True, "xpu": True, "prefer": None},
        {"cuda": False, "mps": True, "xpu": True, "prefer": None},
        {"cuda": False, "mps": False, "xpu": None, "prefer": None},
        {"cuda": True, "mps": False, "xpu": False, "prefer": "mps"},
        {"cuda": True, "mps": False, "xpu": False, "prefer": "gpu"},
        {"cuda": False, "mps": True, "xpu": False, "prefer": "cpu"},
        {"real": True},
    ]


class _Watched:
    """A module that remembers whether anything was read from it (``asked``)."""

    def __init__(self, module):
        self._module, self.asked = module, False

    def __getattr__(self, name):
        self.asked = True
        return getattr(self._module, name)


def _picker_answer(learner, case) -> dict:
    fake = None if case.get("real") else _Watched(fake_torch(cuda=case["cuda"], mps=case["mps"], xpu=case["xpu"]))
    try:
        result = learner() if fake is None else learner(prefer=case["prefer"], torch_module=fake)
    except Exception as exc:  # ValueError is the rule; anything else is a mistake to name
        answer = _raised(exc)
    else:
        answer = {"device": None if result is None else str(result).split(":")[0]}
    return answer if fake is None else {**answer, "asked": fake.asked}


def _picker_case(case) -> Message:
    where = _say("picker_case", cuda=case["cuda"], mps=case["mps"], xpu=case["xpu"], prefer=_fmt(case["prefer"]))
    return where + _say("picker_no_xpu") if case["xpu"] is None else where


def _picker_score(case, answer, expected) -> Part:
    """``expected``: the device name, or None where a ValueError is expected; this machine's best device for a real case."""
    if case.get("real"):
        from ...hardware import best_device
        expected = best_device()
    raised = answer.get("raised")
    found = answer.get("device") if raised is None else raised.split(":")[0]
    want = expected if expected is not None else "ValueError"
    where = _say("real_machine") if case.get("real") else _picker_case(case)
    if found == want:
        return _right(where)
    values = dict(case=where, expected=want, found=_fmt(found))
    if case.get("real"):
        return _wrong("picker_wrong", **values)
    prefer = case["prefer"]
    if raised and case["xpu"] is None and "xpu" in raised:
        return _wrong("picker_wrong", "no_getattr_xpu", **values)
    if want == "ValueError" and prefer is not None:
        if prefer not in ("cuda", "mps", "xpu", "cpu"):
            return _wrong("picker_wrong", "unknown_name", **values)
        return _wrong("picker_wrong", "prefer_unchecked" if found == prefer else "prefer_falls_back", **values)
    if answer.get("asked") is False:  # the fake torch was never consulted: the answer is this computer's torch
        return _wrong("picker_wrong", "ignores_torch_module", **values)
    if prefer is None and found == "mps" and case["cuda"]:
        return _wrong("picker_wrong", "mps_before_cuda", **values)
    return _wrong("picker_wrong", **values)


# ---------------------------------------------------------------- 2. where will MLX run?
def _mlx_kind(result) -> str | None:
    if result is None:
        return None
    obj = getattr(result, "type", result)
    name = str(getattr(obj, "name", None) or obj).lower()
    return "gpu" if "gpu" in name else "cpu" if "cpu" in name else name


def _mlx_answer(learner, case) -> dict:
    try:
        if case["install"] == "real":
            result = learner()
        else:
            with mlx_modules(mlx_install(case["install"])):
                result = learner()
    except Exception as exc:  # no exception may escape: name it
        return _raised(exc)
    return {"device": _mlx_kind(result)}


def machine_mlx_device() -> str | None:
    """Where MLX runs on this machine, as the course's detection sees it: 'gpu', 'cpu', or None (unusable)."""
    from ...hardware import detect, mlx_status

    if not mlx_status()[0]:
        return None
    return "gpu" if any(r["kind"] == "mlx" for r in detect().rows()) else "cpu"


def _mlx_score(case, answer, expected) -> Part:
    """``expected``: 'gpu', 'cpu' or None for a faked installation; for the real one, the course's detection."""
    install = case["install"]
    want = machine_mlx_device() if install == "real" else expected
    raised = answer.get("raised")
    found = raised if raised is not None else answer.get("device")
    if raised is None and found == want:
        return _right(_say(f"mlx_install_{install}"))
    values = dict(case=_say(f"mlx_install_{install}"), expected=_fmt(want), found=_fmt(found))
    if install in ("eval_fails", "broken"):
        if raised is not None:
            return _wrong("mlx_wrong", "mlx_exception_escapes", **values)
        return _wrong("mlx_wrong", "mlx_import_only", **values)
    if install == "cuda" and found == "cpu":
        return _wrong("mlx_wrong", "mlx_metal_only", **values)
    return _wrong("mlx_wrong", **values)


# ---------------------------------------------------------------- 3. what will training code use on that machine?
def _gpu(name: str, gib: float, major: int, minor: int, sms: int) -> dict:
    return {"name": name, "total_memory": int(gib * 2**30), "major": major, "minor": minor, "sms": sms}


def _setup_visible() -> list:
    mi300x = _gpu("AMD Instinct MI300X", 191.98, 9, 4, 304) | {"arch": "gfx942:sramecc+:xnack-"}
    w7900 = _gpu("AMD Radeon PRO W7900", 47.98, 11, 0, 96) | {"arch": "gfx1100"}
    return [
        {"gpus": [_gpu("Tesla T4", 14.58, 7, 5, 40)], "ram_bytes": 30 * 2**30},
        {"gpus": [mi300x] * 8, "hip": "6.4.43482", "ram_bytes": 2048 * 2**30},
        {"gpus": [w7900], "hip": "6.4.43482", "ram_bytes": 128 * 2**30},
        {"mac": {"chip": "Apple M3 Max", "macos": [15, 1], "recommended_gib": 48.0}, "ram_bytes": 64 * 2**30},
        {"mac": {"chip": "Apple M1", "macos": [13, 6], "recommended_gib": 10.67}, "ram_bytes": 16 * 2**30},
        {"gpus": [_gpu("NVIDIA GeForce GTX 1080 Ti", 10.91, 6, 1, 28)], "ram_bytes": 32 * 2**30},
        {"gpus": [_gpu("NVIDIA A100-SXM4-80GB", 79.25, 8, 0, 108)] * 4, "ram_bytes": 1024 * 2**30},
        {"ram_bytes": int(15.5 * 2**30)},
    ]


def _machine(case) -> Message:
    """A machine in words, from its data."""
    ram = f"{case['ram_bytes'] / 2**30:g}"
    if case.get("gpus"):
        gpu = case["gpus"][0]
        key = "machine_amd" if case.get("hip") else "machine_nvidia"
        return _say(key, n=len(case["gpus"]), name=gpu["name"], cc=f"{gpu['major']}.{gpu['minor']}",
                    arch=gpu.get("arch", "").split(":")[0])
    if case.get("mac"):
        mac = case["mac"]
        return _say("machine_mac", chip=mac["chip"], macos=".".join(map(str, mac["macos"])), ram=ram)
    return _say("machine_cpu", ram=ram)


def _setup_answer(learner, case) -> dict:
    plan = learner(torch_module=machine_torch(case), ram_bytes=case["ram_bytes"])
    if not isinstance(plan, dict):
        return {"not_a_dict": repr(plan)[:80]}
    memory = plan.get("memory_gib")
    return {"device": _fmt(plan.get("device")).split(":")[0], "dtype": str(plan.get("dtype")).replace("torch.", ""),
            "memory_gib": float(memory) if isinstance(memory, (int, float)) and not isinstance(memory, bool)
            else repr(memory)}


def _setup_dtype_mistake(case, found: str) -> str | None:
    gpus, mac = case.get("gpus"), case.get("mac")
    if gpus and case.get("hip") and found in ("float16", "float32"):
        return "rocm_no_bf16"
    if gpus and not case.get("hip") and gpus[0]["major"] < 8 and found == "bfloat16":
        return "bf16_emulated"
    if gpus and not case.get("hip") and gpus[0]["major"] < 7 and found == "float16":
        return "fp16_without_tensor_cores"
    if mac and tuple(mac["macos"]) < (14, 0) and found == "bfloat16":
        return "mps_bf16_old_macos"
    return None


def _setup_memory_mistake(case, found) -> str | None:
    if not isinstance(found, float):
        return None
    gpus, mac = case.get("gpus"), case.get("mac")
    total = gpus[0]["total_memory"] if gpus else mac["recommended_gib"] * 2**30 if mac else case["ram_bytes"]
    if close(found, total / 1e9, rel=1e-3):
        return "gb_not_gib"
    if mac and close(found, case["ram_bytes"] / 2**30, rel=1e-3):
        return "ram_for_mps"
    return None


def _setup_score(case, answer, want) -> list[Part]:
    where = _machine(case)
    if "not_a_dict" in answer:
        return [Part(False, _say("setup_not_dict", case=where, found=answer["not_a_dict"]), 3)]
    parts = []
    found = answer["device"]
    if found == want["device"]:
        parts.append(_right(where, "label_device"))
    else:
        mistake = "rocm_name" if case.get("hip") and found in ("rocm", "hip") else None
        parts.append(_wrong("setup_device", mistake, "label_device", case=where, expected=want["device"], found=found))
    found = answer["dtype"]
    if found == want["dtype"]:
        parts.append(_right(where, "label_dtype"))
    else:
        gpu = (case.get("gpus") or [{}])[0]
        parts.append(_wrong("setup_dtype", _setup_dtype_mistake(case, found), "label_dtype", case=where,
                            expected=want["dtype"], found=found, gpu=gpu.get("name", ""),
                            cc=f"{gpu.get('major')}.{gpu.get('minor')}"))
    found = answer["memory_gib"]
    if close(found, want["memory_gib"], rel=1e-3):
        parts.append(_right(where, "label_memory"))
    else:
        parts.append(_wrong("setup_memory", _setup_memory_mistake(case, found), "label_memory", case=where,
                            **_pair(want["memory_gib"], found, 2, "GiB")))
    return parts


# ---------------------------------------------------------------- 4. where does a fine-tuning job fit?
def _memory_visible() -> list:
    from ... import profiles

    def devices(*ids):
        return {i: profiles.get(i).memory_gib for i in ids}
    return [
        {"job": {"params": 1.5e9, "lora_params": 0, "activation_gb": 0.0}, "devices": devices("t4", "rtx_4090")},
        {"job": {"params": 5e9, "lora_params": 0, "activation_gb": 4.0},
         "devices": devices("b200", "h100_sxm", "h200_sxm", "mi300x")},
        {"job": {"params": 70e9, "lora_params": 2e8, "activation_gb": 10.0},
         "devices": devices("gb300", "h200_sxm", "mi300x", "b200")},
        {"job": {"params": 70e9, "lora_params": 0, "activation_gb": 20.0},
         "devices": devices("h200_sxm", "b300", "mi355x")},
    ]


def _memory_answer(learner, case) -> dict:
    plan = learner(dict(case["job"]), dict(case["devices"]))
    if not isinstance(plan, dict):
        return {"not_a_dict": repr(plan)[:80]}
    need = plan.get("need_gb")
    device = plan.get("device")
    return {"need_gb": float(need) if isinstance(need, (int, float)) and not isinstance(need, bool) else repr(need),
            "device": None if device is None else str(device)}


def _memory_need_mistake(job: dict, found, right: float) -> str | None:
    """The known wrong need (GB) that ``found`` is, if any (``right``: the expected need)."""
    n, lora, act = job["params"], job["lora_params"], job["activation_gb"]
    trained, frozen = sum(recipe_bytes("adam_mixed").values()), sum(recipe_bytes("inference_bf16").values())
    known = {"full_as_frozen": frozen * n / 1e9 + act if not lora else None,
             "frozen_as_trained": trained * (n + lora) / 1e9 + act if lora else None,
             "adapter_as_frozen": frozen * (n + lora) / 1e9 + act if lora else None,
             "frozen_forgotten": trained * lora / 1e9 + act if lora else None,
             "no_activations": right - act if act else None,
             "need_in_gib": right * 1e9 / 2**30}
    return next((name for name, value in known.items() if value is not None and close(found, value, rel=1e-6)), None)


def _memory_device_mistake(case, need_gb: float, found) -> str | None:
    """The known wrong choice ``found`` is, for the right need."""
    fits = [(name, gib) for name, gib in case["devices"].items() if gib * 2**30 >= need_gb * 1e9]
    as_gb = [(gib, name) for name, gib in case["devices"].items() if gib >= need_gb]
    known = {"gb_vs_gib": min(as_gb)[1] if as_gb else None,
             "first_fit": fits[0][0] if fits else None,
             "largest_fit": max(fits, key=lambda f: f[1])[0] if fits else None}
    named = [name for name, value in known.items() if value == found]
    return named[0] if len(named) == 1 else None  # two known choices give it: which one is not shown


def _memory_score(case, answer, want) -> list[Part]:
    if "not_a_dict" in answer:
        return [Part(False, _say("memory_not_dict", found=answer["not_a_dict"]), weight=2)]
    job = case["job"]
    where = _say("memory_case_lora" if job["lora_params"] else "memory_case", n=job["params"] / 1e9,
                 lora=job["lora_params"] / 1e6, act=job["activation_gb"])
    need = answer["need_gb"]
    if close(need, want["need_gb"], rel=1e-6, abs_tol=1e-9):
        parts = [_right(where, "label_need")]
    else:
        parts = [_wrong("memory_need", _memory_need_mistake(job, need, want["need_gb"]), "label_need", case=where,
                        **_pair(want["need_gb"], need, 3, "GB"))]
    best, found = want["device"], answer["device"]
    same = {n for n, m in case["devices"].items() if best is not None and m == case["devices"][best]}
    if found in same or (best is None and found is None):
        parts.append(_right(where, "label_device"))
    else:
        mistake = _memory_device_mistake(case, want["need_gb"], found) if parts[0].ok else None
        parts.append(_wrong("memory_device", mistake, "label_device", case=where, expected=_fmt(best),
                            found=_fmt(found)))
    return parts


# ---------------------------------------------------------------- 5. a timer for asynchronous devices
def _timer_visible() -> list:
    return [
        {"probe": "plain", "device": "virtual", "gpu": {"work_s": 0.02}, "repeats": 5, "warmup": 1},
        {"probe": "queued", "device": "virtual", "gpu": {"work_s": 0.01, "queued": 8}, "repeats": 1, "warmup": 0},
        {"probe": "slow_first", "device": "virtual", "gpu": {"work_s": 0.01, "slow_first": 2, "first_s": 0.2},
         "repeats": 1, "warmup": 2},
        {"probe": "hiccup", "device": "virtual", "gpu": {"work_s": 0.01, "hiccup_at": [4], "hiccup_s": 0.1},
         "repeats": 5, "warmup": 1},
        {"probe": "string", "device": "cuda:1", "gpu": {"work_s": 0.015}, "repeats": 3, "warmup": 1},
        {"probe": "string", "device": "mps", "object": True, "gpu": {"work_s": 0.005}, "repeats": 3, "warmup": 1},
        {"probe": "cpu", "device": "cpu", "cpu_s": 0.012, "repeats": 3, "warmup": 1},
    ]


TIMER_SCALE = (0.5, 0.9)  # while grading, the durations of a timer case are its own times a factor drawn in here


def _timer_device(case, rng):
    """The case's virtual device; while grading the grader holds it, its durations scaled by a factor it draws."""
    scale = rng.uniform(*TIMER_SCALE) if rng is not None else 1.0
    return VirtualCPU(case["cpu_s"], scale=scale) if case["device"] == "cpu" else VirtualGPU(**case["gpu"], scale=scale)


def _timer_answer(learner, case) -> dict:
    """Time the case's work with the learner's timer on a virtual clock (a string device reaches it through torch);
    ``observed``: what the device saw (the grader's, while grading)."""
    with referee.device("m01.timer", case) as device:
        return {**_timed_by(learner, case, device), "observed": device._observed()}


def _timed_by(learner, case, gpu) -> dict:
    """``{"seconds": ...}`` that the learner's timer reports on the device ``gpu`` (a VirtualCPU for the cpu case)."""
    import torch

    args = dict(repeats=case["repeats"], warmup=case["warmup"])
    device = None
    if case["device"] == "cpu":
        reported = learner(gpu.run, "cpu", clock=gpu.clock, **args)
    elif case["device"] == "virtual":
        reported = learner(gpu.launch, gpu, clock=gpu.clock, **args)
    else:  # "cuda:1", "mps": while the timer runs, torch's synchronize of that backend waits for the virtual GPU
        backend = getattr(torch, case["device"].split(":")[0])
        saved, waits = backend.synchronize, []

        def synchronize(*_, **__):
            waits.append(True)
            gpu.synchronize()
        backend.synchronize = synchronize
        device = torch.device(case["device"]) if case.get("object") else _WatchedName(case["device"])
        try:
            reported = learner(gpu.launch, device, clock=gpu.clock, **args)
        except Exception as exc:
            if waits or not _inside_torch(exc):
                raise
            return {"stored_sync": f"{type(exc).__name__}: {exc}"[:160].rstrip(".")}  # torch's own, kept from before
        finally:
            backend.synchronize = saved
    value = getattr(reported, "median_s", reported)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return {"seconds": f"not a number: {type(reported).__name__}"}
    if isinstance(device, _WatchedName):
        return {"seconds": float(value), "asked_string": device.asked()}
    return {"seconds": float(value)}


class _WatchedName(str):
    """A device name that remembers whether the timer looked up a ``synchronize`` on it (a string has none)."""

    def __new__(cls, text: str):
        name = super().__new__(cls, text)
        name.looked = []
        return name

    def __getattribute__(self, name):
        if name == "synchronize":
            str.__getattribute__(self, "looked").append(name)
        return str.__getattribute__(self, name)

    def asked(self) -> bool:
        return bool(str.__getattribute__(self, "looked"))


def _inside_torch(exc: BaseException) -> bool:
    """Whether ``exc`` was raised inside torch itself (its real synchronize, for a device this computer lacks)."""
    import os
    import traceback

    where = traceback.extract_tb(exc.__traceback__)
    return bool(where) and f"{os.sep}torch{os.sep}" in where[-1].filename


def _timer_with_bug(case, bug: str) -> float:
    """What a timer that breaks rule ``bug`` (task 7's suspects) reports on the case; the virtual GPU is the device."""
    args = dict(repeats=case["repeats"], warmup=case["warmup"])
    if case["device"] == "cpu":
        cpu = VirtualCPU(case["cpu_s"])
        return suspect_timer([bug])(cpu.run, "cpu", clock=cpu.clock, **args)
    gpu = VirtualGPU(**case["gpu"])
    return suspect_timer([bug])(gpu.launch, gpu, clock=gpu.clock, **args)


def _timer_mistake(case, found: float, want: float, asked_string: bool | None = None) -> str | None:
    """The rule (or the clock) that ``found`` breaks: first the timers with one rule broken, run on this very case.

    Nothing waited for a device given by name: ``string_device`` where the timer looked for a ``synchronize`` on the
    string (``asked_string``), ``no_wait`` where it looked for none, silent for a torch.device (not watched)."""
    string = case["device"] not in ("virtual", "cpu")
    for bug in BUGS:
        value = _timer_with_bug(case, bug)
        if not close(value, want, rel=1e-6) and close(found, value, rel=1e-6):
            if string and bug == "no_wait":
                return None if asked_string is None else "string_device" if asked_string else "no_wait"
            return bug
    work = case.get("cpu_s") or case["gpu"]["work_s"]
    gpu = case.get("gpu", {})
    if found < 0.5 * work:  # no virtual time at all: real seconds
        return "ignores_clock"
    if case["repeats"] > 1 and close(found, case["repeats"] * want, rel=0.02):
        return "total"
    probe = case["probe"]  # two rules broken at once: the one this case's effect shows
    if probe == "queued" and found > want + 0.5 * work:
        return "earlier_work"
    if probe == "slow_first" and found > want + 0.5 * gpu["first_s"]:
        return "no_warmup"
    if probe == "hiccup" and close(found, want + gpu["hiccup_s"] / case["repeats"], rel=0.02):
        return "mean"
    return None


def _timer_score(case, answer, want) -> Part:
    """The learner's seconds over the scale of the durations the device had (drawn by the grader while grading)."""
    probe = "object" if case.get("object") else case["probe"]
    what = _say(f"timer_probe_{probe}", device=case["device"], repeats=case["repeats"], warmup=case["warmup"])
    if "stored_sync" in answer:
        return _wrong("timer_raised", "stored_sync", case=what, error=answer["stored_sync"])
    found, seen = answer["seconds"], answer.get("observed")
    if isinstance(found, str):
        return Part(False, _say("timer_not_number", case=what, found=found))
    scale = seen.get("scale") if isinstance(seen, dict) and seen.get("launches") else None
    if not (isinstance(scale, (int, float)) and scale > 0):
        return Part(False, _say("timer_not_timed", case=what))
    found = found / scale
    if close(found, want, rel=1e-6, abs_tol=1e-9):
        return _right(what)
    shown = ("torch.device('%s')" if case.get("object") else '"%s"') % case["device"]
    return _wrong("timer_wrong", _timer_mistake(case, found, want, answer.get("asked_string")), case=what, shown=shown,
                  **_pair(want * 1e3, found * 1e3, 3, "ms"))


# ---------------------------------------------------------------- 6. CPU vs accelerator
def speedup_widths() -> list[int]:
    """MLP widths that keep an accelerator busy (it must beat the CPU), smaller on a CPU-only machine."""
    from ...hardware import best_device

    return [1536, 2048, 2560] if best_device() != "cpu" else [384, 512, 640]


_TOLD: list = []


def _counting(make_step, events: list):
    """``make_step`` that logs when each model is built and when each of its step calls begins (the course's clock);
    each call is also a span of that clock, ``step:<device>`` (in a check's round the referee keeps it:
    ``referee.off_clock``)."""
    def build(device, width, *args, **kwargs):
        index = sum(1 for e in events if e[0] == "build")
        events.append(("build", index, str(device), course_clock.now()))
        step = make_step(device, width, *args, **kwargs)
        label = f"step:{str(device).split(':')[0]}"

        def counted():
            events.append(("call", index, None, course_clock.now()))
            course_clock.begin()
            try:
                return step()
            finally:
                course_clock.end(1, label)
        return counted
    return build


def _builds(events: list) -> list[dict]:
    """Per model built: its device, how many times its step was called, and ``spent_s``: the seconds from each of
    its calls after the first to the next thing that happened (the call, then its wait, until the next call, build
    or the return). The first call pays the start-up and is left out."""
    builds = [{"device": e[2], "calls": 0, "spent_s": 0.0} for e in events if e[0] == "build"]
    for k, (kind, index, _, began) in enumerate(events[:-1]):
        if kind == "call":
            builds[index]["calls"] += 1
            if builds[index]["calls"] > 1:
                builds[index]["spent_s"] += events[k + 1][3] - began
    return builds


def _speedup_answer(learner, case) -> dict:
    from ...hardware import best_device
    from .lesson import make_step, step_threads

    if best_device() == "cpu" and not _TOLD:  # say why this check grades what it grades (once: several rounds)
        print(_say("speedup_cpu_only").text())
        _TOLD.append(True)
    events: list = []
    with step_threads():
        result = learner(_counting(make_step, events), case["width"])
        events.append(("return", None, None, course_clock.now()))
    if not isinstance(result, dict):
        return {"not_a_dict": repr(result)[:80]}
    attempt = {k: _seconds(result.get(k)) for k in ("cpu_s", "accel_s")}
    attempt["accel_device"] = str(result.get("accel_device")).split(":")[0]
    attempt["builds"] = _builds(events)
    return attempt


def _seconds(reported) -> float | str:
    value = getattr(reported, "median_s", reported)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return f"not a number: {type(reported).__name__}"
    return float(value)


def _speedup_reference(case, answer) -> dict:
    """The course harness timing the same steps, on the CPU and on the best device here, as task 5's timer does
    (one warm-up call, the median of five single calls): a burst as short as the learner's, which a busy computer
    slows alike (a longer run is scheduled differently from a short one). Taken again where it slowed
    (``referee.retaken``), keeping each side's shorter time."""
    from ...hardware import best_device
    from ...harness import time_fn
    from .lesson import make_step

    accel = best_device()
    threads = 1 if accel == "cpu" else None
    like_time_call = dict(budget_s=0.4, warmup=1, min_reps=5, max_reps=5, inner=1, threads=threads)

    def take() -> dict:
        return {"cpu_s": time_fn(make_step("cpu", case["width"]), device="cpu", **like_time_call).median_s,
                "accel_s": time_fn(make_step(accel, case["width"]), device=accel, **like_time_call).median_s}
    return referee.retaken(["m01.speedup", case, accel], take, lambda r: [1 / r["cpu_s"], 1 / r["accel_s"]],
                           lambda a, b: {k: min(a[k], b[k]) for k in a})


def _clock_claims(r: dict) -> list:
    """Each reported step time is at least the shortest call of that device's step on the course's clock
    (``referee.off_clock``)."""
    return [(r["cpu_s"], "step:cpu"), (r["accel_s"], f"step:{r['accel_device']}")]


STEPS_TOTAL_RATIO = 1.75  # a median of 5 single steps is at most 5/3 of their mean (about 1 in practice); n steps: n


def _per_step_ratios(found: list) -> dict:
    """Per reported time (``cpu_s``, ``accel_s``), the median over rounds of: the time reported x the step calls
    timed (all but the first) / the seconds those calls took. About 1 for a time per step, n for a total of n
    steps, whatever the load (the same calls on both sides). The first CPU model built is ``cpu_s``'s."""
    ratios: dict = {"cpu_s": [], "accel_s": []}
    for r in found:
        taken = set()
        for b in r.get("builds") or []:
            key = "cpu_s" if b["device"].split(":")[0] == "cpu" and "cpu_s" not in taken else "accel_s"
            taken.add(key)
            if b["calls"] >= 2 and b["spent_s"] > 0:
                ratios[key].append(r[key] * (b["calls"] - 1) / b["spent_s"])
    return {key: statistics.median(values) for key, values in ratios.items() if values}


def _speedup_score(case, answer, want) -> list[Part]:
    from ...expectations import expect, side_by_side
    from ...hardware import best_device

    found = referee.rounds(answer)
    if not found or any("not_a_dict" in r for r in found):
        return [Part(False, _say("speedup_not_dict", found=found[0]["not_a_dict"] if found else None), weight=4)]
    bad = next((r for r in found if any(isinstance(r[k], str) or r[k] <= 0 for k in ("cpu_s", "accel_s"))), None)
    if bad is not None:
        return [Part(False, _say("timer_not_number", case=_say("title_speedup"),
                                 found=f"cpu_s={bad['cpu_s']}, accel_s={bad['accel_s']}"), weight=4)]
    for key in ("cpu_s", "accel_s"):  # seconds reported in milliseconds: named before "not measured" says 0
        ratio = referee.median_ratio(answer, lambda r: r[key], lambda ref: ref[key])
        if ratio is not None and 300 <= ratio[0] <= 3000:
            return [_wrong("speedup_units", "ms_not_s", weight=4, ratio=f"{ratio[0]:.0f}")]
    best = best_device()
    inflated = _per_step_ratios(found)
    parts = []
    for key, name in (("cpu_s", "CPU"), ("accel_s", best)):
        fast_cpu = _say("speedup_fast_cpu") if key == "cpu_s" or best == "cpu" else None
        measured, compared = side_by_side("step", answer, _say("speedup_step", device=name), lambda r: r[key],
                                          lambda ref: ref[key], lambda r: r["cpu_s"] + r["accel_s"], "s",
                                          weight=1, faster_above=False, too_fast=fast_cpu, clock_claims=_clock_claims)
        if not measured:
            return [Part(False, compared[0].message, weight=4)]
        if inflated.get(key, 0.0) >= STEPS_TOTAL_RATIO:  # several steps reported as one: the band cannot tell 3x
            parts.append(_wrong("speedup_total", "steps_total", step=_say("speedup_step", device=name),
                                ratio=f"{inflated[key]:.1f}"))
        else:
            parts += compared
    why = _say("speedup_why_cpu") if best == "cpu" else _say("speedup_why_accel", device=best)
    devices = {r["accel_device"] for r in found}
    parts.insert(0, Part(devices == {best}, _say("speedup_device", expected=best, found=", ".join(sorted(devices))) + why))
    calls = [b["calls"] for r in found for b in r.get("builds") or []]
    if calls and min(calls) < 2:
        parts.append(_wrong("speedup_calls", "one_call", calls=min(calls)))
    ratio = statistics.median(r["cpu_s"] / r["accel_s"] for r in found)
    now = [r["cpu_s"] / r["accel_s"] for r in referee.observed(answer)["reference"]
           if isinstance(r, dict) and (r.get("accel_s") or 0) > 0 and (r.get("cpu_s") or 0) > 0]  # the course's, now
    parts.append(expect("speedup", device=best, reference=statistics.median(now) if now else None).part(
        ratio, _say("speedup_what")))
    return parts


# ---------------------------------------------------------------- 7. audit a timer (stretch)
BUGS = ("no_wait", "earlier_work", "no_warmup", "mean", "total")


def _waiter(device, waits: bool):
    """What waits for ``device`` (nothing for a timer that never waits, or a device without ``synchronize``)."""
    return getattr(device, "synchronize", None) if waits and hasattr(device, "synchronize") else (lambda: None)


def _span(fn, wait, clock, calls: int, settle: bool) -> float:
    """Seconds of ``calls`` calls of ``fn``; ``settle`` waits before the clock starts, ``wait`` follows each call."""
    if settle:
        wait()
    began = clock()
    for _ in range(calls):
        fn()
        wait()
    return clock() - began


def suspect_timer(bugs, style: str = "loop"):
    """A timer ``(fn, device, repeats=5, warmup=1, clock=time.perf_counter)`` with the methodology ``bugs``.

    ``no_wait`` never waits for the device; ``earlier_work`` does not wait before starting its clock;
    ``no_warmup`` ignores ``warmup``; ``mean`` averages the samples; ``total`` returns the time of all repeats.
    ``style`` writes the same timer another way (the audit must judge behaviour, not code).
    """
    bugs = frozenset(bugs)
    settle = not bugs & {"no_wait", "earlier_work"}
    middle = statistics.fmean if "mean" in bugs else statistics.median

    def loop(fn, device, repeats=5, warmup=1, clock=time.perf_counter):
        wait = _waiter(device, "no_wait" not in bugs)
        for _ in range(0 if "no_warmup" in bugs else warmup):
            fn()
        if "total" in bugs:
            return _span(fn, wait, clock, repeats, settle)
        return middle([_span(fn, wait, clock, 1, settle) for _ in range(repeats)])

    def compact(fn, device, repeats=5, warmup=1, clock=time.perf_counter):
        wait = _waiter(device, "no_wait" not in bugs)
        [fn() for _ in range(warmup * ("no_warmup" not in bugs))]
        spans = [_span(fn, wait, clock, repeats if "total" in bugs else 1, settle)
                 for _ in range(1 if "total" in bugs else repeats)]
        return spans[0] if "total" in bugs else middle(sorted(spans))

    return {"loop": loop, "compact": compact}[style]


def _audit_visible() -> list:
    return [{"suspects": [
        {"name": "A", "bugs": [], "style": "loop"},
        {"name": "B", "bugs": ["no_wait"], "style": "compact"},
        {"name": "C", "bugs": ["earlier_work"], "style": "loop"},
        {"name": "D", "bugs": ["mean", "no_warmup"], "style": "compact"},
        {"name": "E", "bugs": ["total"], "style": "loop"},
        {"name": "F", "bugs": ["earlier_work", "mean"], "style": "compact"},
    ]}]


def _audit_answer(learner, case) -> list:
    out = []
    for suspect in case["suspects"]:
        try:
            found = learner(suspect_timer(suspect["bugs"], suspect["style"]))
        except Exception as exc:  # the suspect timers are plain Python: an error is the audit's own
            out.append(_raised(exc))
            continue
        if isinstance(found, str) or not hasattr(found, "__iter__"):
            out.append({"not_a_set": repr(found)[:80]})
        else:
            out.append({"bugs": sorted(str(b) for b in found)})
    return out


def _audit_score(case, answer, want) -> list[Part]:
    for suspect, found in zip(case["suspects"], answer):
        if "bugs" not in found:
            shown = found.get("raised") or found.get("not_a_set")
            return [Part(False, _say("audit_not_a_set", timer=suspect["name"], found=shown), weight=len(BUGS))]
        unknown = sorted(set(found["bugs"]) - set(BUGS))
        if unknown:
            return [Part(False, _say("audit_unknown", timer=suspect["name"], found=", ".join(unknown),
                                     known=", ".join(BUGS)), weight=len(BUGS))]
    parts = []
    for bug in BUGS:
        missed = [s["name"] for s, f, w in zip(case["suspects"], answer, want) if bug in w and bug not in f["bugs"]]
        alarms = [s["name"] for s, f, w in zip(case["suspects"], answer, want) if bug not in w and bug in f["bugs"]]
        label = Message(bug, bug)
        if not missed and not alarms:
            parts.append(Part(True, _say("passed", case=label), label=label))
        elif missed:
            parts.append(Part(False, _say("audit_missed", bug=bug, timers=", ".join(missed))
                              + _say(f"mistake.missed_{bug}"), mistake=f"missed_{bug}", label=label))
        else:
            mistake = _false_alarm(bug, case["suspects"], want, alarms, answer)
            text = _say("audit_false", bug=bug, timers=", ".join(alarms))
            parts.append(Part(False, text + _say(f"mistake.{mistake}") if mistake else text, mistake=mistake,
                              label=label))
    return parts


def _false_alarm(bug: str, suspects: list, want: list, alarms: list, answer: list) -> str | None:
    """Why the audit blamed ``bug`` on the timers ``alarms``, from which timers it blamed.

    A ``mean`` blamed only on timers that return a total the audit missed: the missed total (named there), no
    other mistake. An experiment that flags every timer without the bug tests a right timer wrongly: for
    ``no_warmup``, fewer warm-up calls than slow first calls (warmup=0); for ``mean``, too few repeats (with 2 the
    median is the mean; a total grows anyway and is judged first). Anything else: two effects at once, or a loose
    threshold.
    """
    missed_total = {s["name"] for s, f, w in zip(suspects, answer, want) if "total" in w and "total" not in f["bugs"]}
    if bug == "mean" and set(alarms) <= missed_total:
        return None
    innocent = {s["name"] for s, w in zip(suspects, want) if bug not in w and (bug != "mean" or "total" not in w)}
    if innocent and innocent <= set(alarms) and bug in ("no_warmup", "mean"):
        return f"false_{bug}"
    return "false_alarm"


TASKS = {
    "picker": Task(rule=_say("rule.picker"), central=("mps_before_cuda", "ignores_torch_module"),
                   title=_say("title_picker"), answer=_picker_answer, score=_picker_score, visible=_picker_visible,
                   given=lambda a: {k: v for k, v in a.items() if k != "asked"}, kind="recall", level="warm-up",
                   mistakes=("mps_before_cuda", "prefer_unchecked", "prefer_falls_back", "unknown_name",
                             "no_getattr_xpu", "ignores_torch_module")),
    "mlx": Task(rule=_say("rule.mlx"), central=("mlx_import_only",),
                title=_say("title_mlx"), answer=_mlx_answer, score=_mlx_score,
                visible=lambda: [{"install": i} for i in ("real", "absent", "eval_fails", "metal", "cuda", "cpu")],
                kind="transfer", level="core",
                mistakes=("mlx_import_only", "mlx_exception_escapes", "mlx_metal_only")),
    "setup": Task(rule=_say("rule.setup"), central=("bf16_emulated", "fp16_without_tensor_cores"),
                  title=_say("title_setup"), answer=_setup_answer, score=_setup_score, visible=_setup_visible,
                  kind="transfer", level="core",
                  mistakes=("rocm_name", "rocm_no_bf16", "bf16_emulated", "fp16_without_tensor_cores",
                            "mps_bf16_old_macos", "gb_not_gib", "ram_for_mps")),
    "memory": Task(rule=_say("rule.memory"), central=("full_as_frozen", "frozen_as_trained", "adapter_as_frozen", "frozen_forgotten"),
                   title=_say("title_memory"), answer=_memory_answer, score=_memory_score, visible=_memory_visible,
                   kind="transfer", level="core",
                   mistakes=("full_as_frozen", "frozen_as_trained", "adapter_as_frozen", "frozen_forgotten",
                             "no_activations", "need_in_gib", "gb_vs_gib", "first_fit", "largest_fit")),
    "timer": Task(rule=_say("rule.timer"), central=("no_wait", "string_device"),
                  title=_say("title_timer"), answer=_timer_answer, score=_timer_score, visible=_timer_visible,
                  given=lambda a: {k: v for k, v in a.items() if k not in ("observed", "asked_string")},
                  simulated=_timer_device, kind="recall", level="core",
                  mistakes=("no_wait", "string_device", "stored_sync", "earlier_work", "no_warmup", "mean",
                            "total", "ignores_clock")),
    "speedup": Task(rule=_say("rule.speedup"), central=("one_call", "steps_total"),
                    title=_say("title_speedup"), answer=_speedup_answer, score=_speedup_score,
                    visible=lambda: [{"width": speedup_widths()[1]}], measurement=True,
                    reference=_speedup_reference, rounds=5, kind="recall", level="core",
                    mistakes=("one_call", "steps_total", "ms_not_s")),
    "audit": Task(rule=_say("rule.audit"), central=("false_alarm",),
                  title=_say("title_audit"), answer=_audit_answer, score=_audit_score, visible=_audit_visible,
                  kind="transfer", level="stretch",
                  mistakes=tuple(f"missed_{b}" for b in BUGS) + ("false_no_warmup", "false_mean", "false_alarm")),
}
