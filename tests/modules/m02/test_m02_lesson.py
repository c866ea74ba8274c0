"""Lesson helpers of module 02: format data, the bit explorer, the generations table, measured efficiency; and the
lesson's own text where a correction must hold."""
import json
from pathlib import Path

import pytest

from autograder import layout, profiles
from autograder.modules.m02_gpu_architecture.lesson import (EXPLORER_FORMATS, FORMATS, bit_explorer, explain,
                                                            generations, largest, mamf_rows, simulate, value_of)

REPO = Path(__file__).resolve().parents[3]


def test_every_format_has_a_layout_and_a_source():
    for name, f in FORMATS.items():
        assert f["special"] in ("ieee", "fn", "none")
        assert f["source"].startswith(("IEEE", "Intel", "NVIDIA", "OCP")), name
        assert name == "fp32" or 1 + f["exp_bits"] + f["man_bits"] <= 19


def test_explain_names_the_kind_of_number():
    assert "normal" in explain(0x3F80, "bf16").en and "value = 1" in explain(0x3F80, "bf16").en
    assert "subnormal" in explain(0x0001, "fp16").en
    assert "special" in explain(0x7F, "e4m3").en and "nan" in explain(0x7F, "e4m3").en
    assert "448" in explain(0x7E, "e4m3").en
    assert explain(0x3C00, "fp16").ko != explain(0x3C00, "fp16").en


def test_value_of_reads_tf32_as_the_top_bits_of_fp32():
    assert value_of(0b0_01111111_0000000001, "tf32") == 1 + 2**-10


def test_bad_input_raises_bilingual_errors():
    with pytest.raises(ValueError, match="fp99"):
        simulate([1.0], "fp99")
    with pytest.raises(ValueError, match="비트|bits"):
        value_of(16, "e2m1")
    with pytest.raises(ValueError, match="round_to_format"):
        largest("e3m2")


def test_bit_explorer_shows_the_value_and_follows_clicks(capsys):
    box = bit_explorer("e4m3")
    dropdown, _, row, info = box.children
    assert len(row.children) == 8 and "value = 1" in info.value
    for button in row.children[1:]:       # 0 1111 111: the NaN pattern
        if button.description == "0":
            button.click()
    assert "nan" in info.value
    dropdown.value = "fp16"
    assert len(row.children) == 16 and "value = 1" in info.value
    assert set(EXPLORER_FORMATS) <= set(FORMATS)
    assert capsys.readouterr().err == ""


def test_generations_run_from_pascal_to_blackwell_with_profile_figures():
    rows = generations()
    assert [r["arch"] for r in rows] == ["Pascal", "Volta", "Turing", "Ampere", "Ada Lovelace", "Hopper", "Blackwell"]
    assert all(r["source"].count("https://") >= 1 and r["added"].ko and r["added"].en for r in rows)
    hopper = next(r for r in rows if r["arch"] == "Hopper")
    assert hopper["tensor_tflops"] == profiles.get("h100_sxm").peak("bf16")
    assert [r["year"] for r in rows] == sorted(r["year"] for r in rows)


def test_measured_matmul_efficiency_has_its_source():
    rows, source = mamf_rows()
    assert "https://" in source and len(rows) >= 3
    share = {r["accelerator"]: r["mamf"] / r["theory"] for r in rows}
    assert 0.45 < share["AMD MI300X"] < 0.55 and all(0.4 < s < 1.0 for s in share.values())


def lesson_text(lang: str) -> dict:
    nb = json.loads(layout.lesson("02_gpu_architecture", lang, REPO).read_text(encoding="utf-8"))
    return {c["id"]: "".join(c["source"]) for c in nb["cells"]}


@pytest.mark.parametrize("lang", ["ko", "en"])
def test_the_opening_cites_each_peak_where_it_is_printed(lang):
    """Issue 17, item 4: the datasheet prints only sparse tensor figures; the dense 989.4 is the whitepaper's."""
    opening = lesson_text(lang)["c00"]
    assert "1,979" in opening and "3,958" in opening and "989.4" in opening
    assert ("datasheet" in opening and "whitepaper" in opening and "with sparsity" in opening) if lang == "en" else \
        ("사양서" in opening and "백서" in opening and "희소성 포함" in opening)
    assert "989 TFLOP/s for BF16" not in opening


@pytest.mark.parametrize("lang", ["ko", "en"])
def test_the_l4_row_is_marked_as_an_assumption(lang):
    """Issue 17, item 8: NVIDIA does not state the L4's accumulation, so the lesson must not present it as fact."""
    text = lesson_text(lang)["c15"]
    assert "L4" in text and ("assumption" in text if lang == "en" else "가정" in text)
