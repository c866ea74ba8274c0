"""The timing harness: synchronization, budgets, statistics, threads, cache flush, fakes.

No test asserts an absolute time: work comes from a fake device whose synchronize()
sleeps a known amount, and budgets are compared as ratios.
"""
import time

import pytest

from autograder import harness
from autograder.fakes import FakeAsyncDevice, audit_timer
from autograder.harness import Timing, flush_size, synchronizer, time_fn


@pytest.fixture(autouse=True)
def _both_languages(monkeypatch):
    """Messages in both languages, whatever COURSE_LANG says."""
    monkeypatch.setattr("autograder.i18n._chosen", "both")


def test_fake_device_sync_time_is_measured():
    dev = FakeAsyncDevice(work_s=0.05)
    t = time_fn(dev.launch, device=dev, budget_s=0.2, warmup=1, min_reps=3)
    assert t.median_s >= 0.05
    assert t.min_s >= 0.05
    assert t.device == "fake"
    assert dev.queued == 0


def test_spread_and_median_on_deterministic_fake():
    dev = FakeAsyncDevice(work_s=0.02)
    t = time_fn(dev.launch, device=dev, budget_s=0.3, warmup=1)
    assert t.n >= 3
    assert t.min_s <= t.p10_s <= t.median_s <= t.p90_s
    assert t.median_s >= 0.02
    assert 1.0 <= t.spread < 1.5  # sleeps are steady: no large spread
    assert t.inner == 1  # 20 ms per call: no need to batch calls


def test_naive_timer_is_caught():
    def forgets_sync(fn, device):
        began = time.perf_counter()
        fn()
        return time.perf_counter() - began

    ok, seconds = audit_timer(forgets_sync)
    assert not ok
    assert seconds < 0.045


def test_synchronizing_timer_passes_audit():
    def honest(fn, device):
        device.synchronize()
        began = time.perf_counter()
        fn()
        device.synchronize()
        return time.perf_counter() - began

    ok, seconds = audit_timer(honest)
    assert ok and seconds >= 0.045


def test_harness_passes_its_own_audit():
    ok, _ = audit_timer(lambda fn, device: time_fn(fn, device=device, budget_s=0.1, warmup=1))
    assert ok


def test_audit_rejects_non_numbers():
    with pytest.raises(TypeError, match="seconds"):
        audit_timer(lambda fn, device: "fast")


def test_budget_is_respected_as_a_ratio():
    dev = FakeAsyncDevice(work_s=0.01)
    for budget in (0.1, 0.3):
        began = time.perf_counter()
        t = time_fn(dev.launch, device=dev, budget_s=budget)
        took = time.perf_counter() - began
        assert 0.7 * budget <= took <= 1.5 * budget
        assert t.n >= 3


def test_longer_budget_gives_more_samples():
    dev = FakeAsyncDevice(work_s=0.005)
    short = time_fn(dev.launch, device=dev, budget_s=0.05, warmup=1)
    long = time_fn(dev.launch, device=dev, budget_s=0.2, warmup=1)
    assert long.n > 2 * short.n


def test_min_reps_wins_over_budget():
    dev = FakeAsyncDevice(work_s=0.02)
    t = time_fn(dev.launch, device=dev, budget_s=0.001, warmup=0, min_reps=4)
    assert t.n == 4


def test_warmup_by_time_makes_at_least_one_call():
    calls = []
    t = time_fn(lambda: calls.append(1), budget_s=0.02)
    assert t.warmup >= 1
    assert len(calls) >= t.warmup + t.n * t.inner


def test_short_kernels_are_batched():
    t = time_fn(lambda: None, budget_s=0.05)
    assert t.inner > 1
    assert t.median_s * t.inner >= harness.MIN_SAMPLE_S * 0.5


def test_synchronize_before_clock_and_after_work():
    events = []

    class Recorder:
        name = "recorder"

        def synchronize(self):
            events.append("sync")

    time_fn(lambda: events.append("work"), device=Recorder(), budget_s=0.01, warmup=1, inner=1,
            min_reps=2, max_reps=2)
    timed = events[-6:]  # two samples: sync, work, sync each
    assert timed == ["sync", "work", "sync"] * 2


def test_threads_set_and_restored():
    torch = pytest.importorskip("torch")
    before = torch.get_num_threads()
    seen = []
    t = time_fn(lambda: seen.append(torch.get_num_threads()), budget_s=0.01, threads=1)
    assert set(seen) == {1}
    assert t.threads == 1
    assert torch.get_num_threads() == before


def test_threads_restored_after_error():
    torch = pytest.importorskip("torch")
    before = torch.get_num_threads()

    def boom():
        raise RuntimeError("learner bug")

    with pytest.raises(RuntimeError):
        time_fn(boom, budget_s=0.01, threads=1)
    assert torch.get_num_threads() == before


def test_flush_buffer_is_at_least_twice_the_llc(monkeypatch):
    monkeypatch.setattr(harness, "cpu_last_level_cache", lambda: 96 * 2**20)
    assert flush_size("cpu") >= 2 * 96 * 2**20
    monkeypatch.setattr(harness, "cpu_last_level_cache", lambda: 8 * 2**20)
    assert flush_size("cpu") >= 64 * 2**20
    assert flush_size("cuda:0") >= 2 * 256 * 2**20  # MI300X's 256 MB Infinity Cache, twice


def test_flush_runs_before_each_sample(monkeypatch):
    flushes = []
    monkeypatch.setattr(harness, "_flusher", lambda name, kind, nbytes: lambda: flushes.append(nbytes))
    t = time_fn(lambda: None, budget_s=0.01, flush=True, flush_bytes=1234, min_reps=3, max_reps=3)
    assert t.flushed and t.inner == 1
    assert flushes == [1234] * 3


def test_real_flush_on_cpu():
    t = time_fn(lambda: None, budget_s=0.01, flush=True, flush_bytes=2**20, min_reps=2, max_reps=2)
    assert t.flushed and t.n == 2


def test_synchronizer_per_backend():
    assert synchronizer("cpu")() is None
    assert synchronizer("mlx")() is None
    dev = FakeAsyncDevice(work_s=0.0)
    assert synchronizer(dev) == dev.synchronize
    with pytest.raises(ValueError, match="Unknown device"):
        synchronizer("tpu")


def test_synchronizer_calls_torch_backends(monkeypatch):
    torch = pytest.importorskip("torch")
    calls = []
    monkeypatch.setattr(torch.cuda, "synchronize", lambda device=None: calls.append(("cuda", device)))
    monkeypatch.setattr(torch.mps, "synchronize", lambda: calls.append(("mps", None)))
    synchronizer("cuda:1")()
    synchronizer("mps")()
    synchronizer(torch.device("cuda", 0))()
    assert calls == [("cuda", "cuda:1"), ("mps", None), ("cuda", "cuda:0")]


def test_mlx_results_are_evaluated():
    mx = pytest.importorskip("mlx.core", reason="MLX is not installed")
    a = mx.ones((64, 64))
    results = []

    def work():
        out = a @ a
        results.append(out)
        return out, 1

    time_fn(work, device="mlx", budget_s=0.01, warmup=1, min_reps=1, max_reps=1, inner=1)
    assert results  # evaluated arrays: reading them needs no more work
    assert float(results[-1][0, 0].item()) == 64.0


def test_bad_arguments_are_explained():
    with pytest.raises(TypeError, match="no arguments"):
        time_fn(42)
    with pytest.raises(ValueError, match="budget_s"):
        time_fn(lambda: None, budget_s=0)
    with pytest.raises(ValueError, match="min_reps"):
        time_fn(lambda: None, min_reps=5, max_reps=2)
    with pytest.raises(ValueError, match="threads"):
        time_fn(lambda: None, threads=0)


def test_timing_text_is_bilingual():
    t = Timing(1e-3, 1e-3, 9e-4, 9e-4, 1.1e-3, 10, 2, "cpu", 2, False)
    text = Timing.__str__(t)
    assert "1 ms" in text and "median" in text and "중앙값" in text
    assert t.spread == pytest.approx(1.1e-3 / 9e-4)


def test_cuda_events_give_device_time(monkeypatch):
    torch = pytest.importorskip("torch")
    log = []

    class FakeEvent:
        def __init__(self, enable_timing=False):
            assert enable_timing

        def record(self, stream=None):
            log.append("record")

        def elapsed_time(self, end):
            return 5.0  # milliseconds, as CUDA events report

    monkeypatch.setattr(torch.cuda, "Event", FakeEvent)
    monkeypatch.setattr(torch.cuda, "current_stream", lambda device=None: "stream")
    monkeypatch.setattr(torch.cuda, "synchronize", lambda device=None: log.append("sync"))
    t = time_fn(lambda: log.append("work"), device="cuda:0", budget_s=0.01, warmup=1, inner=1,
                min_reps=2, max_reps=2)
    assert t.median_s == pytest.approx(0.005) and t.device == "cuda:0"
    assert log[-5:] == ["sync", "record", "work", "record", "sync"]


def test_a_replaced_perf_counter_moves_no_figure(monkeypatch):
    """The measured function slows ``time.perf_counter`` to half speed at every call; time_fn reads the course's
    clock, bound before, so a sample still holds the device's whole 50 ms (at half speed it would read 25 ms)."""
    real = time.perf_counter
    start = real()
    dev = FakeAsyncDevice(work_s=0.05)

    def work():
        monkeypatch.setattr(time, "perf_counter", lambda: start + (real() - start) / 2)
        dev.launch()
    t = time_fn(work, device=dev, budget_s=0.2, warmup=1, min_reps=3)
    assert t.min_s >= 0.05


def test_a_referee_holding_the_clock_keeps_every_sample(monkeypatch):
    """In a check's round the referee holds the course's clock: each sample of time_fn is one of its spans (per call,
    labelled with the time_fn call), and CUDA is timed on that clock, not with events; outside the round nothing is
    kept."""
    from autograder import clock
    torch = pytest.importorskip("torch")
    monkeypatch.setattr(torch.cuda, "Event", lambda **k: pytest.fail("events while a referee holds the clock"))
    monkeypatch.setattr(torch.cuda, "synchronize", lambda device=None: None)
    spans = clock.Spans()
    with clock.held_by(spans):
        t = time_fn(lambda: time.sleep(0.001), device="cuda:0", budget_s=0.05, warmup=1, min_reps=3)
    assert len(spans.kept) == t.n and not spans.open
    assert {label for _, label in spans.kept} == {spans.kept[0][1]} and spans.kept[0][1].startswith("time_fn:")
    assert harness.summary_times([s for s, _ in spans.kept])[0] == t.median_s
    time_fn(lambda: None, budget_s=0.01)
    assert len(spans.kept) == t.n
