"""Tasks of module 07 (writing kernels): nine puzzles, each a kernel the check launches on visible and hidden shapes.

Every Numba kernel is traced on the simulator (:func:`traffic.trace`; on a GPU it also runs there, and its values
are the GPU's), so a check sees more than the numbers: accesses out of bounds, elements written never or twice,
global reads and writes against the task's budget, atomics, races on shared and global memory, and the sectors
per warp request. Inputs are small integers stored as float32, so sums are exact and values compare exactly. The
Triton task counts loads and stores on the interpreter (:func:`traffic.trace_triton`). A case whose kernel breaks
a rule the exercise says a kernel cannot pass with (a race, a skipped barrier, a read budget, one atomic per block,
a thread doing more than its share or a result the kernel's stores did not leave: :func:`_work_part`) earns
nothing for its other parts (:func:`_gate`).

The copy task is a measurement. On a GPU, the learner's copy kernel, timed by the learner, is compared side by
side with the course's copy kernel. On the simulator a wall-clock bandwidth means nothing: the learner's timing
function runs on a virtual clock (:mod:`.clock`), where the right answer is exact, and a wrong one tells what was
counted and timed (the bytes, GB or GiB, host copies, synchronization, warm-up).
"""
from __future__ import annotations

import math
import warnings
from dataclasses import replace
from typing import Any

import numpy as np

from ...checks import referee
from ...checks.core import Part, Task
from ...i18n import Message, msg
from . import clock, device, traffic

POOL_TPB, DOT_TPB, SCAN_TPB, TILE = 64, 64, 128, 16
BROADCAST_BLOCK = (16, 8)          # (x: columns, y: rows)
SECTORS_MAX = 8.0                  # matmul: coalesced tile loads stay at or below this many sectors per request
STRIDE_SECTORS_MAX = 5.0           # grid-stride: 32 consecutive float32 are 4 sectors (5 when not aligned)
SPEC_CAP = 1.05


def _m(key: str, **values) -> Message:
    return msg(f"m07.{key}", **values)


def _label(case: Message | str, ko: str, en: str) -> Message:
    """A part's short name: the case, an arrow, what is checked."""
    case = case if isinstance(case, Message) else Message(case, case)
    return Message(f"{case.ko} → {ko}", f"{case.en} → {en}")


def _many(count: int, unit_ko: str, one: str, many: str) -> Message:
    """``3개`` / ``3 elements``, ``1 element``: a count with its unit in each language."""
    return Message(f"{count}{unit_ko}", f"{count} {one if count == 1 else many}")


def _kind(kind: str) -> Message:
    """An access or a race as the counter names it (``read``, ``read-write``, ...), in each language."""
    ko = {"read": "읽기", "write": "쓰기", "read-write": "읽기와 쓰기", "write-write": "쓰기와 쓰기"}.get(kind, kind)
    return Message(ko, kind)


def _index(index) -> str:
    """A thread or block index without its trailing unused dimensions: ``(13, 1, 0)`` -> ``(13, 1)``, ``(5, 0, 0)`` -> ``5``."""
    dims = list(index)
    while len(dims) > 1 and dims[-1] == 0:
        dims.pop()
    return str(dims[0]) if len(dims) == 1 else f"({', '.join(map(str, dims))})"


def cdiv(a: int, b: int) -> int:
    """Ceiling division: the number of blocks of ``b`` threads that cover ``a`` elements."""
    return -(-a // b)


def ints(case: dict, name: str, shape) -> np.ndarray:
    """The case's input ``name``: small integers (-4..4) as float32, from the case's seed (sums stay exact)."""
    rng = np.random.default_rng([case["seed"], sum(map(ord, name))])
    return rng.integers(-4, 5, size=shape).astype(np.float32)


def _values(a: np.ndarray) -> list:
    return [None if not math.isfinite(v) else (int(v) if float(v).is_integer() else float(v))
            for v in np.asarray(a, dtype=np.float64).ravel().tolist()]


def _blank(shape) -> np.ndarray:
    return np.full(shape, np.nan, dtype=np.float32)


def _first(indices, shape) -> list:
    """[how many, the first as an index into an array of ``shape``] of some flat indices ([0, None] for none):
    ``5`` in one dimension, ``"2, 3"`` in two."""
    indices = np.asarray(indices)
    if not indices.size:
        return [0, None]
    first = [int(i) for i in np.unravel_index(int(indices[0]), shape)]
    return [int(indices.size), first[0] if len(first) == 1 else ", ".join(map(str, first))]


def report(record: traffic.Trace, outputs: dict, needed: dict | None = None) -> dict:
    """A trace and the output arrays as plain data (what a check records). ``needed``: per input, how many of
    its leading elements the result depends on."""
    unread = {name: _first(np.flatnonzero(record.read[name].ravel()[:count] == 0), record.read[name].shape)
              for name, count in (needed or {}).items() if name in record.read}
    return {
        "error": record.error,
        "oob": [[name, list(index), kind] for name, index, kind, *_ in record.oob[:3]],
        "oob_at": [_grid_index(block, record.block, thread) for *_, block, thread in record.oob[:3]],
        "reads": dict(record.reads), "writes": dict(record.writes), "atomics": dict(record.atomics),
        "shared": [record.shared_reads, record.shared_writes],
        "shared_most": _busiest(record.shared_most),
        "barriers": record.barriers,
        "races": [[r.space, r.array, r.kind, list(r.index), r.phase] for r in record.races[:3]],
        "sectors": {name: record.sectors_per_request(name) for name in record.requests},
        "skipped_barrier": None if record.skipped_barrier is None else
        [list(record.skipped_barrier[0]), list(record.skipped_barrier[1]), *record.skipped_barrier[2:]],
        "coverage": {name: [int((w == 0).sum()), int(w.max()) if w.size else 0]
                     for name, w in record.written.items() if name in outputs},
        "values": {name: _values(a) for name, a in outputs.items()},
        "threads": record.threads,
        "most_reads": _busiest(record.most_reads), "most_writes": _busiest(record.most_writes),
        "unstored": {name: _first(record.unstored[name], record.written[name].shape)
                     for name in outputs if name in record.unstored},
        "unread": unread,
    }


def _grid_index(block, dims, thread) -> list:
    """The thread's index in the whole grid per dimension, as ``cuda.grid`` gives it (x first)."""
    return [b * d + t for b, d, t in zip(block, dims, thread)]


def _busiest(most: tuple | None) -> list | None:
    return None if most is None else [most[0], list(most[1]), list(most[2])]


def written(answer: Any) -> Any:
    """What a kernel gave, as the rule against answers that ignore their input compares it: per output, the one
    value it left everywhere (nothing written, or a constant), else all its values; an answer without values whole."""
    if not isinstance(answer, dict) or not isinstance(answer.get("values"), dict):
        return answer
    return {name: values[0] if len({repr(v) for v in values}) == 1 else values
            for name, values in answer["values"].items()}


def _kernel(learner: Any):
    traffic.python_function(learner)   # raises NotAKernel with a clear name
    return learner


def _hint(error: str) -> Message | None:
    if "NotAKernel" in error or "not a @cuda.jit" in error:
        return _m("hint_not_kernel")
    return None


# ---------------------------------------------------------------- shared scoring rules
def _crashed(answer: dict) -> Part | None:
    """A kernel that raised (other than out of bounds): nothing else can be judged."""
    error = answer.get("error")
    if error and not answer.get("oob"):
        return Part(False, _m("kernel_raised", error=error[:300]))
    return None


def _oob_part(case_text: str, answer: dict, mistake: str | None = None, label: Message | None = None) -> Part:
    """No access out of bounds; one names ``mistake`` (the task's predicate on the accesses found it), else none."""
    oob = answer.get("oob") or []
    if not oob:
        return Part(True, _m("no_oob"), label=label)
    name, index, kind = oob[0]
    key = f"mistake.{mistake}" if mistake else "oob"
    return Part(False, _m(key, case=case_text, array=name, index=index, kind=_kind(kind)), mistake=mistake, label=label)


def _values_part(case_text: str, answer: dict, want: dict, label: Message | None = None, mistake: str | None = None,
                 rel: float = 0.0, message: Message | None = None) -> Part:
    for name, expected in want.items():
        got = (answer.get("values") or {}).get(name)
        if got is None or len(got) != len(expected):
            return Part(False, _m("values_shape", case=case_text, array=name), label=label)
        a = np.array([np.nan if v is None else v for v in got], dtype=np.float64)
        b = np.array(expected, dtype=np.float64)
        bad = np.flatnonzero(~np.isclose(a, b, rtol=rel, atol=1e-6 if rel else 0.0))
        if bad.size:
            i = int(bad[0])
            key = "values_unwritten" if got[i] is None else "values_wrong"
            return Part(False, message or _m(key, case=case_text, array=name, index=i, want=expected[i],
                                             found=got[i], count=_many(int(bad.size), "개", "element", "elements")),
                        mistake=mistake, label=label)
    return Part(True, _m("values_right", case=case_text), label=label)


def _race_part(case_text, answer: dict, space: str, mistake: str, label: Message | None = None) -> Part:
    """No race on ``space`` memory (a race names ``mistake``); on shared memory, no thread that skipped a barrier."""
    skipped = answer.get("skipped_barrier") if space == "shared" else None
    if skipped:
        block, thread, passed, most = skipped
        return Part(False, _m("mistake.early_return", case=case_text, block=_index(block), thread=_index(thread),
                              passed=passed, most=most), mistake="early_return", label=label)
    race = next((r for r in answer.get("races") or [] if r[0] == space), None)
    if race is None:
        return Part(True, _m("no_race"), label=label)
    _, array, kind, index, phase = race
    key = "uninitialised" if kind == "uninitialised" else f"mistake.{mistake}"
    return Part(False, _m(key, case=case_text, array=array_name(array), index=index[0] if len(index) == 1 else index,
                          kind=_kind(kind), phase=phase), mistake=None if kind == "uninitialised" else mistake, label=label)


def array_name(array: str) -> Message | str:
    """``shared@12`` -> the shared array declared on line 12 (of the notebook cell); a global array's own name."""
    if array.startswith("shared@"):
        line = array.split("@", 1)[1]
        return Message(f"{line}행에 선언한 공유 배열", f"the shared array declared on line {line}")
    return array


def _tree_part(case_text, answer: dict, threads: int, mistake: str, label: Message) -> Part:
    """A tree (or doubling) over a block's shared values: no thread reads half the block's values or more itself.
    One thread looping over the block reads all ``threads`` of them; a tree reads about two per level."""
    most, block, thread = answer.get("shared_most") or [0, [0], [0]]
    levels = max(1, (threads - 1).bit_length())
    values = dict(case=case_text, found=most, threads=threads, levels=levels, tree=2 * levels + 1,
                  block=_index(block), thread=_index(thread),
                  barriers=_many(answer.get("barriers", 0), "개", "barrier", "barriers"))
    if most >= threads // 2:
        return Part(False, _m(f"mistake.{mistake}", **values), mistake=mistake, label=label)
    return Part(True, _m("tree_reads", **values), label=label)


def _work_part(case_text, answer: dict, reads: int, writes: int, shared: int | None = None) -> Part:
    """The kernel's own threads did the work, each its share. Every element of an output is as the kernel's
    stores left it; no thread read more than ``reads`` elements of global memory, wrote more than ``writes``,
    or read more than ``shared`` shared values (the most one thread of a right kernel needs, from the task);
    and when every output element was written, every input element the result depends on was read by a
    thread. One thread computing the whole result (a loop, or NumPy on slices) breaks this rule. A rule, not a
    point: its part weighs nothing unless :func:`_gate` gives it the case's weight."""
    label = _label(case_text, "스레드마다 제 몫", "each thread its share")
    for name, (count, first) in (answer.get("unstored") or {}).items():
        if count:
            return Part(False, _m("not_stored", case=case_text, array=name, index=first,
                                  count=_many(count, "개", "element", "elements")), weight=0.0, label=label)
    for key, kind, limit in (("most_reads", "reads", reads), ("most_writes", "writes", writes),
                             ("shared_most", "shared", shared)):
        found, block, thread = answer.get(key) or [0, [0], [0]]
        if limit is not None and found > limit:
            return Part(False, _m(f"thread_{kind}", case=case_text, found=found, most=limit, block=_index(block),
                                  thread=_index(thread)), weight=0.0, label=label)
    if not any(never for never, _ in (answer.get("coverage") or {}).values()):
        for name, (count, first) in (answer.get("unread") or {}).items():
            if count:
                return Part(False, _m("unread", case=case_text, array=name, index=first,
                                      count=_many(count, "개", "element", "elements")), weight=0.0, label=label)
    return Part(True, _m("work_right", reads=reads, writes=writes), weight=0.0, label=label)


def _coverage(answer: dict, name: str) -> tuple[int, int]:
    never, most = (answer.get("coverage") or {}).get(name, [0, 0])
    return never, most


def _gate(parts: list[Part], rules: list[Part]) -> list[Part]:
    """The exercise says a kernel that breaks one of ``rules`` (a race, a skipped barrier, a read budget, one
    atomic per block, each thread its share) does not pass, even when its values come out right. So when one
    fails, it carries the whole case's weight and says so; the case's other parts keep their verdict (✅ where
    right) and weigh nothing."""
    broken = next((r for r in rules if not r.ok), None)
    if broken is None:
        return parts
    total = sum(p.weight for p in parts)
    return [replace(p, weight=total, message=p.message + _m("rule_broken")) if p is broken else replace(p, weight=0.0)
            for p in parts]


# ---------------------------------------------------------------- 1. guard and blocks
def _guard_visible() -> list:
    return [{"n": 1000, "threads": 128, "seed": 1}, {"n": 256, "threads": 128, "seed": 2},
            {"n": 1, "threads": 128, "seed": 3}]


def _guard_answer(learner, case) -> dict:
    kernel, blocks_for = learner
    _kernel(kernel)
    n, threads = case["n"], case["threads"]
    blocks = blocks_for(n, threads)
    if not isinstance(blocks, (int, np.integer)) or isinstance(blocks, bool) or blocks < 0:
        return {"blocks": repr(blocks)[:80]}
    blocks = int(blocks)
    if blocks == 0:   # nothing to launch: every element is left out
        return {"blocks": 0, "coverage": {"out": [n, 0]}}
    if blocks * threads > 64 * n + 4096:
        return {"blocks": blocks, "error": "too many blocks to simulate"}
    record, (out, *_rest) = device.execute(kernel, blocks, threads, _blank(n), ints(case, "x", n), n,
                                           names=("out", "x", "n"))
    return {"blocks": blocks, **report(record, {"out": out}, {"x": n})}


def _guard_score(case, answer, want) -> list[Part]:
    n, threads = case["n"], case["threads"]
    text = Message(f"n={n}, 블록당 스레드 {threads}", f"n={n}, {threads} threads per block")
    blocks, need = answer.get("blocks"), cdiv(n, threads)
    if not isinstance(blocks, int):
        return [Part(False, _m("blocks_type", found=blocks))]
    label_b, label_g, label_v = (_label(text, "블록 수", "blocks"), _label(text, "가드", "guard"),
                                 _label(text, "값", "values"))
    if blocks < need:
        part_b = Part(False, _m("mistake.too_few_blocks", case=text, blocks=_many(blocks, "개", "block", "blocks"),
                                need=need, missing=_many(n - blocks * threads, "개", "element", "elements")),
                      mistake="too_few_blocks", label=label_b)
    elif blocks > need:
        part_b = Part(False, _m("mistake.extra_block", case=text, blocks=_many(blocks, "개", "block", "blocks"),
                                need=need), mistake="extra_block", label=label_b)
    else:
        part_b = Part(True, _m("blocks_right"), label=label_b)
    if blocks == 0:
        return [part_b, Part(False, _m("unwritten", case=text, count=_many(n, "개", "element", "elements")),
                             mistake="too_few_blocks", label=label_v)]
    crashed = _crashed(answer)
    if crashed:   # a kernel that raised earns nothing for the case, as a blank one does
        return _gate([part_b, crashed], [crashed])
    part_g = _oob_part(text, answer, _guard_oob(answer, n), label=label_g)
    never, most = _coverage(answer, "out")
    if answer.get("oob"):
        part_v = Part(False, _m("values_unknown", case=text), label=label_v)
    elif never and blocks < need:
        part_v = Part(False, _m("unwritten", case=text, count=_many(never, "개", "element", "elements")),
                      mistake="too_few_blocks", label=label_v)
    else:
        part_v = _values_part(text, answer, want, label=label_v)
    work = _work_part(text, answer, reads=1, writes=1)
    return _gate([part_b, part_g, part_v, work], [work])


def _guard_oob(answer: dict, n: int) -> str | None:
    """The guard's mistake the accesses out of bounds show: ``off_by_one_guard`` where every one is thread ``i = n``
    at index ``n`` (``i <= n``), ``no_guard`` where every one is a spare thread (``i >= n``) at its own index
    and some is past ``n``; else None (an index other than the thread's own, such as ``x[i + 1]``, is no guard's)."""
    pairs = [(at[0], index[0]) for (_, index, _), at in zip(answer.get("oob") or [], answer.get("oob_at") or [])]
    if not pairs or any(i != index or i < n for i, index in pairs):
        return None
    return "off_by_one_guard" if all(i == n for i, _ in pairs) else "no_guard"


# ---------------------------------------------------------------- 2. 2D broadcast
def _broadcast_visible() -> list:
    return [{"rows": 20, "cols": 37, "seed": 4}, {"rows": 33, "cols": 9, "seed": 5}]


def broadcast_grid(rows: int, cols: int) -> tuple:
    bx, by = BROADCAST_BLOCK
    return (cdiv(cols, bx), cdiv(rows, by))


def _broadcast_answer(kernel, case) -> dict:
    rows, cols = case["rows"], case["cols"]
    record, (out, *_rest) = device.execute(_kernel(kernel), broadcast_grid(rows, cols), BROADCAST_BLOCK,
                                           _blank((rows, cols)), ints(case, "a", rows), ints(case, "b", cols),
                                           names=("out", "a", "b"))
    return report(record, {"out": out}, {"a": rows, "b": cols})


def _broadcast_score(case, answer, want) -> list[Part]:
    rows, cols = case["rows"], case["cols"]
    text = f"{rows}×{cols}"
    crashed = _crashed(answer)
    if crashed:
        return [crashed]
    if answer.get("oob"):
        mistake = _broadcast_oob(answer)
        name, index, kind = answer["oob"][0]
        message = (_m("mistake.row_col_swap", case=text) if mistake == "row_col_swap" else
                   _m(f"mistake.{mistake}" if mistake else "oob", case=text, array=name, index=index, kind=_kind(kind)))
        return [Part(False, message, mistake=mistake, label=_label(text, "가드", "guard")),
                Part(False, _m("values_unknown", case=text))]
    never, _ = _coverage(answer, "out")
    if never:
        swapped = _swapped_coverage(answer, rows, cols)
        return [Part(False, _m("mistake.row_col_swap", case=text) if swapped else
                     _m("unwritten", case=text, count=_many(never, "개", "element", "elements")),
                     mistake="row_col_swap" if swapped else None, label=_label(text, "모든 원소", "every element"))]
    work = _work_part(text, answer, reads=2, writes=1)
    return _gate([Part(True, _m("no_oob"), label=_label(text, "가드", "guard")),
                  _values_part(text, answer, want, label=_label(text, "값", "values")), work], [work])


def _broadcast_oob(answer: dict) -> str | None:
    """The mistake the accesses out of bounds show, from the threads that made them (``cuda.grid(2)`` = (x, y)):
    ``row_col_swap`` where one took r = x, c = y (``out[x, y]``, ``a[x]`` or ``b[y]``); ``guard_one_dim`` where
    each took r = y, c = x (the right element, left unguarded); else None."""
    oob, where = answer.get("oob") or [], answer.get("oob_at") or []
    if not oob or len(where) != len(oob):
        return None

    def took(name, index, x, y):
        return index == {"out": [y, x], "a": [y], "b": [x]}.get(name)

    if any(x != y and took(name, index, y, x) for (name, index, _), (x, y, *_) in zip(oob, where)):
        return "row_col_swap"
    return "guard_one_dim" if all(took(name, index, x, y) for (name, index, _), (x, y, *_) in zip(oob, where)) \
        else None


def _swapped_coverage(answer: dict, rows: int, cols: int) -> bool:
    """Whether the elements nobody wrote are exactly those a guarded kernel with rows and columns swapped leaves
    out: thread (x, y) writes ``out[x, y]``, so the rows past the grid's x and the columns past its y stay empty."""
    got = (answer.get("values") or {}).get("out") or []
    if len(got) != rows * cols:
        return False
    grid_x, grid_y = (g * b for g, b in zip(broadcast_grid(rows, cols), BROADCAST_BLOCK))
    empty = [v is None for v in got]
    return any(empty) and all(empty[r * cols + c] == (r >= grid_x or c >= grid_y)
                              for r in range(rows) for c in range(cols))


# ---------------------------------------------------------------- 3. a fixed grid: grid-stride loop
def _stride_visible() -> list:
    return [{"n": 1000, "blocks": 2, "threads": 32, "seed": 6}, {"n": 40, "blocks": 2, "threads": 32, "seed": 7}]


def _stride_answer(kernel, case) -> dict:
    n = case["n"]
    record, (out, *_rest) = device.execute(_kernel(kernel), case["blocks"], case["threads"], _blank(n),
                                           ints(case, "x", n), ints(case, "y", n), n, names=("out", "x", "y", "n"))
    again = np.flatnonzero(record.written["out"].ravel() > 1) if "out" in record.written else np.array([], int)
    return {**report(record, {"out": out}, {"x": n, "y": n}), "first_again": _first(again, (n,))[1]}


def _stride_score(case, answer, want) -> list[Part]:
    n, blocks, threads = case["n"], case["blocks"], case["threads"]
    text = Message(f"n={n}, 스레드 {blocks}×{threads}", f"n={n}, {blocks}×{threads} threads")
    crashed = _crashed(answer)
    if crashed:
        return [crashed]
    never, most = _coverage(answer, "out")
    label = _label(text, "원소마다 한 번", "each element once")
    if answer.get("oob"):
        once = _oob_part(text, answer, label=label)
    elif never and _one_pass(answer, blocks * threads):
        once = Part(False, _m("mistake.no_loop", case=text, count=_many(never, "개", "element", "elements"),
                              grid=blocks * threads), mistake="no_loop", label=label)
    elif never:
        once = Part(False, _m("unwritten", case=text, count=_many(never, "개", "element", "elements")), label=label)
    elif most > 1 and _block_stride(answer, blocks, threads, most):
        once = Part(False, _m("mistake.stride_block_only", case=text, most=most, grid=blocks * threads),
                    mistake="stride_block_only", label=label)
    elif most > 1:
        once = Part(False, _m("written_again", case=text, most=most), label=label)
    else:
        once = Part(True, _m("each_once"), label=label)
    reads = sum((answer.get("reads") or {}).values())
    traffic_ok = Part(reads == 2 * n, _m("reads_exact", case=text, want=2 * n, found=reads),
                      label=_label(text, "읽기 2n", "2n reads"))
    sectors = {name: v for name, v in (answer.get("sectors") or {}).items() if v is not None}
    array = max(sectors, key=sectors.get, default="x")
    worst = sectors.get(array, 0.0)
    label_c = _label(text, "합병 접근", "coalescing")
    if worst > STRIDE_SECTORS_MAX:
        coalesced = Part(False, _m("mistake.contiguous_chunks", case=text, array=array, found=worst,
                                   most=STRIDE_SECTORS_MAX, grid=blocks * threads),
                         mistake="contiguous_chunks", label=label_c)
    else:
        coalesced = Part(True, _m("stride_coalesced", found=worst, most=STRIDE_SECTORS_MAX), label=label_c)
    share = cdiv(n, blocks * threads)   # the elements one thread of the grid-stride loop takes, at most
    work = _work_part(text, answer, reads=2 * share, writes=share)
    return _gate([once, traffic_ok, coalesced, _values_part(text, answer, want, label=_label(text, "값", "values")),
                  work], [work])


def _block_stride(answer: dict, blocks: int, threads: int, most: int) -> bool:
    """Whether the elements written more than once are as a loop stepping by one block leaves them: the first is
    element ``threads`` (block 0's second step meets block 1's first), and none more often than there are blocks."""
    return answer.get("first_again") == threads and most <= blocks


def _one_pass(answer: dict, grid: int) -> bool:
    """Whether the elements nobody wrote are exactly those past the grid's threads (i >= grid): one element per
    thread, no loop."""
    got = (answer.get("values") or {}).get("out") or []
    return any(v is None for v in got) and all((v is None) == (i >= grid) for i, v in enumerate(got))


# ---------------------------------------------------------------- 4. shared-memory stencil (window of 3)
def _pool_visible() -> list:
    return [{"n": 200, "seed": 8}, {"n": 64, "seed": 9}]


def pool_budget(n: int, threads: int = POOL_TPB) -> int:
    """Global reads of a tiled 3-point window: each element once, plus two halo elements per block."""
    return n + 2 * cdiv(n, threads)


def _pool_answer(kernel, case) -> dict:
    n = case["n"]
    record, (out, *_rest) = device.execute(_kernel(kernel), cdiv(n, POOL_TPB), POOL_TPB, _blank(n),
                                           ints(case, "x", n), n, names=("out", "x", "n"))
    return report(record, {"out": out}, {"x": n})


def _edges_only(answer: dict, want: dict, threads: int) -> bool:
    got, expected = answer["values"]["out"], want["out"]
    bad = [i for i, (g, w) in enumerate(zip(got, expected)) if g != w]
    return bool(bad) and all(i % threads in (0, threads - 1) for i in bad)


def _pool_score(case, answer, want) -> list[Part]:
    n = case["n"]
    text = f"n={n}"
    crashed = _crashed(answer)
    if crashed:
        return [crashed]
    sync = _race_part(text, answer, "shared", "missing_sync", label=_label(text, "동기화", "barrier"))
    reads, budget = (answer.get("reads") or {}).get("x", 0), pool_budget(n)
    over = reads > budget
    budget_part = Part(not over, _m("mistake.global_in_loop" if over else "reads_within", case=text, found=reads,
                                    budget=budget, naive=3 * n), mistake="global_in_loop" if over else None,
                       label=_label(text, "전역 읽기", "global reads"))
    parts = [_oob_part(text, answer, label=_label(text, "범위", "bounds")), sync, budget_part]
    if answer.get("oob"):
        parts.append(Part(False, _m("values_unknown", case=text)))
    elif _edges_only(answer, want, POOL_TPB):
        parts.append(Part(False, _m("mistake.no_halo", case=text, threads=POOL_TPB), mistake="no_halo",
                          label=_label(text, "값", "values")))
    else:
        parts.append(_values_part(text, answer, want, label=_label(text, "값", "values")))
    work = _work_part(text, answer, reads=3, writes=1, shared=3)
    return _gate(parts + [work], [sync, budget_part, work])


# ---------------------------------------------------------------- 5. dot product: block reduction
def _dot_visible() -> list:
    return [{"n": 300, "seed": 10}, {"n": 129, "seed": 11}]


def _dot_answer(kernel, case) -> dict:
    n = case["n"]
    record, (out, *_rest) = device.execute(_kernel(kernel), cdiv(n, DOT_TPB), DOT_TPB, np.zeros(1, np.float32),
                                           ints(case, "a", n), ints(case, "b", n), n, names=("out", "a", "b", "n"))
    return report(record, {"out": out}, {"a": n, "b": n})


def _dot_score(case, answer, want) -> list[Part]:
    n = case["n"]
    blocks = cdiv(n, DOT_TPB)
    text = f"n={n}"
    crashed = _crashed(answer)
    if crashed:
        return [crashed]
    sync = _race_part(text, answer, "shared", "missing_sync", label=_label(text, "동기화", "barrier"))
    update = _race_part(text, answer, "global", "non_atomic", label=_label(text, "out[0] 갱신", "out[0] update"))
    atomics = (answer.get("atomics") or {}).get("out", 0)
    # over one per block: ``atomic_per_thread`` where there is one for every element (no block reduction at all)
    mistake = "atomic_per_thread" if atomics > blocks and atomics >= n else None
    key = "atomics_within" if atomics <= blocks else f"mistake.{mistake}" if mistake else "atomics_over"
    per_block = Part(atomics <= blocks, _m(key, case=text, found=_many(atomics, "번", "atomic add", "atomic adds"),
                                           blocks=_many(blocks, "개", "block", "blocks")),
                     mistake=mistake, label=_label(text, "블록당 원자적 덧셈 하나", "one atomic per block"))
    reads = answer.get("reads") or {}
    ok_reads = reads.get("a", 0) == n and reads.get("b", 0) == n
    tree = _tree_part(text, answer, DOT_TPB, "serial_reduction", _label(text, "트리 리덕션", "tree reduction"))
    parts = [_oob_part(text, answer, label=_label(text, "범위", "bounds")), sync, update, per_block, tree,
             Part(ok_reads, _m("reads_each_once", case=text, n=n, a=reads.get("a", 0), b=reads.get("b", 0)),
                  label=_label(text, "a, b 한 번씩", "a, b once")),
             _values_part(text, answer, want, label=_label(text, "값", "value"))]
    work = _work_part(text, answer, reads=3, writes=1)   # a[i], b[i], and out[0] in the block's atomic add
    return _gate(parts + [work], [sync, update, per_block, work])


# ---------------------------------------------------------------- 6. exclusive prefix sum in one block
def _scan_visible() -> list:
    return [{"n": 128, "seed": 12}, {"n": 77, "seed": 13}]


def _scan_answer(kernel, case) -> dict:
    n = case["n"]
    record, (out, *_rest) = device.execute(_kernel(kernel), 1, SCAN_TPB, _blank(n), ints(case, "x", n), n,
                                           names=("out", "x", "n"))
    return report(record, {"out": out}, {"x": n - 1})   # x[n-1] is in no exclusive prefix


def _scan_score(case, answer, want) -> list[Part]:
    n = case["n"]
    text = f"n={n}"
    crashed = _crashed(answer)
    if crashed:
        return [crashed]
    sync = _race_part(text, answer, "shared", "in_place_race", label=_label(text, "동기화", "barriers"))
    budget_part = _scan_reads(text, answer, n)
    tree = _tree_part(text, answer, SCAN_TPB, "serial_scan", _label(text, "두 배씩 건너뛰기", "doubling steps"))
    parts = [_oob_part(text, answer, label=_label(text, "범위", "bounds")), sync, budget_part, tree]
    got = (answer.get("values") or {}).get("out") or []
    inclusive = want["out"][1:] + [want["out"][-1] + want["x_last"]] if want["out"] else []
    if got == inclusive and got != want["out"]:
        parts.append(Part(False, _m("mistake.inclusive", case=text), mistake="inclusive",
                          label=_label(text, "값", "values")))
    else:
        parts.append(_values_part(text, answer, {"out": want["out"]}, label=_label(text, "값", "values")))
    work = _work_part(text, answer, reads=1, writes=1)
    return _gate(parts + [work], [sync, budget_part, work])


def _scan_reads(text: str, answer: dict, n: int) -> Part:
    """At most ``n`` global reads of x. Over it: ``rereads`` where a thread read more than two elements of x (each
    thread adds up its own prefix from global memory); ``x_twice`` where no thread read more than two and x was
    read at most twice over (x read again, as an inclusive scan minus x[i] that loads x[i] a second time);
    otherwise the count alone."""
    reads = (answer.get("reads") or {}).get("x", 0)
    most = (answer.get("most_reads") or [0])[0]
    values = dict(case=text, found=reads, budget=n, naive=n * (n - 1) // 2, most=most)
    label = _label(text, "전역 읽기", "global reads")
    if reads <= n:
        return Part(True, _m("reads_within", **values), label=label)
    mistake = "rereads" if most > 2 else "x_twice" if reads <= 2 * n else None
    return Part(False, _m(f"mistake.{mistake}" if mistake else "reads_over", **values), mistake=mistake, label=label)


# ---------------------------------------------------------------- 7. tiled C = A Bᵀ
def _matmul_visible() -> list:
    return [{"m": 40, "n": 24, "k": 36, "seed": 14}]


def matmul_budget(m: int, n: int, k: int, tile: int = TILE) -> dict:
    """Global reads of a tiled C = A Bᵀ: A (m×k) once per column of tiles of C, B (n×k) once per row of tiles."""
    return {"a": m * k * cdiv(n, tile), "b": n * k * cdiv(m, tile)}


def _matmul_answer(kernel, case) -> dict:
    m, n, k = case["m"], case["n"], case["k"]
    record, (out, *_rest) = device.execute(_kernel(kernel), (cdiv(n, TILE), cdiv(m, TILE)), (TILE, TILE),
                                           _blank((m, n)), ints(case, "a", (m, k)), ints(case, "b", (n, k)), m, n, k,
                                           names=("c", "a", "b", "m", "n", "k"))
    return report(record, {"c": out}, {"a": m * k, "b": n * k})


def _matmul_score(case, answer, want) -> list[Part]:
    m, n, k = case["m"], case["n"], case["k"]
    text = f"A {m}×{k}, B {n}×{k}"
    crashed = _crashed(answer)
    if crashed:
        return [crashed]
    if answer.get("oob"):   # the launch stopped there: its counts are of a part of it, and its values unknown
        return [_oob_part(text, answer, _matmul_oob(answer, m, n, k), label=_label(text, "범위", "bounds")),
                Part(False, _m("values_unknown", case=text))]
    sync = _race_part(text, answer, "shared", "missing_sync", label=_label(text, "동기화", "barriers"))
    reads, budget = answer.get("reads") or {}, matmul_budget(m, n, k)
    over = {x: reads.get(x, 0) for x in ("a", "b") if reads.get(x, 0) > budget[x]}
    budget_part = Part(not over, _m("mistake.naive" if over else "matmul_reads", case=text, a=reads.get("a", 0),
                                    b=reads.get("b", 0), budget_a=budget["a"], budget_b=budget["b"],
                                    naive=m * n * k, tile=TILE), mistake="naive" if over else None, weight=2,
                       label=_label(text, "전역 읽기 예산", "global-read budget"))
    parts = [Part(True, _m("no_oob"), label=_label(text, "범위", "bounds")), sync, budget_part,
             _matmul_coalescing(text, answer, tiled=not over),
             _values_part(text, answer, want, label=_label(text, "값", "values"))]
    steps = cdiv(k, TILE)   # per tile step a thread loads one element of A and one of B, and reads 2·TILE shared
    work = _work_part(text, answer, reads=2 * steps, writes=1, shared=2 * TILE * steps)
    return _gate(parts + [work], [sync, budget_part, work])


def _matmul_oob(answer: dict, m: int, n: int, k: int) -> str | None:
    """``no_boundary`` where every access out of bounds stays within the arrays' sizes rounded up to whole tiles
    (a tile loaded or written past an edge without a check), else None."""
    padded = {name: [cdiv(d, TILE) * TILE for d in dims] for name, dims in (("a", (m, k)), ("b", (n, k)),
                                                                             ("c", (m, n)))}
    oob = answer.get("oob") or []
    inside = all(name in padded and len(index) == 2 and all(isinstance(i, int) and 0 <= i < p
                                                             for i, p in zip(index, padded[name]))
                 for name, index, _ in oob)
    return "no_boundary" if oob and inside else None


def _matmul_coalescing(text: str, answer: dict, tiled: bool) -> Part:
    """Tile loads at most :data:`SECTORS_MAX` sectors per warp request. ``uncoalesced_b`` where a kernel within the
    read budget (it tiles) loads B across rows; another array, or a kernel that does not tile, is told the count."""
    sectors = answer.get("sectors") or {}
    worst = max((sectors.get(x) or 0.0) for x in ("a", "b"))
    label = _label(text, "합병 접근", "coalescing")
    if worst <= SECTORS_MAX:
        return Part(True, _m("coalesced", case=text, found=worst, most=SECTORS_MAX), label=label)
    array = "b" if (sectors.get("b") or 0) > SECTORS_MAX else "a"
    if tiled and array == "b":
        return Part(False, _m("mistake.uncoalesced_b", case=text, array=array, found=worst, most=SECTORS_MAX),
                    mistake="uncoalesced_b", label=label)
    return Part(False, _m("uncoalesced", case=text, array=array, found=sectors[array], most=SECTORS_MAX),
                label=label)


# ---------------------------------------------------------------- 8. Triton: softmax of each row
def _softmax_visible() -> list:
    return [{"rows": 4, "cols": 37, "seed": 15, "scale": 1.0}, {"rows": 3, "cols": 100, "seed": 16, "scale": 400.0}]


def softmax_inputs(case: dict) -> np.ndarray:
    rng = np.random.default_rng([case["seed"], 99])
    return (rng.standard_normal((case["rows"], case["cols"])) * case["scale"]).astype(np.float32)


def block_for(cols: int) -> int:
    """The power of two at or above ``cols`` (a Triton block's length must be a power of two)."""
    return 1 << max(0, (cols - 1).bit_length())


def _overflows(case: dict) -> bool:
    """Whether exp of some input leaves the float32 range (x > 88.7): only then can inf or NaN in y come from a
    softmax that does not subtract the row's maximum (``no_max``)."""
    return bool(softmax_inputs(case).max() > math.log(np.finfo(np.float32).max))


def triton_kernel(kernel: Any) -> bool:
    """Whether ``kernel`` is what ``@triton.jit`` returns (a JITFunction; an InterpretedFunction on the
    interpreter), not another object that can be indexed and called."""
    from triton.runtime.interpreter import InterpretedFunction
    from triton.runtime.jit import JITFunction
    return type(kernel) in (JITFunction, InterpretedFunction)


def _softmax_answer(kernel, case) -> dict:
    if device.TRITON_MISSING is not None:
        return {"skipped": device.TRITON_MISSING.en, "skipped_ko": device.TRITON_MISSING.ko}
    if not triton_kernel(kernel):
        return {"not_triton": type(kernel).__name__}
    import torch
    rows, cols = case["rows"], case["cols"]
    x = torch.tensor(softmax_inputs(case), device=device.TRITON_DEVICE)
    y = torch.full_like(x, float("nan"))
    launch = lambda: kernel[(rows,)](x, y, cols, BLOCK=block_for(cols))  # noqa: E731
    facts = {}
    with warnings.catch_warnings(), np.errstate(all="ignore"):   # exp overflow is the learner's to see in y
        warnings.simplefilter("ignore")
        if device.TRITON_INTERPRETED:   # the lanes a missing mask lets through lie just past the last row
            record = traffic.trace_triton(launch, {"x": x, "y": y}, past=(block_for(cols) - cols) * x.element_size())
            if record.error and "NotImplementedError" in record.error:
                raise NotImplementedError()
            loads, stores, error = dict(record.loads), dict(record.stores), record.error
            outside = bool(record.outside)
            # lanes past a row's end load past x's end, or store past y's end (a store past x's end may be y's start)
            strays = sum(record.strays[key] for key in (("load", "x"), ("load", "y"), ("store", "y")))
            facts = {"strays": strays, "outside_kind": record.outside[0][0] if outside else None,
                     "unstored": _first(record.unstored["y"], tuple(y.shape))}
        else:
            loads = stores = None
            outside, error = False, None
            try:
                launch()
                torch.cuda.synchronize()
            except NotImplementedError:
                raise
            except Exception as exc:  # the learner's kernel may raise anything
                error = f"{type(exc).__name__}: {exc}"[:400]
    return {"error": error, "outside": outside, "loads": loads, "stores": stores, **facts,
            "values": {"y": _values(y.cpu().numpy())}}


def _softmax_score(case, answer, want) -> list[Part]:
    if answer.get("skipped"):
        return [Part(False, Message(answer["skipped_ko"], answer["skipped"]))]
    if answer.get("not_triton"):
        return [Part(False, _m("not_triton", found=answer["not_triton"]))]
    rows, cols = case["rows"], case["cols"]
    text = f"{rows}×{cols}, |x| ~ {case['scale']:g}"
    if answer.get("strays"):   # lanes past the end of a row reached memory past the end of x or y
        return [Part(False, _m("mistake.no_mask", case=text, block=block_for(cols), cols=cols), mistake="no_mask")]
    if answer.get("outside"):
        kind = _kind("write" if answer.get("outside_kind") == "store" else "read")
        return [Part(False, _m("triton_outside", case=text, kind=kind))]
    if answer.get("error"):
        return [Part(False, _m("kernel_raised", error=answer["error"][:300]))]
    count, first = answer.get("unstored") or [0, None]
    if count:   # y changed by something other than the kernel's stores: the kernel's result is unknown
        return [Part(False, _m("not_stored_triton", case=text, index=first,
                               count=_many(count, "개", "element", "elements")))]
    parts = []
    loads, stores = answer.get("loads"), answer.get("stores")
    if loads is not None:
        ok = loads.get("x", 0) == rows * cols and stores.get("y", 0) == rows * cols and not loads.get("y")
        shown = loads.get("x", 0) if not loads.get("y") else f"x {loads.get('x', 0)} + y {loads['y']}"
        parts.append(Part(ok, _m("softmax_traffic", case=text, want=rows * cols, loads=shown,
                                 stores=stores.get("y", 0)),
                          label=_label(text, "한 번 읽고 한 번 쓰기", "read once, write once")))
    got = (answer.get("values") or {}).get("y") or []
    if any(v is None for v in got) and _overflows(case):
        parts.append(Part(False, _m("mistake.no_max", case=text), mistake="no_max",
                          label=_label(text, "값", "values")))
        return parts
    sums = [sum(got[r * cols:(r + 1) * cols]) for r in range(rows)] if len(got) == rows * cols else []
    if block_for(cols) > cols and sums and any(s < 0.999 for s in sums):   # only where lanes are masked off
        parts.append(Part(False, _m("mistake.other_zero", case=text, total=min(sums)), mistake="other_zero",
                          label=_label(text, "값", "values")))
        return parts
    parts.append(_values_part(text, answer, want, rel=1e-5, label=_label(text, "값", "values")))
    return parts


# ---------------------------------------------------------------- 9. copy bandwidth
COPY_FLOOR, COPY_CEILING = 64 * 2**20, 2**30
SIM_ELEMENTS, SIM_GBS = 2048, 5e-4   # the simulator's copy: elements, and the virtual device's bandwidth (GB/s)
SIM_LINK_SHARE = 20                  # the virtual host link is this many times slower than the device's memory
SIM_TOLERANCE = 0.01                 # on the virtual clock a right answer is exact to far better than 1%
SIM_ROUND_FLOOR_S = 0.01             # a round on the simulator traces a copy launch: it takes longer than this
GIB_RATIO = 1e9 / 2**30              # GiB/s reported instead of GB/s
SIM_WEIGHT = 4                       # the number measured, beside the copy kernel's values and traffic (1 each):
                                     # the measurement is the task's point, so a wrong one keeps a third


def _times(ratio: float, versus: str) -> Message:
    """``기준의 0.50배`` / ``0.50x the reference``: a ratio to the reference, the right number or the spec sheet."""
    ko, en = {"reference": ("기준", "the reference"), "right": ("정답", "the right number"),
              "spec": ("사양 대역폭", "the spec sheet's bandwidth")}[versus]
    digits = f"{ratio:.2f}" if ratio < 10 else f"{ratio:.0f}"
    return Message(f"{ko}의 {digits}배", f"{digits}x {en}")


def _copy_visible() -> list:
    return [{"factor": 4, "seed": 17, "sim_n": SIM_ELEMENTS, "sim_gbs": SIM_GBS}]


def copy_elements(case: dict) -> int:
    """float32 elements of the copy: on a GPU at least ``factor`` x its L2 (64 MiB to 1 GiB); simulated, a few."""
    if device.SIMULATED:
        return int(case.get("sim_n", SIM_ELEMENTS))
    from ...hardware import detect
    acc = detect().best()
    l2 = (acc.l2_bytes if acc else None) or 50 * 2**20
    return int(min(max(case["factor"] * l2, COPY_FLOOR), COPY_CEILING)) // 4


def copy_threads(n: int) -> tuple[int, int]:
    return cdiv(n, 256), 256


def _copy_answer(learner, case) -> dict:
    kernel, measure = learner
    _kernel(kernel)
    check_n = 1000
    record, (dst, src, *_rest) = device.execute(kernel, *copy_threads(check_n), _blank(check_n),
                                                ints(case, "src", check_n), names=("dst", "src"))
    work = report(record, {"dst": dst}, {"src": check_n})
    copy = {"right": bool(np.array_equal(dst, src)), "error": record.error, "oob": bool(record.oob),
            "reads": sum(record.reads.values()), "writes": sum(record.writes.values()),
            "sectors": record.sectors_per_request("src"),
            **{key: work[key] for key in ("most_reads", "most_writes", "unstored", "unread", "coverage")}}
    n, before = copy_elements(case), copy_calls
    if not device.SIMULATED:
        gbs = _number(measure(n))
        return {"device": device.gpu_name(), "simulated": False, "n": n, "gbs": gbs, "copy": copy,
                "reference_calls": copy_calls - before}
    bandwidth = float(case.get("sim_gbs", SIM_GBS))
    with clock.virtual_gpu(bandwidth, bandwidth / SIM_LINK_SHARE, getattr(measure, "__globals__", None)) as gpu:
        gbs = _number(measure(n))
    return {"device": "cpu", "simulated": True, "n": n, "gbs": gbs, "copy": copy, "virtual": gpu.facts(),
            "reference_calls": copy_calls - before}


def _number(value: Any) -> Any:
    try:
        return float(value)
    except (TypeError, ValueError):
        return repr(value)[:80]


cuda = device.cuda


@cuda.jit
def reference_copy(dst, src):
    """The course's copy kernel: one thread per element."""
    i = cuda.grid(1)
    if i < src.size:
        dst[i] = src[i]


copy_calls = 0  # how many times reference_copy_gbs has run in this process (an answer must measure by itself)


def reference_copy_gbs(n: int, budget_s: float | None = None) -> float:
    """The course's copy kernel on ``n`` float32 values, 256 threads per block, timed with the harness
    (read + write counted)."""
    global copy_calls
    copy_calls += 1
    from ...harness import time_fn
    src = cuda.to_device(np.ones(n, np.float32))
    dst = cuda.device_array(n, np.float32)
    grid, block = copy_threads(n)
    budget = budget_s if budget_s is not None else (0.5 if device.SIMULATED else 1.0)
    timing = time_fn(lambda: reference_copy[grid, block](dst, src), device=device.DEVICE, budget_s=budget)
    return 2 * n * 4 / timing.median_s / 1e9


def _copy_reference(case, answer) -> dict:
    """The referee's reference: the course's copy measured on the GPU; on the simulator none (the virtual clock
    gives the exact answer)."""
    if isinstance(answer, dict) and answer.get("simulated"):
        return {"simulated": True}
    return {"gbs": reference_copy_gbs(copy_elements(case))}


def _spec_bandwidth() -> float | None:
    from ...reference import spec_profile
    profile = spec_profile(device.DEVICE) if not device.SIMULATED else None
    return float(profile.bandwidth_gbs) if profile is not None and profile.bandwidth_gbs else None


def _copy_score(case, answer, want) -> list[Part]:
    rounds = referee.rounds(answer)
    if any(isinstance(r, dict) and r.get("reference_calls") for r in rounds):
        return [Part(False, _m("mistake.reference_called"), mistake="reference_called")]
    bad = next((r for r in rounds if not (isinstance(r.get("gbs"), (int, float)) and r["gbs"] > 0)), None)
    if not rounds or bad is not None:
        return [Part(False, _m("need_gbs", found=bad.get("gbs") if bad else None))]
    first = rounds[0]
    copy = first.get("copy") or {}
    parts = [Part(bool(copy.get("right")) and not copy.get("oob") and not copy.get("error"),
                  _m("copy_wrong", error=copy.get("error") or "-"), label=_label("copy_kernel", "값", "values")),
             Part(copy.get("reads") == 1000 and copy.get("writes") == 1000 and (copy.get("sectors") or 99) <= 4.0,
                  _m("copy_traffic", reads=copy.get("reads"), writes=copy.get("writes"), sectors=copy.get("sectors")),
                  label=_label("copy_kernel", "트래픽", "traffic"))]
    measured, timed = (_copy_virtual if first.get("simulated") else _copy_on_gpu)(case, answer, rounds)
    shown = (parts + timed if measured else timed)   # numbers nobody watched being measured: worth nothing
    # the timing of a copy kernel that raised, or whose threads did not each copy their element, is worth nothing
    work = parts[0] if copy.get("error") and measured else _work_part("copy_kernel", copy, reads=1, writes=1)
    return _gate(shown + ([] if work in shown else [work]), [work])


def _copy_virtual(case, answer, rounds) -> tuple[bool, list[Part]]:
    """The simulator: the rounds ran on the virtual clock, where the right answer is the device's bandwidth.
    Returns (measured, parts) as :func:`expectations.side_by_side` does."""
    n = int(rounds[0].get("n") or copy_elements(case))
    right = float(case.get("sim_gbs", SIM_GBS))
    what = _m("copy_what_sim", n=n)
    why = referee.unmeasured(answer, lambda r: SIM_ROUND_FLOOR_S)
    if why:   # a round that returned sooner than a traced launch takes did not run the copy: worth nothing
        key = "measure.not_observed" if why in ("no rounds", "not observed") else "measure.not_measured"
        return False, [Part(False, msg(key, what=what, why=why), SIM_WEIGHT)]
    middle = sorted(rounds, key=lambda r: r["gbs"])[(len(rounds) - 1) // 2]
    found, facts = middle["gbs"], middle.get("virtual") or {}
    values = dict(n=n, bytes=f"{8 * n:,}", ms=f"{8 * n / (right * 1e9) * 1e3:.1f}", right=f"{right:.3g}",
                  found=f"{found:.3g}", ratio=_times(found / right, "right"))
    label = _label(Message("가상 시계", "virtual clock"), "잰 값", "measured value")
    if facts.get("launches") and abs(found / right - 1) <= SIM_TOLERANCE:
        return True, [Part(True, _m("copy_sim_right", **values), SIM_WEIGHT, measured=True, label=label)]
    key, mistake = _virtual_mistake(n, found, right, facts)
    text = _m(key, **values, moved=f"{facts.get('moved', 0):,}", launches=facts.get("launches", 0),
              transfers=facts.get("transfers", 0), compile_s=clock.COMPILE_S)
    if mistake == "no_synchronize" and found < right:   # launches return at once: only a compile makes it slow
        text = text + _m("copy_sim_compiled_too", compile_s=clock.COMPILE_S)
    return True, [Part(False, text + _m("copy_sim_found", **values), SIM_WEIGHT, mistake=mistake, label=label)]


def _virtual_mistake(n: int, found: float, right: float, facts: dict) -> tuple[str, str | None]:
    """(message key, mistake) for a wrong number on the virtual clock, from what the device recorded."""
    ratio = found / right
    launches = facts.get("launches", 0)
    near = lambda target: abs(ratio / target - 1) <= SIM_TOLERANCE  # noqa: E731
    if not launches:
        return "copy_sim_no_launch", None
    if facts.get("moved") != 8 * n:
        return "copy_sim_moved", None
    if facts.get("implicit"):
        return "mistake.host_arrays", "host_arrays"
    if facts.get("timed_transfers", 0):   # copies made after the clock was first read: inside the timing
        return "mistake.timed_copies", "timed_copies"
    if not facts.get("synchronizes"):     # the clock stopped before the queued copies ran (too fast), or ran
        return "mistake.no_synchronize", "no_synchronize"   # around launches alone (a compile: too slow)
    if near(GIB_RATIO):
        return "mistake.gib", "gib"
    if near(0.5) or near(0.5 * GIB_RATIO):
        return "mistake.reads_only", "reads_only"
    # a time that holds k launches and one compilation: found = 8n·k / (COMPILE_S + k·copy_s)
    rate, copy_s = found * 1e9, 8 * n / (right * 1e9)
    if ratio < 1 and 8 * n > rate * copy_s:
        k = clock.COMPILE_S * rate / (8 * n - rate * copy_s)
        if 0.5 <= k <= launches + 0.5 and abs(k - round(k)) <= SIM_TOLERANCE * k:
            return "mistake.no_warmup", "no_warmup"
    return "copy_sim_other", None


SLIPS = (1.0, 0.5, GIB_RATIO, 0.5 * GIB_RATIO)  # the units a copy's GB/s may slip by, each named by its own part


def _clock_claims(n: int):
    """On a GPU the copy's GB/s came from ``time_fn``: 8n bytes over one of its times, or that with a slip of units
    (reads only, GiB/s), which the band names (``referee.off_clock``)."""
    return lambda r: [(2 * n * 4 / (r["gbs"] * 1e9), "time_fn", SLIPS)]


def _copy_on_gpu(case, answer, rounds) -> tuple[bool, list[Part]]:
    """A GPU: the median round against the course's copy kernel measured in turns with it, and the spec sheet."""
    from ...expectations import load_explains, side_by_side
    n = int(rounds[0].get("n") or copy_elements(case))
    what = _m("copy_what", n=f"{n:,}", device=rounds[0].get("device") or "GPU")
    measured, compared = side_by_side("bandwidth", answer, what, lambda r: r["gbs"], lambda ref: ref["gbs"],
                                      lambda r: 2 * n * 4 / (r["gbs"] * 1e9), "GB/s", clock_claims=_clock_claims(n))
    if not measured:
        return False, compared
    parts = list(compared)
    found = referee.median_ratio(answer, lambda r: r["gbs"], lambda ref: ref["gbs"])
    ratio = found[0] if found else None
    if ratio is not None and not compared[0].ok \
            and load_explains("bandwidth", answer, lambda r: r["gbs"], lambda ref: ref["gbs"]) is None:
        if 0.4 <= ratio <= 0.6:
            parts.append(Part(False, _m("mistake.reads_only", ratio=_times(ratio, "reference")), weight=0,
                              mistake="reads_only"))
        elif ratio < 0.25:
            parts.append(Part(False, _m("mistake.host_arrays", ratio=_times(ratio, "reference")), weight=0,
                              mistake="host_arrays"))
        elif ratio > 3:
            parts.append(Part(False, _m("mistake.no_synchronize", ratio=_times(ratio, "reference")), weight=0,
                              mistake="no_synchronize"))
    spec = _spec_bandwidth()
    if spec:
        gbs = max(r["gbs"] for r in rounds)
        over = gbs > SPEC_CAP * spec
        parts.append(Part(not over, _m("mistake.no_synchronize" if over else "below_spec", found=gbs, spec=spec,
                                       ratio=_times(gbs / spec, "spec")), mistake="no_synchronize" if over else None))
    return True, parts


TASKS = {
    "guard": Task(title=_m("title.guard"), answer=_guard_answer, score=_guard_score, visible=_guard_visible,
                  given=written, hint=_hint, kind="recall", level="warm-up",
                  mistakes=("no_guard", "off_by_one_guard", "too_few_blocks", "extra_block"),
                  rule=_m("rule.guard"), central=("no_guard", "off_by_one_guard", "too_few_blocks")),
    "broadcast": Task(title=_m("title.broadcast"), answer=_broadcast_answer, score=_broadcast_score,
                      given=written, visible=_broadcast_visible, hint=_hint, kind="transfer", level="core",
                      mistakes=("row_col_swap", "guard_one_dim"),
                      rule=_m("rule.broadcast"), central=("row_col_swap", "guard_one_dim")),
    "stride": Task(title=_m("title.stride"), answer=_stride_answer, score=_stride_score, visible=_stride_visible,
                   given=written, hint=_hint, kind="transfer", level="core",
                   mistakes=("no_loop", "stride_block_only", "contiguous_chunks"),
                   rule=_m("rule.stride"), central=("no_loop", "stride_block_only")),
    "pool": Task(title=_m("title.pool"), answer=_pool_answer, score=_pool_score, visible=_pool_visible, hint=_hint,
                 given=written, kind="transfer", level="core",
                 mistakes=("missing_sync", "early_return", "no_halo", "global_in_loop"),
                 rule=_m("rule.pool"), central=("missing_sync", "early_return", "no_halo", "global_in_loop")),
    "dot": Task(title=_m("title.dot"), answer=_dot_answer, score=_dot_score, visible=_dot_visible, hint=_hint,
                given=written, kind="recall", level="core",
                mistakes=("missing_sync", "early_return", "non_atomic", "atomic_per_thread", "serial_reduction"),
                rule=_m("rule.dot"),
                central=("missing_sync", "early_return", "non_atomic", "atomic_per_thread", "serial_reduction")),
    "scan": Task(title=_m("title.scan"), answer=_scan_answer, score=_scan_score, visible=_scan_visible, hint=_hint,
                 given=written, kind="transfer", level="core",
                 mistakes=("in_place_race", "early_return", "rereads", "inclusive", "serial_scan", "x_twice"),
                 rule=_m("rule.scan"),
                 central=("in_place_race", "early_return", "rereads", "inclusive", "serial_scan")),
    "matmul": Task(title=_m("title.matmul"), answer=_matmul_answer, score=_matmul_score, visible=_matmul_visible,
                   given=written, hint=_hint, kind="transfer", level="stretch",
                   mistakes=("naive", "missing_sync", "early_return", "uncoalesced_b", "no_boundary"),
                   rule=_m("rule.matmul"), central=("naive", "missing_sync", "early_return", "uncoalesced_b")),
    "softmax": Task(title=_m("title.softmax"), answer=_softmax_answer, score=_softmax_score,
                    visible=_softmax_visible, kind="transfer", level="core",
                    mistakes=("no_max", "other_zero", "no_mask"),
                    rule=_m("rule.softmax"), central=("no_max", "other_zero", "no_mask")),
    "copy": Task(title=_m("title.copy"), answer=_copy_answer, score=_copy_score, visible=_copy_visible, hint=_hint,
                 given=lambda a: [r["gbs"] for r in a["rounds"]],  # the figure: a right kernel beside a constant is 0
                 measurement=True, reference=_copy_reference, rounds=3, kind="recall", level="core",
                 mistakes=("reads_only", "gib", "host_arrays", "timed_copies", "no_synchronize", "no_warmup",
                           "reference_called"),
                 rule=_m("rule.copy"),
                 central=("reads_only", "gib", "host_arrays", "timed_copies", "no_synchronize", "no_warmup",
                          "reference_called")),
}
