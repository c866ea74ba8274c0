"""Module 01 checks: the exercise's reference solution gets full marks, typical mistakes do not."""
import json
import statistics
import sys
import time
from pathlib import Path

import pytest

from autograder.checks import CheckFailed, check, referee, task
from autograder.modules.m01_devices import tasks as checks
from autograder.checks.core import Part, cases_for, collect, fraction, score_records
from autograder.expectations import Band
from autograder.i18n import Message

ROOT = Path(__file__).resolve().parents[3]
SOLUTION = ROOT / "solutions" / "01_devices" / "exercise.ipynb"


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
    records = collect(t, learner, cases_for(t, hidden, seed))
    return fraction(score_records(t, records))


def stub(*args, **kwargs):
    raise NotImplementedError()


def test_grade_cells_name_existing_tasks_with_matching_points():
    for cell in json.loads(SOLUTION.read_text(encoding="utf-8"))["cells"]:
        meta = cell["metadata"].get("nbgrader", {})
        if meta.get("grade"):
            source = "".join(cell["source"])
            task_id = source.split('"')[1]
            assert task_id.removeprefix("m01.") in checks.TASKS
            assert f"points={meta['points']}," in source


@pytest.mark.parametrize("task_id,name", [
    ("m01.picker", "pick_device"), ("m01.mlx_picker", "pick_mlx_device"), ("m01.mlx_usable", "mlx_usable"),
    ("m01.inventory", "device_inventory"), ("m01.timer", "time_call"), ("m01.memory", "finetune_plan"),
])
def test_reference_solution_gets_full_marks_and_stub_fails(solution, task_id, name, capsys):
    assert check(task_id, solution[name], points=2, hidden=True) is None
    with pytest.raises(CheckFailed, match="NotImplementedError"):
        check(task_id, stub, points=2, hidden=True)
    assert capsys.readouterr().err == ""


def test_speedup_reference_and_mistakes(solution, monkeypatch):
    """A real (small) run: every round is observed and measured; the ratio bands are left to the hand-built
    answers below, since they compare two timings that the machine's load may shift."""
    monkeypatch.setattr(checks, "speedup_widths", lambda: [64, 96, 128])
    monkeypatch.delenv("COURSE_REFEREE", raising=False)
    t = task("m01.speedup")
    [record] = collect(t, solution["compare_devices"], cases_for(t, False, 3), "m01.speedup")
    answer = record["answer"]
    assert record["error"] is None and len(answer["rounds"]) == t.rounds == 5
    assert all(isinstance(r["cpu_s"], float) and isinstance(r["accel_s"], float) for r in answer["rounds"])
    assert len(answer["observed"]["walls"]) == t.rounds
    assert all(set(ref) == {"cpu_s", "accel_s"} for ref in answer["observed"]["reference"])
    assert referee.unmeasured(answer, lambda r: r["cpu_s"] + r["accel_s"]) is None
    with pytest.raises(CheckFailed, match="NotImplementedError"):
        check("m01.speedup", stub, points=2)

    def in_milliseconds(make_step, width=512):
        result = solution["compare_devices"](make_step, width)
        return {**result, "cpu_s": result["cpu_s"] * 1e3}
    assert share("m01.speedup", in_milliseconds) < 1.0
    assert share("m01.speedup", lambda make_step, width=512: [1, 2]) == 0.0


def band(lo, hi):
    return Band(lo, hi, "×", Message("이유", "reason"), "measured", None)


def speedup(rounds, reference, walls=None):
    """A recorded m01.speedup answer: the learner's rounds and what the referee observed (by hand)."""
    walls = [1.0] * len(rounds) if walls is None else walls
    return {"rounds": rounds, "observed": {"walls": walls, "reference": reference}}


def test_speedup_score_on_cpu_only_and_accelerator_machines(monkeypatch):
    import autograder.expectations as expectations
    import autograder.hardware as hardware

    good = {"cpu_s": 0.010, "accel_s": 0.011, "accel_device": "cpu"}
    ref = {"cpu_s": 0.010, "accel_s": 0.010}
    monkeypatch.setattr(hardware, "best_device", lambda *a, **k: "cpu")
    assert fraction(checks._speedup_score({}, speedup([good] * 3, [ref] * 3), None)) == 1.0
    wrong_device = {**good, "accel_device": "cuda"}
    assert fraction(checks._speedup_score({}, speedup([wrong_device] * 3, [ref] * 3), None)) == 0.75
    noisy_then_good = speedup([{**good, "accel_s": 0.05}, good, good], [ref] * 3)
    assert fraction(checks._speedup_score({}, noisy_then_good, None)) == 1.0  # the median round counts
    noisy_mostly = speedup([{**good, "accel_s": 0.05}] * 2 + [good], [ref] * 3)
    assert fraction(checks._speedup_score({}, noisy_mostly, None)) == 0.5  # 5x the reference, and a 0.2x "speedup"

    monkeypatch.setattr(hardware, "best_device", lambda *a, **k: "cuda")
    monkeypatch.setattr(expectations, "expect", lambda kind, **kw: band(1.0, 80.0))
    on_gpu = {"cpu_s": 0.050, "accel_s": 0.002, "accel_device": "cuda"}
    gpu_ref = {"cpu_s": 0.05, "accel_s": 0.002}
    assert fraction(checks._speedup_score({}, speedup([on_gpu] * 3, [gpu_ref] * 3), None)) == 1.0
    unsynchronized = {**on_gpu, "accel_s": 0.00002}  # timed the launch: 2500x "speedup", 100x off the reference
    parts = checks._speedup_score({}, speedup([unsynchronized] * 3, [gpu_ref] * 3), None)
    assert fraction(parts) == 0.5
    assert any("Faster than the hardware can be" in p.message.en for p in parts if not p.ok)
    stayed_on_cpu = {**on_gpu, "accel_device": "cpu", "accel_s": 0.05}
    assert fraction(checks._speedup_score({}, speedup([stayed_on_cpu] * 3, [gpu_ref] * 3), None)) <= 0.5


def test_speedup_must_be_measured_while_the_referee_watches(monkeypatch):
    import autograder.hardware as hardware

    monkeypatch.setattr(hardware, "best_device", lambda *a, **k: "cpu")
    good = {"cpu_s": 0.010, "accel_s": 0.011, "accel_device": "cpu"}
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


# ---------------------------------------------------------------- typical mistakes
def test_picker_mistakes(solution):
    assert share("m01.picker", lambda prefer=None, torch_module=None: "cpu") < 0.5  # hard-coded

    def ignores_prefer(prefer=None, torch_module=None):
        return solution["pick_device"](None, torch_module) if torch_module is not None else "cpu"
    assert 0 < share("m01.picker", ignores_prefer) < 1

    def assumes_xpu(prefer=None, torch_module=None):
        torch_module = torch_module or __import__("torch")
        for name, ok in (("cuda", torch_module.cuda.is_available()), ("mps", torch_module.backends.mps.is_available()),
                         ("xpu", torch_module.xpu.is_available())):
            if ok and prefer in (None, name):
                return name
        if prefer not in (None, "cpu"):
            raise ValueError(prefer)
        return "cpu"
    assert 0.8 < share("m01.picker", assumes_xpu) < 1  # crashes only where torch.xpu is missing

    def wrong_order(prefer=None, torch_module=None):
        torch_module = torch_module or __import__("torch")
        if prefer is not None:
            return solution["pick_device"](prefer, torch_module)
        if torch_module.backends.mps.is_available():
            return "mps"
        return solution["pick_device"](None, torch_module)
    assert share("m01.picker", wrong_order) < 1


def test_mlx_mistakes(solution):
    def metal_only(prefer=None, mx_module=solution["mx"]):
        if mx_module is None:
            return None
        gpu = mx_module.metal.is_available()
        return solution["pick_mlx_device"](prefer, mx_module) if not gpu or prefer else mx_module.gpu
    assert share("m01.mlx_picker", metal_only) == 1.0  # metal.is_available is right on a Mac...

    def metal_gpu_check(prefer=None, mx_module=solution["mx"]):
        if mx_module is None:
            return None
        if prefer is None:
            return mx_module.gpu if mx_module.metal.is_available() else mx_module.cpu
        return solution["pick_mlx_device"](prefer, mx_module)
    assert share("m01.mlx_picker", metal_gpu_check) < 1.0  # ...but misses MLX's CUDA backend

    def import_only():
        try:
            import mlx.core  # noqa: F401
            return True
        except ImportError:
            return False
    assert 0 < share("m01.mlx_usable", import_only) < 1  # a broken install imports but cannot compute
    assert share("m01.mlx_usable", lambda: "yes") == 0.0
    real = solution["mx"]
    assert share("m01.mlx_usable", lambda: real is not None, hidden=False) < 1  # import at module level


def test_mlx_absent_machine_reference_still_passes(solution):
    before = sys.modules.get("mlx.core")
    with checks.mlx_modules({"mlx": None, "mlx.core": None}):
        assert check("m01.mlx_usable", solution["mlx_usable"], points=1, hidden=True) is None
        picker = solution["pick_mlx_device"]
        assert check("m01.mlx_picker", lambda prefer=None, mx_module=None: picker(prefer, mx_module),
                     points=1, hidden=True) is None
    assert sys.modules.get("mlx.core") is before  # restored afterwards


def test_inventory_mistakes(solution):
    inventory = solution["device_inventory"]

    def in_gb(torch_module=None):
        rows = inventory(torch_module) if torch_module is not None else inventory()
        return [{**r, "memory_gib": r["memory_gib"] * 2**30 / 1e9} for r in rows]
    parts = [p for p in _parts("m01.inventory", in_gb) if not p.ok]
    assert parts and all("2^30" in p.message.en for p in parts)

    def no_rocm(torch_module=None):
        rows = inventory(torch_module) if torch_module is not None else inventory()
        return [{**r, "kind": "cuda" if r["kind"] == "rocm" else r["kind"]} for r in rows]
    assert 0.8 < share("m01.inventory", no_rocm) < 1

    def accelerators_only(torch_module=None):
        rows = inventory(torch_module) if torch_module is not None else inventory()
        return rows[1:]
    assert share("m01.inventory", accelerators_only) < 0.5


def _parts(task_id, learner):
    t = task(task_id)
    return score_records(t, collect(t, learner, cases_for(t, True, 5)))


def test_timer_without_synchronize_gets_nothing():
    def no_sync(fn, device, repeats=5):
        fn()
        samples = []
        for _ in range(repeats):
            start = time.perf_counter()
            fn()
            samples.append(time.perf_counter() - start)
        return statistics.median(samples)
    with pytest.raises(CheckFailed, match="synchronize"):
        check("m01.timer", no_sync, points=2, hidden=True)


def test_timer_mistakes():
    def total(fn, device, repeats=5):
        device_sync = getattr(device, "synchronize", lambda: None)
        device_sync()
        start = time.perf_counter()
        for _ in range(repeats):
            fn()
        device_sync()
        return time.perf_counter() - start  # total, not per call
    assert share("m01.timer", total) == 0.0

    def mean_without_presync(fn, device, repeats=5):
        sync = getattr(device, "synchronize", lambda: None)
        samples = []
        for _ in range(repeats):
            start = time.perf_counter()
            fn()
            sync()
            samples.append(time.perf_counter() - start)
        return sum(samples) / len(samples)  # earlier queued work lands in the first sample
    assert 0 < share("m01.timer", mean_without_presync) < 1

    def crashes_on_strings(fn, device, repeats=5):
        device.synchronize()
        return 0.0
    assert share("m01.timer", crashes_on_strings) == 0.0


def test_timer_must_be_observed_and_measured():
    case = {"work_s": 0.03, "pending": 0, "cpu_s": 0.01}
    good = {"fake_s": 0.031, "cpu_s": 0.0105}
    assert checks._timer_score(case, {"rounds": [good], "observed": {"walls": [0.5], "reference": [None]}}, None).ok
    instant = checks._timer_score(case, {"rounds": [good], "observed": {"walls": [0.001], "reference": [None]}}, None)
    assert not instant.ok and "this was not measured" in instant.message.en  # a constant: no time spent
    unobserved = checks._timer_score(case, {"rounds": [good]}, None)
    assert not unobserved.ok and "while the grader watched" in unobserved.message.en
    assert not checks._timer_score(case, {"rounds": [], "observed": {"walls": [], "reference": []}}, None).ok
    t = task("m01.timer")
    assert t.measurement and t.reference is None  # the referee's clock only


def test_memory_mistakes(solution):
    plan = solution["finetune_plan"]
    inference_bytes = lambda n, act, devices: {**plan(n, act, devices), "need_gb": 2 * n / 1e9 + act}  # noqa: E731
    assert 0 < share("m01.memory", inference_bytes) < 1

    def largest(n, act, devices):
        need = 16 * n / 1e9 + act
        fits = [d for d, m in devices.items() if m >= need]
        return {"need_gb": need, "device": max(fits, key=devices.get) if fits else None}
    assert 0.5 <= share("m01.memory", largest) < 1
    assert share("m01.memory", lambda n, act, devices: {"need_gb": 24.0, "device": "rtx_4090"}) < 0.3
    assert share("m01.memory", lambda n, act, devices: 24.0) == 0.0


def test_hidden_cases_vary_with_the_seed():
    for name in ("picker", "inventory", "memory", "timer"):
        t = task(f"m01.{name}")
        assert cases_for(t, True, 1) != cases_for(t, True, 2)


def test_every_failure_message_is_bilingual():
    for part in _parts("m01.picker", lambda prefer=None, torch_module=None: "cpu"):
        assert isinstance(part, Part) and part.message.ko != part.message.en


def test_notebook_links_resolve():
    """Exercise links point to anchors present in both lessons; lesson links point to existing notebooks."""
    import re

    exercise = SOLUTION.read_text(encoding="utf-8")
    anchors = set(re.findall(r"lesson\.(?:ko|en)\.ipynb#(sec-[\w-]+)", exercise))
    assert len(anchors) >= 4
    for lang in ("ko", "en"):
        path = ROOT / "lessons" / "01_devices" / f"lesson.{lang}.ipynb"
        body = path.read_text(encoding="utf-8")
        assert all(f'<a id=\\"{a}\\"></a>' in body for a in anchors), (lang, anchors)
        for target in set(re.findall(r"\]\(((?:\.\./)+[\w/.-]+\.ipynb)", body)):
            assert (path.parent / target).resolve().exists(), (lang, target)
