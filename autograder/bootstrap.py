"""First-run set-up with the standard library only: ``python3 -m autograder start|test``.

Creates ``.venv`` in the repository (once), installs the course into it with the
right PyTorch build for this machine (with uv where it can be had, else pip: :func:`installer`),
then opens JupyterLab on the start page
(``start``) or runs the whole test suite (``test``). Other subcommands are handed
to :mod:`autograder.cli` inside the virtual environment: the command line is
checked here first, so ``--help`` and usage errors need no install, and the hand-over
happens at most once (``COURSE_BOOTSTRAP_HOP``).
"""
from __future__ import annotations

import hashlib
import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from importlib.machinery import ModuleSpec
from pathlib import Path
from types import ModuleType

from . import language, layout
from .start_page import address as start_address

ROOT = Path(__file__).resolve().parent.parent
VENV = ROOT / ".venv"
MARKER = VENV / ".course-installed"
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")
JUPYTER_CONFIG = ROOT / "autograder" / "data" / "jupyter"
PYTHON = BIN / ("python.exe" if os.name == "nt" else "python")
TORCH = "torch>=2.4"
CPU_INDEX = "https://download.pytorch.org/whl/cpu"
HOP = "COURSE_BOOTSTRAP_HOP"  # set for the one re-execution inside .venv: the folder it came from
SETUP = "python3 -m autograder setup"
UV = "uv>=0.5"  # the installer the set-up prefers: a wheel on PyPI, installed into .venv by pip
EXTRA = "lab"  # pyproject.toml's extra of a clone (JupyterLab, nbgrader, the tests) beside a kernel's dependencies
INSTALLER_ENV = "COURSE_INSTALLER"  # `pip` makes pip install even where uv can be had (benchmarks/setup_time.py)


def say(ko: str, en: str) -> None:
    """``[course]`` lines in the chosen language (:mod:`autograder.language`)."""
    print(course_lines(ko, en), flush=True)


def stop(ko: str, en: str) -> SystemExit:
    """The exception that ends the set-up with a message in the chosen language (exit status 1)."""
    return SystemExit(course_lines(ko, en))


def course_lines(ko: str, en: str) -> str:
    return "[course] " + language.pick(ko, en, joiner="\n[course] ")


def command_line(*args: str | Path) -> str:
    """``args`` as one line to copy into a terminal."""
    parts = [str(a) for a in args]
    return subprocess.list2cmdline(parts) if os.name == "nt" else shlex.join(parts)


def run(*args: str | Path, check: bool = True, env: dict[str, str] | None = None) -> int:
    return subprocess.run([str(a) for a in args], cwd=ROOT, check=check, env=env).returncode


def probe(*args: str | Path) -> str | None:
    """The last line ``args`` prints, or None if it fails; nothing reaches the learner's screen."""
    done = subprocess.run([str(a) for a in args], cwd=ROOT, capture_output=True, text=True, errors="replace")
    lines = done.stdout.strip().splitlines()
    return lines[-1].strip() if done.returncode == 0 and lines else None


def pip(*args: str | Path, python: str | Path = None) -> tuple:
    return (python or PYTHON, "-m", "pip", "install", "--disable-pip-version-check", *args)


@dataclass(frozen=True)
class Installer:
    """The program that installs packages into one Python environment, and why it was chosen (ko, en)."""

    name: str  # "uv" or "pip"
    program: tuple  # the command line before what it installs
    why: tuple[str, str]
    env: dict[str, str] | None = field(default=None, compare=False)  # uv: pip's index settings translated

    def install(self, *args: str | Path) -> tuple:
        return (*self.program, *args)


def installer(python: str | Path = None, fetch_uv: bool = True) -> Installer:
    """The one choice of installer: uv where it is beside ``python`` or on PATH, or (``fetch_uv``) where pip can
    install it from the package index into that environment; pip otherwise, or where ``COURSE_INSTALLER=pip``.
    uv installs the same packages from the same indexes (:func:`uv_environment`) in seconds from its cache."""
    python = Path(python or PYTHON)
    plain = Installer("pip", pip(python=python), ("", ""))
    if os.environ.get(INSTALLER_ENV, "").strip().lower() == "pip":
        return Installer("pip", plain.program, (f"{INSTALLER_ENV}=pip 이므로 pip으로 설치합니다.",
                                                f"{INSTALLER_ENV}=pip: installing with pip."))
    found = uv_program(python)
    fetched = False
    if found is None and fetch_uv and run(*pip("-q", UV, python=python), check=False) == 0:
        found, fetched = uv_program(python), True
    if found is None:
        return Installer("pip", plain.program, ("uv를 찾거나 설치할 수 없어 pip으로 설치합니다(더 느립니다).",
                                                "uv could not be found or installed: installing with pip (slower)."))
    where = ("패키지 색인에서 가상 환경에 설치한", "installed into the environment from the package index") if fetched \
        else (f"이미 있는({found})", f"already present ({found})")
    return Installer("uv", (found, "pip", "install", "--python", python),
                     (f"{where[0]} uv로 설치합니다(pip과 같은 색인, 캐시가 있으면 몇 초).",
                      f"Installing with uv, {where[1]}: the same indexes as pip, seconds with a warm cache."),
                     uv_environment(pip_settings(python)))


def uv_program(python: Path) -> str | None:
    """A uv executable beside ``python`` (installed into its environment) or on PATH; None if there is none."""
    beside = python.parent / ("uv.exe" if os.name == "nt" else "uv")
    return str(beside) if beside.exists() else shutil.which("uv")


def pip_settings(python: Path) -> dict[str, str]:
    """pip's configuration as pip itself reads it (files and ``PIP_*`` variables): ``pip config list``."""
    done = subprocess.run([str(python), "-m", "pip", "config", "list"], capture_output=True, text=True,
                          errors="replace")
    found = (re.match(r"^([^=\s]+)='(.*)'$", line.strip()) for line in done.stdout.splitlines())
    return {m[1]: m[2] for m in found if m} if done.returncode == 0 else {}


# pip's setting -> (uv's variable, how uv separates a list, or None for one value)
UV_FROM_PIP = {"index-url": ("UV_DEFAULT_INDEX", None), "extra-index-url": ("UV_INDEX", " "),
               "find-links": ("UV_FIND_LINKS", ","), "constraint": ("UV_CONSTRAINT", " "),
               "no-index": ("UV_NO_INDEX", None), "cert": ("SSL_CERT_FILE", None),
               "client-cert": ("SSL_CLIENT_CERT", None), "trusted-host": ("UV_INSECURE_HOST", " "),
               "timeout": ("UV_HTTP_TIMEOUT", None), "default-timeout": ("UV_HTTP_TIMEOUT", None)}


def uv_environment(settings: dict[str, str], base: dict[str, str] | None = None) -> dict[str, str]:
    """The environment under which uv reads the indexes pip would (``settings`` from :func:`pip_settings`): for
    each setting, pip's own precedence (a ``PIP_*`` variable, then ``[install]``, then ``[global]``), and pip's rule
    of taking the best version from all of them (``UV_INDEX_STRATEGY=unsafe-best-match``). A ``UV_*`` variable
    already set wins. Without the local indexes and wheels pip is told about, a bare ``torch`` would resolve to
    PyPI's multi-GB CUDA build."""
    env = dict(os.environ if base is None else base)
    env.setdefault("UV_INDEX_STRATEGY", "unsafe-best-match")
    for key, (name, separator) in UV_FROM_PIP.items():
        value = next((settings[f"{section}.{key}"] for section in (":env:", "install", "global")
                      if f"{section}.{key}" in settings), None)
        if value is None or name in env:
            continue
        if key == "no-index":
            if value.lower() not in ("1", "true", "yes", "on"):
                continue
            value = "1"
        env[name] = separator.join(value.split()) if separator else value
    return env


def must(*args: str | Path, env: dict[str, str] | None = None) -> None:
    """Run ``args``; if it fails, stop with the command to retry (the installer has already said why)."""
    if run(*args, check=False, env=env) != 0:
        line = command_line(*args)
        raise stop(f"다음 명령이 실패했습니다(위의 오류를 보세요. 인터넷 연결이 끊겼을 수 있습니다):\n  {line}\n"
                   f"[course] 원인을 고친 뒤 `{SETUP}` 을 다시 실행하세요.",
                   f"This command failed (see the error above; the network may be down):\n  {line}\n"
                   f"[course] Fix the cause, then run `{SETUP}` again.")


def has_nvidia_gpu() -> bool:
    return shutil.which("nvidia-smi") is not None or Path("/proc/driver/nvidia/gpus").exists()


# Reads torch/version.py without importing torch: right after `pip install --no-deps` its dependencies are missing.
TORCH_BUILD = """
import ast, importlib.util, os
spec = importlib.util.find_spec("torch")
with open(os.path.join(spec.submodule_search_locations[0], "version.py"), encoding="utf-8") as file:
    tree = ast.parse(file.read())
found = {}
for node in tree.body:
    target = node.targets[0] if isinstance(node, ast.Assign) else getattr(node, "target", None)
    if isinstance(target, ast.Name) and target.id in ("__version__", "cuda") and node.value is not None:
        found[target.id] = ast.literal_eval(node.value)
print(found["__version__"], found.get("cuda"))
"""


def torch_build() -> tuple[str, str | None] | None:
    """(version, CUDA version or None) of the PyTorch installed in .venv; None if there is none."""
    out = probe(PYTHON, "-c", TORCH_BUILD)
    if not out or len(out.split()) != 2:
        return None
    version, cuda = out.split()
    return version, None if cuda == "None" else cuda


def install_torch(tool: Installer) -> str:
    """PyTorch for this machine, installed by ``tool``, returning its version: never a CUDA build where no NVIDIA
    GPU is present.

    On Linux without an NVIDIA GPU only two sources are tried, a wheel provided locally
    (pip's find-links) and PyTorch's CPU index, and what they installed is verified to be
    a CPU build. PyPI's ``torch`` on Linux is the multi-GB CUDA build, so it is never asked.
    """
    build = torch_build()
    cpu_only = sys.platform.startswith("linux") and not has_nvidia_gpu()
    if build and not (cpu_only and build[1]):
        return build[0]
    if not cpu_only:
        must(*tool.install(TORCH), env=tool.env)  # CUDA machines and macOS: PyPI's default build is the right one
        build = torch_build()
        if build is None:
            raise stop("PyTorch를 설치했지만 .venv 에서 찾을 수 없습니다. 위의 오류를 보세요.",
                       "PyTorch was installed but cannot be found in .venv; see the error above.")
        return build[0]
    if build:
        say(f"NVIDIA GPU가 없는데 CUDA용 PyTorch {build[0]}(CUDA {build[1]})가 설치되어 있어 CPU용으로 바꿉니다.",
            f"No NVIDIA GPU, but the CUDA build of PyTorch {build[0]} (CUDA {build[1]}) is installed: "
            "replacing it with the CPU build.")
        uninstall_torch()
    say("NVIDIA GPU가 없어 CPU용 PyTorch를 설치합니다.", "No NVIDIA GPU found: installing the CPU build of PyTorch.")
    # --no-deps: torch's own dependencies come with the course install, which keeps this torch.
    for source in (("--no-index",), ("--index-url", CPU_INDEX)):
        if run(*tool.install("--no-deps", *source, TORCH), check=False, env=tool.env) == 0:
            build = torch_build()
            if build and build[1] is None:
                return build[0]
            if build:  # a CUDA wheel among the local ones: take it out again
                uninstall_torch()
    line = command_line(PYTHON, "-m", "pip", "install", "torch", "--index-url", CPU_INDEX)
    raise stop("CPU용 PyTorch를 받을 수 없어 멈춥니다. 이 컴퓨터에는 NVIDIA GPU가 없으니 수 GB짜리 CUDA 빌드는 "
               "설치하지 않습니다.\n[course] 인터넷 연결을 확인하고 다음 명령으로 CPU용 PyTorch를 .venv에 설치한 뒤 "
               f"`{SETUP}` 을 다시 실행하세요:\n  {line}",
               "Could not reach the CPU build of PyTorch, so the set-up stops here. This machine has no NVIDIA GPU, "
               "so the multi-GB CUDA build is not installed.\n[course] Check the network, install the CPU build into "
               f".venv with this command, then run `{SETUP}` again:\n  {line}")


def uninstall_torch() -> None:
    run(PYTHON, "-m", "pip", "uninstall", "--disable-pip-version-check", "-y", "-q", "torch", check=False)


def fingerprint() -> str:
    return hashlib.sha256((ROOT / "pyproject.toml").read_bytes()).hexdigest()


def script_python(script: Path) -> Path | None:
    """The Python that an installed script (bin/pip) runs, from its ``#!`` line; None if unknown."""
    try:
        lines = script.read_bytes()[:2048].decode("utf-8", "replace").splitlines()
        if not lines or not lines[0].startswith("#!"):
            return None
        if lines[0].strip() == "#!/bin/sh" and len(lines) > 1 and lines[1].startswith("'''exec' "):
            target = shlex.split(lines[1][len("'''exec' "):])[0]  # pip's form for long or spaced paths
        else:
            target = shlex.split(lines[0][2:])[0]
    except (OSError, ValueError, IndexError):
        return None
    return Path(target) if Path(target).name.startswith("python") else None


def copied_from() -> Path | None:
    """The virtual environment that .venv was copied from (its scripts still run that one's Python)."""
    if os.name == "nt":
        return None
    for name in ("pip", "pip3"):
        target = script_python(BIN / name)
        if target is not None:
            return None if target.parent.resolve() == BIN.resolve() else target.parent.parent
    return None


def installed_root() -> Path | None:
    """The course folder whose ``autograder`` the venv's Python imports (its editable install points there)."""
    out = probe(PYTHON, "-I", "-c", "import os, autograder; print(os.path.abspath(autograder.__file__))")
    return Path(out).resolve().parent.parent if out else None


def check_install() -> None:
    """.venv must run this folder's course code: repair an editable install that points at another folder."""
    where = installed_root()
    if where == ROOT:
        return
    if where is None:
        say(f"{VENV} 에서 과정 패키지를 불러올 수 없어 다시 설치합니다.",
            f"{VENV} cannot import the course package: installing it again.")
    else:
        say(f"{VENV} 의 과정 패키지가 다른 폴더({where})를 가리킵니다(복사한 폴더일 수 있습니다). 이 폴더로 다시 설치합니다.",
            f"The course package in {VENV} points at another folder ({where}; a copied folder?): "
            "installing it from this folder again.")
    args = pip("-q", "--no-deps", "-e", ROOT)
    if run(*args, check=False) == 0 and installed_root() == ROOT:
        return
    line = command_line(*args)
    raise stop(f"{VENV} 의 과정 패키지를 이 폴더({ROOT})로 고치지 못했습니다. 다음을 실행하세요:\n  {line}\n"
               f"[course] 그래도 안 되면 .venv 폴더를 지우고 `{SETUP}` 을 실행하세요.",
               f"Could not point the course package in {VENV} at this folder ({ROOT}). Run:\n  {line}\n"
               f"[course] If that fails too, delete the .venv folder and run `{SETUP}`.")


def ensure_venv() -> None:
    """Create and fill ``.venv`` unless it is already up to date with pyproject.toml; it must belong to this folder."""
    other = copied_from() if PYTHON.exists() else None
    if other is not None:
        raise stop(f"{VENV} 는 다른 곳({other})에서 복사된 가상 환경이라 그 안의 프로그램이 {other} 의 Python을 실행합니다.\n"
                   f"[course] .venv 폴더를 지우고(`rm -rf .venv`) `{SETUP}` 을 다시 실행하세요.",
                   f"{VENV} was copied from another place ({other}): its programs still run the Python of {other}.\n"
                   f"[course] Delete the .venv folder (`rm -rf .venv`) and run `{SETUP}` again.")
    if not (MARKER.exists() and MARKER.read_text().strip() == fingerprint()):
        install()
    check_install()


def install() -> None:
    if sys.version_info < (3, 10):
        raise stop("Python 3.10 이상이 필요합니다.", "Python >= 3.10 is required.")
    if not PYTHON.exists():
        say("가상 환경 .venv 를 만듭니다 (처음 한 번만).", "Creating the virtual environment .venv (first time only).")
        if run(sys.executable, "-m", "venv", VENV, check=False) != 0:
            raise stop("venv를 만들 수 없습니다. Debian/Ubuntu라면 `sudo apt install python3-venv` 후 다시 실행하세요.",
                       "Could not create a venv. On Debian/Ubuntu run `sudo apt install python3-venv`, then retry.")
    tool = installer()
    say(*tool.why)
    if tool.name == "pip":
        must(*pip("-q", "--upgrade", "pip>=23"))
    version = install_torch(tool)
    say("과정 패키지와 의존성을 설치합니다(모듈 07의 Numba와 Triton은 그 모듈을 처음 쓸 때 설치합니다).",
        "Installing the course package and its dependencies (module 07's Numba and Triton install when that "
        "module is first used).")
    # The PyTorch just installed stays: the course's `torch>=2.4` must not fetch another build from PyPI.
    constraint = VENV / "course-constraints.txt"
    constraint.write_text(f"torch=={version}\n")
    must(*tool.install("-q", "-e", f"{ROOT}[{EXTRA}]", "-c", constraint), env=tool.env)
    MARKER.write_text(fingerprint())


def start_page() -> Path:
    """The start page in the learner's language (:func:`autograder.language.page`)."""
    return layout.start().lesson(language.page())


def start(args: list[str]) -> int:
    """JupyterLab on the start page: ``--help`` and ``--lang`` are the course's, other options JupyterLab's."""
    check_arguments(["start", *args], known=True)
    keep_language(language.option(args))
    ensure_venv()
    page, lang = start_page(), language.page()
    other = layout.start().lesson("en" if lang == "ko" else "ko")
    say(f"시작 페이지: {page} (다른 언어: {other}; 페이지 맨 위의 링크로 바꿀 수 있습니다. "
        "`--lang ko` 또는 `--lang en`으로 고르면 다음에도 그 언어로 엽니다)",
        f"Start page: {page} (other language: {other}; switch with the links at its top, or choose with "
        "`--lang ko` or `--lang en`, which is remembered)")
    cmd, env = lab_command(lang, language.split(args)[1], venv_env())
    return subprocess.call(cmd, cwd=ROOT, env=env)


def lab_command(lang: str, options: list[str], env: dict[str, str], root: Path = ROOT,
                jupyter: Path = BIN / "jupyter") -> tuple[list[str], dict[str, str]]:
    """The command line and environment of the course's JupyterLab over the course at ``root``: the interface in
    ``lang``, without the news popup (``autograder/data/jupyter/lab/<lang>``), the addresses it prints and the browser
    it opens showing the start page in ``lang`` (LabApp.default_url: :mod:`autograder.start_page`, the full interface
    on a wide screen, the single-document mode on a phone), the course's Jupyter settings (``autograder/data/jupyter``: lessons
    are saved without outputs, lesson_save.py); ``options`` are JupyterLab's, ``env`` the environment it extends."""
    page, config = layout.start(root).lesson(lang), root / JUPYTER_CONFIG.relative_to(ROOT)
    cmd = [str(jupyter), "lab", f"--ServerApp.root_dir={root}", f"--LabApp.app_settings_dir={config / 'lab' / lang}",
           f"--LabApp.default_url={start_address(page.as_posix())}", *options]
    if hasattr(os, "geteuid") and os.geteuid() == 0 and "--allow-root" not in options:
        cmd.append("--allow-root")  # JupyterLab refuses root without it (containers, cloud VMs)
    env = dict(env, JUPYTER_CONFIG_PATH=os.pathsep.join(p for p in (str(config), env.get("JUPYTER_CONFIG_PATH")) if p))
    return cmd, env


def keep_language(lang: str | None) -> None:
    """A language chosen with ``--lang`` is remembered for next time (:func:`autograder.language.keep`)."""
    line = language.keep(lang) if lang else None
    if line:
        print("[course] " + line.replace("\n", "\n[course] "), flush=True)


def test(args: list[str]) -> int:
    ensure_venv()
    if (ROOT / "tests").is_dir():  # tests/test_site.py runs every lesson in both languages (the website's build)
        tests = ["tests"]
    else:  # a learner edition: its lessons only
        tests = ["--nbval-lax", *(str(p.relative_to(ROOT)) for p in layout.lessons("en", ROOT))]
    cmd = [str(PYTHON), "-m", "pytest", *tests, *side_by_side(args), *args]
    return subprocess.call(cmd, cwd=ROOT, env=venv_env())


def side_by_side(args: list[str]) -> list[str]:
    """pytest-xdist's options for the test command: one test file (or lesson) per worker process, a worker per two
    cores (at most 4), so that a test waiting on a server or a kernel does not hold the others up; none on fewer than
    four cores (the grading tests' kernels need the cores to themselves) or where the command line chooses (``-n``,
    ``-p no:xdist``)."""
    workers = min(4, (os.cpu_count() or 1) // 2)
    if workers < 2 or any(a.startswith(("-n", "--numprocesses", "--dist")) or a == "no:xdist" for a in args):
        return []
    return ["-n", str(workers), "--dist", "loadfile"]


def venv_env() -> dict:
    """Environment for programs run from the venv: its bin/ first (nbgrader runs `alembic` by name)."""
    env = dict(os.environ, VIRTUAL_ENV=str(VENV))
    env.pop(HOP, None)
    env["PATH"] = str(BIN) + os.pathsep + env.get("PATH", "")
    return env


class _Placeholders:
    """Import hook for parsing the command line before anything is installed.

    The parser's modules import third-party packages (yaml, traitlets) at the top;
    ones that are missing become empty modules, enough to define the parser.
    Standard-library and course modules are never replaced.
    """

    def __init__(self) -> None:
        self.names: list[str] = []

    def find_spec(self, name: str, path=None, target=None) -> ModuleSpec | None:
        top = name.partition(".")[0]
        if top == __package__ or top in getattr(sys, "stdlib_module_names", ()) or not _imported_by_course():
            return None
        self.names.append(name)
        return ModuleSpec(name, self, is_package=True)

    def create_module(self, spec: ModuleSpec) -> ModuleType:
        return _Placeholder(spec.name)

    def exec_module(self, module: ModuleType) -> None:
        pass


def _imported_by_course() -> bool:
    """Whether the import being looked up is written in a course module (not, say, the standard library)."""
    frame = sys._getframe(2)
    while frame is not None and frame.f_globals.get("__name__", "").startswith(("importlib", "_frozen_importlib")):
        frame = frame.f_back
    return frame is not None and frame.f_globals.get("__name__", "").startswith(f"{__package__}.")


class _Placeholder(ModuleType):
    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        return type(name, (), {"__init__": lambda self, *args, **kwargs: None})


def check_arguments(argv: list[str], known: bool = False) -> None:
    """Answer ``--help`` and usage errors here, with no .venv and nothing installed.

    Returns when ``argv`` is a valid command line (``known``: arguments the parser does not know are let
    through, for JupyterLab), or when the parser cannot be built with this Python (the course's own
    Python in .venv will then answer).
    """
    hook, before = _Placeholders(), set(sys.modules)
    sys.meta_path.append(hook)
    try:
        from .cli import build_parser
        parser = build_parser()
    except Exception:
        return
    finally:
        sys.meta_path.remove(hook)
        if hook.names:  # forget the placeholders and what was built on them
            for name in set(sys.modules) - before:
                del sys.modules[name]
    try:
        parser.parse_known_args(argv) if known else parser.parse_args(argv)
    except SystemExit as exc:
        if exc.code not in (0, None):
            say("명령을 알아듣지 못했습니다. 명령 목록: `python3 -m autograder --help`",
                "Command not understood. For the list of commands: `python3 -m autograder --help`")
        raise


def main(argv: list[str]) -> int:
    lang, without = language.split(argv)
    language.choose(lang)
    command = without[0] if without else "start"
    if command == "start":  # a --lang before it is start's too
        args = list(argv)
        if without:
            args.remove("start")
        return start(args)
    if command in ("test", "setup"):
        keep_language(lang)
        ensure_venv()
        return test(without[1:]) if command == "test" else 0
    if Path(sys.prefix).resolve() != VENV.resolve():
        came_from = os.environ.get(HOP)
        if came_from:  # handed over once already: another hand-over could go on without end
            fix = command_line(sys.executable, "-m", "pip", "install", "--no-deps", "-e", came_from)
            raise stop(f"다시 실행하지 않고 멈춥니다: {came_from} 의 .venv 로 옮겨 왔는데, 이 Python({sys.executable})은 "
                       f"다른 폴더({ROOT})의 과정 코드를 불러옵니다. 두 과정 폴더의 .venv가 서로를 가리키고 있습니다"
                       "(복사한 폴더의 편집 설치가 원래 폴더를 가리키는 경우).\n"
                       f"[course] 다음을 실행해 고치세요(안 되면 {came_from} 의 .venv 폴더를 지우고 `{SETUP}`):\n  {fix}",
                       f"Stopping instead of restarting again: after moving to the .venv of {came_from}, this Python "
                       f"({sys.executable}) loads the course code of another folder ({ROOT}). The .venv folders of two "
                       "course copies point at each other (a copied folder whose editable install still points at the "
                       f"original).\n[course] Fix it with this command (if that fails, delete the .venv folder in "
                       f"{came_from} and run `{SETUP}`):\n  {fix}")
        check_arguments(argv)
        ensure_venv()
        env = venv_env()
        env[HOP] = str(ROOT)
        return subprocess.call([str(PYTHON), "-m", "autograder", *argv], cwd=os.getcwd(), env=env)
    os.environ.pop(HOP, None)  # arrived: what this command starts may hand over again
    from .cli import main as cli_main
    return cli_main(argv)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
