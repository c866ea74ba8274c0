"""A dict answer compared key by key: one labelled part per key, each diagnosed from its own value.

The expected answer of a case also holds the answers its known mistakes give (``slips``). A wrong value names a
mistake only where that mistake's answer, and no other's, gives it and agrees with the learner on the values it is
computed from (:func:`compare`), so a right value elsewhere never gets a wrong diagnosis.
"""
from __future__ import annotations

from typing import Any

from ..i18n import Message, msg
from .core import Part, close

REL = 1e-6


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
