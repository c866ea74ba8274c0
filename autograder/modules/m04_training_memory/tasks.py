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
    paper = [{"params": 7.5e9, "optimizer": "adam", "precision": "mixed", "stage": s, "gpus": 64} for s in range(4)]
    return paper + [{"params": 1.0e9, "optimizer": "adam", "precision": "fp32", "stage": 0, "gpus": 1},
                    {"params": 2.0e9, "optimizer": "adamw", "precision": "mixed_fp32_grads", "stage": 1, "gpus": 8},
                    {"params": 3.0e8, "optimizer": "momentum", "precision": "bf16", "stage": 2, "gpus": 4}]


def _breakdown_answer(learner, case) -> dict:
    result = _need_dict(learner(case["params"], case["optimizer"], case["precision"], case["stage"], case["gpus"]),
                        KEYS, "memory_breakdown")
    return {k: float(result[k]) for k in KEYS}


def _same_breakdown(a: dict, b: dict) -> bool:
    return all(close(a[k], b[k], rel=1e-6, abs_tol=1e-9) for k in KEYS)


def _breakdown_score(case, answer, want) -> Part:
    label = _say("case_breakdown", **case)
    right = want["answer"]
    if _same_breakdown(answer, right):
        return Part(True, label, label=label)
    name = _named(answer, want["mistakes"], _same_breakdown)
    wrong = [k for k in KEYS if not close(answer[k], right[k], rel=1e-6, abs_tol=1e-9)]
    detail = [_say("expected", what=label + Message(f"[{k}]", f"[{k}]"), expected=f"{right[k]:.6g}",
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


def placement(layers, learner, case) -> list[str]:
    """The device of each parameter when ``learner`` splits a copy of ``layers`` between 'cpu' and 'meta'."""
    model = learner(copy.deepcopy(layers), case["budget"], "cpu", "meta")
    return [p.device.type for p in model.parameters()]


def _split_visible() -> list:
    return [{"seed": 0, "widths": [8, 16, 16, 4], "budget": 4000, "batch": 5},
            {"seed": 1, "widths": [6, 12, 10, 8, 3], "budget": 7000, "batch": 4},
            {"seed": 2, "widths": [4, 6, 3], "budget": 400, "batch": 2},
            {"seed": 3, "widths": [5, 7, 2], "budget": 10**6, "batch": 3}]


def _split_answer(learner, case) -> dict:
    layers, x = sequence(case)
    record: dict = {}
    try:  # where the parameters sit, and where the output lands, with a second device that is visibly another one
        model = learner(copy.deepcopy(layers), case["budget"], "cpu", "meta")
        record["devices"] = [p.device.type for p in model.parameters()]
        out = model(x)
        record["out_device"] = out.device.type
    except Exception as exc:  # a forward that does not move the activations fails across two devices
        record["meta_error"] = f"{type(exc).__name__}: {exc}"
    model = learner(copy.deepcopy(layers), case["budget"], "cpu", "cpu")
    out = model(x)
    out.sum().backward()
    params = list(model.parameters())
    record["out"] = out.detach().cpu().tolist()
    record["grads"] = [v for p in params for v in (p.grad.flatten().tolist() if p.grad is not None else [])]
    record["no_grad"] = sum(p.grad is None for p in params)
    return record


def _split_score(case, answer, want) -> list[Part]:
    import torch

    right = want["answer"]
    label = _say("case_split", **case)
    devices = answer.get("devices")
    placed = devices == right["devices"] and answer.get("out_device") == "meta"
    placement_part = Part(placed, _say("split_placement", case=label, expected=right["devices"], found=devices,
                                       out=answer.get("out_device")), label=_say("split_placement_label"))
    if not placed:
        name = None
        both_sides = "cpu" in right["devices"] and "meta" in right["devices"]
        if "meta_error" in answer and both_sides:
            name = "activations_not_moved"
        elif devices is not None and both_sides and set(devices) == {"cpu"}:
            name = "second_part_not_placed"
        elif devices is not None:
            name = _named({"devices": devices}, want["mistakes"], lambda a, b: a == b)
        if name:
            placement_part = Part(False, _lines(_say(f"mistake.{name}"), placement_part.message), mistake=name,
                                  label=placement_part.label)
    out, got = torch.tensor(right["out"]), torch.tensor(answer["out"])
    same = got.shape == out.shape and torch.allclose(got, out, rtol=1e-5, atol=1e-7)
    grads, got_grads = torch.tensor(right["grads"]), torch.tensor(answer["grads"])
    grads_ok = answer["no_grad"] == 0 and got_grads.shape == grads.shape and torch.allclose(got_grads, grads,
                                                                                              rtol=1e-4, atol=1e-6)
    cut = answer["no_grad"] > 0
    grads_message = _say("split_grads", case=label, missing=answer["no_grad"])
    return [placement_part,
            Part(same, _say("split_output", case=label), label=_say("split_output_label")),
            Part(grads_ok, _lines(_say("mistake.graph_cut"), grads_message) if cut else grads_message,
                 mistake="graph_cut" if cut else None, label=_say("split_grads_label"))]


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
        detail = _say("expected", what=label + Message(f"· {part}", f"· {part}"),
                      expected=", ".join(str(right[k]) for k in shown[part]),
                      found=", ".join(str(answer[k]) for k in shown[part]))
        parts.append(Part(ok, detail if ok or not name else _lines(_say(f"mistake.{name}"), detail),
                          mistake=None if ok else name, label=_say(f"log_{part}", case=label)))
    return parts


# ---------------------------------------------------------------- 5. one complete training step
STEP_LR = 1.0  # the check's optimizer: SGD without momentum, so an update is -lr x the clipped gradient
STALE_GRAD = 1.0  # what the check leaves in every .grad before the step (a previous step's gradients)
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


def _recording_scaler(dtype):
    """A CPU ``torch.amp.GradScaler`` (on for fp16, a pass-through otherwise) that counts its calls."""
    from .lesson import grad_scaler

    scaler = grad_scaler("cpu", dtype, init_scale=STEP_INIT_SCALE)
    calls = {"scale": 0, "unscale_": 0, "step": 0, "update": 0}
    for name in calls:
        original = getattr(scaler, name)

        def counted(*args, _original=original, _name=name, **kwargs):
            calls[_name] += 1
            return _original(*args, **kwargs)

        setattr(scaler, name, counted)
    return scaler, calls


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
    for p in model.parameters():  # gradients left by a previous step: the learner must clear them
        p.grad = torch.full_like(p, STALE_GRAD)
    optimizer = torch.optim.SGD(model.parameters(), lr=STEP_LR)
    scaler, calls = _recording_scaler(dtype)
    seen: list[str] = []
    hook = model[0].register_forward_hook(lambda m, i, out: seen.append(str(out.dtype).replace("torch.", "")))
    wrapped = SyncRecorder(model)
    before = torch.cat([p.detach().flatten() for p in model.parameters()]).clone()
    loss = learner(wrapped, optimizer, scaler, x, y, loss_fn, case["n_micro"], case["max_norm"], "cpu", dtype)
    hook.remove()
    after = torch.cat([p.detach().flatten() for p in model.parameters()])
    return {"loss": float(loss), "delta": (after - before).tolist(), "calls": calls, "seen": seen,
            "in_no_sync": wrapped.in_no_sync, "synced": wrapped.synced}


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
    gap = relative_gap(answer["delta"], right["delta"])
    name = None
    if gap > tol:
        name = _named(answer, want["mistakes"], lambda a, b: relative_gap(a["delta"], b["delta"]) <= tol)

    def part(ok, message, mistake, label_key, weight=1.0):
        shown = _lines(_say(f"mistake.{mistake}"), message) if mistake and not ok else message
        return Part(ok, shown, weight, mistake=None if ok else mistake, label=_say(label_key))

    return [part(cast, _say("step_cast", case=label, dtype=dtype, found=sorted(set(seen)), n=len(seen)),
                 "no_autocast" if no_cast else None, "step_cast_label"),
            part(synced, _say("step_sync", case=label, expected=chunks - 1, quiet=quiet, synced=loud),
                 "sync_every_micro_batch" if every else None, "step_sync_label"),
            part(scaler_ok, _say("step_scaler", case=label, expected=chunks, found=calls),
                 "update_per_micro_batch" if per_micro else None, "step_scaler_label"),
            part(gap <= tol, _say("step_update", case=label, gap=gap * 100, tol=tol * 100), name, "step_update_label", 2.0),
            part(close(answer["loss"], right["loss"], rel=tol), _say("expected", what=label + _say("full_loss"),
                 expected=f"{right['loss']:.5g}", found=f"{answer['loss']:.5g}"), None, "step_loss_label")]


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
    said = learner(planted_step(case["bug"], case["style"]))
    return {"said": said if isinstance(said, str) else repr(said)}


AUDIT_MISTAKES = {"equal_weights": {"ok": "even_splits_only"}, "stale": {"ok": "no_stale_probe"},
                  "sync_every": {"ok": "no_sync_probe"}, "never_sync": {"ok": "no_sync_probe"}}


def _audit_score(case, answer, want) -> Part:
    bug, said = case["bug"], answer["said"]
    label = _say(f"bug.{bug}")
    if said == bug:
        return Part(True, _say("audit_right", bug=bug), label=label)
    name = AUDIT_MISTAKES.get(bug, {}).get(said)
    detail = _say("audit_wrong", bug=bug, said=said, style=case["style"], known=", ".join(BUGS))
    return Part(False, _lines(_say(f"mistake.{name}"), detail) if name else detail, mistake=name, label=label)


# ---------------------------------------------------------------- 7. planning a training run (stretch)
PLAN_KEYS = ("gpus", "stage", "recompute", "micro_batch")


def _plan_visible() -> list:
    return [{"model": {"params": 1_300_000_000, "layers": 24, "hidden": 2048, "heads": 16, "seq": 2048},
             "profile": "rtx_4090", "global_batch": 32},
            {"model": {"params": 6_700_000_000, "layers": 32, "hidden": 4096, "heads": 32, "seq": 4096},
             "profile": "h100_sxm", "global_batch": 64},
            {"model": {"params": 13_000_000_000, "layers": 40, "hidden": 5120, "heads": 40, "seq": 2048},
             "profile": "a100_sxm_40gb", "global_batch": 96},
            {"model": {"params": 350_000_000, "layers": 24, "hidden": 1024, "heads": 16, "seq": 4096},
             "profile": "a100_sxm_40gb", "global_batch": 32},
            {"model": {"params": 13_000_000_000, "layers": 40, "hidden": 5120, "heads": 40, "seq": 512},
             "profile": "mi300x", "global_batch": 48},
            {"model": {"params": 70_000_000_000, "layers": 80, "hidden": 8192, "heads": 64, "seq": 8192},
             "profile": "rtx_4090", "global_batch": 8}]


def _plan_answer(learner, case) -> dict | None:
    result = learner(case["model"], case["profile"], case["global_batch"])
    if result is None:
        return None
    result = _need_dict(result, PLAN_KEYS, "plan_training")
    return {k: (str(result[k]) if k == "recompute" else _whole(result[k])) for k in PLAN_KEYS}


def _plan_score(case, answer, want) -> Part:
    right = want["answer"]
    m = case["model"]
    label = _say("case_plan", params=m["params"] / 1e9, seq=m["seq"], profile=case["profile"],
                 batch=case["global_batch"])
    if answer == right:
        return Part(True, label, label=label)
    name = _named(answer, want["mistakes"], lambda a, b: a == b)
    detail = _say("expected", what=label, expected=right, found=answer)
    return Part(False, _lines(_say(f"mistake.{name}"), detail) if name else detail, mistake=name, label=label)


TASKS = {
    "breakdown": Task(title=_say("title.breakdown"), answer=_breakdown_answer, score=_breakdown_score,
                      visible=_breakdown_visible, kind="recall", level="warm-up",
                      mistakes=("no_master", "all_16_bit", "fp32_grads_ignored", "stage_off_by_one",
                                "shard_everything")),
    "saved": Task(title=_say("title.saved"), answer=_saved_answer, score=_saved_score, visible=_saved_visible,
                  kind="transfer", level="core",
                  mistakes=("shared_counted_twice", "one_per_activation", "input_forgotten", "weights_counted",
                            "last_segment_checkpointed", "even_segments", "fp32_bytes")),
    "split": Task(title=_say("title.split"), answer=_split_answer, score=_split_score, visible=_split_visible,
                  kind="transfer", level="core",
                  mistakes=("weights_only", "overflow_layer_included", "graph_cut", "activations_not_moved",
                            "second_part_not_placed")),
    "scaler_log": Task(title=_say("title.scaler_log"), answer=_scaler_log_answer, score=_scaler_log_score,
                       visible=_scaler_log_visible, kind="transfer", level="core",
                       mistakes=("reset_only_on_growth", "interval_off_by_one", "growth_counted_as_skip",
                                 "factors_inverted", "next_growth_ignores_skips", "one_based")),
    "step": Task(title=_say("title.step"), answer=_step_answer, score=_step_score, visible=_step_visible,
                 kind="transfer", level="core",
                 mistakes=("no_clip", "clip_before_unscale", "unweighted", "equal_weights", "stale_grads",
                           "sync_every_micro_batch", "no_autocast", "update_per_micro_batch")),
    "audit": Task(title=_say("title.audit"), answer=_audit_answer, score=_audit_score, visible=_audit_visible,
                  kind="transfer", level="stretch", mistakes=("no_sync_probe", "no_stale_probe", "even_splits_only")),
    "plan": Task(title=_say("title.plan"), answer=_plan_answer, score=_plan_score, visible=_plan_visible,
                 kind="transfer", level="stretch",
                 mistakes=("gb_for_gib", "whole_memory", "no_activations", "full_keeps_inputs_only",
                           "recompute_before_stage", "micro_batch_not_a_divisor")),
}
