"""Module 01 checks: the reference solution gets full marks, known mistakes lose points and are named."""
import json
import re
import time
from pathlib import Path

import pytest
import torch

from autograder import layout
from autograder.checks import CheckFailed, check, referee, task
from autograder.checks.core import CENTRAL, Part, Recorded, _central, cases_for, collect, fraction, score_records
from autograder.expectations import Band
from autograder.i18n import Message
from autograder.modules.m01_devices import tasks as checks
from course_answers import m01_devices as answers

ROOT = Path(__file__).resolve().parents[3]
SOLUTION = layout.exercise("01_devices", "solutions", ROOT)
HANGUL = re.compile(r"[\uac00-\ud7a3]")
FUNCTIONS = {"picker": "pick_device", "mlx": "mlx_device", "setup": "training_setup", "memory": "finetune_plan",
             "timer": "time_call", "audit": "diagnose"}


@pytest.fixture(scope="module")
def solution():
    """The namespace after running the set-up and answer cells of the reference notebook."""
    namespace: dict = {}
    for cell in json.loads(SOLUTION.read_text(encoding="utf-8"))["cells"]:
        meta = cell["metadata"].get("nbgrader", {})
        if cell["cell_type"] == "code" and not meta.get("grade"):
            source = "".join(cell["source"]).replace("(make_step, 512)", "(make_step, 64)")  # a quick demo
            exec(compile(source, meta.get("grade_id", "cell"), "exec"), namespace)
    return namespace


def share(task_id, learner, hidden=True, seed=3):
    t = task(task_id)
    return fraction(score_records(t, collect(t, learner, cases_for(t, hidden, seed))))


def stub(*args, **kwargs):
    raise NotImplementedError()


def test_grade_cells_name_existing_tasks_with_matching_points():
    graded = []
    for cell in json.loads(SOLUTION.read_text(encoding="utf-8"))["cells"]:
        meta = cell["metadata"].get("nbgrader", {})
        if meta.get("grade"):
            source = "".join(cell["source"])
            task_id = source.split('"')[1]
            assert task_id.removeprefix("m01.") in checks.TASKS
            assert f"points={meta['points']}," in source
            graded.append((task_id, meta["points"]))
    assert [t for t, _ in graded] == [f"m01.{n}" for n in checks.TASKS]
    assert sum(p for _, p in graded) == 20


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_reference_solution_gets_full_marks_and_stub_fails(solution, name, capsys):
    for seed in (1, 2):
        assert share(f"m01.{name}", solution[FUNCTIONS[name]], seed=seed) == 1.0
    assert check(f"m01.{name}", solution[FUNCTIONS[name]], points=2, hidden=True) is None
    with pytest.raises(CheckFailed, match="NotImplementedError"):
        check(f"m01.{name}", stub, points=2, hidden=True)
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_every_known_mistake_costs_points_on_the_hidden_cases_too(name):
    for mistake, wrong in answers.MISTAKES[name].items():
        assert share(f"m01.{name}", wrong) < 1.0, mistake


def test_a_hard_coded_answer_fails_the_hidden_cases(solution):
    t = task("m01.memory")
    visible = {json.dumps(c["job"], sort_keys=True): answers.finetune_plan(c["job"], c["devices"]) for c in t.visible()}
    memorised = lambda job, devices: visible.get(json.dumps(job, sort_keys=True), {"need_gb": 0.0, "device": None})  # noqa: E731
    assert share("m01.memory", memorised, hidden=False) == 1.0
    assert share("m01.memory", memorised) < 0.6


def test_the_timer_check_restores_torchs_synchronize(solution):
    before = torch.cuda.synchronize, torch.mps.synchronize
    check("m01.timer", solution["time_call"], points=3, hidden=True)
    assert (torch.cuda.synchronize, torch.mps.synchronize) == before


def test_partial_credit_lists_the_parts_that_are_right(solution, capsys):
    def only_no_wait(timer):
        return answers.diagnose(timer) & {"no_wait"}
    earned = check("m01.audit", only_no_wait, points=4)
    out = capsys.readouterr().out
    assert 0 < earned < 4 and "🟡" in out and "✅ no_wait" in out and "missed" in out


def test_the_timer_may_wait_through_the_harness(solution):
    """Task 5 allows harness.synchronizer(device) for a string or a torch.device: it looks torch's up per call."""
    from autograder import harness

    def with_harness(fn, device, repeats=5, warmup=1, clock=time.perf_counter):
        return answers._timed(fn, harness.synchronizer(device), repeats, warmup, clock)
    assert share("m01.timer", with_harness) == 1.0


def test_only_torchs_own_synchronize_is_named_stored(solution):
    def own_error(fn, device, repeats=5, warmup=1, clock=time.perf_counter):
        if isinstance(device, str) and ":" in device:
            return device.synchronize()  # AttributeError, raised in the learner's own code
        return solution["time_call"](fn, device, repeats, warmup, clock)
    t = task("m01.timer")
    parts = score_records(t, collect(t, own_error, cases_for(t, False, 0)))
    assert [p.mistake for p in parts if not p.ok] == [None] and "AttributeError" in str(parts)


def test_numbers_in_messages_are_written_alike():
    assert checks._pair(153.2, 150.4, 3, "GB") == {"expected": "153.200 GB", "found": "150.400 GB"}
    assert checks._pair(10.1, 10.1000004, 3, "ms") == {"expected": "10.1000000 ms", "found": "10.1000004 ms"}
    assert checks._pair(14.58, "'14.6 GiB'", 2, "GiB") == {"expected": "14.58 GiB", "found": "'14.6 GiB'"}


def test_mlx_absent_machine_reference_still_passes(solution):
    import sys
    before = sys.modules.get("mlx.core")
    with checks.mlx_modules({"mlx": None, "mlx.core": None}):
        assert check("m01.mlx", solution["mlx_device"], points=2, hidden=True) is None
    assert sys.modules.get("mlx.core") is before  # restored afterwards


# ---------------------------------------------------------------- the one real measurement
def test_speedup_reference_is_observed_and_counts_its_calls(solution, monkeypatch):
    """A real (small) run: every round is observed and measured; the ratio bands are left to the hand-built
    answers below, since they compare two timings that the machine's load may shift."""
    monkeypatch.setattr(checks, "speedup_widths", lambda: [64, 96, 128])
    monkeypatch.delenv("COURSE_REFEREE", raising=False)
    t = task("m01.speedup")
    [record] = collect(t, solution["compare_devices"], cases_for(t, False, 3), "m01.speedup")
    answer = record["answer"]
    assert record["error"] is None and len(answer["rounds"]) == t.rounds == 5
    assert all(isinstance(r["cpu_s"], float) and isinstance(r["accel_s"], float) for r in answer["rounds"])
    # one warm-up and five timed calls per model, and the time those five took
    assert all([b["calls"] for b in r["builds"]] == [6, 6] for r in answer["rounds"])
    assert all(0 < b["spent_s"] < w for r, w in zip(answer["rounds"], answer["observed"]["walls"]) for b in r["builds"])
    assert len(answer["observed"]["walls"]) == t.rounds
    assert all(set(ref) == {"cpu_s", "accel_s"} for ref in answer["observed"]["reference"])
    assert referee.unmeasured(answer, lambda r: r["cpu_s"] + r["accel_s"]) is None
    assert all(r < checks.STEPS_TOTAL_RATIO for r in checks._per_step_ratios(answer["rounds"]).values())

    def three_as_one(make_step, width=512):  # a learner's answer: one warm-up, then 3 steps timed together
        times = {}
        for key in ("cpu_s", "accel_s"):
            step = make_step(answers.pick_device() if key == "accel_s" else "cpu", width)
            step()
            start = time.perf_counter()
            for _ in range(3):
                step()
            times[key] = time.perf_counter() - start
        return {**times, "accel_device": answers.pick_device()}
    [record] = collect(t, three_as_one, cases_for(t, False, 3), "m01.speedup")
    ratios = checks._per_step_ratios(record["answer"]["rounds"])
    assert all(2.5 < r < 3.1 for r in ratios.values()), ratios  # the same calls on both sides: load cannot move it
    assert "steps_total" in {p.mistake for p in score_records(t, [record])}
    with pytest.raises(CheckFailed, match="NotImplementedError"):
        check("m01.speedup", stub, points=3)
    assert share("m01.speedup", lambda make_step, width=512: [1, 2]) == 0.0


def band(lo, hi):
    return Band(lo, hi, "×", Message("이유", "reason"), "measured", None)


def speedup(rounds, reference, walls=None):
    """A recorded m01.speedup answer: the learner's rounds and what the referee observed (by hand; the course's clock
    saw each device's step calls take what the round reports, or less)."""
    walls = [1.0] * len(rounds) if walls is None else walls
    spans = [[[min(r[k], 1.0), f"step:{d}"] for k, d in (("cpu_s", "cpu"), ("accel_s", r.get("accel_device")))
              if isinstance(r.get(k), float) and r[k] > 0] if isinstance(r, dict) else [] for r in rounds]
    return {"rounds": rounds, "observed": {"walls": walls, "reference": reference, "spans": spans}}


def capped(parts):
    """The speed-up task's parts as a verdict scores them: a central mistake caps the task (``core._central``)."""
    return _central(task("m01.speedup"), parts)


def builds(calls=6, spent_s=0.05, devices=("cpu", "cpu")):
    """What the check records of the models a compare_devices built: their device, calls and the seconds spent."""
    return [{"device": d, "calls": calls, "spent_s": spent_s} for d in devices]


def test_speedup_score_on_cpu_only_and_accelerator_machines(monkeypatch):
    import autograder.expectations as expectations
    import autograder.hardware as hardware

    good = {"cpu_s": 0.010, "accel_s": 0.011, "accel_device": "cpu", "builds": builds()}
    ref = {"cpu_s": 0.010, "accel_s": 0.010}
    monkeypatch.setattr(hardware, "best_device", lambda *a, **k: "cpu")
    assert fraction(checks._speedup_score({}, speedup([good] * 3, [ref] * 3), None)) == 1.0
    wrong_device = {**good, "accel_device": "cuda"}
    assert fraction(checks._speedup_score({}, speedup([wrong_device] * 3, [ref] * 3), None)) == 0.75
    noisy_then_good = speedup([{**good, "accel_s": 0.05}, good, good], [ref] * 3)
    assert fraction(checks._speedup_score({}, noisy_then_good, None)) == 1.0  # the median round counts
    slow = {**good, "accel_s": 0.05, "builds": builds()[:1] + builds(6, 0.25)[1:]}  # its steps really took 0.05 s
    noisy_mostly = speedup([slow] * 2 + [good], [ref] * 3)
    assert fraction(checks._speedup_score({}, noisy_mostly, None)) == 0.5  # 5x the reference, and a 0.2x "speedup"
    once = checks._speedup_score({}, speedup([{**good, "builds": builds(1, 0.0)}] * 3, [ref] * 3), None)
    assert fraction(capped(once)) == CENTRAL and any(p.mistake == "one_call" for p in once)  # the task's point: a third
    forged = checks._speedup_score({}, speedup([{k: v for k, v in good.items() if k != "builds"}] * 3, [ref] * 3), None)
    assert fraction(forged) == 1.0  # a record without call counts (a hand-built one) is judged on its times
    total = {**good, "cpu_s": 0.03, "accel_s": 0.033, "builds": builds(4, 0.03)}  # 3 steps timed, reported as one
    parts = checks._speedup_score({}, speedup([total] * 3, [ref] * 3), None)
    assert fraction(capped(parts)) == CENTRAL and [p.mistake for p in parts if not p.ok] == ["steps_total"] * 2
    two = {**good, "cpu_s": 0.02, "builds": builds(3, 0.02)}  # 2 steps timed as one, on the CPU side only
    parts = checks._speedup_score({}, speedup([two] * 3, [ref] * 3), None)
    assert [p.mistake for p in parts if not p.ok] == ["steps_total"] and "CPU" in parts[1].message.en

    monkeypatch.setattr(hardware, "best_device", lambda *a, **k: "cuda")
    monkeypatch.setattr(expectations, "expect", lambda kind, **kw: band(1.0, 80.0))
    on_gpu = {"cpu_s": 0.050, "accel_s": 0.002, "accel_device": "cuda",
              "builds": [{"device": "cpu", "calls": 6, "spent_s": 0.25}, {"device": "cuda", "calls": 6, "spent_s": 0.01}]}
    gpu_ref = {"cpu_s": 0.05, "accel_s": 0.002}
    assert fraction(checks._speedup_score({}, speedup([on_gpu] * 3, [gpu_ref] * 3), None)) == 1.0
    gpu_total = {**on_gpu, "accel_s": 0.01}  # five GPU steps reported as one: 5x the GPU calls it timed
    parts = checks._speedup_score({}, speedup([gpu_total] * 3, [gpu_ref] * 3), None)
    assert [p.mistake for p in parts if not p.ok] == ["steps_total"]
    unsynchronized = {**on_gpu, "accel_s": 0.00002}  # timed the launch: 2500x "speedup", 100x off the reference
    parts = checks._speedup_score({}, speedup([unsynchronized] * 3, [gpu_ref] * 3), None)
    assert fraction(parts) == 0.5
    assert any("Faster than the hardware can be" in p.message.en for p in parts if not p.ok)
    stayed_on_cpu = {**on_gpu, "accel_device": "cpu", "accel_s": 0.05}
    assert fraction(checks._speedup_score({}, speedup([stayed_on_cpu] * 3, [gpu_ref] * 3), None)) <= 0.5


def test_a_speedup_of_one_call_keeps_a_third_and_its_verdict_says_it_breaks_the_rule(monkeypatch, capsys):
    """The cap is ``core._central``'s alone: the task's own part keeps nothing back, so the verdict says why."""
    import autograder.hardware as hardware
    import autograder.i18n as i18n
    from autograder.checks.core import report

    monkeypatch.setattr(hardware, "best_device", lambda *a, **k: "cpu")
    monkeypatch.setattr(i18n, "_chosen", "en")
    good = {"cpu_s": 0.010, "accel_s": 0.011, "accel_device": "cpu", "builds": builds(1, 0.0)}
    t = task("m01.speedup")
    answer = speedup([good] * 3, [{"cpu_s": 0.01, "accel_s": 0.01}] * 3)
    parts = score_records(t, [{"case": t.visible()[0], "answer": answer, "error": None}])
    assert fraction(parts) == CENTRAL and all(p.keeps == 1.0 for p in parts[1:])
    report(t.title, parts, 3)
    said = capsys.readouterr().out
    note = said.split("\n  ⚠️ ")[1].split("\n  ❌ ")[0]  # the note above the failed items, not one of them
    assert "breaks the rule the task is about" in note and "keeps at most a third" in note
    assert " 1 of 5 items not passed" in " ".join(said.split())  # the calls; the note is not an item


def test_a_slowed_speedup_reference_is_taken_again_keeping_each_sides_shorter_time(monkeypatch):
    """A fake harness: the GPU side of the second reference took 3x as long; it is taken again (issue 27)."""
    import types

    import autograder.hardware as hardware
    import autograder.harness as harness
    from autograder.modules.m01_devices import lesson

    monkeypatch.setattr(referee, "_LAST_REFERENCE", {})
    monkeypatch.setattr(hardware, "best_device", lambda *a, **k: "cuda")
    monkeypatch.setattr(lesson, "make_step", lambda device, width: None)
    seconds = iter([0.010, 0.002, 0.010, 0.006, 0.011, 0.0025] + [0.010, 0.02] * 3)
    monkeypatch.setattr(harness, "time_fn", lambda fn, **kw: types.SimpleNamespace(median_s=next(seconds)))
    case = {"width": 64}
    assert checks._speedup_reference(case, None) == {"cpu_s": 0.010, "accel_s": 0.002}
    assert checks._speedup_reference(case, None) == {"cpu_s": 0.010, "accel_s": 0.0025}  # 0.006 taken again
    assert checks._speedup_reference(case, None) == {"cpu_s": 0.010, "accel_s": 0.02}  # at most RETAKES more
    assert next(seconds, None) is None


def test_an_honest_speedup_beside_a_slowed_reference_is_told_the_machine_was_busy(monkeypatch):
    """The reference's own rounds 5x apart: the band fails, says the machine was busy, and names no mistake (so the
    task is not capped as one that breaks its rule)."""
    import autograder.hardware as hardware

    monkeypatch.setattr(hardware, "best_device", lambda *a, **k: "cpu")
    good = {"cpu_s": 0.010, "accel_s": 0.011, "accel_device": "cpu", "builds": builds()}
    slowed = [{"cpu_s": 0.05, "accel_s": 0.05}] * 2 + [{"cpu_s": 0.01, "accel_s": 0.01}]
    t = task("m01.speedup")
    parts = score_records(t, [{"case": t.visible()[0], "answer": speedup([good] * 3, slowed), "error": None}])
    failed = [p for p in parts if not p.ok]
    assert failed and all("the machine was busy" in p.message.en for p in failed)
    assert all(p.mistake is None for p in parts) and not any("synchronize" in p.message.en for p in failed)
    assert fraction(parts) == 0.5  # the two steps' bands


def test_speedup_must_be_measured_while_the_referee_watches(monkeypatch):
    import autograder.hardware as hardware

    monkeypatch.setattr(hardware, "best_device", lambda *a, **k: "cpu")
    good = {"cpu_s": 0.010, "accel_s": 0.011, "accel_device": "cpu", "builds": builds()}
    ref = {"cpu_s": 0.010, "accel_s": 0.010}
    constant = checks._speedup_score({}, speedup([good] * 3, [ref] * 3, walls=[1e-5] * 3), None)  # returned at once
    assert fraction(constant) == 0.0 and "this was not measured" in constant[0].message.en
    unobserved = checks._speedup_score({}, {"rounds": [good] * 3, "observed": None}, None)
    assert fraction(unobserved) == 0.0 and "while the grader watched" in unobserved[0].message.en
    assert fraction(checks._speedup_score({}, speedup([good] * 3, [ref] * 3, walls=[1.0, 1.0]), None)) == 0.0
    assert fraction(checks._speedup_score({}, speedup([], []), None)) == 0.0
    assert fraction(checks._speedup_score({}, speedup([{"not_a_dict": "[1, 2]"}], [ref]), None)) == 0.0
    failed = speedup([good] * 3, [{"error": "RuntimeError: no device"}] * 3)
    parts = checks._speedup_score({}, failed, None)  # the grader could not time the reference: said, not held against
    assert fraction(parts) == 1.0 and any("could not run here" in p.message.en for p in parts)
    milliseconds = answers.MISTAKES["speedup"]["ms_not_s"]
    assert isinstance(milliseconds, Recorded)
    parts = checks._speedup_score({}, milliseconds.answer, None)
    assert fraction(parts) == 0.0 and parts[0].mistake == "ms_not_s"


# ---------------------------------------------------------------- text
def test_hidden_cases_vary_with_the_seed():
    for name in ("picker", "setup", "memory", "timer", "audit"):
        t = task(f"m01.{name}")
        assert cases_for(t, True, 1) != cases_for(t, True, 2), name


def test_every_failure_message_is_bilingual():
    for name, wrongs in answers.MISTAKES.items():
        if name == "speedup":
            continue
        t = task(f"m01.{name}")
        for wrong in wrongs.values():
            for part in score_records(t, collect(t, wrong, cases_for(t, True, 5))):
                assert isinstance(part, Part)
                if not part.ok:
                    assert HANGUL.search(part.message.ko) and not HANGUL.search(part.message.en), part.message


def test_exercise_cells_are_korean_then_english():
    for cell in json.loads(SOLUTION.read_text(encoding="utf-8"))["cells"]:
        if cell["cell_type"] == "markdown":
            ko, _, en = "".join(cell["source"]).partition("\n---\n")
            assert HANGUL.search(ko) and en and not HANGUL.search(en), ko[:60]


def test_notebook_links_resolve():
    """Exercise links point to anchors present in both lessons, named by the section's title; lesson links resolve."""
    exercise = "\n".join("".join(c["source"]) for c in json.loads(SOLUTION.read_text(encoding="utf-8"))["cells"])
    links = re.findall(r"\[([^\]]+)\]\([./]*lessons/01_devices/01_devices\.(?:ko|en)\.ipynb#(sec-[\w-]+)\)", exercise)
    assert len({a for _, a in links}) >= 5
    assert not any(text.startswith("sec-") or "sec-" in text for text, _ in links)
    for lang in ("ko", "en"):
        path = layout.lesson("01_devices", lang, ROOT)
        body = path.read_text(encoding="utf-8")
        assert all(f'<a id=\\"{a}\\"></a>' in body for _, a in links), lang
        for target in set(re.findall(r"\]\(((?:\.\./)+[\w/.-]+\.ipynb)", body)):
            assert (path.parent / target).resolve().exists(), (lang, target)
