"""The learner edition: the course without the instructor's part, ready to push as a class's repository.

It holds the lessons, the student versions of the exercises, the course package
(``autograder``, whose tasks check visible cases against ``expected.json``) and
the setup files, with a README for students. It leaves out ``solutions/``
(solutions and hidden tests), ``course_answers/`` (reference implementations and
hidden cases), the tests, benchmarks, deployment files and instructor docs.
"""
from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from ..i18n import msg
from .course import REPO, GradingError

FOLDERS = ("lessons", "exercises", "autograder")
FILES = ("environment.yml", "LICENSE", "nbgrader_config.py", ".gitignore")
SKIP = shutil.ignore_patterns("__pycache__", "*.pyc", ".ipynb_checkpoints", "*.egg-info", "report_card.html")
README = Path(__file__).resolve().parent.parent / "data" / "edition" / "README.md"
ANSWERS_LINE = 'include = ["autograder*", "course_answers*"]'


def write(out: Path, source: Path = REPO) -> Path:
    """Write the learner edition of the course at ``source`` into the new or empty folder ``out``."""
    out = Path(out).resolve()
    if out.exists() and any(out.iterdir()):
        raise GradingError(msg("grading.edition_not_empty", folder=out).text())
    if out == source or source in out.parents:
        raise GradingError(msg("grading.edition_inside", folder=out, source=source).text())
    missing = [name for name in FOLDERS + ("pyproject.toml",) if not (source / name).exists()]
    if missing:
        raise GradingError(msg("grading.edition_source", source=source, missing=", ".join(missing)).text())
    out.mkdir(parents=True, exist_ok=True)
    for name in FOLDERS:
        shutil.copytree(source / name, out / name, ignore=SKIP)
    for name in FILES:
        if (source / name).exists():
            shutil.copy2(source / name, out / name)
    (out / "pyproject.toml").write_text(learner_pyproject((source / "pyproject.toml").read_text(encoding="utf-8")),
                                        encoding="utf-8")
    shutil.copy2(README, out / "README.md")
    return out


def wheel(out: Path, source: Path = REPO) -> Path:
    """Build ``ai_hardware_course-<version>-py3-none-any.whl`` into ``out`` from the learner edition of ``source``
    (:func:`write`: ``autograder`` with its data, never ``course_answers``): the package a notebook opened alone
    installs (``autograder.standalone``); its path."""
    out = Path(out).resolve()
    with tempfile.TemporaryDirectory() as tmp:
        edition = write(Path(tmp) / "edition", source)
        isolation = [] if importlib.util.find_spec("setuptools") is None else ["--no-build-isolation"]
        done = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--disable-pip-version-check",
                               *isolation, "-w", str(tmp), str(edition)], capture_output=True, text=True)
        built = sorted(Path(tmp).glob("ai_hardware_course-*.whl"))
        if done.returncode or not built:
            raise GradingError(msg("grading.wheel_failed", code=done.returncode,
                                   output=(done.stdout + done.stderr)[-3000:]).text())
        out.mkdir(parents=True, exist_ok=True)
        return Path(shutil.copy2(built[0], out / built[0].name))


def learner_pyproject(text: str) -> str:
    """The project file without the instructor's package."""
    if ANSWERS_LINE not in text:
        raise GradingError(msg("grading.edition_source", source="pyproject.toml", missing=ANSWERS_LINE).text())
    return text.replace(ANSWERS_LINE, 'include = ["autograder*"]')
