"""Module 08 tasks: the references get full marks on the visible and hidden cases, each known mistake is named on
the visible cases, and the answers follow the rules the tasks teach (checked against hand-worked figures)."""
import math
import random

import pytest

from autograder.checks import check
from autograder.modules.m08_serving import tasks
from course_answers import m08_serving as answers

REFERENCES = {"latency": answers.latency, "kv_plan": answers.kv_plan, "crossover": answers.compute_bound_batch,
              "speculative": answers.speculative, "bench_log": answers.read_benchmark,
              "int4": answers.int4_or_second_gpu, "decode": answers.decode_loop}
EXACT = sorted(set(tasks.TASKS) - {"decode"})  # the calculation tasks (decode is measured: measure.py's tests)


@pytest.mark.parametrize("name", sorted(tasks.TASKS))
def test_the_reference_gets_full_marks(name, capsys):
    assert check(f"m08.{name}", REFERENCES[name], points=3, hidden=True) is None
    assert "✅" in capsys.readouterr().out


def test_every_task_has_a_reference_and_hidden_cases():
    assert set(REFERENCES) == set(tasks.TASKS) == set(answers.HIDDEN) == set(answers.MISTAKES)
    assert set(answers.EXPECT) == set(EXACT)
    for name in tasks.TASKS:
        assert set(answers.MISTAKES[name]) == set(tasks.TASKS[name].mistakes)
        assert set(tasks.TASKS[name].central) <= set(tasks.TASKS[name].mistakes)


def test_the_kv_cache_per_token_counts_k_and_v_for_every_kv_head():
    llama3_8b = tasks.model("llama3_8b")  # 32 layers, 8 KV heads of 128, bf16: 2 x 32 x 8 x 128 x 2 bytes
    plan = answers.kv_plan(llama3_8b, 24.0, 1000, 8192, 16)
    assert plan["bytes_per_token"] == 131_072
    left = 24 * 2**30 - 8.030e9 * 2
    assert plan["static_sequences"] == math.floor(left / (131_072 * 8192))
    assert plan["paged_sequences"] == math.floor(left / (131_072 * 63 * 16))  # 1000 tokens hold 63 blocks of 16


def test_decode_never_turns_compute_bound_where_each_sequence_reads_more_than_it_computes():
    h100 = tasks.device("h100_sxm")
    assert answers.compute_bound_batch(tasks.model("llama2_7b"), h100, 4096) == {"batch": None}
    batch = answers.compute_bound_batch(tasks.model("llama3_8b"), h100, 128)["batch"]
    step = lambda b: (2 * 8.030e9 * b / (h100["peak_tflops"] * 1e12),  # noqa: E731  (compute, memory) of a step
                      (8.030e9 * 2 + b * 2 * 32 * 8 * 128 * 128 * 2) / (h100["bandwidth_gbs"] * 1e9))
    assert step(batch)[0] >= step(batch)[1] and step(batch - 1)[0] < step(batch - 1)[1]


def test_speculative_decoding_follows_leviathan_et_al():
    # E = (1 - a^(g+1)) / (1 - a); speed-up E / (g c + 1)
    out = answers.speculative(0.8, 4, 0.05, 10)
    assert out["expected_tokens"] == pytest.approx((1 - 0.8**5) / 0.2)
    assert out["speedup"] == pytest.approx((1 - 0.8**5) / 0.2 / 1.2)
    assert answers.speculative(1.0, 3, 0.1, 6)["expected_tokens"] == 4
    assert answers.speculative(0.3, 2, 0.5, 6)["best_gamma"] == 1  # a costly draft: the shortest wins


def test_the_published_logs_read_as_their_sources_print_them():
    log = tasks.benchmark_log("vllm_pr_18566")
    out = answers.read_benchmark(log["log"], log["gpus"])
    assert out["output_tokens_per_s_per_gpu"] == pytest.approx(6582.87, rel=1e-3)  # the log's own rate
    assert out["tokens_per_s_per_request"] == pytest.approx(1000 / 77.86)
    log = tasks.benchmark_log("vllm_pr_43276")
    assert answers.read_benchmark(log["log"], log["gpus"])["output_tokens_per_s_per_gpu"] == \
        pytest.approx(862.09 / 4, rel=1e-3)


def test_a_written_log_reads_back_its_figures():
    figures = {"requests": 300, "duration_s": 60.5, "input_tokens": 90000, "output_tokens": 45000,
               "ttft_ms": 120.0, "tpot_ms": 25.0}
    read = tasks.log_figures(tasks.write_log(figures))
    assert read["Total generated tokens"] == 45000 and read["Benchmark duration (s)"] == 60.5
    assert read["Mean TPOT (ms)"] == 25.0


def test_int4_counts_half_a_byte_and_its_group_scales():
    llama3_8b, rtx_4090 = tasks.model("llama3_8b"), tasks.device("rtx_4090")
    out = answers.int4_or_second_gpu(llama3_8b, rtx_4090, 150.0, 64)
    assert out["int4_tokens_per_s"] == pytest.approx(1008e9 / (8.030e9 * (0.5 + 2 / 64)))
    assert out["two_gpu_tokens_per_s"] == pytest.approx(1008e9 / 8.030e9)
    assert out["choice"] == "int4"


@pytest.mark.parametrize("seed", range(5))
def test_hidden_cases_have_answers_that_differ(seed):
    for name in EXACT:
        cases = answers.HIDDEN[name](random.Random(seed))
        wants = [{k: v for k, v in answers.EXPECT[name](c).items() if k != "mistakes"} for c in cases]
        assert len(cases) >= 2 and len({repr(w) for w in wants}) >= 2, name


def test_the_decode_tasks_wrong_answers_are_recorded_on_the_virtual_gpu():
    """Each is named from its own evidence on the virtual GPU's exact clock, whatever the machine's load."""
    task = tasks.TASKS["decode"]
    for name in task.mistakes:
        wrong = answers.MISTAKES["decode"][name]
        case = task.visible()[wrong.case]
        assert case["kind"] == "virtual"
        named = {p.mistake for p in task.score(case, wrong.answer, None) if not p.ok}
        assert name in named, name
