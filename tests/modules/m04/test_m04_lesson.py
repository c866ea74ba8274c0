"""Module 04 lesson helpers: the probes per backend (CUDA and MPS with fakes), the
techniques measured on CPU, mixed-precision set-up and the decision diagram."""
import types

import pytest
import torch

from autograder.modules.m04_training_memory import lesson as M
from autograder.i18n import set_language
from autograder.modules.m04_training_memory.data import table


class FakeCuda:
    """torch.cuda's memory counters: allocations move ``allocated`` and the peak."""

    def __init__(self, allocated=1000):
        self.allocated = self.peak = allocated
        self.calls = []

    def synchronize(self):
        self.calls.append("sync")

    def reset_peak_memory_stats(self):
        self.calls.append("reset")
        self.peak = self.allocated

    def memory_allocated(self):
        return self.allocated

    def max_memory_allocated(self):
        return self.peak

    def alloc(self, n):
        self.allocated += n
        self.peak = max(self.peak, self.allocated)


class FakeMps:
    """torch.mps: only the driver's current allocation can be read (no peak counter)."""

    def __init__(self, driver=5000):
        self.driver = driver
        self.syncs = 0

    def synchronize(self):
        self.syncs += 1

    def driver_allocated_memory(self):
        return self.driver


def test_cuda_probe_reports_the_peak_above_the_start():
    cuda = FakeCuda(allocated=1000)
    cuda.peak = 9999  # an earlier step's peak must not count
    probe = M.CudaProbe(cuda)
    probe.start(None)
    with probe.forward():
        cuda.alloc(300)
    cuda.alloc(-250)
    assert probe.stop() == 300
    assert cuda.calls[:2] == ["sync", "reset"] and cuda.calls[-1] == "sync"


def test_mps_probe_samples_after_each_forward_and_synchronizes():
    mps = FakeMps(driver=5000)
    probe = M.MpsProbe(mps)
    probe.start(None)
    for held in (700, 400):
        with probe.forward():
            mps.driver = 5000 + held
        mps.driver = 5000 + 50
    assert probe.stop() == 700
    assert mps.syncs >= 4


def test_probe_for_picks_the_backend():
    assert isinstance(M.probe_for("cpu"), M.SavedTensorProbe)
    assert isinstance(M.probe_for("xpu:0"), M.SavedTensorProbe)
    assert M.CudaProbe(FakeCuda()).method == "m04.probe.cuda" and M.MpsProbe(FakeMps()).method == "m04.probe.mps"


def test_saved_tensor_probe_counts_activations_and_gradients():
    lin = torch.nn.Linear(8, 4)
    probe = M.SavedTensorProbe()
    probe.start(lin)
    with probe.forward():
        out = lin(torch.zeros(3, 8))
    assert probe.peak_bytes == 3 * 8 * 4  # the input, saved for the weight gradient
    out.sum().backward()
    assert probe.stop() == (8 * 4 + 4) * 4  # then the gradients


def test_amp_dtype_cpu_is_bf16_and_cuda_follows_bf16_support():
    assert M.amp_dtype("cpu") == torch.bfloat16
    fake = types.SimpleNamespace(bfloat16=torch.bfloat16, float16=torch.float16,
                                 cuda=types.SimpleNamespace(is_bf16_supported=lambda: False))
    assert M.amp_dtype("cuda:0", torch_module=fake) == torch.float16
    fake.cuda.is_bf16_supported = lambda: True
    assert M.amp_dtype("cuda", torch_module=fake) == torch.bfloat16


def test_fp16_counts_as_usable_only_where_a_grad_scaler_steps():
    assert M.amp_usable(torch, "cpu", torch.float16) and M.amp_usable(torch, "cpu", torch.bfloat16)
    broken = types.SimpleNamespace(**{k: getattr(torch, k) for k in ("nn", "optim", "ones", "isfinite", "float16",
                                                                       "bfloat16", "autocast")},
                                   amp=types.SimpleNamespace(GradScaler=lambda kind: 1 / 0))
    assert not M._scaler_works(broken, "cpu")
    assert M.amp_usable(broken, "cpu", torch.bfloat16) and not M.amp_usable(broken, "cpu", torch.float16)


def test_grad_scaler_is_on_for_fp16_only():
    assert M.grad_scaler("cpu", torch.float16).is_enabled()
    assert not M.grad_scaler("cpu", torch.bfloat16).is_enabled()


class FakeTimer:
    def __init__(self):
        self.calls = 0

    def __call__(self, fn, device, budget_s, **kwargs):
        fn()
        self.calls += 1
        return types.SimpleNamespace(median_s=0.01)


@pytest.fixture(scope="module")
def measured():
    return {t: M.measure(t, "cpu", timer=FakeTimer()) for t in M.TECHNIQUES}


def test_every_technique_needs_less_memory_than_plain_training(measured):
    plain = measured["plain"].peak_bytes
    assert plain > 0
    for name in ("autocast", "checkpoint", "accumulation"):
        assert 0 < measured[name].peak_bytes < plain, name
    assert measured["checkpoint"].peak_bytes < 0.5 * plain


def test_measure_reports_method_and_amp_dtype(measured):
    assert measured["autocast"].note.en == "autocast dtype: bfloat16"
    assert measured["plain"].method.en.startswith("saved-tensor accounting")
    assert measured["plain"].step_s == 0.01


def test_measure_with_a_fake_cuda_probe_uses_its_numbers():
    cuda = FakeCuda()
    result = M.measure("plain", "cpu", timer=FakeTimer(), probe=M.CudaProbe(cuda))
    assert result.peak_bytes == 0 and result.method.en.startswith("torch.cuda")


def test_techniques_train_the_same_model_to_similar_losses():
    losses = {}
    for t in ("plain", "checkpoint", "accumulation"):
        model, opt, kw = M.setup(t, "cpu")
        tokens, targets = M.batch(size=8)
        losses[t] = [M.train_step(model, opt, tokens, targets, **kw) for _ in range(2)]
    assert losses["checkpoint"] == pytest.approx(losses["plain"], rel=1e-5)
    assert losses["accumulation"] == pytest.approx(losses["plain"], rel=1e-4)


def test_unknown_technique_is_a_bilingual_error():
    with pytest.raises(ValueError, match="technique"):
        M.setup("lora", "cpu")


def test_state_bytes_counts_adam_moments():
    model, opt, kw = M.setup("plain", "cpu")
    tokens, targets = M.batch(size=2, seq=8)
    M.train_step(model, opt, tokens, targets, **kw)
    sizes = M.state_bytes(model, opt)
    assert sizes["optimizer"] == 2 * sizes["weights"] == 2 * sizes["gradients"]


@pytest.mark.parametrize("lang", ["ko", "en"])
def test_decision_diagram_draws_six_steps(lang):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    set_language(lang)
    try:
        fig = M.decision_diagram()
        texts = [t.get_text() for t in fig.axes[0].texts]
        assert sum(t[:2] in {f"{i}." for i in range(1, 7)} for t in texts) == 6
        plt.close(fig)
    finally:
        set_language("both")


def test_recipe_rows_and_plots_speak_the_learners_language():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    set_language("ko")
    try:
        row = M.recipe_rows(7e9)[1]
        assert {"가중치", "그래디언트", "옵티마이저 상태"} <= set(row) and row["7B 모델(GiB)"] == 104.3
        fig = M.plot_recipes(7e9, "h100_sxm")
        assert [t.get_text() for t in fig.axes[0].get_legend().get_texts()] == ["가중치", "그래디언트", "옵티마이저 상태"]
        fig2 = M.plot_grad_scaler(steps=8, overflows=(3,))
        assert fig2.axes[0].get_ylabel() == "스케일"
        plt.close("all")
    finally:
        set_language("both")


def test_megatron_recipe_is_in_the_lesson_table():
    rows = {r["recipe"]: r["total B/param"] for r in (set_language("en") or M.recipe_rows(7e9))}
    set_language("both")
    assert rows["mixed + adam"] == 16 and rows["mixed_fp32_grads + adam"] == 18 and rows["fp32 + adam"] == 16


def test_zero_rows_reproduce_the_paper():
    set_language("en")
    try:
        rows = M.zero_rows()
        assert [round(r["computed (GB)"], 1) for r in rows] == [120.0, 31.4, 16.6, 1.9]
    finally:
        set_language("both")


def test_the_calculator_plans_model_states_and_activations_into_90_percent_of_binary_memory():
    set_language("en")
    try:
        rows = {r["device"]: r for r in M.fit_rows(7e9, "mixed_adam", 3, 2, act_gib=4.0)}
        h100 = rows["H100 SXM"]
        assert h100["needed GiB per GPU"] == round((112e9 / 2 + 4 * 2**30) / 2**30, 1)
        assert h100["fits on 2"] == "✅"
        tight = M.fit_rows(7e9, "mixed_adam", 3, 2, act_gib=0.9 * 80 - 112e9 / 2 / 2**30 + 0.1)
        assert all(r["fits on 2"] == "❌" for r in tight if r["memory GiB"] == 80)
    finally:
        set_language("both")


def test_activation_rows_show_the_three_recomputation_modes():
    set_language("en")
    try:
        rows = M.activation_rows(table("memory")["example_model"], micro_batches=(1,))
        assert [r["micro-batch 1 (GiB)"] for r in rows] == [256.5, 76.5, 7.17]
    finally:
        set_language("both")


def test_the_calculator_shows_its_table_in_an_html_widget_without_an_output_widget(monkeypatch):
    """An Output widget (prints routed into it, clear_output) stalled a headless run of the lesson until its cell
    timeout; the calculator sets an HTML widget's value instead, and recomputes it when a slider moves."""
    import ipywidgets

    def no_output(*args, **kwargs):
        raise AssertionError("the calculator must not create an Output widget")

    monkeypatch.setattr(ipywidgets, "Output", no_output)
    shown = []
    monkeypatch.setattr("IPython.display.display", lambda *objects, **kw: shown.extend(objects))
    set_language("en")
    try:
        M.memory_calculator()
        box = shown[0]
        sliders, view = box.children[0].children + box.children[1].children, box.children[2]
        assert isinstance(view, ipywidgets.HTML) and "<table>" in view.value and "H100 SXM" in view.value
        first = view.value
        sliders[0].value = 7e10  # the parameter slider
        assert view.value != first
    finally:
        set_language("both")


def test_measure_runs_on_one_cpu_thread_and_restores_torch_threads():
    seen = []

    class Timer(FakeTimer):
        def __call__(self, fn, device, budget_s, **kwargs):
            seen.append(torch.get_num_threads())
            return super().__call__(fn, device, budget_s, **kwargs)

    before = torch.get_num_threads()
    M.measure("plain", "cpu", timer=Timer())
    assert seen == [1] and torch.get_num_threads() == before
