"""Detect the CPU, the accelerators (CUDA, ROCm, MPS, XPU, MLX) and the software versions.

``detect()`` returns a cached :class:`HardwareReport`. Every probe is guarded: a
missing library or device never raises, and what could not be found goes into
``report.missing`` as a bilingual message saying what to do. Detection writes
nothing to stderr (warnings and C-level stderr are silenced while probing).

The keyword arguments of ``detect``, ``best_device`` and ``mlx_status`` inject
modules for tests: a module (or fake), ``None`` for "not installed", or an
exception instance for "import raised this". The pure parsers (``parse_size``,
``parse_proc_cpuinfo``, ``parse_sysctl``, ``sysctl_flags``, ``normalise_flags``,
``caches_from_sysfs``) turn OS text into values and are tested on text from
other machines.
"""
from __future__ import annotations

import contextlib
import importlib
import io
import os
import platform
import re
import subprocess
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from .i18n import Message, get_language, msg

__all__ = [
    "CPUInfo", "AcceleratorInfo", "HardwareReport", "detect", "best_device", "mlx_status",
    "describe", "parse_size", "parse_proc_cpuinfo", "parse_sysctl", "sysctl_flags",
    "normalise_flags", "caches_from_sysfs", "MATMUL_FLAGS",
]

_DEFAULT = object()  # "import the real module"

MATMUL_FLAGS = (
    "sse4_2", "avx", "avx2", "fma", "avx512f", "avx512_bf16", "avx512_fp16", "avx512_vnni",
    "amx_tile", "amx_bf16", "amx_int8", "neon", "sve", "bf16", "i8mm",
)
# Flags are matched with case, '_', '-' and '.' ignored, so that /proc/cpuinfo
# (avx512_vnni), py-cpuinfo (avx512vnni) and macOS sysctl names all map to one name.
_FLAG_KEYS = {f.replace("_", ""): f for f in MATMUL_FLAGS} | {
    "asimd": "neon", "advsimd": "neon",                    # Arm Advanced SIMD (Linux / macOS names)
    "avx10": "avx", "avx20": "avx2",                       # macOS Intel: hw.optional.avx1_0, avx2_0
    "featbf16": "bf16", "feati8mm": "i8mm", "featsve": "sve",  # macOS Arm: hw.optional.arm.FEAT_*
}
# Arm "CPU implementer" codes in /proc/cpuinfo (Linux arch/arm64/include/asm/cputype.h).
_ARM_IMPLEMENTERS = {
    0x41: "Arm", 0x42: "Broadcom", 0x43: "Cavium", 0x46: "Fujitsu", 0x48: "HiSilicon",
    0x4E: "NVIDIA", 0x51: "Qualcomm", 0x61: "Apple", 0x6D: "Microsoft", 0xC0: "Ampere",
}
_VENDORS = {"GenuineIntel": "Intel", "AuthenticAMD": "AMD", "HygonGenuine": "Hygon"}
_PRIORITY = ("cuda", "rocm", "mps", "xpu")  # best(): MLX is never a torch device


# ---------------------------------------------------------------- data classes
@dataclass(frozen=True)
class CPUInfo:
    """The host CPU.

    ``l1d_bytes`` and ``l2_bytes`` are the sizes the OS reports for one core's cache
    (Linux: cpu0 in sysfs; macOS: the performance cores, whose L2 is shared by a
    cluster); ``l3_bytes`` is the total L3 of the machine (the sum over distinct L3
    instances). With the py-cpuinfo fallback (no sysfs/sysctl) sizes are what
    py-cpuinfo reports, which may be totals over cores.
    """

    model: str
    vendor: str
    arch: str
    physical_cores: int | None
    logical_cores: int | None
    l1d_bytes: int | None
    l2_bytes: int | None
    l3_bytes: int | None
    ram_bytes: int | None
    flags: tuple[str, ...]

    @property
    def last_level_cache_bytes(self) -> int | None:
        """L3 if there is one, else L2 (Apple Silicon), else L1d."""
        return self.l3_bytes or self.l2_bytes or self.l1d_bytes

    @property
    def native_bf16(self) -> bool:
        """bf16 arithmetic in hardware: AVX512-BF16 or AMX-BF16 on x86, the bf16 feature on Arm."""
        return bool({"avx512_bf16", "amx_bf16", "bf16"} & set(self.flags))


@dataclass(frozen=True)
class AcceleratorInfo:
    """One accelerator. ``None`` means "not reported here".

    ``driver_version`` is the NVIDIA driver (with the newest CUDA it supports, from
    NVML); ``runtime_version`` the CUDA/HIP/XPU version torch was built with, or the
    MLX version. ``multiprocessors`` counts SMs (CUDA), CUs (ROCm) or Xe-cores (XPU).
    """

    backend: str
    device: str
    name: str
    total_memory_bytes: int | None
    compute_capability: tuple[int, int] | None
    arch: str | None
    multiprocessors: int | None
    max_clock_mhz: int | None
    memory_clock_mhz: int | None
    memory_bus_width_bits: int | None
    l2_bytes: int | None
    bf16: bool | None
    driver_version: str | None
    runtime_version: str | None
    unified_memory: bool


@dataclass(frozen=True)
class HardwareReport:
    """Everything ``detect()`` found, and what it could not find (``missing``)."""

    cpu: CPUInfo
    accelerators: tuple[AcceleratorInfo, ...]
    os: str
    python: str
    torch: str | None
    mlx: str | None
    missing: tuple[Message, ...]

    def best(self) -> AcceleratorInfo | None:
        """The first accelerator torch can use, by priority cuda/rocm > mps > xpu."""
        for backend in _PRIORITY:
            for acc in self.accelerators:
                if acc.backend == backend:
                    return acc
        return None

    def rows(self) -> list[dict]:
        """One dict per device, CPU first: device, name, kind, memory_gib, compute_capability, bf16.

        ``compute_capability`` is "major.minor" for CUDA and the architecture
        (e.g. gfx942) for other accelerators.
        """
        cpu = self.cpu
        out = [{"device": "cpu", "name": cpu.model, "kind": "cpu", "memory_gib": _gib(cpu.ram_bytes),
                "compute_capability": None, "bf16": cpu.native_bf16}]
        for acc in self.accelerators:
            cc = acc.compute_capability
            out.append({"device": acc.device, "name": acc.name, "kind": acc.backend,
                        "memory_gib": _gib(acc.total_memory_bytes),
                        "compute_capability": f"{cc[0]}.{cc[1]}" if cc else acc.arch, "bf16": acc.bf16})
        return out


def _gib(n: int | None) -> float | None:
    return None if n is None else round(n / 2**30, 1)


# ---------------------------------------------------------------- pure parsers
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(?:i?b)?(?![a-z])", re.IGNORECASE)


def parse_size(value) -> int | None:
    """Bytes from a cache/memory size: 32768, "32K", "32 KiB", "1 MB", "32 KiB (2 instances)".

    Units are binary (K = 1024), as the kernel, sysctl and lscpu use them for caches.
    Returns None for anything unparseable or not positive.
    """
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        return int(value) if value > 0 else None
    m = _SIZE.match(str(value))
    if not m:
        return None
    size = float(m.group(1)) * 1024 ** " kmgt".index((m.group(2) or " ").lower())
    return int(size) if size > 0 else None


def normalise_flags(names: Iterable[str]) -> tuple[str, ...]:
    """The matmul-relevant subset of CPU feature names, canonical and sorted as in MATMUL_FLAGS."""
    found = {_FLAG_KEYS.get(re.sub(r"[_\-.]", "", n.lower())) for n in names}
    return tuple(f for f in MATMUL_FLAGS if f in found)


def parse_proc_cpuinfo(text: str) -> dict:
    """model, vendor and flags (normalised) from the first processor of /proc/cpuinfo.

    x86 has "model name", "vendor_id" and "flags"; Arm has "Features" and
    "CPU implementer" (and often no model name: then model is None).
    """
    fields: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip():
            if fields:
                break
            continue
        key, sep, value = line.partition(":")
        if sep:
            fields.setdefault(key.strip().lower(), value.strip())
    vendor = _VENDORS.get(fields.get("vendor_id", ""), fields.get("vendor_id") or None)
    if vendor is None and "cpu implementer" in fields:
        try:
            vendor = _ARM_IMPLEMENTERS.get(int(fields["cpu implementer"], 16))
        except ValueError:
            vendor = None
    raw_flags = fields.get("flags", fields.get("features"))
    return {
        "model": fields.get("model name") or None,
        "vendor": vendor,
        "flags": normalise_flags(raw_flags.split()) if raw_flags is not None else None,
    }


def parse_sysctl(text: str) -> dict[str, str]:
    """``name: value`` lines of macOS ``sysctl`` output as a dict."""
    out = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip() and " " not in key.strip():
            out[key.strip()] = value.strip()
    return out


def sysctl_flags(values: dict[str, str]) -> tuple[str, ...]:
    """Normalised flags from macOS ``hw.optional.*`` entries set to 1."""
    names = [k.rsplit(".", 1)[-1] for k, v in values.items() if k.startswith("hw.optional.") and v == "1"]
    return normalise_flags(names)


def caches_from_sysfs(entries: Iterable[dict]) -> tuple[int | None, int | None, int | None]:
    """(L1d of one core, L2 of one core, total L3) from sysfs cache entries.

    Each entry has ``level``, ``type``, ``size`` (e.g. "32K") and ``shared`` (the
    shared_cpu_list); entries of cpu0 come first. L3 is summed over distinct
    ``shared`` lists, so a machine with several L3 slices (chiplets, sockets)
    reports its total.
    """
    l1d = l2 = None
    l3: dict[str, int] = {}
    for e in entries:
        level, kind, size = str(e.get("level", "")).strip(), str(e.get("type", "")).strip(), parse_size(e.get("size"))
        if size is None or kind == "Instruction":
            continue
        if level == "1" and kind == "Data" and l1d is None:
            l1d = size
        elif level == "2" and l2 is None:
            l2 = size
        elif level == "3":
            l3.setdefault(str(e.get("shared", "")).strip() or f"#{len(l3)}", size)
    return l1d, l2, (sum(l3.values()) or None)


# ---------------------------------------------------------------- guarded helpers
@contextlib.contextmanager
def _quiet():
    """Silence warnings and stderr (Python-level and file descriptor 2) while probing.

    Libraries write to stderr from C (CUDA init, MLX deprecation notices), and
    ipykernel shows fd 2 in the cell, so fd 2 points at /dev/null meanwhile.
    """
    with warnings.catch_warnings(), contextlib.redirect_stderr(io.StringIO()), contextlib.ExitStack() as stack:
        warnings.simplefilter("ignore")
        with contextlib.suppress(Exception):
            sys.__stderr__.flush()
        try:
            saved = os.dup(2)
            stack.callback(os.close, saved)
            null = os.open(os.devnull, os.O_WRONLY)
            stack.callback(os.close, null)
            os.dup2(null, 2)
            stack.callback(os.dup2, saved, 2)
        except OSError:
            pass  # no file descriptor 2 to silence
        yield


def _import(name: str):
    """The module, None if it is not installed, or the exception its import raised."""
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as e:
        if (e.name or "").split(".")[0] == name.split(".")[0]:
            return None
        return e
    except Exception as e:  # a broken install: ImportError, OSError from a missing shared library
        return e


def _resolve(value, name: str):
    return _import(name) if value is _DEFAULT else value


def _try(fn, *args, **kwargs):
    """fn(*args) or None if fn is missing or raises."""
    if fn is None:
        return None
    try:
        return fn(*args, **kwargs)
    except Exception:
        return None


def _call(obj, attr: str, *args):
    return _try(getattr(obj, attr, None), *args)


def _read(path) -> str | None:
    try:
        return Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def _sysctl(*names: str) -> str:
    try:
        return subprocess.run(["sysctl", *names], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return ""


def _int(value) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _text(value) -> str | None:
    if isinstance(value, bytes):
        value = value.decode(errors="replace")
    return str(value) if value not in (None, "") else None


def _error(e: BaseException) -> str:
    return f"{type(e).__name__}: {e}"


# ---------------------------------------------------------------- CPU
def _linux_caches() -> tuple[int | None, int | None, int | None]:
    base = Path("/sys/devices/system/cpu")

    def entry(index: Path) -> dict:
        return {k: (_read(index / f) or "").strip() for k, f in
                (("level", "level"), ("type", "type"), ("size", "size"), ("shared", "shared_cpu_list"))}

    first = [entry(p) for p in sorted((base / "cpu0" / "cache").glob("index*"))]
    l3_dirs = [p.name for p, e in zip(sorted((base / "cpu0" / "cache").glob("index*")), first) if e["level"] == "3"]
    others = [entry(cpu / "cache" / name) for cpu in base.glob("cpu[0-9]*") if cpu.name != "cpu0"
              for name in l3_dirs if (cpu / "cache" / name).is_dir()]
    return caches_from_sysfs(first + others)


def _apple() -> dict:
    """sysctl values on macOS ({} elsewhere)."""
    return parse_sysctl(_sysctl("hw", "machdep.cpu")) if platform.system() == "Darwin" else {}


def _mac_cpu(values: dict[str, str]) -> dict:
    brand = values.get("machdep.cpu.brand_string") or None
    vendor = "Apple" if (brand or "").startswith("Apple") else _VENDORS.get(values.get("machdep.cpu.vendor", ""))
    def pick(*keys: str) -> int | None:
        return next((parse_size(values[k]) for k in keys if parse_size(values.get(k))), None)

    flags = sysctl_flags(values) if any(k.startswith("hw.optional.") for k in values) else None
    return {"model": brand, "vendor": vendor, "flags": flags,
            "l1d": pick("hw.perflevel0.l1dcachesize", "hw.l1dcachesize"),
            "l2": pick("hw.perflevel0.l2cachesize", "hw.l2cachesize"),
            "l3": pick("hw.l3cachesize")}


def _from_py_cpuinfo(info: dict) -> dict:
    vendor = info.get("vendor_id_raw")
    return {"model": info.get("brand_raw") or None, "vendor": _VENDORS.get(vendor, vendor or None),
            "flags": normalise_flags(info["flags"]) if info.get("flags") else None,
            "l1d": parse_size(info.get("l1_data_cache_size")), "l2": parse_size(info.get("l2_cache_size")),
            "l3": parse_size(info.get("l3_cache_size"))}


def _detect_cpu(cpuinfo_mod, apple: dict) -> tuple[CPUInfo, list[Message]]:
    missing: list[Message] = []
    system = platform.system()
    found: dict = {"model": None, "vendor": None, "flags": None, "l1d": None, "l2": None, "l3": None}

    def merge(values: dict) -> None:
        for k, v in values.items():
            if found.get(k) is None and v is not None:
                found[k] = v

    if system == "Linux":
        merge(parse_proc_cpuinfo(_read("/proc/cpuinfo") or ""))
        merge(dict(zip(("l1d", "l2", "l3"), _linux_caches())))
    elif system == "Darwin":
        merge(_mac_cpu(apple))
    if found["model"] is None or found["flags"] is None or not (found["l1d"] or found["l2"] or found["l3"]):
        module = _resolve(cpuinfo_mod, "cpuinfo")  # py-cpuinfo: slow (~1 s), so only as a fallback
        if module is None or isinstance(module, BaseException):
            missing.append(msg("hardware.cpuinfo_absent"))
        else:
            info = _try(module.get_cpu_info)
            if isinstance(info, dict):
                merge(_from_py_cpuinfo(info))

    psutil = _import("psutil")
    if psutil is None or isinstance(psutil, BaseException):
        missing.append(msg("hardware.psutil_absent"))
        physical, logical, ram = None, os.cpu_count(), None
    else:
        physical = _try(psutil.cpu_count, logical=False)
        logical = _try(psutil.cpu_count, logical=True)
        ram = _try(lambda: psutil.virtual_memory().total)
    ram = ram or parse_size(apple.get("hw.memsize"))

    cpu = CPUInfo(
        model=found["model"] or platform.processor() or "unknown CPU",
        vendor=found["vendor"] or "unknown", arch=platform.machine() or "unknown",
        physical_cores=physical, logical_cores=logical,
        l1d_bytes=found["l1d"], l2_bytes=found["l2"], l3_bytes=found["l3"], ram_bytes=ram,
        flags=found["flags"] or (),
    )
    unknown = [key for key, value in (("model", found["model"]), ("physical_cores", physical),
                                      ("cache", cpu.last_level_cache_bytes), ("ram", ram),
                                      ("flags", found["flags"])) if value is None]
    if unknown:
        names = [msg(f"hardware.field.{key}") for key in unknown]
        missing.append(msg("hardware.cpu_unknown",
                           fields_ko=", ".join(n.ko for n in names), fields_en=", ".join(n.en for n in names)))
    return cpu, missing


# ---------------------------------------------------------------- NVIDIA (NVML)
def _nvml_probe(pynvml) -> tuple[list[dict], str | None, Message | None]:
    """(devices, driver version, problem) from NVML; devices are dicts in NVML order."""
    if pynvml is None:
        return [], None, msg("hardware.nvml_absent")
    if isinstance(pynvml, BaseException):
        return [], None, msg("hardware.nvml_failed", error=_error(pynvml))
    try:
        pynvml.nvmlInit()
    except Exception as e:  # NVMLError (library not found, driver not loaded) or a broken module
        return [], None, msg("hardware.nvml_failed", error=_error(e))
    try:
        driver = _text(_call(pynvml, "nvmlSystemGetDriverVersion"))
        cuda = _int(_call(pynvml, "nvmlSystemGetCudaDriverVersion"))
        if driver and cuda:
            driver = f"{driver} (CUDA {cuda // 1000}.{cuda % 1000 // 10})"
        devices = []
        for i in range(_int(_call(pynvml, "nvmlDeviceGetCount")) or 0):
            handle = _call(pynvml, "nvmlDeviceGetHandleByIndex", i)
            if handle is None:
                continue
            memory = _call(pynvml, "nvmlDeviceGetMemoryInfo", handle)

            def clock(kind: str) -> int | None:
                return _int(_call(pynvml, "nvmlDeviceGetMaxClockInfo", handle, getattr(pynvml, kind, None)))

            devices.append({
                "name": _text(_call(pynvml, "nvmlDeviceGetName", handle)),
                "uuid": _text(_call(pynvml, "nvmlDeviceGetUUID", handle)),
                "total": _int(getattr(memory, "total", None)),
                "sm_clock": clock("NVML_CLOCK_SM"), "mem_clock": clock("NVML_CLOCK_MEM"),
                "bus_width": _int(_call(pynvml, "nvmlDeviceGetMemoryBusWidth", handle)),
            })
        return devices, driver, None
    finally:
        _call(pynvml, "nvmlShutdown")


def _uuid_key(value) -> str | None:
    text = _text(value)
    if not text:
        return None
    return re.sub(r"^(gpu|mig)-", "", text.strip().lower()).replace("-", "") or None


def _match_nvml(props, index: int, devices: list[dict]) -> dict:
    """The NVML device for torch device ``index``: same UUID, else same index and name."""
    key = _uuid_key(getattr(props, "uuid", None))
    if key:
        for d in devices:
            if _uuid_key(d["uuid"]) == key:
                return d
    if index < len(devices) and devices[index]["name"] == getattr(props, "name", None):
        return devices[index]
    return {}


# ---------------------------------------------------------------- torch backends
def _cuda_devices(torch, pynvml_mod, missing: list[Message]) -> list[AcceleratorInfo]:
    cuda = getattr(torch, "cuda", None)
    hip = _text(getattr(getattr(torch, "version", None), "hip", None))
    if not _call(cuda, "is_available"):
        if not hip:
            _report_unused_nvidia(torch, pynvml_mod, missing)
        return []
    backend = "rocm" if hip else "cuda"
    nvml, driver = [], None
    if backend == "cuda":
        nvml, driver, problem = _nvml_probe(_resolve(pynvml_mod, "pynvml"))
        if problem:
            missing.append(problem)
    out = []
    for i in range(_int(_call(cuda, "device_count")) or 0):
        props = _call(cuda, "get_device_properties", i)
        if props is None:
            missing.append(msg("hardware.probe_failed", what=f"torch.cuda.get_device_properties({i})"))
            continue
        n = _match_nvml(props, i, nvml)
        major, minor = _int(getattr(props, "major", None)), _int(getattr(props, "minor", None))
        if backend == "cuda":
            cc = (major, minor) if major is not None and minor is not None else None
            arch = f"sm_{major}{minor}" if cc else None
            bf16 = cc >= (8, 0) if cc else None
            runtime = _text(getattr(torch.version, "cuda", None))
        else:
            cc, runtime = None, hip
            arch = (_text(getattr(props, "gcnArchName", None)) or "").split(":")[0] or None
            bf16 = _try(cuda.is_bf16_supported, including_emulation=False)
            bf16 = _call(cuda, "is_bf16_supported") if bf16 is None else bf16
        out.append(AcceleratorInfo(
            backend=backend, device=f"cuda:{i}",
            name=_text(getattr(props, "name", None)) or n.get("name") or f"GPU {i}",
            total_memory_bytes=_int(getattr(props, "total_memory", None)) or n.get("total"),
            compute_capability=cc, arch=arch,
            multiprocessors=_int(getattr(props, "multi_processor_count", None)),
            max_clock_mhz=n.get("sm_clock"), memory_clock_mhz=n.get("mem_clock"),
            memory_bus_width_bits=n.get("bus_width"),
            l2_bytes=_int(getattr(props, "L2_cache_size", None)) or None,
            bf16=bool(bf16) if bf16 is not None else None,
            driver_version=driver, runtime_version=runtime,
            unified_memory=bool(getattr(props, "is_integrated", False)),
        ))
    return out


def _report_unused_nvidia(torch, pynvml_mod, missing: list[Message]) -> None:
    """NVML sees NVIDIA GPUs that torch cannot use: say why (CPU build, or driver too old)."""
    module = _resolve(pynvml_mod, "pynvml")
    if module is None or isinstance(module, BaseException):
        return
    devices, driver, _ = _nvml_probe(module)
    if not devices:
        return
    names = ", ".join(d["name"] or "?" for d in devices)
    built = _text(getattr(getattr(torch, "version", None), "cuda", None)) if torch is not None else None
    if torch is None:
        missing.append(msg("hardware.nvidia_without_torch", names=names))
    elif built is None:
        missing.append(msg("hardware.nvidia_cpu_torch", names=names))
    else:
        missing.append(msg("hardware.nvidia_unusable", names=names, built=built, driver=driver or "?"))


def _apple_name(apple: dict) -> str | None:
    return apple.get("machdep.cpu.brand_string") or None


def _macos_major() -> int | None:
    return _int(platform.mac_ver()[0].split(".")[0]) if platform.system() == "Darwin" else None


def _mps_device(torch, apple: dict, cpu: CPUInfo) -> list[AcceleratorInfo]:
    mps = getattr(getattr(torch, "backends", None), "mps", None)
    if not _call(mps, "is_available"):
        return []
    major = _macos_major()
    return [AcceleratorInfo(
        backend="mps", device="mps", name=_apple_name(apple) or "Apple GPU (MPS)",
        total_memory_bytes=parse_size(apple.get("hw.memsize")) or cpu.ram_bytes,
        compute_capability=None, arch=None, multiprocessors=None, max_clock_mhz=None,
        memory_clock_mhz=None, memory_bus_width_bits=None, l2_bytes=None,
        bf16=(major >= 14) if major else None,  # bf16 on MPS needs macOS 14 (Sonoma)
        driver_version=None, runtime_version=None, unified_memory=True,
    )]


def _xpu_devices(torch, missing: list[Message]) -> list[AcceleratorInfo]:
    xpu = getattr(torch, "xpu", None)
    if not _call(xpu, "is_available"):
        return []
    bf16 = _try(getattr(xpu, "is_bf16_supported", None))
    out = []
    for i in range(_int(_call(xpu, "device_count")) or 0):
        props = _call(xpu, "get_device_properties", i)
        if props is None:
            missing.append(msg("hardware.probe_failed", what=f"torch.xpu.get_device_properties({i})"))
            continue
        out.append(AcceleratorInfo(
            backend="xpu", device=f"xpu:{i}", name=_text(getattr(props, "name", None)) or f"XPU {i}",
            total_memory_bytes=_int(getattr(props, "total_memory", None)),
            compute_capability=None, arch=_text(getattr(props, "architecture", None)),
            multiprocessors=_int(getattr(props, "gpu_subslice_count", None)),
            max_clock_mhz=None, memory_clock_mhz=None, memory_bus_width_bits=None, l2_bytes=None,
            bf16=bool(bf16) if bf16 is not None else None,
            driver_version=_text(getattr(props, "driver_version", None)),
            runtime_version=_text(getattr(getattr(torch, "version", None), "xpu", None)),
            unified_memory=False,
        ))
    return out


# ---------------------------------------------------------------- MLX
def _mlx_probe(mlx_mod, apple: dict) -> tuple[bool, Message, AcceleratorInfo | None, str | None]:
    """(usable, reason, GPU accelerator or None, version) for MLX (``mlx.core``)."""
    mx = _resolve(mlx_mod, "mlx.core")
    if mx is None:
        key = "hardware.mlx_absent_mac" if platform.system() == "Darwin" else "hardware.mlx_absent"
        return False, msg(key), None, None
    if isinstance(mx, BaseException):
        return False, msg("hardware.mlx_import_failed", error=_error(mx)), None, None
    version = _text(getattr(mx, "__version__", None))
    if hasattr(mx, "array") and hasattr(mx, "eval"):
        try:
            mx.eval(mx.array([1.0]) + 1)
        except Exception as e:
            return False, msg("hardware.mlx_failed", error=_error(e)), None, version
    metal, gpu_type = getattr(mx, "metal", None), getattr(mx, "gpu", None)
    on_metal = bool(_call(metal, "is_available"))
    on_gpu = (on_metal
              or (gpu_type is not None and bool(_call(mx, "is_available", gpu_type)))
              or bool(_call(getattr(mx, "cuda", None), "is_available")))  # MLX's CUDA backend
    if not on_gpu:
        return True, msg("hardware.mlx_cpu_only", version=version or "?"), None, version
    # mx.device_info (new) replaces mx.metal.device_info, which prints a deprecation notice.
    if hasattr(mx, "device_info"):
        info = _try(mx.device_info, gpu_type) if gpu_type is not None else None
        info = info if isinstance(info, dict) and info else _try(mx.device_info)
    else:
        info = _call(metal, "device_info")
    info = info if isinstance(info, dict) else {}
    name = _text(info.get("device_name")) or _apple_name(apple) or "MLX GPU"
    acc = AcceleratorInfo(
        backend="mlx", device="mlx:gpu", name=name,
        total_memory_bytes=_int(info.get("memory_size") or info.get("total_memory"))
        or parse_size(apple.get("hw.memsize")),
        compute_capability=None, arch=_text(info.get("architecture")), multiprocessors=None,
        max_clock_mhz=None, memory_clock_mhz=None, memory_bus_width_bits=None, l2_bytes=None,
        bf16=None, driver_version=None, runtime_version=version, unified_memory=on_metal,
    )
    return True, msg("hardware.mlx_gpu", version=version or "?", name=name), acc, version


def mlx_status(mlx=_DEFAULT) -> tuple[bool, Message]:
    """Whether MLX can be used here, and a bilingual reason (absent, import fails, CPU only, GPU)."""
    with _quiet():
        usable, reason, _, _ = _mlx_probe(mlx, _apple())
    return usable, reason


# ---------------------------------------------------------------- public entry points
_CACHE: HardwareReport | None = None


def _os_name() -> str:
    if platform.system() == "Darwin" and platform.mac_ver()[0]:
        return f"macOS {platform.mac_ver()[0]} ({platform.machine()})"
    return f"{platform.system()} {platform.release()} ({platform.machine()})"


def detect(*, refresh: bool = False, torch=_DEFAULT, pynvml=_DEFAULT, mlx=_DEFAULT, cpuinfo=_DEFAULT) -> HardwareReport:
    """Detect this machine's hardware (cached; ``refresh=True`` probes again).

    The keyword arguments inject modules (a fake, ``None`` = not installed, an
    exception = import failed); a report built from injected modules is not cached.
    """
    global _CACHE
    real = all(m is _DEFAULT for m in (torch, pynvml, mlx, cpuinfo))
    if real and _CACHE is not None and not refresh:
        return _CACHE
    with _quiet():
        report = _detect(torch, pynvml, mlx, cpuinfo)
    if real:
        _CACHE = report
    return report


def _detect(torch_mod, pynvml_mod, mlx_mod, cpuinfo_mod) -> HardwareReport:
    apple = _apple()
    cpu, missing = _detect_cpu(cpuinfo_mod, apple)
    torch = _resolve(torch_mod, "torch")
    accelerators: list[AcceleratorInfo] = []
    if torch is None or isinstance(torch, BaseException):
        missing.append(msg("hardware.torch_absent") if torch is None
                       else msg("hardware.torch_import_failed", error=_error(torch)))
        _report_unused_nvidia(None, pynvml_mod, missing)
        torch = None
    else:
        accelerators += _cuda_devices(torch, pynvml_mod, missing)
        accelerators += _mps_device(torch, apple, cpu)
        accelerators += _xpu_devices(torch, missing)
    usable, reason, mlx_acc, mlx_version = _mlx_probe(mlx_mod, apple)
    if mlx_acc is not None:
        accelerators.append(mlx_acc)
    else:
        missing.append(reason)
    if not accelerators:
        missing.append(msg("hardware.no_accelerator"))
    return HardwareReport(
        cpu=cpu, accelerators=tuple(accelerators), os=_os_name(), python=platform.python_version(),
        torch=_text(getattr(torch, "__version__", None)) if torch is not None else None,
        mlx=mlx_version, missing=tuple(missing),
    )


def best_device(torch=_DEFAULT) -> str:
    """The best torch device type here: 'cuda' (NVIDIA or ROCm) > 'mps' > 'xpu' > 'cpu'."""
    with _quiet():
        torch = _resolve(torch, "torch")
        if torch is None or isinstance(torch, BaseException):
            return "cpu"
        if _call(getattr(torch, "cuda", None), "is_available"):
            return "cuda"
        if _call(getattr(getattr(torch, "backends", None), "mps", None), "is_available"):
            return "mps"
        if _call(getattr(torch, "xpu", None), "is_available"):
            return "xpu"
    return "cpu"


# ---------------------------------------------------------------- markdown
def _label(m: Message, sep: str = " / ") -> str:
    """The message in the chosen language; for "both", Korean and English joined by ``sep``."""
    lang = get_language()
    if lang in ("ko", "en"):
        return m.text(lang)
    return m.ko if m.ko == m.en else f"{m.ko}{sep}{m.en}"


def _cell(value) -> str:
    if value is None:
        return "–"
    if isinstance(value, bool):
        return _label(msg("hardware.yes" if value else "hardware.no"))
    return str(value).replace("|", "\\|")


def _size(n: int | None) -> str:
    if not n:
        return "?"
    for unit, factor in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= factor:
            return f"{n / factor:g} {unit}" if n % factor == 0 else f"{n / factor:.1f} {unit}"
    return f"{n} B"


def describe(report: HardwareReport) -> str:
    """The report as Markdown: a device table with bilingual headers, CPU details, versions, gaps."""
    headers = [_label(msg(f"hardware.col.{c}")) for c in ("device", "kind", "memory", "cc", "bf16")]
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    for row in report.rows():
        name = f"{row['name']} (`{row['device']}`)"
        lines.append("| " + " | ".join(_cell(v) for v in (name, row["kind"].upper(), row["memory_gib"],
                                                          row["compute_capability"], row["bf16"])) + " |")
    cpu = report.cpu
    details = msg("hardware.cpu_line", physical=cpu.physical_cores or "?", logical=cpu.logical_cores or "?",
                  l1d=_size(cpu.l1d_bytes), l2=_size(cpu.l2_bytes), l3=_size(cpu.l3_bytes),
                  flags=" ".join(cpu.flags) or "–")
    versions = msg("hardware.versions", os=report.os, python=report.python,
                   torch=report.torch or "–", mlx=report.mlx or "–")
    lines += ["", _label(details, "<br>"), "", _label(versions, "<br>")]
    if report.missing:
        lines += ["", f"**{_label(msg('hardware.missing_title'))}**", ""]
        lines += [f"- {_label(m, '<br>')}" for m in report.missing]
    return "\n".join(lines)
