"""environment.yml installs the same thing as pyproject.toml; CI runs the README's test command."""
import re
try:
    import tomllib
except ImportError:  # Python 3.10
    import tomli as tomllib
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
ENV = yaml.safe_load((ROOT / "environment.yml").read_text())


def test_environment_yml_installs_the_package_with_pip():
    pip_sections = [d["pip"] for d in ENV["dependencies"] if isinstance(d, dict) and "pip" in d]
    assert pip_sections == [['-e .[lab]']], "environment.yml must install the package itself with its lab extra"
    assert any(str(d).startswith("pip") for d in ENV["dependencies"] if isinstance(d, str))


def test_environment_yml_python_matches_requires_python():
    python = [d for d in ENV["dependencies"] if isinstance(d, str) and d.startswith("python")]
    assert python == ["python" + PYPROJECT["project"]["requires-python"]]


def test_conda_section_repeats_no_dependency():
    """Dependencies live in pyproject.toml only, so the two files cannot disagree."""
    names = {re.split(r"[<>=!~;\[ ]", d)[0].lower() for d in PYPROJECT["project"]["dependencies"]}
    conda = {re.split(r"[<>=!~ ]", d)[0].lower() for d in ENV["dependencies"] if isinstance(d, str)}
    assert not (names & conda), f"repeated in environment.yml: {names & conda}"


def names_of(requirements: list[str]) -> set[str]:
    return {re.split(r"[<>=!~;\[ ]", d)[0].lower() for d in requirements}


def test_required_dependencies_are_declared():
    """A kernel's dependencies are the base (a notebook opened alone installs them); a clone's JupyterLab, grading
    and tests are the extra `lab`, which the set-up installs (bootstrap.EXTRA)."""
    from autograder import bootstrap
    kernel = names_of(PYPROJECT["project"]["dependencies"])
    lab = names_of(PYPROJECT["project"]["optional-dependencies"][bootstrap.EXTRA])
    for name in ["ipywidgets", "torch", "numpy", "matplotlib", "nvidia-ml-py", "psutil", "tqdm", "mlx", "pyyaml",
                 "nbformat", "filelock", "py-cpuinfo", "packaging"]:
        assert name in kernel, name
    for name in ["jupyterlab", "jupyterlab-language-pack-ko-kr", "nbgrader", "nbclient", "nbconvert", "bleach", "nbval",
                 "nbgitpuller", "pytest", "pytest-xdist", "distributed", "psycopg"]:
        assert name in lab and name not in kernel, name
    assert PYPROJECT["project"]["name"] != "autograder"


def test_mlx_markers_pick_the_right_wheel_per_platform():
    mlx = [d for d in PYPROJECT["project"]["dependencies"] if d.startswith("mlx")]
    assert any(d.startswith("mlx[cpu]") and "linux" in d for d in mlx)
    assert any(d.startswith("mlx;") and "darwin" in d and "arm64" in d for d in mlx)


def test_ci_runs_the_readme_test_command():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    command = "python3 -m autograder test"
    assert command in readme and command in (ROOT / ".ci" / "run").read_text()


def test_readme_and_environment_yml_name_the_cpu_index_the_setup_uses():
    """Where the set-up cannot reach the CPU build, the learner runs the command the README shows."""
    from autograder import bootstrap
    command = f"pip install torch --index-url {bootstrap.CPU_INDEX}"
    assert command in (ROOT / "README.md").read_text(encoding="utf-8")
    assert command in (ROOT / "environment.yml").read_text(encoding="utf-8")
