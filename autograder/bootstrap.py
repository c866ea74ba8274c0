"""First-run set-up with the standard library only: ``python3 -m autograder start|test``.

Creates ``.venv`` in the repository (once), installs the course into it with the
right PyTorch build for this machine, then opens JupyterLab on the start page
(``start``) or runs the whole test suite (``test``). Other subcommands are handed
to :mod:`autograder.cli` inside the virtual environment.
"""
from __future__ import annotations

import hashlib
import locale
import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENV = ROOT / ".venv"
MARKER = VENV / ".course-installed"
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")
PYTHON = BIN / ("python.exe" if os.name == "nt" else "python")
TORCH = "torch>=2.4"
CPU_INDEX = "https://download.pytorch.org/whl/cpu"


def say(ko: str, en: str) -> None:
    print(f"[course] {ko}\n[course] {en}", flush=True)


def run(*args: str | Path, check: bool = True) -> int:
    return subprocess.run([str(a) for a in args], cwd=ROOT, check=check).returncode


def has_nvidia_gpu() -> bool:
    return shutil.which("nvidia-smi") is not None or Path("/proc/driver/nvidia/gpus").exists()


def install_torch() -> None:
    """PyTorch for this machine: never the multi-GB CUDA build where no NVIDIA GPU is present."""
    pip = (PYTHON, "-m", "pip", "install", "--disable-pip-version-check")
    if run(PYTHON, "-c", "import torch", check=False) == 0:
        return
    if sys.platform.startswith("linux") and not has_nvidia_gpu():
        say("NVIDIA GPU가 없어 CPU용 PyTorch를 설치합니다.", "No NVIDIA GPU found: installing the CPU build of PyTorch.")
        # A wheel provided locally (pip's find-links) first, then PyTorch's CPU index.
        if run(*pip, "--no-index", "--no-deps", TORCH, check=False) == 0:
            return
        if run(*pip, TORCH, "--index-url", CPU_INDEX, "--extra-index-url", "https://pypi.org/simple", check=False) == 0:
            return
        raise SystemExit("[course] CPU용 PyTorch를 설치하지 못했습니다. https://pytorch.org/get-started/ 를 보고 "
                         "직접 설치한 뒤 다시 실행하세요.\n[course] Could not install the CPU build of PyTorch. "
                         "Install it by hand (see https://pytorch.org/get-started/) and run this again.")
    run(*pip, TORCH)  # CUDA machines and macOS: PyPI's default build is the right one


def fingerprint() -> str:
    return hashlib.sha256((ROOT / "pyproject.toml").read_bytes()).hexdigest()


def ensure_venv() -> None:
    """Create and fill ``.venv`` unless it is already up to date with pyproject.toml."""
    if MARKER.exists() and MARKER.read_text().strip() == fingerprint():
        return
    if sys.version_info < (3, 10):
        raise SystemExit("[course] Python 3.10 이상이 필요합니다 / Python >= 3.10 is required.")
    if not PYTHON.exists():
        say("가상 환경 .venv 를 만듭니다 (처음 한 번만).", "Creating the virtual environment .venv (first time only).")
        try:
            run(sys.executable, "-m", "venv", VENV)
        except subprocess.CalledProcessError:
            raise SystemExit("[course] venv를 만들 수 없습니다. Debian/Ubuntu라면 `sudo apt install python3-venv` 후 다시 실행하세요.\n"
                             "[course] Could not create a venv. On Debian/Ubuntu run `sudo apt install python3-venv`, then retry.")
    run(PYTHON, "-m", "pip", "install", "--disable-pip-version-check", "-q", "--upgrade", "pip>=23")
    install_torch()
    say("과정 패키지와 의존성을 설치합니다.", "Installing the course package and its dependencies.")
    run(PYTHON, "-m", "pip", "install", "--disable-pip-version-check", "-q", "-e", ROOT)
    MARKER.write_text(fingerprint())


def start_page() -> Path:
    lang = "ko" if (locale.getlocale()[0] or os.environ.get("LANG", "")).lower().startswith("ko") else "en"
    return Path("lessons") / "00_start_here" / f"lesson.{lang}.ipynb"


def start(args: list[str]) -> int:
    ensure_venv()
    cmd = [str(BIN / "jupyter"), "lab", f"--ServerApp.root_dir={ROOT}", str(ROOT / start_page()), *args]
    if hasattr(os, "geteuid") and os.geteuid() == 0 and "--allow-root" not in args:
        cmd.append("--allow-root")  # JupyterLab refuses root without it (containers, cloud VMs)
    return subprocess.call(cmd, cwd=ROOT, env=venv_env())


def test(args: list[str]) -> int:
    ensure_venv()
    lessons = sorted(str(p.relative_to(ROOT)) for p in ROOT.glob("lessons/*/lesson.en.ipynb"))
    cmd = [str(PYTHON), "-m", "pytest", "tests", "--nbval-lax", *lessons, *args]
    return subprocess.call(cmd, cwd=ROOT, env=venv_env())


def venv_env() -> dict:
    """Environment for programs run from the venv: its bin/ first (nbgrader runs `alembic` by name)."""
    env = dict(os.environ, VIRTUAL_ENV=str(VENV))
    env["PATH"] = str(BIN) + os.pathsep + env.get("PATH", "")
    return env


def main(argv: list[str]) -> int:
    command, rest = (argv[0], argv[1:]) if argv else ("start", [])
    if command == "start":
        return start(rest)
    if command == "test":
        return test(rest)
    if command == "setup":
        ensure_venv()
        return 0
    if Path(sys.prefix).resolve() != VENV.resolve():
        ensure_venv()
        return subprocess.call([str(PYTHON), "-m", "autograder", *argv], cwd=os.getcwd(), env=venv_env())
    from .cli import main as cli_main
    return cli_main(argv)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
