"""Number formats for lesson and exercise 02: the format table, torch-backed casts, a bit explorer.

``FORMATS`` comes from ``data/m02_formats.yaml``. :func:`simulate` stores values the way
the hardware path does (torch casts with saturation, TF32 by dropping mantissa bits,
E2M1 by the nearest table value); :func:`bit_explorer` is the lesson's widget.
"""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import yaml

from .i18n import Message, msg

_DATA = Path(__file__).parent / "data" / "m02_formats.yaml"


@lru_cache(maxsize=1)
def _raw() -> dict:
    return yaml.safe_load(_DATA.read_text(encoding="utf-8"))


def formats() -> dict[str, dict]:
    """Every format by name: ``{name, exp_bits, man_bits, bias, special, torch, source}`` (copies)."""
    raw = _raw()
    return {name: {"name": name, **entry, "source": raw["sources"][entry["source"]]}
            for name, entry in raw["formats"].items()}


FORMATS = formats()
E2M1_VALUES = tuple(_raw()["e2m1_values"])
QUOTED_LIMITS = _raw()["quoted_limits"]
MX_BLOCK = _raw()["block_scaling"]["mx_block"]
NVFP4_BLOCK = _raw()["block_scaling"]["nvfp4_block"]


def _format(name: str) -> dict:
    if name not in FORMATS:
        raise ValueError(msg("m02.unknown_format", name=name, known=", ".join(FORMATS)).text())
    return FORMATS[name]


def torch_dtype(name: str):
    """The torch dtype of format ``name``, or None where torch has no castable dtype."""
    import torch
    entry = _format(name)
    return getattr(torch, entry["torch"]) if entry["torch"] else None


def largest(name: str) -> float:
    """The largest finite value of a format (for saturation), from torch or the spec table."""
    import torch
    if name == "e2m1":
        return E2M1_VALUES[-1]
    if name == "tf32":
        return torch.finfo(torch.float32).max
    dtype = torch_dtype(name)
    if dtype is None:
        raise ValueError(msg("m02.no_simulation", name=name).text())
    return torch.finfo(dtype).max


def simulate(x, name: str):
    """``x`` (float tensor) as format ``name`` would store it, returned as float32.

    torch dtypes: clamp to +-max (saturation), then torch's cast (round to nearest even).
    tf32: keep 10 of float32's 23 mantissa bits (Tensor Cores read only those).
    e2m1: the nearest of the 15 E2M1 values, saturating at +-6.
    """
    import torch
    x = torch.as_tensor(x, dtype=torch.float32)
    if name == "tf32":
        return (x.view(torch.int32) & ~0x1FFF).view(torch.float32)
    if name == "e2m1":
        grid = torch.tensor(E2M1_VALUES, dtype=torch.float32)
        nearest = grid[(x.abs().clamp(max=grid[-1]).unsqueeze(-1) - grid).abs().argmin(-1)]
        return torch.copysign(nearest, x)
    top = largest(name)
    return x.clamp(-top, top).to(torch_dtype(name)).to(torch.float32)


# ---------------------------------------------------------------- the bit explorer
_COLORS = {"sign": "#e15759", "exponent": "#4e79a7", "mantissa": "#59a14f"}
EXPLORER_FORMATS = ("fp32", "tf32", "bf16", "fp16", "e4m3", "e5m2", "e2m1")


def value_of(bits: int, name: str) -> float:
    """The value of a bit pattern, read by torch (tf32 as the top 19 bits of a float32; e2m1 from the table)."""
    import torch
    entry = _format(name)
    width = 1 + entry["exp_bits"] + entry["man_bits"]
    if not 0 <= bits < 2**width:
        raise ValueError(msg("m02.bits_out_of_range", bits=bits, width=width).text())
    if name == "e2m1":
        magnitude = E2M1_VALUES[bits & 0b111]
        return -magnitude if bits & 0b1000 else magnitude
    if name == "tf32":
        bits, name, width = bits << 13, "fp32", 32
    storage = {8: torch.uint8, 16: torch.int16, 32: torch.int32}[width]
    signed = bits - 2**width if storage is not torch.uint8 and bits >= 2 ** (width - 1) else bits
    return float(torch.tensor([signed], dtype=storage).view(torch_dtype(name))[0].item())


def explain(bits: int, name: str) -> Message:
    """Sign, exponent and mantissa fields of ``bits`` and how they give the value."""
    entry = _format(name)
    e_bits, m_bits, bias = entry["exp_bits"], entry["man_bits"], entry["bias"]
    sign = bits >> (e_bits + m_bits)
    e = (bits >> m_bits) & ((1 << e_bits) - 1)
    m = bits & ((1 << m_bits) - 1)
    value = value_of(bits, name)
    fields = dict(s=sign, e=format(e, f"0{e_bits}b"), ev=e, m=format(m, f"0{m_bits}b") if m_bits else "-",
                  mv=m, value=f"{value:.10g}")
    if value != value or value in (float("inf"), float("-inf")):
        return msg("m02.explore_special", **fields)
    if e == 0:
        return msg("m02.explore_subnormal", p=1 - bias, frac=f"{m}/{2**m_bits}", **fields)
    return msg("m02.explore_normal", p=e - bias, bias=bias, frac=f"1 + {m}/{2**m_bits}", **fields)


def bit_explorer(name: str = "bf16", bits: int | None = None):
    """An ipywidgets explorer: click bits of a format and see the fields and the value."""
    import ipywidgets as w
    from IPython.display import display

    choice = w.Dropdown(options=list(EXPLORER_FORMATS), value=name, description="format")
    row = w.HBox()
    info = w.HTML()
    state = {"bits": []}

    def refresh():
        value = sum(bit << (len(state["bits"]) - 1 - i) for i, bit in enumerate(state["bits"]))
        info.value = "<pre>" + explain(value, choice.value).text() + "</pre>"

    def flip(i: int, button) -> None:
        state["bits"][i] ^= 1
        button.description = str(state["bits"][i])
        refresh()

    def rebuild(_=None, start: int | None = None):
        entry = FORMATS[choice.value]
        kinds = ["sign"] + ["exponent"] * entry["exp_bits"] + ["mantissa"] * entry["man_bits"]
        default = start if start is not None else _one(choice.value)
        state["bits"] = [default >> (len(kinds) - 1 - i) & 1 for i in range(len(kinds))]
        buttons = []
        for i, kind in enumerate(kinds):
            b = w.Button(description=str(state["bits"][i]), tooltip=kind, layout=w.Layout(width="28px", padding="0"))
            b.style.button_color = _COLORS[kind]
            b.on_click(lambda button, i=i: flip(i, button))
            buttons.append(b)
        row.children = buttons
        refresh()

    choice.observe(lambda change: rebuild(), names="value")
    rebuild(start=bits)
    legend = w.HTML(" ".join(f'<span style="color:{c}">■ {k}</span>' for k, c in _COLORS.items()))
    box = w.VBox([choice, legend, row, info])
    display(box)
    return box


def _one(name: str) -> int:
    """The bit pattern of 1.0 in format ``name`` (the explorer's starting point)."""
    entry = FORMATS[name]
    return entry["bias"] << entry["man_bits"]


# ---------------------------------------------------------------- generations
_GENERATIONS = Path(__file__).parent / "data" / "m02_generations.yaml"


def generations() -> list[dict]:
    """Pascal to Blackwell: what each added (a Message), with an example part's figures from profiles.yaml."""
    from . import profiles
    rows = []
    for g in yaml.safe_load(_GENERATIONS.read_text(encoding="utf-8"))["generations"]:
        p = profiles.get(g["profile"]) if g["profile"] else None
        rows.append({
            "arch": g["arch"], "year": g["year"], "example": g["example"], "added": Message(g["ko"], g["en"]),
            "sms": p.get("sms") if p else None,
            "tensor_cores_per_sm": p.get("tensor_cores_per_sm") if p else None,
            "tensor_tflops": (p.peak("bf16") or p.peak("fp16")) if p else None,
            "fp8_tflops": p.peak("fp8") if p else None,
            "fp4_tflops": p.peak("fp4") if p else None,
            "memory": f"{p.get('memory.type')} {p.bandwidth_gbs:,.0f} GB/s" if p and p.bandwidth_gbs else None,
            "source": g["source"],
        })
    return rows
