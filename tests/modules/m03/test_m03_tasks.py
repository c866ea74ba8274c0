"""Checks of module 03: references get full marks, stubs fail, hard-coding fails hidden cases, a partial answer gets
labelled partial credit, known mistakes are named, and the measurement debugging task diagnoses each planted bug."""
import json
import random

import nbformat
import pytest

from autograder.checks import CheckFailed, check, task
from autograder.checks.core import cases_for, collect, fraction, score_records
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
    t = task(f"m03.{name}")
    return score_records(t, collect(t, fn, cases_for(t, hidden, SEED)))


def share(name: str, fn, hidden: bool = True) -> float:
    return fraction(parts(name, fn, hidden))


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


def test_fusion_mistakes_are_told_apart():
    """Reading a tensor once per use and keeping the intermediates give different wrong numbers for SiLU."""
    silu = checks._fusion_visible()[0]
    answers = {m: checks._fusion_answer(fn, silu) for m, fn in ref.MISTAKES["fusion"].items()}
    assert len({json.dumps(a, sort_keys=True) for a in answers.values()}) == len(answers)


# ---------------------------------------------------------------- task 5: the broken measurement
def _given_buggy_function():
    """``copy_bandwidth_buggy`` exactly as the exercise gives it."""
    nb = nbformat.read(str(REPO / "solutions" / "03_memory_hierarchy" / "exercise.ipynb"), as_version=4)
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
    fixed = lambda dev: ref.copy_bandwidth_gbs(dev, nbytes=100 * 2**20)  # noqa: E731
    out = parts("debug", fixed, hidden=False)
    assert out[0].ok and not out[1].ok and out[1].mistake == "fits_in_cache"


# ---------------------------------------------------------------- measurements: answers as recorded, by hand
def observed(rounds, references, walls=None):
    """A measurement answer: the learner's rounds and what the referee observed (walls, references)."""
    walls = [1.0] * len(rounds) if walls is None else walls
    return {"rounds": rounds, "observed": {"walls": walls, "reference": references}}


LLC = 32 * 2**20
SWEEP_CASE = {"start_kib": 64, "beyond": 8, "per_octave": 1}


@pytest.fixture
def sweep_machine(monkeypatch):
    """A CPU with a 32 MiB last-level cache; ``levels`` are the cache sizes where the knee may sit."""
    levels = [LLC]
    monkeypatch.setattr(checks, "_device", lambda: "cpu")
    monkeypatch.setattr(checks, "last_level_cache", lambda device: LLC)
    monkeypatch.setattr(checks, "cache_levels", lambda device: list(levels))
    return levels


def sweep_answer(gbs_of, reference_of=None, sizes=None, walls=None, llc=LLC):
    """Three rounds of a sweep; the reference sweep is ``reference_of`` (default: the same values)."""
    sizes = sizes or checks.sweep_sizes(LLC)
    mine = {"device": "cpu", "llc_bytes": llc, "sizes": sizes, "gbs": [gbs_of(s) for s in sizes]}
    reference = {"gbs": [(reference_of or gbs_of)(s) for s in sizes]}
    return observed([mine] * 3, [reference] * 3, walls)


def stepped(s):
    return 90.0 if s <= LLC / 2 else 20.0


def test_sweep_good_shape_full_marks(sweep_machine):
    assert fraction(checks._sweep_score(SWEEP_CASE, sweep_answer(stepped), None)) == 1.0
    assert fraction(checks._sweep_score(SWEEP_CASE, sweep_answer(lambda s: 1.5 * stepped(s), stepped), None)) == 1.0


def test_sweep_flat_or_inverted_shapes_lose_points_and_name_the_call_overhead(sweep_machine):
    # measured like the reference (the ratio is in the band), but the shape is wrong
    for shape in (lambda s: 30.0, lambda s: s / 1e6):
        out = checks._sweep_score(SWEEP_CASE, sweep_answer(shape), None)
        assert fraction(out) == pytest.approx(0.5) and "call_overhead" in {p.mistake for p in out if not p.ok}


def test_sweep_far_from_the_reference_loses_the_band(sweep_machine):
    out = checks._sweep_score(SWEEP_CASE, sweep_answer(lambda s: 10 * stepped(s), stepped), None)
    assert fraction(out) == pytest.approx(0.5) and "Faster than the hardware can be" in out[0].message.en
    mb = checks._sweep_score(SWEEP_CASE, sweep_answer(lambda s: 1000 * stepped(s), stepped), None)
    assert "mb_per_s" in {p.mistake for p in mb if not p.ok}


def test_sweep_knee_far_from_every_cache_loses_the_knee_part(sweep_machine):
    answer = sweep_answer(lambda s: 90.0 if s <= 2**20 else 20.0)  # falls after 1 MiB = LLC/32
    assert fraction(checks._sweep_score(SWEEP_CASE, answer, None)) == pytest.approx(0.75)


def test_sweep_knee_may_sit_at_any_cache_level(sweep_machine):
    sweep_machine[:] = [1 * 2**20, LLC]  # a 1 MiB L2 below the 32 MiB L3
    answer = sweep_answer(lambda s: 90.0 if s <= 2**20 else 20.0)
    assert fraction(checks._sweep_score(SWEEP_CASE, answer, None)) == 1.0
    assert fraction(checks._sweep_score(SWEEP_CASE, sweep_answer(stepped), None)) == 1.0


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
    assert fraction(checks._sweep_score(SWEEP_CASE, short, None)) == 0.0
    zeros = observed([{**r, "gbs": [0.0] * len(r["gbs"])} for r in answer["rounds"]], answer["observed"]["reference"])
    assert fraction(checks._sweep_score(SWEEP_CASE, zeros, None)) == 0.0
    assert fraction(checks._sweep_score(SWEEP_CASE, observed([], []), None)) == 0.0
    old_sizes = sweep_answer(lambda s: 50.0, sizes=checks.sweep_sizes(LLC)[:-1])  # sizes not this machine's
    assert fraction(checks._sweep_score(SWEEP_CASE, old_sizes, None)) == 0.0


def test_sweep_must_be_measured_while_the_referee_watches(sweep_machine):
    constant = checks._sweep_score(SWEEP_CASE, sweep_answer(stepped, walls=[1e-4] * 3), None)
    assert fraction(constant) == 0.0 and "this was not measured" in constant[0].message.en
    unseen = checks._sweep_score(SWEEP_CASE, sweep_answer(stepped, walls=[1.0]), None)
    assert fraction(unseen) == 0.0 and "while the grader watched" in unseen[0].message.en


def test_sweep_unknown_cache_grades_speed_only(monkeypatch):
    monkeypatch.setattr(checks, "_device", lambda: "mps")
    monkeypatch.setattr(checks, "last_level_cache", lambda device: None)
    sizes = checks.sweep_sizes(2**30 // 8, 2**20, 8, 1)
    answer = sweep_answer(lambda s: 100.0 if s < 2**24 else 30.0, sizes=sizes, llc=None)
    out = checks._sweep_score(SWEEP_CASE, answer, None)
    assert fraction(out) == 1.0 and any(p.weight == 0 for p in out)
    flat = checks._sweep_score(SWEEP_CASE, sweep_answer(lambda s: 30.0, sizes=sizes, llc=None), None)
    assert 0 < fraction(flat) < 1 and "call_overhead" in {p.mistake for p in flat}


def test_sweep_reference_sweeps_this_machines_sizes(sweep_machine, monkeypatch):
    seen = []

    def bandwidth_sweep(sizes, device, budget_s):
        seen.append((list(sizes), device))
        return [1.0] * len(sizes)
    monkeypatch.setattr(checks, "bandwidth_sweep", bandwidth_sweep)
    out = checks._sweep_reference(SWEEP_CASE, {"sizes": [4096], "gbs": [1.0]})
    assert seen == [(checks.sweep_sizes(LLC), "cpu")] and out == {"gbs": [1.0] * len(seen[0][0])}


def test_sweep_reference_on_this_cpu():
    """The reference sweep on the real CPU: in-cache sets beat sets beyond the last-level cache."""
    case = checks._sweep_visible()[0]
    answer = checks._sweep_answer(lambda sizes, device, budget_s: ref.bandwidth_sweep(sizes, device, 0.1), case)
    fast, slow = analysis.sweep_plateaus(answer["sizes"], answer["gbs"], answer["llc_bytes"])
    assert fast > slow
