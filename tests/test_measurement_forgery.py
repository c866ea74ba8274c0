"""Every measurement task: numbers that were never measured earn nothing (issue 19).

For each timing task of modules 01-06 a submission forges a perfect record: plausible
values, references that agree, long walls. The grader scores what *its* referee saw
instead: the round answers the kernel sent while its clock ran and how long each round
took. A function that returns constants spends no time, so the grader's walls are tiny,
and the task is worth 0 however plausible the numbers. Built by hand: nothing here
depends on the load of the machine.
"""
import json

import pytest

from autograder.checks import task
from autograder.checks.core import RECORD_MIME, cases_for
from autograder.grading.records import rescore

SEED = 11
GB = 1e9


def _sweep(case):
    from autograder.modules.m03_memory_hierarchy import tasks as m03
    device, llc, sizes = m03._sweep_plan(case)
    return {"device": device, "llc_bytes": llc, "sizes": sizes, "gbs": [10.0] * len(sizes)}, {"gbs": [10.0] * len(sizes)}


def _matmul(case):
    n, seconds = 1024.0, 0.01
    tflops = 2 * n**3 / seconds / 1e12
    return {"n": n, "seconds": seconds, "tflops": tflops, **case}, {"tflops": tflops, "n": 1024}


def _mfu(case):
    from course_answers.m06_choosing_hardware import step_flops
    flops, seconds, peak = step_flops(case["dims"], case["batch"], case["frozen"]), 0.01, 0.3
    return ({"flops_per_step": flops, "seconds_per_step": seconds, "peak_tflops": peak,
             "utilization": flops / seconds / (peak * 1e12)}, {"seconds": seconds})


def _speedup(case):
    return {"cpu_s": 0.004, "accel_s": 0.004, "accel_device": "cpu"}, {"cpu_s": 0.004, "accel_s": 0.004}


def _busbw(case):
    return {"learner": [0.5] * len(case["sizes"])}, {"busbw": [0.5] * len(case["sizes"])}


def _kernel_copy(case):
    # the simulator's record of a right timing function on the virtual clock: the exact answer, plausible counts
    copy = {"right": True, "error": None, "oob": False, "reads": 1000, "writes": 1000, "sectors": 4.0}
    virtual = {"bandwidth_gbs": case["sim_gbs"], "launches": 15, "implicit": 0, "transfers": 1, "synchronizes": 29,
               "compiles": 1, "moved": 8 * case["sim_n"]}
    return ({"device": "cpu", "simulated": True, "n": case["sim_n"], "gbs": case["sim_gbs"], "copy": copy,
             "virtual": virtual}, {"simulated": True})


def _decode(case):
    seconds, tokens = 0.01, [[1] * case["new_tokens"]] * case["batch"]
    rate = case["batch"] * case["new_tokens"] / seconds
    seen = ({"virtual": {"spans": [[seconds, "time_fn:0"]], "timed": {"prefill": 0, "step": case["new_tokens"],
                                                                      "forward_full": 0},
                         "unsynchronized": 0, "synchronizes": 1}} if case["kind"] == "virtual"
            else {"calls": {"prefill": 1, "step": case["new_tokens"], "forward_full": 0}})
    return ({"tokens": tokens, "seconds": seconds, "tokens_per_s": rate, "expected_tokens": tokens, **seen},
            {"seconds": seconds, "tokens_per_s": rate})


# task id -> (which visible case, the forged round answer and the reference that agrees with it)
FORGERIES = {
    "m01.speedup": (0, _speedup),
    "m02.measure": (0, _matmul),
    "m03.sweep": (0, _sweep),
    "m05.measure": (1, _busbw),  # the real ranks; the fake-dist case is graded against the fake's own clock
    "m06.mfu": (0, _mfu),
    "m07.copy": (0, _kernel_copy),
    "m08.decode": (0, _decode),
}


def test_every_timing_task_is_covered():
    from autograder import layout, modules
    timing = {f"{m.short}.{name}" for m in layout.modules(part="exercise")
              for name, t in modules.tasks(m.short).items() if t.measurement}
    assert timing == set(FORGERIES)


def _payload(task_id: str, forged):
    t = task(task_id)
    cases = cases_for(t, False, SEED)
    records = []
    for i, case in enumerate(cases):
        answer, reference = forged(case)
        records.append({"case": case, "error": None,
                        "answer": {"rounds": [answer] * t.rounds,
                                   "observed": {"walls": [30.0] * t.rounds, "reference": [reference] * t.rounds}}})
    return t, cases, {"task": task_id, "points": 3, "hidden": False, "seed": SEED, "records": records}


def _observed(t, task_id, cases, forged, wall):
    """What the grader's referee keeps when the kernel sends these rounds and each takes ``wall`` seconds."""
    seen = {}
    for i, case in enumerate(cases):
        answer, reference = forged(case)
        seen[f"{task_id}|{i}"] = {"rounds": [answer] * t.rounds, "walls": [wall] * t.rounds,
                                  "reference": [reference] * t.rounds}
    return seen


@pytest.mark.parametrize("task_id", sorted(FORGERIES))
def test_constants_and_forged_records_earn_nothing(task_id):
    _, forged = FORGERIES[task_id]
    t, cases, payload = _payload(task_id, forged)
    source = f'check("{task_id}", fn, points=3)'
    out = [{"output_type": "display_data", "data": {RECORD_MIME: json.dumps(payload)}, "metadata": {}}]
    # the forged record alone: the grader watched nothing
    assert rescore(source, out, SEED, 3, {}).earned == 0
    # the same plausible numbers, sent while the grader's clock ran, but returned at once (constants)
    instant = _observed(t, task_id, cases, forged, wall=1e-5)
    verdict = rescore(source, out, SEED, 3, instant)
    assert verdict.earned == 0, verdict.text
    text = " ".join(verdict.text.split())  # verdicts are wrapped to fit nbgrader validate
    assert "not measured" in text or "measured while the grader watched" in text, text


# ---------------------------------------------------------------- simulated devices held by the grader (issue 31)
DEBUG_SOURCE = 'check("m03.debug", copy_bandwidth_gbs, points=3, hidden=True)'
TIMER_SOURCE = 'check("m01.timer", time_call, points=3, hidden=True)'


@pytest.fixture
def grader(monkeypatch):
    """``grader(source)``: the grader's referee serving a cell with that source; the kernel (this process) reaches
    it by its socket."""
    import shutil
    import tempfile
    from contextlib import ExitStack
    from pathlib import Path

    from autograder.checks import referee
    from autograder.grading.referee import RefereeServer
    run = Path(tempfile.mkdtemp(prefix="dev-"))  # short: Unix socket paths are limited to ~100 bytes
    monkeypatch.setenv(referee.SOCKET_ENV, str(run / "referee.sock"))
    with ExitStack() as stack:
        yield lambda source: stack.enter_context(RefereeServer(run / "referee.sock", SEED, lambda: ("g", source)))
    shutil.rmtree(run, ignore_errors=True)


def _graded(server, source, learner, forge=None):
    """(the verdict, the records) for ``learner`` run as the kernel runs it while grading, then rescored by the
    grader (where no referee socket is set)."""
    import os

    from autograder.checks import referee
    from autograder.checks.core import collect
    task_id = source.split('"')[1]
    t = task(task_id)
    recs = collect(t, learner, cases_for(t, True, SEED), task_id)
    recs = [forge(r) for r in recs] if forge else recs
    payload = {"task": task_id, "points": 3, "hidden": True, "seed": SEED, "records": recs}
    out = [{"output_type": "display_data", "data": {RECORD_MIME: json.dumps(payload)}, "metadata": {}}]
    socket_path = os.environ.pop(referee.SOCKET_ENV)
    try:
        return rescore(source, out, SEED, 3, server.observed().get("g", {})), recs
    finally:
        os.environ[referee.SOCKET_ENV] = socket_path


def test_the_grader_holds_the_simulated_device_and_draws_its_speeds(grader):
    from course_answers.m03_memory_hierarchy import copy_bandwidth_gbs
    server = grader(DEBUG_SOURCE)
    verdict, recs = _graded(server, DEBUG_SOURCE, copy_bandwidth_gbs)
    assert verdict.earned == 3, verdict.text
    assert all(r["answer"]["observed"] is None for r in recs)  # the kernel saw no speed and no report
    seen = server.observed()["g"]
    for i, r in enumerate(recs):
        drawn, given = seen[f"m03.debug|{i}"]["device"]["hbm_gbs"], r["case"]["device"]["hbm_gbs"]
        assert 0.74 * given <= drawn <= 0.96 * given  # drawn for this grading: the case's figure is 5 % off or more
        assert r["answer"]["gbs"] == pytest.approx(drawn, rel=0.02)


def test_the_device_speeds_cannot_be_read_in_the_kernel(grader):
    server = grader(DEBUG_SOURCE)

    def read_rates(dev):
        return dev._rates[0] / 1e9
    verdict, recs = _graded(server, DEBUG_SOURCE, read_rates)
    assert verdict.earned == 0 and all("AttributeError" in r["error"] for r in recs)

    def copy_the_case(dev):  # the figure of the case (or the exercise) without measuring
        from course_answers.m03_memory_hierarchy import copy_bandwidth_gbs
        copy_bandwidth_gbs(dev)
        spec = next(c["device"] for c in cases_for(task("m03.debug"), True, SEED) if c["device"]["name"] == dev.name)
        return spec["hbm_gbs"]
    verdict, _ = _graded(server, DEBUG_SOURCE, copy_the_case)
    assert verdict.earned == 0, verdict.text
    assert "the device's speeds are drawn anew" in " ".join(verdict.text.split())  # the verdict says why


def test_a_forged_report_earns_nothing(grader):
    """The kernel's record says a sound measurement was made; the grader's device saw none."""
    def forge(record):
        case = record["case"]["device"]
        report = {"copies": 40, "synchronizes": 8, "clock_reads": 12, "clock_reads_while_busy": 0,
                  "largest_copy_bytes": 4 * case["cache_mib"] * 2**20, "timed_mapping": 0, "launch_share": 0.001}
        return {**record, "error": None, "answer": {"gbs": case["hbm_gbs"], "observed": {"device": case,
                                                                                        "report": report}}}
    verdict, _ = _graded(grader(DEBUG_SOURCE), DEBUG_SOURCE, lambda dev: 1.0, forge)
    assert verdict.earned == 0, verdict.text
    assert "Nothing was measured" in " ".join(verdict.text.split())


def test_the_device_proxy_raises_the_device_errors_and_shows_only_what_the_device_tells(grader):
    from autograder.checks import referee
    grader(DEBUG_SOURCE)
    case = cases_for(task("m03.debug"), True, SEED)[0]
    with referee.device("m03.debug", case) as dev:
        assert {k: v for k, v in vars(dev).items() if not k.startswith("_")} == {
            "name": case["device"]["name"], "cache_bytes": case["device"]["cache_mib"] * 2**20,
            "memory_bytes": case["device"]["memory_gib"] * 2**30}
        src = dev.empty(1024)
        assert src.nbytes == 1024
        with pytest.raises(ValueError, match="two different buffers"):
            dev.copy_(src, src)
        with pytest.raises(MemoryError):
            dev.empty(10**15)
        assert not hasattr(dev, "_rates") and not hasattr(dev, "_spec") and dev._observed() is None
    with pytest.raises(RuntimeError):  # a case the grader did not draw has no device
        with referee.device("m03.debug", {"device": {**case["device"], "hbm_gbs": 1}}):
            pass


def test_exercise_01s_timer_is_scored_on_the_graders_virtual_device(grader):
    """The right timer earns full marks on durations the grader drew; a forged record of the right seconds for the
    case's own durations, and a timer that reads the device's work time, earn nothing."""
    from course_answers.m01_devices import time_call
    from autograder.modules.m01_devices import tasks as m01
    server = grader(TIMER_SOURCE)
    verdict, recs = _graded(server, TIMER_SOURCE, time_call)
    assert verdict.earned == 3, verdict.text

    import os
    from autograder.checks import referee
    saved = os.environ.pop(referee.SOCKET_ENV)
    try:  # what the right timer gives on the case's own durations, with a plausible device record
        right = {json.dumps(r["case"]): {**m01._timer_answer(time_call, r["case"]),
                                          "observed": {"scale": 1.0, "launches": 6}} for r in recs}
    finally:
        os.environ[referee.SOCKET_ENV] = saved
    verdict, _ = _graded(server, TIMER_SOURCE, time_call,
                         forge=lambda r: {**r, "error": None, "answer": right[json.dumps(r["case"])]})
    assert verdict.earned == 0, verdict.text

    def reads_work(fn, device, repeats=5, warmup=1, clock=None):
        return device.work_s
    verdict, _ = _graded(server, TIMER_SOURCE, reads_work)
    assert verdict.earned == 0, verdict.text


# ---------------------------------------------------------------- the course's clock (issue 31, part 3)
def _slowed(monkeypatch, rate: float):
    """``time.perf_counter`` made to run at ``rate`` of real time, as a measured function can (the issue's attack)."""
    import time
    if getattr(time.perf_counter, "slowed", False):
        return
    real = time.perf_counter
    start = real()

    def slow():
        return start + (real() - start) * rate
    slow.slowed = True
    monkeypatch.setattr(time, "perf_counter", slow)


def _measured(server, source, learner):
    """The verdict of ``learner`` graded on the visible cases (the grader's referee, then the rescoring)."""
    import os

    from autograder.checks import referee
    from autograder.checks.core import collect
    task_id = source.split('"')[1]
    t = task(task_id)
    recs = collect(t, learner, cases_for(t, False, SEED), task_id)
    payload = {"task": task_id, "points": 3, "hidden": False, "seed": SEED, "records": recs}
    out = [{"output_type": "display_data", "data": {RECORD_MIME: json.dumps(payload)}, "metadata": {}}]
    socket_path = os.environ.pop(referee.SOCKET_ENV)
    try:
        return rescore(source, out, SEED, 3, server.observed().get("g", {})), server.observed().get("g", {})
    finally:
        os.environ[referee.SOCKET_ENV] = socket_path


def test_time_fn_reads_the_courses_clock_whatever_the_kernel_does_to_time(grader, monkeypatch):
    """A measured function that slows ``time.perf_counter`` moves no figure of ``time_fn``: every sample is a span of
    the course's clock, which the round sends to the grader, so the learner's seconds are exactly one of its medians."""
    from autograder.checks import referee
    from autograder.harness import summary_times, time_fn
    source = 'check("m02.measure", measure_matmul, points=3)'
    server = grader(source)
    kernel_timings = []

    def measure_matmul(dtype, device):
        import torch
        a = torch.ones(256, 256)

        def work():
            _slowed(monkeypatch, 0.5)  # inside the measured function, at every call
            return a @ a
        timing = time_fn(work, device=device, budget_s=0.2)
        kernel_timings.append(timing)
        return {"n": 256.0, "seconds": timing.median_s, "tflops": 2 * 256**3 / timing.median_s / 1e12}
    verdict, seen = _measured(server, source, measure_matmul)
    spans = [row for rounds in seen["m02.measure|0"]["spans"] for row in rounds]
    medians = [summary_times([s for s, label in rounds if label.startswith("time_fn")])[0]
               for rounds in seen["m02.measure|0"]["spans"]]
    assert spans and [t.median_s for t in kernel_timings] == medians  # the grader's figures, to the last bit
    assert "course's clock" not in " ".join(verdict.text.split()), verdict.text
    answer = {"rounds": seen["m02.measure|0"]["rounds"], "observed": seen["m02.measure|0"]}
    assert referee.off_clock(answer, lambda r: [(r["seconds"], "time_fn")]) is None


@pytest.mark.parametrize("task_id", ["m02.measure", "m03.sweep"])
def test_a_figure_timed_on_a_slowed_clock_earns_nothing(grader, monkeypatch, task_id):
    """The issue's attack on the measurements timed with time_fn: the figure timed by hand on a clock slowed to half
    speed (time_fn called beside it, for show). None of time_fn's times on the course's clock gives it: 0."""
    from autograder.harness import time_fn
    source = f'check("{task_id}", learner, points=3)'
    server = grader(source)

    def by_hand(fn, calls=20):
        time_fn(fn, budget_s=0.05)  # for show
        _slowed(monkeypatch, 0.5)
        import time
        began = time.perf_counter()
        for _ in range(calls):
            fn()
        return (time.perf_counter() - began) / calls

    def matmul(dtype, device):
        import torch
        a = torch.ones(512, 512)
        seconds = by_hand(lambda: a @ a)
        return {"n": 512.0, "seconds": seconds, "tflops": 2 * 512**3 / seconds / 1e12}

    def sweep(sizes, device="cpu", budget_s=0.2):
        import torch
        out = []
        for size in sizes:
            x = torch.ones(size // 4)
            out.append(size / by_hand(x.sum, 5) / 1e9)
        return out
    verdict, _ = _measured(server, source, matmul if task_id == "m02.measure" else sweep)
    assert verdict.earned == 0, verdict.text
    assert "not measured on the course's clock" in " ".join(verdict.text.split()), verdict.text


@pytest.mark.parametrize("task_id", ["m01.speedup", "m06.mfu"])
def test_a_step_timed_on_a_slowed_clock_earns_nothing(grader, monkeypatch, task_id):
    """The steps the check hands over are timed on the course's clock, call by call: a time per step shorter than
    any call took (the learner's own timer on a clock slowed to a tenth) earns nothing."""
    import time
    source = f'check("{task_id}", learner, points=3)'
    server = grader(source)

    def own_timer(fn, calls=5):
        fn()
        _slowed(monkeypatch, 0.1)
        began = time.perf_counter()
        for _ in range(calls):
            fn()
        return (time.perf_counter() - began) / calls

    def speedup(make_step, width=512):
        return {"cpu_s": own_timer(make_step("cpu", width)), "accel_s": own_timer(make_step("cpu", width)),
                "accel_device": "cpu"}

    def mfu(make_step, device, dims, batch, frozen):
        from course_answers.m06_choosing_hardware import mfu_peak, step_flops
        seconds, flops, peak = own_timer(make_step(dims, batch, device, frozen)), step_flops(dims, batch, frozen), \
            mfu_peak(device)
        return {"flops_per_step": flops, "seconds_per_step": seconds, "peak_tflops": peak,
                "utilization": flops / seconds / (peak * 1e12)}
    verdict, _ = _measured(server, source, speedup if task_id == "m01.speedup" else mfu)
    assert verdict.earned == 0, verdict.text
    assert "the shortest call the course's clock timed" in " ".join(verdict.text.split()), verdict.text
