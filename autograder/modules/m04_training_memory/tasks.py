"""Tasks of module 04 (training memory): the memory budget, activations predicted then measured, a model split by
a memory budget, a loss-scale log read back, one complete training step, a diagnosis of planted bugs, and a plan
that fits a training run on the fewest GPUs.

Models and data are rebuilt from small JSON cases (shapes and seeds): the references
(``course_answers.m04_training_memory``) compute the expected answer from the case alone, together with what each
known mistake gives on it (``{"answer": ..., "mistakes": {...}}``), so a check names a mistake by what it produced.
DDP's ``no_sync`` is faked by :class:`~autograder.fakes.ddp.SyncRecorder`; PyTorch's ``meta`` device (shapes, no
data) makes a device placement visible on a CPU-only machine.
"""
from __future__ import annotations

import copy
import math
import numbers
from typing import Any, Callable

from ...checks.core import Part, Task, close
from ...fakes.ddp import SyncRecorder
from ...i18n import Message, msg
from .data import table

KEYS = ("weights", "gradients", "optimizer", "total")


def _say(key: str, **values) -> Message:
    """Catalogued message ``m04.key``."""
    return msg(f"m04.{key}", **values)


def _lines(*parts: Message | None) -> Message:
    """Messages one under the other."""
    shown = [p for p in parts if p is not None]
    return Message("\n".join(p.ko for p in shown), "\n".join(p.en for p in shown))


def _named(answer: Any, mistakes: dict, same: Callable[[Any, Any], bool]) -> str | None:
    """The one catalogued mistake whose answer this is (None when none fits, or several do)."""
    hits = [name for name, wrong in (mistakes or {}).items() if same(answer, wrong)]
    return hits[0] if len(hits) == 1 else None


def _whole(value: Any) -> Any:
    """An integral number as int (numpy and torch integers, 12.0); anything else unchanged, to be shown as found."""
    if isinstance(value, bool):
        return value
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real) and math.isfinite(value) and float(value).is_integer():
        return int(value)
    return value if isinstance(value, (int, float, str, type(None))) else repr(value)


def _need_dict(result: Any, keys: tuple, what: str) -> dict:
    if not isinstance(result, dict) or not all(k in result for k in keys):
        raise ValueError(_say("need_dict", what=what, keys=", ".join(keys)).text())
    return result


# ---------------------------------------------------------------- 1. memory breakdown (warm-up)
def _breakdown_visible() -> list:
    paper = [{"params": 7.5e9, "frozen": 0.0, "optimizer": "adam", "precision": "mixed", "stage": s, "gpus": 64}
             for s in range(4)]
    return paper + [
        {"params": 1.0e9, "frozen": 0.0, "optimizer": "adam", "precision": "fp32", "stage": 0, "gpus": 1},
        {"params": 2.0e9, "frozen": 0.0, "optimizer": "adamw", "precision": "mixed_fp32_grads", "stage": 1, "gpus": 8},
        {"params": 3.0e8, "frozen": 0.0, "optimizer": "momentum", "precision": "bf16", "stage": 2, "gpus": 4},
        {"params": 6.0e8, "frozen": 0.0, "optimizer": "sgd", "precision": "mixed_fp32_grads", "stage": 1, "gpus": 8},
        {"params": 7.0e9, "frozen": 6.96e9, "optimizer": "adamw", "precision": "mixed", "stage": 2, "gpus": 8},
        {"params": 1.3e9, "frozen": 1.0e9, "optimizer": "adam", "precision": "fp32", "stage": 3, "gpus": 4}]


def _breakdown_answer(learner, case) -> dict:
    result = _need_dict(learner(case["params"], case["frozen"], case["optimizer"], case["precision"], case["stage"],
                                case["gpus"]), KEYS, "memory_breakdown")
    return {k: float(result[k]) for k in KEYS}


def _same_breakdown(a: dict, b: dict) -> bool:
    return all(close(a[k], b[k], rel=1e-6, abs_tol=1e-9) for k in KEYS)


def _count(n: float) -> str:
    """A parameter count as people write it: 7.5B, 40M, 0."""
    for size, unit in ((1e9, "B"), (1e6, "M"), (1e3, "K")):
        if abs(n) >= size:
            return f"{n / size:g}{unit}"
    return f"{n:g}"


def _breakdown_score(case, answer, want) -> Part:
    label = _say("case_breakdown", **{**case, "params": _count(case["params"]), "frozen": _count(case["frozen"])})
    right = want["answer"]
    if _same_breakdown(answer, right):
        return Part(True, label, label=label)
    wrong = [k for k in KEYS if not close(answer[k], right[k], rel=1e-6, abs_tol=1e-9)]
    units = [k for k in wrong if any(close(answer[k], right[k] / unit, rel=1e-6) for unit in (2**30, 1e9))]
    name = "not_bytes" if units else _named(answer, want["mistakes"], _same_breakdown)
    detail = [_say("expected", what=label + Message(" · ", " · ") + _say(f"part.{k}"), expected=f"{right[k]:.6g}",
                   found=f"{answer[k]:.6g}") for k in wrong]
    return Part(False, _lines(_say(f"mistake.{name}") if name else None, *detail), mistake=name, label=label)


# ---------------------------------------------------------------- 2. saved for backward: predict, then measure
def blocks(case: dict):
    """``depth`` MLP blocks (Linear(d, h), activation, Linear(h, d)) and an input, from a shape-only case."""
    import torch
    import torch.nn as nn

    act = {"relu": nn.ReLU, "gelu": nn.GELU, "tanh": nn.Tanh, "sigmoid": nn.Sigmoid, "silu": nn.SiLU}[case["act"]]
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
            {"dims": [16, 64], "depth": 3, "act": "relu", "batch": 8, "dtype": "float32", "segments": 3},
            {"dims": [24, 96], "depth": 5, "act": "silu", "batch": 6, "dtype": "bfloat16", "segments": 2},
            {"dims": [8, 32], "depth": 7, "act": "tanh", "batch": 4, "dtype": "bfloat16", "segments": 3},
            {"dims": [40, 80], "depth": 4, "act": "sigmoid", "batch": 5, "dtype": "float32", "segments": 4}]


def _saved_answer(learner, case) -> dict:
    d, h = case["dims"]
    result = _need_dict(learner(d, h, case["depth"], case["act"], case["batch"], case["dtype"], case["segments"]),
                        ("plain", "checkpointed"), "predict_saved")
    return {k: _whole(result[k]) for k in ("plain", "checkpointed")}


def _saved_score(case, answer, want) -> list[Part]:
    label = _say("case_saved", **case)
    measured = want["answer"]
    name = None if answer == measured else _named(answer, want["mistakes"], lambda a, b: a == b)
    parts = []
    for k in ("plain", "checkpointed"):
        ok = answer[k] == measured[k]
        detail = _say(f"saved_{k}", case=label, predicted=answer[k], measured=measured[k])
        parts.append(Part(ok, detail if ok or not name else _lines(_say(f"mistake.{name}"), detail),
                          mistake=None if ok else name, label=_say(f"saved_{k}_label", case=label)))
    return parts


# ---------------------------------------------------------------- 3. a model split by a memory budget
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


def placement(layers, x, learner, case) -> dict:
    """Where each parameter sits when ``learner`` splits a copy of ``layers`` between 'cpu' and 'meta' (a device
    that is visibly another one on any computer), and where the output of ``x`` lands, or why the forward failed."""
    record: dict = {"devices": None, "out": None, "error": None}
    try:
        model = learner(copy.deepcopy(layers), case["budget"], "cpu", "meta")
        record["devices"] = [p.device.type for p in model.parameters()]
        record["out"] = model(x).device.type
    except Exception as exc:  # a forward that does not move the activations fails across two devices
        text = f"{type(exc).__name__}: {exc}".splitlines()[0]
        record["error"] = text if len(text) <= 160 else text[:159] + "…"
    return record


def _split_visible() -> list:
    return [{"seed": 0, "widths": [8, 16, 16, 4], "budget": 4000, "batch": 5},
            {"seed": 1, "widths": [6, 12, 10, 8, 3], "budget": 7000, "batch": 4},
            {"seed": 2, "widths": [4, 6, 3], "budget": 400, "batch": 2},
            {"seed": 3, "widths": [5, 7, 2], "budget": 10**6, "batch": 3},
            {"seed": 4, "widths": [6, 10, 5, 3], "budget": 1120, "batch": 3}]  # 1120 = 16 x 70: the first layer fills it


def _split_answer(learner, case) -> dict:
    layers, x = sequence(case)
    record = placement(layers, x, learner, case)
    model = learner(copy.deepcopy(layers), case["budget"], "cpu", "cpu")
    out = model(x)
    if out.requires_grad:  # a graph cut after the last layer with parameters leaves nothing to differentiate
        out.sum().backward()
    params = list(model.parameters())
    record["values"] = out.detach().cpu().tolist()
    record["grads"] = [v for p in params for v in (p.grad.flatten().tolist() if p.grad is not None else [])]
    record["no_grad"] = sum(p.grad is None for p in params)
    return record


def _same_placement(a: dict, b: dict) -> bool:
    return a["devices"] == b["devices"] and a["out"] == b["out"] and (a["error"] is None) == (b["error"] is None)


def _split_score(case, answer, want) -> list[Part]:
    import torch

    right = want["answer"]
    label = _say("case_split", **case)
    devices, out, error = answer["devices"], answer["out"], answer["error"]
    placed = devices == right["devices"]
    landed = error is None and out == "meta"
    name = None if placed and landed else _named(answer, want["mistakes"], _same_placement)
    if not placed:
        where = _say("split_devices", case=label, expected=right["devices"], found=devices)
    else:
        where = _say("split_devices_right", case=label, found=devices)
    if error is not None:
        output = _say("split_forward_failed", case=label, error=error)
    else:
        output = _say("split_out_device", case=label, out=out)
    values, got = torch.tensor(right["values"]), torch.tensor(answer["values"])
    same = got.shape == values.shape and torch.allclose(got, values, rtol=1e-5, atol=1e-7)
    grads, got_grads = torch.tensor(right["grads"]), torch.tensor(answer["grads"])
    grads_ok = answer["no_grad"] == 0 and got_grads.shape == grads.shape and torch.allclose(got_grads, grads,
                                                                                              rtol=1e-4, atol=1e-6)
    cut = answer["no_grad"] > 0
    grads_message = _say("split_grads", case=label, missing=answer["no_grad"])

    def part(ok, message, mistake, label_key):
        shown = _lines(_say(f"mistake.{mistake}"), message) if mistake and not ok else message
        return Part(ok, shown, mistake=None if ok else mistake, label=_say(label_key))

    return [part(placed, where, name, "split_placement_label"),
            part(landed, output, name, "split_out_label"),
            part(same, _say("split_output", case=label), None, "split_output_label"),
            part(grads_ok, grads_message, "graph_cut" if cut else None, "split_grads_label")]


# ---------------------------------------------------------------- 4. reading a loss-scale log
LOG_KEYS = ("skipped", "growth_factor", "backoff_factor", "growth_interval", "next_growth")


def _scaler_log_visible() -> list:
    return [dict(log) for log in table("scaler_logs")["logs"]]


def _scaler_log_answer(learner, case) -> dict:
    result = _need_dict(learner(case["init_scale"], list(case["scales"])), LOG_KEYS, "read_scaler_log")
    skipped = result["skipped"]
    return {"skipped": [_whole(i) for i in skipped] if isinstance(skipped, (list, tuple)) else _whole(skipped),
            "growth_factor": float(result["growth_factor"]), "backoff_factor": float(result["backoff_factor"]),
            "growth_interval": _whole(result["growth_interval"]), "next_growth": _whole(result["next_growth"])}


def _same_log(a: dict, b: dict) -> bool:
    return (a["skipped"] == b["skipped"] and a["growth_interval"] == b["growth_interval"]
            and a["next_growth"] == b["next_growth"] and close(a["growth_factor"], b["growth_factor"], rel=1e-9)
            and close(a["backoff_factor"], b["backoff_factor"], rel=1e-9))


def _gaps_across_skips(case) -> set:
    """Distances between two growths (or from the start to the first growth) with a skipped step between them:
    what an interval measured between growths reads when it ignores that a skip restarts the count."""
    before, last, skipped, gaps = case["init_scale"], -1, False, set()
    for i, scale in enumerate(case["scales"]):
        if scale < before:
            skipped = True
        elif scale > before:
            if skipped:
                gaps.add(i - last)
            last, skipped = i, False
        before = scale
    return gaps


def _scaler_log_score(case, answer, want) -> list[Part]:
    right = want["answer"]
    label = _say("case_log", steps=len(case["scales"]), init=case["init_scale"])
    name = None if _same_log(answer, right) else _named(answer, want["mistakes"], _same_log)
    checks = {"skipped": answer["skipped"] == right["skipped"],
              "factors": close(answer["growth_factor"], right["growth_factor"], rel=1e-9)
              and close(answer["backoff_factor"], right["backoff_factor"], rel=1e-9),
              "growth_interval": answer["growth_interval"] == right["growth_interval"],
              "next_growth": answer["next_growth"] == right["next_growth"]}
    shown = {"skipped": ("skipped",), "factors": ("growth_factor", "backoff_factor"),
             "growth_interval": ("growth_interval",), "next_growth": ("next_growth",)}
    parts = []
    for part, ok in checks.items():
        what = _say(f"log_{part}", case=label)
        mistake = None if ok else name
        if mistake is None and not ok and part == "growth_interval" and answer[part] in _gaps_across_skips(case):
            mistake = "reset_only_on_growth"
        detail = _say("expected", what=what, expected=", ".join(str(right[k]) for k in shown[part]),
                      found=", ".join(str(answer[k]) for k in shown[part]))
        parts.append(Part(ok, _lines(_say(f"mistake.{mistake}"), detail) if mistake else detail, mistake=mistake,
                          label=what))
    return parts


# ---------------------------------------------------------------- 5. one complete training step
STEP_LR = 1.0  # the check's optimizer: SGD without momentum, so an update is -lr x the clipped gradient
STALE_GRAD = 1.0  # old gradients the check leaves in every .grad, after unscaling (so x the scale before it)
STEP_INIT_SCALE = table("amp")["init_scale"]  # the check's GradScaler starts here (fp16 only)
STEP_TOLERANCE = table("amp")["tolerance"]  # |update - fp32 update| / |fp32 update| per 16-bit format


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


def relative_gap(found: list, want: list) -> float:
    """|found - want| / |want| for two flat lists of numbers (inf when the lengths differ)."""
    if len(found) != len(want):
        return math.inf
    diff = math.sqrt(sum((a - b) ** 2 for a, b in zip(found, want)))
    return diff / max(math.sqrt(sum(b * b for b in want)), 1e-30)


def _recording_scaler(dtype, params: list):
    """A CPU ``torch.amp.GradScaler`` (on for fp16, a pass-through otherwise) that counts its calls and records the
    norm of the gradients the optimizer stepped with."""
    import torch

    from .lesson import grad_scaler

    scaler = grad_scaler("cpu", dtype, init_scale=STEP_INIT_SCALE)
    calls = {"scale": 0, "unscale_": 0, "step": 0, "update": 0}
    stepped: list[float] = []
    for name in calls:
        original = getattr(scaler, name)

        def counted(*args, _original=original, _name=name, **kwargs):
            calls[_name] += 1
            result = _original(*args, **kwargs)
            if _name == "step":  # step has unscaled the gradients in place: these are the ones it applied
                stepped.append(_norm(params))
            return result

        setattr(scaler, name, counted)
    return scaler, calls, stepped


def _norm(params: list) -> float:
    import torch

    grads = [p.grad.detach().double().flatten() for p in params if p.grad is not None]
    return float(torch.cat(grads).norm()) if grads else 0.0


def _step_visible() -> list:
    return [{"seed": 4, "sizes": [5, 10, 3], "batch": 4, "n_micro": 3, "loss": "mse", "dtype": "float16",
             "max_norm": 2.182},
            {"seed": 27, "sizes": [5, 10, 3], "batch": 5, "n_micro": 3, "loss": "ce", "dtype": "float16",
             "max_norm": 3.974},
            {"seed": 27, "sizes": [5, 10, 3], "batch": 5, "n_micro": 3, "loss": "ce", "dtype": "bfloat16",
             "max_norm": 0.318}]


def _step_answer(learner, case) -> dict:
    import torch

    model, x, y, loss_fn = mlp(case)
    dtype = getattr(torch, case["dtype"])
    params = list(model.parameters())
    optimizer = torch.optim.SGD(params, lr=STEP_LR)
    scaler, calls, stepped = _recording_scaler(dtype, params)
    for p in params:  # a previous step's gradients, as large as this step's scaled ones: the learner must clear them
        p.grad = torch.full_like(p, STALE_GRAD * scaler.get_scale())
    seen: list[str] = []
    hook = model[0].register_forward_hook(lambda m, i, out: seen.append(str(out.dtype).replace("torch.", "")))
    wrapped = SyncRecorder(model)
    before = torch.cat([p.detach().flatten() for p in params]).clone()
    loss = learner(wrapped, optimizer, scaler, x, y, loss_fn, case["n_micro"], case["max_norm"], "cpu", dtype)
    hook.remove()
    after = torch.cat([p.detach().flatten() for p in params])
    return {"loss": float(loss), "delta": (after - before).tolist(), "calls": calls, "seen": seen,
            "in_no_sync": wrapped.in_no_sync, "synced": wrapped.synced,
            "stepped_norm": stepped[-1] if stepped else None, "final_norm": _norm(params)}


def _same_step(tol: float):
    """Whether a step's update and loss are a known mistake's (fp32) update and loss, within ``tol``."""
    return lambda a, b: relative_gap(a["delta"], b["delta"]) <= tol and close(a["loss"], b["loss"], rel=tol)


def _step_score(case, answer, want) -> list[Part]:
    right, chunks, dtype = want["answer"], case["n_micro"], case["dtype"]
    label = _say("case_step", **case)
    tol = STEP_TOLERANCE[dtype]
    seen = answer["seen"]
    cast = len(seen) == chunks and all(d == dtype for d in seen)
    no_cast = bool(seen) and all(d == "float32" for d in seen)
    quiet, loud = answer["in_no_sync"], answer["synced"]
    synced = quiet == chunks - 1 and loud == 1
    every = chunks > 1 and quiet == 0
    calls = answer["calls"]
    scaler_ok = calls == {"scale": chunks, "unscale_": 1, "step": 1, "update": 1}
    per_micro = chunks > 1 and calls["step"] == calls["update"] == chunks
    no_unscale = calls["unscale_"] == 0 and calls["step"] == calls["update"] == 1
    gap = relative_gap(answer["delta"], right["delta"])
    name = None
    if gap > tol:
        name = _named(answer, want["mistakes"], _same_step(tol))
    limit = case["max_norm"] * (1 + 1e-3)
    if name == "no_clip" and answer["final_norm"] <= limit < (answer["stepped_norm"] or 0.0):
        name = "clip_after_step"  # the gradients were clipped, but after the optimizer had stepped with them

    def part(ok, message, mistake, label_key, weight=1.0):
        shown = _lines(_say(f"mistake.{mistake}"), message) if mistake and not ok else message
        return Part(ok, shown, weight, mistake=None if ok else mistake, label=_say(label_key))

    return [part(cast, _say("step_cast", case=label, dtype=dtype, found=sorted(set(seen)), n=len(seen)),
                 "no_autocast" if no_cast else None, "step_cast_label"),
            part(synced, _say("step_sync", case=label, expected=chunks - 1, quiet=quiet, synced=loud),
                 "sync_every_micro_batch" if every else None, "step_sync_label"),
            part(scaler_ok, _say("step_scaler", case=label, expected=chunks, found=calls),
                 "update_per_micro_batch" if per_micro else "clip_before_unscale" if no_unscale else None,
                 "step_scaler_label"),
            part(gap <= tol, _say("step_update", case=label, gap=gap * 100, tol=tol * 100), name, "step_update_label", 2.0),
            part(close(answer["loss"], right["loss"], rel=tol),
                 _say("expected", what=label + Message(" · ", " · ") + _say("full_loss"),
                      expected=f"{right['loss']:.5g}", found=f"{answer['loss']:.5g}"),
                 name if name in want["mistakes"] else None, "step_loss_label")]


# ---------------------------------------------------------------- 6. diagnosing an accumulation step
BUGS = ("ok", "stale", "unweighted", "equal_weights", "last_only", "sync_every", "never_sync")


def planted_step(bug: str, style: int):
    """An accumulation step ``step(model, loss_fn, inputs, targets, n_micro)`` with the planted ``bug``.

    ``style`` changes how the step is written, not what it does: bit 1 splits with ``torch.chunk`` instead of
    ``torch.tensor_split``, bit 2 clears by setting ``.grad = None``, bit 4 divides by the inverse share.
    """
    from contextlib import ExitStack

    def step(net, criterion, data, labels, pieces):
        import torch

        cut = torch.chunk if style & 1 else torch.tensor_split
        batches = list(zip(cut(data, pieces), cut(labels, pieces)))

        def wipe():
            if style & 2:
                for weight in net.parameters():
                    weight.grad = None
            else:
                net.zero_grad()

        if bug != "stale":
            wipe()
        running = []
        for k, (xb, yb) in enumerate(batches):
            final = k == len(batches) - 1
            silent = hasattr(net, "no_sync") and (bug == "never_sync" or (bug != "sync_every" and not final))
            if bug == "last_only":
                wipe()
            with ExitStack() as stack:
                if silent:
                    stack.enter_context(net.no_sync())
                value = criterion(net(xb), yb)
                if bug == "equal_weights":
                    value = value / pieces
                elif bug != "unweighted":
                    value = value / (data.shape[0] / xb.shape[0]) if style & 4 else value * xb.shape[0] / data.shape[0]
                value.backward()
            running.append(value.item())
        return sum(running)

    return step


def _audit_visible() -> list:
    return [{"bug": bug, "style": 0} for bug in BUGS]


def _audit_answer(learner, case) -> dict:
    """What the diagnosis says, and what it tried: a model with ``no_sync``, old values in ``.grad``, a batch that
    does not split into equal micro-batches (the conditions each planted bug needs to show)."""
    planted = planted_step(case["bug"], case["style"])
    tried = {"no_sync": False, "old_grads": False, "uneven": False}

    def step(net, criterion, data, labels, pieces):
        try:
            tried["no_sync"] |= hasattr(net, "no_sync")
            tried["old_grads"] |= any(p.grad is not None and bool(p.grad.ne(0).any()) for p in net.parameters())
            tried["uneven"] |= data.shape[0] % pieces != 0
        except Exception:  # an argument the planted step will reject anyway
            pass
        return planted(net, criterion, data, labels, pieces)

    said = learner(step)
    return {"said": said if isinstance(said, str) else repr(said), "tried": tried}


SYNC_BUGS = ("sync_every", "never_sync")


def _audit_mistake(bug: str, said: str, tried: dict) -> str | None:
    """The known mistake of a diagnosis that missed ``bug``, judged by what it tried."""
    if bug in SYNC_BUGS:
        if not tried["no_sync"]:
            return "no_sync_probe"
        if said == "ok":  # the gradients are right: only the count it did not read shows this bug
            return "synced_not_read" if bug == "never_sync" else "in_no_sync_not_read"
    if bug == "stale" and not tried["old_grads"]:
        return "no_stale_probe"
    if bug == "equal_weights" and not tried["uneven"]:
        return "even_splits_only"
    return None


def _audit_score(case, answer, want) -> Part:
    bug, said = case["bug"], answer["said"]
    label = _say(f"bug.{bug}")
    if said == bug:
        return Part(True, _say("audit_right", bug=bug), label=label)
    name = _audit_mistake(bug, said, answer["tried"])
    detail = _say("audit_wrong", bug=bug, said=said, style=case["style"], known=", ".join(BUGS))
    return Part(False, _lines(_say(f"mistake.{name}"), detail) if name else detail, mistake=name, label=label)


# ---------------------------------------------------------------- 7. planning a training run (stretch)
PLAN_KEYS = ("gpus", "stage", "recompute", "micro_batch")


def _plan_visible() -> list:
    def model(params, frozen, layers, hidden, heads, seq):
        return {"params": params, "frozen": frozen, "layers": layers, "hidden": hidden, "heads": heads, "seq": seq}

    return [{"model": model(1_300_000_000, 0, 24, 2048, 16, 2048), "profile": "rtx_4090", "global_batch": 32},
            {"model": model(6_700_000_000, 0, 32, 4096, 32, 4096), "profile": "h100_sxm", "global_batch": 64},
            {"model": model(13_000_000_000, 0, 40, 5120, 40, 2048), "profile": "a100_sxm_40gb", "global_batch": 96},
            {"model": model(350_000_000, 0, 24, 1024, 16, 4096), "profile": "a100_sxm_40gb", "global_batch": 32},
            {"model": model(13_000_000_000, 0, 40, 5120, 40, 512), "profile": "mi300x", "global_batch": 48},
            {"model": model(30_000_000_000, 0, 60, 6656, 52, 4096), "profile": "mi325x", "global_batch": 24},
            {"model": model(70_000_000_000, 0, 80, 8192, 64, 8192), "profile": "rtx_4090", "global_batch": 8},
            {"model": model(30_000_000_000, 29_400_000_000, 60, 6656, 52, 1024), "profile": "h100_sxm",
             "global_batch": 8},
            {"model": model(70_000_000_000, 69_650_000_000, 80, 8192, 64, 512), "profile": "h100_pcie",
             "global_batch": 96}]


def _plan_answer(learner, case) -> dict | None:
    result = learner(case["model"], case["profile"], case["global_batch"])
    if result is None:
        return None
    result = _need_dict(result, PLAN_KEYS, "plan_training")
    return {k: (str(result[k]) if k == "recompute" else _whole(result[k])) for k in PLAN_KEYS}


def _plan_score(case, answer, want) -> Part:
    right = want["answer"]
    m = case["model"]
    label = _say("case_plan", params=_count(m["params"]), frozen=_count(m["frozen"]), seq=m["seq"],
                 profile=case["profile"], batch=case["global_batch"])
    if answer == right:
        return Part(True, label, label=label)
    name = _named(answer, want["mistakes"], lambda a, b: a == b)
    detail = _say("expected", what=label, expected=right, found=answer)
    return Part(False, _lines(_say(f"mistake.{name}"), detail) if name else detail, mistake=name, label=label)


TASKS = {
    "breakdown": Task(title=_say("title.breakdown"), answer=_breakdown_answer, score=_breakdown_score,
                      visible=_breakdown_visible, kind="recall", level="warm-up",
                      mistakes=("no_master", "all_16_bit", "fp32_grads_ignored", "stage_off_by_one",
                                "stage_1_shards_nothing", "shard_everything", "frozen_trained", "frozen_left_out",
                                "frozen_unsharded", "not_bytes"),
                      rule=_say("rule.breakdown"), central=("no_master", "all_16_bit", "stage_off_by_one")),
    "saved": Task(title=_say("title.saved"), answer=_saved_answer, score=_saved_score, visible=_saved_visible,
                  kind="transfer", level="core",
                  mistakes=("shared_counted_twice", "one_per_activation", "input_forgotten", "weights_counted",
                            "last_segment_checkpointed", "even_segments", "ceil_segments", "fp32_bytes"),
                  rule=_say("rule.saved"), central=("shared_counted_twice", "one_per_activation")),
    "split": Task(title=_say("title.split"), answer=_split_answer, score=_split_score, visible=_split_visible,
                  kind="transfer", level="core",
                  mistakes=("weights_only", "overflow_layer_included", "budget_exclusive", "graph_cut",
                            "activations_not_moved", "second_part_not_placed"),
                  rule=_say("rule.split"), central=("graph_cut", "overflow_layer_included")),
    "scaler_log": Task(title=_say("title.scaler_log"), answer=_scaler_log_answer, score=_scaler_log_score,
                       visible=_scaler_log_visible, kind="transfer", level="core",
                       mistakes=("reset_only_on_growth", "interval_off_by_one", "growth_counted_as_skip",
                                 "factors_inverted", "next_growth_ignores_skips", "one_based"),
                       rule=_say("rule.scaler_log"), central=("reset_only_on_growth",)),
    "step": Task(title=_say("title.step"), answer=_step_answer, score=_step_score, visible=_step_visible,
                 given=lambda a: {k: a[k] for k in ("loss", "calls", "seen", "in_no_sync", "synced")},
                 kind="transfer", level="core",
                 mistakes=("no_clip", "clip_before_unscale", "clip_after_step", "unweighted", "equal_weights",
                           "stale_grads", "sync_every_micro_batch", "no_autocast", "update_per_micro_batch"),
                 rule=_say("rule.step"), central=("unweighted", "equal_weights", "update_per_micro_batch")),
    "audit": Task(title=_say("title.audit"), answer=_audit_answer, score=_audit_score, visible=_audit_visible,
                  given=lambda a: a["said"], kind="transfer", level="stretch",
                  mistakes=("no_sync_probe", "synced_not_read", "in_no_sync_not_read", "no_stale_probe",
                            "even_splits_only"),
                  rule=_say("rule.audit"), central=("no_sync_probe", "no_stale_probe", "even_splits_only")),
    "plan": Task(title=_say("title.plan"), answer=_plan_answer, score=_plan_score, visible=_plan_visible,
                 kind="transfer", level="stretch",
                 mistakes=("gb_for_gib", "whole_memory", "no_activations", "full_keeps_inputs_only",
                           "recompute_before_stage", "micro_batch_not_a_divisor", "smallest_micro_batch",
                           "powers_of_two_gpus", "frozen_trained"),
                 rule=_say("rule.plan"), central=("no_activations", "whole_memory")),
}
