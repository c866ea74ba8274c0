"""Korean text renders in plots without missing glyphs."""
import warnings

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from autograder import plotting  # noqa: E402


def render(title: str) -> list[warnings.WarningMessage]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fig, ax = plt.subplots()
        ax.set_title(title)
        ax.plot([-1, 1], [-2, 2])
        fig.canvas.draw()
        plt.close(fig)
    return [w for w in caught if "missing from" in str(w.message) or "Glyph" in str(w.message)]


def test_korean_title_renders_without_missing_glyphs():
    plotting.setup()
    assert render("행렬 곱 처리량 / Matmul throughput (−1)") == []


def test_without_setup_default_font_lacks_hangul():
    """Guards the test itself: the warning it looks for really appears without the fallback."""
    with matplotlib.rc_context({"font.family": ["DejaVu Sans"]}):
        assert render("한글") != []


def test_bundled_font_is_shipped_with_its_license():
    assert plotting.FONT_FILE.exists()
    assert "Open Font License" in (plotting.FONT_FILE.parent / "OFL.txt").read_text()
