"""Reference answers and hidden cases of module 04 (training memory)."""
from __future__ import annotations

import math
from contextlib import nullcontext
from fractions import Fraction

from autograder import profiles
from autograder.modules.m04_training_memory import tasks
from autograder.modules.m04_training_memory.data import table


def data() -> dict:
    """Bytes per parameter, optimizer states, ZeRO stages and the planning rule (``data/memory.yaml``)."""
    return table("memory")


def _choice(value, options, what: str):
    if value not in options:
        raise ValueError(f"{what}은(는) {sorted(options)} 중 하나여야 합니다 / "
                         f"{what} must be one of {sorted(options)}: {value!r}")
    return options[value]


# ---------------------------------------------------------------- task 1: breakdown
def memory_breakdown(n_params: float, optimizer: str, precision: str, zero_stage: int, n_gpus: int) -> dict:
    """Bytes per GPU of weights, gradients and optimizer states (fp32 master included) and their total.

    ZeRO stage 1 shards the optimizer states over ``n_gpus``, stage 2 also the gradients,
    stage 3 also the weights (ZeRO paper, Section 5).
    """
    prec = _choice(precision, data()["precisions"], "precision")
    states = _choice(optimizer, data()["optimizers"], "optimizer")["states"]
    sharded = _choice(int(zero_stage), data()["zero_stages"], "zero_stage")
    if n_gpus < 1 or n_params < 0:
        raise ValueError(f"n_gpus >= 1, n_params >= 0 이어야 합니다 / need n_gpus >= 1 and n_params >= 0: "
                         f"{n_gpus!r}, {n_params!r}")
    per_param = {
        "weights": prec["weights"],
        "gradients": prec["gradients"],
        "optimizer": prec["master"] + states * prec["state"],
    }
    out = {k: n_params * b / (n_gpus if k in sharded else 1) for k, b in per_param.items()}
    out["total"] = out["weights"] + out["gradients"] + out["optimizer"]
    return out


# ---------------------------------------------------------------- task 2: GPUs needed
def gpus_for(n_params: int, memory_gib: float, bytes_per_param: int, usable: float) -> int:
    """Smallest N with n_params * bytes_per_param / N <= usable * memory (exact arithmetic; 1 GiB = 2^30 bytes)."""
    need = Fraction(int(n_params)) * bytes_per_param
    per_gpu = Fraction(str(usable)) * Fraction(str(memory_gib)) * 2**30
    return max(1, math.ceil(need / per_gpu))


def gpus_needed(n_params: int, profile_id: str) -> dict:
    """GPUs of profile ``profile_id`` needed to train (16 B/param, sharded) and to serve (2 B/param)."""
    plan = data()["planning"]
    memory_gib = profiles.get(profile_id).memory_gib
    return {
        "train": gpus_for(n_params, memory_gib, plan["train_bytes_per_param"], plan["usable_fraction"]),
        "infer": gpus_for(n_params, memory_gib, plan["infer_bytes_per_param"], plan["usable_fraction"]),
    }


# ---------------------------------------------------------------- task 3: saved tensors
def saved_bytes(model, x) -> int:
    """Bytes the forward pass ``model(x)`` saves for backward, counted with saved-tensor hooks.

    Each distinct storage counts once (a tensor saved by two ops is stored once);
    storages of the model's parameters are skipped (they are in memory anyway).
    """
    import torch

    params = {p.untyped_storage().data_ptr() for p in model.parameters()}
    seen: dict[int, int] = {}

    def pack(t):
        storage = t.untyped_storage()
        if storage.data_ptr() not in params:
            seen[storage.data_ptr()] = storage.nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        model(x)
    return sum(seen.values())


# ---------------------------------------------------------------- task 4: accumulation
def accumulation_step(model, loss_fn, inputs, targets, n_micro: int) -> float:
    """Gradients of the full-batch mean loss, computed in ``n_micro`` micro-batches.

    Each micro-batch's mean loss is weighted by its share of the samples (1/n_micro when the
    split is even). A model with ``no_sync`` (DDP) skips gradient synchronisation on every
    micro-batch but the last. Returns the full-batch loss.
    """
    import torch

    model.zero_grad(set_to_none=True)
    parts = [(x, y) for x, y in zip(torch.tensor_split(inputs, n_micro), torch.tensor_split(targets, n_micro))
             if len(x)]
    no_sync = getattr(model, "no_sync", None)
    total = 0.0
    for i, (x, y) in enumerate(parts):
        quiet = no_sync() if no_sync is not None and i < len(parts) - 1 else nullcontext()
        with quiet:
            loss = loss_fn(model(x), y) * (len(x) / len(inputs))
            loss.backward()
        total += loss.item()
    return total


# ---------------------------------------------------------------- task 5: loss scaler
class DynamicLossScaler:
    """Dynamic loss scaling as torch.amp.GradScaler does it, on plain Python numbers."""

    def __init__(self, init_scale: float = 2.0**16, growth_factor: float = 2.0,
                 backoff_factor: float = 0.5, growth_interval: int = 2000):
        self.scale_value = float(init_scale)
        self.growth_factor = growth_factor
        self.backoff_factor = backoff_factor
        self.growth_interval = growth_interval
        self.good_steps = 0

    def scale(self, loss: float) -> float:
        return loss * self.scale_value

    def unscale(self, grads: list[float]) -> list[float]:
        return [g / self.scale_value for g in grads]

    def step(self, grads: list[float]) -> list[float] | None:
        """Unscale; on inf/nan skip (None) and back off; else count and grow every growth_interval steps."""
        unscaled = self.unscale(grads)
        if not all(math.isfinite(g) for g in unscaled):
            self.scale_value *= self.backoff_factor
            self.good_steps = 0
            return None
        self.good_steps += 1
        if self.good_steps == self.growth_interval:
            grown = self.scale_value * self.growth_factor
            if math.isfinite(grown):
                self.scale_value = grown
            self.good_steps = 0
        return unscaled

    def get_scale(self) -> float:
        return self.scale_value


# ---------------------------------------------------------------- task 6: AMP step
def amp_step(model, optimizer, scaler, inputs, targets, loss_fn, device_type: str, dtype) -> float:
    """One mixed-precision step: autocast forward and loss, scaled backward, scaler step/update."""
    import torch

    optimizer.zero_grad(set_to_none=True)
    with torch.autocast(device_type=device_type, dtype=dtype):
        loss = loss_fn(model(inputs), targets)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    return loss.item()


# ---------------------------------------------------------------- task 7: split model
def split_model(layers, split: int, first: str, second: str):
    """``layers[:split]`` on ``first``, the rest on ``second``; forward moves the activations."""
    import torch.nn as nn

    class Split(nn.Module):
        def __init__(self):
            super().__init__()
            self.first = nn.Sequential(*list(layers)[:split]).to(first)
            self.second = nn.Sequential(*list(layers)[split:]).to(second)

        def forward(self, x):
            return self.second(self.first(x.to(first)).to(second))

    return Split()


# ---------------------------------------------------------------- expected answers of a case
def _saved(case) -> dict:
    model, x = tasks.blocks(case)
    return {"plain": saved_bytes(model, x), "checkpointed": saved_bytes(tasks.Checkpointed(model, case["segments"]), x)}


def _accumulated(case) -> dict:
    """Gradients and loss of one full-batch step: what accumulation over micro-batches must reproduce."""
    model, x, y, loss_fn = tasks.mlp(case)
    loss = loss_fn(model(x), y)
    loss.backward()
    return {"loss": loss.item(), "grads": [v for p in model.parameters() for v in p.grad.flatten().tolist()]}


def _scaler_trace(case) -> list:
    ref = DynamicLossScaler(**case["args"])
    return [{"scaled_loss": ref.scale(case["loss"]), "result": ref.step([float(g) for g in grads]),
             "scale": ref.get_scale()} for grads in case["steps"]]


def _split(case) -> dict:
    """Output and gradients of the whole model on one device (where the layers run does not change them)."""
    layers, x = tasks.sequence(case)
    out = layers(x)
    out.sum().backward()
    return {"out": out.detach().tolist(), "grads": [v for p in layers.parameters() for v in p.grad.flatten().tolist()]}


EXPECT = {
    "breakdown": lambda c: memory_breakdown(c["params"], c["optimizer"], c["precision"], c["stage"], c["gpus"]),
    "gpus": lambda c: gpus_needed(c["params"], c["profile"]),
    "saved": _saved,
    "accumulate": _accumulated,
    "scaler": _scaler_trace,
    "split": _split,
}


# ---------------------------------------------------------------- hidden cases
OPTIMIZERS = ("sgd", "momentum", "adam", "adamw")
PRECISIONS = ("fp32", "mixed", "bf16")


def _breakdown_hidden(rng) -> list:
    cases = []
    for _ in range(10):
        cases.append({"params": float(rng.randrange(10**6, 10**12)), "optimizer": rng.choice(OPTIMIZERS),
                      "precision": rng.choice(PRECISIONS), "stage": rng.randrange(4),
                      "gpus": rng.choice([1, 2, 3, 6, 8, 64, 100, 1024])})
    cases.append({"params": 0.0, "optimizer": "adamw", "precision": "mixed", "stage": 3, "gpus": 8})
    cases.append({"params": 1.3e9, "optimizer": "momentum", "precision": "bf16", "stage": 1, "gpus": 1})
    return cases


def _gpus_hidden(rng) -> list:
    plan = data()["planning"]
    ids = sorted(p.id for kind in ("gpu", "tpu") for p in profiles.all_of(kind) if p.memory_gib)
    cases = []
    while len(cases) < 10:
        pid = rng.choice(ids)
        params = int(10 ** rng.uniform(8, 12.3))
        per_gpu = Fraction(str(plan["usable_fraction"])) * Fraction(str(profiles.get(pid).memory_gib)) * 2**30
        ratios = [Fraction(params * b) / per_gpu for b in (plan["train_bytes_per_param"], plan["infer_bytes_per_param"])]
        if all(abs(r - round(r)) > Fraction(1, 10**6) for r in ratios):  # keep clear of exact boundaries
            cases.append({"params": params, "profile": pid})
    return cases


def _saved_hidden(rng) -> list:
    return [{"dims": [rng.choice([8, 24, 40]), rng.choice([32, 96])], "depth": rng.randrange(3, 7),
             "act": rng.choice(["relu", "gelu", "tanh"]), "batch": rng.randrange(2, 33),
             "dtype": rng.choice(["float32", "bfloat16"]), "segments": rng.randrange(2, 4)} for _ in range(4)]


def _accumulate_hidden(rng) -> list:
    cases = []
    for _ in range(4):
        batch = rng.randrange(5, 40)
        cases.append({"seed": rng.randrange(10**6), "sizes": [rng.randrange(2, 9), rng.randrange(4, 17),
                                                              rng.randrange(2, 6)],
                      "batch": batch, "n_micro": rng.randrange(2, min(batch, 7) + 1), "loss": rng.choice(["mse", "ce"])})
    cases.append({"seed": 7, "sizes": [3, 4, 2], "batch": 9, "n_micro": 1, "loss": "mse"})
    return cases


def _steps(rng, n: int, bad: float) -> list:
    out = []
    for _ in range(n):
        grads = [round(rng.uniform(-4, 4), 3) for _ in range(3)]
        if rng.random() < bad:
            grads[rng.randrange(3)] = rng.choice(["inf", "-inf", "nan"])
        out.append(grads)
    return out


def _scaler_hidden(rng) -> list:
    cases = [{"args": {"init_scale": float(rng.choice([2**k for k in range(4, 17)])),
                       "growth_factor": rng.choice([2.0, 3.0, 1.5]), "backoff_factor": rng.choice([0.5, 0.25, 0.1]),
                       "growth_interval": rng.randrange(1, 6)},
              "loss": round(rng.uniform(0.1, 5), 3), "steps": _steps(rng, 16, 0.3)} for _ in range(3)]
    cases.append({"args": {"init_scale": 1e308, "growth_factor": 10.0, "backoff_factor": 0.5, "growth_interval": 1},
                  "loss": 1.0, "steps": [[1.0, 2.0], [1.0, 2.0], ["inf", 0.0], [1.0, 2.0]]})
    return cases


def _split_hidden(rng) -> list:
    cases = []
    for _ in range(3):
        widths = [rng.randrange(2, 12) for _ in range(rng.randrange(3, 6))]
        cases.append({"seed": rng.randrange(10**6), "widths": widths, "split": rng.randrange(1, 2 * (len(widths) - 1)),
                      "batch": rng.randrange(1, 9)})
    cases.append({"seed": 5, "widths": [3, 5, 2], "split": 0, "batch": 3})
    cases.append({"seed": 6, "widths": [3, 5, 2], "split": 4, "batch": 3})
    return cases


HIDDEN = {
    "breakdown": _breakdown_hidden,
    "gpus": _gpus_hidden,
    "saved": _saved_hidden,
    "accumulate": _accumulate_hidden,
    "scaler": _scaler_hidden,
    "amp": lambda rng: [{"seed": rng.randrange(1, 10**6), "dtype": "auto"}, {"seed": rng.randrange(1, 10**6), "dtype": "other"}],
    "split": _split_hidden,
}
