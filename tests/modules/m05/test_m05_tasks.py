"""Module 05 tasks: references get full marks, stubs fail, known mistakes are named, partial credit shows what is right."""
import pytest

from autograder import i18n, layout, ranks
from autograder.checks import CheckFailed, check, task
from autograder.checks.core import canonical, cases_for, collect, score_records
from autograder.checks.expected import want
from autograder.modules.m05_networking import tasks as m05_tasks
from autograder.modules.m05_networking.tasks import _measure_answer, _measure_score, _ring_answer, _ring_score
from course_answers import m05_networking as m05


@pytest.fixture(autouse=True)
def english(monkeypatch):
    monkeypatch.setenv("COURSE_GRADING_SEED", "11")
    monkeypatch.setattr(i18n, "_chosen", "en")  # the language before is restored, not "both" (others read theirs)


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


def checked(task_id, fn):
    """The visible check's parts, as the check cell scores them (an error in a case is that case's part)."""
    t = task(task_id)
    return score_records(t, collect(t, fn, cases_for(t, False, 0), task_id))


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
    assert named(parts_of("m05.bucket", m05._bucket_round)) == {"round_down"}  # round() is short only where it rounds down
    assert "alpha_once" in named(parts_of("m05.bucket", m05._bucket_alpha_once))
    assert named(parts_of("m05.bucket", m05._bucket_ring_steps)) == {"ring_steps"}  # 2(n-1) where n belongs


def test_bucket_shows_an_int_in_full_and_a_whole_float_as_a_float():
    def truncated(n, alpha_s, busbw_gbs, nbytes, target):
        out = m05.bucket(n, alpha_s, busbw_gbs, nbytes, target)
        return {**out, "min_bytes": int(target / (1 - target) * n * alpha_s * busbw_gbs * 1e9)}

    shown = " ".join(p.message.en for p in parts_of("m05.bucket", truncated) if not p.ok)
    assert "found 42179999" in shown and "e+07" not in shown

    def as_float(n, alpha_s, busbw_gbs, nbytes, target):
        out = m05.bucket(n, alpha_s, busbw_gbs, nbytes, target)
        return {**out, "min_bytes": float(out["min_bytes"])}

    shown = " ".join(p.message.en for p in parts_of("m05.bucket", as_float) if not p.ok)
    assert "found 72000000.0" in shown and "return the byte count as an int" in shown


def test_read_nccl_partial_credit_and_named_mistakes(capsys):
    earned = check("m05.read_nccl", m05._read_avg_line, points=3)
    shown = capsys.readouterr().out
    assert 0 < earned < 3 and "✅ ranks" in shown and "Avg bus bandwidth" in shown
    assert named(parts_of("m05.read_nccl", m05._read_allreduce_factor)) == {"allreduce_factor"}
    assert named(parts_of("m05.read_nccl", m05._read_time_algbw)) == {"time_with_algbw"}


@pytest.mark.parametrize("name", ["first_row", "log_ranks", "gib"])
def test_read_nccl_names_what_passed_or_went_unnamed_before(name):
    assert named(checked("m05.read_nccl", m05.MISTAKES["read_nccl"][name])) == {name}


def test_read_nccl_case_text_is_in_the_language_shown_and_labels_name_the_collective():
    i18n.set_language("ko")
    shown = " ".join(p.message.ko for p in parts_of("m05.read_nccl", m05._read_gib) if not p.ok)
    assert "랭크 16개" in shown and " on " not in shown
    collectives = {case["collective"] for case in task("m05.read_nccl").visible()}
    assert collectives <= {"all_reduce", "all_gather", "reduce_scatter", "all_to_all"}


def test_messages_never_run_a_value_into_the_hint_after_it():
    parts = parts_of("m05.links", m05._links_bits)
    text = next(p.message for p in parts if not p.ok and p.mistake == "bits")
    assert "found 400. Off by exactly 8x" in text.en or ". Off by exactly 8x" in text.en
    assert "400 정확히" not in text.ko and ". " in text.ko


def test_plan_names_its_mistakes_and_expects_none_when_nothing_meets_the_target():
    t = task("m05.plan")
    assert any(want("m05.plan", case)["answer"] is None for case in canonical(t.visible()))
    wrong = {"system": "DGX H100", "gpus": 3, "step_s": 9.0}
    assert named(parts_of("m05.plan", lambda job, systems: wrong)) == set()  # wrong, but not a known mistake
    assert "compute_only" in named(parts_of("m05.plan", m05.MISTAKES["plan"]["compute_only"]))
    assert named(parts_of("m05.plan", m05.MISTAKES["plan"]["tie_first"])) == {"tie_first"}  # passed before
    assert named(parts_of("m05.plan", m05.MISTAKES["plan"]["one_nic"])) == {"one_nic"}  # its None was unnamed


def test_superpod_bits_left_in_the_network_levels_is_named_as_such():
    parts = parts_of("m05.superpod", m05.MISTAKES["superpod"]["bits_levels"])
    assert named(parts) == {"bits_levels"}
    assert "Off by exactly 8x" not in " ".join(p.message.en for p in parts)


def test_superpod_cases_have_distinct_names():
    shown = [p.message.en.split(":")[0] for p in parts_of("m05.superpod", m05.superpod)]
    assert len(set(shown)) == len(task("m05.superpod").visible())


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


def test_first_call_dist_on_its_own_clock_takes_no_time_and_counts_exactly():
    import time

    import torch
    began = time.perf_counter()
    with m05_tasks.FirstCallDist(4, 0.001, 5e8, setup_s=0.2) as fake:
        start = time.perf_counter()
        fake.all_reduce(torch.ones(1024))  # the first call of a size pays the setup
        fake.all_reduce(torch.ones(1024))
        seen = time.perf_counter() - start
    assert time.perf_counter() - began < 0.2  # nothing slept
    assert 0.2 + 2 * (0.001 + 4096 / 5e8) <= seen < 0.2 + 2 * (0.001 + 4096 / 5e8) + 0.05
    assert time.perf_counter is not None and abs(time.perf_counter() - time.perf_counter()) < 0.01  # restored


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


def timed(dist, sizes, world_size, *, warmup=2, elements=lambda nbytes: nbytes // 4, slowest=True, reps=5):
    """A measurement with one thing to change at a time."""
    import time

    import torch
    out = []
    for nbytes in sizes:
        x = torch.ones(elements(nbytes))
        for _ in range(warmup):
            dist.all_reduce(x)
        start = time.perf_counter()
        for _ in range(reps):
            dist.all_reduce(x)
        elapsed = torch.tensor([time.perf_counter() - start])
        if slowest:
            dist.all_reduce(elapsed, op=dist.ReduceOp.MAX)
        out.append(ranks.bus_bandwidth("all_reduce", nbytes, float(elapsed) / reps, world_size))
    return out


def no_warmup(dist, sizes, world_size):
    return timed(dist, sizes, world_size, warmup=0)


def elements(dist, sizes, world_size):
    return timed(dist, sizes, world_size, elements=lambda nbytes: nbytes)  # 4x too many bytes


def not_slowest(dist, sizes, world_size):
    return timed(dist, sizes, world_size, slowest=False)  # rank 0's own time: passed before


def suspect_fixed_but_no_warmup_nor_slowest(dist, sizes, world_size):
    return timed(dist, sizes, world_size, warmup=0, slowest=False)  # was named "algbw" at 4 MiB


def through_the_course(dist, sizes, world_size):
    return [row["busbw_gbs"] for row in ranks.measure_allreduce(dist, sizes, 0.05)]  # passed before


def test_measure_one_thing_right_passes():
    assert all(p.ok for p in score_fake(timed))


@pytest.mark.parametrize("fn,mistake", [(algbw_only, "algbw"), (no_warmup, "no_warmup"), (elements, "elements"),
                                        (not_slowest, "not_slowest"),
                                        (suspect_fixed_but_no_warmup_nor_slowest, "no_warmup"),
                                        (through_the_course, "course_measurement")])
def test_measure_mistakes_are_named_on_the_fake(fn, mistake):
    parts = score_fake(fn)
    assert not any(p.ok for p in parts) and named(parts) == {mistake}


def test_measure_elements_mistake_fails_even_where_two_errors_cancel():
    def elements_rank0(dist, sizes, world_size):  # 4x the bytes, and rank 0's time 3x short: near the right value
        return timed(dist, sizes, world_size, elements=lambda nbytes: nbytes, slowest=False)
    parts = score_fake(elements_rank0)
    assert not any(p.ok for p in parts) and named(parts) == {"elements"}


def test_measure_fake_check_is_quick_whatever_the_load():
    import time
    start = time.perf_counter()
    score_fake(m05.allreduce_busbw)
    assert time.perf_counter() - start < 5.0  # it sleeps nothing: the fake's clock moves instead


def test_measure_a_crash_on_the_fake_keeps_no_more_than_a_wrong_factor():
    """Learners met it: an answer that raised on the fake dist kept 2/3, a wrong factor 1.5/3 (the crash was one part
    of weight 1 beside the ranks' case of weight 2)."""
    from autograder.checks.core import _central, fraction

    def crashes(dist, sizes, world_size):
        raise AttributeError("'FirstCallDist' object has no attribute 'monitored_barrier'")

    in_band = score_ranks(ranks_answer([0.8, 1.2]))  # the ranks' case passed for both
    crash = score_fake(crashes)
    assert not any(p.ok for p in crash) and "monitored_barrier" in crash[0].message.en
    t = task("m05.measure")
    kept = {name: fraction(_central(t, parts + in_band)) for name, parts in (("crash", crash),
                                                                            ("algbw", score_fake(algbw_only)))}
    assert kept["crash"] <= kept["algbw"] + 1e-9 and kept["algbw"] <= 1 / 3 + 1e-9


def test_measure_rank_counts_named_with_the_counts_not_a_send_recv_hint():
    parts = _measure_score(RANKS, m05.MISTAKES["measure"]["rank_counts"].answer, None)
    text = " ".join(p.message.en for p in parts)
    assert named(parts) == {"rank_counts"} and "41, 40, 40, 40" in text and "send has a matching recv" not in text


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
    assert len(parts) == 2 and all(p.ok for p in parts)
    text = parts[0].message.en
    assert text.count("in turns") == 1 and "noisy" not in text and text.count("(") <= 2


def test_measure_on_ranks_far_from_gloo_fails_by_size():
    """The real ranks' band is wide (accuracy is graded on the fake): a number far beyond it, such as a launch timed
    without waiting or MB/s for GB/s, still fails, size by size."""
    from autograder.expectations import rules
    band = rules()["side_by_side"]["allreduce"]
    parts = score_ranks(ranks_answer([0.5, 3 * band["hi"] * GLOO[1]]))
    assert parts[0].ok and not parts[1].ok and "Faster than the hardware can be" in parts[1].message.en
    parts = score_ranks(ranks_answer([band["lo"] / 3 * GLOO[0], 1.0]))
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


def test_busbw_program_reports_values_calls_and_errors(monkeypatch):
    import torch.distributed as dist
    monkeypatch.setattr(dist, "get_world_size", lambda group=None: 2)
    found = m05_tasks.busbw_program(lambda d, sizes, n: [2.0, 3.0], [1, 2])
    assert found["learner"] == [2.0, 3.0] and found["calls"] == 0 and found["course_calls"] == 0

    def raises(d, sizes, n):
        raise ValueError("boom")
    assert m05_tasks.busbw_program(raises, [1, 2])["learner"] == "ValueError: boom"
    assert m05_tasks.busbw_program(lambda d, sizes, n: [1.0], [1, 2])["learner"] == "[1.0]"


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
    mine = ranks.run(m05_tasks.busbw_program, [[4096]], [2], learner=quick_busbw, timeout_s=120)[0]
    assert len(mine) == 2 and all(len(r["learner"]) == 1 and r["learner"][0] > 0 for r in mine)
    gloo = ranks.run(ranks.allreduce_rows, [[4096], 0.05], [2], timeout_s=120)[0]
    assert len(gloo) == 2 and all(len(r) == 1 and r[0]["busbw_gbs"] > 0 for r in gloo)


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


def blocking_ring(tensor):  # every rank sends first with a blocking send: the 92 s deadlock of the trial
    import torch
    import torch.distributed as dist
    n, rank = dist.get_world_size(), dist.get_rank()
    chunks = list(torch.tensor_split(tensor.view(-1), n))
    for step in range(n - 1):
        dist.send(chunks[(rank - step) % n].contiguous(), (rank + 1) % n)
        buf = torch.empty_like(chunks[(rank - step - 1) % n])
        dist.recv(buf, (rank - 1) % n)
        chunks[(rank - step - 1) % n].add_(buf)
    return tensor


def test_ring_deadlock_is_named_after_a_short_timeout_and_later_cases_start_no_ranks(monkeypatch):
    assert m05_tasks.RING_TIMEOUT_S <= 10  # gloo's own default is 30 min; the trial waited 2 x 45 s
    big = {"world_sizes": [2], "tensors": [{"shape": [4096 * 1024], "dtype": "float32", "seed": 1}]}
    parts = _ring_score(big, _ring_answer(blocking_ring, big), None)
    assert named(parts) == {"deadlock"}, [p.message.en for p in parts]

    def no_ranks(*args, **kwargs):
        raise AssertionError("a later case of a deadlocked answer started ranks")
    monkeypatch.setattr(ranks, "run", no_ranks)
    later = {"world_sizes": [3], "tensors": [{"shape": [5], "dtype": "int32", "seed": 2}]}
    parts = _ring_score(later, _ring_answer(blocking_ring, later), None)
    assert not any(p.ok for p in parts) and "deadlocked and timed out in an earlier case" in parts[0].message.en


def skip_empty_ring(tensor):  # the trial's ring: it skips the send of an empty chunk, its neighbour still receives
    import torch
    import torch.distributed as dist
    n, rank = dist.get_world_size(), dist.get_rank()
    chunks = list(torch.tensor_split(tensor.view(-1), n))
    for phase in range(2):
        for step in range(n - 1):
            send_i, recv_i = (rank - step + phase) % n, (rank - step - 1 + phase) % n
            req = dist.isend(chunks[send_i].contiguous(), (rank + 1) % n) if chunks[send_i].numel() else None
            buf = torch.empty_like(chunks[recv_i])
            dist.recv(buf, (rank - 1) % n)
            if req:
                req.wait()
            chunks[recv_i].add_(buf) if phase == 0 else chunks[recv_i].copy_(buf)
    return tensor


def test_ring_a_skipped_send_names_the_rank_that_waited_not_blocking_sends():
    """Learners met it: a ring that skips the send of an empty chunk was told about blocking sends it does not use,
    with the whole case instead of the tensor. The verdict names the tensor, the rank that waited, the step."""
    case = {"world_sizes": [4], "tensors": [{"shape": [3], "dtype": "float32", "seed": 1}]}
    parts = _ring_score(case, _ring_answer(skip_empty_ring, case), None)
    text = " ".join(p.message.en for p in parts)
    assert named(parts) == {"unmatched"} and "blocking send" not in text and "world_size=4, float32[3]" in text
    assert "Rank 0 waited at step 1 for message 1 from rank 3 (0 element(s)); rank 3 sent 1 element(s)" in text


def own_clock(dist, sizes, world_size):  # right but for the count: each rank loops until its own clock says 0.2 s
    import time

    import torch
    out = []
    for nbytes in sizes:
        x = torch.ones(nbytes // 4)
        for _ in range(2):
            dist.all_reduce(x)
        start, calls = time.perf_counter(), 0
        while time.perf_counter() - start < 0.2:
            dist.all_reduce(x)
            calls += 1
        elapsed = torch.tensor([time.perf_counter() - start])
        dist.all_reduce(elapsed, op=dist.ReduceOp.MAX)
        out.append(ranks.bus_bandwidth("all_reduce", nbytes, float(elapsed) / calls, world_size))
    return out


def test_measure_rank_counts_is_named_on_real_ranks_without_a_send_recv_hint():
    answer = observed([_measure_answer(own_clock, RANKS)])
    parts = _measure_score(RANKS, answer, None)
    text = " ".join(p.message.en for p in parts)
    assert named(parts) == {"rank_counts"} and "send has a matching recv" not in text
    assert "랭크" not in text  # the English verdict carries no Korean error text


def suspect(dist, sizes, world_size):  # the exercise's given benchmark
    import time

    import torch
    results = []
    for nbytes in sizes:
        x = torch.ones(nbytes, dtype=torch.float32)
        start, calls = time.perf_counter(), 0
        while time.perf_counter() - start < 0.2:
            dist.all_reduce(x)
            calls += 1
        results.append(nbytes / ((time.perf_counter() - start) / calls) / 1e9)
    return results


def test_the_given_benchmark_is_far_off_on_the_fake_and_named():
    parts = score_fake(suspect)
    assert not any(p.ok for p in parts) and named(parts) == {"elements"}


def test_exercise_links_name_their_lesson_section_with_its_number():
    import re
    from pathlib import Path

    import nbformat
    nb = nbformat.read(layout.exercise("05_networking", "solutions", Path(__file__).resolve().parents[3]), as_version=4)
    links = [m for c in nb.cells if c.cell_type == "markdown"
             for m in re.findall(r"\[(?:수업|Lesson): ([^\]]+)\]", c.source)]
    assert len(links) == 14 and all(re.match(r"\d\. ", text) for text in links)


def shifted_gather_ring(tensor):  # the all-gather copies each finished chunk into the wrong slot
    import torch
    import torch.distributed as dist
    n, rank = dist.get_world_size(), dist.get_rank()
    chunks = list(torch.tensor_split(tensor.view(-1), n))
    right, left = (rank + 1) % n, (rank - 1) % n

    def pass_along(send_i, recv_i):
        incoming = torch.empty_like(chunks[recv_i])
        request = dist.isend(chunks[send_i].contiguous(), right)
        dist.recv(incoming, left)
        request.wait()
        return incoming

    for step in range(n - 1):
        recv_i = (rank - step - 1) % n
        chunks[recv_i].add_(pass_along((rank - step) % n, recv_i))
    for step in range(n - 1):
        recv_i = (rank - step - 1) % n  # should be (rank - step) % n
        chunks[recv_i].copy_(pass_along((rank + 1 - step) % n, recv_i))
    return tensor


def test_ring_wrong_chunks_are_pointed_out():
    case = {"world_sizes": [4], "tensors": [{"shape": [8], "dtype": "int64", "seed": 1}]}
    parts = _ring_score(case, _ring_answer(shifted_gather_ring, case), None)
    assert not parts[0].ok and "chunk(s)" in parts[0].message.en and "widget" in parts[0].message.en


@pytest.mark.parametrize("name", ["bits_levels", "alltoall_like_allreduce"])
def test_superpod_verdict_counts_the_same_items_whatever_the_answer(name, capsys):
    check("m05.superpod", m05.MISTAKES["superpod"][name], points=3)
    shown = capsys.readouterr().out
    assert f"of {2 * len(task('m05.superpod').visible())} items" in shown  # core._central's note (⚠️) is no item


def forever(dist, sizes, world_size):  # a measurement that never ends
    import torch
    x = torch.ones(1024)
    while True:
        dist.all_reduce(x)


def test_a_measurement_that_never_ends_is_stopped_on_the_fake_and_on_the_ranks():
    parts = score_fake(forever)  # the fake's TimeoutError, scored as the fake's case with the hint
    assert not any(p.ok for p in parts) and "TimeoutError" in parts[0].message.en \
        and "took too long" in parts[0].message.en
    with pytest.raises((ranks.RanksError, TimeoutError)):
        _measure_answer(forever, RANKS)  # the quick call with no sizes is stopped too, then the ranks' alarm


def stretched(dist, sizes, world_size):
    """An honest measurement on a machine so busy that the round's wall time passes every limit: it waits (no
    processor time) longer than MEASURE_LIMIT_S first, as load makes a process wait for its turn."""
    import time

    import torch
    if sizes:  # not in the quick call with no sizes
        time.sleep(m05_tasks.MEASURE_LIMIT_S + 1.0)
    out = []
    for nbytes in sizes:
        x = torch.ones(nbytes // 4)
        dist.all_reduce(x)
        start = time.perf_counter()
        for _ in range(3):
            dist.all_reduce(x)
        elapsed = torch.tensor([time.perf_counter() - start])
        dist.all_reduce(elapsed, op=dist.ReduceOp.MAX)
        out.append(ranks.bus_bandwidth("all_reduce", nbytes, float(elapsed) / 3, world_size))
    return out


def test_a_round_the_load_stretches_is_not_stopped_only_processor_time_counts():
    """Load stretches wall time, never processor time: a round longer than every limit in wall time, but short in
    processor time, gives its numbers (before, the 3 s wall limit raised TimeoutError on it)."""
    answer = _measure_answer(stretched, RANKS)
    assert all(isinstance(v, float) and v > 0 for v in answer["learner"]), answer
    assert answer["seconds"] > m05_tasks.MEASURE_LIMIT_S > answer["cpu_seconds"]
