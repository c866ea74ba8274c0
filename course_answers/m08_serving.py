"""Reference answers, known mistakes and hidden cases of module 08 (serving).

Units: FLOPs and bytes are plain counts; TFLOP/s = 10^12 FLOP/s; GB/s = 10^9 bytes/s; device memory in GiB
(2^30 bytes). A step's time is bounded by both roofs: max(FLOPs / peak, bytes / bandwidth).

``EXPECT`` gives, beside each right answer, what each known mistake answers for the same case
(``"mistakes": {name: answer}``), so that a check can name the mistake it sees.
"""
from __future__ import annotations

import math

import torch

from autograder import profiles
from autograder.checks.core import Recorded, canonical, collect
from autograder.checks.keys import with_mistakes
from autograder.harness import time_fn
from autograder.knowledge import forward_flops
from autograder.llm import kv_cache_bytes, weight_bytes
from autograder.modules.m08_serving import decode, tasks

GIB = 2**30
SCALE_BYTES = 2  # int4 weights: one fp16 scale per group of weights


def _roofs(device: dict) -> tuple[float, float]:
    return device["peak_tflops"] * 1e12, device["bandwidth_gbs"] * 1e9


# ------------------------------------------------------------ 1. TTFT and TPOT
def latency(model, device, prompt_tokens, flops=forward_flops, kv_read=True, roofs="both"):
    """Batch 1: prefill runs the prompt's tokens through every weight and writes their KV cache; a decode step
    runs one token through every weight and reads the prompt's KV cache. Each takes the longer of its two roofs."""
    peak, bandwidth = _roofs(device)
    kv = kv_cache_bytes(model, 1, prompt_tokens) if kv_read else 0
    moved = weight_bytes(model) + kv

    def step(tokens, roof):
        compute, memory = flops(model["params"], tokens) / peak, moved / bandwidth
        return {"compute": compute, "memory": memory, "both": max(compute, memory)}[roof]
    return {"ttft_s": step(prompt_tokens, "memory" if roofs == "prefill_memory" else "both"),
            "tpot_s": step(1, "compute" if roofs == "decode_compute" else "both")}


# ------------------------------------------------------------ 2. KV cache per token, sequences that fit
def kv_plan(model, memory_gib, context, max_context, block_tokens, unit=GIB, rounded=True):
    """Sequences whose KV cache fits beside the weights: reserved to ``max_context`` each (static), or in blocks of
    ``block_tokens`` as the sequence needs them (paged: its last block partly empty)."""
    per_token = kv_cache_bytes(model, 1, 1)
    free = memory_gib * unit - weight_bytes(model)
    held = math.ceil(context / block_tokens) * block_tokens if rounded else context
    return {"bytes_per_token": per_token, "static_sequences": max(0, math.floor(free / (per_token * max_context))),
            "paged_sequences": max(0, math.floor(free / (per_token * held)))}


# ------------------------------------------------------------ 3. the batch at which decode turns compute-bound
def compute_bound_batch(model, device, context, kv=True):
    """The smallest batch whose decode step takes longer on the compute roof (2 x params FLOPs per sequence) than on
    the memory roof (the weights once, plus each sequence's KV cache); None where the KV cache grows faster than the
    compute, so that no batch gets there."""
    peak, bandwidth = _roofs(device)
    per_sequence = kv_cache_bytes(model, 1, context) / bandwidth if kv else 0.0
    gain = forward_flops(model["params"], 1) / peak - per_sequence
    if gain <= 0:
        return {"batch": None}
    batch = max(1, math.ceil(weight_bytes(model) / bandwidth / gain))
    while batch > 1 and (batch - 1) * gain >= weight_bytes(model) / bandwidth:  # rounding: the smallest such batch
        batch -= 1
    return {"batch": batch}


def _crossover_ridge(model, device, context):
    peak, bandwidth = _roofs(device)
    return {"batch": math.ceil(peak / bandwidth)}


# ------------------------------------------------------------ 4. speculative decoding
def expected_tokens(alpha, gamma):
    """Tokens one verification step yields (Leviathan et al., 2023, eq. 1): 1 + alpha + ... + alpha^gamma."""
    return gamma + 1 if alpha == 1 else (1 - alpha ** (gamma + 1)) / (1 - alpha)


def speculative(alpha, gamma, cost_ratio, max_gamma, tokens=expected_tokens, cost=True):
    """The speed-up over plain decoding: a step costs gamma draft steps (each ``cost_ratio`` of a target step) and
    one target step; best_gamma maximises it over 1..max_gamma (the smallest on a tie)."""
    def speedup(g):
        return tokens(alpha, g) / (g * cost_ratio + 1 if cost else 1)
    best = max(range(1, max_gamma + 1), key=lambda g: (speedup(g), -g))
    return {"expected_tokens": tokens(alpha, gamma), "speedup": speedup(gamma), "best_gamma": best}


def _all_or_nothing(alpha, gamma):
    return 1 + gamma * alpha ** gamma


def _one_term_short(alpha, gamma):
    return expected_tokens(alpha, gamma - 1)


# ------------------------------------------------------------ 5. a published benchmark log
def read_benchmark(log, gpus, total=False, per_gpu=True, request_from_tpot=True):
    """Output tokens per second per GPU (generated tokens only), and the tokens per second one request sees
    (1 / its mean time per output token)."""
    figures = tasks.log_figures(log)
    tokens = figures["Total generated tokens"] + (figures["Total input tokens"] if total else 0)
    server = figures["Total generated tokens"] / figures["Benchmark duration (s)"]
    return {"output_tokens_per_s_per_gpu": tokens / figures["Benchmark duration (s)"] / (gpus if per_gpu else 1),
            "tokens_per_s_per_request": 1000 / figures["Mean TPOT (ms)"] if request_from_tpot else server}


# ------------------------------------------------------------ 6. int4 weights or a second GPU
def int4_or_second_gpu(model, device, target_tokens_per_s, group_size, int4_bytes=0.5, scales=True,
                       second_reads_half=True, unit=GIB):
    """Batch-1 decode on the memory roof (the KV cache of a short context left out): bf16 weights on one GPU, int4
    weights with an fp16 scale per group on one GPU, or bf16 weights split over two GPUs (each reads its half at
    the same time). The choice: the first of these that fits and reaches the target (fewest GPUs, then no
    quantization), else "none"."""
    bandwidth, memory = device["bandwidth_gbs"] * 1e9, device["memory_gib"] * unit
    params = model["params"]
    per_weight = int4_bytes + (SCALE_BYTES / group_size if scales else 0)
    options = {"bf16": (2 * params, 2 * params), "int4": (params * per_weight, params * per_weight),
               "two_gpus": (params, params if second_reads_half else 2 * params)}  # (held per GPU, read per GPU)
    rate = {name: bandwidth / read for name, (_, read) in options.items()}
    choice = next((name for name, (held, _) in options.items()
                   if held <= memory and rate[name] >= target_tokens_per_s), "none")
    return {"int4_tokens_per_s": rate["int4"], "two_gpu_tokens_per_s": rate["two_gpus"], "choice": choice}


# ------------------------------------------------------------ 7. a decode loop with a KV cache, timed
def _decoder(model, prompt_ids, new_tokens, prefill_inside=False, recompute=False):
    """The greedy decode of ``new_tokens`` tokens after the prompt: prefilled once outside (the cache rewound to the
    prompt before each call), each step one token through ``step``; or, wrongly, the prefill inside the call, or the
    whole sequence through ``forward_full`` at each step."""
    length = prompt_ids.shape[1]
    scores, cache = model.prefill(prompt_ids, capacity=length + new_tokens)
    after_prompt = scores.argmax(dim=-1, keepdim=True)

    def decode():
        if recompute:
            seq = torch.cat([prompt_ids, after_prompt], dim=1)
            for _step in range(new_tokens):
                nxt = model.forward_full(seq)[:, -1].argmax(dim=-1, keepdim=True)
                seq = torch.cat([seq, nxt], dim=1)
            return seq[:, length + 1:]
        if prefill_inside:
            scores, kv = model.prefill(prompt_ids, capacity=length + new_tokens)
            nxt = scores.argmax(dim=-1, keepdim=True)
        else:
            cache.rewind(length)
            nxt, kv = after_prompt, cache
        made = []
        for _step in range(new_tokens):
            scores, kv = model.step(nxt, kv)
            nxt = scores.argmax(dim=-1, keepdim=True)
            made.append(nxt)
        return torch.cat(made, dim=1)
    return decode


def decode_loop(model, prompt_ids, new_tokens, device, synchronize=True, counted=None, **wrong):
    """Decode tokens per second: the decode steps alone, timed with ``time_fn`` on the device, generated tokens
    (batch x new_tokens) over the median time of one decode."""
    decode = _decoder(model, prompt_ids, new_tokens, **wrong)
    seconds = time_fn(decode, device=device if synchronize else "cpu", budget_s=0.2).median_s
    tokens = prompt_ids.shape[0] * (new_tokens if counted is None else counted(prompt_ids, new_tokens))
    return {"tokens": decode(), "seconds": seconds, "tokens_per_s": tokens / seconds}


# ------------------------------------------------------------ known mistakes
def _with(fn, **options):
    return lambda *args: fn(*args, **options)


def _count_heads(fn):
    """``fn`` with the KV cache counted with the query heads."""
    return lambda model, *args: fn({**model, "kv_heads": model["heads"]}, *args)


def _k_only(fn):
    """``fn`` with the KV cache's 2 (K and V) left out: as if a token stored half as many bytes."""
    return lambda model, *args: fn({**model, "head_dim": model["head_dim"] / 2}, *args)


MISTAKES = {
    "latency": {"prefill_on_bandwidth": _with(latency, roofs="prefill_memory"),
                "decode_on_compute": _with(latency, roofs="decode_compute"),
                "flops_without_2": _with(latency, flops=lambda params, tokens: params * tokens),
                "kv_not_read": _with(latency, kv_read=False)},
    "kv_plan": {"k_without_v": _k_only(kv_plan), "query_heads": _count_heads(kv_plan),
                "gb_not_gib": _with(kv_plan, unit=1e9), "blocks_not_rounded": _with(kv_plan, rounded=False)},
    "crossover": {"kv_ignored": _with(compute_bound_batch, kv=False),
                  "query_heads": _count_heads(compute_bound_batch), "ridge_as_batch": _crossover_ridge},
    "speculative": {"all_or_nothing": _with(speculative, tokens=_all_or_nothing),
                    "bonus_token_forgotten": _with(speculative, tokens=_one_term_short),
                    "draft_cost_ignored": _with(speculative, cost=False)},
    "bench_log": {"total_tokens_counted": _with(read_benchmark, total=True),
                  "not_per_gpu": _with(read_benchmark, per_gpu=False),
                  "server_rate_as_request_rate": _with(read_benchmark, request_from_tpot=False)},
    "int4": {"int4_as_one_byte": _with(int4_or_second_gpu, int4_bytes=1),
             "scales_forgotten": _with(int4_or_second_gpu, scales=False),
             "second_gpu_same_rate": _with(int4_or_second_gpu, second_reads_half=False),
             "gb_not_gib": _with(int4_or_second_gpu, unit=1e9)},
}

def _course_timing(model, prompt_ids, new_tokens, device):
    """The course's own decode timing run in place of the learner's loop."""
    seconds = decode.time_decode(model, prompt_ids, new_tokens, device, budget_s=0.2).median_s
    made = _decoder(model, prompt_ids, new_tokens)()
    return {"tokens": made, "seconds": seconds, "tokens_per_s": prompt_ids.shape[0] * new_tokens / seconds}


WRONG_DECODES = {"reference_called": _course_timing,"recompute_prefix": _with(decode_loop, recompute=True),
                 "prefill_timed": _with(decode_loop, prefill_inside=True),
                 "no_synchronize": _with(decode_loop, synchronize=False),
                 "prompt_counted": _with(decode_loop, counted=lambda ids, new: ids.shape[1] + new)}


class _RecordedOnTheVirtualGPU(dict):
    """The decode task's wrong answers as its check records them on the virtual GPU (the visible case whose clock
    is exact, so the record does not depend on the machine's load), recorded when one is asked for."""

    def __getitem__(self, name: str) -> Recorded:
        t = tasks.TASKS["decode"]
        i, case = next((i, c) for i, c in enumerate(canonical(list(t.visible()))) if c["kind"] == "virtual")
        record, = collect(t, WRONG_DECODES[name], [case], "m08.decode")
        return Recorded(record["answer"], case=i)


MISTAKES["decode"] = _RecordedOnTheVirtualGPU.fromkeys(WRONG_DECODES)


# ---------------------------------------------------------------- expected answers of a case
EXPECT = {name: with_mistakes(tasks.TASKS[name], reference, MISTAKES[name]) for name, reference in (
    ("latency", latency),
    ("kv_plan", kv_plan),
    ("crossover", compute_bound_batch),
    ("speculative", speculative),
    ("bench_log", read_benchmark),
    ("int4", int4_or_second_gpu),
)}


# ---------------------------------------------------------------- hidden cases
HIDDEN_DEVICES = [p.id for p in profiles.all_of("gpu") if p.peak("bf16") and p.bandwidth_gbs and p.memory_gib]
NAMED = ("llama2_7b", "llama3_8b", "llama3_70b", "qwen25_7b")


def _synthetic(rng, i: int) -> dict:
    """A made-up decoder shape: 1 to 64 KV heads, multi-head attention among them."""
    kv_heads = rng.choice([1, 2, 4, 8, 16, 32])
    return {"name": f"synthetic model {i}", "params": float(rng.randint(5 * 10**8, 2 * 10**11)),
            "layers": rng.randint(12, 96), "heads": kv_heads * rng.choice([1, 2, 4, 8]), "kv_heads": kv_heads,
            "head_dim": rng.choice([64, 80, 96, 128, 256]), "weight_bytes": rng.choice([1, 2]),
            "kv_bytes": rng.choice([1, 2])}


def _a_model(rng, i: int) -> dict:
    if rng.random() < 0.5:
        return tasks.model(rng.choice(NAMED), rng.choice([1, 2]), rng.choice([1, 2]))
    return _synthetic(rng, i)


def _latency_hidden(rng) -> list:
    cases = [{"model": _a_model(rng, i), "device": tasks.device(rng.choice(HIDDEN_DEVICES)),
              "prompt_tokens": rng.choice([rng.randint(1, 64), rng.randint(256, 32768)])} for i in range(4)]
    return cases + [{"model": tasks.model("llama2_7b"), "device": tasks.device("a100_sxm_80gb"), "prompt_tokens": 1}]


def _kv_plan_hidden(rng) -> list:
    cases = []
    while len(cases) < 5:
        m = _a_model(rng, len(cases))
        memory = rng.choice([16, 24, 32, 48, 80, 96, 141, 192])
        if weight_bytes(m) >= memory * GIB * 0.9:
            continue
        max_context = rng.choice([2048, 4096, 8192, 32768, 131072])
        cases.append({"model": m, "memory_gib": float(memory), "context": rng.randint(1, max_context),
                      "max_context": max_context, "block_tokens": rng.choice([8, 16, 32, 64])})
    return cases


def _crossover_hidden(rng) -> list:
    cases = [{"model": _a_model(rng, i), "device": tasks.device(rng.choice(HIDDEN_DEVICES)),
              "context": rng.choice([1, 16, 64, 256, 1024, 8192])} for i in range(4)]
    mqa = {**tasks.model("llama2_7b"), "name": "Llama 2 7B with one KV head", "kv_heads": 1}
    return cases + [{"model": mqa, "device": tasks.device("h200_sxm"), "context": rng.choice([512, 2048])}]


def _speculative_hidden(rng) -> list:
    cases = [{"alpha": round(rng.uniform(0.05, 0.95), 3), "gamma": rng.randint(1, 8),
              "cost_ratio": round(rng.uniform(0.01, 0.6), 3), "max_gamma": rng.randint(2, 12)} for _ in range(4)]
    return cases + [{"alpha": 1.0, "gamma": rng.randint(1, 6), "cost_ratio": 0.1, "max_gamma": 6}]


def _bench_log_hidden(rng) -> list:
    cases = []
    for _ in range(3):
        requests, duration = rng.randint(200, 5000), round(rng.uniform(20, 900), 2)
        figures = {"requests": requests, "duration_s": duration, "input_tokens": requests * rng.randint(50, 8000),
                   "output_tokens": requests * rng.randint(64, 2048), "ttft_ms": rng.uniform(20, 8000),
                   "tpot_ms": rng.uniform(3, 200)}
        cases.append({"log": tasks.write_log(figures), "gpus": rng.choice([1, 2, 4, 8])})
    return cases


def _int4_hidden(rng) -> list:
    cases = []
    for i in range(5):
        m = tasks.model(rng.choice(NAMED)) if i % 2 else {**_synthetic(rng, i), "weight_bytes": 2}
        d = tasks.device(rng.choice(HIDDEN_DEVICES))
        bf16 = d["bandwidth_gbs"] * 1e9 / (2 * m["params"])
        cases.append({"model": m, "device": d, "group_size": rng.choice([32, 64, 128, 256]),
                      "target_tokens_per_s": round(bf16 * rng.choice([0.5, 1.5, 3, 5]), 3)})
    return cases


HIDDEN = {
    "latency": _latency_hidden,
    "kv_plan": _kv_plan_hidden,
    "crossover": _crossover_hidden,
    "speculative": _speculative_hidden,
    "bench_log": _bench_log_hidden,
    "int4": _int4_hidden,
    "decode": lambda rng: [{"kind": "virtual", "batch": rng.choice([1, 3]), "prompt_len": rng.choice([16, 48]),
                            "new_tokens": rng.choice([4, 12]), "step_ms": rng.choice([1.0, 3.0]),
                            "prefill_ms": rng.choice([4.0, 9.0]), "launch_us": rng.choice([200.0, 800.0])}],
}
