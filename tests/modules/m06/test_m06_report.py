"""Module 06 report card: gathering recorded and reference results, the figure, the HTML page, gloo all-reduce."""
import base64
import re

import pytest

from autograder import reference, results
from autograder.modules.m06_choosing_hardware import report as m06_report
from autograder.profiles import Profile


@pytest.fixture
def machine(monkeypatch, tmp_path):
    """A CPU machine with a fake reference measurement (no 15-second measurement in tests)."""
    monkeypatch.setenv("COURSE_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("COURSE_NO_PROGRESS", "1")
    monkeypatch.setattr(results, "machine", lambda: ("test-machine", {"device": "cpu"}))
    fake = Profile(id="measured_cpu_test", name="test CPU", kind="cpu", vendor="test",
                   peak_tflops={"fp32": 0.15, "bf16": 0.02}, bandwidth_gbs=20.0, measured=True,
                   spec={"date": "2026-11-22",
                         "matmul": {"fp32": {"tflops": 0.15, "size": 4096}, "bf16": {"tflops": 0.02, "size": 1024}},
                         "bandwidth": {"copy": {"gbs": 20.0}, "triad": {"gbs": 24.0}}})
    monkeypatch.setattr(reference, "measured_profile", lambda *a, **k: fake)
    return tmp_path


def test_gather_uses_the_reference_when_nothing_is_recorded(machine):
    card = m06_report.gather("cpu", allreduce=False)
    items = {(i["what"], i.get("dtype")): i for i in card["items"]}
    assert items[("matmul", "fp32")]["value"] == 0.15 and items[("matmul", "fp32")]["source"] == "reference"
    assert items[("matmul", "fp32")]["intensity"] == pytest.approx(2 * 4096 / (3 * 4))     # 2n^3 / (3 n^2 x 4 bytes)
    assert items[("matmul", "fp32")]["pct"] is None                                         # no peak to compare with
    assert items[("copy", None)]["value"] == 20.0 and items[("triad", None)]["value"] == 24.0
    assert card["spec_id"] is None and "h100_sxm" in card["compare"]


def test_gather_prefers_recorded_results_and_lists_the_rest(machine):
    results.record("m02", "matmul_tflops_fp32", 0.12, "TFLOP/s", device="cpu", size=2048)
    results.record("m03", "bandwidth_copy_gbs", 15.0, "GB/s", device="cpu")
    results.record("m05", "allreduce_busbw_gbs", 0.5, "GB/s", backend="gloo", world_size=4)
    results.record("m03", "point_matvec", 2.0, "GFLOP/s", intensity=0.5)
    results.record("m01", "train_step_s", 0.02, "s")
    card = m06_report.gather("cpu", allreduce=False)
    items = {(i["what"], i.get("dtype")): i for i in card["items"]}
    fp32 = items[("matmul", "fp32")]
    assert fp32["source"] == "m02" and fp32["pct"] == pytest.approx(80.0)                   # 0.12 of the measured 0.15
    assert items[("copy", None)]["source"] == "m03" and items[("copy", None)]["pct"] == pytest.approx(75.0)
    assert items[("allreduce", None)]["value"] == 0.5 and items[("allreduce", None)]["ranks"] == 4
    assert [r["id"] for r in card["recorded"]] == ["m01.train_step_s", "m03.point_matvec"]
    assert card["points"] == [{"label": "m03.point_matvec", "intensity": 0.5, "flops": 2e9}]


def test_no_share_of_a_measured_peak_passes_100_percent(machine):
    """A lesson measured 10.7 TFLOP/s and 2.4x the copy bandwidth beside a reference taken on a busy machine: the
    reference is the best this machine showed, so the lesson's own values are the peak (100 %), never 10,720 %."""
    results.record("m02", "matmul_tflops_fp32", 16.08, "TFLOP/s", device="cpu", size=2048)
    results.record("m03", "bandwidth_copy_gbs", 47.4, "GB/s", device="cpu")
    items = {(i["what"], i.get("dtype")): i for i in m06_report.gather("cpu", allreduce=False)["items"]}
    assert items[("matmul", "fp32")]["pct"] == pytest.approx(100.0) and items[("matmul", "fp32")]["peak"] == 16.08
    assert items[("copy", None)]["pct"] == pytest.approx(100.0)


def test_figure_and_html(machine, tmp_path):
    results.record("m03", "point_matvec", 2.0, "GFLOP/s", intensity=0.5)
    card = m06_report.gather("cpu", allreduce=False)
    fig = m06_report.figure(card)
    roof, bars = fig.axes
    assert roof.get_xscale() == "log" and roof.get_yscale() == "log" and bars.get_xscale() == "log"
    assert len(bars.patches) == 2 + len(card["compare"])                                    # copy, triad + other devices
    page = m06_report.to_html(card, fig)
    assert "내 컴퓨터 성적표" in page and "My machine&#x27;s report card" in page
    png = re.search(r'src="data:image/png;base64,([A-Za-z0-9+/=]+)"', page).group(1)
    assert base64.b64decode(png)[:8] == b"\x89PNG\r\n\x1a\n"
    assert "m03.point_matvec" in page
    path = m06_report.save_html(card, fig, str(tmp_path / "report_card.html"))
    assert open(path, encoding="utf-8").read() == page
    assert "data:image/png;base64," in m06_report.to_html(card)          # draws its own bilingual figure


def test_rows_follow_the_language(machine):
    card = m06_report.gather("cpu", allreduce=False)
    assert m06_report.rows(card, "ko")[0]["what"].startswith("행렬 곱")
    assert m06_report.rows(card, "en")[0]["what"].startswith("matmul")


def test_gloo_allreduce_runs_and_is_recorded(machine, monkeypatch):
    found = m06_report.allreduce_busbw(world_size=2, budget_s=0.5)
    assert found is not None and found["busbw_gbs"] > 0 and found["world_size"] == 2
    assert all(r["busbw_gbs"] == pytest.approx(r["nbytes"] / r["seconds"] / 1e9) for r in found["rows"])  # 2(n-1)/n = 1
    monkeypatch.setattr(m06_report, "allreduce_busbw", lambda **k: found)
    card = m06_report.gather("cpu", allreduce=True)
    assert any(i["what"] == "allreduce" and i["source"] == "now" for i in card["items"])
    assert results.load()["m06.allreduce_busbw_gbs"]["value"] == found["busbw_gbs"]


def test_allreduce_failure_is_reported_not_raised(machine, monkeypatch, capsys):
    import subprocess

    def broken(*a, **k):
        raise OSError("no processes here")
    monkeypatch.setattr(subprocess, "Popen", broken)
    assert m06_report.allreduce_busbw(budget_s=0.5) is None
    out = capsys.readouterr()
    assert "gloo all-reduce" in out.out and out.err == ""


def _lesson_code(stem: str) -> str:
    import json
    from pathlib import Path
    path = Path(__file__).resolve().parents[3] / "lessons" / stem / f"{stem}.en.ipynb"
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")


def test_the_lessons_record_what_the_card_reads_through_its_names(machine):
    """The card's inputs are one typed contract, ``results.REPORT_CARD``: lessons 02, 03 and 05 record through its
    names and spell none of its keys themselves (a key renamed on one side only would leave the card without the
    lesson's figure, silently), and what they record is what the card shows as its own rows."""
    import ast
    card = results.REPORT_CARD
    lessons = {stem: _lesson_code(stem) for stem in ("02_gpu_architecture", "03_memory_hierarchy", "05_networking")}
    assert "REPORT_CARD.matmul(" in lessons["02_gpu_architecture"]
    assert "REPORT_CARD.bandwidth(" in lessons["03_memory_hierarchy"]
    assert "REPORT_CARD.allreduce.record(" in lessons["05_networking"]
    keys = {r.key for r in (card.copy, card.triad, card.allreduce)} | {card.matmul("").key}
    for stem, code in lessons.items():
        spelled = [n.value for n in ast.walk(ast.parse(code)) if isinstance(n, ast.Constant) and isinstance(n.value, str)
                   and any(k in n.value for k in keys)]
        assert not spelled, (stem, spelled)
    for dtype in card.matmul_dtypes:
        card.matmul(dtype).record(0.1, device="cpu", size=1024)
    for kind in ("copy", "triad"):
        card.bandwidth(kind).record(10.0, device="cpu")
    card.allreduce.record(0.5, backend="gloo", world_size=4)
    gathered = m06_report.gather("cpu", allreduce=False)
    assert {i["source"] for i in gathered["items"]} == {"m02", "m03", "m05"} and gathered["recorded"] == []
    assert set(results.load()) == card.read() - {card.allreduce_now.id}
