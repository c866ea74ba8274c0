"""The capstone report card of module 06: what this machine measured, next to other devices.

:func:`gather` collects the results the lessons recorded (:mod:`autograder.results`) and
fills the gaps by measuring now: matmul per dtype and copy/triad bandwidth from the
machine's reference measurement (:func:`autograder.reference.measured_profile`: stored, and checked against a quick
measurement now),
and a quick gloo all-reduce (:func:`autograder.ranks.allreduce_busbw`) sized by a time budget.
:func:`figure` draws a roofline with the learner's points against other profiles and
the bandwidths; :func:`save_html` writes a one-page bilingual HTML file with the figure
embedded as a base64 PNG.

The results the report card reads are :data:`autograder.results.REPORT_CARD` (lessons 02, 03 and 05 record them
through it): matmul TFLOP/s per dtype (meta ``size``), copy and triad bandwidth, all-reduce bus bandwidth; any
other record is listed, and one with meta ``intensity`` (FLOP/byte) and a FLOP/s unit is drawn as a roofline point.
"""
from __future__ import annotations

import base64
import datetime as _dt
import html
import io
import os

from ...i18n import Message, msg
from ...ranks import allreduce_busbw

COMPARE = ("h100_sxm", "a100_sxm_80gb", "rtx_4090", "mi300x", "tpu_v5e")
FLOP_UNITS = {"TFLOP/s": 1e12, "GFLOP/s": 1e9, "FLOP/s": 1.0}
LABELS = {
    "matmul": Message("행렬 곱 {dtype}", "matmul {dtype}"),
    "copy": Message("복사 대역폭", "copy bandwidth"),
    "triad": Message("triad 대역폭", "triad bandwidth"),
    "allreduce": Message("all-reduce busbw (gloo, {ranks} rank)", "all-reduce busbw (gloo, {ranks} ranks)"),
}


# ---------------------------------------------------------------- all-reduce
# ---------------------------------------------------------------- gathering
def _matmul_intensity(size: int | None, dtype: str) -> float | None:
    """FLOP per byte of an n x n matmul reading A, B and writing C once: 2n^3 / (3 n^2 bytes)."""
    if not size:
        return None
    nbytes = {"fp64": 8, "fp32": 4, "tf32": 4, "bf16": 2, "fp16": 2}.get(dtype, 4)
    return 2.0 * size / (3.0 * nbytes)


def _peak(reference: float | None, value: float, basis: str, unit: str) -> tuple[float | None, Message | None]:
    """The peak a value is a share of, and the note when it was raised: a measured peak is at least the value a lesson
    measured (:func:`autograder.reference.best_seen`; a share of a measured peak above 100 % is impossible)."""
    from ...reference import best_seen
    return best_seen(reference, value, unit=unit) if basis == "measured" and reference else (reference, None)


def _pct(value: float, peak: float | None, basis: str, recorded: dict | None) -> float | None:
    """Percent of the peak; None when the 'peak' is the reference value itself (nothing to compare)."""
    if not peak or (basis == "measured" and recorded is None):
        return None
    return 100.0 * value / peak


def gather(device: str | None = None, budget_s: float = 12.0, allreduce: bool = True,
           allreduce_budget_s: float = 4.0) -> dict:
    """Everything the report card shows, as plain data (see the module docstring for the keys read)."""
    from ... import results
    from ...hardware import best_device, detect
    from ...harness import device_name
    from ...profiles import match
    from ...reference import _accelerator, measured_profile
    from ...results import REPORT_CARD as CARD

    name = device_name(device) if device is not None else best_device()
    recorded = results.load()
    reference = measured_profile(name, budget_s=budget_s)
    acc = _accelerator(name)
    spec = match(acc.name) if acc is not None else None
    items = []

    for dt in CARD.matmul_dtypes:
        key = CARD.matmul(dt)
        rec = recorded.get(key.id)
        ref = reference.spec["matmul"].get(dt)
        if rec is None and ref is None:
            continue
        value = rec["value"] if rec else ref["tflops"]
        size = (rec or {}).get("meta", {}).get("size") if rec else ref.get("size")
        peak, basis = (spec.peak(dt), "spec") if spec is not None and spec.peak(dt) else (ref["tflops"] if ref else None, "measured")
        peak, note = _peak(peak, value, basis, key.unit)
        items.append({"what": "matmul", "dtype": dt, "value": value, "unit": key.unit,
                      "source": rec["module"] if rec else "reference", "intensity": _matmul_intensity(size, dt),
                      "peak": peak, "peak_basis": basis, "pct": _pct(value, peak, basis, rec), "note": note})

    for kind in ("copy", "triad"):
        key = CARD.bandwidth(kind)
        rec = recorded.get(key.id)
        value = rec["value"] if rec else reference.spec["bandwidth"][kind]["gbs"]
        peak, basis = ((spec.bandwidth_gbs, "spec") if spec is not None and spec.bandwidth_gbs
                       else (reference.spec["bandwidth"][kind]["gbs"], "measured"))
        peak, note = _peak(peak, value, basis, key.unit)
        items.append({"what": kind, "value": value, "unit": key.unit,
                      "source": rec["module"] if rec else "reference",
                      "peak": peak, "peak_basis": basis, "pct": _pct(value, peak, basis, rec), "note": note})

    rec = recorded.get(CARD.allreduce.id) or recorded.get(CARD.allreduce_now.id)
    if rec is not None:
        items.append({"what": "allreduce", "value": rec["value"], "unit": "GB/s", "source": rec["module"],
                      "ranks": rec.get("meta", {}).get("world_size", "?"), "peak": None, "pct": None})
    elif allreduce:
        found = allreduce_busbw(budget_s=allreduce_budget_s)  # autograder.ranks: the course's one measurement
        if found is not None:
            CARD.allreduce_now.record(found["busbw_gbs"], backend="gloo", world_size=found["world_size"],
                                      nbytes=found["nbytes"])
            items.append({"what": "allreduce", "value": found["busbw_gbs"], "unit": "GB/s", "source": "now",
                          "ranks": found["world_size"], "peak": None, "pct": None})

    others = [dict(v, id=k) for k, v in sorted(recorded.items()) if k not in CARD.read()]
    points = [{"label": f"{o['id']}", "intensity": o["meta"]["intensity"], "flops": o["value"] * FLOP_UNITS[o["unit"]]}
              for o in others if o.get("meta", {}).get("intensity") and o.get("unit") in FLOP_UNITS]
    report = detect()
    cpu = report.cpu
    return {
        "date": _dt.date.today().isoformat(), "device": name,
        "device_label": acc.name if acc is not None else cpu.model,
        "spec_id": spec.id if spec is not None else None,
        "machine": {"cpu": cpu.model, "cores": f"{cpu.physical_cores}/{cpu.logical_cores}",
                    "ram_gb": round(cpu.ram_bytes / 1e9, 1) if cpu.ram_bytes else None,
                    "accelerators": [a.name for a in report.accelerators], "torch": report.torch},
        "reference_date": reference.spec.get("date"),
        "items": items, "recorded": others, "points": points,
        "compare": [pid for pid in COMPARE if pid != (spec.id if spec is not None else None)],
    }


# ---------------------------------------------------------------- figure
def _t(message: Message) -> str:
    return message.text()


def figure(card: dict):
    """A two-panel matplotlib figure: roofline (left) and bandwidths (right), labels in the current language."""
    import matplotlib.pyplot as plt
    import numpy as np

    from ...lesson import t
    from ...plotting import setup
    from ...profiles import get

    setup()  # Hangul in the labels, also outside a lesson (the HTML page)
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(12, 4.8), gridspec_kw={"width_ratios": [1.35, 1]})
    intensity = np.logspace(-2, 4, 200)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, pid in enumerate(card["compare"]):
        prof = get(pid)
        peak, bw = prof.peak("bf16") * 1e12, prof.bandwidth_gbs * 1e9
        ax.plot(intensity, np.minimum(peak, intensity * bw), lw=1.2, alpha=0.55, color=colors[(i + 2) % len(colors)],
                label=f"{prof.label} (bf16 dense)")
    if card["spec_id"]:
        prof = get(card["spec_id"])
        ax.plot(intensity, np.minimum(prof.peak("bf16") * 1e12, intensity * prof.bandwidth_gbs * 1e9), "k--", lw=1.5,
                label=t(f"{prof.label} 사양(bf16)", f"{prof.label} spec (bf16)"))
    matmuls = [i for i in card["items"] if i["what"] == "matmul"]
    copy = next((i for i in card["items"] if i["what"] == "copy"), None)
    if matmuls and copy:
        top = max(m["value"] for m in matmuls) * 1e12
        ax.plot(intensity, np.minimum(top, intensity * copy["value"] * 1e9), color=colors[0], lw=2.5,
                label=t("내 컴퓨터(측정한 지붕)", "this machine (measured roof)"))
    for m in matmuls:
        if m["intensity"]:
            ax.scatter([m["intensity"]], [m["value"] * 1e12], s=60, zorder=5, color=colors[1], edgecolor="k")
            ax.annotate(m["dtype"], (m["intensity"], m["value"] * 1e12), textcoords="offset points", xytext=(6, -4),
                        fontsize=9)
    triad = next((i for i in card["items"] if i["what"] == "triad"), None)
    if triad:  # a = b + s*c: 2 FLOP per 12 bytes (fp32)
        ax.scatter([2 / 12], [triad["value"] * 1e9 * 2 / 12], s=60, zorder=5, color=colors[1], marker="s", edgecolor="k")
        ax.annotate("triad", (2 / 12, triad["value"] * 1e9 * 2 / 12), textcoords="offset points", xytext=(6, -4), fontsize=9)
    for p in card["points"]:
        ax.scatter([p["intensity"]], [p["flops"]], s=45, zorder=5, color=colors[3], marker="^", edgecolor="k")
        ax.annotate(p["label"], (p["intensity"], p["flops"]), textcoords="offset points", xytext=(6, 2), fontsize=8)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(t("산술 강도(FLOP/byte)", "arithmetic intensity (FLOP/byte)"))
    ax.set_ylabel("FLOP/s")
    ax.set_title(t("루프라인: 내 측정값과 다른 장치", "Roofline: my measurements and other devices"))
    ax.grid(True, which="both", alpha=0.25)
    ax.legend(fontsize=7.5, loc="lower right")

    bars = [(_t(LABELS[i["what"]].format(ranks=i.get("ranks", "?"))) + " (" + t("나", "me") + ")", i["value"], colors[0])
            for i in card["items"] if i["unit"] == "GB/s"]
    bars += [(f"{get(pid).label} HBM/GDDR", get(pid).bandwidth_gbs, "0.7") for pid in card["compare"]]
    names, values, cols = zip(*bars) if bars else ((), (), ())
    bx.barh(range(len(values)), values, color=cols)
    bx.set_yticks(range(len(values)), names, fontsize=8)
    bx.invert_yaxis()
    bx.set_xscale("log")
    bx.set_xlabel("GB/s")
    bx.set_title(t("대역폭(로그 눈금)", "Bandwidth (log scale)"))
    for k, v in enumerate(values):
        bx.annotate(f"{v:,.0f}" if v >= 100 else f"{v:.3g}", (v, k), textcoords="offset points", xytext=(3, -3), fontsize=8)
    fig.suptitle(f"{_t(msg('m06.report_title'))} · {card['device_label']} · {card['date']}", fontsize=11)
    fig.tight_layout()
    return fig


# ---------------------------------------------------------------- tables and HTML
HEADERS = {"what": ("항목", "item"), "value": ("값", "value"), "unit": ("단위", "unit"), "source": ("출처", "source"),
           "pct": ("피크 대비 %", "% of peak"), "peak_basis": ("피크 기준", "peak basis"), "note": ("참고", "note")}


def rows(card: dict, lang: str | None = None) -> list[dict]:
    """The measured items as table rows (labels in ``lang`` or the current language)."""
    out = []
    for i in card["items"]:
        label = LABELS[i["what"]].format(dtype=i.get("dtype", ""), ranks=i.get("ranks", "?")).text(lang)
        out.append({"what": label, "value": round(i["value"], 4), "unit": i["unit"], "source": i["source"],
                    "pct": None if i["pct"] is None else round(i["pct"], 1), "peak_basis": i.get("peak_basis"),
                    "note": i["note"].text(lang) if i.get("note") else None})
    return out


def png_base64(fig) -> str:
    """The figure as a base64-encoded PNG (for embedding in HTML)."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110, bbox_inches="tight")
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def _table(rows_: list[dict], columns: list[str]) -> str:
    head = "".join(f"<th>{html.escape(HEADERS[c][0])}<br><small>{html.escape(HEADERS[c][1])}</small></th>" for c in columns)
    body = "".join("<tr>" + "".join(f"<td>{html.escape('' if r.get(c) is None else str(r.get(c)))}</td>" for c in columns)
                   + "</tr>" for r in rows_)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def bilingual_figure(card: dict):
    """:func:`figure` with every label in Korean and English (for the HTML page)."""
    from ...i18n import get_language, set_language
    before = get_language()
    set_language("both")
    try:
        return figure(card)
    finally:
        set_language(before)


def to_html(card: dict, fig=None) -> str:
    """One bilingual HTML page (Korean first, then English) with the figure embedded.

    ``fig``: the figure to embed; by default :func:`bilingual_figure`.
    """
    if fig is None:
        import matplotlib.pyplot as plt
        fig = bilingual_figure(card)
        plt.close(fig)
    columns = ["what", "value", "unit", "source", "pct", "peak_basis", "note"]
    ko_rows, en_rows = rows(card, "ko"), rows(card, "en")
    merged = [dict(k, what=f"{k['what']} / {e['what']}", note=k["note"] and f"{k['note']} / {e['note']}")
              for k, e in zip(ko_rows, en_rows)]
    m = card["machine"]
    recorded = "".join(f"<li><code>{html.escape(r['id'])}</code>: {r['value']:.4g} {html.escape(r['unit'])}</li>"
                       for r in card["recorded"]) or "<li>—</li>"
    note_ko = ("피크 대비 %: 가속기는 제조사 dense 사양 피크에 대한 비율, 사양이 없는 장치(CPU 등)는 이 컴퓨터에서 잰 기준 측정값에 "
               "대한 비율입니다. 출처: mNN = 그 수업이 기록한 값, reference = autograder.reference의 기준 측정, now = 지금 잰 값.")
    note_en = ("% of peak: for an accelerator, a share of the vendor's dense spec peak; for a device without one (a CPU), "
               "a share of the reference measurement taken on this machine. Source: mNN = recorded by that lesson, "
               "reference = autograder.reference measurement, now = measured for this card.")
    title = msg("m06.report_title")
    return f"""<!DOCTYPE html>
<html lang="ko"><head><meta charset="utf-8"><title>{html.escape(title.ko)} / {html.escape(title.en)}</title>
<style>body{{font-family:sans-serif;max-width:1100px;margin:1.5em auto;color:#222}}
table{{border-collapse:collapse;margin:.5em 0}}td,th{{border:1px solid #bbb;padding:3px 8px;font-size:13px}}
th{{background:#eee}}small{{color:#555;font-weight:normal}}img{{max-width:100%}}.en{{color:#444}}</style></head>
<body>
<h1>{html.escape(title.ko)} <span class="en">/ {html.escape(title.en)}</span></h1>
<p>{html.escape(card['device_label'])} · {card['date']} · CPU {html.escape(str(m['cpu']))} ({m['cores']} cores) ·
RAM {m['ram_gb']} GB · torch {html.escape(str(m['torch']))} · accelerators: {html.escape(', '.join(m['accelerators']) or '—')}</p>
<img alt="report card figure" src="data:image/png;base64,{png_base64(fig)}">
<h2>측정값 <span class="en">/ Measurements</span></h2>
{_table(merged, columns)}
<p>{html.escape(note_ko)}</p><p class="en">{html.escape(note_en)}</p>
<h2>수업에서 기록한 다른 값 <span class="en">/ Other values recorded by the lessons</span></h2>
<ul>{recorded}</ul>
<p><small>Reference measurement: {html.escape(str(card['reference_date']))}. Spec figures: autograder/data/profiles.yaml
(dense peaks, vendor data sheets). Generated by autograder.modules.m06_choosing_hardware.report.</small></p>
</body></html>
"""


def save_html(card: dict, fig=None, path: str = "report_card.html") -> str:
    """Write :func:`to_html` to ``path`` (default: next to the notebook, the kernel's working directory); return its path."""
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(to_html(card, fig))
    return os.path.abspath(path)
