"""Reference answers, known mistakes and hidden cases of module 04 (training memory).

The expected answer of a case is ``{"answer": ..., "mistakes": {name: ...}}``: the reference's answer and what
each catalogued wrong answer (``MISTAKES``) gives on the same case, so that ``score`` can name a mistake by what
it produces without holding the reference itself.
"""
from __future__ import annotations

from contextlib import nullcontext
from fractions import Fraction

from autograder import knowledge, profiles
from autograder.checks.core import canonical
from autograder.fakes.ddp import SyncRecorder
from autograder.knowledge import bytes_per_param
from autograder.modules.m04_training_memory import tasks
from autograder.modules.m04_training_memory.data import table
from autograder.modules.m04_training_memory.lesson import activation_estimate, activation_bytes

ADAM_MIXED = sum(knowledge.recipe_bytes("adam_mixed").values())  # 16 bytes per parameter (ZeRO paper, Section 3.1)


def data() -> dict:
    """ZeRO stages, activations and the planning rule (``data/memory.yaml``)."""
    return table("memory")


def _choice(value, options, what: str):
    if value not in options:
        raise ValueError(f"{what}은(는) {sorted(options)} 중 하나여야 합니다 / "
                         f"{what} must be one of {sorted(options)}: {value!r}")
    return options[value]


# ---------------------------------------------------------------- task 1: breakdown
STAGES = {stage: tuple(parts) for stage, parts in data()["zero_stages"].items()}  # what each ZeRO stage shards


def _per_gpu(n_params, n_frozen, optimizer: str, precision: str, zero_stage: int, n_gpus: int, *, shards=None,
             per_param=None, frozen_sharded=True) -> dict:
    """Bytes per GPU of weights, gradients and optimizer states, and their total, by the rule of task 1.

    Trained parameters keep weights, gradients, the fp32 master copy (mixed precision) and the optimizer states;
    frozen ones keep their weights only. ZeRO stage 1 shards the optimizer states over ``n_gpus``, stage 2 also the
    gradients, stage 3 also the weights, frozen ones included (ZeRO paper, Section 5). The keyword arguments switch
    one part of the rule to a known mistake (see ``MISTAKES``).
    """
    shards = (shards or STAGES)[zero_stage]
    b = per_param or bytes_per_param(precision, optimizer)
    trained = n_params - n_frozen
    out = {k: trained * v / (n_gpus if k in shards else 1) for k, v in b.items()}
    for k in knowledge.table()["frozen_keeps"]:  # a frozen parameter's weight
        out[k] += n_frozen * b[k] / (n_gpus if k in shards and frozen_sharded else 1)
    out["total"] = out["weights"] + out["gradients"] + out["optimizer"]
    return out


def memory_breakdown(n_params, n_frozen, optimizer: str, precision: str, zero_stage: int, n_gpus: int) -> dict:
    """Bytes per GPU of weights, gradients and optimizer states (fp32 master included) and their total, when
    ``n_frozen`` of the ``n_params`` parameters are frozen (weights only)."""
    _choice(precision, knowledge.table()["precisions"], "precision")
    _choice(optimizer, knowledge.table()["optimizers"], "optimizer")
    _choice(int(zero_stage), data()["zero_stages"], "zero_stage")
    if n_gpus < 1 or not 0 <= n_frozen <= n_params:
        raise ValueError(f"n_gpus >= 1, 0 <= n_frozen <= n_params 이어야 합니다 / need n_gpus >= 1 and "
                         f"0 <= n_frozen <= n_params: {n_gpus!r}, {n_frozen!r}, {n_params!r}")
    return _per_gpu(n_params, n_frozen, optimizer, precision, int(zero_stage), n_gpus)


def _no_master(n, frozen, opt, prec, stage, gpus):
    b = bytes_per_param(prec, opt)
    b["optimizer"] -= knowledge.table()["precisions"][prec]["master"]
    return _per_gpu(n, frozen, opt, prec, stage, gpus, per_param=b)


def _all_16_bit(n, frozen, opt, prec, stage, gpus):
    return _per_gpu(n, frozen, opt, prec, stage, gpus,
                    per_param=bytes_per_param("bf16" if prec.startswith("mixed") else prec, opt))


def _fp32_grads_ignored(n, frozen, opt, prec, stage, gpus):
    return memory_breakdown(n, frozen, opt, "mixed" if prec == "mixed_fp32_grads" else prec, stage, gpus)


def _stage_off_by_one(n, frozen, opt, prec, stage, gpus):
    return _per_gpu(n, frozen, opt, prec, stage, gpus, shards={s: STAGES[min(s + 1, 3)] for s in STAGES})


def _stage_1_shards_nothing(n, frozen, opt, prec, stage, gpus):
    return _per_gpu(n, frozen, opt, prec, stage, gpus, shards={**STAGES, 1: ()})


def _shard_everything(n, frozen, opt, prec, stage, gpus):
    return memory_breakdown(n, frozen, opt, prec, 3 if stage else 0, gpus)


def _frozen_trained(n, frozen, opt, prec, stage, gpus):
    return memory_breakdown(n, 0, opt, prec, stage, gpus)


def _frozen_left_out(n, frozen, opt, prec, stage, gpus):
    return memory_breakdown(n - frozen, 0, opt, prec, stage, gpus)


def _frozen_unsharded(n, frozen, opt, prec, stage, gpus):
    return _per_gpu(n, frozen, opt, prec, stage, gpus, frozen_sharded=False)


def _in_gib(n, frozen, opt, prec, stage, gpus):
    return {k: v / 2**30 for k, v in memory_breakdown(n, frozen, opt, prec, stage, gpus).items()}


# ---------------------------------------------------------------- task 2: saved for backward
SAVE_INPUT_AND_OUTPUT = ("gelu", "silu")  # save their input; the next Linear saves their output


def predict_saved(d: int, h: int, depth: int, act: str, batch: int, dtype: str, segments: int) -> dict:
    """Bytes ``depth`` blocks (Linear(d, h), act, Linear(h, d)) save for backward, plain and with checkpoint_sequential."""
    size = {"float32": 4, "bfloat16": 2}[dtype]
    block = batch * (d + (2 if act in SAVE_INPUT_AND_OUTPUT else 1) * h) * size  # Linear 1's input + the hidden
    boundary = batch * d * size  # what a checkpointed segment keeps: its input
    per_segment = depth // segments  # checkpoint_sequential's segment size; the last segment takes the rest
    last = depth - per_segment * (segments - 1)
    return {"plain": depth * block, "checkpointed": (segments - 1) * boundary + last * block}


def measured_saved(case) -> dict:
    """What saved-tensor hooks count for the case's blocks, plain and checkpointed (the lesson's probe)."""
    model, x = tasks.blocks(case)
    return {"plain": activation_bytes(model, x),
            "checkpointed": activation_bytes(tasks.Checkpointed(model, case["segments"]), x)}


def _shared_counted_twice(d, h, depth, act, batch, dtype, segments):
    return predict_saved(d, h, depth, "gelu", batch, dtype, segments)


def _one_per_activation(d, h, depth, act, batch, dtype, segments):
    return predict_saved(d, h, depth, "relu", batch, dtype, segments)


def _input_forgotten(d, h, depth, act, batch, dtype, segments):
    right = predict_saved(d, h, depth, act, batch, dtype, segments)
    boundary = batch * d * (2 if dtype == "bfloat16" else 4)
    return {k: v - boundary for k, v in right.items()}


def _weights_counted(d, h, depth, act, batch, dtype, segments):
    right = predict_saved(d, h, depth, act, batch, dtype, segments)
    weights = 2 * d * h * (2 if dtype == "bfloat16" else 4)  # the two weight matrices of a block
    last = depth - depth // segments * (segments - 1)
    return {"plain": right["plain"] + depth * weights, "checkpointed": right["checkpointed"] + last * weights}


def _last_segment_checkpointed(d, h, depth, act, batch, dtype, segments):
    size = 2 if dtype == "bfloat16" else 4
    return {"plain": predict_saved(d, h, depth, act, batch, dtype, segments)["plain"],
            "checkpointed": segments * batch * d * size}


def _even_segments(d, h, depth, act, batch, dtype, segments):
    right = predict_saved(d, h, depth, act, batch, dtype, segments)
    block = right["plain"] // depth
    boundary = batch * d * (2 if dtype == "bfloat16" else 4)
    return {"plain": right["plain"], "checkpointed": (segments - 1) * boundary + depth // segments * block}


def _ceil_segments(d, h, depth, act, batch, dtype, segments):
    right = predict_saved(d, h, depth, act, batch, dtype, segments)
    block = right["plain"] // depth
    boundary = batch * d * (2 if dtype == "bfloat16" else 4)
    last = depth - -(-depth // segments) * (segments - 1)  # segments of ceil(depth / segments) blocks
    return {"plain": right["plain"], "checkpointed": (segments - 1) * boundary + last * block}


def _fp32_bytes(d, h, depth, act, batch, dtype, segments):
    return predict_saved(d, h, depth, act, batch, "float32", segments)


# ---------------------------------------------------------------- task 3: split by a memory budget
def split_by_budget(layers, budget_bytes: int, first: str, second: str):
    """The longest prefix of ``layers`` whose training memory (16 B/param) fits ``budget_bytes`` on ``first``."""
    import torch.nn as nn

    layers = list(layers)
    k, used = 0, 0
    while k < len(layers):
        cost = ADAM_MIXED * sum(p.numel() for p in layers[k].parameters())
        if used + cost > budget_bytes:
            break
        used, k = used + cost, k + 1

    class Split(nn.Module):
        def __init__(self):
            super().__init__()
            self.front = nn.Sequential(*layers[:k]).to(first)
            self.back = nn.Sequential(*layers[k:]).to(second)

        def forward(self, x):
            return self.back(self.front(x.to(first)).to(second))

    return Split()


def _split_with(per_param: int = ADAM_MIXED, extra: int = 0, cut: bool = False, move: bool = True,
                place_second: bool = True, strict: bool = False):
    """A wrong ``split_by_budget``: another byte count, one layer too many, a budget that must not be reached, a cut
    graph or a missing move."""
    def wrong(layers, budget_bytes, first, second):
        import torch.nn as nn

        layers = list(layers)
        k, used = 0, 0
        while k < len(layers):
            cost = per_param * sum(p.numel() for p in layers[k].parameters())
            if used + cost > budget_bytes or (strict and used + cost == budget_bytes):
                break
            used, k = used + cost, k + 1
        k = min(len(layers), k + extra)

        class Split(nn.Module):
            def __init__(self):
                super().__init__()
                self.front = nn.Sequential(*layers[:k]).to(first)
                self.back = nn.Sequential(*layers[k:]).to(second if place_second else first)

            def forward(self, x):
                h = self.front(x.to(first))
                h = h.detach() if cut else h
                return self.back(h.to(second) if move else h)

        return Split()
    return wrong


# ---------------------------------------------------------------- task 4: reading a loss-scale log
def read_scaler_log(init_scale: float, scales: list) -> dict:
    """Skipped steps, growth and backoff factors, growth interval and the next growth step of a GradScaler log."""
    skipped, growth, backoff, interval = [], None, None, None
    reset, before = -1, init_scale  # the last step that reset the count of good steps
    for i, scale in enumerate(scales):
        if scale < before:
            skipped.append(i)
            backoff, reset = scale / before, i
        elif scale > before:
            growth, interval, reset = scale / before, i - reset, i
        before = scale
    return {"skipped": skipped, "growth_factor": growth, "backoff_factor": backoff,
            "growth_interval": interval, "next_growth": None if interval is None else reset + interval}


def _log_reader(count_from_growth_only=False, off_by_one=False, changes_are_skips=False, inverted=False,
                next_from_growth=False, one_based=False):
    """A wrong reader of the log: each flag is one known misreading."""
    def wrong(init_scale, scales):
        skipped, growth, backoff, interval = [], None, None, None
        reset = last_growth = -1
        before = init_scale
        for i, scale in enumerate(scales):
            if scale != before and (scale < before or changes_are_skips):
                skipped.append(i)
            if scale < before:
                backoff = before / scale if inverted else scale / before
                if not count_from_growth_only:
                    reset = i
            elif scale > before:
                growth = before / scale if inverted else scale / before
                interval = i - reset - (1 if off_by_one else 0)
                reset = last_growth = i
            before = scale
        nxt = None if interval is None else (last_growth if next_from_growth else reset) + interval
        shift = 1 if one_based else 0
        return {"skipped": [i + shift for i in skipped], "growth_factor": growth, "backoff_factor": backoff,
                "growth_interval": interval, "next_growth": None if nxt is None else nxt + shift}
    return wrong


# ---------------------------------------------------------------- task 5: one complete training step
def train_step(model, optimizer, scaler, inputs, targets, loss_fn, n_micro: int, max_norm: float,
               device_type: str, dtype) -> float:
    """Autocast micro-batches weighted by their share, scaled backward (no_sync but the last), unscale, clip, step."""
    import torch

    optimizer.zero_grad(set_to_none=True)
    parts = list(zip(torch.tensor_split(inputs, n_micro), torch.tensor_split(targets, n_micro)))
    no_sync = getattr(model, "no_sync", None)
    total = 0.0
    for i, (x, y) in enumerate(parts):
        with no_sync() if no_sync is not None and i < len(parts) - 1 else nullcontext():
            with torch.autocast(device_type=device_type, dtype=dtype):
                loss = loss_fn(model(x), y) * (len(x) / len(inputs))
            scaler.scale(loss).backward()
        total += loss.item()
    scaler.unscale_(optimizer)  # the true gradients, before clipping reads their norm
    torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
    scaler.step(optimizer)
    scaler.update()
    return total


def _step_with(weight="share", clip="unscaled", clear=True, sync=True, autocast=True, update_per_micro=False):
    """A wrong ``train_step``: each argument switches one part of the right step to a known mistake."""
    def wrong(model, optimizer, scaler, inputs, targets, loss_fn, n_micro, max_norm, device_type, dtype):
        import torch

        if clear:
            optimizer.zero_grad(set_to_none=True)
        parts = list(zip(torch.tensor_split(inputs, n_micro), torch.tensor_split(targets, n_micro)))
        no_sync = getattr(model, "no_sync", None) if sync else None
        total = 0.0
        for i, (x, y) in enumerate(parts):
            factor = {"share": len(x) / len(inputs), "equal": 1 / len(parts), "none": 1.0}[weight]
            with no_sync() if no_sync is not None and i < len(parts) - 1 else nullcontext():
                with torch.autocast(device_type=device_type, dtype=dtype, enabled=autocast):
                    loss = loss_fn(model(x), y) * factor
                scaler.scale(loss).backward()
            total += loss.item()
            if update_per_micro:
                scaler.step(optimizer)
                scaler.update()
        if update_per_micro:
            return total
        if clip != "scaled":
            scaler.unscale_(optimizer)
        if clip in ("unscaled", "scaled"):
            torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
        scaler.step(optimizer)
        if clip == "after":
            torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
        scaler.update()
        return total
    return wrong


def _step_expected(case) -> dict:
    """The update and loss of the right step, and those of each numeric mistake, computed in fp32 (no autocast).

    The learner's step runs under autocast, so its update is compared with these within the tolerance of its
    16-bit format; a mistake is named when the update is that mistake's (fp32) update instead.
    """
    import torch

    model, x, y, loss_fn = tasks.mlp(case)
    params = list(model.parameters())
    grads, losses = [], []
    parts = list(zip(torch.tensor_split(x, case["n_micro"]), torch.tensor_split(y, case["n_micro"])))
    for xs, ys in parts:
        model.zero_grad(set_to_none=True)
        loss = loss_fn(model(xs), ys)
        loss.backward()
        grads.append(torch.cat([p.grad.flatten() for p in params]))
        losses.append(loss.item())
    shares = [len(xs) / len(x) for xs, _ in parts]
    full = sum(s * g for s, g in zip(shares, grads))
    scale = tasks.STEP_INIT_SCALE if case["dtype"] == "float16" else 1.0

    def update(g, norm_scale=1.0, clip=True):
        norm = float((g.double() * norm_scale).norm())
        coef = min(1.0, case["max_norm"] / (norm + 1e-6)) if clip else 1.0
        return (-tasks.STEP_LR * coef * g).tolist()

    right = update(full)
    loss = sum(s * v for s, v in zip(shares, losses))
    variants = {"no_clip": (update(full, clip=False), loss), "stale_grads": (update(full + tasks.STALE_GRAD), loss),
                "unweighted": (update(sum(grads)), sum(losses)),
                "equal_weights": (update(sum(grads) / len(grads)), sum(losses) / len(losses))}
    if scale != 1.0:
        variants["clip_before_unscale"] = (update(full, norm_scale=scale), loss)
    return {"answer": {"delta": right, "loss": loss},
            "mistakes": {name: {"delta": d, "loss": v} for name, (d, v) in variants.items()
                         if tasks.relative_gap(d, right) > 4 * tasks.STEP_TOLERANCE[case["dtype"]]}}


# ---------------------------------------------------------------- task 6: diagnosing an accumulation step
def diagnose(step, probe_sync=True, probe_stale=True, probe_uneven=True, read_quiet=True, read_synced=True) -> str:
    """Which planted bug ``step`` has: run it where each bug shows and compare with one full-batch backward."""
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(3, 5), nn.Tanh(), nn.Linear(5, 2))
    params = list(net.parameters())

    def full_batch(x, y):
        net.zero_grad(set_to_none=True)
        F.mse_loss(net(x), y).backward()
        return torch.cat([p.grad.flatten() for p in params])

    def run(x, y, n, prefill):
        for p in params:
            p.grad = torch.full_like(p, prefill)
        model = SyncRecorder(net) if probe_sync else net
        step(model, F.mse_loss, x, y, n)
        return torch.cat([p.grad.flatten() for p in params]), model

    x, y = torch.randn(6, 3), torch.randn(6, 2)  # 6 = 3 micro-batches of 2: every way to split agrees
    want = full_batch(x, y)
    got, model = run(x, y, 3, 1.0 if probe_stale else 0.0)
    if probe_sync and read_quiet and model.in_no_sync == 0:
        return "sync_every"
    if probe_sync and read_synced and model.synced == 0:
        return "never_sync"
    if probe_stale and torch.allclose(got - 1.0, want, atol=1e-5):
        return "stale"
    if torch.allclose(got, 3 * want, atol=1e-5):
        return "unweighted"
    if not torch.allclose(got, want, atol=1e-5):
        return "last_only"
    if probe_uneven:
        x, y = torch.randn(7, 3), torch.randn(7, 2)  # 7 in 3: the micro-batches differ in size
        got, _ = run(x, y, 3, 0.0)
        if not torch.allclose(got, full_batch(x, y), atol=1e-5):
            return "equal_weights"
    return "ok"


# ---------------------------------------------------------------- task 7: planning a training run
MODES = tuple(data()["activations"]["modes"])


def _states(model: dict, n: int, stage: int, frozen: bool = True) -> Fraction:
    """Model states per GPU of mixed-precision Adam at a ZeRO stage over ``n`` GPUs (task 1's rule), exactly."""
    return memory_breakdown(Fraction(model["params"]), Fraction(model["frozen"] if frozen else 0), "adam", "mixed",
                            stage, n)["total"]


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def plan_training(model: dict, profile_id: str, global_batch: int, *, capacity=None, usable=None,
                  activations=True, full_mode_extra=True, order=("gpus", "stage", "recompute"),
                  any_micro_batch=False, smallest_micro_batch=False, gpu_counts=None, frozen=True) -> dict | None:
    """The fewest GPUs, then the lowest ZeRO stage, the least recomputation and the largest micro-batch that fit.

    The keyword arguments after ``*`` switch the rule to one of the known mistakes (see ``MISTAKES``).
    """
    plan = data()["planning"]
    memory = Fraction(str(usable if usable is not None else plan["usable_fraction"])) * (
        capacity(profile_id) if capacity else profiles.get(profile_id).memory_bytes)
    L, h, a, s = model["layers"], model["hidden"], model["heads"], model["seq"]

    def act(b, mode):
        if not activations:
            return 0
        if mode == "full" and not full_mode_extra:
            return L * data()["activations"]["layer_input"] * s * b * h
        return activation_estimate(L, h, a, s, b, mode)

    def options():
        for n in _divisors(global_batch) if gpu_counts is None else gpu_counts(global_batch):
            per_gpu = global_batch // n
            sizes = range(per_gpu, 0, -1) if any_micro_batch else sorted(_divisors(per_gpu), reverse=True)
            for stage in range(4):
                for mode in MODES:
                    for b in sizes:
                        yield n, stage, mode, b

    def fits(n, stage, mode, b):
        return _states(model, n, stage, frozen) + act(b, mode) <= memory

    rank = {"gpus": lambda o: o[0], "stage": lambda o: o[1], "recompute": lambda o: MODES.index(o[2])}
    size = (lambda o: o[3]) if smallest_micro_batch else (lambda o: -o[3])
    ordered = sorted(options(), key=lambda o: tuple(rank[k](o) for k in order) + (size(o),))
    for n, stage, mode, b in ordered:
        if fits(n, stage, mode, b):
            return {"gpus": n, "stage": stage, "recompute": mode, "micro_batch": b}
    return None


def _powers_of_two(global_batch: int) -> list[int]:
    return [n for n in _divisors(global_batch) if n & (n - 1) == 0]


def plan_slack(model: dict, profile_id: str, global_batch: int) -> Fraction:
    """The smallest relative margin between any option's need and the usable memory (hidden cases keep clear of 0)."""
    memory = Fraction(str(data()["planning"]["usable_fraction"])) * profiles.get(profile_id).memory_bytes
    L, h, a, s = model["layers"], model["hidden"], model["heads"], model["seq"]
    worst = None
    for n in _divisors(global_batch):
        for stage in range(4):
            states = _states(model, n, stage)
            for mode in MODES:
                for b in _divisors(global_batch // n):
                    gap = abs(states + activation_estimate(L, h, a, s, b, mode) - memory) / memory
                    worst = gap if worst is None else min(worst, gap)
    return worst


# ---------------------------------------------------------------- expected answers of a case
def _run_all(name, reference, mistakes):
    """EXPECT entry: the reference's answer and each mistake's, both as the task's ``answer`` records them."""
    task = tasks.TASKS[name]

    def expect(case):
        return {"answer": canonical(task.answer(reference, case)),
                "mistakes": {k: canonical(task.answer(wrong, case)) for k, wrong in mistakes.items()}}
    return expect


def measurable(case) -> bool:
    """Whether a case of task 2 is small enough to build and measure (larger ones are predicted by the rule)."""
    d, h = case["dims"]
    size = 2 if case["dtype"] == "bfloat16" else 4
    weights = case["depth"] * (2 * d * h + d + h) * size
    saved = predict_saved(d, h, case["depth"], case["act"], case["batch"], case["dtype"], case["segments"])["plain"]
    return weights + saved <= 10**8


def _saved_expected(case) -> dict:
    """The bytes the hooks measure (the rule's prediction for a case too large to build: tests check the two agree)."""
    d, h = case["dims"]
    args = (d, h, case["depth"], case["act"], case["batch"], case["dtype"], case["segments"])
    wrong = {k: canonical(tasks.TASKS["saved"].answer(fn, case)) for k, fn in MISTAKES["saved"].items()}
    return {"answer": measured_saved(case) if measurable(case) else predict_saved(*args), "mistakes": wrong}


def _split_expected(case) -> dict:
    """Where each parameter and the output must land, the output and gradients of the unsplit model, and where each
    known mistake puts them."""
    layers, x = tasks.sequence(case)
    out = layers(x)
    out.sum().backward()
    return {"answer": {**tasks.placement(layers, x, split_by_budget, case), "values": out.detach().tolist(),
                       "grads": [v for p in layers.parameters() for v in p.grad.flatten().tolist()]},
            "mistakes": {k: tasks.placement(layers, x, fn, case) for k, fn in MISTAKES["split"].items()
                         if k != "graph_cut"}}


MISTAKES = {
    "breakdown": {"no_master": _no_master, "all_16_bit": _all_16_bit, "fp32_grads_ignored": _fp32_grads_ignored,
                  "stage_off_by_one": _stage_off_by_one, "stage_1_shards_nothing": _stage_1_shards_nothing,
                  "shard_everything": _shard_everything, "frozen_trained": _frozen_trained,
                  "frozen_left_out": _frozen_left_out, "frozen_unsharded": _frozen_unsharded, "not_bytes": _in_gib},
    "saved": {"shared_counted_twice": _shared_counted_twice, "one_per_activation": _one_per_activation,
              "input_forgotten": _input_forgotten, "weights_counted": _weights_counted,
              "last_segment_checkpointed": _last_segment_checkpointed, "even_segments": _even_segments,
              "ceil_segments": _ceil_segments,
              "fp32_bytes": _fp32_bytes},
    "split": {"weights_only": _split_with(per_param=4), "overflow_layer_included": _split_with(extra=1),
              "budget_exclusive": _split_with(strict=True),
              "graph_cut": _split_with(cut=True), "activations_not_moved": _split_with(move=False),
              "second_part_not_placed": _split_with(place_second=False, move=False)},
    "scaler_log": {"reset_only_on_growth": _log_reader(count_from_growth_only=True),
                   "interval_off_by_one": _log_reader(off_by_one=True),
                   "growth_counted_as_skip": _log_reader(changes_are_skips=True),
                   "factors_inverted": _log_reader(inverted=True),
                   "next_growth_ignores_skips": _log_reader(next_from_growth=True),
                   "one_based": _log_reader(one_based=True)},
    "step": {"no_clip": _step_with(clip="none"), "clip_before_unscale": _step_with(clip="scaled"),
             "clip_after_step": _step_with(clip="after"),
             "unweighted": _step_with(weight="none"), "equal_weights": _step_with(weight="equal"),
             "stale_grads": _step_with(clear=False), "sync_every_micro_batch": _step_with(sync=False),
             "no_autocast": _step_with(autocast=False), "update_per_micro_batch": _step_with(update_per_micro=True)},
    "audit": {"no_sync_probe": lambda step: diagnose(step, probe_sync=False),
              "no_stale_probe": lambda step: diagnose(step, probe_stale=False),
              "even_splits_only": lambda step: diagnose(step, probe_uneven=False),
              "synced_not_read": lambda step: diagnose(step, read_synced=False),
              "in_no_sync_not_read": lambda step: diagnose(step, read_quiet=False)},
    "plan": {"gb_for_gib": lambda m, p, b: plan_training(m, p, b, capacity=lambda pid: profiles.get(pid).memory_gib * 10**9),
             "whole_memory": lambda m, p, b: plan_training(m, p, b, usable=1),
             "no_activations": lambda m, p, b: plan_training(m, p, b, activations=False),
             "full_keeps_inputs_only": lambda m, p, b: plan_training(m, p, b, full_mode_extra=False),
             "recompute_before_stage": lambda m, p, b: plan_training(m, p, b, order=("gpus", "recompute", "stage")),
             "micro_batch_not_a_divisor": lambda m, p, b: plan_training(m, p, b, any_micro_batch=True),
             "smallest_micro_batch": lambda m, p, b: plan_training(m, p, b, smallest_micro_batch=True),
             "powers_of_two_gpus": lambda m, p, b: plan_training(m, p, b, gpu_counts=_powers_of_two),
             "frozen_trained": lambda m, p, b: plan_training(m, p, b, frozen=False)},
}

EXPECT = {
    "breakdown": _run_all("breakdown", memory_breakdown, MISTAKES["breakdown"]),
    "saved": _saved_expected,
    "split": _split_expected,
    "scaler_log": _run_all("scaler_log", read_scaler_log, MISTAKES["scaler_log"]),
    "step": _step_expected,
    "plan": _run_all("plan", plan_training, MISTAKES["plan"]),
}


# ---------------------------------------------------------------- hidden cases
OPTIMIZERS = ("sgd", "momentum", "adam", "adamw")
PRECISIONS = ("fp32", "mixed", "mixed_fp32_grads", "bf16")
ACTS = ("relu", "gelu", "tanh", "sigmoid", "silu")


def _breakdown_hidden(rng) -> list:
    cases = []
    for i in range(10):
        params = float(rng.randrange(10**6, 10**12))
        frozen = 0.0 if i % 3 == 0 else float(rng.randrange(0, int(params)))  # a third trains every parameter
        cases.append({"params": params, "frozen": frozen, "optimizer": rng.choice(OPTIMIZERS),
                      "precision": rng.choice(PRECISIONS), "stage": rng.randrange(4),
                      "gpus": rng.choice([1, 2, 3, 6, 8, 64, 100, 1024])})
    return cases + [{"params": 0.0, "frozen": 0.0, "optimizer": "adamw", "precision": "mixed", "stage": 3, "gpus": 8},
                    {"params": 1.3e9, "frozen": 1.3e9, "optimizer": "sgd", "precision": "mixed", "stage": 3, "gpus": 6},
                    {"params": 1.3e9, "frozen": 0.0, "optimizer": "momentum", "precision": "bf16", "stage": 1, "gpus": 1}]


def _saved_hidden(rng) -> list:
    """Three small cases (measured) and two far too large to build (tens of GB: predicted by the rule)."""
    cases = []
    for _ in range(3):
        depth = rng.randrange(2, 8)
        cases.append({"dims": [rng.choice([8, 24, 40]), rng.choice([32, 48, 96])], "depth": depth,
                      "act": rng.choice(ACTS), "batch": rng.randrange(1, 33),
                      "dtype": rng.choice(["float32", "bfloat16"]), "segments": rng.randrange(2, depth + 1)})
    for _ in range(2):
        depth = rng.randrange(24, 97)
        d = rng.choice([4096, 5120, 8192])
        cases.append({"dims": [d, 4 * d], "depth": depth, "act": rng.choice(ACTS), "batch": rng.randrange(16, 129),
                      "dtype": rng.choice(["float32", "bfloat16"]), "segments": rng.randrange(2, depth + 1)})
    return cases


def _split_hidden(rng) -> list:
    cases = []
    for i in range(4):
        widths = [rng.randrange(2, 12) for _ in range(rng.randrange(3, 6))]
        costs = [ADAM_MIXED * (a * b + b) for a, b in zip(widths, widths[1:])]
        budget = rng.randrange(0, sum(costs) + 1) if i < 3 else sum(costs[:rng.randrange(1, len(costs))])  # exactly full
        cases.append({"seed": rng.randrange(10**6), "widths": widths, "budget": budget, "batch": rng.randrange(1, 9)})
    cases.append({"seed": 5, "widths": [3, 5, 2], "budget": 0, "batch": 3})
    cases.append({"seed": 6, "widths": [3, 5, 2], "budget": 10**6, "batch": 3})
    return cases


def scaler_trace(rng, steps: int = 40) -> dict:
    """A log of ``torch.amp.GradScaler("cpu")``'s scale after each step, with random settings and planted overflows."""
    import warnings

    import torch

    args = {"init_scale": float(2 ** rng.randrange(8, 17)), "growth_factor": rng.choice([2.0, 4.0, 1.5]),
            "backoff_factor": rng.choice([0.5, 0.25, 0.125]), "growth_interval": rng.randrange(2, 7)}
    p = torch.nn.Parameter(torch.ones(3))
    opt = torch.optim.SGD([p], lr=1e-3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        scaler = torch.amp.GradScaler("cpu", **args)
    scales = []
    for _ in range(steps):
        opt.zero_grad()
        scaler.scale(p.sum()).backward()
        if rng.random() < 0.15:
            p.grad[rng.randrange(3)] = float(rng.choice(["inf", "nan"]))
        scaler.step(opt)
        scaler.update()
        scales.append(scaler.get_scale())
    return {"init_scale": args["init_scale"], "scales": scales}


def _scaler_hidden(rng) -> list:
    cases = []
    while len(cases) < 4:
        case = scaler_trace(rng)
        read = read_scaler_log(**case)
        if read["growth_factor"] is not None and read["backoff_factor"] is not None:  # the log shows both events
            cases.append(case)
    return cases


def _step_hidden(rng) -> list:
    import torch

    cases = []
    for i in range(4):
        batch = rng.randrange(4, 13)
        case = {"seed": rng.randrange(10**6), "sizes": [rng.randrange(3, 9), rng.randrange(4, 17), rng.randrange(2, 6)],
                "batch": batch, "n_micro": rng.randrange(2, min(batch, 5) + 1), "loss": rng.choice(["mse", "ce"]),
                "dtype": ("float16", "bfloat16")[i % 2], "max_norm": 1.0}
        model, x, y, loss_fn = tasks.mlp(case)
        loss_fn(model(x), y).backward()
        norm = float(torch.cat([p.grad.flatten() for p in model.parameters()]).norm())
        case["max_norm"] = round(norm * rng.choice([0.3, 0.5, 3.0]), 4)  # binding or not
        cases.append(case)
    return cases


def _audit_hidden(rng) -> list:
    bugs = list(tasks.BUGS)
    rng.shuffle(bugs)
    return [{"bug": bug, "style": rng.randrange(1, 8)} for bug in bugs[:6]]


MODELS = (  # transformer shapes (params, layers, hidden, heads), from small to large
    (125_000_000, 12, 768, 12), (350_000_000, 24, 1024, 16), (1_300_000_000, 24, 2048, 16),
    (2_700_000_000, 32, 2560, 32), (6_700_000_000, 32, 4096, 32), (13_000_000_000, 40, 5120, 40),
    (30_000_000_000, 60, 6656, 52), (70_000_000_000, 80, 8192, 64))


def _plan_hidden(rng) -> list:
    """Five plans on devices from the course's profiles, two of them fine-tuning runs (most parameters frozen)."""
    ids = sorted(p.id for kind in ("gpu", "tpu") for p in profiles.all_of(kind) if p.memory_gib)
    cases = []
    while len(cases) < 5:
        params, layers, hidden, heads = rng.choice(MODELS)
        trained = params // rng.choice([20, 100, 500]) if len(cases) < 2 else params
        model = {"params": params, "frozen": params - trained, "layers": layers, "hidden": hidden, "heads": heads,
                 "seq": rng.choice([512, 1024, 2048, 4096, 8192])}
        case = {"model": model, "profile": rng.choice(ids),
                "global_batch": rng.choice([8, 12, 16, 24, 32, 48, 64, 96, 128, 256])}
        if plan_slack(model, case["profile"], case["global_batch"]) > Fraction(1, 10**6):  # clear of exact ties
            cases.append(case)
    return cases


HIDDEN = {
    "breakdown": _breakdown_hidden,
    "saved": _saved_hidden,
    "split": _split_hidden,
    "scaler_log": _scaler_hidden,
    "step": _step_hidden,
    "audit": _audit_hidden,
    "plan": _plan_hidden,
}
