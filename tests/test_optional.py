"""Optional parts (module 07's Numba and Triton) are installed the first time they are needed, with the set-up's
installer, one package at a time under a progress bar, after a line that says what and why; the grader installs
nothing; a failed install says what to run."""
import importlib.metadata

import pytest
from packaging.requirements import Requirement

from autograder import bootstrap, i18n, optional
from autograder.i18n import Message

DECLARED = ["jupyterlab>=4.2,<5", "numba>=0.60; extra == 'kernels'", "numba-cuda>=0.20; extra == \"kernels\"",
            "triton>=3.0; sys_platform == 'nowhere' and extra == 'kernels'", "jupyterhub>=5.2; extra == 'hub'"]
WHY = Message("커널을 돌리려면", "kernels need them")


@pytest.fixture
def course(monkeypatch):
    """The course's metadata declares DECLARED; `installed` is what this Python has (name -> version)."""
    installed = {"jupyterlab": "4.4.0"}
    monkeypatch.setattr(optional.importlib.metadata, "requires", lambda dist: DECLARED)

    def version(name):
        if name not in installed:
            raise importlib.metadata.PackageNotFoundError(name)
        return installed[name]
    monkeypatch.setattr(optional.importlib.metadata, "version", version)
    monkeypatch.delenv(optional.NO_INSTALL, raising=False)
    monkeypatch.setenv("COURSE_NO_PROGRESS", "1")
    monkeypatch.setattr(i18n, "_chosen", "en")
    monkeypatch.setattr(optional, "_lock", lambda: __import__("contextlib").nullcontext())
    monkeypatch.setattr(bootstrap, "installer", lambda python, fetch_uv: bootstrap.Installer(
        "uv", ("/opt/uv", "pip", "install", "--python", str(python)), ("", ""), {}))
    return installed


def test_an_extras_requirements_are_the_ones_for_this_platform(course):
    assert [str(r) for r in optional.requirements("kernels")] == ["numba>=0.60", "numba-cuda>=0.20"]
    assert [r.name for r in optional.requirements("hub")] == ["jupyterhub"]


def test_missing_counts_absent_and_too_old_packages(course):
    course.update({"numba": "0.59.1", "numba-cuda": "0.30.4"})
    assert [r.name for r in optional.missing(optional.requirements("kernels"))] == ["numba"]
    course["numba"] = "0.68.1"
    assert optional.missing(optional.requirements("kernels")) == []


def test_first_use_installs_each_missing_part_saying_what_and_why(course, monkeypatch, capsys):
    installs = []

    def install_one(tool, requirement):
        installs.append((tool.name, requirement))
        course[Requirement(requirement).name] = "1.0"
        return None
    monkeypatch.setattr(optional, "install_one", install_one)
    assert optional.ensure("kernels", WHY) == {}
    assert installs == [("uv", "numba>=0.60"), ("uv", "numba-cuda>=0.20")]
    out = capsys.readouterr().out
    assert "installing numba>=0.60, numba-cuda>=0.20 with uv" in out and "kernels need them" in out
    installs.clear()
    assert optional.ensure("kernels", WHY) == {} and installs == []  # once only


def test_a_failed_install_names_the_package_and_the_command(course, monkeypatch):
    monkeypatch.setattr(optional, "install_one", lambda tool, requirement: "No solution found")
    failed = optional.ensure("kernels", WHY)
    assert set(failed) == {"numba", "numba-cuda"}
    assert "No solution found" in failed["numba"].en and "/opt/uv pip install --python" in failed["numba"].en
    assert "설치하지 못했습니다" in failed["numba"].ko


def test_the_grader_installs_nothing(course, monkeypatch):
    monkeypatch.setenv(optional.NO_INSTALL, "1")
    monkeypatch.setattr(optional, "install_one", lambda *a: pytest.fail("the grader's kernel installs nothing"))
    failed = optional.ensure("kernels", WHY)
    assert set(failed) == {"numba", "numba-cuda"} and "grader" in failed["numba"].en and "채점" in failed["numba"].ko


def test_the_grader_sets_no_install():
    from pathlib import Path
    source = Path(optional.__file__).parent.joinpath("grading", "preprocessors.py").read_text(encoding="utf-8")
    assert f'"{optional.NO_INSTALL}": "1"' in source


def test_the_kernels_extra_is_module_07s_and_not_the_set_ups():
    """What the set-up installs leaves out the heavy parts; module 07 asks for them by the extra's name."""
    try:
        import tomllib
    except ImportError:  # Python 3.10
        import tomli as tomllib
    from pathlib import Path
    root = Path(optional.__file__).resolve().parent.parent
    project = tomllib.loads((root / "pyproject.toml").read_text())["project"]
    names = {Requirement(r).name for r in project["dependencies"]}
    assert not names & {"numba", "numba-cuda", "triton"}
    assert {Requirement(r).name for r in project["optional-dependencies"]["kernels"]} == {"numba", "numba-cuda", "triton"}
    device = (root / "autograder" / "modules" / "m07_kernels" / "device.py").read_text(encoding="utf-8")
    assert 'optional.ensure("kernels"' in device
