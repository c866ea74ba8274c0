"""Tasks of module 04 (training memory): budgets, GPU counts, saved tensors, accumulation,
loss scaling, a mixed-precision step and a model split across two devices.

Models and data are rebuilt from small JSON cases (shapes and seeds): the references
(``course_answers.m04_training_memory``) compute the expected answer from the case alone.
DDP's ``no_sync`` is faked by :class:`~autograder.fakes.ddp.SyncRecorder`; the mixed-precision
task runs on the best device here and is graded against the tolerance for its number format
(``data/amp.yaml``), with no reference.
"""
from __future__ import annotations

import copy
import math
import numbers
from typing import Any

from ...checks.core import Part, Task, close
from ...fakes.ddp import SyncRecorder
from ...i18n import Message, msg
from .data import table

KEYS = ("weights", "gradients", "optimizer", "total")


def _say(key: str, **values) -> Message:
    """Catalogued message ``m04.key``."""
    return msg(f"m04.{key}", **values)


def _dict_answer(result: Any, keys: tuple, what: str) -> dict:
    if not isinstance(result, dict) or not all(k in result for k in keys):
        raise ValueError(_say("need_dict", what=what, keys=", ".join(keys)).text())
    return {k: float(result[k]) for k in keys}


# ---------------------------------------------------------------- 1. memory breakdown
def _breakdown_visible() -> list:
    paper = [{"params": 7.5e9, "optimizer": "adam", "precision": "mixed", "stage": s, "gpus": 64} for s in range(4)]
    return paper + [{"params": 1.0e9, "optimizer": "adam", "precision": "fp32", "stage": 0, "gpus": 1},
                    {"params": 3.0e8, "optimizer": "sgd", "precision": "fp32", "stage": 2, "gpus": 4}]


def _breakdown_answer(learner, case) -> dict:
    result = learner(case["params"], case["optimizer"], case["precision"], case["stage"], case["gpus"])
    return _dict_answer(result, KEYS, "memory_breakdown")


def _breakdown_score(case, answer, want) -> list[Part]:
    label = _say("case_breakdown", **case)
    return [Part(close(answer[k], want[k], abs_tol=1e-9),
                 _say("expected", what=label + Message(f"[{k}]", f"[{k}]"),
                      expected=f"{want[k]:.6g}", found=f"{answer[k]:.6g}")) for k in KEYS]


# ---------------------------------------------------------------- 2. GPUs needed
def _gpus_visible() -> list:
    return [{"params": 7_000_000_000, "profile": "h100_sxm"}, {"params": 70_000_000_000, "profile": "a100_sxm_80gb"},
            {"params": 125_000_000, "profile": "rtx_4090"}]


def _gpus_answer(learner, case) -> dict:
    result = learner(case["params"], case["profile"])
    if not isinstance(result, dict) or not {"train", "infer"} <= set(result):
        raise ValueError(_say("need_dict", what="gpus_needed", keys="train, infer").text())
    def plain(v):  # numpy and torch integers count as integers; anything else is shown as found
        return int(v) if isinstance(v, numbers.Integral) else float(v) if isinstance(v, numbers.Real) else str(v)

    return {k: plain(result[k]) for k in ("train", "infer")}


def _gpus_score(case, answer, want) -> list[Part]:
    return [Part(isinstance(answer[k], (int, float)) and answer[k] == want[k],
                 _say("expected", what=_say(f"case_gpus_{k}", **case), expected=want[k], found=answer[k]))
            for k in ("train", "infer")]


# ---------------------------------------------------------------- 3. saved tensors
def blocks(case: dict):
    """``depth`` MLP blocks (Linear, activation, Linear) and an input, from a shape-only case."""
    import torch
    import torch.nn as nn

    act = {"relu": nn.ReLU, "gelu": nn.GELU, "tanh": nn.Tanh}[case["act"]]
    dtype = getattr(torch, case["dtype"])
    d, h = case["dims"]
    model = nn.Sequential(*[nn.Sequential(nn.Linear(d, h), act(), nn.Linear(h, d))
                            for _ in range(case["depth"])]).to(dtype)
    return model, torch.zeros(case["batch"], d, dtype=dtype)


class Checkpointed:
    """``blocks`` run with ``torch.utils.checkpoint.checkpoint_sequential`` (non-reentrant)."""

    def __init__(self, model, segments: int):
        self.model, self.segments = model, segments

    def parameters(self):
        return self.model.parameters()

    def __call__(self, x):
        from torch.utils.checkpoint import checkpoint_sequential

        return checkpoint_sequential(self.model, self.segments, x, use_reentrant=False)


def _saved_visible() -> list:
    return [{"dims": [32, 128], "depth": 4, "act": "gelu", "batch": 16, "dtype": "float32", "segments": 2},
            {"dims": [16, 64], "depth": 3, "act": "relu", "batch": 8, "dtype": "float32", "segments": 3}]


def _saved_answer(learner, case) -> dict:
    model, x = blocks(case)
    plain = learner(model, x)
    checkpointed = learner(Checkpointed(model, case["segments"]), x)
    return {"plain": int(plain), "checkpointed": int(checkpointed)}


def _saved_score(case, answer, want) -> list[Part]:
    plain, ck = want["plain"], want["checkpointed"]
    label = _say("case_saved", **case)
    return [Part(answer["plain"] == plain, _say("expected", what=label, expected=plain, found=answer["plain"]), 2),
            Part(answer["checkpointed"] == ck, _say("expected", what=label + _say("with_checkpoint"),
                                                   expected=ck, found=answer["checkpointed"])),
            Part(answer["checkpointed"] < answer["plain"], _say("not_lower", plain=answer["plain"],
                                                              checkpointed=answer["checkpointed"]))]


# ---------------------------------------------------------------- 4. gradient accumulation
def mlp(case: dict):
    """A small MLP, inputs, targets and a mean-reduced loss function, all from ``case["seed"]``."""
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    g = torch.Generator().manual_seed(case["seed"])
    sizes = case["sizes"]
    layers: list = []
    for i, (a, b) in enumerate(zip(sizes, sizes[1:])):
        layers += [nn.Linear(a, b)] + ([nn.Tanh()] if i < len(sizes) - 2 else [])
    model = nn.Sequential(*layers)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn(p.shape, generator=g) * 0.5)
    x = torch.randn(case["batch"], sizes[0], generator=g)
    if case["loss"] == "ce":
        return model, x, torch.randint(sizes[-1], (case["batch"],), generator=g), F.cross_entropy
    return model, x, torch.randn(case["batch"], sizes[-1], generator=g), F.mse_loss


def _accumulate_visible() -> list:
    return [{"seed": 0, "sizes": [6, 16, 3], "batch": 32, "n_micro": 4, "loss": "mse"},
            {"seed": 1, "sizes": [5, 8, 4], "batch": 10, "n_micro": 3, "loss": "ce"}]


def _accumulate_answer(learner, case) -> dict:
    import torch

    model, x, y, loss_fn = mlp(case)
    for p in model.parameters():  # stale gradients from an earlier step: the learner must clear them
        p.grad = torch.ones_like(p)
    wrapped = SyncRecorder(model)
    loss = learner(wrapped, loss_fn, x, y, case["n_micro"])
    grads = [v for p in model.parameters() for v in (p.grad.flatten().tolist() if p.grad is not None else [])]
    return {"loss": float(loss), "grads": grads, "in_no_sync": wrapped.in_no_sync, "synced": wrapped.synced}


def _accumulate_score(case, answer, want) -> list[Part]:
    import torch

    loss = want["loss"]
    grads = torch.tensor(want["grads"], dtype=torch.float32)
    got = torch.tensor(answer["grads"], dtype=torch.float32)
    same = got.shape == grads.shape and torch.allclose(got, grads, rtol=1e-4, atol=1e-6)
    worst = (got - grads).abs().max().item() if got.shape == grads.shape else float("nan")
    chunks = min(case["n_micro"], case["batch"])
    label = _say("case_accumulate", **case)
    return [Part(same, _say("grads_differ", case=label, worst=f"{worst:.3g}"), 3),
            Part(close(answer["loss"], loss, rel=1e-4),
                 _say("expected", what=label + _say("full_loss"), expected=f"{loss:.6g}",
                      found=f"{answer['loss']:.6g}")),
            Part(answer["in_no_sync"] == chunks - 1 and answer["synced"] == 1,
                 _say("no_sync", expected=chunks - 1, quiet=answer["in_no_sync"], synced=answer["synced"]))]


# ---------------------------------------------------------------- 5. dynamic loss scaler
def _scaler_visible() -> list:
    ok = [0.5, -1.0, 2.0]
    steps = [ok, ok, [1.0, "inf", 0.0], ok, ok, ok, ["nan", 1.0, 1.0], ok, ok]
    return [{"args": {}, "loss": 1.5, "steps": [ok, ok]},
            {"args": {"init_scale": 8.0, "growth_factor": 2.0, "backoff_factor": 0.5, "growth_interval": 3},
             "loss": 0.25, "steps": steps}]


def _scaler_answer(learner, case) -> list:
    scaler = learner(**case["args"])
    trace = []
    for grads in case["steps"]:
        scaled_loss = float(scaler.scale(case["loss"]))
        result = scaler.step([float(g) for g in grads])
        trace.append({"scaled_loss": scaled_loss, "result": None if result is None else [float(g) for g in result],
                      "scale": float(scaler.get_scale())})
    return trace


def _scaler_score(case, answer, trace) -> list[Part]:
    parts = []
    for i, (grads, got, want) in enumerate(zip(case["steps"], answer, trace)):
        same_result = (want["result"] is None and got["result"] is None) or (
            want["result"] is not None and got["result"] is not None and len(got["result"]) == len(want["result"])
            and all(close(a, b, rel=1e-9, abs_tol=1e-300) for a, b in zip(got["result"], want["result"])))
        ok = same_result and close(got["scale"], want["scale"], rel=1e-12) and \
            close(got["scaled_loss"], want["scaled_loss"], rel=1e-12)
        parts.append(Part(ok, _say("scaler_step", step=i + 1, args=str(case["args"]), grads=str(grads),
                                   expected=str(want), found=str(got))))
    if len(answer) != len(case["steps"]):
        parts.append(Part(False, _say("scaler_length", expected=len(case["steps"]), found=len(answer))))
    return parts


# ---------------------------------------------------------------- 6. mixed-precision step
def amp_band() -> dict:
    """Steps, per-format tolerance and the required loss drop (``data/amp.yaml``)."""
    return table("amp")


def _amp_problem(seed: int, device: str):
    import torch

    case = {"seed": seed, "sizes": [32, 64, 64, 10], "batch": 64, "loss": "ce"}
    model, x, y, loss_fn = mlp(case)
    model = model.to(device)
    return model, torch.optim.AdamW(model.parameters(), lr=3e-3), x.to(device), y.to(device), loss_fn


def _recording_scaler(device: str, dtype):
    from .lesson import grad_scaler

    scaler = grad_scaler(device, dtype)
    calls = {"scale": 0, "step": 0, "update": 0}
    for name in calls:
        original = getattr(scaler, name)

        def counted(*args, _original=original, _name=name, **kwargs):
            calls[_name] += 1
            return _original(*args, **kwargs)

        setattr(scaler, name, counted)
    return scaler, calls


def _amp_visible() -> list:
    return [{"seed": 0, "dtype": "auto"}]


def _amp_dtype(case: dict, device: str):
    import torch

    from .lesson import amp_dtype, amp_usable

    chosen = amp_dtype(device)
    if case["dtype"] == "other" and chosen is not None:
        other = torch.float16 if chosen == torch.bfloat16 else torch.bfloat16
        if amp_usable(torch, device, other):
            chosen = other
    return chosen


def _amp_answer(learner, case) -> dict:
    import torch

    from ...hardware import best_device

    device = best_device()
    dtype = _amp_dtype(case, device)
    steps = amp_band()["steps"]
    if dtype is None:
        return {"device": device, "dtype": None}
    model, opt, x, y, loss_fn = _amp_problem(case["seed"], device)
    fp32 = []
    for _ in range(steps):
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        fp32.append(loss.item())
    model, opt, x, y, loss_fn = _amp_problem(case["seed"], device)
    seen: list[str] = []
    hook = model[0].register_forward_hook(lambda m, i, out: seen.append(str(out.dtype).replace("torch.", "")))
    scaler, calls = _recording_scaler(device, dtype)
    amp = [float(learner(model, opt, scaler, x, y, loss_fn, device, dtype)) for _ in range(steps)]
    hook.remove()
    name = str(dtype).replace("torch.", "")
    print(_say("amp_context", device=device, dtype=name, tol=amp_band()["tolerance"][name] * 100).text())
    return {"device": device, "dtype": name, "fp32": fp32, "amp": amp, "seen": seen, "calls": calls,
            "fp16": dtype == torch.float16}


def _amp_score(case, answer, want) -> list[Part]:
    if answer.get("dtype") is None:
        return Part(False, _say("amp_unsupported", device=answer["device"]))
    band = amp_band()
    steps, tol = band["steps"], band["tolerance"][answer["dtype"]]
    cast_ok = len(answer["seen"]) >= steps and all(d == answer["dtype"] for d in answer["seen"])
    calls = answer["calls"]
    scaler_ok = calls["scale"] == calls["step"] == calls["update"] == steps
    amp, fp32 = answer["amp"], answer["fp32"]
    ok_len = len(amp) == steps and all(math.isfinite(v) for v in amp)
    gap = abs(amp[-1] - fp32[-1]) / fp32[-1] if ok_len else float("inf")
    learned = ok_len and amp[-1] < band["min_drop"] * amp[0]
    where = dict(device=answer["device"], dtype=answer["dtype"])
    return [Part(cast_ok, _say("amp_not_cast", found=sorted(set(answer["seen"])), **where)),
            Part(scaler_ok, _say("amp_scaler", steps=steps, found=str(calls), **where)),
            Part(ok_len and gap <= tol and learned,
                 _say("amp_track", gap=gap * 100, tol=tol * 100, first=amp[0] if amp else float("nan"),
                      last=amp[-1] if amp else float("nan"), fp32=fp32[-1], drop=band["min_drop"], **where), 2)]


# ---------------------------------------------------------------- 7. split across devices
def sequence(case: dict):
    """Alternating Linear/Tanh layers and an input from ``case["seed"]``."""
    import torch
    import torch.nn as nn

    g = torch.Generator().manual_seed(case["seed"])
    widths = case["widths"]
    layers: list = []
    for a, b in zip(widths, widths[1:]):
        layers += [nn.Linear(a, b), nn.Tanh()]
    model = nn.Sequential(*layers)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn(p.shape, generator=g) * 0.5)
    return model, torch.randn(case["batch"], widths[0], generator=g)


def _split_visible() -> list:
    return [{"seed": 0, "widths": [8, 16, 16, 4], "split": 3, "batch": 5},
            {"seed": 1, "widths": [4, 6, 3], "split": 2, "batch": 2}]


def _split_answer(learner, case) -> dict:
    from ...hardware import best_device

    first = best_device()
    layers, x = sequence(case)
    passed = copy.deepcopy(layers)
    model = learner(passed, case["split"], first, "cpu")
    out = model(x)
    out.sum().backward()
    params = list(passed.parameters())
    if all(p.grad is None for p in params):  # the learner copied the layers: read its own
        params = list(model.parameters())
    return {"first": first, "out": out.detach().cpu().tolist(), "out_device": out.device.type,
            "grads": [v for p in params for v in (p.grad.cpu().flatten().tolist() if p.grad is not None else [])],
            "devices": [p.device.type for p in params]}


def _split_score(case, answer, want) -> list[Part]:
    import torch

    layers, _ = sequence(case)
    out, want_grads = torch.tensor(want["out"]), torch.tensor(want["grads"])
    got = torch.tensor(answer["out"])
    exact = answer["first"] == "cpu"
    # On one CPU the result is the reference's up to the last bits (the reference may come from another
    # machine's expected.json); across devices, up to the devices' rounding.
    same = got.shape == out.shape and torch.allclose(got, out, rtol=1e-5 if exact else 1e-4,
                                                     atol=1e-7 if exact else 1e-5)
    got_grads = torch.tensor(answer["grads"])
    grads_ok = got_grads.shape == want_grads.shape and torch.allclose(got_grads, want_grads, rtol=1e-4, atol=1e-6)
    want_devices = [answer["first"] if i < case["split"] else "cpu"
                    for i, layer in enumerate(layers) for _ in layer.parameters()]
    label = _say("case_split", **case)
    parts = [Part(same, _say("split_output", case=label, exact=_say("exact" if exact else "close")), 2),
             Part(grads_ok, _say("split_grads", case=label))]
    if answer["first"] != "cpu":  # with two CPU placements every layout looks the same
        parts.append(Part(answer["devices"] == want_devices and answer["out_device"] == "cpu",
                          _say("split_devices", expected=want_devices, found=answer["devices"],
                               out=answer["out_device"])))
    return parts


TASKS = {
    "breakdown": Task(title=_say("title.breakdown"), answer=_breakdown_answer, score=_breakdown_score,
                      visible=_breakdown_visible),
    "gpus": Task(title=_say("title.gpus"), answer=_gpus_answer, score=_gpus_score,
                 visible=_gpus_visible),
    "saved": Task(title=_say("title.saved"), answer=_saved_answer, score=_saved_score,
                  visible=_saved_visible),
    "accumulate": Task(title=_say("title.accumulate"), answer=_accumulate_answer, score=_accumulate_score,
                       visible=_accumulate_visible),
    "scaler": Task(title=_say("title.scaler"), answer=_scaler_answer, score=_scaler_score,
                   visible=_scaler_visible),
    "amp": Task(title=_say("title.amp"), answer=_amp_answer, score=_amp_score,
                visible=_amp_visible),
    "split": Task(title=_say("title.split"), answer=_split_answer, score=_split_score,
                  visible=_split_visible),
}
