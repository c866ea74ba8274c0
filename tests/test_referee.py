"""Measurement tasks graded side by side: the referee's helpers, the local referee, and the grader's
RefereeServer over its Unix socket. Every figure here is built by hand or comes from m00.count
(no timing), so nothing depends on the load of the machine."""
import json
import math
import shutil
import socket
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import pytest

from autograder.checks import check, core, referee, task
from autograder.checks.core import RECORD_MIME, Part, Task
from autograder.grading import records
from autograder.grading.referee import RefereeServer
from autograder.i18n import Message

SEED = 4321
COUNT_SOURCE = 'check("m00.count", count_positive, points=1)'


def answer(rounds, walls=None, reference=None):
    """A measurement answer as recorded: the learner's rounds and what the referee observed."""
    walls = [1.0] * len(rounds) if walls is None else walls
    reference = [None] * len(rounds) if reference is None else reference
    return {"rounds": rounds, "observed": {"walls": walls, "reference": reference}}


def count_positive(xs):
    return sum(1 for x in xs if x > 0)


# ---------------------------------------------------------------- pure helpers
def test_rounds_and_observed_tolerate_any_shape():
    assert referee.rounds(answer([1, 2])) == [1, 2]
    for bad in (None, 3, "x", [1, 2], {"rounds": None}):
        assert referee.rounds(bad) == []
    empty = {"walls": [], "reference": [], "spans": []}
    for bad in (None, {"rounds": [1]}, {"rounds": [1], "observed": None}, {"rounds": [1], "observed": [1.0]}):
        assert referee.observed(bad) == empty
    assert referee.observed(answer([1], [0.5], [{"s": 1}])) == {"walls": [0.5], "reference": [{"s": 1}]}


def seconds(r):
    return r["seconds"]


def test_unmeasured_needs_rounds_and_a_wall_for_every_round():
    assert referee.unmeasured({"rounds": []}, seconds) == "no rounds"
    assert referee.unmeasured(None, seconds) == "no rounds"
    two = [{"seconds": 0.1}, {"seconds": 0.1}]
    assert referee.unmeasured({"rounds": two}, seconds) == "not observed"  # nothing observed (a kernel's forgery)
    assert referee.unmeasured(answer(two, walls=[1.0]), seconds) == "not observed"  # a round without a wall
    assert referee.unmeasured(answer(two, walls=[0.2, 0.2]), seconds) is None


def test_a_round_that_claims_more_time_than_it_took_did_not_measure():
    rounds = [{"seconds": 0.1}, {"seconds": 0.5}]
    why = referee.unmeasured(answer(rounds, walls=[0.2, 0.01]), seconds)
    assert why is not None and "0.5 s claimed" in why and "0.01 s spent" in why
    # a little slack for the referee's own clock: 5 % and 2 ms
    assert referee.unmeasured(answer([{"seconds": 0.104}], walls=[0.1]), seconds) is None
    assert referee.unmeasured(answer([{"seconds": 0.11}], walls=[0.1]), seconds) is not None


def test_unmeasured_leaves_answers_of_the_wrong_shape_to_the_task():
    rounds = [{"seconds": "fast"}, {}, None, {"seconds": 0}]
    assert referee.unmeasured(answer(rounds, walls=[0.0] * 4), seconds) is None


def test_median_ratio_pairs_each_round_with_its_reference():
    rounds = [{"v": 2.0}, {"v": 9.0}, {"v": 3.0}]
    refs = [{"v": 1.0}, {"v": 1.0}, {"v": 2.0}]
    ratio, mine, theirs = referee.median_ratio(answer(rounds, reference=refs), lambda r: r["v"], lambda r: r["v"])
    # round 0 meets the reference after it; later rounds the geometric mean of the references before and after:
    # ratios 2/1, 9/1, 3/sqrt(2): one noisy round does not decide
    assert ratio == pytest.approx(3 / 2**0.5) and (mine, theirs) == pytest.approx((3.0, 2**0.5))  # the median round
    # rounds without a usable reference or value are left out; none at all is None
    partial = answer(rounds, reference=[None, {"v": 0.0}, {"v": 2.0}])
    assert referee.median_ratio(partial, lambda r: r["v"], lambda r: r["v"]) == (1.5, 3.0, 2.0)
    assert referee.median_ratio(answer(rounds), lambda r: r["v"], lambda r: r["v"]) is None
    assert referee.median_ratio({"rounds": rounds}, lambda r: r["v"], lambda r: r["v"]) is None


def test_reference_error_is_reported():
    assert referee.reference_error(answer([1], reference=[{"gbs": 3.0}])) is None
    assert referee.reference_error(answer([1, 2], reference=[{"gbs": 3.0}, {"error": "OSError: no"}])) == "OSError: no"


def fake_task(reference=None, rounds=2, answer_fn=lambda fn, case: fn(case)):
    return Task(title=Message("가짜", "fake"), answer=answer_fn, score=lambda c, a, w: Part(True, Message("", "")),
                visible=lambda: [1, 2], measurement=True, reference=reference, rounds=rounds)


def test_take_reference_returns_plain_data_or_the_error():
    assert referee.take_reference(fake_task(), 1, 5) is None  # a task without a reference
    assert referee.take_reference(fake_task(reference=lambda c, a: (c, a)), 1, 5) == [1, 5]
    assert referee.take_reference(fake_task(reference=lambda c, a: {"x": 1}), 1, None) is None  # the round failed
    nan = referee.take_reference(fake_task(reference=lambda c, a: {"x": math.nan}), 1, 5)
    assert math.isnan(nan["x"])

    def broken(case, answer):
        raise RuntimeError("no device")
    assert referee.take_reference(fake_task(reference=broken), 1, 5) == {"error": "RuntimeError: no device"}


def test_a_reference_that_fell_since_the_last_one_is_taken_again_keeping_the_best(monkeypatch):
    """``retaken``: a reference that fell by SPREAD or more against the last one taken for its key is taken again,
    at most RETAKES times, keeping the best; the first one of a key has nothing to compare with."""
    monkeypatch.setattr(referee, "_LAST_REFERENCE", {})
    speeds = iter([9.0, 3.0, 8.0, 6.0, 1.0, 2.0, 1.0, 7.0])
    taken = []

    def take():
        taken.append(next(speeds))
        return taken[-1]

    def again(key):
        taken.clear()
        return referee.retaken(key, take, lambda speed: [speed], max), list(taken)
    assert again(["t", {"case": 1}]) == (9.0, [9.0])             # the first: kept as it came
    assert again(["t", {"case": 1}]) == (8.0, [3.0, 8.0])        # 3 fell 3x against 9: again, the better kept
    assert again(["t", {"case": 1}]) == (6.0, [6.0])             # 6 is within 1.5x of 8: once
    assert referee.RETAKES == 2
    assert again(["t", {"case": 1}]) == (2.0, [1.0, 2.0, 1.0])   # at most RETAKES more, the best of them kept
    assert again(["t", {"case": 2}]) == (7.0, [7.0])             # another case has its own last reference
    assert next(speeds, None) is None


def test_a_reference_is_taken_again_when_any_of_its_figures_fell(monkeypatch):
    monkeypatch.setattr(referee, "_LAST_REFERENCE", {})
    times = iter([(1.0, 1.0), (1.0, 2.0), (1.2, 1.1)])  # seconds: the second side took twice as long

    def take():
        return dict(zip("ab", next(times)))
    speeds = lambda r: [1 / r["a"], 1 / r["b"]]  # noqa: E731
    shorter = lambda x, y: {k: min(x[k], y[k]) for k in x}  # noqa: E731
    assert referee.retaken("k", take, speeds, shorter) == {"a": 1.0, "b": 1.0}
    assert referee.retaken("k", take, speeds, shorter) == {"a": 1.0, "b": 1.1}
    assert next(times, None) is None


def test_busy_is_the_spread_of_the_reference_rounds_from_spread_on():
    steady = answer([1, 1, 1], reference=[{"x": 2.0}, {"x": 2.2}, {"x": 1.6}])
    assert referee.busy(steady, lambda ref: ref["x"]) is None                       # 1.375x apart: not busy
    slowed = answer([1, 1, 1], reference=[{"x": 2.0}, {"x": 1.0}, {"x": 1.9}])
    assert referee.busy(slowed, lambda ref: ref["x"]) == pytest.approx(2.0)
    assert referee.busy(answer([1], reference=[{"x": 2.0}]), lambda ref: ref["x"]) is None  # one round: no spread


# ---------------------------------------------------------------- the local referee (a learner's kernel)
def test_rounds_and_references_take_turns(monkeypatch):
    monkeypatch.delenv(referee.SOCKET_ENV, raising=False)
    events = []

    def learner(case):
        events.append(("learner", case))
        return case * 10

    def reference(case, round_answer):
        events.append(("reference", case, round_answer))
        return {"ref": case}

    t = fake_task(reference=reference, rounds=2)
    recs = core.collect(t, learner, [1, 2], "m99.fake")
    assert events == [("learner", 1), ("reference", 1, 10), ("learner", 1), ("reference", 1, 10),
                      ("learner", 2), ("reference", 2, 20), ("learner", 2), ("reference", 2, 20)]
    assert [r["case"] for r in recs] == [1, 2] and all(r["error"] is None for r in recs)
    first = recs[0]["answer"]
    assert first["rounds"] == [10, 10] and first["observed"]["reference"] == [{"ref": 1}, {"ref": 1}]
    assert len(first["observed"]["walls"]) == 2 and all(w >= 0 for w in first["observed"]["walls"])
    json.dumps(recs, allow_nan=False)  # records travel in Jupyter messages


def test_the_local_referee_times_each_round():
    def slow(case):
        time.sleep(0.02)
        return case
    recs = core.collect(fake_task(rounds=3), slow, [1], "m99.fake")
    walls = recs[0]["answer"]["observed"]["walls"]
    assert len(walls) == 3 and all(w >= 0.02 for w in walls)


def test_a_round_that_raises_ends_the_case_with_its_error():
    calls = []

    def flaky(case):
        calls.append(case)
        if len(calls) == 2:
            raise ValueError("second round")
        return case
    recs = core.collect(fake_task(rounds=3), flaky, [1, 2], "m99.fake")
    assert recs[0] == {"case": 1, "answer": None, "error": "ValueError: second round"}
    assert recs[1]["answer"]["rounds"] == [2, 2, 2]
    stub = core.collect(fake_task(), lambda case: (_ for _ in ()).throw(NotImplementedError()), [1], "m99.fake")
    assert stub[0]["error"] == "NotImplementedError"


def test_the_referee_is_the_grader_when_it_listens(monkeypatch):
    monkeypatch.delenv(referee.SOCKET_ENV, raising=False)
    assert isinstance(referee.for_task(fake_task()), referee.LocalReferee)
    monkeypatch.setenv(referee.SOCKET_ENV, "/nonexistent/referee.sock")
    remote = referee.for_task(fake_task())
    assert isinstance(remote, referee.RemoteReferee) and remote.observed(0) is None


def test_count_demo_must_be_observed():
    t = task("m00.count")
    assert t.measurement and t.rounds == 2
    assert t.score([1, -1, 2], answer([2, 2]), 2).ok
    assert not t.score([1, -1, 2], answer([2, 3]), 2).ok  # every round must be right
    assert not t.score([1, -1, 2], {"rounds": [2, 2]}, 2).ok  # nothing observed
    assert not t.score([1, -1, 2], answer([2, 2], walls=[0.1]), 2).ok  # one round unobserved
    assert not t.score([1, -1, 2], answer([]), 2).ok


def test_check_in_the_learners_kernel_scores_the_rounds(monkeypatch, capsys):
    monkeypatch.delenv(referee.SOCKET_ENV, raising=False)
    monkeypatch.delenv("COURSE_RECORD_ANSWERS", raising=False)
    assert check("m00.count", count_positive, points=1, hidden=True) is None
    assert "✅" in capsys.readouterr().out


# ---------------------------------------------------------------- the grader's referee (Unix socket)
@pytest.fixture
def run_dir():
    path = Path(tempfile.mkdtemp(prefix="ref-"))  # short: Unix socket paths are limited to ~100 bytes
    yield path
    shutil.rmtree(path, ignore_errors=True)


class Ask:
    """Raw JSON lines on the referee's socket, as a kernel (honest or not) may send them."""

    def __init__(self, path):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(30)
        self.sock.connect(str(path))
        self.stream = self.sock.makefile("rw", encoding="utf-8")

    def __call__(self, **request):
        self.stream.write(json.dumps(request) + "\n")
        self.stream.flush()
        return json.loads(self.stream.readline())

    def raw(self, line):
        self.stream.write(line + "\n")
        self.stream.flush()
        return json.loads(self.stream.readline())

    def close(self):
        self.stream.close()
        self.sock.close()


def serve(run_dir, cell=("count", COUNT_SOURCE), seed=SEED):
    return RefereeServer(run_dir / "referee.sock", seed, lambda: cell)


def record_output(task_id, recs, points=1, hidden=False, seed=SEED):
    payload = {"task": task_id, "points": points, "hidden": hidden, "seed": seed, "records": recs}
    return {"output_type": "display_data", "data": {RECORD_MIME: json.dumps(payload)}, "metadata": {}}


def test_a_check_run_by_the_grader_is_observed_and_rescored_with_what_it_saw(run_dir, monkeypatch):
    monkeypatch.setenv(referee.SOCKET_ENV, str(run_dir / "referee.sock"))
    t = task("m00.count")
    cases = core.cases_for(t, False, SEED)
    with serve(run_dir) as server:
        recs = core.collect(t, count_positive, cases, "m00.count")
    assert all(r["answer"]["observed"] is None for r in recs)  # the grader's figures never reach the kernel
    seen = server.observed()["count"]
    assert set(seen) == {f"m00.count|{i}" for i in range(len(cases))}
    assert all(len(v["walls"]) == 2 and v["reference"] == [None, None] for v in seen.values())
    out = [record_output("m00.count", recs)]
    assert records.rescore(COUNT_SOURCE, out, SEED, 1, seen).earned == 1
    assert records.rescore(COUNT_SOURCE, out, SEED, 1, {}).earned == 0  # unobserved: not measured
    assert records.rescore(COUNT_SOURCE, out, SEED, 1).earned == 0


def test_the_server_serves_only_the_measurement_checks_of_the_running_cell(run_dir):
    source = COUNT_SOURCE + '\ncheck("m00.add", add, points=1)'
    with serve(run_dir, cell=("count", source)) as server:
        ask = Ask(run_dir / "referee.sock")
        try:
            assert ask(op="begin", task="m00.stats") == {"ok": False}  # not in the cell
            assert ask(op="begin", task="m00.add") == {"ok": False}  # in the cell, but not a measurement
            assert ask(op="start", task="m00.count", case=0, round=0) == {"ok": False}  # no session yet
            assert ask(op="begin", task="m00.count") == {"ok": True}
            assert ask(op="start", task="m00.add", case=0, round=0) == {"ok": False}  # another task
            assert ask(op="start", task="m00.count", case=0, round=2) == {"ok": False}  # m00.count has 2 rounds
            assert ask(op="start", task="m00.count", case=1, round=0) == {"ok": False}  # one visible case
            assert ask(op="finish", task="m00.count", case=0, round=0, answer=2) == {"ok": False}  # never started
            assert ask.raw("{not json") == {"ok": False} and ask.raw("[1]") == {"ok": False}
            assert ask(op="start", task="m00.count", case=0, round=0) == {"ok": True}
            reply = ask(op="finish", task="m00.count", case=0, round=0, answer=2)
            assert reply == {"ok": True}  # no figures go back to the kernel
            assert ask(op="end") == {"ok": True}
            assert ask(op="start", task="m00.count", case=0, round=1) == {"ok": False}  # session over
        finally:
            ask.close()
    seen = server.observed()["count"]["m00.count|0"]
    assert len(seen["walls"]) == 1 and seen["reference"] == [None]


def test_no_cell_running_means_no_session(run_dir):
    with RefereeServer(run_dir / "referee.sock", SEED, lambda: None) as server:
        ask = Ask(run_dir / "referee.sock")
        try:
            assert ask(op="begin", task="m00.count") == {"ok": False}
        finally:
            ask.close()
    assert server.observed() == {}


def test_a_check_run_again_starts_afresh(run_dir):
    with serve(run_dir) as server:
        for wait in (0.2, 0.0):
            ask = Ask(run_dir / "referee.sock")
            try:
                assert ask(op="begin", task="m00.count") == {"ok": True}
                ask(op="start", task="m00.count", case=0, round=0)
                time.sleep(wait)
                ask(op="finish", task="m00.count", case=0, round=0, answer=2)
                ask(op="end")
            finally:
                ask.close()
    walls = server.observed()["count"]["m00.count|0"]["walls"]
    assert len(walls) == 1 and walls[0] < 0.2


def test_observed_rounds_stop_at_the_first_missing_one(run_dir):
    with serve(run_dir) as server:
        ask = Ask(run_dir / "referee.sock")
        try:
            ask(op="begin", task="m00.count")
            ask(op="start", task="m00.count", case=0, round=1)  # round 0 never ran
            ask(op="finish", task="m00.count", case=0, round=1, answer=2)
        finally:
            ask.close()
    assert server.observed()["count"]["m00.count|0"] == {"walls": [], "reference": [], "spans": [], "rounds": [], "attempts": 1}


# ---------------------------------------------------------------- a miss the load explains is measured again
def flaky_count(busy_calls: int):
    """A learner function whose first ``busy_calls`` calls give -1 (which ``busy_score`` takes for a miss the load
    explains), then the right count."""
    calls = []

    def fn(xs):
        calls.append(1)
        return -1 if len(calls) <= busy_calls else count_positive(xs)
    fn.calls = calls
    return fn


def busy_score(case, found, want):
    """m00.count's score, where a round of -1 is a miss the machine's load explains (``Part.busy``)."""
    part = task("m00.count").score(case, found, want)
    if -1 in referee.rounds(found):
        return replace(part, ok=False, busy=True)
    attempts = referee.observed(found).get("attempts") or 1
    return replace(part, message=part.message + Message(f" ({attempts})", f" ({attempts})"))


@pytest.mark.parametrize("busy_calls,attempts,passes", [(0, 1, True), (2, 2, True), (4, 3, True), (6, 3, False)])
def test_a_miss_the_load_explains_is_measured_again_and_the_best_attempt_kept(busy_calls, attempts, passes):
    t = replace(task("m00.count"), score=busy_score)
    fn = flaky_count(busy_calls)
    recs = core.collect(t, fn, core.cases_for(t, False, SEED), "m00.count")
    assert len(fn.calls) == 2 * attempts  # two rounds an attempt; at most 1 + AGAIN attempts
    assert recs[0]["answer"]["observed"]["attempts"] == attempts if attempts > 1 else True
    assert core.fraction(core.score_records(t, recs)) == (1.0 if passes else 0.0)


def test_a_miss_the_load_does_not_explain_is_measured_once():
    t = replace(task("m00.count"), score=lambda case, found, want: replace(busy_score(case, found, want), busy=False))
    fn = flaky_count(2)
    core.collect(t, fn, core.cases_for(t, False, SEED), "m00.count")
    assert len(fn.calls) == 2


def test_the_grader_measures_again_and_scores_its_best_attempt(run_dir, monkeypatch):
    t = replace(task("m00.count"), score=busy_score, id="m00.count")
    monkeypatch.setattr("autograder.grading.referee.find_task", lambda task_id: t)
    monkeypatch.setenv(referee.SOCKET_ENV, str(run_dir / "referee.sock"))
    fn = flaky_count(2)
    with serve(run_dir) as server:
        recs = core.collect(t, fn, core.cases_for(t, False, SEED), "m00.count")
    assert len(fn.calls) == 4 and recs[0]["answer"]["observed"] is None  # the grader's figures stay with it
    seen = server.observed()["count"]["m00.count|0"]
    assert seen["rounds"] == [2, 2] and seen["attempts"] == 2 and len(seen["walls"]) == 2
    rescored = records._with_observed({"records": recs}, t, server.observed()["count"])["records"]
    assert core.fraction(core.score_records(t, rescored)) == 1.0


def test_a_kernel_cannot_make_the_grader_measure_again_beyond_its_judgement(run_dir):
    with serve(run_dir) as server:
        ask = Ask(run_dir / "referee.sock")
        try:
            assert ask(op="begin", task="m00.count") == {"ok": True}
            assert ask(op="again", task="m00.count", case=0) == {"ok": False}  # nothing measured yet
            for rnd in (0, 1):
                ask(op="start", task="m00.count", case=0, round=rnd)
                ask(op="finish", task="m00.count", case=0, round=rnd, answer=2)
            assert ask(op="again", task="m00.count", case=0) == {"ok": True, "again": False}  # it passed
            assert ask(op="again", task="m00.count", case="0") == {"ok": False}
            ask(op="start", task="m00.count", case=0, round=0)
            ask(op="finish", task="m00.count", case=0, round=0, answer=99)  # a worse round after the verdict
        finally:
            ask.close()
    assert server.observed()["count"]["m00.count|0"]["rounds"] == [2, 2]  # the attempt judged is the one kept


def test_the_server_takes_the_reference_with_the_round_answer(run_dir, monkeypatch):
    seen = []

    def reference(case, round_answer):
        seen.append((case, round_answer))
        return {"ref": round_answer}
    counted = replace(task("m00.count"), reference=reference)
    monkeypatch.setattr("autograder.grading.referee.find_task", lambda task_id: counted)
    with serve(run_dir) as server:
        judge = referee.RemoteReferee(str(run_dir / "referee.sock"))
        with judge.session("m00.count"):
            for r in range(2):
                judge.start(0, r)
                judge.finish(0, r, [1, -1, 2], 2)
    assert seen == [([1, -1, 2], 2), ([1, -1, 2], 2)]
    assert server.observed()["count"]["m00.count|0"]["reference"] == [{"ref": 2}, {"ref": 2}]


# ---------------------------------------------------------------- the device lock (held by the grader)
def _graded_cell(source):
    import nbformat
    return nbformat.v4.new_code_cell(source, metadata={"nbgrader": {"grade": True, "grade_id": "g", "points": 1,
                                                                     "solution": False, "locked": True}})


class _Dog:
    """Stands in for the Watchdog: records the waits it was told not to count."""

    def __init__(self):
        self.paused = []

    def pause(self, seconds):
        self.paused.append(seconds)


def test_measurement_cells_wait_for_the_device_lock(tmp_path, monkeypatch):
    """Two graders share one device lock. A grader holds it around a cell whose trusted source runs a
    measurement check, from before its kernel starts the cell: another grader's measurement cell waits
    (the wait does not count against its time limit); cells without a measurement check never wait."""
    import threading

    from nbgrader.preprocessors import Execute

    from autograder.grading.preprocessors import SandboxedExecute, measures

    lock = str(tmp_path / "device.lock")
    measuring = _graded_cell('check("m00.count", count_positive, points=1)')
    plain = _graded_cell('check("m00.add", add, points=1)')
    assert measures(measuring) and not measures(plain)
    assert not measures(_graded_cell('check("m99.unknown", f, points=1)'))
    first, second = SandboxedExecute(lock_file=lock), SandboxedExecute(lock_file=lock)
    first._dog, second._dog = _Dog(), _Dog()
    entered = {id(first): threading.Event(), id(second): threading.Event()}
    release = threading.Event()
    ran = []

    def run_cell(self, cell, resources, index):  # the kernel running the cell
        ran.append((self is first, cell.source))
        if cell is measuring:
            entered[id(self)].set()
        if self is first:
            release.wait(10)  # the first grader's measurement is still running
        return cell, resources

    monkeypatch.setattr(Execute, "preprocess_cell", run_cell)
    holder = threading.Thread(target=first.preprocess_cell, args=(measuring, {}, 0))
    holder.start()
    waiter = None
    try:
        assert entered[id(first)].wait(10)
        waiter = threading.Thread(target=second.preprocess_cell, args=(measuring, {}, 0))
        waiter.start()
        assert not entered[id(second)].wait(0.3)  # the device is taken
        assert second.preprocess_cell(plain, {}, 1) == (plain, {})  # no measurement: runs at once
        assert ran[-1] == (False, plain.source) and not entered[id(second)].is_set()
    finally:
        release.set()
        holder.join(10)
        if waiter is not None:
            waiter.join(10)
    assert entered[id(second)].is_set() and ran[-1] == (False, measuring.source)
    assert len(first._dog.paused) == 1 and first._dog.paused[0] < 0.3
    assert len(second._dog.paused) == 1 and second._dog.paused[0] >= 0.3  # the wait is not the kernel's time


def test_without_a_lock_file_no_cell_waits(monkeypatch):
    from nbgrader.preprocessors import Execute

    from autograder.grading.preprocessors import SandboxedExecute

    monkeypatch.setattr(Execute, "preprocess_cell", lambda self, cell, resources, index: (cell, resources))
    alone = SandboxedExecute()
    alone._dog = _Dog()
    cell = _graded_cell('check("m00.count", count_positive, points=1)')
    assert alone.preprocess_cell(cell, {}, 0) == (cell, {}) and alone._dog.paused == []


# ---------------------------------------------------------------- the kernel frozen while the grader takes a reference
BUSY = """
import subprocess, sys, threading, time
def spin():
    while True:
        pass
threading.Thread(target=spin, daemon=True).start()  # a thread that would copy memory during the reference
child = subprocess.Popen([sys.executable, "-c", "while True: pass"])
print(child.pid, flush=True)
time.sleep(600)
"""


@pytest.fixture
def busy_kernel():
    """A stand-in kernel: a process with a busy thread and a busy child; yields (its pid, the child's pid)."""
    import subprocess
    import sys

    import psutil
    kernel = subprocess.Popen([sys.executable, "-c", BUSY], stdout=subprocess.PIPE, text=True)
    child = int(kernel.stdout.readline())
    yield kernel.pid, child
    for pid in (child, kernel.pid):
        try:
            psutil.Process(pid).kill()
        except psutil.Error:
            pass
    kernel.wait(10)


def _cpu(pid):
    import psutil
    times = psutil.Process(pid).cpu_times()
    return times.user + times.system


def _ran(pid, since, timeout=30.0):
    """Wait until ``pid`` has used CPU time past ``since``; whether it did."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if _cpu(pid) > since:
            return True
        time.sleep(0.02)
    return False


def test_a_frozen_kernel_does_no_work_and_runs_again_after(busy_kernel):
    from autograder.grading.watchdog import Frozen
    pid, child = busy_kernel
    with Frozen(pid) as frozen:
        before = {p: _cpu(p) for p in busy_kernel}
        time.sleep(0.3)
        assert {p: _cpu(p) for p in busy_kernel} == before  # neither its thread nor its child ran
        assert not frozen.worked()
    assert _ran(pid, before[pid]) and _ran(child, before[child])


def test_a_kernel_process_that_runs_while_frozen_is_seen(busy_kernel):
    import os
    import signal

    from autograder.grading.watchdog import Frozen
    pid, child = busy_kernel
    with Frozen(pid) as frozen:
        since = _cpu(child)
        os.kill(child, signal.SIGCONT)  # as a process outside the tree would wake it
        assert _ran(child, since)
        assert frozen.worked()


def test_the_server_takes_the_reference_again_when_the_kernel_ran_and_voids_the_case_when_it_keeps_running(
        run_dir, monkeypatch, busy_kernel):
    import os
    import signal
    pid, child = busy_kernel
    wake = {"times": 1}
    taken = []

    def reference(case, round_answer):
        taken.append(round_answer)
        if len(taken) <= wake["times"]:  # the kernel's child runs during this reference
            since = _cpu(child)
            os.kill(child, signal.SIGCONT)
            assert _ran(child, since)
        return {"ref": round_answer}
    counted = replace(task("m00.count"), reference=reference)
    monkeypatch.setattr("autograder.grading.referee.find_task", lambda task_id: counted)

    def one_round(server):
        judge = referee.RemoteReferee(str(run_dir / "referee.sock"))
        with judge.session("m00.count"):
            judge.start(0, 0)
            judge.finish(0, 0, [1, -1, 2], 2)
        return server.observed()["count"]

    with RefereeServer(run_dir / "referee.sock", SEED, lambda: ("count", COUNT_SOURCE), lambda: pid) as server:
        seen = one_round(server)
        assert len(taken) == 2 and seen["m00.count|0"]["reference"] == [{"ref": 2}]  # the clean second one
        taken.clear()
        wake["times"] = 99
        seen = one_round(server)
    assert len(taken) == 3 and "m00.count|0" not in seen  # void: nothing observed, so the task scores 0
    out = [record_output("m00.count", [{"case": [1, -1, 2], "answer": {"rounds": [2, 2], "observed": None},
                                         "error": None}])]
    assert records.rescore(COUNT_SOURCE, out, SEED, 1, seen).earned == 0
