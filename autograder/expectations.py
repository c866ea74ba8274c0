"""What a measurement should come out as on a given device: ``expect(kind, ...) -> Band``.

Bands come from ``data/expectations.yaml``: fractions of a known accelerator's dense
spec peak ("spec"), or of this machine's own reference measurement ("measured",
see :mod:`autograder.reference`). ``Band.part(value, what)`` scores a learner's value
with a bilingual message that says what was expected, why, and what was found.
"""
from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from .datafile import read_yaml
from .checks.core import Part
from .i18n import Message, msg

KINDS = ("matmul", "bandwidth", "speedup", "allreduce_busbw", "mfu")
_DATA = Path(__file__).parent / "data" / "expectations.yaml"


@dataclass(frozen=True)
class Band:
    """An expected range ``lo <= value <= hi`` in ``unit``, with the reason and where it comes from."""

    lo: float
    hi: float
    unit: str
    reason: Message
    basis: str          # 'spec' (vendor figures) or 'measured' (this machine's reference measurement)
    profile_id: str | None
    source: str = ""

    def contains(self, value: Any) -> bool:
        return _is_number(value) and self.lo <= float(value) <= self.hi

    def part(self, value: Any, what: Message, weight: float = 1.0) -> Part:
        """A scored item: ok inside the band; the message says expected, why, found, and a hint."""
        if not _is_number(value):
            return Part(False, msg("measure.band", what=what, lo=_num(self.lo), hi=_num(self.hi),
                                        unit=self.unit, reason=self.reason, found="?")
                        + msg("measure.not_a_number", found=type(value).__name__), weight)
        value = float(value)
        text = msg("measure.band", what=what, lo=_num(self.lo), hi=_num(self.hi), unit=self.unit,
                        reason=self.reason, found=_num(value))
        if value > self.hi:
            text = text + msg("measure.above")
        elif value < self.lo:
            text = text + msg("measure.below")
        return Part(self.contains(value), text, weight, measured=True)


@lru_cache(maxsize=1)
def rules() -> dict:
    """The parsed ``data/expectations.yaml``."""
    return read_yaml(_DATA)


def expect(kind: str, *, device: Any = None, dtype: Any = None, profile: Any = None,
           baseline: Any = None, reference: float | None = None) -> Band:
    """The expected band for a measurement of ``kind`` on ``device`` (or ``profile``).

    ``matmul``: TFLOP/s for ``dtype`` (default fp32). ``bandwidth``: copy GB/s.
    ``speedup``: CPU time over accelerator time (``baseline``: the CPU's profile, by
    default its measured profile; ``reference``: the speedup the course measured now, side
    by side, which the band always admits x2). ``allreduce_busbw``: ratio to gloo's all_reduce
    measured in the same run, or GB/s when ``reference`` (gloo's busbw) is given.
    ``mfu``: fraction of the peak. ``profile``: a Profile or a profile id; by default
    :func:`autograder.reference.profile_for` ``(device)``.
    """
    if kind not in KINDS:
        raise ValueError(msg("measure.unknown_kind", kind=kind, known=", ".join(KINDS)).text())
    from .reference import canonical_dtype
    dt = canonical_dtype(dtype or "fp32")
    if kind == "allreduce_busbw":
        return _allreduce(reference)
    if kind == "speedup":
        return _speedup(device, dt, profile, baseline, reference)
    prof = _profile(profile, device)  # a measured profile is checked against the machine now
    figure = prof.bandwidth_gbs if kind == "bandwidth" else _peak(prof, dt)
    if not figure and profile is None and not prof.measured:  # a spec sheet without this figure: measure
        from .reference import measured_profile
        prof = measured_profile(device if device is not None else _best())
    if kind == "matmul":
        return _throughput(rules()["matmul"], prof, dt, _peak(prof, dt), "TFLOP/s", "measure.no_peak")
    if kind == "bandwidth":
        return _throughput(rules()["bandwidth"], prof, dt, prof.bandwidth_gbs, "GB/s", "measure.no_bandwidth")
    return _mfu(prof)


def rule_for(table: dict, profile, dtype: str) -> dict:
    """The first spec rule of ``table`` whose ``match`` fits the profile and dtype."""
    fields = {"vendor": profile.vendor, "kind": profile.kind, "segment": _segment(profile), "arch": profile.get("arch"),
              "dtype": dtype}
    for rule in table["spec"]:
        if all(_fits(fields.get(k), want) for k, want in rule["match"].items()):
            return rule
    raise LookupError("expectations.yaml: the spec list must end with a rule matching everything")


def _throughput(table: dict, profile, dt: str, figure, unit: str, missing_key: str) -> Band:
    if not figure:
        raise ValueError(msg(missing_key, profile=profile.id, dtype=dt).text())
    if profile.measured:
        rule, basis, cap = table["measured"], "measured", math.inf
    else:
        rule, basis, cap = rule_for(table, profile, dt), "spec", rules()["spec_cap"]
    return Band(lo=rule["lo"] * figure, hi=min(rule["hi"], cap) * figure, unit=unit,
                reason=_reason(rule, dtype=dt), basis=basis, profile_id=profile.id, source=_source(rule))


def _speedup(device, dt: str, profile, baseline, reference: float | None = None) -> Band:
    table = rules()["speedup"]
    if profile is None and _on_cpu(device):
        rule = table["cpu_only"]
        return Band(rule["lo"], rule["hi"], "×", msg("measure.cpu_speedup"), "measured", None, _source(rule))
    prof = _profile(profile, device)
    if prof.kind == "cpu":
        rule = table["cpu_only"]
        return Band(rule["lo"], rule["hi"], "×", msg("measure.cpu_speedup"), "measured", prof.id, _source(rule))
    cpu = _profile(baseline, "cpu") if baseline is not None else _cpu_profile()
    accel_peak, cpu_peak = _peak(prof, dt), _peak(cpu, dt)
    for p, peak in ((prof, accel_peak), (cpu, cpu_peak)):
        if not peak:
            raise ValueError(msg("measure.no_peak", profile=p.id, dtype=dt).text())
    rule = table["accelerator"]
    ratio = accel_peak / cpu_peak
    hi = rule["hi_peak_ratio"] * max(ratio, reference or 0.0)  # a stored CPU peak from a quieter moment: never below now
    return Band(rule["lo"], max(rule["lo"], hi), "×",
                msg("measure.accel_speedup", peak_ratio=ratio), "measured" if prof.measured else "spec",
                prof.id, _source(rule))


def _allreduce(reference: float | None) -> Band:
    rule = rules()["allreduce_busbw"]
    scale, unit = (float(reference), "GB/s") if reference else (1.0, "×")
    return Band(rule["lo"] * scale, rule["hi"] * scale, unit, msg("measure.allreduce_reason"), "measured",
                None, _source(rule))


def _mfu(profile) -> Band:
    rule = rules()["mfu"]["measured" if profile.measured else "spec"]
    return Band(rule["lo"], rule["hi"], "", _reason(rule), "measured" if profile.measured else "spec",
                profile.id, _source(rule))


def _profile(profile, device):
    if profile is None:
        from .reference import profile_for
        return profile_for(device)
    if isinstance(profile, str):
        from .profiles import get
        try:
            found = get(profile)
        except KeyError:
            found = None
        if found is None:
            raise ValueError(msg("measure.unknown_profile", profile=profile).text())
        return found
    return profile


def _cpu_profile():
    from .reference import measured_profile
    return measured_profile("cpu")


def _best() -> str:
    from .hardware import best_device
    return best_device()


def _on_cpu(device) -> bool:
    if device is None:
        device = _best()
    from .harness import device_name
    return device_name(device).split(":")[0] == "cpu"


def _peak(profile, dt: str) -> float | None:
    try:
        value = profile.peak(dt)
    except (KeyError, ValueError, AttributeError):
        value = None
    if value is None:
        value = (getattr(profile, "peak_tflops", None) or {}).get(dt)
    return float(value) if value else None


def _segment(profile) -> str | None:
    return getattr(profile, "segment", None) or (getattr(profile, "spec", None) or {}).get("segment")


def _fits(value, want) -> bool:
    if value is None:
        return False
    wanted = want if isinstance(want, list) else [want]
    return str(value).lower() in {str(w).lower() for w in wanted}


def _reason(rule: dict, **values) -> Message:
    reason = rule["reason"]
    return Message(reason["ko"], reason["en"]).format(**values) if values else Message(reason["ko"], reason["en"])


def _source(rule: dict) -> str:
    return " ".join(str(rule.get("source") or rule.get("rationale") or "").split())


def _is_number(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(float(value))


def _num(x: float) -> str:
    """3 significant figures without exponent for everyday magnitudes: 794.5 -> '794', 0.0123 -> '0.0123'."""
    if x == 0 or not math.isfinite(x):
        return str(x)
    if abs(x) >= 100:
        return f"{x:,.0f}"
    return f"{x:.3g}"


def side_by_side(kind: str, answer: Any, what: Message, mine, theirs, claimed_seconds, unit: str,
                 weight: float = 2.0, faster_above: bool = True, too_fast: Message | None = None,
                 too_slow: Message | None = None, clock_claims=None) -> tuple[bool, list[Part]]:
    """Score a measurement task's rounds against the reference measured in turns with them.

    ``mine(round)`` and ``theirs(reference)`` pick the figures to compare; the median of
    their per-round ratios must lie in ``side_by_side[kind]`` of expectations.yaml.
    Returns ``(measured, parts)``: ``measured`` is False when no round was observed or a
    round ended sooner than its result claims (``claimed_seconds``); ``parts`` then say
    only that, and the task is worth nothing; so is a round whose figures the course's clock did not time
    (``clock_claims``: :func:`~autograder.checks.referee.off_clock`). ``faster_above``: a ratio above the band
    means too fast (throughputs) rather than too slow (times). ``too_fast``/``too_slow``: what a
    result outside the band says for this task (default: the common causes of each).
    """
    from .checks import referee
    why = referee.unmeasured(answer, claimed_seconds) or (clock_claims and referee.off_clock(answer, clock_claims))
    if why:
        key = "measure.off_clock" if why.clock else \
            "measure.not_observed" if why in ("no rounds", "not observed") else "measure.not_measured"
        return False, [Part(False, msg(key, what=what, why=why.message()), weight)]
    error = referee.reference_error(answer)
    if error:
        return True, [Part(True, msg("measure.reference_failed", what=what, error=error), 0.0)]
    rows = referee.ratios(answer, mine, theirs)
    if not rows:
        return True, [Part(False, msg("measure.band", what=what, lo="?", hi="?", unit=unit, reason="", found="?")
                           + msg("measure.not_a_number", found="-"), weight)]
    ratio, value, ref = referee.median_ratio(answer, mine, theirs)
    rule = rules()["side_by_side"][kind]
    lo, hi = rule["lo"], rule["hi"]
    text = msg("measure.side_by_side", what=what, reference=_num(ref), unit=unit, lo_ratio=_num(lo), hi_ratio=_num(hi),
               reason=_reason(rule, lo=lo, hi=hi), found=_num(value), ratio=f"{ratio:.2f}",
               which=referee.which_round(len(rows)))
    spread = None
    if not lo <= ratio <= hi:
        fast = (ratio > hi) == faster_above
        spread = load_explains(kind, answer, mine, theirs)
        text = text + (msg("measure.reference_busy", spread=spread) if spread is not None else
                       (too_fast or msg("measure.above")) if fast else (too_slow or msg("measure.below")))
    attempts = referee.observed(answer).get("attempts") or 1
    if attempts > 1:
        text = text + msg("measure.measured_again", attempts=attempts)
    return True, [Part(lo <= ratio <= hi, text, weight, measured=True, busy=spread is not None)]


def load_explains(kind: str, answer: Any, mine, theirs) -> float | None:
    """The one rule of a miss the machine's load explains: the reference's own rounds spread by
    ``referee.SPREAD`` or more (``referee.busy``: the reference measures the same thing every round, so the load
    slowed it) and the median ratio lies outside the band ``side_by_side[kind]`` by no more than that spread. The
    spread then, else None: a verdict says the machine was busy and names no mistake (a miss larger than the load,
    such as a unit slip or a missing synchronize, is still named)."""
    from .checks import referee
    spread, found = referee.busy(answer, theirs), referee.median_ratio(answer, mine, theirs)
    if spread is None or found is None:
        return None
    rule = rules()["side_by_side"][kind]
    ratio = found[0]
    beyond = ratio / rule["hi"] if ratio > rule["hi"] else rule["lo"] / ratio if ratio < rule["lo"] else 1.0
    return spread if beyond <= spread else None
