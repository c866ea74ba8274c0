"""Lesson 08's helpers: serving costs at the roofline (TTFT, TPOT, the batch where decode turns compute-bound), the KV
cache through the course's one rule, paged blocks, the batching simulation, weight bytes with group scales and the
speculative-decoding sums, checked against hand counts; the quizzes' figures are what the helpers compute; the
lesson runs top to bottom."""
from pathlib import Path

import matplotlib
import numpy as np
import pytest

from autograder import i18n, knowledge, layout, llm, profiles
from autograder.lesson import load_quiz
from autograder.modules.m08_serving import decode, lesson as m08

matplotlib.use("Agg")
ROOT = Path(__file__).resolve().parents[3]
H100 = profiles.get("h100_sxm")


def test_the_models_shapes_count_the_parameters_the_papers_state():
    for name, m in m08.models().items():
        total = m.shape.params + m.shape.embedding_params
        assert total == pytest.approx(m.params_total, rel=2e-3), name


def test_prefill_is_compute_bound_at_the_roofline_and_short_prompts_ride_on_the_weight_read():
    s = m08.models()["llama3_8b"].shape
    ttft, bound = m08.prefill(s, H100, 2048)
    assert bound == "compute"
    assert ttft == pytest.approx(2048 * knowledge.forward_flops(s.params, 1) / (H100.peak("bf16") * 1e12))
    one, bound = m08.prefill(s, H100, 1)
    assert bound == "memory"
    assert m08.prefill(s, H100, 64)[0] < 1.1 * one                           # the flat floor of the lesson's figure


def test_the_lessons_claims_on_the_compute_bound_batch_hold_for_its_models():
    models = m08.models()
    gqa, mha = models["llama3_8b"].shape, models["llama2_7b"].shape
    ridge = H100.peak("bf16") * 1e12 / (H100.bandwidth_gbs * 1e9)
    for s in (gqa, mha):
        assert decode.compute_bound_batch(s, 0, H100, 2, "bf16") == pytest.approx(ridge)
    assert decode.compute_bound_batch(mha, 128, H100, 2, "bf16") == np.inf  # "MHA already at 128"
    assert decode.compute_bound_batch(gqa, 256, H100, 2, "bf16") < np.inf
    assert decode.compute_bound_batch(gqa, 512, H100, 2, "bf16") == np.inf  # "GQA from 512 on"


def test_the_kv_cache_is_the_courses_rule_and_a_window_stops_it():
    models = m08.models()
    m70 = models["llama3_70b"]
    assert m08.kv_per_sequence(m70, 1) == 2 * 80 * 8 * 128 * 2 == 320 * 2**10
    assert m08.kv_per_sequence(m70, 4096, kv_bytes=1) == llm.kv_cache_bytes(m70.kv(1), 1, 4096)
    assert m08.kv_per_sequence(m70, 1, kv_heads=1) == 2 * 80 * 1 * 128 * 2
    mistral = models["mistral_7b"]
    assert m08.kv_per_sequence(mistral, 32768) == m08.kv_per_sequence(mistral, 4096)
    left = H100.memory_bytes - m70.params_total * 1                           # GiB: 80 x 2**30 bytes
    assert m08.sequences_that_fit(m70, H100, 4096, weight_bytes=1) == int(left // m08.kv_per_sequence(m70, 4096))
    assert m08.sequences_that_fit(m70, H100, 4096) == 0                       # bf16 70B does not fit one H100


def test_paged_blocks_waste_only_the_last_blocks_empty_slots():
    waste = m08.kv_waste([10, 30], reserved=40, block=16)
    assert waste["static"] == pytest.approx(1 - 40 / 80)
    assert waste["paged"] == pytest.approx(1 - 40 / (16 + 32))
    assert m08.kv_waste([10, 30], 40, 1)["paged"] == 0


def test_continuous_batching_refills_slots_static_batching_waits_for_the_longest():
    step = lambda b: 1.0   # noqa: E731  one second a step, whatever the batch
    static = m08.simulate_batching([1, 3, 1, 1], cap=2, step_s=step, continuous=False)
    continuous = m08.simulate_batching([1, 3, 1, 1], cap=2, step_s=step, continuous=True)
    # static: [1, 3] takes 3 steps, then [1, 1] one; continuous: a finished request's slot takes the next at once
    assert static["tokens_per_s"] == pytest.approx(6 / 4)
    assert continuous["tokens_per_s"] == pytest.approx(6 / 3)
    assert static["latency_s"] == pytest.approx((1 + 3 + 4 + 4) / 4)
    assert continuous["latency_s"] == pytest.approx((1 + 2 + 3 + 3) / 4)
    grows = lambda b: 1.0 + b  # noqa: E731
    padded = m08.simulate_batching([1, 3], cap=2, step_s=grows, continuous=False)
    assert padded["tpot_s"] == pytest.approx((3 * 2 + 3 + 3) / 4)   # finished slots are still computed as padding


def test_weight_bytes_count_the_group_scales_and_the_speculative_sum_is_geometric():
    assert m08.weight_bytes_per_param(4, 128) == 0.5 + 2 / 128
    assert m08.weight_bytes_per_param(8) == 1
    for alpha in (0.0, 0.3, 0.8, 1.0):
        for gamma in (0, 1, 4, 9):
            assert m08.accepted_tokens(alpha, gamma) == pytest.approx(sum(alpha**i for i in range(gamma + 1)))
    assert m08.speculative_speedup(0.8, 4, 0.05) == pytest.approx(m08.accepted_tokens(0.8, 4) / 1.2)
    assert m08.speculative_speedup(0.8, 0, 0.5) == 1                            # no draft: plain decoding
    assert m08.speculative_speedup(0.2, 4, 0.5) < 1                             # a poor, costly draft loses


def test_the_quizzes_figures_are_the_helpers():
    kv = load_quiz("m08.kv_gqa")
    assert f"{m08.kv_per_sequence(m08.models()['llama3_70b'], 1) / 2**10:.0f} KiB" == kv.options[kv.answer].en
    q = load_quiz("m08.int4_bytes")
    assert f"{70.55e9 * m08.weight_bytes_per_param(4, 128) / 1e9:.1f} × 10⁹ bytes" == q.options[q.answer].en
    s = load_quiz("m08.speculative_tokens")
    assert f"{float(m08.accepted_tokens(0.8, 4)):.2f}" in s.options[s.answer].en


@pytest.mark.parametrize("lang, word", [("ko", "가장 좋은 γ"), ("en", "best γ")])
def test_the_speculative_explorer_names_the_best_draft_length_in_the_learners_language(monkeypatch, capsys, lang, word):
    monkeypatch.setattr(i18n, "_chosen", None)
    i18n.set_language(lang)
    m08.speculative_explorer()
    out = capsys.readouterr().out
    best = int(np.argmax(m08.speculative_speedup(0.8, np.arange(13), 0.05)))
    assert word in out and f"= {best}" in out


@pytest.mark.parametrize("lang", ["ko", "en"])
def test_the_cache_is_called_faster_only_where_the_times_show_it(monkeypatch, lang):
    monkeypatch.setattr(i18n, "_chosen", None)
    i18n.set_language(lang)
    assert ("3.0" in m08.cache_verdict(300.0, 100.0)) and ("배" if lang == "ko" else "faster") in m08.cache_verdict(300, 100)
    for with_cache, without in ((110.0, 100.0), (100.0, 100.0), (50.0, 100.0)):   # within 1.2x, or slower: no claim
        said = m08.cache_verdict(with_cache, without)
        assert "배 빠릅니다" not in said and "x faster" not in said


def test_the_lesson_runs_top_to_bottom(tmp_path, monkeypatch):
    import nbclient
    import nbformat
    monkeypatch.setenv("COURSE_NO_PROGRESS", "1")
    path = layout.lesson("08_serving", "en", ROOT)
    nb = nbformat.read(path, as_version=4)
    nbclient.NotebookClient(nb, timeout=120, resources={"metadata": {"path": str(path.parent)}}).execute()
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []) if o.output_type == "error"]
    assert not errors
