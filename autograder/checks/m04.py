"""Checks of module 04 (training memory): budgets, GPU counts, saved tensors, accumulation,
loss scaling, a mixed-precision step and a model split across two devices.

Models and data are rebuilt from small JSON cases (shapes and seeds), so ``score`` can
recompute every reference value outside the learner's kernel. DDP's ``no_sync`` is
faked by :class:`SyncRecorder`; the mixed-precision task runs on the best device here
and is graded against the tolerance for its number format (data/m04_amp.yaml).
"""
from __future__ import annotations

import copy
import math
import numbers
from contextlib import contextmanager
from fractions import Fraction
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

from ..i18n import Message, msg
from .core import Part, Task

KEYS = ("weights", "gradients", "optimizer", "total")
OPTIMIZERS = ("sgd", "momentum", "adam", "adamw")
PRECISIONS = ("fp32", "mixed", "bf16")
AMP_DATA = Path(__file__).resolve().parent.parent / "data" / "m04_amp.yaml"
BUDGET_DATA = AMP_DATA.with_name("m04_memory.yaml")


def _say(key: str, **values) -> Message:
    """Catalogued message ``m04.key``; values that are Messages are filled in per language."""
    template = msg(f"m04.{key}")
    ko = {k: v.ko if isinstance(v, Message) else v for k, v in values.items()}
    en = {k: v.en if isinstance(v, Message) else v for k, v in values.items()}
    return Message(template.ko.format(**ko), template.en.format(**en))


def _close(a: float, b: float, rel: float = 1e-6, abs_tol: float = 0.0) -> bool:
    return isinstance(a, (int, float)) and math.isclose(a, b, rel_tol=rel, abs_tol=abs_tol)


def _dict_answer(result: Any, keys: tuple, what: str) -> dict:
    if not isinstance(result, dict) or not all(k in result for k in keys):
        raise ValueError(_say("need_dict", what=what, keys=", ".join(keys)).text())
    return {k: float(result[k]) for k in keys}


# ---------------------------------------------------------------- 1. memory breakdown
def _breakdown_visible() -> list:
    paper = [{"params": 7.5e9, "optimizer": "adam", "precision": "mixed", "stage": s, "gpus": 64} for s in range(4)]
    return paper + [{"params": 1.0e9, "optimizer": "adam", "precision": "fp32", "stage": 0, "gpus": 1},
                    {"params": 3.0e8, "optimizer": "sgd", "precision": "fp32", "stage": 2, "gpus": 4}]


def _breakdown_hidden(rng) -> list:
    cases = []
    for _ in range(10):
        cases.append({"params": float(rng.randrange(10**6, 10**12)), "optimizer": rng.choice(OPTIMIZERS),
                      "precision": rng.choice(PRECISIONS), "stage": rng.randrange(4),
                      "gpus": rng.choice([1, 2, 3, 6, 8, 64, 100, 1024])})
    cases.append({"params": 0.0, "optimizer": "adamw", "precision": "mixed", "stage": 3, "gpus": 8})
    cases.append({"params": 1.3e9, "optimizer": "momentum", "precision": "bf16", "stage": 1, "gpus": 1})
    return cases


def _breakdown_answer(learner, case) -> dict:
    result = learner(case["params"], case["optimizer"], case["precision"], case["stage"], case["gpus"])
    return _dict_answer(result, KEYS, "memory_breakdown")


def _breakdown_score(case, answer) -> list[Part]:
    from ..answers.m04 import memory_breakdown

    want = memory_breakdown(case["params"], case["optimizer"], case["precision"], case["stage"], case["gpus"])
    label = _say("case_breakdown", **case)
    return [Part(_close(answer[k], want[k], abs_tol=1e-9),
                 _say("expected", what=label + Message(f"[{k}]", f"[{k}]"),
                      expected=f"{want[k]:.6g}", found=f"{answer[k]:.6g}")) for k in KEYS]


# ---------------------------------------------------------------- 2. GPUs needed
def _gpu_profiles() -> list[str]:
    from .. import profiles

    return sorted(p.id for kind in ("gpu", "tpu") for p in profiles.all_of(kind) if p.memory_gb)


def _gpus_visible() -> list:
    return [{"params": 7_000_000_000, "profile": "h100_sxm"}, {"params": 70_000_000_000, "profile": "a100_sxm_80gb"},
            {"params": 125_000_000, "profile": "rtx_4090"}]


def _gpus_hidden(rng) -> list:
    from .. import profiles

    plan = yaml.safe_load(BUDGET_DATA.read_text(encoding="utf-8"))["planning"]  # answers/ is hidden from learners
    cases = []
    ids = _gpu_profiles()
    while len(cases) < 10:
        pid = rng.choice(ids)
        params = int(10 ** rng.uniform(8, 12.3))
        per_gpu = Fraction(str(plan["usable_fraction"])) * Fraction(str(profiles.get(pid).memory_gb)) * 10**9
        ratios = [Fraction(params * b) / per_gpu for b in (plan["train_bytes_per_param"], plan["infer_bytes_per_param"])]
        if all(abs(r - round(r)) > Fraction(1, 10**6) for r in ratios):  # keep clear of exact boundaries
            cases.append({"params": params, "profile": pid})
    return cases


def _gpus_answer(learner, case) -> dict:
    result = learner(case["params"], case["profile"])
    if not isinstance(result, dict) or not {"train", "infer"} <= set(result):
        raise ValueError(_say("need_dict", what="gpus_needed", keys="train, infer").text())
    def plain(v):  # numpy and torch integers count as integers; anything else is shown as found
        return int(v) if isinstance(v, numbers.Integral) else float(v) if isinstance(v, numbers.Real) else str(v)

    return {k: plain(result[k]) for k in ("train", "infer")}


def _gpus_score(case, answer) -> list[Part]:
    from ..answers.m04 import gpus_needed

    want = gpus_needed(case["params"], case["profile"])
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


def _saved_hidden(rng) -> list:
    return [{"dims": [rng.choice([8, 24, 40]), rng.choice([32, 96])], "depth": rng.randrange(3, 7),
             "act": rng.choice(["relu", "gelu", "tanh"]), "batch": rng.randrange(2, 33),
             "dtype": rng.choice(["float32", "bfloat16"]), "segments": rng.randrange(2, 4)} for _ in range(4)]


def _saved_answer(learner, case) -> dict:
    model, x = blocks(case)
    plain = learner(model, x)
    checkpointed = learner(Checkpointed(model, case["segments"]), x)
    return {"plain": int(plain), "checkpointed": int(checkpointed)}


def _saved_score(case, answer) -> list[Part]:
    from ..answers.m04 import saved_bytes

    model, x = blocks(case)
    plain = saved_bytes(model, x)
    ck = saved_bytes(Checkpointed(model, case["segments"]), x)
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


class SyncRecorder:
    """Stands in for ``DistributedDataParallel``: counts forwards run inside and outside ``no_sync()``."""

    def __init__(self, module):
        self.module = module
        self.quiet = False
        self.in_no_sync = 0
        self.synced = 0

    @contextmanager
    def no_sync(self):
        self.quiet = True
        try:
            yield
        finally:
            self.quiet = False

    def __call__(self, x):
        if self.quiet:
            self.in_no_sync += 1
        else:
            self.synced += 1
        return self.module(x)

    def parameters(self):
        return self.module.parameters()

    def zero_grad(self, set_to_none: bool = True):
        self.module.zero_grad(set_to_none=set_to_none)


def _accumulate_visible() -> list:
    return [{"seed": 0, "sizes": [6, 16, 3], "batch": 32, "n_micro": 4, "loss": "mse"},
            {"seed": 1, "sizes": [5, 8, 4], "batch": 10, "n_micro": 3, "loss": "ce"}]


def _accumulate_hidden(rng) -> list:
    cases = []
    for _ in range(4):
        batch = rng.randrange(5, 40)
        cases.append({"seed": rng.randrange(10**6), "sizes": [rng.randrange(2, 9), rng.randrange(4, 17),
                                                              rng.randrange(2, 6)],
                      "batch": batch, "n_micro": rng.randrange(2, min(batch, 7) + 1), "loss": rng.choice(["mse", "ce"])})
    cases.append({"seed": 7, "sizes": [3, 4, 2], "batch": 9, "n_micro": 1, "loss": "mse"})
    return cases


def _accumulate_answer(learner, case) -> dict:
    import torch

    model, x, y, loss_fn = mlp(case)
    for p in model.parameters():  # stale gradients from an earlier step: the learner must clear them
        p.grad = torch.ones_like(p)
    wrapped = SyncRecorder(model)
    loss = learner(wrapped, loss_fn, x, y, case["n_micro"])
    grads = [v for p in model.parameters() for v in (p.grad.flatten().tolist() if p.grad is not None else [])]
    return {"loss": float(loss), "grads": grads, "in_no_sync": wrapped.in_no_sync, "synced": wrapped.synced}


def _accumulate_score(case, answer) -> list[Part]:
    import torch

    model, x, y, loss_fn = mlp(case)
    loss = loss_fn(model(x), y)
    loss.backward()
    want = torch.cat([p.grad.flatten() for p in model.parameters()])
    got = torch.tensor(answer["grads"], dtype=torch.float32)
    same = got.shape == want.shape and torch.allclose(got, want, rtol=1e-4, atol=1e-6)
    worst = (got - want).abs().max().item() if got.shape == want.shape else float("nan")
    chunks = min(case["n_micro"], case["batch"])
    label = _say("case_accumulate", **case)
    return [Part(same, _say("grads_differ", case=label, worst=f"{worst:.3g}"), 3),
            Part(_close(answer["loss"], loss.item(), rel=1e-4),
                 _say("expected", what=label + _say("full_loss"), expected=f"{loss.item():.6g}",
                      found=f"{answer['loss']:.6g}")),
            Part(answer["in_no_sync"] == chunks - 1 and answer["synced"] == 1,
                 _say("no_sync", expected=chunks - 1, quiet=answer["in_no_sync"], synced=answer["synced"]))]


# ---------------------------------------------------------------- 5. dynamic loss scaler
def _steps(rng, n: int, bad: float) -> list:
    out = []
    for _ in range(n):
        grads = [round(rng.uniform(-4, 4), 3) for _ in range(3)]
        if rng.random() < bad:
            grads[rng.randrange(3)] = rng.choice(["inf", "-inf", "nan"])
        out.append(grads)
    return out


def _scaler_visible() -> list:
    ok = [0.5, -1.0, 2.0]
    steps = [ok, ok, [1.0, "inf", 0.0], ok, ok, ok, ["nan", 1.0, 1.0], ok, ok]
    return [{"args": {}, "loss": 1.5, "steps": [ok, ok]},
            {"args": {"init_scale": 8.0, "growth_factor": 2.0, "backoff_factor": 0.5, "growth_interval": 3},
             "loss": 0.25, "steps": steps}]


def _scaler_hidden(rng) -> list:
    cases = [{"args": {"init_scale": float(rng.choice([2**k for k in range(4, 17)])),
                       "growth_factor": rng.choice([2.0, 3.0, 1.5]), "backoff_factor": rng.choice([0.5, 0.25, 0.1]),
                       "growth_interval": rng.randrange(1, 6)},
              "loss": round(rng.uniform(0.1, 5), 3), "steps": _steps(rng, 16, 0.3)} for _ in range(3)]
    cases.append({"args": {"init_scale": 1e308, "growth_factor": 10.0, "backoff_factor": 0.5, "growth_interval": 1},
                  "loss": 1.0, "steps": [[1.0, 2.0], [1.0, 2.0], ["inf", 0.0], [1.0, 2.0]]})
    return cases


def _scaler_answer(learner, case) -> list:
    scaler = learner(**case["args"])
    trace = []
    for grads in case["steps"]:
        scaled_loss = float(scaler.scale(case["loss"]))
        result = scaler.step([float(g) for g in grads])
        trace.append({"scaled_loss": scaled_loss, "result": None if result is None else [float(g) for g in result],
                      "scale": float(scaler.get_scale())})
    return trace


def _scaler_score(case, answer) -> list[Part]:
    from ..answers.m04 import DynamicLossScaler

    ref = DynamicLossScaler(**case["args"])
    parts = []
    for i, (grads, got) in enumerate(zip(case["steps"], answer)):
        want = {"scaled_loss": ref.scale(case["loss"]), "result": ref.step([float(g) for g in grads]),
                "scale": ref.get_scale()}
        same_result = (want["result"] is None and got["result"] is None) or (
            want["result"] is not None and got["result"] is not None and len(got["result"]) == len(want["result"])
            and all(_close(a, b, rel=1e-9, abs_tol=1e-300) for a, b in zip(got["result"], want["result"])))
        ok = same_result and _close(got["scale"], want["scale"], rel=1e-12) and \
            _close(got["scaled_loss"], want["scaled_loss"], rel=1e-12)
        parts.append(Part(ok, _say("scaler_step", step=i + 1, args=str(case["args"]), grads=str(grads),
                                   expected=str(want), found=str(got))))
    if len(answer) != len(case["steps"]):
        parts.append(Part(False, _say("scaler_length", expected=len(case["steps"]), found=len(answer))))
    return parts


# ---------------------------------------------------------------- 6. mixed-precision step
@lru_cache(maxsize=1)
def amp_band() -> dict:
    """Steps, per-format tolerance and the required loss drop (data/m04_amp.yaml)."""
    return yaml.safe_load(AMP_DATA.read_text(encoding="utf-8"))


def _amp_problem(seed: int, device: str):
    import torch

    case = {"seed": seed, "sizes": [32, 64, 64, 10], "batch": 64, "loss": "ce"}
    model, x, y, loss_fn = mlp(case)
    model = model.to(device)
    return model, torch.optim.AdamW(model.parameters(), lr=3e-3), x.to(device), y.to(device), loss_fn


def _recording_scaler(device: str, dtype):
    from ..m04_memory import grad_scaler

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


def _amp_hidden(rng) -> list:
    return [{"seed": rng.randrange(1, 10**6), "dtype": "auto"}, {"seed": rng.randrange(1, 10**6), "dtype": "other"}]


def _amp_dtype(case: dict, device: str):
    import torch

    from ..m04_memory import amp_dtype, amp_usable

    chosen = amp_dtype(device)
    if case["dtype"] == "other" and chosen is not None:
        other = torch.float16 if chosen == torch.bfloat16 else torch.bfloat16
        if amp_usable(torch, device, other):
            chosen = other
    return chosen


def _amp_answer(learner, case) -> dict:
    import torch

    from ..hardware import best_device

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


def _amp_score(case, answer) -> list[Part]:
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


def _split_hidden(rng) -> list:
    cases = []
    for _ in range(3):
        widths = [rng.randrange(2, 12) for _ in range(rng.randrange(3, 6))]
        cases.append({"seed": rng.randrange(10**6), "widths": widths, "split": rng.randrange(1, 2 * (len(widths) - 1)),
                      "batch": rng.randrange(1, 9)})
    cases.append({"seed": 5, "widths": [3, 5, 2], "split": 0, "batch": 3})
    cases.append({"seed": 6, "widths": [3, 5, 2], "split": 4, "batch": 3})
    return cases


def _split_answer(learner, case) -> dict:
    from ..hardware import best_device

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


def _split_score(case, answer) -> list[Part]:
    import torch

    layers, x = sequence(case)
    out = layers(x)
    out.sum().backward()
    want_grads = torch.cat([p.grad.flatten() for p in layers.parameters()])
    got = torch.tensor(answer["out"])
    exact = answer["first"] == "cpu"
    same = got.shape == out.shape and (torch.equal(got, out.detach()) if exact
                                       else torch.allclose(got, out.detach(), rtol=1e-4, atol=1e-5))
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
                      visible=_breakdown_visible, hidden=_breakdown_hidden),
    "gpus": Task(title=_say("title.gpus"), answer=_gpus_answer, score=_gpus_score,
                 visible=_gpus_visible, hidden=_gpus_hidden),
    "saved": Task(title=_say("title.saved"), answer=_saved_answer, score=_saved_score,
                  visible=_saved_visible, hidden=_saved_hidden),
    "accumulate": Task(title=_say("title.accumulate"), answer=_accumulate_answer, score=_accumulate_score,
                       visible=_accumulate_visible, hidden=_accumulate_hidden),
    "scaler": Task(title=_say("title.scaler"), answer=_scaler_answer, score=_scaler_score,
                   visible=_scaler_visible, hidden=_scaler_hidden),
    "amp": Task(title=_say("title.amp"), answer=_amp_answer, score=_amp_score,
                visible=_amp_visible, hidden=_amp_hidden),
    "split": Task(title=_say("title.split"), answer=_split_answer, score=_split_score,
                  visible=_split_visible, hidden=_split_hidden),
}
