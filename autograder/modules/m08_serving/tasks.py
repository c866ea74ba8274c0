"""Tasks of module 08 (serving).

1 ``latency`` (warm-up): time to first token and time per output token of a model on a device, from its two roofs.
2 ``kv_plan``: KV-cache bytes per token and how many sequences fit beside the weights, reserved to the maximum length
and in paged blocks. 3 ``crossover``: the batch at which decode turns compute-bound (multi-head and grouped-query
attention). 4 ``speculative``: the speed-up of speculative decoding from a measured acceptance rate, and the draft
length that maximises it. 5 ``bench_log``: a published serving benchmark log read per GPU and per request.
6 ``int4`` (stretch): int4 weights or one more GPU for a token rate. These are exact: graded per key, and a wrong key
that a known mistake gives is named (the references answer each known mistake beside the right answer:
``want["mistakes"]``). 7 ``decode``: the learner's decode loop with a KV cache, measured side by side with the course's
reference decode, and on a virtual GPU where each methodology mistake is named from its evidence (``measure.py``).
"""
from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

from ...checks.core import Part, Task
from ...checks.keys import as_dict, exact_parts
from ...datafile import read_yaml
from ...i18n import Message, msg
from . import measure

REL = 1e-9        # exact tasks: relative tolerance for floating-point rounding (keys.EXACT)
LOG_REL = 1e-3    # bench_log: a rate from the printed totals or the printed rate (both rounded to 2 decimals)

KEYS = {"latency": ("ttft_s", "tpot_s"),
        "kv_plan": ("bytes_per_token", "static_sequences", "paged_sequences"),
        "crossover": ("batch",),
        "speculative": ("expected_tokens", "speedup", "best_gamma"),
        "bench_log": ("output_tokens_per_s_per_gpu", "tokens_per_s_per_request"),
        "int4": ("int4_tokens_per_s", "two_gpu_tokens_per_s", "choice")}
ARGS = {"latency": ("model", "device", "prompt_tokens"),
        "kv_plan": ("model", "memory_gib", "context", "max_context", "block_tokens"),
        "crossover": ("model", "device", "context"),
        "speculative": ("alpha", "gamma", "cost_ratio", "max_gamma"),
        "bench_log": ("log", "gpus"),
        "int4": ("model", "device", "target_tokens_per_s", "group_size")}
CHOICES = ("bf16", "int4", "two_gpus", "none")


def _m(key: str, **values) -> Message:
    return msg(f"m08.{key}", **values)


@lru_cache(maxsize=None)
def _data(name: str) -> dict:
    return read_yaml(Path(__file__).resolve().parent / "data" / f"{name}.yaml")


def model(name: str, weight_bytes: float = 2, kv_bytes: int = 2) -> dict:
    """A model of ``data/models.yaml`` as a task passes it: its shape, bytes per weight and per KV element."""
    m = _data("models")[name]
    return {"name": m["label"], **{k: m[k] for k in ("params", "layers", "heads", "kv_heads", "head_dim")},
            "weight_bytes": weight_bytes, "kv_bytes": kv_bytes}


def device(profile_id: str) -> dict:
    """A device of the course's profiles as a task passes it: dense bf16 peak, bandwidth and memory."""
    from ...profiles import get
    p = get(profile_id)
    return {"name": p.label, "peak_tflops": float(p.peak("bf16")), "bandwidth_gbs": float(p.bandwidth_gbs),
            "memory_gib": float(p.memory_gib)}


def benchmark_log(name: str) -> dict:
    """A published serving benchmark log of ``data/benchmark_logs.yaml``: its text and the GPUs that served it."""
    row = _data("benchmark_logs")[name]
    return {"log": row["log"], "gpus": int(row["gpus"]), "source": row["source"]}


LOG_LINE = re.compile(r"^(.+?):\s+([-\d.]+)\s*$", re.M)


def log_figures(log: str) -> dict[str, float]:
    """A vLLM serving benchmark log's figures by their printed names (the task's data: the checks' labels)."""
    return {k.strip(): float(v) for k, v in LOG_LINE.findall(log)}


def write_log(figures: dict) -> str:
    """A serving benchmark log in the layout vLLM prints, from its figures (the hidden cases' logs)."""
    rows = [("Successful requests", figures["requests"], "d"),
            ("Benchmark duration (s)", figures["duration_s"], ".2f"),
            ("Total input tokens", figures["input_tokens"], "d"),
            ("Total generated tokens", figures["output_tokens"], "d"),
            ("Request throughput (req/s)", figures["requests"] / figures["duration_s"], ".2f"),
            ("Output token throughput (tok/s)", figures["output_tokens"] / figures["duration_s"], ".2f"),
            ("Total Token throughput (tok/s)",
             (figures["input_tokens"] + figures["output_tokens"]) / figures["duration_s"], ".2f")]
    lines = [" Serving Benchmark Result ".center(50, "=")]
    lines += [f"{name + ':':<41}{value:{fmt}}" for name, value, fmt in rows]
    for title, short, mean in (("Time to First Token", "TTFT", figures["ttft_ms"]),
                               ("Time per Output Token (excl. 1st token)", "TPOT", figures["tpot_ms"])):
        lines.append(title.center(50, "-"))
        lines += [f"{f'Mean {short} (ms):':<41}{mean:.2f}", f"{f'Median {short} (ms):':<41}{mean * 0.93:.2f}",
                  f"{f'P99 {short} (ms):':<41}{mean * 2.1:.2f}"]
    return "\n".join(lines + ["=" * 50]) + "\n"


def _visible_latency() -> list:
    return [{"model": model("llama3_8b"), "device": device("l4"), "prompt_tokens": 2048},
            {"model": model("qwen25_7b"), "device": device("mi325x"), "prompt_tokens": 512},
            {"model": model("llama3_70b", 1, 1), "device": device("b200"), "prompt_tokens": 8}]


def _visible_kv_plan() -> list:
    return [{"model": model("llama3_8b"), "memory_gib": 24.0, "context": 1000, "max_context": 8192, "block_tokens": 16},
            {"model": model("llama2_7b"), "memory_gib": 80.0, "context": 700, "max_context": 4096, "block_tokens": 32},
            {"model": model("qwen25_7b", 2, 1), "memory_gib": 48.0, "context": 3000, "max_context": 32768,
             "block_tokens": 16}]


def _visible_crossover() -> list:
    return [{"model": model("llama3_8b"), "device": device("h100_sxm"), "context": 128},
            {"model": model("llama2_7b"), "device": device("h100_sxm"), "context": 32},
            {"model": model("llama2_7b"), "device": device("h100_sxm"), "context": 4096},
            {"model": model("llama3_70b", 1, 1), "device": device("mi300x"), "context": 1024}]


def _visible_speculative() -> list:
    return [{"alpha": 0.8, "gamma": 4, "cost_ratio": 0.05, "max_gamma": 10},
            {"alpha": 0.6, "gamma": 3, "cost_ratio": 0.2, "max_gamma": 8},
            {"alpha": 0.3, "gamma": 2, "cost_ratio": 0.5, "max_gamma": 6}]


def _visible_bench_log() -> list:
    return [{k: v for k, v in benchmark_log(name).items() if k != "source"}
            for name in ("vllm_pr_18566", "vllm_pr_43276")]


def _visible_int4() -> list:
    return [{"model": model("llama3_70b"), "device": device("h200_sxm"), "target_tokens_per_s": 30.0,
             "group_size": 128},
            {"model": model("llama3_8b"), "device": device("rtx_4090"), "target_tokens_per_s": 150.0, "group_size": 64},
            {"model": model("llama3_8b"), "device": device("l4"), "target_tokens_per_s": 15.0, "group_size": 128},
            {"model": model("llama3_70b"), "device": device("rtx_5090"), "target_tokens_per_s": 30.0,
             "group_size": 128}]


def _case_text(name: str, case: dict) -> str:
    if name == "speculative":
        return f"alpha {case['alpha']:g}, gamma {case['gamma']}, c {case['cost_ratio']:g}"
    if name == "bench_log":
        return f"{log_figures(case['log']).get('Successful requests', 0):g} requests on {case['gpus']} GPU(s)"
    where = case["device"]["name"] if "device" in case else f"{case['memory_gib']:g} GiB"
    return f"{case['model']['name']} on {where}"


def _answer(name: str):
    def answer(fn, case) -> dict:
        args = [dict(case[a]) if isinstance(case[a], dict) else case[a] for a in ARGS[name]]
        return as_dict(fn(*args), KEYS[name])
    return answer


def _score(name: str, rel: float = REL):
    def score(case, answer, want) -> list[Part]:
        parts = exact_parts(_case_text(name, case), want, answer, KEYS[name], rel=rel, mistakes="m08")
        if name == "int4" and answer.get("choice") not in CHOICES:
            parts.append(Part(False, _m("choice_values", choices=", ".join(map(repr, CHOICES))), weight=0))
        return parts
    return score


def _task(name: str, visible, kind: str, level: str, mistakes: tuple[str, ...], central: tuple[str, ...],
          rel: float = REL) -> Task:
    return Task(title=_m(f"title.{name}"), rule=_m(f"rule.{name}"), answer=_answer(name), score=_score(name, rel),
                visible=visible, kind=kind, level=level, mistakes=mistakes, central=central)


TASKS = {
    "latency": _task("latency", _visible_latency, "recall", "warm-up",
                     ("prefill_on_bandwidth", "decode_on_compute", "flops_without_2", "kv_not_read"),
                     ("prefill_on_bandwidth", "decode_on_compute")),
    "kv_plan": _task("kv_plan", _visible_kv_plan, "transfer", "core",
                     ("k_without_v", "query_heads", "gb_not_gib", "blocks_not_rounded"),
                     ("k_without_v", "query_heads")),
    "crossover": _task("crossover", _visible_crossover, "transfer", "core",
                       ("kv_ignored", "query_heads", "ridge_as_batch"), ("kv_ignored",)),
    "speculative": _task("speculative", _visible_speculative, "recall", "core",
                         ("all_or_nothing", "bonus_token_forgotten", "draft_cost_ignored"),
                         ("all_or_nothing", "draft_cost_ignored")),
    "bench_log": _task("bench_log", _visible_bench_log, "transfer", "core",
                       ("total_tokens_counted", "not_per_gpu", "server_rate_as_request_rate"),
                       ("total_tokens_counted", "server_rate_as_request_rate"), rel=LOG_REL),
    "int4": _task("int4", _visible_int4, "transfer", "stretch",
                  ("int4_as_one_byte", "scales_forgotten", "second_gpu_same_rate", "gb_not_gib"),
                  ("int4_as_one_byte",)),
    "decode": Task(title=_m("title.decode"), rule=_m("rule.decode"), answer=measure.answer, score=measure.score,
                   visible=measure.visible, measurement=True, reference=measure.reference, rounds=3, kind="recall",
                   level="core", mistakes=measure.MISTAKES, central=("recompute_prefix", "prefill_timed")),
}
