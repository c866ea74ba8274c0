"""Reference measurements: matmul sweeps and bandwidth within budgets, the cached measured profile."""
import json
import time

import pytest

from autograder import reference
from autograder.harness import Timing
from autograder.profiles import Profile


@pytest.fixture(autouse=True)
def _both_languages(monkeypatch):
    """Messages in both languages, whatever COURSE_LANG says."""
    monkeypatch.setattr("autograder.i18n._chosen", "both")


@pytest.fixture(autouse=True, scope="module")
def _detected():
    """Hardware detection and imports happen once per process; budgets are about measuring."""
    pytest.importorskip("torch")
    reference._threads("cpu")
    reference._free_bytes("cpu")


def test_matmul_sweep_fits_its_budget():
    budget = 0.6
    began = time.perf_counter()
    r = reference.matmul_tflops("float32", "cpu", budget_s=budget)
    took = time.perf_counter() - began
    assert took <= 2.5 * budget
    assert r["tflops"] > 0 and r["dtype"] == "fp32" and r["library"] == "torch"
    assert isinstance(r["timing"], Timing)
    assert r["size"] in [s["size"] for s in r["sweep"]]
    assert {"size": r["size"], "tflops": r["tflops"]} in r["sweep"]


def test_slow_dtype_is_sized_by_the_probe():
    budget = 0.5  # fp16 matmul on a CPU can run at ~1 GFLOP/s: the probe keeps the sweep small
    began = time.perf_counter()
    r = reference.matmul_tflops("float16", "cpu", budget_s=budget)
    assert time.perf_counter() - began <= 3 * budget
    assert r["tflops"] > 0 and r["dtype"] == "fp16"


def test_explicit_sizes_and_libraries():
    r = reference.matmul_tflops("fp32", "cpu", budget_s=0.2, sizes=[64, 128], library="numpy")
    assert [s["size"] for s in r["sweep"]] == [64, 128] and r["library"] == "numpy"
    best = reference.matmul_tflops("fp32", "cpu", budget_s=0.3, sizes=[128], library="best")
    assert set(best["candidates"]) == {"torch", "numpy"}
    assert best["tflops"] == max(best["candidates"].values())


def test_mlx_matmul():
    pytest.importorskip("mlx.core", reason="MLX is not installed")
    r = reference.matmul_tflops("fp32", "mlx", budget_s=0.2, sizes=[64])
    assert r["library"] == "mlx" and r["tflops"] > 0


def test_bad_requests_are_explained():
    with pytest.raises(ValueError, match="Unknown dtype"):
        reference.matmul_tflops("float7")
    with pytest.raises(ValueError, match="does not support"):
        reference.matmul_tflops("tf32", "cpu", budget_s=0.1)
    with pytest.raises(ValueError, match="does not support"):
        reference.matmul_tflops("bf16", "cpu", budget_s=0.1, library="numpy")
    with pytest.raises(ValueError, match="Unknown kind"):
        reference.bandwidth_gbs("scale")


def test_canonical_dtype():
    torch = pytest.importorskip("torch")
    assert reference.canonical_dtype(torch.bfloat16) == "bf16"
    assert reference.canonical_dtype("float32") == "fp32"
    assert reference.canonical_dtype("half") == "fp16"


@pytest.mark.parametrize("kind, arrays", [("copy", 2), ("triad", 3)])
def test_bandwidth_counts_bytes(kind, arrays):
    r = reference.bandwidth_gbs(kind, "cpu", nbytes=4 * 2**20, budget_s=0.1)
    assert r["bytes_moved"] == arrays * 4 * 2**20
    assert r["gbs"] == pytest.approx(r["bytes_moved"] / r["timing"].median_s / 1e9)


def test_default_bandwidth_buffer_is_beyond_the_cache(monkeypatch):
    monkeypatch.setattr(reference, "cpu_last_level_cache", lambda: 64 * 2**20)
    monkeypatch.setattr(reference, "_free_bytes", lambda name: 64 * 2**30)
    assert reference.default_bandwidth_bytes("cpu") >= 4 * 64 * 2**20
    monkeypatch.setattr(reference, "_free_bytes", lambda name: 400 * 2**20)  # little memory: stay inside it
    assert 3 * reference.default_bandwidth_bytes("cpu", 3) <= 400 * 2**20


def _fake_measure(calls):
    def measure(name, budget_s):
        calls.append(name)
        timing = {"median_s": 0.01, "spread": 1.0, "n": 3, "threads": 2}
        return {"matmul": {"fp32": {"tflops": 0.1 * len(calls), "size": 512, "library": "torch", **timing},
                           "bf16": {"tflops": 0.05, "size": 512, "library": "torch", **timing}},
                "bandwidth": {"copy": {"gbs": 20.0, "nbytes": 1, **timing},
                              "triad": {"gbs": 22.0, "nbytes": 1, **timing}}}
    return measure


def test_measured_profile_is_cached(tmp_path, monkeypatch):
    monkeypatch.setenv("COURSE_CACHE_DIR", str(tmp_path))
    calls = []
    monkeypatch.setattr(reference, "_measure", _fake_measure(calls))
    first = reference.measured_profile("cpu")
    second = reference.measured_profile("cpu")
    assert calls == ["cpu"]
    assert first == second and isinstance(first, Profile)
    assert first.measured and first.kind == "cpu"
    assert first.peak("fp32") == pytest.approx(0.1) and first.bandwidth_gbs == 20.0
    assert first.spec["triad_gbs"] == 22.0 and first.spec["date"]
    files = list(tmp_path.glob("measured-cpu-*.json"))
    assert len(files) == 1 and json.loads(files[0].read_text())["key"]["device"] == "cpu"

    refreshed = reference.measured_profile("cpu", refresh=True)
    assert calls == ["cpu", "cpu"] and refreshed.peak("fp32") == pytest.approx(0.2)


def test_new_machine_key_measures_again(tmp_path, monkeypatch):
    monkeypatch.setenv("COURSE_CACHE_DIR", str(tmp_path))
    calls = []
    monkeypatch.setattr(reference, "_measure", _fake_measure(calls))
    reference.measured_profile("cpu")
    real_key = reference.machine_key
    monkeypatch.setattr(reference, "machine_key", lambda name: {**real_key(name), "torch": "9.9"})
    reference.measured_profile("cpu")
    assert calls == ["cpu", "cpu"]


def test_real_measured_profile_small_budget(tmp_path, monkeypatch):
    monkeypatch.setenv("COURSE_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("COURSE_NO_PROGRESS", "1")
    monkeypatch.setattr(reference, "default_bandwidth_bytes", lambda name, arrays=3: 8 * 2**20)
    p = reference.measured_profile("cpu", budget_s=1.5)
    assert p.measured and p.peak("fp32") > 0 and p.peak("bf16") > 0 and p.bandwidth_gbs > 0
    assert "measured" in p.name or "측정" in p.name


class _Acc:
    def __init__(self, name, device="cuda:0"):
        self.name, self.device, self.backend = name, device, "cuda"
        self.unified_memory, self.total_memory_bytes, self.l2_bytes = False, 80 * 10**9, 50 * 2**20


def test_profile_for_known_accelerator_uses_the_spec(monkeypatch):
    monkeypatch.setattr(reference, "_accelerator", lambda name: _Acc("NVIDIA H100 80GB HBM3 SXM"))
    monkeypatch.setattr(reference, "measured_profile", lambda *a, **k: pytest.fail("must not measure"))
    p = reference.profile_for("cuda")
    assert not p.measured and p.vendor == "NVIDIA"


def test_profile_for_unknown_device_or_cpu_is_measured(monkeypatch):
    asked = []
    monkeypatch.setattr(reference, "measured_profile", lambda name, **k: asked.append(name) or "measured")
    monkeypatch.setattr(reference, "_accelerator", lambda name: _Acc("Mystery GPU 9000"))
    assert reference.profile_for("cuda:0") == "measured"
    monkeypatch.setattr(reference, "_accelerator", lambda name: None)
    assert reference.profile_for("cpu") == "measured"
    assert asked == ["cuda:0", "cpu"]


def test_reference_taken_on_a_busy_machine_is_raised_to_now(tmp_path, monkeypatch):
    """A stored profile that understates the machine (measured while it was busy: 89x too low in a learner's trial)
    is raised by a quick measurement before any use, so honest measurements never look too fast, and MFU and the
    report card never pass 100 % of it. A figure higher than now stays (the peak is the best seen)."""
    monkeypatch.setenv("COURSE_CACHE_DIR", str(tmp_path))
    low = {"matmul": {"fp32": {"tflops": 0.00073, "size": 256, "library": "torch"},
                      "bf16": {"tflops": 0.5, "size": 256, "library": "torch"}},
           "bandwidth": {"copy": {"gbs": 5.0, "nbytes": 1}, "triad": {"gbs": 5.0, "nbytes": 1}}}
    monkeypatch.setattr(reference, "_measure", lambda name, budget_s: low)
    assert reference.measured_profile("cpu").bandwidth_gbs == 5.0  # just measured: not measured again
    quick = []
    monkeypatch.setattr(reference, "bandwidth_gbs", lambda kind, device, budget_s: quick.append(kind) or {"gbs": 20.0})
    monkeypatch.setattr(reference, "matmul_tflops",
                        lambda dt, device, budget_s, library=None: quick.append(dt) or {"tflops": 0.065})
    assert reference.measured_profile("cpu").bandwidth_gbs == 5.0 and not quick  # rechecked at most every RECHECK_S
    monkeypatch.setattr(reference, "_rechecked", {})  # a later process
    profile = reference.measured_profile("cpu")
    assert sorted(quick) == ["bf16", "copy", "fp32", "triad"]
    assert profile.peak("fp32") == 0.065 and profile.bandwidth_gbs == 20.0
    assert profile.peak("bf16") == 0.5  # faster before than now: unchanged
    monkeypatch.setattr(reference, "_rechecked", {"cpu": float("inf")})
    assert reference.measured_profile("cpu").peak("fp32") == 0.065  # kept in the cache
    from autograder.expectations import expect
    band = expect("bandwidth", device="cpu")
    assert band.contains(25.0) and band.basis == "measured"
    from autograder.modules.m06_choosing_hardware.lesson import mfu_peak
    assert mfu_peak("cpu") == 0.065


@pytest.mark.parametrize("parallel_s, serial_s, picked", [(0.02, 1e-4, 1), (1e-4, 1e-4, 4), (3e-4, 1e-4, 4)])
def test_threads_are_all_cores_unless_one_thread_beats_them_all(monkeypatch, parallel_s, serial_s, picked):
    """On busy cores a parallel kernel waits for each thread's turn (80 ms where one thread took 60 us): then one
    thread measures the machine; otherwise every physical core does, even when one thread is a little faster."""
    import torch
    monkeypatch.setattr(reference, "_threads", lambda name: 4)

    def kernel():
        time.sleep(parallel_s if torch.get_num_threads() > 1 else serial_s)
    before = torch.get_num_threads()
    assert reference._pick_threads(kernel, "cpu") == picked
    assert torch.get_num_threads() == before


def test_the_peak_and_the_bandwidth_are_measured_on_the_threads_picked(monkeypatch):
    """A sweep (a peak) and the bandwidth take the threads picked; a given size is timed on torch's threads as
    they are set, as a learner's own timing of it runs, beside which it is compared."""
    import torch
    monkeypatch.setattr(reference, "_pick_threads", lambda fn, name: 1)
    assert reference.matmul_tflops("fp32", "cpu", budget_s=0.3)["timing"].threads == 1
    assert reference.matmul_tflops("fp32", "cpu", budget_s=0.3, sizes=[256])["timing"].threads == torch.get_num_threads()
    assert reference.bandwidth_gbs("copy", "cpu", nbytes=2**22, budget_s=0.2)["timing"].threads == 1
