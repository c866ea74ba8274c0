"""Reference answers, hidden cases and known mistakes of module 01 (devices)."""
from __future__ import annotations

import statistics
import time
from typing import Any, Callable

from autograder.checks.core import Recorded
from autograder.fakes.devices import GPU_CATALOGUE, fake_torch, mlx_modules
from autograder.knowledge import recipe_bytes
from autograder.modules.m01_devices import tasks
from autograder.modules.m01_devices.machines import machine_torch, mlx_install
from autograder.modules.m01_devices.tasks import BUGS, speedup_widths
from autograder.modules.m01_devices.virtual import VirtualGPU

TORCH_PRIORITY = ("cuda", "mps", "xpu")
TORCH_NAMES = TORCH_PRIORITY + ("cpu",)
# 16: bf16 weights 2 + bf16 grads 2 + fp32 master 4 + Adam m 4 + v 4 (ZeRO, Sec. 3.1), the lesson's recipe
ADAM_MIXED_BYTES_PER_PARAM = sum(recipe_bytes("adam_mixed").values())
FROZEN_BYTES_PER_PARAM = sum(recipe_bytes("inference_bf16").values())  # a frozen weight: its bf16 copy only


def _available(torch_module, name: str) -> bool:
    """Whether torch backend ``name`` is usable; a backend missing from this torch build is not."""
    if name == "cpu":
        return True
    if name == "mps":
        backend = getattr(getattr(torch_module, "backends", None), "mps", None)
    else:
        backend = getattr(torch_module, name, None)
    check = getattr(backend, "is_available", None)
    return bool(check()) if check is not None else False


def pick_device(prefer: str | None = None, torch_module=None) -> str:
    """'cuda' > 'mps' > 'xpu' > 'cpu', or ``prefer`` if it is available (ValueError otherwise)."""
    if torch_module is None:
        import torch as torch_module
    if prefer is not None:
        if prefer not in TORCH_NAMES:
            raise ValueError(f"unknown device {prefer!r}: use one of {TORCH_NAMES}")
        if not _available(torch_module, prefer):
            raise ValueError(f"{prefer!r} is not available here")
        return prefer
    return next((name for name in TORCH_PRIORITY if _available(torch_module, name)), "cpu")


def mlx_device() -> str | None:
    """'gpu' or 'cpu' where MLX really computes here; None where it is absent or broken."""
    try:
        import mlx.core as mx
        mx.eval(mx.array([1.0]) + 1)  # lazy: only evaluating runs anything
        return "gpu" if mx.is_available(mx.gpu) else "cpu"
    except Exception:  # absent, broken install, or no working backend
        return None


def training_setup(torch_module=None, ram_bytes: int | None = None) -> dict:
    """Device type, training dtype and the memory (GiB) the training code can use on the machine ``torch_module`` sees."""
    if torch_module is None:
        import torch as torch_module
    if ram_bytes is None:
        import psutil
        ram_bytes = psutil.virtual_memory().total
    device = pick_device(torch_module=torch_module)
    if device == "cuda":
        props = torch_module.cuda.get_device_properties(0)
        memory = props.total_memory
        dtype = ("bfloat16" if torch_module.cuda.is_bf16_supported(including_emulation=False)
                 else "float16" if props.major >= 7 else "float32")
    elif device == "mps":
        memory = torch_module.mps.recommended_max_memory()
        dtype = "bfloat16" if torch_module.backends.mps.is_macos_or_newer(14, 0) else "float16"
    else:
        memory, dtype = ram_bytes, "float32"
    return {"device": device, "dtype": dtype, "memory_gib": memory / 2**30}


def finetune_plan(job: dict, devices: dict[str, float]) -> dict:
    """GB needed to fine-tune (full, or LoRA over frozen bf16 weights) and the smallest device (GiB) it fits on."""
    trained = job["lora_params"] or job["params"]
    frozen = job["params"] if job["lora_params"] else 0
    need = (ADAM_MIXED_BYTES_PER_PARAM * trained + FROZEN_BYTES_PER_PARAM * frozen) / 1e9 + job["activation_gb"]
    fitting = [(gib, name) for name, gib in devices.items() if gib * 2**30 >= need * 1e9]
    return {"need_gb": need, "device": min(fitting)[1] if fitting else None}


def synchronizer(device: Any) -> Callable[[], None]:
    """How to wait for ``device``: its own ``synchronize``, torch's per backend, or nothing (CPU)."""
    if hasattr(device, "synchronize"):
        return device.synchronize
    kind = str(device).split(":")[0]
    if kind in ("cuda", "mps", "xpu"):
        import torch
        return getattr(torch, kind).synchronize
    return lambda: None


def time_call(fn: Callable[[], Any], device: Any, repeats: int = 5, warmup: int = 1,
              clock: Callable[[], float] = time.perf_counter) -> float:
    """Median seconds per call of ``fn`` on ``device``: warm up, synchronize before and after each call."""
    return _timed(fn, synchronizer(device), repeats, warmup, clock)


def _timed(fn: Callable[[], Any], sync: Callable[[], None], repeats: int, warmup: int,
           clock: Callable[[], float]) -> float:
    """Median seconds per call of ``fn``, waiting with ``sync`` before and after each timed call."""
    for _ in range(warmup):
        fn()
    samples = []
    for _ in range(repeats):
        sync()
        start = clock()
        fn()
        sync()
        samples.append(clock() - start)
    return statistics.median(samples)


def compare_devices(make_step: Callable[..., Callable[[], Any]], width: int = 512) -> dict:
    """Seconds per training step on the CPU and on the best accelerator (the CPU again when there is none)."""
    accel = pick_device()
    return {"cpu_s": time_call(make_step("cpu", width), "cpu"),
            "accel_s": time_call(make_step(accel, width), accel), "accel_device": accel}


def diagnose(timer: Callable) -> set[str]:
    """The methodology bugs of ``timer``, each found by an experiment on a virtual GPU with one effect switched on."""
    work = 0.01

    def run(repeats=1, warmup=0, **effect):
        gpu = VirtualGPU(work_s=work, **effect)
        return timer(gpu.launch, gpu, repeats=repeats, warmup=warmup, clock=gpu.clock)

    one = run()
    bugs = set()
    if one < work / 2:
        bugs.add("no_wait")                                     # the launch, not the work
    elif run(queued=20) > one + 10 * work:
        bugs.add("earlier_work")                                # someone else's 20 kernels counted
    if run(warmup=1, slow_first=1, first_s=100 * work) > one + 50 * work:
        bugs.add("no_warmup")                                   # the slow first call counted
    if run(repeats=4) > 3 * one:
        bugs.add("total")
    elif run(repeats=5, hiccup_at=(3,), hiccup_s=100 * work) > one + 10 * work:
        bugs.add("mean")                                        # one hiccup moved the result
    return bugs


# ---------------------------------------------------------------- expected answers of a case (cases marked
# "real" are this machine: the task reads the course's own detection for them, so they expect nothing here)
def _picker(case) -> str | None:
    if case.get("real"):
        return None
    try:
        return pick_device(case["prefer"], fake_torch(cuda=case["cuda"], mps=case["mps"], xpu=case["xpu"]))
    except ValueError:
        return None


def _mlx(case) -> str | None:
    install = case["install"]
    if install == "real":
        return None
    with mlx_modules(mlx_install(install)):
        return mlx_device()


EXPECT = {
    "picker": _picker,
    "mlx": _mlx,
    "setup": lambda case: training_setup(machine_torch(case), case["ram_bytes"]),
    "memory": lambda case: finetune_plan(case["job"], case["devices"]),
    "timer": lambda case: tasks._timer_answer(time_call, case)["seconds"],
    "audit": lambda case: [sorted(s["bugs"]) for s in case["suspects"]],
}


# ---------------------------------------------------------------- hidden cases
def _picker_hidden(rng) -> list:
    cases = [{"cuda": c, "mps": m, "xpu": x, "prefer": None}
             for c in (False, True) for m in (False, True) for x in (False, True)]
    cases += [{"cuda": c, "mps": m, "xpu": None, "prefer": None} for c, m in ((False, False), (False, True))]
    for _ in range(6):
        flags = {"cuda": rng.random() < 0.5, "mps": rng.random() < 0.5, "xpu": rng.choice([True, False, None])}
        on = [n for n in ("cuda", "mps", "xpu", "cpu") if n == "cpu" or flags[n]]
        off = [n for n in ("cuda", "mps", "xpu") if not flags[n]]
        cases.append({**flags, "prefer": rng.choice(on)})
        if off:
            cases.append({**flags, "prefer": rng.choice(off)})
    cases.append({"cuda": True, "mps": False, "xpu": False, "prefer": rng.choice(["tpu", "gpu", "CUDA", "rocm"])})
    rng.shuffle(cases)
    return cases


def _mlx_hidden(rng) -> list:
    installs = ["absent", "broken", "eval_fails", "metal", "cuda", "cpu"]
    rng.shuffle(installs)
    return [{"install": i} for i in installs]


OLD_NVIDIA = (("Tesla P100-PCIE-16GB", 16, (6, 0), 56), ("NVIDIA GeForce GTX 1080", 8, (6, 1), 20),
              ("Tesla K80", 12, (3, 7), 13))
# name, memory (GiB), gcnArchName, major.minor as torch reports it on ROCm (the gfx number), compute units
AMD = (("AMD Instinct MI250X", 64, "gfx90a:sramecc+:xnack-", (9, 0), 110),
       ("AMD Instinct MI325X", 256, "gfx942:sramecc+:xnack-", (9, 4), 304),
       ("AMD Instinct MI355X", 288, "gfx950:sramecc+:xnack-", (9, 5), 256),
       ("AMD Radeon PRO W7900", 48, "gfx1100", (11, 0), 96))
MACS = ("Apple M1 Pro", "Apple M2 Max", "Apple M3", "Apple M4 Max", "Apple M3 Ultra")


def _random_setup(rng, kind: str) -> dict:
    ram = rng.choice([8, 16, 24, 32, 64, 128, 192, 512]) * 2**30
    if kind == "nvidia":
        name, gib, (major, minor), sms = rng.choice(GPU_CATALOGUE + OLD_NVIDIA)
        gpu = {"name": name, "total_memory": int(gib * 2**30 * rng.uniform(0.97, 0.995)), "major": major,
               "minor": minor, "sms": sms}
        return {"gpus": [gpu] * rng.randint(1, 8), "ram_bytes": ram}
    if kind == "amd":
        name, gib, arch, (major, minor), cus = rng.choice(AMD)
        gpu = {"name": name, "total_memory": int(gib * 2**30 * rng.uniform(0.97, 0.995)), "major": major,
               "minor": minor, "sms": cus, "arch": arch}
        return {"gpus": [gpu] * rng.randint(1, 8), "hip": rng.choice(["6.2.41133", "6.4.43482", "7.0.51831"]),
                "ram_bytes": ram}
    if kind == "mac":
        gib = rng.choice([16, 32, 36, 48, 64, 96, 128])
        return {"mac": {"chip": rng.choice(MACS), "macos": rng.choice([[12, 7], [13, 6], [14, 6], [15, 3], [26, 1]]),
                        "recommended_gib": round(gib * rng.uniform(0.62, 0.78), 2)}, "ram_bytes": gib * 2**30}
    return {"ram_bytes": ram}


def _setup_hidden(rng) -> list:
    kinds = ["nvidia", "nvidia", "nvidia", "nvidia", "amd", "amd", "mac", "mac", "mac", "cpu"]
    return [_random_setup(rng, k) for k in kinds]


def _memory_hidden(rng) -> list:
    from autograder import profiles

    pool = [p for p in profiles.all_of() if p.memory_gib]
    cases = []
    for _ in range(5):
        chosen = rng.sample(pool, rng.randint(2, 6))
        lora = rng.choice([0, 0, rng.randint(1, 50) * 1e7])
        cases.append({"job": {"params": float(rng.randint(1, 400) * 1e8), "lora_params": lora,
                              "activation_gb": round(rng.uniform(0, 12), 2)},
                      "devices": {p.id: p.memory_gib for p in chosen}})
    # the GiB trap: the job needs more GB than the device's GiB figure, and fits
    gib = rng.choice([24, 32, 40, 48, 80, 96, 141])
    params = (gib * 1.05 * 2**30 / 1e9 - 2.0) * 1e9 / 16
    cases.append({"job": {"params": params, "lora_params": 0, "activation_gb": 2.0},
                  "devices": {"big": float(gib * 2), "exact": float(gib), "small": float(gib / 2)}})
    cases.append({"job": {"params": 2e9, "lora_params": 0, "activation_gb": 0.5}, "devices": {"a": 8.0, "b": 16.0}})
    rng.shuffle(cases)
    return cases


def _timer_hidden(rng) -> list:
    work = round(rng.uniform(0.005, 0.05), 4)
    return [
        {"probe": "plain", "device": "virtual", "gpu": {"work_s": work, "launch_s": 2e-4}, "repeats": rng.randint(3, 9),
         "warmup": rng.randint(1, 3)},
        {"probe": "queued", "device": "virtual", "gpu": {"work_s": work, "queued": rng.randint(3, 30)},
         "repeats": 1, "warmup": rng.randint(0, 2)},
        {"probe": "slow_first", "device": "virtual", "gpu": {"work_s": work, "slow_first": 3, "first_s": 0.5},
         "repeats": rng.choice([1, 2]), "warmup": 3},
        {"probe": "hiccup", "device": "virtual",
         "gpu": {"work_s": work, "hiccup_at": [rng.randint(3, 5)], "hiccup_s": 0.3}, "repeats": 7, "warmup": 2},
        {"probe": "string", "device": rng.choice(["cuda", "cuda:0", "mps"]), "gpu": {"work_s": work},
         "repeats": 3, "warmup": 1, "object": rng.random() < 0.5},
        {"probe": "cpu", "device": "cpu", "cpu_s": work, "repeats": rng.randint(2, 6), "warmup": rng.randint(0, 2)},
    ]


VALID_BUGS = [sorted(b for b in (wait, warm, reduce) if b)
              for wait in (None, "no_wait", "earlier_work") for warm in (None, "no_warmup")
              for reduce in (None, "mean", "total")]


def _audit_hidden(rng) -> list:
    return [{"suspects": [{"name": name, "bugs": rng.choice(VALID_BUGS), "style": rng.choice(["loop", "compact"])}
                          for name in "GHIJKLMN"]}]


HIDDEN = {
    "picker": _picker_hidden,
    "mlx": _mlx_hidden,
    "setup": _setup_hidden,
    "memory": _memory_hidden,
    "timer": _timer_hidden,
    "speedup": lambda rng: [{"width": rng.choice(speedup_widths()[::2])}],  # not the visible width: another input
    "audit": _audit_hidden,
}


# ---------------------------------------------------------------- known mistakes (pytest -k mistakes)
def _picker_mps_first(prefer=None, torch_module=None):
    if prefer is not None:
        return pick_device(prefer, torch_module)
    return next((n for n in ("mps", "cuda", "xpu") if _available(torch_module, n)), "cpu")


def _picker_unchecked(prefer=None, torch_module=None):
    return prefer if prefer in TORCH_NAMES else pick_device(prefer, torch_module)


def _picker_falls_back(prefer=None, torch_module=None):
    if prefer in TORCH_NAMES and not _available(torch_module, prefer):
        return pick_device(None, torch_module)
    return pick_device(prefer, torch_module)


def _picker_alias(prefer=None, torch_module=None):
    return pick_device({"gpu": "cuda"}.get(prefer, prefer), torch_module)


def _picker_no_getattr(prefer=None, torch_module=None):
    torch_module.xpu.is_available()  # AttributeError on a torch without torch.xpu
    return pick_device(prefer, torch_module)


def _picker_global_torch(prefer=None, torch_module=None):
    return pick_device(prefer)  # the global torch: this computer, whatever torch_module says


def _mlx_import_only():
    try:
        import mlx.core as mx
        return "gpu" if mx.is_available(mx.gpu) else "cpu"
    except ImportError:
        return None


def _mlx_import_error_only():
    try:
        import mlx.core as mx
    except ImportError:
        return None
    mx.eval(mx.array([1.0]) + 1)
    return "gpu" if mx.is_available(mx.gpu) else "cpu"


def _mlx_metal_only():
    if mlx_device() is None:
        return None
    import mlx.core as mx
    return "gpu" if mx.metal.is_available() else "cpu"


def _setup_with(**changes) -> Callable:
    """``training_setup`` with one rule replaced: ``changes`` maps a field to fn(torch_module, ram_bytes, right)."""
    def wrong(torch_module=None, ram_bytes=None):
        right = training_setup(torch_module, ram_bytes)
        return {**right, **{k: fn(torch_module, ram_bytes, right) for k, fn in changes.items()}}
    return wrong


def _bytes(torch_module, ram_bytes) -> int:
    """The bytes of memory the right answer reads for the machine's device."""
    device = pick_device(torch_module=torch_module)
    return (torch_module.cuda.get_device_properties(0).total_memory if device == "cuda"
            else torch_module.mps.recommended_max_memory() if device == "mps" else ram_bytes)


def _memory_with(need=None, choose=None) -> Callable:
    """``finetune_plan`` with its need (GB) or its choice of device replaced."""
    def wrong(job, devices):
        need_gb = need(job) if need else _right_need(job)
        return {"need_gb": need_gb, "device": (choose or _smallest)(need_gb, devices)}
    return wrong


def _smallest(need_gb, devices):
    """The smallest device (GiB) that holds ``need_gb`` (GB), the right rule."""
    fitting = [(gib, name) for name, gib in devices.items() if gib * 2**30 >= need_gb * 1e9]
    return min(fitting)[1] if fitting else None


def _right_need(job) -> float:
    return finetune_plan(job, {})["need_gb"]


def _timer_with(*bugs) -> Callable:
    """A learner's ``time_call`` that breaks the rules ``bugs`` (the audit's suspects, with a string device handled)."""
    suspect = tasks.suspect_timer(bugs)

    def wrong(fn, device, repeats=5, warmup=1, clock=time.perf_counter):
        class Waits:  # a string device waits through torch, as the right timer does
            synchronize = staticmethod(synchronizer(str(device) if isinstance(device, str) else device))
        return suspect(fn, Waits if not hasattr(type(device), "synchronize") else device, repeats, warmup, clock)
    return wrong


def _timer_string_blind(fn, device, repeats=5, warmup=1, clock=time.perf_counter):
    return tasks.suspect_timer(())(fn, device, repeats, warmup, clock)  # getattr(device, "synchronize", no-op)


def _timer_fixed_clock(fn, device, repeats=5, warmup=1, clock=time.perf_counter):
    return time_call(fn, device, repeats, warmup, time.perf_counter)


def _timer_one_warmup(fn, device, repeats=5, warmup=1, clock=time.perf_counter):
    return time_call(fn, device, repeats, 1, clock)


def _timer_stored_sync() -> Callable:
    """A timer whose torch synchronize functions were looked up once, in advance (a module-level dict)."""
    import torch

    stored = {kind: getattr(torch, kind).synchronize for kind in ("cuda", "mps", "xpu")}

    def wrong(fn, device, repeats=5, warmup=1, clock=time.perf_counter):
        sync = device.synchronize if hasattr(device, "synchronize") else stored.get(str(device).split(":")[0])
        return _timed(fn, sync or (lambda: None), repeats, warmup, clock)
    return wrong


def _speedup_recorded(**round_values) -> Recorded:
    """A recorded answer of a CPU-only machine: five rounds alike, each step built on the CPU and called 6 times
    (4.0 ms a call on the course's clock)."""
    good = {"cpu_s": 0.0042, "accel_s": 0.0041, "accel_device": "cpu",
            "builds": [{"device": "cpu", "calls": 6, "spent_s": 5 * 0.0043}] * 2}
    rounds = [{**good, **round_values}] * 5
    calls = [[0.0040, "step:cpu"]] * good["builds"][0]["calls"]  # each step call on the course's clock
    return Recorded({"rounds": rounds, "observed": {"walls": [1.0] * 5, "spans": [calls] * 5,
                                                    "reference": [{"cpu_s": 0.004, "accel_s": 0.004}] * 5}})


def _audit_without(step: str) -> Callable:
    """``diagnose`` with one experiment left out, or done so that it misses its bug or blames a right timer."""
    def wrong(timer):
        work = 0.01

        def run(repeats=1, warmup=0, **effect):
            gpu = VirtualGPU(work_s=work, **effect)
            return timer(gpu.launch, gpu, repeats=repeats, warmup=warmup, clock=gpu.clock)
        one = run()
        bugs = set()
        if one < work / 2 and step != "no_wait":
            bugs.add("no_wait")
        elif step != "earlier_work" and run(queued=20) > one + 10 * work:
            bugs.add("earlier_work")
        if step == "confounded":  # queued work and a slow first call at once, judged by a loose threshold
            if run(warmup=1, slow_first=1, first_s=100 * work, queued=20) > 1.5 * one:
                bugs.add("no_warmup")
        elif step == "warmup0":  # the slow first call, but no warm-up asked for: every timer times it
            if run(slow_first=1, first_s=100 * work) > one + 50 * work:
                bugs.add("no_warmup")
        elif step != "no_warmup" and run(warmup=1, slow_first=1, first_s=100 * work) > one + 50 * work:
            bugs.add("no_warmup")
        if step != "total" and run(repeats=4) > 3 * one:
            bugs.add("total")
        elif step == "repeats2":  # two samples: their median is their mean
            if run(repeats=2, hiccup_at=(2,), hiccup_s=100 * work) > one + 10 * work:
                bugs.add("mean")
        else:  # missed_mean: the hiccup falls on the warm-up call, which a right timer never times
            hiccup = (1,) if step == "mean" else (3,)
            if run(repeats=5, warmup=int(step == "mean"), hiccup_at=hiccup, hiccup_s=100 * work) > one + 10 * work:
                bugs.add("mean")
        return bugs
    return wrong


MISTAKES = {
    "picker": {"mps_before_cuda": _picker_mps_first, "prefer_unchecked": _picker_unchecked,
               "prefer_falls_back": _picker_falls_back, "unknown_name": _picker_alias,
               "no_getattr_xpu": _picker_no_getattr, "ignores_torch_module": _picker_global_torch},
    "mlx": {"mlx_import_only": _mlx_import_only, "mlx_exception_escapes": _mlx_import_error_only,
            "mlx_metal_only": _mlx_metal_only},
    "setup": {
        "rocm_name": _setup_with(device=lambda t, r, right: "rocm" if t.version.hip else right["device"]),
        "rocm_no_bf16": _setup_with(dtype=lambda t, r, right: "float16" if t.version.hip else right["dtype"]),
        "bf16_emulated": _setup_with(dtype=lambda t, r, right: "bfloat16" if right["device"] == "cuda"
                                     and t.cuda.is_bf16_supported() else right["dtype"]),
        "fp16_without_tensor_cores": _setup_with(dtype=lambda t, r, right: "float16" if right["dtype"] == "float32"
                                                 and right["device"] == "cuda" else right["dtype"]),
        "mps_bf16_old_macos": _setup_with(dtype=lambda t, r, right: "bfloat16" if right["device"] == "mps"
                                          else right["dtype"]),
        "gb_not_gib": _setup_with(memory_gib=lambda t, r, right: _bytes(t, r) / 1e9),
        "ram_for_mps": _setup_with(memory_gib=lambda t, r, right: r / 2**30 if right["device"] == "mps"
                                   else right["memory_gib"]),
    },
    "memory": {
        "full_as_frozen": _memory_with(need=lambda j: FROZEN_BYTES_PER_PARAM * j["params"] / 1e9 + j["activation_gb"]
                                       if not j["lora_params"] else _right_need(j)),
        "frozen_as_trained": _memory_with(need=lambda j: ADAM_MIXED_BYTES_PER_PARAM * (j["params"] + j["lora_params"])
                                          / 1e9 + j["activation_gb"]),
        "adapter_as_frozen": _memory_with(need=lambda j: FROZEN_BYTES_PER_PARAM * (j["params"] + j["lora_params"])
                                          / 1e9 + j["activation_gb"] if j["lora_params"] else _right_need(j)),
        "frozen_forgotten": _memory_with(need=lambda j: ADAM_MIXED_BYTES_PER_PARAM * (j["lora_params"] or j["params"])
                                         / 1e9 + j["activation_gb"]),
        "no_activations": _memory_with(need=lambda j: _right_need(j) - j["activation_gb"]),
        "need_in_gib": _memory_with(need=lambda j: _right_need(j) * 1e9 / 2**30,
                                    choose=lambda need, d: _smallest(need * 2**30 / 1e9, d)),
        "gb_vs_gib": _memory_with(choose=lambda need, d: min(((g, n) for n, g in d.items() if g >= need),
                                                             default=(0, None))[1]),
        "first_fit": _memory_with(choose=lambda need, d: next((n for n, g in d.items() if g * 2**30 >= need * 1e9),
                                                              None)),
        "largest_fit": _memory_with(choose=lambda need, d: max(((g, n) for n, g in d.items()
                                                                if g * 2**30 >= need * 1e9), default=(0, None))[1]),
    },
    "timer": {"no_wait": _timer_with("no_wait"), "string_device": _timer_string_blind,
              "stored_sync": _timer_stored_sync(),
              "earlier_work": _timer_with("earlier_work"), "no_warmup": _timer_one_warmup,
              "mean": _timer_with("mean"), "total": _timer_with("total"), "ignores_clock": _timer_fixed_clock},
    "speedup": {"one_call": _speedup_recorded(builds=[{"device": "cpu", "calls": 1, "spent_s": 0.0}] * 2),
                # one warm-up call, then three steps timed together and reported as one (the trial's answer)
                "steps_total": _speedup_recorded(cpu_s=0.0126, accel_s=0.0123,
                                                 builds=[{"device": "cpu", "calls": 4, "spent_s": 3 * 0.0042}] * 2),
                "ms_not_s": _speedup_recorded(cpu_s=4.2, accel_s=4.1)},
    "audit": {**{f"missed_{bug}": _audit_without(bug) for bug in BUGS}, "false_no_warmup": _audit_without("warmup0"),
              "false_mean": _audit_without("repeats2"), "false_alarm": _audit_without("confounded")},
}
