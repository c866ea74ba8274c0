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


# task id -> (which visible case, the forged round answer and the reference that agrees with it)
FORGERIES = {
    "m01.speedup": (0, _speedup),
    "m02.measure": (0, _matmul),
    "m03.sweep": (0, _sweep),
    "m05.measure": (1, _busbw),  # the real ranks; the fake-dist case is graded against the fake's own clock
    "m06.mfu": (0, _mfu),
    "m07.copy": (0, _kernel_copy),
}


def test_every_timing_task_is_covered():
    from autograder import modules
    timing = {f"{m}.{name}" for m in modules.folders() if m != "m00"
              for name, t in modules.tasks(m).items() if t.measurement}
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
