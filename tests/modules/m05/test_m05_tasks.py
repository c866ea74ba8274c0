"""Module 05 tasks: references get full marks, stubs fail, typical mistakes get partial credit and hints."""
import random

import pytest

from autograder import i18n, ranks
from autograder.checks import CheckFailed, check, task
from autograder.checks.core import score_records
from autograder.checks.expected import want
from autograder.modules.m05_networking import tasks as m05_tasks
from autograder.modules.m05_networking.tasks import _measure_answer, _measure_score, _ring_answer, _ring_score
from course_answers import m05_networking as m05


@pytest.fixture(autouse=True)
def english(monkeypatch):
    monkeypatch.setenv("COURSE_GRADING_SEED", "11")
    i18n.set_language("en")
    yield
    i18n.set_language("both")


def links(link, count, bidirectional=False):
    return m05.link_gbs(link, count, bidirectional)


def min_batch(profile_id, strategy, in_network, bw_gbs=None):
    return m05.min_batch_for_profile(profile_id, strategy, in_network, bw_gbs)


def stub(*args, **kwargs):
    raise NotImplementedError()


PURE = [("m05.links", links), ("m05.superpod", m05.superpod), ("m05.cost", m05.comm_time),
        ("m05.busbw", m05.bus_bandwidth), ("m05.batch", min_batch)]


@pytest.mark.parametrize("task_id,fn", PURE)
def test_reference_gets_full_marks(task_id, fn, capsys):
    assert check(task_id, fn, points=2, hidden=True) is None
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("task_id", [t for t, _ in PURE] + ["m05.ring", "m05.measure"])
def test_stub_fails(task_id):
    with pytest.raises(CheckFailed, match="Not implemented"):
        check(task_id, stub, points=2)


def parts_of(task_id, fn, hidden=False, seed=3):
    t = task(task_id)
    cases = t.visible() + (m05.HIDDEN[task_id.split(".")[1]](random.Random(seed)) if hidden else [])
    parts = []
    for case in cases:
        scored = t.score(case, t.answer(fn, case), want(task_id, case))
        parts.extend(scored if isinstance(scored, list) else [scored])
    return parts


def text(parts):
    return " ".join(p.message.en for p in parts if not p.ok)


def test_links_direction_and_bits_hints():
    both_ways = parts_of("m05.links", lambda link, count, bidirectional=False: links(link, count, not bidirectional))
    assert not any(p.ok for p in both_ways) and "per direction versus bidirectional" in text(both_ways)
    bits = parts_of("m05.links", lambda link, count, b=False: links(link, count, b) * 8 if link["kind"] != "pcie"
                    else links(link, count, b))
    assert 0 < sum(p.ok for p in bits) < len(bits) and "Gb/s (bits)" in text(bits)
    raw = parts_of("m05.links", lambda link, count, b=False: link["gt_s"] / 8 * count * (2 if b else 1)
                   if link["kind"] == "pcie" else links(link, count, b))
    assert "line encoding" in text(raw)


def test_hard_coded_answers_fail_hidden_cases():
    t = task("m05.links")
    table = {str(case): links(case["link"], case["count"], case["bidirectional"]) for case in t.visible()}

    def memorised(link, count, bidirectional=False):
        return table[str({"link": link, "count": count, "bidirectional": bidirectional})]

    assert all(p.ok for p in parts_of("m05.links", memorised))
    result = check("m05.links", memorised, points=2, hidden=True)
    assert result is not None and result < 2  # partial at most: hidden cases raise KeyError


def test_superpod_wrong_level_rule_gets_partial():
    def no_min(levels):  # forgets that a level cannot be faster than the one below
        out = m05.superpod(levels)
        out["per_gpu_gbs"] = [lv["links"] * (lv["link_rate"] / 8 if lv["unit"] == "Gb/s" else lv["link_rate"]) / lv["gpus"]
                              for lv in levels]
        return out

    parts = parts_of("m05.superpod", no_min, hidden=True)
    assert any(p.ok for p in parts) and not all(p.ok for p in parts)


def test_superpod_not_a_dict():
    with pytest.raises(CheckFailed, match="Return a dict"):
        check("m05.superpod", lambda levels: [450, 50, 50], points=3)


def test_cost_allreduce_once_gets_hint():
    def once(op, nbytes, n, alpha_s, bw_gbs):
        return m05.comm_time("all_gather" if op == "all_reduce" else op, nbytes, n, alpha_s, bw_gbs)

    parts = parts_of("m05.cost", once)
    assert not all(p.ok for p in parts) and "reduce-scatter plus an all-gather" in text(parts)


def test_busbw_algbw_hint():
    parts = parts_of("m05.busbw", lambda op, nbytes, seconds, n: nbytes / seconds / 1e9)
    assert "algorithm bandwidth" in text(parts)
    assert any(p.ok for p in parts)  # broadcast and send_recv have factor 1


def test_batch_hints():
    parts = parts_of("m05.batch", lambda *a: float(min_batch(*a)) - 0.5)
    assert not any(p.ok for p in parts) and "rounded up" in text(parts)
    fsdp_like_dp = parts_of("m05.batch", lambda pid, strategy, in_network, bw=None: min_batch(pid, "dp", in_network, bw))
    assert "in-network reduction halves only" in text(fsdp_like_dp)


# ---------------------------------------------------------------- measurement (fake dist, no ranks)
FAKE = {"kind": "fake", "sizes": [1 << 20, 4 << 20], "world_size": 4, "alpha_s": 0.001, "bytes_per_s": 5e8}


def observed(rounds, references=None, walls=None):
    """A measurement answer as the grader rescored it: the rounds and what the referee observed."""
    walls = [5.0] * len(rounds) if walls is None else walls
    references = [None] * len(rounds) if references is None else references
    return {"rounds": rounds, "observed": {"walls": walls, "reference": references}}


def score_fake(fn):
    return _measure_score(FAKE, observed([_measure_answer(fn, FAKE)]), m05.fake_busbw(FAKE))


def test_measure_reference_on_fake_dist():
    assert all(p.ok for p in score_fake(m05.allreduce_busbw))
    t = task("m05.measure")
    assert t.measurement and t.rounds >= 2 and t.reference is not None
    assert t.reference(FAKE, {"values": [1.0, 1.0]}) is None  # a fake all_reduce needs no reference


def algbw_only(dist, sizes, world_size):
    return [v * world_size / (2 * (world_size - 1)) for v in m05.allreduce_busbw(dist, sizes, world_size)]


def test_measure_algbw_is_caught():
    parts = score_fake(algbw_only)
    assert not any(p.ok for p in parts) and "algorithm bandwidth" in text(parts)


def test_measure_elements_for_bytes_is_caught():
    import torch

    def elements(dist, sizes, world_size):
        out = []
        for nbytes in sizes:
            x = torch.ones(nbytes)  # nbytes float32 elements: 4x too many bytes
            dist.all_reduce(x)
            start = __import__("time").perf_counter()
            for _ in range(3):
                dist.all_reduce(x)
            seconds = (__import__("time").perf_counter() - start) / 3
            out.append(nbytes / seconds / 1e9 * 2 * (world_size - 1) / world_size)
        return out

    parts = score_fake(elements)
    assert not any(p.ok for p in parts) and "elements versus bytes" in text(parts)



# ---------------------------------------------------------------- measurement on gloo ranks (answers by hand)
RANKS = {"kind": "ranks", "sizes": [1 << 20, 4 << 20], "world_size": 4}
GLOO = [0.8, 1.2]  # gloo's own busbw at each size, GB/s


def score_ranks(answer):
    return _measure_score(RANKS, answer, None)  # real ranks: no expected answer, the referee's gloo figures


def ranks_answer(mine, refs=None, walls=None, rounds=2):
    return observed([{"learner": list(mine)}] * rounds, [{"busbw": list(GLOO)}] * rounds if refs is None else refs,
                    walls)


def test_measure_on_ranks_in_band_of_gloo_passes():
    parts = score_ranks(ranks_answer([0.5, 1.0]))  # Python's overhead: a little below gloo
    assert len(parts) == 2 and all(p.ok for p in parts) and "measured in turns with yours" in parts[0].message.en


def test_measure_on_ranks_far_from_gloo_fails_by_size():
    parts = score_ranks(ranks_answer([0.5, 6.0]))  # 5x gloo at 4 MiB: algbw x bytes miscounted
    assert parts[0].ok and not parts[1].ok and "Faster than the hardware can be" in parts[1].message.en
    parts = score_ranks(ranks_answer([0.01, 1.0]))  # 1/80 of gloo at 1 MiB
    assert not parts[0].ok and parts[1].ok


def test_measure_on_ranks_the_median_round_decides():
    answer = observed([{"learner": [0.5, 1.0]}, {"learner": [50.0, 90.0]}, {"learner": [0.6, 1.1]}],
                      [{"busbw": GLOO}] * 3)
    assert all(p.ok for p in score_ranks(answer))


def test_measure_on_ranks_must_be_measured_while_the_referee_watches():
    one_call = sum(s / (b * 1e9 * 4 / 6) for s, b in zip(RANKS["sizes"], [0.5, 1.0]))  # 9.4 ms
    assert all(p.ok for p in score_ranks(ranks_answer([0.5, 1.0], walls=[one_call * 1.01] * 2)))
    parts = score_ranks(ranks_answer([0.5, 1.0], walls=[1.0, 1e-4]))  # a constant, returned at once
    assert not any(p.ok for p in parts) and "this was not measured" in text(parts)
    for walls in ([1.0], []):
        parts = score_ranks(ranks_answer([0.5, 1.0], walls=walls))
        assert not any(p.ok for p in parts) and "while the grader watched" in text(parts)
    parts = score_ranks({"rounds": [{"learner": [0.5, 1.0]}] * 2, "observed": None})
    assert not any(p.ok for p in parts)


def test_measure_on_ranks_without_gloo_figures():
    failed = [{"error": "RanksError: rank 1 hung"}] * 2
    parts = score_ranks(ranks_answer([0.5, 1.0], refs=failed))
    assert all(p.ok and p.weight == 0 for p in parts) and "could not run here" in parts[0].message.en
    parts = score_ranks(ranks_answer([0.5, 1.0], refs=[None, None]))
    assert not any(p.ok for p in parts)


@pytest.mark.parametrize("mine", ["ValueError: boom", [1.0], [1.0, -2.0], [1.0, "fast"]])
def test_measure_on_ranks_rejects_what_is_not_a_list_of_numbers(mine):
    answer = observed([{"learner": [0.5, 1.0]}, {"learner": mine}], [{"busbw": GLOO}] * 2)
    parts = score_ranks(answer)
    assert not any(p.ok for p in parts) and "Return a list of 2 numbers" in text(parts)
    assert not any(p.ok for p in score_ranks(observed([])))
    record = {"case": RANKS, "answer": observed([{"learner": [0.5, 1.0]}, {"learner": None}]), "error": None}
    assert not any(p.ok for p in score_records(task("m05.measure"), [record]))


def test_busbw_program_keeps_the_best_of_the_repeats_and_reports_errors(monkeypatch):
    import torch.distributed as dist
    monkeypatch.setattr(dist, "get_world_size", lambda group=None: 2)
    runs = iter([[1.0, 3.0], [2.0, 1.0]])
    assert m05_tasks.busbw_program(lambda d, sizes, n: next(runs), [1, 2], repeats=2) == {"learner": [2.0, 3.0]}

    def raises(d, sizes, n):
        raise ValueError("boom")
    assert m05_tasks.busbw_program(raises, [1, 2]) == {"learner": "ValueError: boom"}
    assert m05_tasks.busbw_program(lambda d, sizes, n: [1.0], [1, 2]) == {"learner": "[1.0]"}


def quick_busbw(dist, sizes, world_size):
    import time

    import torch
    out = []
    for nbytes in sizes:
        x = torch.ones(max(1, nbytes // 4))
        dist.all_reduce(x)
        start = time.perf_counter()
        dist.all_reduce(x)
        seconds = time.perf_counter() - start
        out.append(nbytes / seconds / 1e9 * 2 * (world_size - 1) / world_size)
    return out


def test_measure_programs_run_on_real_ranks():
    """Small and quick: one size, two ranks; the values themselves depend on the machine, so only their form."""
    mine = ranks.run(m05_tasks.busbw_program, [[4096], 1], [2], learner=quick_busbw, timeout_s=120)[0]
    assert len(mine) == 2 and all(len(r["learner"]) == 1 and r["learner"][0] > 0 for r in mine)
    gloo = ranks.run(ranks.best_busbw, [[4096], 1], [2], timeout_s=120)[0]
    assert len(gloo) == 2 and all(len(r) == 1 and r[0] > 0 for r in gloo)


# ---------------------------------------------------------------- ring all-reduce on gloo ranks
def test_ring_reference_full_marks(capfd):
    assert check("m05.ring", m05.ring_all_reduce, points=4) is None
    assert capfd.readouterr().err == ""


def cheating_ring(tensor):
    import torch.distributed as dist
    dist.all_reduce(tensor)
    return tensor


def half_ring(tensor):  # only the reduce-scatter: each rank holds one finished chunk
    import torch
    import torch.distributed as dist
    n, rank = dist.get_world_size(), dist.get_rank()
    chunks = list(torch.tensor_split(tensor.view(-1), n))
    for step in range(n - 1):
        recv_i = (rank - step - 1) % n
        buf = torch.empty_like(chunks[recv_i])
        req = dist.isend(chunks[(rank - step) % n].contiguous(), (rank + 1) % n)
        dist.recv(buf, (rank - 1) % n)
        req.wait()
        chunks[recv_i].add_(buf)
    return tensor


def test_ring_wrong_answers():
    case = {"world_sizes": [2], "tensors": [{"shape": [5], "dtype": "float32", "seed": 1},
                                            {"shape": [4], "dtype": "int64", "seed": 2}]}
    parts = _ring_score(case, _ring_answer(cheating_ring, case), None)
    assert not any(p.ok for p in parts) and "collective all_reduce" in text(parts)
    parts = _ring_score(case, _ring_answer(half_ring, case), None)
    assert not any(p.ok for p in parts) and "must equal dist.all_reduce" in text(parts)
