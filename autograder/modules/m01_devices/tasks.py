"""Tasks of module 01 (devices): pickers, MLX, inventory, timer, CPU vs accelerator, memory.

Device availability is faked: ``fake_torch`` and ``fake_mlx`` (``autograder/fakes/devices.py``)
build stand-ins for ``torch`` and ``mlx.core`` from a JSON case, so every combination can be
graded on a CPU-only machine; their expected answers come from the references. A case marked
``real`` is this machine, and its expected answer is what the course's own detection says here.
The timer is graded with :class:`autograder.fakes.FakeAsyncDevice`.
"""
from __future__ import annotations

import math
import statistics
import time
from typing import Any

from ...checks import referee
from ...checks.core import Part, Task, close
from ...fakes.devices import broken_mlx, fake_mlx, fake_torch, mlx_modules
from ...i18n import Message, msg

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


def _picker_score(case, answer, expected) -> Part:
    """``expected``: the device name, or None where a ValueError is expected; this machine's best device for a real case."""
    if case.get("real"):
        from ...hardware import best_device
        expected = best_device()
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


def machine_mlx_device() -> str | None:
    """What MLX offers on this machine: 'gpu' if its GPU is usable, else 'cpu'; None without a working MLX."""
    mx = _real_mx()
    return None if mx is None else ("gpu" if mx.is_available(mx.gpu) else "cpu")


def _mlx_picker_score(case, answer, expected) -> Part:
    """``expected``: 'gpu', 'cpu', None or "ValueError"; for a real case, what MLX offers here."""
    want = _fmt(machine_mlx_device()) if case.get("real") else expected
    found = _fmt(answer["device"]) if "device" in answer else "ValueError"
    if case.get("real"):
        where = _say("real_machine")
    elif case.get("mlx") == "absent":
        where = _say("mlx_absent_case")
    else:
        where = _say("mlx_case", gpu=case["gpu"], backend=case["backend"], prefer=_fmt(case["prefer"]))
    return Part(found == want, _say("mlx_picker_wrong", case=where, expected=want, found=found))


# ---------------------------------------------------------------- 3. is MLX usable?

def _usable_answer(learner, case) -> dict:
    if case["mode"] == "real":
        result = learner()
    else:
        replacement = {"mlx": None, "mlx.core": None} if case["mode"] == "absent" else broken_mlx(case["error"])
        with mlx_modules(replacement):
            result = learner()
    return {"usable": result if isinstance(result, bool) else repr(result)}


def _usable_score(case, answer, want) -> Part:
    found = answer["usable"]
    if not isinstance(found, bool):
        return Part(False, _say("usable_not_bool", found=found))
    if case["mode"] == "real":
        from ...hardware import mlx_status
        expected, reason = mlx_status()
        return Part(found == expected, _say("usable_real", expected=expected, found=found, reason=reason.text("en"),
                                            reason_ko=reason.text("ko")))
    key = "usable_absent" if case["mode"] == "absent" else "usable_broken"
    return Part(found is False, _say(key, found=found))


# ---------------------------------------------------------------- 4. device inventory
ROW_KEYS = ("device", "name", "kind", "memory_gib", "compute_capability", "bf16")



def _inventory_visible() -> list:
    return [{"real": True},
            {"gpus": [{"name": "NVIDIA A100-SXM4-80GB", "total_memory": 85_095_874_560, "major": 8, "minor": 0,
                       "sms": 108}], "hip": None, "xpus": []}]



def case_torch(case):
    return fake_torch(gpus=case["gpus"], hip=case["hip"], xpus=case["xpus"], xpu=True)


def _inventory_answer(learner, case) -> list:
    rows = learner() if case.get("real") else learner(torch_module=case_torch(case))
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


def machine_inventory() -> list[dict]:
    """This machine's devices as the course's detection lists them (MLX left out: on a Mac it is MPS's GPU)."""
    from ... import hardware

    return [r for r in hardware.detect().rows() if r["kind"] != "mlx"]


def _inventory_score(case, answer, expected) -> list[Part]:
    expected = machine_inventory() if case.get("real") else expected
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



def _seconds(reported) -> float | str:
    value = getattr(reported, "median_s", reported)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return f"not a number: {type(reported).__name__}"
    return float(value)


def _timer_answer(learner, case) -> dict:
    from ...fakes import FakeAsyncDevice, audit_timer

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


def _timer_score(case, answer, want) -> Part:
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
def speedup_widths() -> list[int]:
    """MLP widths that keep an accelerator busy (it must beat the CPU), smaller on a CPU-only machine."""
    from ...hardware import best_device

    return [1536, 2048, 2560] if best_device() != "cpu" else [384, 512, 640]



_TOLD: list = []


def _speedup_answer(learner, case) -> dict:
    import torch

    from ...hardware import best_device
    from .lesson import make_step

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
    from ...hardware import best_device
    from ...harness import time_fn
    from .lesson import make_step

    accel = best_device()
    threads = 1 if accel == "cpu" else None
    return {"cpu_s": time_fn(make_step("cpu", case["width"]), device="cpu", budget_s=0.4, threads=threads).median_s,
            "accel_s": time_fn(make_step(accel, case["width"]), device=accel, budget_s=0.4, threads=threads).median_s}


def _speedup_score(case, answer, want) -> list[Part]:
    from ...expectations import expect, side_by_side
    from ...hardware import best_device

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
    from ... import profiles

    ids = ("rtx_4090", "t4")
    devices = {i: profiles.get(i).memory_bytes / 1e9 for i in ids}
    big = {i: profiles.get(i).memory_bytes / 1e9 for i in ("a100_sxm_80gb", "h200_sxm", "mi300x", "b200")}
    return [{"n_params": 1.5e9, "activation_gb": 0.0, "devices": devices},
            {"n_params": 7e9, "activation_gb": 10.0, "devices": big},
            {"n_params": 70e9, "activation_gb": 20.0, "devices": big}]



def _memory_answer(learner, case) -> dict:
    plan = learner(case["n_params"], case["activation_gb"], dict(case["devices"]))
    if not isinstance(plan, dict):
        return {"not_a_dict": repr(plan)[:80]}
    need = plan.get("need_gb")
    device = plan.get("device")
    return {"need_gb": float(need) if isinstance(need, (int, float)) else repr(need),
            "device": None if device is None else str(device)}


def _memory_score(case, answer, want) -> list[Part]:
    if "not_a_dict" in answer:
        return [Part(False, _say("memory_not_dict", found=answer["not_a_dict"]), weight=2)]
    where = _say("memory_case", n=case["n_params"] / 1e9, act=case["activation_gb"])
    need = answer["need_gb"]
    need_ok = isinstance(need, float) and close(need, want["need_gb"], rel=1e-6, abs_tol=1e-9)
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
                   visible=_picker_visible),
    "mlx_picker": Task(title=_say("title_mlx_picker"), answer=_mlx_picker_answer, score=_mlx_picker_score,
                       visible=_mlx_picker_visible),
    "mlx_usable": Task(title=_say("title_mlx_usable"), answer=_usable_answer, score=_usable_score,
                       visible=lambda: [{"mode": "real"}, {"mode": "absent"}]),
    "inventory": Task(title=_say("title_inventory"), answer=_inventory_answer, score=_inventory_score,
                      visible=_inventory_visible),
    "timer": Task(title=_say("title_timer"), answer=_timer_answer, score=_timer_score,
                  visible=_timer_visible, measurement=True),
    "speedup": Task(title=_say("title_speedup"), answer=_speedup_answer, score=_speedup_score,
                    visible=lambda: [{"width": speedup_widths()[1]}], measurement=True,
                    reference=_speedup_reference, rounds=5),
    "memory": Task(title=_say("title_memory"), answer=_memory_answer, score=_memory_score,
                   visible=_memory_visible),
}
