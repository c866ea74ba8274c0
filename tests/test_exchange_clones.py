"""Each clone's Assignments list is its own (issue 29, item 5): two clones of the course for one user keep their own
record of submissions (nbgrader's ``Exchange.cache``, in the clone's git-ignored ``.nbgrader/``) and their own
exchange (``.exchange/``), so the list of one does not show what was submitted from the other. Checked with what the
Assignments tab calls (nbgrader's ``AssignmentList``) and with ``nbgrader list --cached``. A class server, which sets
COURSE_EXCHANGE, keeps nbgrader's record per user, as before."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from nbgrader.server_extensions.assignment_list.handlers import AssignmentList

from fixtures.servers import fresh_copy

COURSE, ASSIGNMENT = "ai-hardware", "01_devices"


@pytest.fixture(scope="module")
def clones(tmp_path_factory):
    """Two fresh clones of the course, made once for this file's tests."""
    tmp = tmp_path_factory.mktemp("clones")
    return fresh_copy(tmp / "one"), fresh_copy(tmp / "two")


@pytest.fixture
def learner(tmp_path, monkeypatch):
    """A learner's environment: no class server's variables, and a Jupyter data folder of the user's own (where
    nbgrader keeps its record of submissions by default, shared by every clone)."""
    for key in list(os.environ):
        if key.startswith(("COURSE_", "JUPYTER")):
            monkeypatch.delenv(key)
    monkeypatch.setenv("JUPYTER_DATA_DIR", str(tmp_path / "jupyter-data"))
    monkeypatch.setenv("JUPYTER_CONFIG_DIR", str(tmp_path / "jupyter-config"))
    return tmp_path / "jupyter-data"


def _tab(root: Path, monkeypatch) -> AssignmentList:
    """The Assignments tab's lister of a JupyterLab started in ``root`` (its working folder, as `autograder start`)."""
    monkeypatch.chdir(root)
    tab = AssignmentList()
    tab.root_dir = str(root)
    return tab


def _release(root: Path) -> None:
    """The instructor's release into the clone's own exchange (what ``instructor release`` leaves there)."""
    course = root / ".exchange" / COURSE
    (course / "inbound").mkdir(parents=True, exist_ok=True)
    shutil.copytree(root / "exercises" / ASSIGNMENT, course / "outbound" / ASSIGNMENT, dirs_exist_ok=True)


def _submitted(result: dict) -> set[str]:
    assert result["success"], result["value"]
    return {a["assignment_id"] for a in result["value"]}


def test_a_submission_from_one_clone_is_not_in_the_other_clones_list(clones, learner, monkeypatch):
    one, two = clones
    _release(one)
    assert _tab(one, monkeypatch).fetch_assignment(COURSE, ASSIGNMENT)["success"]
    done = _tab(one, monkeypatch).submit_assignment(COURSE, ASSIGNMENT)
    assert done["success"], done["value"]
    assert _submitted(_tab(one, monkeypatch).list_submitted_assignments(COURSE)) == {ASSIGNMENT}
    assert _submitted(_tab(two, monkeypatch).list_submitted_assignments(COURSE)) == set()
    assert list((one / ".nbgrader" / "exchange-cache" / COURSE).glob(f"*+{ASSIGNMENT}+*"))
    assert not learner.exists(), "nothing in the user's Jupyter data folder"
    listed = subprocess.run([str(Path(sys.executable).parent / "nbgrader"), "list", "--cached"], cwd=two,
                            capture_output=True, text=True, env=os.environ)
    assert listed.returncode == 0 and ASSIGNMENT not in listed.stdout + listed.stderr, listed.stdout + listed.stderr
    listed = subprocess.run([str(Path(sys.executable).parent / "nbgrader"), "list", "--cached"], cwd=one,
                            capture_output=True, text=True, env=os.environ)
    assert ASSIGNMENT in listed.stdout + listed.stderr, listed.stdout + listed.stderr
    ignored = subprocess.run(["git", "check-ignore", ".nbgrader/exchange-cache", ".exchange"], cwd=one)
    assert ignored.returncode == 0, "the record and the exchange are not the course's files"


def test_a_class_server_keeps_nbgraders_record_per_user(clones, learner, monkeypatch):
    """deploy/jupyterhub sets COURSE_EXCHANGE: the record stays where nbgrader keeps it, in the user's data folder."""
    monkeypatch.setenv("COURSE_EXCHANGE", str(learner.parent / "exchange"))
    tab = _tab(clones[1], monkeypatch)
    with tab.get_assignment_dir_config() as config:
        assert "cache" not in config.Exchange and config.Exchange.root == str(learner.parent / "exchange")
