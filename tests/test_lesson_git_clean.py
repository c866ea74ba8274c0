"""A lesson opened and run changes nothing git compares: git sees lessons through the course's clean filter, so
``git diff`` shows only the learner's own edits and a course update merges without conflicts from outputs."""
import json
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from autograder import bootstrap, notebook_clean

REPO = Path(__file__).resolve().parent.parent
LESSONS = sorted(REPO.glob("lessons/*/lesson.*.ipynb"))
pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


@pytest.mark.parametrize("path", LESSONS, ids=lambda p: str(p.relative_to(REPO)))
def test_committed_lessons_are_in_the_filters_form(path):
    text = path.read_text(encoding="utf-8")
    assert notebook_clean.dumps(notebook_clean.clean(json.loads(text))) == text, \
        f"rewrite it: python -m autograder.notebook_clean < {path.relative_to(REPO)} > tmp && mv tmp ..."


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, check=True).stdout


def test_a_run_lesson_leaves_git_status_clean(tmp_path, monkeypatch):
    root = tmp_path / "course"
    lesson = root / "lessons" / "00_start_here" / "lesson.en.ipynb"
    lesson.parent.mkdir(parents=True)
    shutil.copy(REPO / "lessons" / "00_start_here" / "lesson.en.ipynb", lesson)
    shutil.copy(REPO / ".gitattributes", root / ".gitattributes")
    git(root, "init", "-q")
    git(root, "-c", "user.name=t", "-c", "user.email=t@t", "add", "-A")
    git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "course")
    monkeypatch.setattr(bootstrap, "ROOT", root)
    monkeypatch.setattr(bootstrap, "PYTHON", Path(sys.executable))
    bootstrap.keep_lessons_clean()
    assert "notebook_clean" in git(root, "config", "--local", "--get", bootstrap.NOTEBOOK_FILTER)

    nb = nbformat.read(lesson, as_version=4)  # run it as a learner does, and save it as JupyterLab would
    NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(lesson.parent)}}).execute()
    nb.metadata["kernelspec"]["display_name"] = "Python 3 (ipykernel)"
    nb.metadata["language_info"] = {"name": "python", "version": "3.11.2", "mimetype": "text/x-python"}
    nb.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {"state": {}}}
    for cell in nb.cells:
        cell.metadata["execution"] = {"iopub.execute_input": "2026-11-23T10:00:00Z"}
    nbformat.write(nb, lesson)
    assert any(c.get("outputs") for c in nbformat.read(lesson, as_version=4).cells)
    assert git(root, "diff", "--name-only") == ""  # outputs and run metadata are not changes

    upstream = tmp_path / "upstream"  # the course changes the lesson meanwhile
    subprocess.run(["git", "clone", "-q", str(root), str(upstream)], check=True)
    git(upstream, "config", "--local", bootstrap.NOTEBOOK_FILTER, git(root, "config", "--get", bootstrap.NOTEBOOK_FILTER).strip())
    update = json.loads((upstream / lesson.relative_to(root)).read_text(encoding="utf-8"))
    update["cells"][0]["source"].append("\nA new sentence from the course.")
    (upstream / lesson.relative_to(root)).write_text(notebook_clean.dumps(update), encoding="utf-8")
    git(upstream, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "course update")
    git(root, "add", "-u")  # what nbgitpuller's commit does first: the filter stores nothing new
    assert git(root, "status", "--porcelain") == ""
    git(root, "-c", "user.name=t", "-c", "user.email=t@t", "pull", "-q", str(upstream), "HEAD")
    assert "A new sentence from the course." in lesson.read_text(encoding="utf-8")

    nb = nbformat.read(lesson, as_version=4)
    nb.cells[1].source += "\nprint('my note')"  # a learner's own edit is still a change
    nbformat.write(nb, lesson)
    assert git(root, "diff", "--name-only").strip() == "lessons/00_start_here/lesson.en.ipynb"
