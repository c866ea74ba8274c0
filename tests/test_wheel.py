"""The wheel built from pyproject.toml is complete: every data file ships, and an installed
(not editable) copy grades one task of every module."""
import os
import shutil
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest

from autograder import standalone

REPO = Path(__file__).resolve().parent.parent
PACKAGE = REPO / "autograder"

# One task per module whose visible cases or scoring read a data file, with the reference that gets full marks.
GRADE = textwrap.dedent("""
    import sys
    from pathlib import Path
    import autograder
    import course_answers
    from course_answers import m01_devices as m01, m02_gpu_architecture as m02, m03_memory_hierarchy as m03
    from course_answers import m04_training_memory as m04, m05_networking as m05, m06_choosing_hardware as m06
    from autograder import modules, plotting
    from autograder.checks import check

    assert Path(autograder.__file__).is_relative_to(sys.argv[1]), autograder.__file__  # the wheel's copy
    assert Path(course_answers.__file__).is_relative_to(Path(sys.argv[1]).parent), course_answers.__file__
    assert plotting.FONT_FILE.is_file(), plotting.FONT_FILE
    reference = {
        "m01.memory": m01.finetune_plan,       # profiles.yaml
        "m02.decode": m02.decode,              # formats.yaml
        "m03.intensity": m03.arithmetic_intensity,
        "m04.breakdown": m04.memory_breakdown,  # the module's memory table
        "m05.superpod": m05.superpod,          # superpod.yaml
        "m06.smi_log": m06.summarize_smi_log,  # the visible nvidia-smi logs (data/gpu_log_*.csv)
    }
    for task_id, fn in reference.items():
        module_id = task_id.split(".")[0]
        assert modules.path(module_id).is_relative_to(sys.argv[1]), modules.path(module_id)
        for name, t in modules.tasks(module_id).items():
            assert t.visible(), f"{module_id}.{name}: no visible case"
        assert check(task_id, fn, points=1) is None, task_id
    print("graded", len(reference))
""")


def data_files() -> set[str]:
    """Files under autograder/data, autograder/fonts and every module folder, as paths inside the wheel."""
    found = set()
    for folder in ("data", "fonts", "modules"):
        for path in (PACKAGE / folder).rglob("*"):
            if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc":
                found.add(path.relative_to(REPO).as_posix())
    return found


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """A wheel built from a copy of the repository (the build writes build/ and *.egg-info next to its source)."""
    tmp = tmp_path_factory.mktemp("wheel")
    src = tmp / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        if (REPO / name).exists():
            shutil.copy(REPO / name, src)
    for package in ("autograder", "course_answers"):
        shutil.copytree(REPO / package, src / package, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "--no-index",
                           "--disable-pip-version-check", "-w", str(tmp / "dist"), str(src)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    [built] = (tmp / "dist").glob("ai_hardware_course-*.whl")
    yield built
    shutil.rmtree(tmp, ignore_errors=True)


def test_every_data_file_is_in_the_wheel(wheel):
    expected = data_files()
    assert "autograder/modules/m00_demo/expected.json" in expected and "autograder/fonts/NanumGothic.ttf" in expected
    names = set(zipfile.ZipFile(wheel).namelist())
    missing = sorted(expected - names)
    assert not missing, f"not in the wheel (pyproject.toml [tool.setuptools.package-data]): {missing}"
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]


def test_every_module_of_the_package_is_in_the_wheel(wheel):
    modules = {p.relative_to(REPO).as_posix() for package in ("autograder", "course_answers")
               for p in (REPO / package).rglob("*.py") if "__pycache__" not in p.parts}
    missing = sorted(modules - set(zipfile.ZipFile(wheel).namelist()))
    assert not missing, missing


def test_the_installed_wheel_grades_every_module(wheel, tmp_path):
    target = tmp_path / "site"
    done = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index",
                           "--disable-pip-version-check", "--target", str(target), str(wheel)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    # The wheel's copy comes first on sys.path; the editable install of this repository is only a fallback
    # finder at the end of sys.meta_path. The working directory is neither the repository nor the install.
    env = {k: v for k, v in os.environ.items() if not k.startswith(("COURSE_", "PYTHONPATH"))}
    env.update(PYTHONPATH=str(target), COURSE_LANG="en", COURSE_GRADING_SEED="1", MPLBACKEND="Agg",
               COURSE_CACHE_DIR=str(tmp_path / "cache"))
    done = subprocess.run([sys.executable, "-c", GRADE, str(target / "autograder")], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "graded 6" in done.stdout


# ------------------------------------------------------------------ the wheel without the answers (instructor wheel)
def test_the_instructor_wheel_holds_no_answers(tmp_path):
    """What a notebook opened alone installs (`python -m autograder instructor wheel`): the learner edition's package
    (`instructor edition`'s rules), every data file, and no file or text of the instructor's part."""
    from autograder.grading.edition import wheel
    from test_learner_edition import SHARED_LINES, edition_lines, secret_units

    built = wheel(tmp_path / "dist")
    assert built.name == f"ai_hardware_course-{standalone.version()}-py3-none-any.whl"
    names = set(zipfile.ZipFile(built).namelist())
    assert not [n for n in names if n.startswith("course_answers")], "course_answers in the wheel"
    assert not (data_files() - names), sorted(data_files() - names)[:5]
    unpacked = tmp_path / "unpacked"
    zipfile.ZipFile(built).extractall(unpacked)
    seen = edition_lines(unpacked)
    leaks = [where for where, lines in secret_units().items()
             if any(len(shared) >= min(SHARED_LINES, len(lines)) for shared in _by_file(lines, seen).values())]
    assert not leaks, leaks


def _by_file(lines: list[str], seen: dict[str, str]) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for line in lines:
        if line in seen:
            found.setdefault(seen[line], []).append(line)
    return found
