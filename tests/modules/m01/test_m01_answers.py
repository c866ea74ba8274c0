"""Module 01 reference answers and fakes, checked against independent facts."""
import math

import pytest
import torch

from autograder import profiles
from autograder.fakes.devices import fake_mlx, fake_torch
from course_answers import m01_devices as m01
from autograder.fakes import FakeAsyncDevice, audit_timer
from autograder.modules.m01_devices.lesson import make_step, step_flops

PRIORITY_TABLE = {  # (cuda, mps, xpu) -> device, written out by hand
    (False, False, False): "cpu", (True, False, False): "cuda", (False, True, False): "mps",
    (False, False, True): "xpu", (True, True, False): "cuda", (True, False, True): "cuda",
    (False, True, True): "mps", (True, True, True): "cuda",
}


@pytest.mark.parametrize("flags,expected", PRIORITY_TABLE.items())
def test_pick_device_priority(flags, expected):
    cuda, mps, xpu = flags
    assert m01.pick_device(None, fake_torch(cuda=cuda, mps=mps, xpu=xpu)) == expected


def test_pick_device_override_and_errors():
    fake = fake_torch(cuda=True, mps=False, xpu=False)
    assert m01.pick_device("cpu", fake) == "cpu"
    assert m01.pick_device("cuda", fake) == "cuda"
    for bad in ("mps", "xpu", "tpu", "CUDA"):
        with pytest.raises(ValueError):
            m01.pick_device(bad, fake)


def test_pick_device_without_torch_xpu():
    fake = fake_torch(cuda=False, mps=False, xpu=None)
    assert not hasattr(fake, "xpu")
    assert m01.pick_device(None, fake) == "cpu"
    with pytest.raises(ValueError):
        m01.pick_device("xpu", fake)


def test_pick_device_on_this_machine_matches_torch():
    expected = "cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else \
        "xpu" if hasattr(torch, "xpu") and torch.xpu.is_available() else "cpu"
    assert m01.pick_device() == expected


def test_fake_torch_only_uses_names_real_torch_has():
    fake = fake_torch(cuda=True, mps=True, xpu=True)
    for path in ("cuda.is_available", "cuda.device_count", "cuda.get_device_properties", "cuda.get_device_name",
                 "cuda.get_device_capability", "cuda.mem_get_info", "cuda.is_bf16_supported",
                 "backends.mps.is_available", "backends.mps.is_built", "mps.synchronize", "xpu.is_available",
                 "xpu.device_count", "xpu.get_device_properties", "accelerator.current_accelerator", "version.hip"):
        real, mock = torch, fake
        for name in path.split("."):
            real, mock = getattr(real, name), getattr(mock, name)
    props = fake.cuda.get_device_properties(0)
    assert (props.major, props.minor) == fake.cuda.get_device_capability(0) == (9, 0)
    assert fake.accelerator.current_accelerator() == torch.device("cuda")


def test_fake_mlx_matches_real_mlx_names():
    mx = pytest.importorskip("mlx.core")
    fake = fake_mlx(gpu=True)
    for name in ("cpu", "gpu", "Device", "is_available", "default_device", "set_default_device", "metal", "cuda"):
        assert hasattr(mx, name) and hasattr(fake, name)
    assert fake.is_available(fake.gpu) and not fake_mlx(gpu=False).is_available(fake.gpu)
    assert fake.Device(fake.gpu) == fake.gpu
    assert str(fake.Device(fake.cpu)) == "Device(cpu, 0)" == str(mx.Device(mx.cpu))


def test_pick_mlx_device():
    assert m01.pick_mlx_device(None, None) is None
    assert m01.pick_mlx_device(None, fake_mlx(gpu=True)) == "gpu"
    assert m01.pick_mlx_device(None, fake_mlx(gpu=False, backend="cuda")) == "cpu"
    assert m01.pick_mlx_device("cpu", fake_mlx(gpu=True)) == "cpu"
    with pytest.raises(ValueError):
        m01.pick_mlx_device("gpu", fake_mlx(gpu=False))
    with pytest.raises(ValueError):
        m01.pick_mlx_device("mps", fake_mlx(gpu=True))


def test_mlx_usable_agrees_with_hardware_detection():
    from autograder.hardware import mlx_status
    assert m01.mlx_usable() == mlx_status()[0]


def test_adam_mixed_precision_bytes_per_parameter():
    # bf16 weights + bf16 grads + fp32 master + fp32 m + fp32 v (ZeRO, section 3.1: 2 + 2 + 12)
    bf16, fp32 = torch.finfo(torch.bfloat16).bits, torch.finfo(torch.float32).bits
    parts = [bf16, bf16, fp32, fp32, fp32]
    assert m01.ADAM_MIXED_BYTES_PER_PARAM == sum(parts) // 8 == 16


def test_finetune_plan_zero_paper_example_and_choice():
    # ZeRO: GPT-2 with 1.5 billion parameters needs at least 24 GB of model states
    devices = {pid: profiles.get(pid).memory_bytes / 1e9 for pid in ("rtx_4090", "t4")}
    plan = m01.finetune_plan(1.5e9, 0.0, devices)
    assert plan == {"need_gb": 24.0, "device": "rtx_4090"}
    plan = m01.finetune_plan(7e9, 10.0, {"a": 80.0, "b": 141.0, "c": 192.0})
    assert math.isclose(plan["need_gb"], 122.0) and plan["device"] == "b"
    assert m01.finetune_plan(70e9, 0.0, {"a": 80.0, "b": 192.0})["device"] is None


def test_time_call_covers_asynchronous_work():
    device = FakeAsyncDevice(work_s=0.02)
    ok, seconds = audit_timer(m01.time_call, device)
    assert ok and seconds < 0.03


def test_inventory_of_fake_machines():
    gpus = [{"name": "NVIDIA A100-SXM4-80GB", "total_memory": 80 * 2**30, "major": 8, "minor": 0, "sms": 108},
            {"name": "Tesla V100-SXM2-32GB", "total_memory": 32 * 2**30, "major": 7, "minor": 0, "sms": 80}]
    rows = m01.inventory(fake_torch(gpus=gpus, xpu=False))
    assert [r["device"] for r in rows] == ["cpu", "cuda:0", "cuda:1"]
    assert rows[1]["compute_capability"] == "8.0" and rows[1]["bf16"] is True and rows[1]["memory_gib"] == 80.0
    assert rows[2]["bf16"] is False and rows[2]["kind"] == "cuda"
    rocm = [{"name": "AMD Instinct MI300X", "total_memory": 192 * 2**30, "major": 9, "minor": 4, "sms": 304,
             "arch": "gfx942:sramecc+:xnack-", "bf16": True}]
    row = m01.inventory(fake_torch(gpus=rocm, hip="6.4", xpu=False))[1]
    assert row["kind"] == "rocm" and row["device"] == "cuda:0" and row["bf16"] is True
    assert all(r["kind"] != "mlx" for r in m01.inventory())


def test_make_step_trains_and_checks_its_arguments():
    step = make_step("cpu", width=32, batch=16)
    first = step().item()
    for _ in range(30):
        last = step().item()
    assert last < first
    assert make_step("cpu", width=32, batch=16, transfer=True)().item() == pytest.approx(first)
    with pytest.raises(ValueError):
        make_step("cpu", width=0)


def test_step_flops_counts_six_per_weight_and_sample():
    assert step_flops(100, depth=2, batch=10) == 6 * (2 * 100 * 100 + 100 * 10) * 10
