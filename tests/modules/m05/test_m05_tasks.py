"""Module 05 tasks: references get full marks, stubs fail, known mistakes are named, partial credit shows what is right."""
import pytest

from autograder import i18n, ranks
from autograder.checks import CheckFailed, check, task
from autograder.checks.core import canonical, score_records
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


def stub(*args, **kwargs):
    raise NotImplementedError()


PURE = [("m05.links", m05.link_gbs), ("m05.superpod", m05.superpod), ("m05.bucket", m05.bucket),
        ("m05.read_nccl", m05.read_nccl), ("m05.plan", m05.plan)]


@pytest.mark.parametrize("task_id,fn", PURE)
def test_reference_gets_full_marks(task_id, fn, capsys):
    assert check(task_id, fn, points=2, hidden=True) is None
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("task_id", [t for t, _ in PURE] + ["m05.ring", "m05.measure"])
def test_stub_fails(task_id):
    with pytest.raises(CheckFailed, match="Not implemented"):
        check(task_id, stub, points=2)


def test_the_exercise_climbs_and_is_mostly_transfer():
    names = ["links", "superpod", "bucket", "read_nccl", "ring", "measure", "plan"]
    tasks = [task(f"m05.{name}") for name in names]
    assert tasks[0].level == "warm-up" and tasks[-1].level == "stretch"
    assert sum(t.kind == "transfer" for t in tasks) * 2 >= len(tasks)


def parts_of(task_id, fn, cases=None):
    t = task(task_id)
    parts = []
    for case in canonical(t.visible() if cases is None else cases):
        scored = t.score(case, canonical(t.answer(fn, case)), want(task_id, case))
        parts.extend(scored if isinstance(scored, list) else [scored])
    return parts


def named(parts) -> set:
    return {p.mistake for p in parts if not p.ok and p.mistake}


def test_hard_coded_answers_fail_hidden_cases():
    t = task("m05.links")
    table = {str(case): m05.link_gbs(case["link"], case["count"], case["bidirectional"]) for case in t.visible()}

    def memorised(link, count, bidirectional=False):
        return table[str({"link": link, "count": count, "bidirectional": bidirectional})]

    assert all(p.ok for p in parts_of("m05.links", memorised))
    result = check("m05.links", memorised, points=2, hidden=True)
    assert result is not None and result < 2  # partial at most: hidden cases raise KeyError


def test_links_visible_case_has_an_encoding_the_lesson_never_showed():
    encodings = {case["link"].get("encoding") for case in task("m05.links").visible()}
    assert encodings - {"8b/10b", "128b/130b", "1b/1b", None}
    parts = parts_of("m05.links", m05._links_table)
    assert named(parts) == {"encoding_table"} and "128b/132b" in " ".join(p.message.en for p in parts)


def test_superpod_partial_credit_lists_the_right_collective(capsys):
    def allreduce_only(levels):
        out = m05.superpod(levels)
        return {**out, "alltoall_gbs": out["allreduce_gbs"], "alltoall_level": out["allreduce_level"]}

    earned = check("m05.superpod", allreduce_only, points=3)
    shown = capsys.readouterr().out
    assert 0 < earned < 3 and "✅ all-reduce" in shown and "❌" in shown
    assert named(parts_of("m05.superpod", allreduce_only)) >= {"alltoall_like_allreduce"}


def test_superpod_not_a_dict():
    with pytest.raises(CheckFailed, match="Return a dict"):
        check("m05.superpod", lambda levels: [450, 50, 50], points=3)


def test_bucket_accepts_either_size_at_an_exact_boundary():
    case = task("m05.bucket").visible()[0]
    assert want("m05.bucket", case)["answer"]["min_bytes_ok"] == [72_000_000, 72_000_001]
    for size in (72_000_000, 72_000_001):
        answer = {"fraction": m05.bucket(*case.values())["fraction"], "min_bytes": size}
        assert all(p.ok for p in task("m05.bucket").score(case, answer, want("m05.bucket", case)))


def test_bucket_names_rounding_and_latency_mistakes():
    assert named(parts_of("m05.bucket", m05._bucket_floor)) == {"round_down"}
    assert "alpha_once" in named(parts_of("m05.bucket", m05._bucket_alpha_once))


def test_read_nccl_partial_credit_and_named_mistakes(capsys):
    earned = check("m05.read_nccl", m05._read_avg_line, points=3)
    shown = capsys.readouterr().out
    assert 0 < earned < 3 and "✅ ranks" in shown and "Avg bus bandwidth" in shown
    assert named(parts_of("m05.read_nccl", m05._read_allreduce_factor)) == {"allreduce_factor"}
    assert named(parts_of("m05.read_nccl", m05._read_time_algbw)) == {"time_with_algbw"}


def test_plan_names_its_mistakes_and_expects_none_when_nothing_meets_the_target():
    t = task("m05.plan")
    assert any(want("m05.plan", case)["answer"] is None for case in canonical(t.visible()))
    assert named(parts_of("m05.plan", lambda job, systems: None)) == set()  # wrong, but not a known mistake
    assert "compute_only" in named(parts_of("m05.plan", m05.MISTAKES["plan"]["compute_only"]))


# ---------------------------------------------------------------- measurement (fake dist, no ranks)
FAKE = canonical(task("m05.measure").visible())[0]


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


def test_first_call_dist_charges_setup_once_per_size():
    import time

    import torch
    fake = m05_tasks.FirstCallDist(2, 0.0, 1e12, setup_s=0.05)
    x = torch.ones(4)
    start = time.perf_counter()
    fake.all_reduce(x)
    first = time.perf_counter() - start
    start = time.perf_counter()
    fake.all_reduce(x)
    assert time.perf_counter() - start < first / 2 and first >= 0.05 and fake.sizes == [16, 16]


def algbw_only(dist, sizes, world_size):
    return [v * world_size / (2 * (world_size - 1)) for v in m05.allreduce_busbw(dist, sizes, world_size)]


def no_warmup(dist, sizes, world_size):
    import time

    import torch
    out = []
    for nbytes in sizes:
        x = torch.ones(nbytes // 4)
        start = time.perf_counter()
        for _ in range(5):
            dist.all_reduce(x)
        out.append(ranks.bus_bandwidth("all_reduce", nbytes, (time.perf_counter() - start) / 5, world_size))
    return out


def elements(dist, sizes, world_size):
    import time

    import torch
    out = []
    for nbytes in sizes:
        x = torch.ones(nbytes)  # nbytes float32 elements: 4x too many bytes
        dist.all_reduce(x)
        start = time.perf_counter()
        for _ in range(3):
            dist.all_reduce(x)
        out.append(ranks.bus_bandwidth("all_reduce", nbytes, (time.perf_counter() - start) / 3, world_size))
    return out


@pytest.mark.parametrize("fn,mistake", [(algbw_only, "algbw"), (no_warmup, "no_warmup"), (elements, "elements")])
def test_measure_mistakes_are_named_on_the_fake(fn, mistake):
    parts = score_fake(fn)
    assert not any(p.ok for p in parts) and named(parts) == {mistake}


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
    assert not any(p.ok for p in parts) and "this was not measured" in " ".join(p.message.en for p in parts)
    for walls in ([1.0], []):
        parts = score_ranks(ranks_answer([0.5, 1.0], walls=walls))
        assert not any(p.ok for p in parts) and "while the grader watched" in " ".join(p.message.en for p in parts)
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
    assert not any(p.ok for p in parts) and "Return a list of 2 numbers" in " ".join(p.message.en for p in parts)
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


def mean_ring(tensor):  # the right sum, then divided by the rank count as DDP would
    import torch.distributed as dist
    from course_answers.m05_networking import ring_all_reduce
    ring_all_reduce(tensor)
    tensor.div_(dist.get_world_size())
    return tensor


def copy_ring(tensor):  # the right values in a new tensor; the one given is left as it was
    from course_answers.m05_networking import ring_all_reduce
    return ring_all_reduce(tensor.clone())


@pytest.mark.parametrize("fn,mistake", [(cheating_ring, "collective"), (half_ring, "reduce_scatter_only"),
                                        (mean_ring, "averaged"), (copy_ring, "not_in_place")])
def test_ring_mistakes_are_named_from_what_the_ranks_recorded(fn, mistake):
    case = {"world_sizes": [4], "tensors": [{"shape": [9], "dtype": "float32", "seed": 1},
                                            {"shape": [8], "dtype": "float64", "seed": 2}]}
    parts = _ring_score(case, _ring_answer(fn, case), None)
    assert not any(p.ok for p in parts) and named(parts) == {mistake}
