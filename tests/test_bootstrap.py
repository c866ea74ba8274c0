"""The first-run set-up (stdlib only): the right PyTorch build, at most one hand-over to .venv,
a .venv that runs this folder's code, and --help without installing anything."""
import hashlib
import os
import shutil
import signal
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from autograder import bootstrap

REPO = Path(__file__).resolve().parent.parent
CPU_BUILD = ("2.13.0+cpu", None)
CUDA_BUILD = ("2.5.1", "12.4")
PIP = bootstrap.Installer("pip", bootstrap.pip(), ("", ""))
UV = bootstrap.Installer("uv", ("/opt/uv", "pip", "install", "--python", str(bootstrap.PYTHON)), ("", ""),
                         {"UV_FIND_LINKS": "/wheels"})


def fake_runner(results):
    """A stand-in for ``bootstrap.run``: records each command, answers with ``results`` (then 0)."""
    calls = []

    def run(*args, check=True, env=None):
        calls.append([str(a) for a in args])
        code = results.pop(0) if results else 0
        if check and code:
            raise subprocess.CalledProcessError(code, args)
        return code
    return run, calls


def torch_builds(monkeypatch, *builds):
    """``torch_build()`` answers ``builds`` in turn (the last one from then on)."""
    answers = list(builds)
    monkeypatch.setattr(bootstrap, "torch_build", lambda: answers.pop(0) if len(answers) > 1 else answers[0])


def no_gpu_linux(monkeypatch):
    monkeypatch.setattr(bootstrap.sys, "platform", "linux")
    monkeypatch.setattr(bootstrap, "has_nvidia_gpu", lambda: False)


def installs_of_torch(calls):
    return [c for c in calls if "install" in c and any(a.startswith("torch") for a in c)]


def from_pypi(command):
    """Whether a pip command may take torch from PyPI (the CUDA build on Linux)."""
    return "--no-index" not in command and (
        "--index-url" not in command or command[command.index("--index-url") + 1] != bootstrap.CPU_INDEX
        or "--extra-index-url" in command)


# ------------------------------------------------------------------ PyTorch: the right build
@pytest.mark.parametrize("tool", [PIP, UV], ids=["pip", "uv"])
def test_linux_without_gpu_prefers_a_local_cpu_wheel(monkeypatch, tool):
    run, calls = fake_runner([0])
    monkeypatch.setattr(bootstrap, "run", run)
    no_gpu_linux(monkeypatch)
    torch_builds(monkeypatch, None, CPU_BUILD)
    assert bootstrap.install_torch(tool) == CPU_BUILD[0]
    assert len(calls) == 1 and "--no-index" in calls[0] and "--no-deps" in calls[0]


@pytest.mark.parametrize("tool", [PIP, UV], ids=["pip", "uv"])
def test_linux_without_gpu_falls_back_to_the_cpu_index_only(monkeypatch, tool):
    run, calls = fake_runner([1, 0])
    monkeypatch.setattr(bootstrap, "run", run)
    no_gpu_linux(monkeypatch)
    torch_builds(monkeypatch, None, CPU_BUILD)
    assert bootstrap.install_torch(tool) == CPU_BUILD[0]
    assert calls[1][calls[1].index("--index-url") + 1] == bootstrap.CPU_INDEX
    assert "--extra-index-url" not in calls[1]  # pip would take PyPI's CUDA build whenever the CPU index fails


@pytest.mark.parametrize("tool", [PIP, UV], ids=["pip", "uv"])
def test_a_cuda_build_from_the_cpu_sources_is_not_accepted(monkeypatch, tool):
    run, calls = fake_runner([0, 0, 0, 0])  # local install, uninstall, index install, uninstall
    monkeypatch.setattr(bootstrap, "run", run)
    no_gpu_linux(monkeypatch)
    torch_builds(monkeypatch, None, CUDA_BUILD)
    with pytest.raises(SystemExit):
        bootstrap.install_torch(tool)
    assert [c for c in calls if "uninstall" in c]


@pytest.mark.parametrize("tool", [PIP, UV], ids=["pip", "uv"])
def test_a_cuda_build_already_there_is_replaced_without_gpu(monkeypatch, tool):
    run, calls = fake_runner([0, 0])
    monkeypatch.setattr(bootstrap, "run", run)
    no_gpu_linux(monkeypatch)
    torch_builds(monkeypatch, CUDA_BUILD, CPU_BUILD)
    assert bootstrap.install_torch(tool) == CPU_BUILD[0]
    assert "uninstall" in calls[0] and "--no-index" in calls[1]


@pytest.mark.parametrize("tool", [PIP, UV], ids=["pip", "uv"])
def test_unreachable_cpu_build_stops_with_the_command_to_run(monkeypatch, tmp_path, capsys, tool):
    """Local wheel and CPU index both fail: no command takes torch from PyPI, the course is not
    installed (its `torch>=2.4` would fetch the CUDA build), and the learner reads what to run."""
    venv = tmp_path / ".venv"
    monkeypatch.setattr(bootstrap, "VENV", venv)
    monkeypatch.setattr(bootstrap, "MARKER", venv / ".course-installed")
    monkeypatch.setattr(bootstrap, "BIN", venv / "bin")
    monkeypatch.setattr(bootstrap, "PYTHON", venv / "bin" / "python")
    calls = []

    def run(*args, check=True, env=None):
        command = [str(a) for a in args]
        calls.append(command)
        code = 1 if installs_of_torch([command]) else 0  # the network to both torch sources is down
        if check and code:
            raise subprocess.CalledProcessError(code, args)
        return code
    monkeypatch.setattr(bootstrap, "run", run)
    monkeypatch.setattr(bootstrap, "probe", lambda *args: None)  # no torch, no course package yet
    monkeypatch.setattr(bootstrap, "installer", lambda: tool)
    no_gpu_linux(monkeypatch)
    with pytest.raises(SystemExit) as stopped:
        bootstrap.main(["setup"])
    message = str(stopped.value.code)
    assert isinstance(stopped.value.code, str)  # exit status 1
    assert "CPU" in message and "PyTorch" in message and "설치" in message and "Could not reach" in message
    assert f"pip install torch --index-url {bootstrap.CPU_INDEX}" in message
    assert len(installs_of_torch(calls)) == 2
    assert not [c for c in installs_of_torch(calls) if from_pypi(c)]
    assert not [c for c in calls if "-e" in c]
    assert not (venv / ".course-installed").exists()
    assert "Traceback" not in capsys.readouterr().out


@pytest.mark.parametrize("tool", [PIP, UV], ids=["pip", "uv"])
def test_the_course_install_keeps_the_torch_just_installed(monkeypatch, tmp_path, tool):
    venv = tmp_path / ".venv"
    monkeypatch.setattr(bootstrap, "VENV", venv)
    monkeypatch.setattr(bootstrap, "MARKER", venv / ".course-installed")
    monkeypatch.setattr(bootstrap, "BIN", venv / "bin")
    monkeypatch.setattr(bootstrap, "PYTHON", venv / "bin" / "python")

    def run(*args, check=True, env=None):
        calls.append([str(a) for a in args])
        if "venv" in calls[-1]:
            venv.mkdir()
        return 0
    calls = []
    monkeypatch.setattr(bootstrap, "run", run)
    monkeypatch.setattr(bootstrap, "check_install", lambda: None)
    monkeypatch.setattr(bootstrap, "installer", lambda: tool)
    no_gpu_linux(monkeypatch)
    torch_builds(monkeypatch, None, CPU_BUILD)
    assert bootstrap.main(["setup"]) == 0
    course = next(c for c in calls if "-e" in c)
    constraint = Path(course[course.index("-c") + 1])
    assert constraint.read_text().split() == [f"torch=={CPU_BUILD[0]}"]
    assert not [c for c in installs_of_torch(calls) if from_pypi(c)]
    installs = [c for c in calls if "install" in c and "venv" not in c]
    assert course[:len(tool.program)] == [str(a) for a in tool.program]  # torch and the course: the chosen one
    assert all(c[:len(tool.program)] == [str(a) for a in tool.program] for c in installs_of_torch(calls))
    assert any("pip>=23" in c for c in installs) == (tool.name == "pip")  # uv needs no newer pip


# ------------------------------------------------------------------ the installer: uv where it can be had, else pip
def fake_python(tmp_path, with_uv=False):
    bin_ = tmp_path / "env" / "bin"
    bin_.mkdir(parents=True)
    (bin_ / "python").touch()
    if with_uv:
        (bin_ / "uv").touch()
    return bin_ / "python"


def test_uv_beside_the_python_is_chosen_with_pips_indexes(monkeypatch, tmp_path):
    python = fake_python(tmp_path, with_uv=True)
    monkeypatch.delenv(bootstrap.INSTALLER_ENV, raising=False)
    monkeypatch.setattr(bootstrap, "run", lambda *a, **k: pytest.fail("uv is there: nothing to fetch"))
    monkeypatch.setattr(bootstrap, "pip_settings", lambda python: {"global.find-links": "/opt/wheels"})
    tool = bootstrap.installer(python)
    assert tool.name == "uv" and tool.program[:4] == (str(python.parent / "uv"), "pip", "install", "--python")
    assert tool.env["UV_FIND_LINKS"] == "/opt/wheels" and "already present" in tool.why[1]
    assert tool.install("-q", "x")[-2:] == ("-q", "x")


def test_uv_is_fetched_into_the_environment_by_pip(monkeypatch, tmp_path):
    python = fake_python(tmp_path)
    monkeypatch.delenv(bootstrap.INSTALLER_ENV, raising=False)
    monkeypatch.setattr(bootstrap.shutil, "which", lambda name: None)
    monkeypatch.setattr(bootstrap, "pip_settings", lambda python: {})
    calls = []

    def run(*args, check=True, env=None):
        calls.append([str(a) for a in args])
        (python.parent / "uv").touch()
        return 0
    monkeypatch.setattr(bootstrap, "run", run)
    tool = bootstrap.installer(python)
    assert calls == [[str(python), "-m", "pip", "install", "--disable-pip-version-check", "-q", bootstrap.UV]]
    assert tool.name == "uv" and "installed into the environment" in tool.why[1] and "가상 환경에 설치한" in tool.why[0]


def test_pip_is_the_fallback_when_uv_cannot_be_had(monkeypatch, tmp_path):
    python = fake_python(tmp_path)
    monkeypatch.delenv(bootstrap.INSTALLER_ENV, raising=False)
    monkeypatch.setattr(bootstrap.shutil, "which", lambda name: None)
    run, calls = fake_runner([1])  # pip cannot install uv (no network, no wheel for this platform)
    monkeypatch.setattr(bootstrap, "run", run)
    tool = bootstrap.installer(python)
    assert tool.name == "pip" and tool.program == bootstrap.pip(python=python) and tool.env is None
    assert "pip" in tool.why[0] and "uv could not be found or installed" in tool.why[1]
    assert len(calls) == 1
    run, calls = fake_runner([])
    monkeypatch.setattr(bootstrap, "run", run)
    assert bootstrap.installer(python, fetch_uv=False).name == "pip" and calls == []  # a module's install fetches no uv


def test_course_installer_pip_chooses_pip_even_with_uv(monkeypatch, tmp_path):
    python = fake_python(tmp_path, with_uv=True)
    monkeypatch.setenv(bootstrap.INSTALLER_ENV, "pip")
    tool = bootstrap.installer(python)
    assert tool.name == "pip" and "COURSE_INSTALLER=pip" in tool.why[1] and "COURSE_INSTALLER=pip" in tool.why[0]


def test_pips_index_settings_become_uvs():
    settings = {"global.index-url": "https://mirror/simple", "install.index-url": "https://install/simple",
                ":env:.find-links": "/opt/wheels /more/wheels", "global.find-links": "/ignored",
                "global.extra-index-url": "file:///opt/pypi/simple file:///opt/pypi-more/simple",
                "global.constraint": "/etc/c.txt", "global.cert": "/etc/ca.crt", ":env:.default-timeout": "180",
                "global.trusted-host": "a.example b.example", ":env:.no-index": "false"}
    env = bootstrap.uv_environment(settings, base={"UV_HTTP_TIMEOUT": "30"})
    assert env == {"UV_INDEX_STRATEGY": "unsafe-best-match",  # pip's rule: the best version from every index
                   "UV_DEFAULT_INDEX": "https://install/simple",  # [install] over [global], as pip reads it
                   "UV_INDEX": "file:///opt/pypi/simple file:///opt/pypi-more/simple",
                   "UV_FIND_LINKS": "/opt/wheels,/more/wheels",  # a PIP_* variable over the files
                   "UV_CONSTRAINT": "/etc/c.txt", "SSL_CERT_FILE": "/etc/ca.crt",
                   "UV_INSECURE_HOST": "a.example b.example",
                   "UV_HTTP_TIMEOUT": "30"}  # set by the learner: kept
    assert bootstrap.uv_environment({"global.no-index": "yes"}, base={})["UV_NO_INDEX"] == "1"


def test_pip_settings_are_read_by_pip_itself(monkeypatch, tmp_path):
    """The settings come from `pip config list` (files and PIP_* variables), not a parser of pip's files."""
    config = tmp_path / "pip.conf"
    config.write_text("[global]\nextra-index-url = file:///local/simple\n[install]\nfind-links = /local/wheels\n")
    for name in [n for n in os.environ if n.startswith("PIP_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("PIP_CONFIG_FILE", str(config))
    monkeypatch.setenv("PIP_INDEX_URL", "https://mirror.example/simple")
    settings = bootstrap.pip_settings(Path(sys.executable))
    assert settings[":env:.index-url"] == "https://mirror.example/simple"
    assert settings["global.extra-index-url"] == "file:///local/simple"
    assert settings["install.find-links"] == "/local/wheels"
    env = bootstrap.uv_environment(settings, base={})
    assert env["UV_DEFAULT_INDEX"] == "https://mirror.example/simple" and env["UV_FIND_LINKS"] == "/local/wheels"


@pytest.mark.parametrize("tool", [PIP, UV], ids=["pip", "uv"])
def test_gpu_machines_and_macs_take_the_default_build(monkeypatch, tool):
    for platform, gpu in (("linux", True), ("darwin", False)):
        run, calls = fake_runner([0])
        monkeypatch.setattr(bootstrap, "run", run)
        monkeypatch.setattr(bootstrap.sys, "platform", platform)
        monkeypatch.setattr(bootstrap, "has_nvidia_gpu", lambda: gpu)
        torch_builds(monkeypatch, None, CUDA_BUILD)
        assert bootstrap.install_torch(tool) == CUDA_BUILD[0]
        assert calls[0][-1] == bootstrap.TORCH and "--index-url" not in calls[0]


@pytest.mark.parametrize("tool", [PIP, UV], ids=["pip", "uv"])
def test_installed_torch_is_kept(monkeypatch, tool):
    run, calls = fake_runner([])
    monkeypatch.setattr(bootstrap, "run", run)
    no_gpu_linux(monkeypatch)
    torch_builds(monkeypatch, CPU_BUILD)
    assert bootstrap.install_torch(tool) == CPU_BUILD[0] and calls == []


def test_torch_probe_prints_nothing_and_reads_the_build_without_importing_torch(tmp_path, monkeypatch, capfd):
    """Right after `pip install --no-deps` torch cannot import; its version.py still says which build it is."""
    site = tmp_path / "site"
    (site / "torch").mkdir(parents=True)
    (site / "torch" / "__init__.py").write_text("raise ImportError('dependencies missing')\n")
    (site / "torch" / "version.py").write_text("from typing import Optional\n__version__ = '2.13.0+cpu'\n"
                                               "cuda: Optional[str] = None\nhip: Optional[str] = None\n")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(tmp_path / "venv")], check=True)
    monkeypatch.setattr(bootstrap, "PYTHON", tmp_path / "venv" / "bin" / "python")  # no torch of its own
    monkeypatch.setenv("PYTHONPATH", str(site))
    assert bootstrap.torch_build() == ("2.13.0+cpu", None)
    (site / "torch" / "version.py").write_text("__version__ = '2.5.1+cu124'\ncuda = '12.4'\n")
    assert bootstrap.torch_build() == ("2.5.1+cu124", "12.4")
    shutil.rmtree(site / "torch")
    assert bootstrap.torch_build() is None
    out, err = capfd.readouterr()
    assert out == "" and err == ""


def test_venv_env_puts_its_bin_first():
    env = bootstrap.venv_env()
    assert env["PATH"].split(bootstrap.os.pathsep)[0] == str(bootstrap.BIN)


# ------------------------------------------------------------------ at most one hand-over to .venv
def test_the_hand_over_is_marked(monkeypatch, tmp_path):
    monkeypatch.setattr(bootstrap, "VENV", tmp_path / ".venv")
    monkeypatch.setattr(bootstrap, "ensure_venv", lambda: None)
    monkeypatch.delenv(bootstrap.HOP, raising=False)
    seen = {}
    monkeypatch.setattr(bootstrap.subprocess, "call", lambda cmd, cwd, env: seen.update(env=env) or 0)
    assert bootstrap.main(["hardware"]) == 0
    assert seen["env"][bootstrap.HOP] == str(bootstrap.ROOT)


def test_a_second_hand_over_is_refused(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(bootstrap, "VENV", tmp_path / ".venv")  # this Python is not that .venv's
    monkeypatch.setenv(bootstrap.HOP, "/elsewhere/course")
    monkeypatch.setattr(bootstrap, "ensure_venv", lambda: pytest.fail("must not install"))
    monkeypatch.setattr(bootstrap.subprocess, "call", lambda *a, **k: pytest.fail("must not restart"))
    with pytest.raises(SystemExit) as stopped:
        bootstrap.main(["hardware"])
    message = str(stopped.value.code)
    assert "다시 실행하지 않고 멈춥니다" in message and "Stopping instead of restarting" in message
    assert "/elsewhere/course" in message and "pip install --no-deps -e /elsewhere/course" in message


def test_arriving_in_the_venv_clears_the_mark(monkeypatch):
    monkeypatch.setattr(bootstrap, "VENV", Path(sys.prefix))
    monkeypatch.setenv(bootstrap.HOP, str(bootstrap.ROOT))
    monkeypatch.setattr("autograder.cli.main", lambda argv: 0)
    assert bootstrap.main(["hardware"]) == 0
    assert bootstrap.HOP not in os.environ


def copy_course(folder: Path) -> Path:
    folder.mkdir()
    shutil.copytree(REPO / "autograder", folder / "autograder", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "pyproject.toml", folder)
    return folder


def fake_venv(course: Path, points_at: Path, log: Path) -> Path:
    """A .venv of ``course`` (no pip, nothing installed) whose course package is ``points_at``'s, as after
    copying a folder with its editable install; every Python started in it writes a line to ``log``."""
    venv = course / ".venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / ("Scripts" if os.name == "nt" else "bin") / ("python.exe" if os.name == "nt" else "python")
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    (Path(purelib) / "course.pth").write_text(f"{points_at}\n")
    (Path(purelib) / "count_starts.pth").write_text(
        f"import os, sys; open({str(log)!r}, 'a').write(f'{{os.getpid()}} {{sys.prefix}}' + chr(10))\n")
    (venv / ".course-installed").write_text(hashlib.sha256((course / "pyproject.toml").read_bytes()).hexdigest())
    return python


def test_two_course_copies_whose_venvs_point_at_each_other_stop_with_one_message(tmp_path):
    a, b = copy_course(tmp_path / "a"), copy_course(tmp_path / "b")
    log = tmp_path / "starts.log"
    python_a = fake_venv(a, b, log)
    fake_venv(b, a, log)
    log.unlink(missing_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV", "COURSE_", "COV"))}
    proc = subprocess.Popen([str(python_a), "-m", "autograder", "hardware"], cwd=tmp_path, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        pytest.fail(f"still restarting after 120 s; {len(set(log.read_text().splitlines()))} Pythons started:\n{out[-2000:]}")
    starts = set(log.read_text().splitlines())  # one line per process (lib64 -> lib may read a .pth twice)
    assert len(starts) <= 4, starts  # the first, the look at b's .venv, one repair attempt (no pip), a last look
    assert proc.returncode != 0, out
    assert out.count("[course]") <= 8 and "Traceback" not in out, out
    a, b = a.resolve(), b.resolve()
    assert f"다른 폴더({a})" in out and f"another folder ({a}" in out  # b's .venv points at a
    assert f"pip install --disable-pip-version-check -q --no-deps -e {b}" in out, out
    assert "고치지 못했습니다" in out and "Could not point" in out


# ------------------------------------------------------------------ help with nothing installed
def stdlib_python() -> list[str]:
    """The base interpreter with only its standard library: no site-packages, no environment variables."""
    base = getattr(sys, "_base_executable", None) or sys.executable
    return [base, "-S", "-s", "-E", "-X", "utf8"]


@pytest.mark.parametrize("argv,code", [
    (["--help"], 0), (["-h"], 0), (["instructor", "--help"], 0), (["submit", "--help"], 0), (["hardware", "-h"], 0),
    (["bogus"], 2), (["hardware", "--bogus"], 2), (["instructor"], 2), (["submit"], 2),
])
def test_help_and_usage_errors_need_no_install(tmp_path, argv, code):
    course = copy_course(tmp_path / "course")
    done = subprocess.run([*stdlib_python(), "-m", "autograder", *argv], cwd=course, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == code, done.stdout + done.stderr
    assert not (course / ".venv").exists()
    assert "Traceback" not in done.stderr, done.stderr
    if argv == ["--help"]:
        for command in ("start", "test", "hardware", "instructor", "submit"):
            assert command in done.stdout
    if code:
        assert "usage:" in done.stderr and "명령 목록" in done.stdout and "list of commands" in done.stdout


def test_the_help_path_leaves_no_placeholder_behind(monkeypatch, tmp_path):
    monkeypatch.setattr(bootstrap, "VENV", tmp_path / ".venv")
    before = set(sys.modules)
    with pytest.raises(SystemExit) as done:
        bootstrap.main(["--help"])
    assert done.value.code == 0
    assert not [m for m in set(sys.modules) - before if isinstance(sys.modules[m], bootstrap._Placeholder)]


def test_bootstrap_imports_only_the_standard_library():
    import ast
    tree = ast.parse(Path(bootstrap.__file__).read_text(encoding="utf-8"))
    names = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    names |= {n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.level == 0}
    assert names <= set(sys.stdlib_module_names) | {"__future__"}, names


@pytest.mark.parametrize("lang", ["ko", "en"])
def test_start_opens_jupyterlab_with_the_course_settings_in_the_start_pages_language(monkeypatch, lang):
    """The start page's language is the interface's (the language pack is installed); lessons are saved without
    outputs (the course's Jupyter configuration folder comes first)."""
    monkeypatch.setenv("COURSE_LANG", lang)
    monkeypatch.setattr(bootstrap, "ensure_venv", lambda: None)
    calls = []
    monkeypatch.setattr(bootstrap.subprocess, "call", lambda cmd, **kw: calls.append((cmd, kw)) or 0)
    assert bootstrap.start([]) == 0
    cmd, kw = calls[0]
    assert f"--LabApp.app_settings_dir={bootstrap.JUPYTER_CONFIG / 'lab' / lang}" in cmd
    assert (bootstrap.JUPYTER_CONFIG / "lab" / lang / "overrides.json").exists()
    assert kw["env"]["JUPYTER_CONFIG_PATH"].split(os.pathsep)[0] == str(bootstrap.JUPYTER_CONFIG)
    assert any(a.endswith(f"00_start_here.{lang}.ipynb") for a in cmd)


def test_the_test_command_runs_files_side_by_side_only_where_there_are_cores_for_it(monkeypatch):
    for cores, expected in ((1, []), (2, []), (3, []), (4, ["-n", "2", "--dist", "loadfile"]),
                            (16, ["-n", "4", "--dist", "loadfile"])):
        monkeypatch.setattr(bootstrap.os, "cpu_count", lambda: cores)
        assert bootstrap.side_by_side([]) == expected, cores
    assert bootstrap.side_by_side(["-n", "1"]) == [] and bootstrap.side_by_side(["-p", "no:xdist"]) == []
