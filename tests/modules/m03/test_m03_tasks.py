"""Checks of module 03: references get full marks, stubs fail, hard-coding fails hidden cases, a partial answer gets
labelled partial credit, known mistakes are named, and the measurement debugging task diagnoses each planted bug."""
import json
import random

import nbformat
import pytest

from autograder import layout
from autograder.checks import CheckFailed, check, referee, task
from autograder.checks.core import CENTRAL, _central, cases_for, collect, fraction, score_records
from autograder.grading.course import REPO
from autograder.modules.m03_memory_hierarchy import analysis
from autograder.modules.m03_memory_hierarchy import tasks as checks
from autograder.modules.m03_memory_hierarchy.simulated import EXAMPLE, SimulatedGPU
from course_answers import m03_memory_hierarchy as ref

SEED = 1234


@pytest.fixture(autouse=True)
def _english_and_seed(monkeypatch):
    monkeypatch.setenv("COURSE_LANG", "en")
    monkeypatch.setenv("COURSE_GRADING_SEED", str(SEED))
    monkeypatch.delenv("COURSE_RECORD_ANSWERS", raising=False)


def parts(name: str, fn, hidden: bool = True) -> list:
    """The scored parts, without the weightless note of a central mistake (its third: ``share``)."""
    t = task(f"m03.{name}")
    return [p for p in score_records(t, collect(t, fn, cases_for(t, hidden, SEED))) if p.weight or p.keeps == 1.0]


def share(name: str, fn, hidden: bool = True) -> float:
    t = task(f"m03.{name}")
    return fraction(score_records(t, collect(t, fn, cases_for(t, hidden, SEED))))


def stub(*args, **kwargs):
    raise NotImplementedError()


EXACT = {"intensity": ref.arithmetic_intensity, "roofline": ref.datasheet_roofline, "fusion": ref.fused_traffic,
         "decode": ref.decode_bound, "debug": ref.copy_bandwidth_gbs, "serve": ref.serve_plan}


def test_the_exercise_climbs_and_is_mostly_transfer():
    tasks = list(checks.TASKS.values())
    assert tasks[0].level == "warm-up" and tasks[-1].level == "stretch"
    assert 2 * sum(t.kind == "transfer" for t in tasks) >= len(tasks)


@pytest.mark.parametrize("name", sorted(EXACT))
def test_reference_gets_full_marks(name, capsys):
    assert check(f"m03.{name}", EXACT[name], points=3, hidden=True) is None
    assert "passed" in capsys.readouterr().out


@pytest.mark.parametrize("name", sorted(checks.TASKS))
def test_stub_fails(name):
    with pytest.raises(CheckFailed):
        check(f"m03.{name}", stub, points=3, hidden=True)


@pytest.mark.parametrize("name", sorted(EXACT))
def test_hidden_cases_change_with_the_seed(name):
    assert ref.HIDDEN[name](random.Random(1)) != ref.HIDDEN[name](random.Random(2))


def _hard_coded(name: str, fn):
    """A learner function that returns the reference's answer to the first visible case, whatever it is asked."""
    t = task(f"m03.{name}")
    first = t.answer(fn, cases_for(t, False, SEED)[0])
    return lambda *args: first["gbs"] if name == "debug" else first


@pytest.mark.parametrize("name", ["intensity", "roofline", "fusion", "decode", "serve"])
def test_hard_coded_answer_fails_hidden_cases(name):
    assert share(name, _hard_coded(name, EXACT[name])) < 0.5


def test_wrong_return_type_is_reported_not_raised():
    assert share("intensity", lambda op, shape, dtype: 1.0) == 0.0
    assert share("serve", lambda *a: {"max_batch": 1}) == 0.0


# ---------------------------------------------------------------- partial credit names the parts and the mistakes
def test_a_partly_right_answer_gets_labelled_partial_credit(capsys):
    fn = ref.MISTAKES["roofline"]["tb_as_gb"]  # the ridge is 1000x off; the bound is right on most cases
    earned = check("m03.roofline", fn, points=3)
    out = capsys.readouterr().out
    assert 0 < earned < 3 and "✅ H100 SXM @ 100 FLOP/byte → bound" in out
    assert "❌" in out and "1 TB/s = 1000 GB/s" in out


@pytest.mark.parametrize("name", ["intensity", "roofline", "fusion", "decode", "serve"])
def test_known_mistakes_are_named_on_hidden_cases_too(name):
    """The references answer each known mistake for every case, so a mistake is named wherever it shows."""
    for mistake, wrong in ref.MISTAKES[name].items():
        found = {p.mistake for p in parts(name, wrong) if not p.ok}
        assert mistake in found, (name, mistake, found)


def test_fusion_mistakes_are_told_apart_or_left_unnamed():
    """Every known mistake answers the visible cases differently from every other one; on a case where two agree
    (on SiLU, writing the intermediates and reading x once per use both add n elements), the check names neither."""
    cases = checks._fusion_visible()
    answers = {m: tuple(json.dumps(checks._fusion_answer(fn, c), sort_keys=True) for c in cases)
               for m, fn in ref.MISTAKES["fusion"].items()}
    assert len(set(answers.values())) == len(answers)
    out = parts("fusion", ref.MISTAKES["fusion"]["fused_writes_intermediates"], hidden=False)
    assert [p.mistake for p in out if not p.ok] == [None] + ["fused_writes_intermediates"] * 2  # SiLU, then the others
    assert "registers" in out[5].message.en and "once per use" not in out[1].message.en


def test_fusion_visible_cases_hold_the_rules_the_text_states():
    """The output is as large as its largest operand (bias + x), and an input no step uses is not read."""
    out = parts("fusion", ref.MISTAKES["fusion"]["output_from_first_operand"], hidden=False)
    assert {p.mistake for p in out if not p.ok} == {"output_from_first_operand"}
    out = parts("fusion", ref.MISTAKES["fusion"]["unused_input_read"], hidden=False)
    assert [p.mistake for p in out if not p.ok] == ["unused_input_read"]


def test_a_star_means_sparsity_only_when_the_footnote_says_so():
    """The learner's trial: halving every starred figure, footnote unread, passed the visible cases."""
    out = parts("roofline", ref.MISTAKES["roofline"]["star_without_footnote"], hidden=False)
    assert {p.mistake for p in out if not p.ok} == {"star_without_footnote"}
    assert all(p.ok for p in out if "made-up" not in p.message.en)


def test_the_sparse_peak_in_task_7_is_named_as_such():
    """The learner's trial: the sparse 1,979 TFLOPS as the compute roof was told "the compute roof is missing"."""
    def sparse_roof(model, row, context, target):
        plan = ref._plan(model, row, context)
        peak = max(ref.printed_number(f) for f in row["peak"].split("|")) * 1e12
        weights, per_sequence = model["params"] * model["weight_bytes"], ref.kv_bytes_per_sequence(model, context)
        rate = lambda b: b / max((weights + b * per_sequence) / (ref.bandwidth_gbs(row) * 1e9),  # noqa: E731
                                 2 * model["params"] * b / peak)
        return {"max_batch": plan["max_batch"], "batch": ref._smallest_batch({**plan, "rate": rate}, target)}
    failed = [p for p in parts("serve", sparse_roof, hidden=False) if not p.ok]
    assert failed and {p.mistake for p in failed} == {"above_compute_roof"}
    assert "sparsity" in failed[0].message.en and "missing" not in failed[0].message.en


def test_serve_visible_cases_hold_the_rules_the_text_states():
    """max_batch is 0 when the weights alone overflow (70B bf16 on 80 GiB), and no batch above it is chosen."""
    for name in ("negative_max_batch", "batch_not_capped"):
        out = parts("serve", ref.MISTAKES["serve"][name], hidden=False)
        assert {p.mistake for p in out if not p.ok} == {name}


# ---------------------------------------------------------------- task 5: the broken measurement
def _given_buggy_function():
    """``copy_bandwidth_buggy`` exactly as the exercise gives it."""
    nb = nbformat.read(str(layout.exercise("03_memory_hierarchy", "solutions", REPO)), as_version=4)
    source = next(c.source for c in nb.cells if c.id == "debug-given")
    namespace = {"SimulatedGPU": SimulatedGPU, "EXAMPLE": EXAMPLE}
    exec(source.split("\n\n\ndev = ")[0], namespace)
    return namespace["copy_bandwidth_buggy"]


def test_the_given_function_is_diagnosed_and_each_fix_reveals_the_next_bug():
    """Fixing the exercise's function one bug at a time, the check names the bug that is left."""
    buggy = _given_buggy_function()
    assert {p.mistake for p in parts("debug", buggy, hidden=False)} == {"no_synchronize"}

    def synced(dev):
        nbytes = 64 * 2**20
        src, dst = dev.empty(nbytes), dev.empty(nbytes)
        start = dev.clock()
        dev.copy_(dst, src)
        dev.synchronize()
        return nbytes / (dev.clock() - start) / 2**30
    # the 64 MiB pair fits in the MI300X-like device's 256 MiB cache, not in the H100-like one's 50 MiB
    assert [p.mistake for p in parts("debug", synced, hidden=False)] == ["no_warm_up", "fits_in_cache"]
    warm = lambda dev: ref.copy_bandwidth_gbs(dev, nbytes=64 * 2**20, sample_s=0, counted=1, unit=2**30)  # noqa: E731
    assert [p.mistake for p in parts("debug", warm, hidden=False)] == ["short_sample", "fits_in_cache"]
    sized = lambda dev: ref.copy_bandwidth_gbs(dev, sample_s=0, counted=1, unit=2**30)  # noqa: E731
    assert {p.mistake for p in parts("debug", sized, hidden=False)} == {"reads_only"}
    counted = lambda dev: ref.copy_bandwidth_gbs(dev, sample_s=0, unit=2**30)  # noqa: E731
    assert {p.mistake for p in parts("debug", counted, hidden=False)} == {"gib"}
    assert {p.mistake for p in parts("debug", ref.MISTAKES_COPY["short_sample"], hidden=False)} == {"short_sample", None}


def test_debug_needs_a_measurement_on_the_device():
    out = parts("debug", lambda dev: 3000.0, hidden=False)
    assert not any(p.ok for p in out) and "Nothing was measured" in out[0].message.en


def test_a_hard_coded_bandwidth_fails_the_hidden_devices():
    def measured_then_constant(dev):
        ref.copy_bandwidth_gbs(dev)
        return EXAMPLE["hbm_gbs"]
    assert share("debug", measured_then_constant) < 0.5


def test_a_fixed_buffer_size_fails_where_the_cache_is_larger():
    """200 MiB buffers are right for a 50 MiB cache, wrong for the 256 MiB one (visible) and larger hidden ones."""
    fixed = lambda dev: ref.copy_bandwidth_gbs(dev, nbytes=200 * 2**20)  # noqa: E731
    out = parts("debug", fixed, hidden=False)
    assert out[0].ok and not out[1].ok and out[1].mistake == "buffer_under_4x"


def test_buffers_under_four_times_the_cache_break_the_rule_even_when_the_number_is_right():
    """The learner's trial: 64 MiB buffers on the H100-like device (50 MiB cache) measure its memory, but the rule
    the task states is 4 x 50 MiB = 200 MiB per buffer."""
    out = parts("debug", lambda dev: ref.copy_bandwidth_gbs(dev, nbytes=64 * 2**20), hidden=False)
    assert out[0].mistake == "buffer_under_4x" and "200 MiB" in out[0].message.en and "64 MiB" in out[0].message.en


def test_small_launch_bound_copies_are_not_called_cache_hits():
    """The learner's trial: 1 MiB buffers, thousands of launches, 419 GB/s (7x below memory): the launches were timed."""
    out = parts("debug", ref.MISTAKES_COPY["launch_bound"], hidden=False)
    assert [p.mistake for p in out] == ["launch_bound", "launch_bound"]
    assert "419" in out[0].message.en and "fit in the cache" not in out[0].message.en


# ---------------------------------------------------------------- measurements: answers as recorded, by hand
def observed(rounds, references, walls=None):
    """A measurement answer: the learner's rounds and what the referee observed (walls, references, and the course's
    clock timing each size with time_fn, one call reading the set as often as 64 MiB takes, at the round's GB/s)."""
    walls = [1.0] * len(rounds) if walls is None else walls
    spans = [[[max(1, 2**26 // size) * size / (gbs * 1e9), f"time_fn:{i}"]
              for i, (size, gbs) in enumerate(zip(r["sizes"], r["gbs"])) if isinstance(gbs, float) and gbs > 0]
             if isinstance(r, dict) and isinstance(r.get("gbs"), list) and r.get("sizes") else [] for r in rounds]
    return {"rounds": rounds, "observed": {"walls": walls, "reference": references, "spans": spans}}


LLC = checks.LLC_CAP  # the judged cache: a CPU reporting this last-level cache (or a larger one)
SWEEP_CASE = {"start_kib": 16, "beyond": 8, "per_octave": 1}


@pytest.fixture
def sweep_machine(monkeypatch):
    """A CPU with a 16 MiB last-level cache; ``levels`` are the cache sizes where the knee may sit."""
    levels = [LLC]
    monkeypatch.setattr(checks, "_device", lambda: "cpu")
    monkeypatch.setattr(checks, "last_level_cache", lambda device: LLC)
    monkeypatch.setattr(checks, "cache_levels", lambda device: list(levels))
    return levels


def sweep_answer(gbs_of, reference_of=None, sizes=None, walls=None, llc=LLC, reference_calls=0):
    """Three rounds of a sweep; the reference sweep is ``reference_of`` (default: the same values)."""
    sizes = sizes or checks.sweep_sizes(LLC)
    mine = {"device": "cpu", "llc_bytes": llc, "sizes": sizes, "gbs": [gbs_of(s) for s in sizes],
            "reference_calls": reference_calls}
    reference = {"gbs": [(reference_of or gbs_of)(s) for s in sizes]}
    return observed([mine] * 3, [reference] * 3, walls)


def stepped(s):
    return 90.0 if s <= LLC / 2 else 20.0


def score(answer):
    return checks._sweep_score(SWEEP_CASE, answer, None)


def test_sweep_good_shape_full_marks(sweep_machine):
    assert fraction(score(sweep_answer(stepped))) == 1.0
    assert fraction(score(sweep_answer(lambda s: 1.5 * stepped(s), stepped))) == 1.0


def test_a_server_cpus_huge_l3_is_judged_at_the_cap(monkeypatch):
    monkeypatch.setattr(checks, "_device", lambda: "cpu")
    monkeypatch.setattr(checks, "last_level_cache", lambda device: 480 * 2**20)
    device, llc, sizes = checks._sweep_plan(SWEEP_CASE)
    assert llc == LLC and sizes[0] == 16 * 1024 and sizes[-1] == 8 * LLC == 128 * 2**20


def test_sweeps_stay_small_enough_to_check_in_seconds():
    """At most 15 sizes and 256 MiB whatever the case (visible or hidden) and the cache: the check cell stays far
    under nbgrader's 30 s on a busy 2-core machine (3 rounds x 2 sweeps x 0.05 s per size)."""
    for seed in range(20):
        for case in checks._sweep_visible() + ref.HIDDEN["sweep"](random.Random(seed)):
            for llc in (2**20, 8 * 2**20, LLC, 480 * 2**20):
                sizes = checks.sweep_sizes(min(llc, LLC), case["start_kib"] * 1024, case["beyond"], case["per_octave"])
                assert len(sizes) <= 15 and sizes[-1] <= 256 * 2**20, (case, llc)
    assert 3 * 2 * 15 * checks.SWEEP_BUDGET_S <= 5


def test_calling_the_course_measurement_scores_nothing(sweep_machine):
    out = score(sweep_answer(stepped, reference_calls=14))
    assert fraction(out) == 0.0 and [p.mistake for p in out] == ["reference_called"]


def test_the_check_sees_a_call_of_the_course_measurement_however_it_was_imported(monkeypatch):
    """The learner's function may call the referee's sweep, or read_bandwidth_gbs imported under another name."""
    from autograder.modules.m03_memory_hierarchy import measure
    monkeypatch.setattr(checks, "_sweep_plan", lambda case: ("cpu", LLC, [4096, 8192]))
    alias = measure.read_bandwidth_gbs
    calling = [lambda sizes, device, budget_s: measure.reference_sweep(sizes, device, 0.005),
               lambda sizes, device, budget_s: [alias(s, device, 0.005) for s in sizes]]
    for fn in calling:
        assert checks._sweep_answer(fn, SWEEP_CASE)["reference_calls"] == 2
    own = lambda sizes, device, budget_s: ref.bandwidth_sweep(sizes, device, 0.005)  # noqa: E731
    assert checks._sweep_answer(own, SWEEP_CASE)["reference_calls"] == 0
    assert checks._sweep_reference(SWEEP_CASE, None)["gbs"]  # the referee's own calls happen outside the answer


def test_small_sets_read_once_per_call_name_the_call_overhead(sweep_machine):
    """The learner's trial: x.sum() timed per call. The smallest sets come out far below the reference, the rest
    near it, so the band and the shape alone would pass."""
    once = lambda s: stepped(s) * min(1.0, s / (256 * 1024))  # noqa: E731  (overhead-bound below 256 KiB)
    out = score(sweep_answer(once, stepped))
    assert fraction(_central(task("m03.sweep"), out)) == pytest.approx(CENTRAL)  # the task's mistake keeps a third
    failed = [p for p in out if not p.ok]
    assert [p.mistake for p in failed] == ["call_overhead"] and "0.09x the reference" in failed[0].message.en


def test_sweep_flat_or_inverted_shapes_lose_the_shape_parts(sweep_machine):
    # measured like the reference (the ratio is in the band), but the shape is wrong
    for shape in (lambda s: 40.0, lambda s: s / 1e6):
        out = score(sweep_answer(shape, stepped))
        assert not [p for p in out if p.label and p.label.en.startswith("in-cache")][0].ok


def test_a_partial_sweep_verdict_lists_the_parts_that_are_right(sweep_machine, monkeypatch, capsys):
    """The learner's trial: "1 of 3 items not passed" listed only the failed item; the passed ones now show."""
    from autograder.checks.core import report
    out = score(sweep_answer(lambda s: stepped(s) * min(1.0, s / (256 * 1024)), stepped))
    report(checks.TASKS["sweep"].title, out, 3)
    text = capsys.readouterr().out
    assert "✅ in-cache sets ≥ 1.2x faster" in text and "✅ knee within 1/16–16x a cache size" in text
    assert "❌" in text and "Found" in text


def test_sweep_far_from_the_reference_loses_the_band(sweep_machine):
    out = score(sweep_answer(lambda s: 10 * stepped(s), stepped))
    assert fraction(out) == pytest.approx(0.6) and "On a CPU nothing runs asynchronously" in out[0].message.en
    mb = score(sweep_answer(lambda s: 1000 * stepped(s), stepped))
    assert "mb_per_s" in {p.mistake for p in mb if not p.ok}


def test_a_slow_sweep_gets_the_sweeps_hint_not_the_matmuls(sweep_machine):
    out = score(sweep_answer(lambda s: 0.2 * stepped(s), stepped))
    band = out[0].message
    assert not out[0].ok and "re-reads the set many times" in band.en and "dtype" not in band.en
    assert "matrix size" not in band.en and "행렬" not in band.ko and band.en.startswith("Found")


def test_sweep_knee_far_from_every_cache_loses_the_knee_part(sweep_machine):
    answer = sweep_answer(lambda s: 90.0 if s <= 2**19 else 20.0)  # falls after 512 KiB = LLC/32
    assert fraction(score(answer)) == pytest.approx(0.8)


def test_sweep_knee_may_sit_at_any_cache_level(sweep_machine):
    sweep_machine[:] = [1 * 2**20, LLC]  # a 1 MiB L2 below the 16 MiB L3
    answer = sweep_answer(lambda s: 90.0 if s <= 2**19 else 20.0)
    assert fraction(score(answer)) == 1.0
    assert fraction(score(sweep_answer(stepped))) == 1.0


def test_cache_levels_are_l2_and_l3_on_a_cpu_and_l2_on_a_gpu(monkeypatch):
    from types import SimpleNamespace as S
    report = S(cpu=S(l2_bytes=2**21, l3_bytes=LLC, last_level_cache_bytes=LLC),
               accelerators=[S(device="cuda:0", backend="cuda", l2_bytes=50 * 2**20, name="NVIDIA H100 80GB HBM3")])
    monkeypatch.setattr("autograder.hardware.detect", lambda *a, **k: report)
    assert checks.cache_levels("cpu") == [2**21, LLC]
    assert checks.cache_levels("cuda") == [50 * 2**20]
    assert checks.cache_levels("mps") == []


def test_sweep_wrong_length_or_values(sweep_machine):
    answer = sweep_answer(lambda s: 50.0)
    short = observed([{**r, "gbs": r["gbs"][:-1]} for r in answer["rounds"]], answer["observed"]["reference"])
    assert fraction(score(short)) == 0.0
    zeros = observed([{**r, "gbs": [0.0] * len(r["gbs"])} for r in answer["rounds"]], answer["observed"]["reference"])
    assert fraction(score(zeros)) == 0.0
    assert fraction(score(observed([], []))) == 0.0
    old_sizes = sweep_answer(lambda s: 50.0, sizes=checks.sweep_sizes(LLC)[:-1])  # sizes not this machine's
    assert fraction(score(old_sizes)) == 0.0


def test_sweep_must_be_measured_while_the_referee_watches(sweep_machine):
    constant = score(sweep_answer(stepped, walls=[1e-4] * 3))
    assert fraction(constant) == 0.0 and "this was not measured" in constant[0].message.en
    unseen = score(sweep_answer(stepped, walls=[1.0]))
    assert fraction(unseen) == 0.0 and "while the grader watched" in unseen[0].message.en


def test_sweep_unknown_cache_grades_speed_only(monkeypatch):
    monkeypatch.setattr(checks, "_device", lambda: "mps")
    monkeypatch.setattr(checks, "last_level_cache", lambda device: None)
    sizes = checks.sweep_sizes(LLC, 16 * 1024, 8, 1)
    assert checks._sweep_plan(SWEEP_CASE) == ("mps", None, sizes)
    answer = sweep_answer(lambda s: 100.0 if s < 2**23 else 30.0, sizes=sizes, llc=None)
    out = score(answer)
    assert fraction(out) == 1.0 and any(p.weight == 0 for p in out)
    flat = score(sweep_answer(lambda s: 30.0, sizes=sizes, llc=None))
    assert 0 < fraction(flat) < 1


def test_sweep_reference_sweeps_this_machines_sizes(sweep_machine, monkeypatch):
    from autograder.modules.m03_memory_hierarchy import measure
    seen = []

    def reference_sweep(sizes, device, budget_s):
        seen.append((list(sizes), device))
        return [1.0] * len(sizes)
    monkeypatch.setattr(measure, "reference_sweep", reference_sweep)
    monkeypatch.setattr(referee, "_LAST_REFERENCE", {})
    out = checks._sweep_reference(SWEEP_CASE, {"sizes": [4096], "gbs": [1.0]})
    assert seen == [(checks.sweep_sizes(LLC), "cpu")] and out == {"gbs": [1.0] * len(seen[0][0])}


def test_the_task_is_not_its_answer_under_its_name():
    """The referee's sweep is not called bandwidth_sweep, the name (and signature) of the task's answer."""
    from autograder.modules.m03_memory_hierarchy import measure
    assert not hasattr(measure, "bandwidth_sweep") and not hasattr(checks, "bandwidth_sweep")


def test_sweep_reference_on_this_cpu():
    """The reference sweep on the real CPU: in-cache sets beat sets beyond the last-level cache."""
    case = checks._sweep_visible()[0]
    answer = checks._sweep_answer(lambda sizes, device, budget_s: ref.bandwidth_sweep(sizes, device, 0.02), case)
    fast, slow = analysis.sweep_plateaus(answer["sizes"], answer["gbs"], answer["llc_bytes"] or checks.LLC_CAP)
    assert fast > slow and answer["reference_calls"] == 0


# ---------------------------------------------------------------- issue 27: a hint is right or silent
def test_a_timer_of_the_read_alone_is_told_half_not_synchronize():
    """The learner's trial (x0.4987): a copy left running at the first clock reading, nbytes counted once. The
    figure near half is the evidence: it is named so, never as a missing synchronize."""
    def read_only(dev):
        n = 4 * dev.cache_bytes
        src, dst = dev.empty(n), dev.empty(n)
        dev.copy_(dst, src)
        dev.synchronize()
        dev.copy_(dst, src)
        began = dev.clock()  # that copy still runs
        for _ in range(200):
            dev.copy_(dst, src)
        dev.synchronize()
        return n * 200 / (dev.clock() - began) / 1e9
    failed = [p for p in parts("debug", read_only, hidden=False) if not p.ok]
    assert failed and {p.mistake for p in failed} == {"reads_only"}
    assert all("synchronize" not in p.message.en for p in failed)


def test_a_sweep_of_elements_is_told_the_factor_4_not_the_call_overhead(sweep_machine):
    out = score(sweep_answer(lambda s: stepped(s) / 4, stepped))
    named = {p.mistake for p in out if not p.ok}
    assert named == {"elements_counted"} and "threads=1" not in " ".join(p.message.en for p in out)


def test_a_sweep_above_the_band_because_the_reference_slowed_is_not_accused(sweep_machine):
    """The learner's trial (ratio 2.39 on a CPU): an honest sweep, the reference slowed in its rounds."""
    sizes = checks.sweep_sizes(LLC)
    mine = {"device": "cpu", "llc_bytes": LLC, "sizes": sizes, "gbs": [stepped(s) for s in sizes],
            "reference_calls": 0}
    slowed = [{"gbs": [stepped(s) / f for s in sizes]} for f in (2.6, 2.4, 1.0)]
    out = score(observed([mine] * 3, slowed))
    band = out[0]
    assert not band.ok and band.mistake is None and "the machine was busy" in band.message.en
    assert "synchronize" not in band.message.en


def test_a_slowed_reference_sweep_is_taken_again_within_a_bound(sweep_machine, monkeypatch):
    from autograder.modules.m03_memory_hierarchy import measure
    speeds = iter([90.0, 30.0, 40.0, 80.0, 10.0, 10.0, 10.0])
    monkeypatch.setattr(measure, "reference_sweep", lambda sizes, device, budget_s: [next(speeds)] * len(sizes))
    monkeypatch.setattr(referee, "_LAST_REFERENCE", {})
    assert checks._sweep_reference(SWEEP_CASE, None)["gbs"][0] == 90.0       # the first: nothing to compare with
    assert checks._sweep_reference(SWEEP_CASE, None)["gbs"][0] == 80.0       # 30 fell 3x: again (40), again (80)
    assert checks._sweep_reference(SWEEP_CASE, None)["gbs"][0] == 10.0       # at most RETAKES more, the fastest kept
    assert next(speeds, None) is None
