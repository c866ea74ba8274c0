"""Lesson helpers of module 03: the roofline explorer's table speaks the learner's language; the figure of a
linear layer's intensity names its ridge lines where they cannot overlap."""
import matplotlib
import pytest

from autograder import i18n
from autograder.modules.m03_memory_hierarchy.lesson import plot_curves, roofline_rows

matplotlib.use("Agg")


@pytest.mark.parametrize("lang, words", [("ko", {"메모리", "연산"}), ("en", {"memory", "compute"})])
def test_the_explorers_bound_column_is_in_the_learners_language(monkeypatch, lang, words):
    monkeypatch.setattr(i18n, "_chosen", None)  # restored afterwards
    i18n.set_language(lang)
    below, above = roofline_rows(["h100_sxm"], "bf16", 10), roofline_rows(["h100_sxm"], "bf16", 1000)
    assert {below[0]["bound"], above[0]["bound"]} == words
    assert below[0]["bound"] == ("메모리" if lang == "ko" else "memory")
    assert roofline_rows(["h100_sxm"], "fp4", 10)[0]["bound"] == "–"  # no fp4 peak on an H100


def test_close_ridge_lines_are_named_in_the_legend_not_beside_each_other():
    import numpy as np
    x = np.logspace(0, 4, 50)
    fig = plot_curves(x, {"d = 4096": x}, "B", "FLOP/byte", "t", {"H100 ridge 295": 295.0, "B200 ridge 281": 281.0})
    ax = fig.axes[0]
    assert not ax.texts
    names = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "H100 ridge 295" in names and "B200 ridge 281" in names
    styles = [line.get_linestyle() for line in ax.get_lines() if line.get_label().endswith(("295", "281"))]
    assert len(set(styles)) == 2, styles
