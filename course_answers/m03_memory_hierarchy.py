"""Reference answers, known mistakes and hidden cases of module 03 (memory hierarchy and roofline).

Units: FLOPs and bytes are plain counts; TFLOP/s = 10^12 FLOP/s; GB/s = 10^9 bytes/s; device memory as a
vendor prints it ("80 GB") is binary: 80 GiB = 80 x 2^30 bytes. Traffic is the *minimum* a kernel must move:
each input read once, each output written once.

``EXPECT`` gives, beside each right answer, what each known mistake answers for the same case
(``"mistakes": {name: answer}``), so that a check can name the mistake it sees.
"""
from __future__ import annotations

import math
import statistics
from typing import Any, Sequence

from autograder import profiles
from autograder.checks.core import Recorded
from autograder.checks.keys import with_mistakes
from autograder.harness import time_fn
from autograder.llm import kv_cache_bytes
from autograder.modules.m03_memory_hierarchy import tasks

BYTES_PER_ELEMENT = {"fp64": 8, "fp32": 4, "tf32": 4, "bf16": 2, "fp16": 2, "fp8": 1, "int8": 1}
OPS = {"add": 1, "matvec": 2, "matmul": 3}  # op -> number of dimensions in its shape


# ------------------------------------------------------------ 1. arithmetic intensity
def _sizes(op: str, shape: Sequence[int]) -> tuple[int, int, int]:
    """(FLOPs, elements read, elements written) of ``op`` on ``shape``."""
    if op not in OPS:
        raise ValueError(f"unknown op {op!r}: use one of {sorted(OPS)}")
    dims = [int(d) for d in shape]
    if len(dims) != OPS[op] or min(dims) < 1:
        raise ValueError(f"{op} needs {OPS[op]} positive dimensions, got {list(shape)}")
    if op == "add":
        (n,) = dims
        return n, 2 * n, n
    if op == "matvec":
        m, n = dims
        return 2 * m * n, m * n + n, m
    m, k, n = dims
    return 2 * m * k * n, m * k + k * n, m * n


def arithmetic_intensity(op: str, shape: Sequence[int], dtype: str) -> dict:
    """FLOPs, minimum bytes moved and their ratio for ``op`` on ``shape`` in ``dtype``.

    ``add``: z = x + y, all of ``[n]``. ``matvec``: y = A x, A ``[m, n]``. ``matmul``: C = A B, A ``[m, k]``,
    B ``[k, n]``. A multiply-add is 2 FLOPs.
    """
    if dtype not in BYTES_PER_ELEMENT:
        raise ValueError(f"unknown dtype {dtype!r}: use one of {sorted(BYTES_PER_ELEMENT)}")
    flops, read, written = _sizes(op, shape)
    moved = (read + written) * BYTES_PER_ELEMENT[dtype]
    return {"flops": flops, "bytes": moved, "intensity": flops / moved}


def _intensity_without_output(op, shape, dtype):
    flops, read, _ = _sizes(op, shape)
    moved = read * BYTES_PER_ELEMENT[dtype]
    return {"flops": flops, "bytes": moved, "intensity": flops / moved}


def _intensity_fma_as_one(op, shape, dtype):
    right = arithmetic_intensity(op, shape, dtype)
    flops = right["flops"] // 2 if op != "add" else right["flops"]
    return {"flops": flops, "bytes": right["bytes"], "intensity": flops / right["bytes"]}


def _intensity_per_element(op, shape, dtype):
    flops, read, written = _sizes(op, shape)
    return {"flops": flops, "bytes": read + written, "intensity": flops / (read + written)}


# ------------------------------------------------------------ 2. a datasheet's roofline
def printed_number(text: str) -> float:
    """``"1,979 TFLOPS*"`` -> 1979.0: the number a datasheet prints, without separators or footnote marks."""
    return float(text.strip().split()[0].rstrip("*").replace(",", ""))


def dense_tflops(row: dict) -> float:
    """The dense peak of a datasheet row: the figure without a sparsity mark, else half the marked one."""
    sparse_mark = "sparsity" in row.get("footnote", "").lower()
    figures = [f.strip() for f in row["peak"].split("|")]
    dense = [f for f in figures if not (sparse_mark and f.endswith("*"))]
    return printed_number(dense[0]) if dense else printed_number(figures[0]) / 2


def bandwidth_gbs(row: dict) -> float:
    """A row's memory bandwidth in GB/s, whether it is printed in TB/s or GB/s."""
    number, unit = printed_number(row["bandwidth"]), row["bandwidth"].split()[1]
    return number * {"TB/s": 1000.0, "GB/s": 1.0}[unit]


def memory_bytes(row: dict) -> int:
    """A row's memory capacity in bytes: a vendor's "GB" of device memory is GiB."""
    return int(printed_number(row["memory"]) * 2**30)


def roofline_point(peak_tflops: float, bandwidth: float, intensity: float) -> dict:
    """Ridge (FLOP/byte), attainable TFLOP/s and the bound ("memory" below the ridge, else "compute")."""
    ridge = peak_tflops * 1e12 / (bandwidth * 1e9)
    return {"ridge": ridge, "attainable_tflops": min(peak_tflops, intensity * bandwidth * 1e9 / 1e12),
            "bound": "memory" if intensity < ridge else "compute"}


def datasheet_roofline(row: dict, intensity: float) -> dict:
    """:func:`roofline_point` of a datasheet row: its dense peak and its bandwidth in GB/s."""
    return roofline_point(dense_tflops(row), bandwidth_gbs(row), intensity)


def _roofline_sparse_as_dense(row, intensity):
    return roofline_point(max(printed_number(f) for f in row["peak"].split("|")), bandwidth_gbs(row), intensity)


def _roofline_star_halved(row, intensity):
    """Every starred figure taken for a sparsity figure, whatever the footnote says the star means."""
    figures = [f.strip() for f in row["peak"].split("|")]
    dense = [f for f in figures if not f.endswith("*")]
    peak = printed_number(dense[0]) if dense else printed_number(figures[0]) / 2
    return roofline_point(peak, bandwidth_gbs(row), intensity)


def _roofline_tb_as_gb(row, intensity):
    return roofline_point(dense_tflops(row), printed_number(row["bandwidth"]), intensity)


def _roofline_no_cap(row, intensity):
    right = datasheet_roofline(row, intensity)
    return {**right, "attainable_tflops": intensity * bandwidth_gbs(row) * 1e9 / 1e12}


def _roofline_tie_is_memory(row, intensity):
    right = datasheet_roofline(row, intensity)
    return {**right, "bound": "memory" if intensity <= right["ridge"] else "compute"}


# ------------------------------------------------------------ 3. fusion
def _chain(steps: list, sizes: dict, size_of=max) -> tuple[dict, set]:
    """Elements of every tensor of a chain (a step's output: ``size_of`` its distinct tensor operands' elements), and
    the inputs of ``sizes`` that the steps use."""
    elements = dict(sizes)
    for output, _op, operands in steps:
        elements[output] = size_of([elements[t] for t in dict.fromkeys(operands) if isinstance(t, str)])
    used = {o for _, _, operands in steps for o in operands if isinstance(o, str) and o in sizes}
    return elements, used


def fused_traffic(steps: list, sizes: dict, bytes_per_element: int) -> dict:
    """Bytes a chain of element-wise steps moves as one kernel per step, and fused into one kernel.

    ``steps``: ``[output, op, operands]`` in order; an operand is a tensor name (of ``sizes`` or an earlier
    output) or a number (a scalar, held in registers). A step's output has as many elements as its largest tensor
    operand (the others broadcast). One kernel per step reads each of its distinct tensors once and writes its
    output; the fused kernel reads once each input that the steps use and writes the last output only.
    """
    elements, used = _chain(steps, sizes)
    unfused = sum(sum(elements[t] for t in dict.fromkeys(operands) if isinstance(t, str)) + elements[output]
                  for output, _op, operands in steps)
    fused = sum(sizes[name] for name in used) + elements[steps[-1][0]]
    return {"unfused_bytes": unfused * bytes_per_element, "fused_bytes": fused * bytes_per_element}


def _fusion_keeps_intermediates(steps, sizes, bytes_per_element):
    right = fused_traffic(steps, sizes, bytes_per_element)
    return {**right, "fused_bytes": right["unfused_bytes"]}


def _fusion_writes_intermediates(steps, sizes, bytes_per_element):
    """The fused kernel counted as reading its inputs once but writing every step's output, not only the last."""
    elements, used = _chain(steps, sizes)
    fused = sum(sizes[name] for name in used) + sum(elements[output] for output, _, _ in steps)
    return {**fused_traffic(steps, sizes, bytes_per_element), "fused_bytes": fused * bytes_per_element}


def _fusion_unused_input(steps, sizes, bytes_per_element):
    """The fused kernel counted as reading every tensor of ``sizes``, also those no step uses."""
    elements, _ = _chain(steps, sizes)
    fused = sum(sizes.values()) + elements[steps[-1][0]]
    return {**fused_traffic(steps, sizes, bytes_per_element), "fused_bytes": fused * bytes_per_element}


def _fusion_first_operand(steps, sizes, bytes_per_element):
    """A step's output sized from its first tensor operand instead of its largest."""
    elements, used = _chain(steps, sizes, size_of=lambda counts: counts[0])
    unfused = sum(sum(elements[t] for t in dict.fromkeys(operands) if isinstance(t, str)) + elements[output]
                  for output, _op, operands in steps)
    fused = sum(sizes[name] for name in used) + elements[steps[-1][0]]
    return {"unfused_bytes": unfused * bytes_per_element, "fused_bytes": fused * bytes_per_element}


def _fusion_per_use(steps, sizes, bytes_per_element):
    """Every use of a tensor counted as a read of its own, in both kernels."""
    elements, _ = _chain(steps, sizes)
    uses = [(output, [o for o in operands if isinstance(o, str)]) for output, _op, operands in steps]
    unfused = sum(sum(elements[t] for t in tensors) + elements[output] for output, tensors in uses)
    fused = sum(sizes[t] for _, tensors in uses for t in tensors if t in sizes) + elements[steps[-1][0]]
    return {"unfused_bytes": unfused * bytes_per_element, "fused_bytes": fused * bytes_per_element}


def _fusion_broadcast_as_full(steps, sizes, bytes_per_element):
    """A broadcast operand counted as if it were as large as the step's output."""
    elements, used = _chain(steps, sizes)
    unfused = sum((len([t for t in dict.fromkeys(operands) if isinstance(t, str)]) + 1) * elements[output]
                  for output, _op, operands in steps)
    fused = len(used) * max(sizes.values()) + elements[steps[-1][0]]
    return {"unfused_bytes": unfused * bytes_per_element, "fused_bytes": fused * bytes_per_element}


def _fusion_reads_only(steps, sizes, bytes_per_element):
    elements, used = _chain(steps, sizes)
    unfused = sum(sum(elements[t] for t in dict.fromkeys(operands) if isinstance(t, str)) for _, _op, operands in steps)
    return {"unfused_bytes": unfused * bytes_per_element,
            "fused_bytes": sum(sizes[name] for name in used) * bytes_per_element}


# ------------------------------------------------------------ 4. LLM decoding
def kv_bytes_per_sequence(model: dict, context: int, windowed=lambda context, window: min(context, window)) -> int:
    """KV-cache bytes of one sequence of ``context`` tokens: the global layers keep every token, the
    ``local_layers`` sliding-window layers the last ``window`` tokens only (``windowed(context, window)`` of them)."""
    local = int(model.get("local_layers") or 0)
    kv = kv_cache_bytes({**model, "layers": int(model["layers"]) - local}, 1, context)
    return kv + (kv_cache_bytes({**model, "layers": local}, 1, windowed(context, model["window"])) if local else 0)


def decode_bound(model: dict, batch: int, context: int, bandwidth_gbs: float) -> dict:
    """Upper bound on decode throughput when every step reads all weights and the whole KV cache once.

    ``kv_cache_bytes`` (the batch's), ``bytes_per_step`` (weights + KV cache), ``step_s`` (the lower bound on one
    decode step) and ``tokens_per_s`` (the batch makes one token per sequence per step).
    """
    return _decode_with(batch * kv_bytes_per_sequence(model, context), model, batch, bandwidth_gbs, step=True)


def _decode_with(kv: float, model: dict, batch: int, bandwidth_gbs: float, tokens: float | None = None,
                 step: bool = False) -> dict:
    step_bytes = float(model["params"]) * float(model["weight_bytes"]) + kv
    step_s = step_bytes / (bandwidth_gbs * 1e9)
    out = {"kv_cache_bytes": kv, "bytes_per_step": step_bytes, "tokens_per_s": batch / step_s if tokens is None else tokens}
    return {**out, "step_s": step_s} if step else out


def _decode_window_ignored(model, batch, context, bandwidth_gbs):
    """The lesson's formula on every layer, as if none kept a window only."""
    return _decode_with(kv_cache_bytes(model, batch, context), model, batch, bandwidth_gbs)


def _decode_window_on_every_layer(model, batch, context, bandwidth_gbs):
    local = {**model, "local_layers": model["layers"]} if model.get("window") else model
    return _decode_with(batch * kv_bytes_per_sequence(local, context), model, batch, bandwidth_gbs)


def _decode_window_longer(model, batch, context, bandwidth_gbs):
    """A local layer counted as holding a whole window even when the context is shorter."""
    kv = batch * kv_bytes_per_sequence(model, context, windowed=lambda context, window: window)
    return _decode_with(kv, model, batch, bandwidth_gbs)


def _decode_query_heads(model, batch, context, bandwidth_gbs):
    kv = batch * kv_bytes_per_sequence({**model, "kv_heads": model["heads"]}, context)
    return _decode_with(kv, model, batch, bandwidth_gbs)


def _decode_k_only(model, batch, context, bandwidth_gbs):
    return _decode_with(batch * kv_bytes_per_sequence(model, context) // 2, model, batch, bandwidth_gbs)


def _decode_one_sequence(model, batch, context, bandwidth_gbs):
    return _decode_with(kv_bytes_per_sequence(model, context), model, batch, bandwidth_gbs)


def _decode_one_token_per_step(model, batch, context, bandwidth_gbs):
    right = decode_bound(model, batch, context, bandwidth_gbs)
    return _decode_with(right["kv_cache_bytes"], model, batch, bandwidth_gbs, tokens=1 / right["step_s"])


# ------------------------------------------------------------ 5. debugging a measurement (simulated GPU)
SAMPLE_S = 1e-3  # a timed sample must be long next to a launch (the harness's rule)


def _timed(dev, src, dst, reps: int, sync: bool = True) -> float:
    start = dev.clock()
    for _ in range(reps):
        dev.copy_(dst, src)
    if sync:
        dev.synchronize()
    return (dev.clock() - start) / reps


def copy_bandwidth_gbs(dev, nbytes: int | None = None, warm_up: bool = True, sync: bool = True,
                       sample_s: float = SAMPLE_S, counted: int = 2, unit: float = 1e9) -> float:
    """Copy bandwidth of device memory (GB/s, read + write) on a simulated GPU (``simulated.SimulatedGPU``).

    Buffers 4x the cache each (the pair cannot stay in it), one untimed copy first (it maps the pages),
    a synchronize before every clock reading, copies repeated until a sample lasts ``sample_s``, the median of
    five samples. The other arguments exist to build the known mistakes.
    """
    nbytes = nbytes or 4 * dev.cache_bytes
    src, dst = dev.empty(nbytes), dev.empty(nbytes)
    if warm_up:
        dev.copy_(dst, src)
        dev.synchronize()
    reps = 1
    while sample_s and _timed(dev, src, dst, reps, sync) * reps < sample_s:
        reps *= 2
    samples = [_timed(dev, src, dst, reps, sync) for _ in range(5)]
    return counted * nbytes / statistics.median(samples) / unit


def _copy_one_cold_sample(dev):
    """Everything right but the warm-up: one sample, the first copy included."""
    nbytes = 4 * dev.cache_bytes
    src, dst = dev.empty(nbytes), dev.empty(nbytes)
    return 2 * nbytes / _timed(dev, src, dst, 1) / 1e9


MISTAKES_COPY = {
    "no_synchronize": lambda dev: copy_bandwidth_gbs(dev, sync=False),
    "no_warm_up": _copy_one_cold_sample,
    "fits_in_cache": lambda dev: copy_bandwidth_gbs(dev, nbytes=dev.cache_bytes // 2),  # the pair fills the cache
    "launch_bound": lambda dev: copy_bandwidth_gbs(dev, nbytes=2**20),
    "buffer_under_4x": lambda dev: copy_bandwidth_gbs(dev, nbytes=dev.cache_bytes),
    "short_sample": lambda dev: copy_bandwidth_gbs(dev, sample_s=0),
    "reads_only": lambda dev: copy_bandwidth_gbs(dev, counted=1),
    "gib": lambda dev: copy_bandwidth_gbs(dev, unit=2**30),
}


# ------------------------------------------------------------ 6. bandwidth per working-set size
def bandwidth_sweep(sizes, device: str = "cpu", budget_s: float = 0.2) -> list[float]:
    """Read bandwidth (GB/s) of a float32 working set of each size: one timed call sums the same set many times
    (``x.expand``: a view, no copy), reading at least 64 MiB; one thread on a CPU."""
    import torch

    threads = 1 if str(device).startswith("cpu") else None
    result = []
    for nbytes in sizes:
        n = max(1, int(nbytes) // 4)
        reps = max(1, 64 * 2**20 // (4 * n))
        view = torch.ones(n, device=device).expand(reps, n)
        timing = time_fn(lambda: view.sum(dim=1), device=device, budget_s=budget_s, threads=threads)
        result.append(reps * n * 4 / timing.median_s / 1e9)
    return result


# ------------------------------------------------------------ 7. serving: batch within memory and a target rate
def serve_plan(model: dict, row: dict, context: int, target_tokens_per_s: float) -> dict:
    """The largest batch whose weights and KV cache fit in the row's memory, and the smallest batch whose decode
    bound reaches ``target_tokens_per_s`` (None if no batch that fits does).

    Bound: a step takes at least max(bytes read / bandwidth, 2 x params x batch FLOPs / dense peak).
    """
    plan = _plan(model, row, context)
    return {"max_batch": plan["max_batch"], "batch": _smallest_batch(plan, target_tokens_per_s)}


def _plan(model: dict, row: dict, context: int, memory: float | None = None, compute: bool = True,
          kv_read: bool = True, fit=math.floor, floor_at: float = 0) -> dict:
    weights = float(model["params"]) * float(model["weight_bytes"])
    per_sequence = kv_bytes_per_sequence(model, context)
    memory = memory_bytes(row) if memory is None else memory
    peak = dense_tflops(row) * 1e12 if compute else math.inf
    bandwidth = bandwidth_gbs(row) * 1e9

    def rate(batch: int) -> float:
        read = weights + (batch * per_sequence if kv_read else 0)
        return batch / max(read / bandwidth, 2 * float(model["params"]) * batch / peak)
    return {"max_batch": int(max(floor_at, fit((memory - weights) / per_sequence))), "rate": rate}


UNCAPPED = 10**7  # the batch_not_capped mistake searches up to here, as if memory had no end


def _smallest_batch(plan: dict, target: float, high: int | None = None) -> int | None:
    low, high = 1, plan["max_batch"] if high is None else high
    if high < 1 or plan["rate"](high) < target:
        return None
    while low < high:  # the rate grows with the batch: bisect
        mid = (low + high) // 2
        low, high = (low, mid) if plan["rate"](mid) >= target else (mid + 1, high)
    return low


def _serve_with(**plan_options):
    def wrong(model, row, context, target):
        plan = _plan(model, row, context, **plan_options)
        return {"max_batch": plan["max_batch"], "batch": _smallest_batch(plan, target)}
    return wrong


def _serve_gb(model, row, context, target):
    return _serve_with(memory=printed_number(row["memory"]) * 1e9)(model, row, context, target)


def _serve_uncapped(model, row, context, target):
    """The batch searched beyond max_batch: a batch whose KV cache does not fit."""
    plan = _plan(model, row, context)
    return {"max_batch": plan["max_batch"], "batch": _smallest_batch(plan, target, high=UNCAPPED)}


# ------------------------------------------------------------ known mistakes
def _recorded_sweep(speed, reference_calls: int = 0) -> Recorded:
    """A sweep as a check records it on this machine (its sizes and cache): three rounds of ``speed(size, edge)``
    GB/s beside a reference that falls from 90 to 20 GB/s past the cache (``edge``: half the judged cache)."""
    case = tasks._sweep_visible()[0]
    device, llc, sizes = tasks._sweep_plan(case)
    edge = (llc or tasks.LLC_CAP) / 2
    reference = {"gbs": [90.0 if s <= edge else 20.0 for s in sizes]}
    mine = {"device": device, "llc_bytes": llc, "sizes": sizes, "gbs": [speed(s, edge) for s in sizes],
            "reference_calls": reference_calls}
    spans = [[max(1, 2**26 // size) * size / (gbs * 1e9), f"time_fn:{i}"]  # each size read 64 MiB per call
             for i, (size, gbs) in enumerate(zip(sizes, mine["gbs"]))]
    return Recorded({"rounds": [mine] * 3, "observed": {"walls": [60.0] * 3, "reference": [reference] * 3,
                                                        "spans": [spans] * 3}})


def _stepped(size, edge):
    return 90.0 if size <= edge else 20.0


class _RecordedHere(dict):
    """The sweep's wrong answers as a check records them on this machine (its cache decides the sizes): built when
    one is asked for, since finding the cache imports torch."""

    def __getitem__(self, name: str) -> Recorded:
        if name == "reference_called":  # the course's read_bandwidth_gbs run once per size by the learner's function
            return _recorded_sweep(_stepped, reference_calls=len(tasks._sweep_plan(tasks._sweep_visible()[0])[2]))
        speeds = {"call_overhead": lambda size, edge: 60.0 * min(1.0, size / (edge / 8)),  # small sets: call overhead
                  "mb_per_s": lambda size, edge: 1000.0 * _stepped(size, edge),
                  "elements_counted": lambda size, edge: _stepped(size, edge) / 4}  # float32 elements, not bytes
        return _recorded_sweep(speeds[name])


MISTAKES = {
    "intensity": {"output_not_counted": _intensity_without_output, "fma_as_one_flop": _intensity_fma_as_one,
                  "elements_not_bytes": _intensity_per_element},
    "roofline": {"sparse_as_dense": _roofline_sparse_as_dense, "star_without_footnote": _roofline_star_halved,
                 "tb_as_gb": _roofline_tb_as_gb,
                 "above_the_roof": _roofline_no_cap, "tie_is_memory": _roofline_tie_is_memory},
    "fusion": {"fused_keeps_intermediates": _fusion_keeps_intermediates,
               "fused_writes_intermediates": _fusion_writes_intermediates, "read_per_use": _fusion_per_use,
               "broadcast_as_full": _fusion_broadcast_as_full, "output_from_first_operand": _fusion_first_operand,
               "unused_input_read": _fusion_unused_input, "writes_left_out": _fusion_reads_only},
    "decode": {"window_ignored": _decode_window_ignored, "window_on_every_layer": _decode_window_on_every_layer,
               "window_longer_than_context": _decode_window_longer, "query_heads": _decode_query_heads,
               "k_without_v": _decode_k_only, "kv_of_one_sequence": _decode_one_sequence,
               "one_token_per_step": _decode_one_token_per_step},
    "debug": MISTAKES_COPY,
    "sweep": _RecordedHere.fromkeys(("reference_called", "call_overhead", "mb_per_s", "elements_counted")),
    "serve": {"gb_not_gib": _serve_gb, "above_compute_roof": _serve_with(compute=False),
              "weights_only_step": _serve_with(kv_read=False), "round_not_floor": _serve_with(fit=round),
              "negative_max_batch": _serve_with(floor_at=-math.inf), "batch_not_capped": _serve_uncapped},
}


# ---------------------------------------------------------------- expected answers of a case
EXPECT = {name: with_mistakes(tasks.TASKS[name], reference, MISTAKES[name]) for name, reference in (
    ("intensity", arithmetic_intensity),
    ("roofline", datasheet_roofline),
    ("fusion", fused_traffic),
    ("decode", decode_bound),
    ("serve", serve_plan),
)}


# ---------------------------------------------------------------- hidden cases
DTYPES = ("fp64", "fp32", "bf16", "fp16", "fp8", "int8")


def _intensity_hidden(rng) -> list:
    cases = [{"op": "add", "shape": [rng.randint(1, 10**8)], "dtype": rng.choice(DTYPES)},
             {"op": "matvec", "shape": [rng.randint(1, 20000), rng.randint(1, 20000)], "dtype": rng.choice(DTYPES)},
             {"op": "matvec", "shape": [1, 1], "dtype": "fp32"},
             {"op": "matmul", "shape": [1, 8192, 8192], "dtype": "bf16"},
             {"op": "matmul", "shape": [rng.randint(1, 512), rng.randint(512, 16384), rng.randint(512, 16384)],
              "dtype": "fp8"}]
    for _ in range(4):
        cases.append({"op": "matmul", "shape": [rng.randint(1, 20000) for _ in range(3)], "dtype": rng.choice(DTYPES)})
    return cases


def printed_row(profile: Any, dtype: str, style: str, unit: str) -> dict:
    """A datasheet row for ``profile`` printed in a vendor's ``style``: "sparse" (only the figure with sparsity,
    starred), "both" ("dense | sparse*") or "dense" (no sparsity figure); bandwidth in ``unit``."""
    dense, sparse = profile.peak(dtype), profile.peak(dtype, sparse=True)
    shown = {"sparse": f"{sparse:,.0f} TFLOPS*", "both": f"{dense:,.0f} TFLOPS | {sparse:,.0f} TFLOPS*",
             "dense": f"{dense:,.1f} TFLOPS"}[style if sparse else "dense"]
    bandwidth = (f"{profile.bandwidth_gbs / 1000:g} TB/s" if unit == "TB/s" else f"{profile.bandwidth_gbs:,.0f} GB/s")
    return {"device": profile.label, "format": dtype.upper(), "peak": shown,
            "footnote": "* With sparsity" if "*" in shown else "", "bandwidth": bandwidth,
            "memory": f"{profile.memory_gib:g} GB"}


HIDDEN_DEVICES = [p.id for p in profiles.all_of("gpu") if p.id not in tasks.VISIBLE_ROWS]


def _hidden_row(rng, dtype: str = "bf16") -> dict:
    candidates = [pid for pid in HIDDEN_DEVICES
                  if profiles.get(pid).peak(dtype) and profiles.get(pid).bandwidth_gbs and profiles.get(pid).memory_gib]
    style = rng.choice(("sparse", "both", "dense"))
    return printed_row(profiles.get(rng.choice(candidates)), dtype, style, rng.choice(("TB/s", "GB/s")))


def _roofline_hidden(rng) -> list:
    cases = []
    for _ in range(5):
        row = _hidden_row(rng, rng.choice(("bf16", "fp8")))
        ridge = datasheet_roofline(row, 1.0)["ridge"]
        cases.append({"row": row, "intensity": round(ridge * 10 ** rng.uniform(-2, 1.5), 3)})
    # exactly on the ridge of a row: 400 TFLOPS over 2 TB/s is 200 FLOP/byte, and there the roof is flat
    tie = {"device": "made-up accelerator", "format": "BF16", "peak": "800 TFLOPS*", "footnote": "* With sparsity",
           "bandwidth": "2 TB/s", "memory": "64 GB"}
    cases.append({"row": tie, "intensity": 200.0})
    # a star that marks something else than sparsity: the figure is the dense peak
    peak, bandwidth = rng.randint(100, 2500), round(rng.uniform(0.5, 8), 2)
    starred = {"device": "made-up accelerator", "format": "FP8", "peak": f"{peak:,} TFLOPS*",
               "footnote": rng.choice(["* Preliminary specification, subject to change", "* Boost clock",
                                       "* Measured on a pre-production sample"]),
               "bandwidth": f"{bandwidth:g} TB/s", "memory": "96 GB"}
    cases.append({"row": starred, "intensity": round(rng.uniform(10, 1000), 1)})
    return cases


def _random_chain(rng) -> dict:
    """A chain of 2-5 element-wise steps over a matrix, a second matrix, a row vector and scalars."""
    rows, cols = rng.choice([256, 1024, 4096]), rng.choice([512, 2048, 8192])
    sizes = {"x": rows * cols, "r": rows * cols, "g": cols}
    names, steps = ["x"], []
    for i in range(rng.randint(2, 5)):
        a = rng.choice(names + ["x"])
        b = rng.choice([a, rng.choice(names), "r", "g", round(rng.uniform(0.1, 3), 2)])
        op = rng.choice(["add", "mul", "sub", "maximum"]) if not isinstance(b, str) or b != a else "mul"
        steps.append([f"t{i}", op, [a, b]] if rng.random() < 0.8 else [f"t{i}", rng.choice(["relu", "exp", "tanh"]), [a]])
        names.append(f"t{i}")
    used = {o for _, _, ops in steps for o in ops if isinstance(o, str)}
    return {"steps": steps, "sizes": {k: v for k, v in sizes.items() if k in used},
            "bytes_per_element": rng.choice([2, 4])}


def _decode_hidden(rng) -> list:
    bandwidth = lambda: profiles.get(rng.choice(["a100_sxm_80gb", "mi300x", "b200"])).bandwidth_gbs  # noqa: E731
    cases = [{"model": tasks.model("llama3_8b", 1, 1), "batch": 64, "context": 2048, "bandwidth_gbs": 4800.0},
             {"model": tasks.model("llama3_70b", 1, 2), "batch": rng.randint(2, 64), "context": rng.randint(1, 32768),
              "bandwidth_gbs": bandwidth()},
             {"model": tasks.model(rng.choice(["gemma2_9b", "mistral_7b"]), 2, rng.choice([1, 2])),
              "batch": rng.randint(2, 64), "context": rng.randint(1, 8192), "bandwidth_gbs": bandwidth()}]
    for i in range(4):
        kv_heads, layers = rng.choice([1, 2, 4, 8, 16]), rng.randint(4, 120)
        window = rng.choice([None, 128, 512, 1024, 4096, 8192])
        model = {"name": f"synthetic_{i}", "params": float(rng.randint(10**8, 10**12)), "layers": layers,
                 "heads": kv_heads * rng.choice([2, 4, 8]), "kv_heads": kv_heads, "head_dim": rng.choice([64, 96, 128, 256]),
                 "window": window, "local_layers": rng.randint(1, layers) if window else 0,
                 "weight_bytes": rng.choice([1, 2, 4]), "kv_bytes": rng.choice([1, 2])}
        cases.append({"model": model, "batch": rng.randint(2, 256), "context": rng.randint(1, 131072),
                      "bandwidth_gbs": round(rng.uniform(100, 8000), 1)})
    return cases


def _debug_hidden(rng) -> list:
    """Devices with other caches, memories, bandwidths and launch costs. As on real GPUs, a small cache comes with a
    slow memory: a copy of buffers 4x the cache (the rule the task states) lasts at least 4 launches."""
    cases = []
    while len(cases) < 3:
        cache_mib, hbm, launch_us = rng.choice([4, 6, 40, 72, 96, 128, 256]), round(rng.uniform(200, 7000), -1), \
            rng.choice([2, 4, 6, 10])
        if 8 * cache_mib * 2**20 / (hbm * 1e9) < 4 * launch_us * 1e-6:
            continue
        cases.append({"device": {"name": f"simulated GPU {len(cases) + 1}", "memory_gib": rng.choice([16, 24, 48, 96, 192]),
                                 "cache_mib": cache_mib, "hbm_gbs": hbm, "cache_gbs": round(hbm * rng.uniform(2.5, 5), -1),
                                 "launch_us": launch_us, "map_gbs": rng.choice([10, 20, 40])}})
    return cases


def _serve_hidden(rng) -> list:
    cases = []
    for _ in range(5):
        dtype = rng.choice(("bf16", "fp8"))
        row = _hidden_row(rng, dtype)
        if rng.random() < 0.5:
            model = tasks.model(rng.choice(["llama3_8b", "llama3_70b"]), BYTES_PER_ELEMENT[dtype], rng.choice([1, 2]))
        else:
            kv_heads = rng.choice([2, 4, 8])
            model = {"name": "synthetic", "params": float(rng.randint(5 * 10**8, 2 * 10**11)),
                     "layers": rng.randint(16, 96), "heads": kv_heads * 8, "kv_heads": kv_heads, "head_dim": 128,
                     "window": None, "local_layers": 0, "weight_bytes": BYTES_PER_ELEMENT[dtype],
                     "kv_bytes": rng.choice([1, 2])}
        context = rng.choice([512, 2048, 8192, 32768, 131072])
        plan = _plan(model, row, context)
        if plan["max_batch"] >= 1 and rng.random() < 0.7:  # a target some batch that fits just reaches
            batch = rng.randint(1, plan["max_batch"])
            low = plan["rate"](batch - 1) if batch > 1 else 0.0
            target = (low + plan["rate"](batch)) / 2
        else:
            target = plan["rate"](max(plan["max_batch"], 1)) * rng.uniform(1.05, 3)  # out of reach
        cases.append({"model": model, "row": row, "context": context, "target_tokens_per_s": round(target, 6)})
    return cases


HIDDEN = {
    "intensity": _intensity_hidden,
    "roofline": _roofline_hidden,
    "fusion": lambda rng: [_random_chain(rng) for _ in range(5)],
    "decode": _decode_hidden,
    "debug": _debug_hidden,
    "sweep": lambda rng: [{"start_kib": rng.choice([12, 20, 24]), "beyond": rng.choice([6, 10]), "per_octave": 1}],
    "serve": _serve_hidden,
}
