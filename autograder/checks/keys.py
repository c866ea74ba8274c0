"""A dict answer compared key by key: one labelled part per key, each diagnosed from its own value.

The expected answer of a case also holds the answers its known mistakes give. Two ways to name one:
- :func:`compare` (module 06): a wrong value names a mistake only where that mistake's answer, and no other's, gives
  it and agrees with the learner on the values it is computed from.
- :func:`exact_parts` (modules 03 and 08): a wrong value names the mistake that gives it and agrees with the learner
  on the most keys; none where two agree equally.
Either way a right value elsewhere never gets a wrong diagnosis.
"""
from __future__ import annotations

from typing import Any

from ..i18n import Message, msg
from .core import Part, canonical, close

REL = 1e-6
EXACT = 1e-9  # exact_parts: relative tolerance for floating-point rounding


def same(found: Any, want: Any) -> bool:
    """Numbers within :data:`REL` (:func:`close`), anything else (names, flags, lists, None) exactly."""
    if isinstance(want, (int, float)) and not isinstance(want, bool):
        return close(found, want, rel=REL, abs_tol=1e-12)
    return found == want


def show(value: Any) -> str:
    """A value as a part's message shows it."""
    if isinstance(value, float):
        return f"{value:.6g}"
    return repr(value)


def label(short: str, key: str) -> Message:
    return msg("keys.part", case=short, key=key)


def _explains(slip: Any, want: dict, found: dict, key: str, needs: tuple) -> bool:
    """A known mistake's answer gives the (wrong) ``found[key]`` and agrees with the learner on ``needs``."""
    if not isinstance(slip, dict) or key not in slip or same(slip[key], want[key]):
        return False
    if not same(found[key], slip[key]):
        return False
    return all(k in found and k in slip and same(found[k], slip[k]) for k in needs)


def _only(names) -> str | None:
    """The one known mistake that explains a value; None where two do (the evidence shows neither)."""
    found = list(names)
    return found[0] if len(found) == 1 else None


def compare(text: Message, short: str, want: dict, found: Any, keys: tuple, slips: dict | None = None,
            weights: dict | None = None, hint: str | dict | None = None, named: tuple | None = None,
            needs: str = "before", mistakes: str = "") -> list[Part]:
    """One labelled Part per key of ``want``, each diagnosed from its own value.

    A wrong value names a known mistake (message ``<mistakes>.mistake.<name>``; only for ``named`` keys) when that
    mistake's answer, and no other's, gives it and agrees with the learner on the keys it depends on:
    ``needs="before"`` the keys listed before it (a chain of results), ``"own"`` none (independent results),
    ``"all"`` every key (one plan). Otherwise the key's ``hint`` (one message key, or a dict per key) follows, unless
    a key before it is wrong too (keys are listed in the order they are computed: that item says why; not for
    ``"own"``). A message is given once per case, on its first wrong value.
    """
    if not isinstance(found, dict):
        return [Part(False, msg("keys.not_dict", case=text, found=type(found).__name__), float(len(keys)))]
    parts, explained = [], set()
    for i, key in enumerate(keys):
        weight, part_label = (weights or {}).get(key, 1.0), label(short, key)
        if key not in found:
            parts.append(Part(False, msg("keys.missing_key", case=text, key=key, keys=", ".join(keys)), weight,
                              label=part_label))
            continue
        if same(found[key], want[key]):
            parts.append(Part(True, msg("keys.ok", case=text), weight, label=part_label))
            continue
        wrong = msg("keys.wrong_value", case=text, key=key, expected=show(want[key]), found=show(found[key]))
        depends = {"before": keys[:i], "own": (), "all": keys}[needs]
        name = None
        if named is None or key in named:
            name = _only(n for n, s in (slips or {}).items() if _explains(s, want, found, key, depends))
        upstream_wrong = needs != "own" and any(k in found and not same(found[k], want[k]) for k in keys[:i])
        why = f"{mistakes}.mistake.{name}" if name else None if upstream_wrong else (
            hint.get(key) if isinstance(hint, dict) else hint)
        first = why is not None and why not in explained
        if first:
            explained.add(why)
            wrong = wrong + msg(why)
        parts.append(Part(False, wrong, weight, mistake=name if first else None, label=part_label))
    return parts


def number(value: Any) -> Any:
    """ints, floats and 0-d numpy/torch values as a Python number; None, strings and anything else unchanged."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int):
        return int(value)
    try:
        return float(value)
    except (TypeError, ValueError):
        return repr(value)


def as_dict(result: Any, keys: tuple[str, ...]) -> dict:
    """The learner's dict reduced to ``keys`` as plain data; a clear error where it is no dict or lacks a key."""
    if not isinstance(result, dict):
        raise TypeError(msg("keys.need_dict", keys=", ".join(keys), found=type(result).__name__).text())
    out = {}
    for key in keys:
        if key not in result:
            raise KeyError(msg("keys.no_key", key=key, keys=", ".join(keys)).text())
        out[key] = number(result[key])
    return out


def exact(found: Any, want: Any, rel: float = EXACT) -> bool:
    """Equal strings and None, numbers within rounding."""
    if isinstance(want, str) or want is None or found is None or isinstance(found, str):
        return found == want
    return close(found, want, rel=rel, abs_tol=1e-300)


def shown(value: Any) -> str:
    """A value as an exact task's message shows it (ten digits, thousands separated)."""
    if isinstance(value, float):
        return f"{value:,.10g}"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    return repr(value) if isinstance(value, str) else str(value)


def likeliest(found: dict, want: dict, key: str, rel: float = EXACT) -> str | None:
    """The known mistake (``want["mistakes"]``) whose answer gives ``found[key]`` where the right answer does not:
    the one that agrees with ``found`` on most keys. None when two fit equally well (naming either could misdiagnose)."""
    fits = []
    for name, answer in (want.get("mistakes") or {}).items():
        if key in answer and exact(found.get(key), answer[key], rel) and not exact(answer[key], want[key], rel):
            fits.append((sum(exact(found.get(k), answer.get(k), rel) for k in answer), name))
    best = [name for agree, name in fits if agree == max(fits)[0]] if fits else []
    return best[0] if len(best) == 1 else None


def exact_parts(case_text: str, want: dict, found: dict, keys: tuple[str, ...], weight: float = 1.0,
                rel: float = EXACT, mistakes: str = "") -> list[Part]:
    """One labelled part per key; a wrong key that a known mistake gives names it (``<mistakes>.mistake.<name>``)."""
    parts = []
    for key in keys:
        part_label = Message(f"{case_text} → {key}", f"{case_text} → {key}")
        text = msg("keys.expected_found", what=part_label, expected=shown(want[key]), found=shown(found.get(key)))
        if exact(found.get(key), want[key], rel):
            parts.append(Part(True, text, weight, label=part_label))
            continue
        name = likeliest(found, want, key, rel)
        parts.append(Part(False, text + msg(f"{mistakes}.mistake.{name}") if name else text, weight, mistake=name,
                          label=part_label))
    return parts


def with_mistakes(task, reference, mistakes: dict):
    """The expected answer of a case as :func:`exact_parts` reads it: the right answer, and beside it
    (``"mistakes"``) what each known mistake's function answers; a mistake that cannot answer a case is left out."""
    def expect(case):
        wrong = {}
        for name, fn in mistakes.items():
            try:
                wrong[name] = canonical(task.answer(fn, case))
            except (ValueError, ZeroDivisionError, KeyError):
                continue
        return {**task.answer(reference, case), "mistakes": wrong}
    return expect
