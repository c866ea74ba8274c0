"""Tests of autograder.hardware: fake torch/pynvml/mlx/py-cpuinfo modules, pure parsers, the real machine."""
from __future__ import annotations

import itertools
import os
import platform
import sys
import warnings
from types import SimpleNamespace

import pytest

from autograder import hardware
from autograder.hardware import (
    AcceleratorInfo, CPUInfo, HardwareReport, best_device, caches_from_sysfs, describe, detect,
    mlx_status, normalise_flags, parse_proc_cpuinfo, parse_size, parse_sysctl, sysctl_flags,
)
from autograder.i18n import Message, msg, set_language

GiB, MiB = 2**30, 2**20


# ---------------------------------------------------------------- fakes
def gpu(name, total, major, minor, sms, l2, uuid=None, gcn=None):
    """What torch.cuda.get_device_properties returns (only the fields hardware.py reads)."""
    props = SimpleNamespace(name=name, total_memory=total, major=major, minor=minor,
                            multi_processor_count=sms, L2_cache_size=l2, is_integrated=False)
    if uuid:
        props.uuid = uuid
    if gcn:
        props.gcnArchName = gcn
    return props


# Figures from NVIDIA's spec pages: H100 SXM5 132 SMs, 50 MB L2, 5120-bit HBM3, cc 9.0;
# RTX 4090 128 SMs, 72 MB L2, 384-bit GDDR6X, cc 8.9. Memory sizes as nvidia-smi prints them (MiB).
H100 = gpu("NVIDIA H100 80GB HBM3", 81559 * MiB, 9, 0, 132, 50 * MiB, uuid="GPU-aaaa1111-0000-0000-0000-000000000001")
RTX4090 = gpu("NVIDIA GeForce RTX 4090", 24564 * MiB, 8, 9, 128, 72 * MiB, uuid="GPU-bbbb2222-0000-0000-0000-000000000002")
# AMD Instinct MI300X: gfx942 (CDNA 3), 304 CUs, 192 GB HBM3.
MI300X = gpu("AMD Instinct MI300X", 192 * GiB, 9, 4, 304, 4 * MiB, gcn="gfx942:sramecc+:xnack-")


def fake_torch(cuda=(), hip=None, mps=False, xpu=None, cuda_version="12.4", has_xpu=True):
    """A SimpleNamespace shaped like the parts of torch that hardware.py uses."""
    cuda = list(cuda)
    ns = SimpleNamespace(
        __version__="2.5.1",
        version=SimpleNamespace(cuda=None if hip else cuda_version, hip=hip, xpu=None),
        cuda=SimpleNamespace(
            is_available=lambda: bool(cuda), device_count=lambda: len(cuda),
            get_device_properties=lambda i: cuda[i],
            is_bf16_supported=lambda including_emulation=True: True),
        backends=SimpleNamespace(mps=SimpleNamespace(is_available=lambda: mps, is_built=lambda: mps)),
    )
    if has_xpu:
        devices = list(xpu or ())
        ns.xpu = SimpleNamespace(is_available=lambda: bool(devices), device_count=lambda: len(devices),
                                 get_device_properties=lambda i: devices[i], is_bf16_supported=lambda: True)
    return ns


class FakeNVMLError(Exception):
    """Stands in for pynvml.NVMLError."""


class FakeNVML:
    """pynvml with two GPUs in PCI order (RTX 4090 first), unlike torch's order in the tests."""

    NVML_CLOCK_SM, NVML_CLOCK_MEM = 1, 2   # the values pynvml uses
    NVMLError = FakeNVMLError
    # name, uuid, total bytes, max SM clock, max memory clock, bus width (plausible values,
    # the tests only check that they reach the right device)
    GPUS = [("NVIDIA GeForce RTX 4090", "GPU-bbbb2222-0000-0000-0000-000000000002", 24564 * MiB, 3120, 10501, 384),
            ("NVIDIA H100 80GB HBM3", "GPU-aaaa1111-0000-0000-0000-000000000001", 81559 * MiB, 1980, 2619, 5120)]

    def __init__(self):
        self.calls = []

    def nvmlInit(self):
        self.calls.append("init")

    def nvmlShutdown(self):
        self.calls.append("shutdown")

    def nvmlSystemGetDriverVersion(self):
        return "550.54.15"

    def nvmlSystemGetCudaDriverVersion(self):
        return 12040

    def nvmlDeviceGetCount(self):
        return len(self.GPUS)

    def nvmlDeviceGetHandleByIndex(self, i):
        return self.GPUS[i]

    def nvmlDeviceGetName(self, h):
        return h[0].encode()  # old pynvml returned bytes

    def nvmlDeviceGetUUID(self, h):
        return h[1]

    def nvmlDeviceGetMemoryInfo(self, h):
        return SimpleNamespace(total=h[2], free=h[2], used=0)

    def nvmlDeviceGetMaxClockInfo(self, h, kind):
        return {self.NVML_CLOCK_SM: h[3], self.NVML_CLOCK_MEM: h[4]}[kind]

    def nvmlDeviceGetMemoryBusWidth(self, h):
        return h[5]


class BrokenNVML(FakeNVML):
    def nvmlInit(self):
        raise FakeNVMLError("NVML Shared Library Not Found")


def fake_mlx(gpu=False, metal=None, fails=False, info=None, version="0.30.0"):
    """A SimpleNamespace shaped like mlx.core."""
    class Array:
        def __add__(self, other):
            if fails:
                raise RuntimeError("[metal::Device] Unable to load kernel")
            return self

    metal = gpu if metal is None else metal
    return SimpleNamespace(
        __version__=version, gpu="gpu-type", cpu="cpu-type",
        array=lambda values: Array(), eval=lambda *a: None,
        is_available=lambda d: gpu if d == "gpu-type" else True,
        device_info=lambda d=None: dict(info or {}) if d == "gpu-type" else {"device_name": "cpu"},
        metal=SimpleNamespace(is_available=lambda: metal),
    )


def run(**kwargs) -> HardwareReport:
    """detect() with fakes; MLX and py-cpuinfo absent unless given."""
    kwargs.setdefault("mlx", None)
    kwargs.setdefault("pynvml", None)
    return detect(**kwargs)


def has(report: HardwareReport, key: str) -> bool:
    """Whether the report's missing messages include catalogue message ``key``."""
    prefix = msg(key).en.split("{")[0]
    return any(m.en.startswith(prefix) for m in report.missing)


# ---------------------------------------------------------------- CUDA / NVML
def test_cuda_two_gpus_with_nvml_matched_by_uuid():
    nvml = FakeNVML()
    report = run(torch=fake_torch(cuda=[H100, RTX4090]), pynvml=nvml)
    h100, rtx = report.accelerators
    assert (h100.backend, h100.device, h100.name) == ("cuda", "cuda:0", "NVIDIA H100 80GB HBM3")
    assert h100.compute_capability == (9, 0) and h100.arch == "sm_90"
    assert (h100.multiprocessors, h100.l2_bytes, h100.total_memory_bytes) == (132, 50 * MiB, 81559 * MiB)
    # NVML lists the 4090 first: clocks and bus width must follow the UUID, not the index.
    assert (h100.max_clock_mhz, h100.memory_clock_mhz, h100.memory_bus_width_bits) == (1980, 2619, 5120)
    assert (rtx.device, rtx.compute_capability, rtx.memory_bus_width_bits, rtx.max_clock_mhz) == ("cuda:1", (8, 9), 384, 3120)
    assert h100.driver_version == "550.54.15 (CUDA 12.4)" and h100.runtime_version == "12.4"
    assert h100.bf16 is True and rtx.bf16 is True and not h100.unified_memory
    assert nvml.calls == ["init", "shutdown"]
    assert report.best() is h100
    assert not has(report, "hardware.nvml_failed") and not has(report, "hardware.no_accelerator")


def test_nvml_matched_by_index_and_name_without_uuid():
    a = gpu("NVIDIA GeForce RTX 4090", 24564 * MiB, 8, 9, 128, 72 * MiB)
    report = run(torch=fake_torch(cuda=[a]), pynvml=FakeNVML())
    assert report.accelerators[0].memory_bus_width_bits == 384


def test_bf16_from_compute_capability():
    v100 = gpu("Tesla V100-SXM2-16GB", 16 * GiB, 7, 0, 80, 6 * MiB)
    report = run(torch=fake_torch(cuda=[v100]))
    assert report.accelerators[0].bf16 is False  # is_bf16_supported() says True only through emulation


def test_cuda_when_nvml_raises():
    report = run(torch=fake_torch(cuda=[H100, RTX4090]), pynvml=BrokenNVML())
    assert len(report.accelerators) == 2
    acc = report.accelerators[0]
    assert acc.name == "NVIDIA H100 80GB HBM3" and acc.compute_capability == (9, 0)
    assert acc.max_clock_mhz is None and acc.memory_bus_width_bits is None and acc.driver_version is None
    assert has(report, "hardware.nvml_failed")
    assert any("NVML Shared Library Not Found" in m.en and "nvidia-smi" in m.ko for m in report.missing)


def test_cuda_without_pynvml_says_what_to_install():
    report = run(torch=fake_torch(cuda=[H100]), pynvml=None)
    assert report.accelerators[0].max_clock_mhz is None
    assert any("pip install nvidia-ml-py" in m.en and "pip install nvidia-ml-py" in m.ko for m in report.missing)


def test_pynvml_import_error_is_reported():
    report = run(torch=fake_torch(cuda=[H100]), pynvml=ImportError("libnvidia-ml.so.1: cannot open"))
    assert any("libnvidia-ml.so.1" in m.en for m in report.missing)


def test_nvidia_gpu_with_cpu_only_torch():
    report = run(torch=fake_torch(cuda_version=None), pynvml=FakeNVML())
    assert report.accelerators == ()
    assert has(report, "hardware.nvidia_cpu_torch")
    assert any("NVIDIA H100 80GB HBM3" in m.en for m in report.missing)


def test_nvidia_gpu_that_torch_cannot_use():
    report = run(torch=fake_torch(cuda_version="12.8"), pynvml=FakeNVML())
    message = next(m for m in report.missing if "12.8" in m.en)
    assert "550.54.15 (CUDA 12.4)" in message.en and "550.54.15 (CUDA 12.4)" in message.ko


# ---------------------------------------------------------------- ROCm, MPS, XPU, CPU only, no torch
def test_rocm_is_a_cuda_device_without_compute_capability():
    nvml = FakeNVML()
    report = run(torch=fake_torch(cuda=[MI300X], hip="6.2.41133"), pynvml=nvml)
    (acc,) = report.accelerators
    assert (acc.backend, acc.device, acc.name) == ("rocm", "cuda:0", "AMD Instinct MI300X")
    assert acc.compute_capability is None and acc.arch == "gfx942"
    assert acc.multiprocessors == 304 and acc.total_memory_bytes == 192 * GiB
    assert acc.runtime_version == "6.2.41133" and acc.bf16 is True
    assert nvml.calls == []  # NVML is not asked about AMD GPUs
    assert report.best() is acc
    assert report.rows()[1]["compute_capability"] == "gfx942"
    assert best_device(torch=fake_torch(cuda=[MI300X], hip="6.2.41133")) == "cuda"


def test_mps_only():
    report = run(torch=fake_torch(mps=True))
    (acc,) = report.accelerators
    assert (acc.backend, acc.device, acc.unified_memory) == ("mps", "mps", True)
    assert acc.total_memory_bytes == report.cpu.ram_bytes  # unified memory: the machine's RAM
    assert report.best() is acc


def test_xpu_only():
    arc = SimpleNamespace(name="Intel(R) Arc(TM) A770 Graphics", total_memory=16 * GiB,
                          gpu_subslice_count=32, driver_version="1.3.29735")
    report = run(torch=fake_torch(xpu=[arc]))
    (acc,) = report.accelerators
    assert (acc.backend, acc.device, acc.name, acc.multiprocessors) == ("xpu", "xpu:0", arc.name, 32)
    assert acc.driver_version == "1.3.29735" and acc.bf16 is True
    assert report.best() is acc


def test_cpu_only():
    report = run(torch=fake_torch(has_xpu=False))
    assert report.accelerators == () and report.best() is None
    assert report.torch == "2.5.1"
    assert has(report, "hardware.no_accelerator")
    rows = report.rows()
    assert len(rows) == 1 and rows[0]["kind"] == "cpu" and rows[0]["name"] == report.cpu.model


def test_torch_absent():
    report = run(torch=None)
    assert report.torch is None and report.accelerators == ()
    assert any("pip install torch" in m.en and "pip install torch" in m.ko for m in report.missing)


def test_torch_import_error():
    report = run(torch=OSError("libtorch_cuda.so: cannot open shared object file"))
    assert report.torch is None
    assert any("libtorch_cuda.so" in m.en for m in report.missing)


def test_torch_absent_but_nvidia_gpu_present():
    report = run(torch=None, pynvml=FakeNVML())
    assert has(report, "hardware.nvidia_without_torch")


def test_probe_that_raises_is_not_fatal():
    torch = fake_torch(cuda=[H100])
    torch.cuda.get_device_properties = lambda i: 1 / 0
    report = run(torch=torch)
    assert report.accelerators == ()
    assert any("get_device_properties(0)" in m.en for m in report.missing)


def test_detection_writes_nothing_to_stderr(capfd):
    def noisy():
        warnings.warn("CUDA initialization: driver too old")
        print("python-level noise", file=sys.stderr)
        os.write(2, b"C-level noise\n")
        return False

    torch = fake_torch()
    torch.cuda.is_available = noisy
    run(torch=torch)
    best_device(torch=torch)
    assert capfd.readouterr().err == ""


# ---------------------------------------------------------------- best_device
@pytest.mark.parametrize("cuda,mps,xpu", list(itertools.product([False, True], repeat=3)))
def test_best_device_priority(cuda, mps, xpu):
    arc = SimpleNamespace(name="Intel(R) Arc(TM) A770 Graphics", total_memory=16 * GiB)
    torch = fake_torch(cuda=[H100] if cuda else (), mps=mps, xpu=[arc] if xpu else ())
    expected = "cuda" if cuda else "mps" if mps else "xpu" if xpu else "cpu"
    assert best_device(torch=torch) == expected
    best = run(torch=torch).best()
    assert (best.device.split(":")[0] if best else "cpu") == expected


def test_best_device_without_torch_or_xpu():
    assert best_device(torch=None) == "cpu"
    assert best_device(torch=ImportError("broken")) == "cpu"
    assert best_device(torch=fake_torch(has_xpu=False)) == "cpu"


# ---------------------------------------------------------------- MLX
def test_mlx_absent():
    usable, reason = mlx_status(mlx=None)
    assert not usable and "mlx[cpu]" in reason.en and "mlx[cpu]" in reason.ko


def test_mlx_import_error():
    usable, reason = mlx_status(mlx=ImportError("libmlx.so: cannot open shared object file"))
    assert not usable and "libmlx.so" in reason.en and "libmlx.so" in reason.ko


def test_mlx_runtime_failure():
    usable, reason = mlx_status(mlx=fake_mlx(fails=True))
    assert not usable and "Unable to load kernel" in reason.en


def test_mlx_cpu_only():
    usable, reason = mlx_status(mlx=fake_mlx())
    assert usable and "CPU" in reason.en and "0.30.0" in reason.ko
    report = run(torch=None, mlx=fake_mlx())
    assert report.mlx == "0.30.0" and report.accelerators == ()
    assert reason in report.missing


def test_mlx_gpu_is_listed_but_never_best():
    info = {"device_name": "Apple M3 Max", "architecture": "applegpu_g15s", "memory_size": 48 * GiB}
    report = run(torch=None, mlx=fake_mlx(gpu=True, info=info))
    (acc,) = report.accelerators
    assert (acc.backend, acc.device, acc.name, acc.arch) == ("mlx", "mlx:gpu", "Apple M3 Max", "applegpu_g15s")
    assert acc.total_memory_bytes == 48 * GiB and acc.unified_memory and acc.runtime_version == "0.30.0"
    assert report.best() is None
    assert mlx_status(mlx=fake_mlx(gpu=True, info=info))[0]


def test_old_mlx_without_device_info_or_is_available():
    mx = SimpleNamespace(__version__="0.10.0",
                         metal=SimpleNamespace(is_available=lambda: True,
                                               device_info=lambda: {"memory_size": 16 * GiB}))
    report = run(torch=None, mlx=mx)
    (acc,) = report.accelerators
    assert acc.total_memory_bytes == 16 * GiB and acc.name == "MLX GPU"


def test_real_mlx_status():
    usable, reason = mlx_status()
    assert isinstance(reason, Message) and reason.ko and reason.en
    try:
        import mlx.core  # noqa: F401
    except Exception:
        assert not usable
    else:
        assert usable


# ---------------------------------------------------------------- Apple and py-cpuinfo paths
APPLE_SYSCTL = """\
machdep.cpu.brand_string: Apple M3 Max
hw.memsize: 51539607552
hw.perflevel0.l1dcachesize: 131072
hw.perflevel0.l2cachesize: 16777216
hw.perflevel1.l1dcachesize: 65536
hw.perflevel1.l2cachesize: 4194304
hw.l1dcachesize: 65536
hw.l2cachesize: 4194304
hw.optional.AdvSIMD: 1
hw.optional.neon: 1
hw.optional.arm.FEAT_BF16: 1
hw.optional.arm.FEAT_I8MM: 1
hw.optional.arm.FEAT_SME: 1
hw.optional.arm.FEAT_SVE: 0
"""


def test_apple_silicon(monkeypatch):
    monkeypatch.setattr(platform, "system", lambda: "Darwin")
    monkeypatch.setattr(platform, "mac_ver", lambda: ("14.5", ("", "", ""), "arm64"))
    monkeypatch.setattr(hardware, "_sysctl", lambda *names: APPLE_SYSCTL)
    report = run(torch=fake_torch(mps=True), mlx=fake_mlx(gpu=True, info={"architecture": "applegpu_g15s"}))
    cpu = report.cpu
    assert (cpu.model, cpu.vendor) == ("Apple M3 Max", "Apple")
    assert (cpu.l1d_bytes, cpu.l2_bytes, cpu.l3_bytes) == (128 * 1024, 16 * MiB, None)  # P-cores
    assert cpu.last_level_cache_bytes == 16 * MiB
    assert cpu.flags == ("neon", "bf16", "i8mm") and cpu.native_bf16
    mps, mlx_gpu = report.accelerators
    assert (mps.name, mps.total_memory_bytes, mps.bf16, mps.unified_memory) == ("Apple M3 Max", 48 * GiB, True, True)
    assert (mlx_gpu.name, mlx_gpu.total_memory_bytes) == ("Apple M3 Max", 48 * GiB)
    assert report.best() is mps and report.os.startswith("macOS 14.5")


def test_py_cpuinfo_fallback(monkeypatch):
    monkeypatch.setattr(platform, "system", lambda: "Windows")
    info = {"brand_raw": "Intel(R) Core(TM) i9-13900K", "vendor_id_raw": "GenuineIntel",
            "flags": ["avx", "avx2", "fma", "sse4_2", "avx512vnni"],
            "l1_data_cache_size": "48 KiB", "l2_cache_size": 2 * MiB, "l3_cache_size": "36 MiB"}
    report = run(torch=None, cpuinfo=SimpleNamespace(get_cpu_info=lambda: info))
    cpu = report.cpu
    assert (cpu.model, cpu.vendor) == ("Intel(R) Core(TM) i9-13900K", "Intel")
    assert (cpu.l1d_bytes, cpu.l2_bytes, cpu.l3_bytes) == (48 * 1024, 2 * MiB, 36 * MiB)
    assert cpu.flags == ("sse4_2", "avx", "avx2", "fma", "avx512_vnni") and not cpu.native_bf16


def test_nothing_known_about_the_cpu(monkeypatch):
    monkeypatch.setattr(platform, "system", lambda: "Windows")
    report = run(torch=None, cpuinfo=None)
    assert has(report, "hardware.cpuinfo_absent")
    unknown = next(m for m in report.missing if m.en.startswith("These CPU details"))
    assert "cache sizes" in unknown.en and "캐시 크기" in unknown.ko and "{" not in unknown.ko + unknown.en


# ---------------------------------------------------------------- the real machine
def test_real_machine(capfd):
    report = detect(refresh=True)
    cpu = report.cpu
    assert cpu.logical_cores and cpu.logical_cores >= 1
    assert cpu.physical_cores is None or 1 <= cpu.physical_cores <= cpu.logical_cores
    assert cpu.ram_bytes and cpu.ram_bytes > 256 * MiB
    assert cpu.last_level_cache_bytes and cpu.last_level_cache_bytes >= 32 * 1024
    assert report.python == platform.python_version()
    assert detect() is report                      # cached
    assert detect(refresh=True) is not report
    assert all(isinstance(m, Message) and m.ko and m.en for m in report.missing)
    assert capfd.readouterr().err == ""
    if not report.accelerators:
        assert report.best() is None and best_device() == "cpu"


# ---------------------------------------------------------------- describe
def test_describe_bilingual_table():
    report = run(torch=fake_torch(cuda=[H100]), pynvml=FakeNVML())
    set_language("both")
    try:
        text = describe(report)
    finally:
        set_language("both")
    header = text.splitlines()[0]
    assert "장치 / Device" in header and "Memory (GiB)" in header
    assert "| NVIDIA H100 80GB HBM3 (`cuda:0`) | CUDA | 79.6 | 9.0 | 예 / yes |" in text
    assert report.cpu.model in text and "**CPU**" in text
    set_language("en")
    try:
        english = describe(run(torch=None))
    finally:
        set_language("both")
    assert "장치" not in english and "Not detected" in english and "pip install torch" in english


# ---------------------------------------------------------------- pure parsers
@pytest.mark.parametrize("text,expected", [
    ("32K", 32 * 1024), ("1024K", MiB), ("32768K", 32 * MiB), ("32 KiB", 32 * 1024), ("1 MB", MiB),
    ("2 MiB (2 instances)", 2 * MiB), ("36 MiB", 36 * MiB), ("1.5M", 3 * MiB // 2), (" 512 ", 512),
    (65536, 65536), ("", None), ("unknown", None), (None, None), (0, None), ("-1K", None), (True, None),
])
def test_parse_size(text, expected):
    assert parse_size(text) == expected


X86_CPUINFO = """\
processor\t: 0
vendor_id\t: GenuineIntel
model name\t: Intel(R) Xeon(R) Platinum 8480+
flags\t\t: fpu sse sse2 ssse3 sse4_1 sse4_2 avx avx2 fma avx512f avx512bw avx512_vnni avx512_bf16 avx512_fp16 amx_bf16 amx_tile amx_int8

processor\t: 1
vendor_id\t: GenuineIntel
model name\t: something else
"""

ARM_CPUINFO = """\
processor\t: 0
BogoMIPS\t: 2000.00
Features\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm sve svebf16 i8mm bf16 sve2
CPU implementer\t: 0x41
CPU architecture: 8
CPU part\t: 0xd4f
"""


def test_parse_proc_cpuinfo_x86():
    info = parse_proc_cpuinfo(X86_CPUINFO)
    assert info["model"] == "Intel(R) Xeon(R) Platinum 8480+" and info["vendor"] == "Intel"
    assert info["flags"] == ("sse4_2", "avx", "avx2", "fma", "avx512f", "avx512_bf16", "avx512_fp16",
                             "avx512_vnni", "amx_tile", "amx_bf16", "amx_int8")


def test_parse_proc_cpuinfo_arm():
    info = parse_proc_cpuinfo(ARM_CPUINFO)
    assert info["model"] is None and info["vendor"] == "Arm"
    assert info["flags"] == ("neon", "sve", "bf16", "i8mm")
    assert parse_proc_cpuinfo("")["flags"] is None


def test_normalise_flags_across_sources():
    assert normalise_flags(["AVX512VNNI", "avx512_bf16", "AMX-TILE", "asimd", "sse4.2", "fma4"]) == (
        "sse4_2", "avx512_bf16", "avx512_vnni", "amx_tile", "neon")


def test_cpu_native_bf16():
    base = dict(model="x", vendor="x", arch="x86_64", physical_cores=1, logical_cores=1,
                l1d_bytes=None, l2_bytes=None, l3_bytes=None, ram_bytes=None)
    assert not CPUInfo(flags=("avx2", "fma"), **base).native_bf16
    assert CPUInfo(flags=("amx_bf16",), **base).native_bf16
    assert CPUInfo(flags=("avx512_bf16",), **base).native_bf16
    assert CPUInfo(flags=("neon", "bf16"), **base).native_bf16
    assert CPUInfo(flags=(), **{**base, "l2_bytes": 5}).last_level_cache_bytes == 5


def test_sysctl_parsing_intel_mac():
    values = parse_sysctl("hw.optional.sse4_2: 1\nhw.optional.avx1_0: 1\nhw.optional.avx2_0: 1\n"
                          "hw.optional.avx512f: 0\nhw.optional.fma: 1\nmachdep.cpu.brand_string: Intel(R) Core(TM) i7\n"
                          "garbage line\n")
    assert values["machdep.cpu.brand_string"] == "Intel(R) Core(TM) i7"
    assert sysctl_flags(values) == ("sse4_2", "avx", "avx2", "fma")


def test_caches_from_sysfs():
    entries = [
        {"level": "1", "type": "Data", "size": "48K", "shared": "0,64"},
        {"level": "1", "type": "Instruction", "size": "32K", "shared": "0,64"},
        {"level": "2", "type": "Unified", "size": "2048K", "shared": "0,64"},
        {"level": "3", "type": "Unified", "size": "32768K", "shared": "0-7,64-71"},
        {"level": "3", "type": "Unified", "size": "32768K", "shared": "0-7,64-71"},   # same slice again
        {"level": "3", "type": "Unified", "size": "32768K", "shared": "8-15,72-79"},  # another chiplet
    ]
    assert caches_from_sysfs(entries) == (48 * 1024, 2 * MiB, 64 * MiB)
    assert caches_from_sysfs([]) == (None, None, None)


def test_every_message_is_bilingual():
    import yaml
    from pathlib import Path
    path = Path(hardware.__file__).parent / "data" / "messages" / "hardware.yaml"
    for key, pair in yaml.safe_load(path.read_text(encoding="utf-8")).items():
        assert key.startswith("hardware.") and pair["ko"] and pair["en"]
        assert msg(key).ko == pair["ko"]


def test_accelerator_dataclass_is_frozen():
    acc = run(torch=fake_torch(mps=True)).accelerators[0]
    assert isinstance(acc, AcceleratorInfo)
    with pytest.raises(Exception):
        acc.name = "x"
