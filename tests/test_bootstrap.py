"""The first-run set-up never installs a CUDA PyTorch build on a machine without an NVIDIA GPU."""
import subprocess

from autograder import bootstrap


def fake_runner(results):
    calls = []

    def run(*args, check=True):
        calls.append([str(a) for a in args])
        code = results.pop(0) if results else 0
        if check and code:
            raise subprocess.CalledProcessError(code, args)
        return code
    return run, calls


def test_linux_without_gpu_prefers_a_local_cpu_wheel(monkeypatch):
    run, calls = fake_runner([1, 0])  # torch absent, then the local wheel installs
    monkeypatch.setattr(bootstrap, "run", run)
    monkeypatch.setattr(bootstrap.sys, "platform", "linux")
    monkeypatch.setattr(bootstrap, "has_nvidia_gpu", lambda: False)
    bootstrap.install_torch()
    assert "--no-index" in calls[1] and len(calls) == 2


def test_linux_without_gpu_falls_back_to_the_cpu_index(monkeypatch):
    run, calls = fake_runner([1, 1, 0])
    monkeypatch.setattr(bootstrap, "run", run)
    monkeypatch.setattr(bootstrap.sys, "platform", "linux")
    monkeypatch.setattr(bootstrap, "has_nvidia_gpu", lambda: False)
    bootstrap.install_torch()
    assert bootstrap.CPU_INDEX in calls[2]


def test_never_falls_back_to_the_default_build_without_gpu(monkeypatch):
    run, calls = fake_runner([1, 1, 1])
    monkeypatch.setattr(bootstrap, "run", run)
    monkeypatch.setattr(bootstrap.sys, "platform", "linux")
    monkeypatch.setattr(bootstrap, "has_nvidia_gpu", lambda: False)
    try:
        bootstrap.install_torch()
    except SystemExit as exc:
        assert "CPU" in str(exc)
    else:
        raise AssertionError("install_torch should stop")
    assert len(calls) == 3


def test_gpu_machines_and_macs_take_the_default_build(monkeypatch):
    for platform, gpu in (("linux", True), ("darwin", False)):
        run, calls = fake_runner([1, 0])
        monkeypatch.setattr(bootstrap, "run", run)
        monkeypatch.setattr(bootstrap.sys, "platform", platform)
        monkeypatch.setattr(bootstrap, "has_nvidia_gpu", lambda: gpu)
        bootstrap.install_torch()
        assert calls[1][-1] == bootstrap.TORCH and "--index-url" not in calls[1]


def test_installed_torch_is_kept(monkeypatch):
    run, calls = fake_runner([0])
    monkeypatch.setattr(bootstrap, "run", run)
    bootstrap.install_torch()
    assert len(calls) == 1


def test_venv_env_puts_its_bin_first():
    env = bootstrap.venv_env()
    assert env["PATH"].split(bootstrap.os.pathsep)[0] == str(bootstrap.BIN)
