"""The check of module 08's measured task: the learner's decode loop with a KV cache, timed by the learner with the
course's ``time_fn``.

The learner's function is called as ``fn(model, prompt_ids, new_tokens, device)`` and returns a dict: ``tokens``
(the ids its decode steps generated, ``[batch, new_tokens]``, a tensor or nested lists), ``seconds`` (``time_fn``'s
median time of one decode of ``new_tokens`` steps after the prefill) and ``tokens_per_s`` (the tokens those steps
generated per second: ``batch * new_tokens / seconds``). Two kinds of case:

- ``device``: the course's model (:data:`decode.LAPTOP`, float32) on the learner's device. Each round is followed by
  the course's reference decode (:func:`decode.time_decode`) on the same device, and the median ratio of the two
  decode speeds must lie in ``side_by_side.decode`` of ``expectations.yaml``; on a CPU both run on one torch thread.
- ``virtual``: a small model whose calls run on :class:`VirtualGPU`, an asynchronous device on a virtual clock that
  the course's clock reads while the learner's function runs. Each call's time is exact, so the four methodology
  mistakes each give their own number and leave their own evidence: the prefix computed again inside a timed span
  (``recompute_prefix``), the prefill inside one (``prefill_timed``), a span ended while work was still queued
  (``no_synchronize``), and ``tokens_per_s`` counting the prompt's tokens (``prompt_counted``, seen on every case).

On either kind, a function that runs the course's own decode timing (:func:`decode.time_decode`, also inside
:func:`decode.measure_decode`) instead of its own loop earns nothing (``reference_called``).

Messages: ``messages.yaml`` (``m08.measure.*``).
"""
from __future__ import annotations

import math
import time
from functools import lru_cache
from typing import Any

from ... import clock
from ...checks import referee
from ...checks.core import Part
from ...i18n import Message, msg
from . import decode

MISTAKES = ("recompute_prefix", "prefill_timed", "no_synchronize", "prompt_counted", "reference_called")
KEYS = ("tokens", "seconds", "tokens_per_s")
BAND = "decode"                # side_by_side band of expectations.yaml
REFERENCE_BUDGET_S = 0.3       # the reference decode's time_fn budget per round
VIRTUAL_REL = 1e-3             # a virtual case's time is exact: this close to the device's own
REAL_CALL_S = 5e-4             # each call on the virtual GPU also takes this much real time (a sleep), so the
                               # referee's wall shows that a round ran: at least two decodes of new_tokens steps
                               # (the timed one and the one whose tokens are returned)
TINY = decode.Shape(layers=1, d_model=32, heads=2, kv_heads=1, ffn=64, vocab=128)  # the virtual case's values


def visible() -> list:
    """One case on the learner's device and one on the virtual GPU."""
    from ...hardware import best_device
    kind = best_device()
    return [{"kind": "device", "device": f"{kind}:0" if kind in ("cuda", "xpu") else kind,
             "batch": 4, "prompt_len": 32, "new_tokens": 16},
            {"kind": "virtual", "batch": 2, "prompt_len": 32, "new_tokens": 8,
             "step_ms": 2.0, "prefill_ms": 5.0, "launch_us": 500.0}]


# ---------------------------------------------------------------- the virtual GPU
class VirtualGPU:
    """An asynchronous GPU on a virtual clock, and the course's clock while it is held (:func:`clock.held_by`).

    A call launched on it (:meth:`launch`) costs the host ``launch_s`` and the device ``work_s`` after the work queued
    before it; :meth:`synchronize` waits for the queue. As the clock's holder it sees each timed span begin and end:
    it keeps the spans (seconds per call, label), which calls were launched inside one, and the spans that ended while
    work was still queued (timed without waiting for the device)."""

    keeps = False  # no referee: it keeps its own spans, sent with the round

    def __init__(self, launch_s: float, name: str = "virtual GPU"):
        self.launch_s, self.name = launch_s, name
        self.t = self.busy_until = 0.0
        self.open: list[float] = []
        self.spans: list[list] = []
        self.timed = {"prefill": 0, "step": 0, "forward_full": 0}
        self.unsynchronized = self.synchronizes = 0

    def now(self) -> float:
        return self.t

    def begin(self) -> float:
        self.open.append(self.t)
        return self.t

    def end(self, inner: int = 1, label: str = "") -> float:
        if self.t < self.busy_until:
            self.unsynchronized += 1
        if self.open:
            self.spans.append([(self.t - self.open.pop()) / max(int(inner), 1), str(label)])
        return self.t

    def synchronize(self) -> None:
        self.synchronizes += 1
        self.t = max(self.t, self.busy_until)

    def launch(self, what: str, work_s: float) -> None:
        self.t += self.launch_s
        self.busy_until = max(self.t, self.busy_until) + work_s
        if self.open:
            self.timed[what] += 1

    def facts(self) -> dict:
        return {"spans": self.spans, "timed": dict(self.timed), "unsynchronized": self.unsynchronized,
                "synchronizes": self.synchronizes}

    def __str__(self) -> str:
        return self.name


class VirtualDecoder:
    """:class:`decode.Decoder`'s calls on a :class:`VirtualGPU`: the values of a small real model, the time of the
    case's model (a step ``step_s``; a prefill ``prefill_s`` for the case's prompt, a whole-sequence pass that share
    per token of its length); each call also lasts :data:`REAL_CALL_S` of real time."""

    def __init__(self, case: dict, gpu: VirtualGPU):
        self.inner, self.gpu, self.shape = _tiny(), gpu, TINY
        self.embed = self.inner.embed
        self.step_s, self.prefill_s = case["step_ms"] / 1e3, case["prefill_ms"] / 1e3
        self.per_token_s = self.prefill_s / case["prompt_len"]

    def prefill(self, ids, capacity=None):
        self._launch("prefill", self.per_token_s * ids.shape[1])
        return self.inner.prefill(ids, capacity)

    def step(self, ids, cache):
        self._launch("step", self.step_s)
        return self.inner.step(ids, cache)

    def forward_full(self, ids):
        self._launch("forward_full", self.per_token_s * ids.shape[1])
        return self.inner.forward_full(ids)

    def _launch(self, what: str, work_s: float) -> None:
        self.gpu.launch(what, work_s)
        time.sleep(REAL_CALL_S)


@lru_cache(maxsize=1)
def _tiny() -> decode.Decoder:
    return decode.build(TINY, seed=0)


@lru_cache(maxsize=4)
def course_model(device: str) -> decode.Decoder:
    """The course's model of the device cases, built once per device."""
    return decode.build(decode.LAPTOP, device=device)


def _virtual(case: dict) -> tuple[VirtualGPU, VirtualDecoder]:
    gpu = VirtualGPU(case["launch_us"] / 1e6)
    return gpu, VirtualDecoder(case, gpu)


# ---------------------------------------------------------------- the learner's rounds and the reference
class _Counted:
    """The course's model as the learner's function gets it: each call of prefill, step and forward_full counted."""

    def __init__(self, model: decode.Decoder):
        self._model, self.calls = model, {"prefill": 0, "step": 0, "forward_full": 0}
        self.shape, self.embed = model.shape, model.embed

    def __getattr__(self, name: str):
        found = getattr(self._model, name)
        if name not in self.calls:
            return found

        def counted(*args, **kwargs):
            self.calls[name] += 1
            return found(*args, **kwargs)
        return counted


def _plain(result: Any) -> dict:
    """The learner's dict as JSON data; the keys it lacks are left out (the score says which)."""
    if not isinstance(result, dict):
        return {"found": type(result).__name__}
    out = {}
    tokens = result.get("tokens")
    if hasattr(tokens, "tolist"):
        tokens = tokens.tolist()
    if tokens is not None:
        out["tokens"] = tokens
    for key in ("seconds", "tokens_per_s"):
        try:
            out[key] = float(result[key])
        except (KeyError, TypeError, ValueError):
            pass
    return out


def answer(fn, case: dict) -> dict:
    """One round: the learner's function on the case; with what the check saw (calls, the virtual GPU's facts) and
    the tokens the course's greedy decode gives (on the same device)."""
    from ...harness import one_cpu_thread
    before = decode.timed
    if case["kind"] == "virtual":  # the small model's values are computed on this CPU, on one thread
        gpu, model = _virtual(case)
        ids = decode.prompt(model.inner, case["batch"], case["prompt_len"], seed=1)
        with one_cpu_thread("cpu"), clock.held_by(gpu):
            result = fn(model, ids, case["new_tokens"], gpu)
        out = {**_plain(result), "virtual": gpu.facts()}
        reference_model, device = model.inner, "cpu"
    else:
        reference_model, device = course_model(case["device"]), case["device"]
        model = _Counted(reference_model)
        ids = decode.prompt(reference_model, case["batch"], case["prompt_len"], seed=1)
        with one_cpu_thread(device):
            result = fn(model, ids, case["new_tokens"], device)
        out = {**_plain(result), "calls": model.calls}
    out["reference_calls"] = decode.timed - before  # the course's decode timing, run by the learner's function
    with one_cpu_thread(device):
        right = decode.generate(reference_model, ids, case["new_tokens"] + 1)[:, 1:]
    return {**out, "expected_tokens": right.tolist()}


def _reference_decode(model, case: dict, device: Any) -> dict:
    ids = decode.prompt(model, case["batch"], case["prompt_len"], seed=1)
    seconds = decode.time_decode(model, ids, case["new_tokens"], device, budget_s=REFERENCE_BUDGET_S).median_s
    return {"seconds": seconds, "tokens_per_s": _generated(case) / seconds}


def reference(case: dict, answer: Any) -> dict:
    """The course's decode of the case's prompt, timed by :func:`decode.time_decode`: on the virtual GPU (exact), or
    on the case's device, taken again where it slowed (``referee.retaken``), keeping the faster; on a CPU on one torch
    thread, as the learner's rounds run."""
    from ...harness import one_cpu_thread
    if case["kind"] == "virtual":
        gpu, model = _virtual(case)
        with one_cpu_thread("cpu"), clock.held_by(gpu):
            return _reference_decode(model, case, gpu)

    def take() -> dict:
        with one_cpu_thread(case["device"]):
            return _reference_decode(course_model(case["device"]), case, case["device"])
    return referee.retaken(["m08.decode", case], take, lambda r: [r["tokens_per_s"]],
                           lambda a, b: max(a, b, key=lambda r: r["tokens_per_s"]))


# ---------------------------------------------------------------- scoring (pure)
def _generated(case: dict) -> int:
    return case["batch"] * case["new_tokens"]


def _number(value: Any) -> bool:
    return isinstance(value, float) and math.isfinite(value) and value > 0


def _counting(case: dict, rounds: list) -> Part:
    """``tokens_per_s`` = batch x new_tokens / ``seconds`` in every round; batch x (prompt + new) is the prompt
    counted as generated."""
    label = msg("m08.measure.label_counting")
    for r in rounds:
        per_s = r["tokens_per_s"] * r["seconds"]
        values = dict(found=f"{r['tokens_per_s']:.4g}", seconds=f"{r['seconds']:.4g}", generated=_generated(case))
        if math.isclose(per_s, _generated(case), rel_tol=1e-3):
            continue
        if math.isclose(per_s, case["batch"] * (case["prompt_len"] + case["new_tokens"]), rel_tol=1e-3):
            return Part(False, msg("m08.measure.mistake_prompt_counted", prompt=case["batch"] * case["prompt_len"],
                                       **values), mistake="prompt_counted", label=label)
        return Part(False, msg("m08.measure.counting_off", **values), label=label)
    return Part(True, msg("m08.measure.counting", generated=_generated(case)), label=label)


def _loop(calls: dict, untimed_prefills: int) -> Part:
    """What the timed decode ran (``calls``: of the whole function on the device, where its one prefill is
    ``untimed_prefills``; inside timed spans on the virtual GPU, none): the prefix computed again (whole-sequence
    passes, or prefills and no step) or the prefill timed with the steps is each named."""
    label = msg("m08.measure.label_loop")
    prefills, steps = calls.get("prefill", 0), calls.get("step", 0)
    if calls.get("forward_full") or (prefills > untimed_prefills and not steps):
        return Part(False, msg("m08.measure.mistake_recompute_prefix", **calls), mistake="recompute_prefix", label=label)
    if prefills > untimed_prefills:
        return Part(False, msg("m08.measure.mistake_prefill_timed", **calls), mistake="prefill_timed", label=label)
    if not steps:
        return Part(False, msg("m08.measure.no_steps", **calls), label=label)
    return Part(True, msg("m08.measure.loop", **calls), label=label)


def _tokens(answer: dict) -> Part:
    label = msg("m08.measure.label_tokens")
    ok = [r.get("tokens") == r.get("expected_tokens") for r in referee.rounds(answer)]
    return Part(all(ok), msg("m08.measure.tokens" if all(ok) else "m08.measure.tokens_wrong"), label=label)


def _shape_problem(rounds: list) -> Part | None:
    if not rounds:
        return Part(False, msg("m08.measure.no_rounds"))
    for r in rounds:
        missing = [k for k in KEYS if k not in r] + [k for k in KEYS[1:] if k in r and not _number(r[k])]
        if missing:
            return Part(False, msg("m08.measure.need_keys", keys=", ".join(KEYS), found=", ".join(missing)))
    return None


def _clock_claims(r: dict) -> list:
    """The round's seconds came from ``time_fn`` (``referee.off_clock``)."""
    return [(r["seconds"], "time_fn")]


def _virtual_score(case: dict, answer: dict, rounds: list, what: Message) -> list[Part]:
    """The virtual GPU's rounds: worth nothing where a round returned too soon to have run the model (the referee's
    walls) or its seconds are not one of ``time_fn``'s times on the virtual clock; else each part from its evidence."""
    why = referee.unmeasured(answer, lambda r: 2 * case["new_tokens"] * REAL_CALL_S)
    if why:
        key = "measure.not_observed" if why in ("no rounds", "not observed") else "measure.not_measured"
        return [Part(False, msg(key, what=what, why=why.message()), 2.0)]
    spans = [r["virtual"]["spans"] for r in rounds]
    why = referee.off_clock({"rounds": rounds, "observed": {"spans": spans}}, _clock_claims)
    if why:
        return [Part(False, msg("measure.off_clock", what=what, why=why.message()), 2.0)]
    facts = rounds[0]["virtual"]
    refs = [r for r in referee.observed(answer).get("reference") or [] if isinstance(r, dict) and "seconds" in r]
    timed = {k: max(r["virtual"]["timed"][k] for r in rounds) for k in ("prefill", "step", "forward_full")}
    parts = [_counting(case, rounds), _loop(timed, 0)]
    label = msg("m08.measure.label_synchronize")
    unsynchronized = max(r["virtual"]["unsynchronized"] for r in rounds)
    if unsynchronized:
        parts.append(Part(False, msg("m08.measure.mistake_no_synchronize", spans=unsynchronized,
                                         synchronizes=facts["synchronizes"]), mistake="no_synchronize", label=label))
    else:
        parts.append(Part(True, msg("m08.measure.synchronized"), label=label))
    if refs:
        want = refs[0]["seconds"]
        found = max((r["seconds"] for r in rounds), key=lambda s: abs(math.log(s / want)))  # the farthest round
        parts.append(Part(math.isclose(found, want, rel_tol=VIRTUAL_REL),
                          msg("m08.measure.virtual_time", what=what, found=f"{found * 1e3:.4g}",
                                  want=f"{want * 1e3:.4g}"), 2.0, label=msg("m08.measure.label_time")))
    return parts + [_tokens(answer)]


def score(case: dict, answer: dict, want: Any = None) -> list[Part]:
    """The parts of a case: the tokens counted, the loop timed, (virtual) the device waited for and the exact time,
    (device) the decode speed against the reference's in turns, and the tokens the loop generated."""
    from ...expectations import side_by_side
    rounds = referee.rounds(answer)
    bad = _shape_problem(rounds)
    if bad:
        return [bad]
    if any(r.get("reference_calls") for r in rounds):
        return [Part(False, msg("m08.measure.mistake_reference_called"), mistake="reference_called")]
    virtual = case["kind"] == "virtual"
    what = msg("m08.measure.what_virtual", batch=case["batch"], new=case["new_tokens"]) if virtual else \
        msg("m08.measure.what_device", device=case["device"], batch=case["batch"], new=case["new_tokens"])
    seen = ("virtual" if virtual else "calls", "expected_tokens")
    if any(not isinstance(r.get(key), (dict, list)) for r in rounds for key in seen):  # not this check's record
        return [Part(False, msg("measure.not_observed", what=what, why=referee.Unmeasured("not observed").message()),
                     2.0)]
    if virtual:
        return _virtual_score(case, answer, rounds, what)
    measured, compared = side_by_side(
        BAND, answer, what, lambda r: _generated(case) / r["seconds"], lambda ref: ref["tokens_per_s"],
        lambda r: r["seconds"], "tokens/s", clock_claims=_clock_claims)
    if not measured:
        return compared
    calls = {k: max(r["calls"].get(k, 0) for r in rounds) for k in ("prefill", "step", "forward_full")}
    return [_counting(case, rounds), _loop(calls, 1), _tokens(answer)] + compared
