"""Lesson 02's helpers: number formats (the format table, torch-backed casts, a bit explorer), the generations table,
the SM schematic and format figures, measured matmul efficiency, and the lesson's measurements.

``FORMATS`` comes from ``data/formats.yaml``. :func:`simulate` stores values the way
the hardware path does (torch casts with saturation, TF32 by dropping mantissa bits,
E2M1 by the nearest table value); :func:`bit_explorer` is the lesson's widget.
"""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from ...datafile import read_yaml
from ...i18n import Message, msg
from ...lesson import Measured, measure

_DATA = Path(__file__).parent / "data" / "formats.yaml"


@lru_cache(maxsize=1)
def _raw() -> dict:
    return read_yaml(_DATA)


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

    from ...lesson import LABEL
    choice = w.Dropdown(options=list(EXPLORER_FORMATS), value=name, description=_t("형식", "format"), style=LABEL)
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


# ---------------------------------------------------------------- peaks from the parts
# The GPUs lesson section 3 works through (exercise task 1 draws its cases from the others).
PEAK_GPUS = ("v100_sxm2_32gb", "t4", "rtx_3090", "h100_sxm", "rtx_4090", "l4", "rtx_5090")


# ---------------------------------------------------------------- generations
_GENERATIONS = Path(__file__).parent / "data" / "generations.yaml"


def generations() -> list[dict]:
    """Pascal to Blackwell: what each added (a Message), with an example part's figures from profiles.yaml."""
    from ... import profiles
    rows = []
    for g in read_yaml(_GENERATIONS)["generations"]:
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


def mamf_rows() -> tuple[list[dict], str]:
    """Public bf16 MAMF measurements against the dense peak (``data/measured_matmul.yaml``), and their source."""
    data = read_yaml(Path(__file__).parent / "data" / "measured_matmul.yaml")
    rows = [{"accelerator": r["accelerator"], "mamf": r["mamf_tflops"], "theory": r["theory_tflops"],
             "share": f"{r['mamf_tflops'] / r['theory_tflops']:.0%}", "software": r["software"]} for r in data["bf16"]]
    return rows, data["source"]


# ---------------------------------------------------------------- the lesson's figures and tables
def _t(ko: str, en: str) -> str:
    from ...lesson import t

    return t(ko, en)


def draw_sm(subpartitions: int = 4):
    """A schematic of one H100 SM: four subpartitions (scheduler, registers, 32 lanes, a Tensor Core), SMEM, L2, HBM."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(10, 5.2))
    ax.set_xlim(0, 10)
    ax.set_ylim(0, 6.6)
    ax.axis("off")

    def box(x, y, w, h, color, text, size=9):
        ax.add_patch(plt.Rectangle((x, y), w, h, facecolor=color, edgecolor="black", lw=0.8))
        ax.text(x + w / 2, y + h / 2, text, ha="center", va="center", fontsize=size)

    box(0.2, 1.3, 9.6, 5.1, "#f4f4f4", "")
    ax.text(0.35, 6.2, _t("SM 하나 (H100에는 132개)", "one SM (an H100 has 132)"), fontsize=11)
    for i in range(subpartitions):
        x = 0.4 + i * 2.35
        box(x, 2.3, 2.2, 3.7, "#ffffff", "")
        box(x + 0.1, 5.35, 2.0, 0.5, "#f28e2b", _t("워프 스케줄러", "warp scheduler"), 8)
        box(x + 0.1, 4.75, 2.0, 0.5, "#edc948", _t("레지스터 64 KB", "registers 64 KB"), 8)
        for k in range(32):  # the 32 FP32 lanes of one SIMD unit
            ax.add_patch(plt.Rectangle((x + 0.12 + (k % 8) * 0.245, 3.55 + (k // 8) * 0.28), 0.2, 0.22,
                                       facecolor="#59a14f", edgecolor="none"))
        ax.text(x + 1.1, 3.4, _t("FP32 레인 32개", "32 FP32 lanes"), ha="center", fontsize=7)
        box(x + 0.1, 2.4, 2.0, 0.8, "#4e79a7", "Tensor Core", 9)
    box(0.4, 1.45, 9.2, 0.7, "#b07aa1", _t("SMEM / L1 (256 KB, 공유 메모리 최대 228 KB)",
                                          "SMEM / L1 (256 KB, up to 228 KB shared memory)"))
    box(0.2, 0.55, 9.6, 0.6, "#9c755f", _t("L2 캐시 50 MB (모든 SM이 공유)", "L2 cache 50 MB (shared by all SMs)"))
    box(0.2, 0.0, 9.6, 0.5, "#bab0ac", "HBM3 80 GB, 3.35 TB/s")
    ax.set_title(_t("H100 SM의 구조 (개략도)", "The structure of an H100 SM (schematic)"))
    return fig


def plot_line(x, y, xlabel: str, ylabel: str, title: str, figsize=(7, 3.2)):
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=figsize)
    ax.plot(x, y)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(alpha=0.3)
    return fig


def plot_generations(gens: list[dict]):
    """Dense Tensor Core peaks (16-bit, FP8, FP4) of each generation's example part, on a log scale."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 3.8))
    for key, label, marker in (("tensor_tflops", "16-bit", "o"), ("fp8_tflops", "FP8", "s"), ("fp4_tflops", "FP4", "^")):
        xs = [i for i, g in enumerate(gens) if g[key]]
        ax.plot(xs, [gens[i][key] for i in xs], marker=marker, linestyle="none", markersize=8, label=label)
    ax.set_xticks(range(len(gens)), [f"{g['arch']}\n{g['example']}" for g in gens], fontsize=8)
    ax.set_yscale("log")
    ax.set_ylabel("dense TFLOP/s")
    ax.grid(alpha=0.3, which="both")
    ax.legend()
    ax.set_title(_t("세대별 Tensor Core dense 피크 (대표 제품; T4와 RTX 4090은 데이터센터 최상위가 아님)",
                    "Dense Tensor Core peak by generation (example part; T4 and RTX 4090 are not top datacenter parts)"),
                 fontsize=10)
    return fig


def plot_bars(labels, series: dict, ylabel: str, title: str, log: bool = True, horizontal: bool = False,
              figsize=(8, 3.6), rotation: int = 30):
    """Grouped bars ``{label: values}`` (horizontal: one row per label)."""
    import matplotlib.pyplot as plt
    import numpy as np

    fig, ax = plt.subplots(figsize=figsize)
    pos, width = np.arange(len(labels)), 0.8 / len(series)
    for i, (name, values) in enumerate(series.items()):
        offset = pos + (i - (len(series) - 1) / 2) * width
        (ax.barh if horizontal else ax.bar)(offset, list(values), width, label=name)
    if horizontal:
        ax.set_yticks(pos, list(labels))
        ax.invert_yaxis()
        ax.set_xlabel(ylabel)
    else:
        ax.set_xticks(pos, list(labels), rotation=rotation, ha="right" if rotation else "center", fontsize=8)
        ax.set_ylabel(ylabel)
        ax.grid(alpha=0.3, axis="y")
    if log:
        (ax.set_xscale if horizontal else ax.set_yscale)("log")
    if len(series) > 1:
        ax.legend(fontsize=8)
    ax.set_title(title)
    return fig


def format_rows() -> list[dict]:
    """Each format's fields and limits: torch.finfo where torch has the dtype, the specification otherwise."""
    import torch

    rows = []
    for name, f in FORMATS.items():
        dtype = torch_dtype(name)
        if dtype is not None:
            info = torch.finfo(dtype)
            top, normal, eps, origin = info.max, info.smallest_normal, info.eps, f"torch.finfo({dtype})"
        else:
            q = QUOTED_LIMITS[name]
            top, normal, eps, origin = q["max"], q["smallest_normal"], 2.0 ** -f["man_bits"], _t("명세", "spec")
        rows.append({"format": name, "bits": 1 + f["exp_bits"] + f["man_bits"], "E": f["exp_bits"], "M": f["man_bits"],
                     "bias": f["bias"], "special": f["special"], "max": f"{top:.4g}", "normal": f"{normal:.3g}",
                     "eps": f"{eps:.3g}", "from": origin})
    return rows


def plot_bit_layout():
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9, 3.8))
    for i, (name, f) in enumerate(FORMATS.items()):
        left = 0
        for part, width in (("sign", 1), ("exponent", f["exp_bits"]), ("mantissa", f["man_bits"])):
            ax.barh(i, width, left=left, color=_COLORS[part], edgecolor="white", label=part if i == 0 else None)
            left += width
    ax.set_yticks(range(len(FORMATS)), list(FORMATS))
    ax.invert_yaxis()
    ax.set_xlabel(_t("비트", "bits"))
    ax.legend(loc="lower right")
    ax.set_title(_t("형식별 비트 배치: 지수는 범위, 가수는 정밀도", "Bit layout per format: exponent = range, mantissa = precision"))
    return fig


def positive_values(name: str):
    """Every finite positive value of a format torch has, sorted."""
    import torch

    dtype = torch_dtype(name)
    width = torch.finfo(dtype).bits
    codes = torch.arange(2 ** width, dtype=torch.int64)
    values = (codes.to(torch.uint8) if width == 8 else codes.to(torch.int16)).view(dtype).double()
    return values[torch.isfinite(values) & (values > 0)].unique()


def plot_value_gaps(names=("fp16", "bf16", "e4m3", "e5m2")):
    """Relative gap from each value to the next: range is the width, precision the height."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9, 4))
    for name in names:
        v = positive_values(name)
        ax.loglog(v[:-1], (v[1:] - v[:-1]) / v[:-1], ".", ms=2, label=f"{name} ({len(v)} {_t('개', 'values')})")
    ax.set_xlabel(_t("값", "value"))
    ax.set_ylabel(_t("다음 값까지의 상대 간격", "relative gap to the next value"))
    ax.legend(markerscale=5)
    ax.grid(alpha=0.3, which="both")
    ax.set_title(_t("범위(가로 폭)와 정밀도(세로 높이)", "Range (width) and precision (height)"))
    return fig


def plot_range_errors(names=("bf16", "fp16", "e5m2", "e4m3"), n: int = 64):
    """Relative matmul error against the magnitude of the entries: where each format's range ends."""
    import matplotlib.pyplot as plt
    import numpy as np
    import torch

    scales = 10.0 ** np.arange(-9, 7)
    a0, b0 = torch.randn(n, n), torch.randn(n, n)
    fig, ax = plt.subplots(figsize=(8, 3.8))
    for name in names:
        errs = []
        for s in scales:
            a, b = a0 * float(s), b0 * float(s)
            exact = a.double() @ b.double()
            errs.append(((simulate(a, name).double() @ simulate(b, name).double() - exact).norm() / exact.norm()).item())
        ax.loglog(scales, errs, marker="o", ms=3, label=name)
    ax.set_xlabel(_t("행렬 원소의 크기 (scale)", "magnitude of the matrix entries (scale)"))
    ax.set_ylabel(_t("상대 오차", "relative error"))
    ax.legend()
    ax.grid(alpha=0.3, which="both")
    ax.set_title(_t("범위: 어떤 크기에서 형식이 무너지는가", "Range: at which magnitudes a format breaks down"))
    return fig


def show_masks(matrices: dict, groups: int = 4):
    """Kept (non-zero) weights of each matrix ``{title: weights}``, with the group boundaries drawn."""
    import matplotlib.pyplot as plt
    import numpy as np

    fig, axes = plt.subplots(1, len(matrices), figsize=(5 * len(matrices), 3))
    for ax, (title, matrix) in zip(np.atleast_1d(axes), matrices.items()):
        ax.imshow(matrix != 0, cmap="Greens", aspect="auto")
        ax.set_xticks(np.arange(-0.5, matrix.shape[1], groups), minor=False, labels=[])
        ax.grid(color="black", lw=1, axis="x")
        ax.set_title(title)
    fig.suptitle(_t("초록 = 남은 가중치 (세로선 = 4개 묶음 경계)", "green = kept weights (vertical lines = groups of 4)"), y=1.04)
    return fig


# ---------------------------------------------------------------- the lesson's measurements
def tf32_speeds(device: str, n: int = 4096) -> list[str]:
    """fp32 matmul TFLOP/s with ``highest`` and ``high`` float32 matmul precision (TF32 Tensor Cores), or why not."""
    import torch

    from ...harness import time_fn

    if not (device == "cuda" and torch.cuda.get_device_capability()[0] >= 8):
        return [_t("TF32 Tensor Core가 있는 GPU(Ampere 이후)가 없어 속도 비교는 건너뜁니다. 설정은 CPU에서는 아무 효과가 없습니다.",
                   "No GPU with TF32 Tensor Cores (Ampere or later) here, so the speed comparison is skipped; "
                   "on a CPU the setting has no effect.")]
    a, b = torch.randn(n, n, device="cuda"), torch.randn(n, n, device="cuda")
    lines = []
    try:
        for precision in ("highest", "high"):
            torch.set_float32_matmul_precision(precision)
            timing = time_fn(lambda: a @ b, device="cuda", budget_s=1.0)
            lines.append(f"{precision:8} fp32 matmul {n}: {2 * n**3 / timing.median_s / 1e12:7.1f} TFLOP/s")
    finally:
        torch.set_float32_matmul_precision("highest")  # back to PyTorch's default
    return lines


def odd_size_matmuls(device: str) -> tuple[str, list[dict]]:
    """Matmul TFLOP/s at a size divisible by 64 and at its odd neighbours (dtype, rows)."""
    import torch

    from ...harness import time_fn
    from ...progress import progress

    if device in ("cuda", "mps", "xpu"):
        dtype, sizes, budget = (torch.bfloat16 if device != "mps" else torch.float16), (4096, 4095, 4097), 1.0
    else:
        dtype, sizes, budget = torch.float32, (1024, 1023, 1025), 0.5
    rows = []
    for size in progress(sizes, desc="matmul"):
        a = torch.randn(size, size, dtype=dtype, device=device)
        b = torch.randn(size, size, dtype=dtype, device=device)
        timing = time_fn(lambda: a @ b, device=device, budget_s=budget)
        rows.append({"n": size, "tflops": 2 * size**3 / timing.median_s / 1e12, "spread": timing.spread})
    return str(dtype), rows


def sparse_24_speedup(device: str, size: int = 4096) -> str:
    """A 2:4-sparse fp16 matmul against the dense one on an Ampere-or-later NVIDIA GPU, or why it is skipped."""
    import torch

    from ...harness import time_fn

    if not (device == "cuda" and torch.cuda.get_device_capability()[0] >= 8):
        return _t("Ampere 이후 NVIDIA GPU가 없어 2:4 희소 행렬 곱 측정은 건너뜁니다.",
                  "No NVIDIA GPU of Ampere or later here, so the 2:4 sparse matmul measurement is skipped.")
    try:
        from torch.sparse import to_sparse_semi_structured

        weight = torch.randn(size, size, dtype=torch.float16, device="cuda")
        groups = weight.abs().reshape(size, -1, 4)
        mask = torch.zeros_like(groups, dtype=torch.bool).scatter_(-1, groups.topk(2, dim=-1).indices, True)
        weight = weight * mask.reshape(size, size)
        x = torch.randn(size, size, dtype=torch.float16, device="cuda")
        dense_t = time_fn(lambda: weight @ x, device="cuda", budget_s=1.0).median_s
        sparse_w = to_sparse_semi_structured(weight)
        sparse_t = time_fn(lambda: sparse_w @ x, device="cuda", budget_s=1.0).median_s
    except Exception as exc:  # any backend without 2:4 kernels: explain instead of failing
        return _t("이 GPU/PyTorch 조합에서는 2:4 커널을 쓸 수 없습니다:", "2:4 kernels are not available with this GPU/PyTorch:") + f" {exc}"
    return (f"dense {dense_t * 1e3:.3f} ms, 2:4 sparse {sparse_t * 1e3:.3f} ms, "
            f"{_t('속도 향상', 'speed-up')} {dense_t / sparse_t:.2f}x")


def measured_matmuls(device: str, dtypes: list[str], spec) -> Measured:
    """The course's matmul per dtype at the size exercise task 6 asks for (the first n = 256, 512, ... whose
    multiplication takes at least 0.05 s, at most 8192; not the fastest of several sizes, which load biases upwards),
    with the spec's dense peak where the device has a spec sheet. Each dtype keeps its size; the dtypes are then
    timed in turns (:func:`autograder.lesson.measure`, the size search's last run being the first pass), so the
    rows carry the spread that says whether the machine was busy."""
    from ... import reference
    from ...progress import progress

    found = {}   # dtype: (its size, its first run at that size)
    for dt in progress(dtypes, desc="matmul"):
        try:
            found[dt] = _task_size(dt, device)
        except (ValueError, RuntimeError) as exc:  # a dtype this device cannot run
            print(dt, "→", exc)
    first = {dt: iter([run]) for dt, (_, run) in found.items()}
    runs = measure(lambda dt: next(first[dt], None) or
                   reference.matmul_tflops(dt, device, budget_s=0.4, sizes=[found[dt][0]]), list(found), key="tflops")
    rows = []
    for dt, result in zip(found, runs):
        peak = spec.peak(dt) if spec else None
        rows.append({"dtype": dt, "n": found[dt][0], "tflops": result["tflops"], "peak": peak,
                     "share": f"{result['tflops'] / peak:.0%}" if peak else "—"})
    return runs.carried(rows)


def _task_size(dtype: str, device: str) -> tuple[int, dict]:
    """Exercise task 6's size for ``dtype`` (the first n = 256, 512, ... whose multiplication takes at least
    0.05 s, at most 8192) and the run that found it."""
    from ... import reference
    from .tasks import BUDGET_S, FIRST_N, LAST_N

    n = FIRST_N
    while True:
        result = reference.matmul_tflops(dtype, device, budget_s=0.4, sizes=[n])
        if 2 * n**3 / (result["tflops"] * 1e12) >= BUDGET_S or n >= LAST_N:
            return n, result
        n *= 2


def matmul_lines(rows: list[dict]) -> list[str]:
    """What the table of :func:`measured_matmuls` shows of each dtype against fp32: faster or slower only where its
    figure is clearly apart (:func:`autograder.lesson.clearly_more`)."""
    from ...lesson import clearly_more, t
    from ...reference import canonical_dtype

    base = next((r for r in rows if canonical_dtype(r["dtype"]) == "fp32"), None)
    lines = []
    for r in rows if base else []:
        if r is base:
            continue
        name, fp32, ours, theirs = r["dtype"], base["dtype"], r["tflops"], base["tflops"]
        if clearly_more(ours, theirs):
            lines.append(t(f"{name}: 이번 측정에서 {fp32}보다 {_times(ours / theirs)}배 빠릅니다",
                           f"{name}: {_times(ours / theirs)}x faster than {fp32} in this run"))
        elif clearly_more(theirs, ours):
            lines.append(t(f"{name}: 이번 측정에서 {fp32}보다 {_times(theirs / ours)}배 느립니다",
                           f"{name}: {_times(theirs / ours)}x slower than {fp32} in this run"))
        else:
            lines.append(t(f"{name}: 이번 측정에서는 {fp32}와 뚜렷이 다르지 않았습니다",
                           f"{name}: in this run not clearly different from {fp32}"))
    return lines


def _times(ratio: float) -> str:
    return f"{ratio:,.0f}" if ratio >= 10 else f"{ratio:.1f}"
