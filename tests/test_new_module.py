"""``instructor new-module``: in a copy of the course, a new module is its record plus its own files; the course
sees it (``layout.modules``, the registry), its layout holds (``layout.problems``, the import rules, its lesson's
heading), its exercise generates with fresh expected answers and its reference passes its check, and nothing
outside its files and its record changed."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from autograder import cli, layout
from autograder.grading import module_map
from autograder.grading.course import REPO
from test_layout import imported, module_of

NEW = "09_compilers"

# Run with the copy's package: its registry holds the new module (the copy's records).
IN_THE_COPY = f"""
from autograder import modules
from autograder.checks import check, expected
from autograder.grading.course import Course
from autograder.grading.generate import generate
from course_answers.m09_compilers import twice
import json, sys
root = sys.argv[1]
assert modules.folder("m09") == "m09_compilers", modules.folders()
generate(Course(__import__("pathlib").Path(root)), "{NEW}")
written = json.loads((modules.path("m09") / expected.FILE).read_text(encoding="utf-8"))
assert expected.same(written, expected.table("m09")), written
assert check("m09.first", twice, points=1, hidden=True) is None
"""


def _git(root: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=root, check=True,
                          capture_output=True, text=True).stdout


def _status(root: Path) -> set[str]:
    return {line[3:] for line in _git(root, "status", "--porcelain", "--untracked-files=all").splitlines()}


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    """A copy of this working tree (its tracked and unignored files) committed in a repository of its own."""
    root = tmp_path_factory.mktemp("course")
    listed = _git(REPO, "ls-files", "-z", "--cached", "--others", "--exclude-standard").split("\0")
    for name in filter(None, listed):
        if (REPO / name).is_file():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_bytes((REPO / name).read_bytes())
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "course")
    return root


@pytest.fixture(scope="module")
def serving(course):
    """``new-module 09 compilers`` run in the copy; its exit status."""
    return cli.main(["instructor", "new-module", "09", "compilers", "--title-ko", "컴파일러", "--title-en", "Compilers",
                     "--root", str(course)])


def test_a_new_module_is_its_record_and_its_own_files(course, serving):
    assert serving == 0
    m = layout.module(NEW, course)
    assert [x.id for x in layout.modules(course)][-1] == NEW and layout.module("m09", course) == m
    assert layout.problems(course) == []
    for lang in layout.LANGS:
        first = next(c["source"] for c in json.loads(m.lesson(lang, course).read_text(encoding="utf-8"))["cells"]
                     if c["cell_type"] == "markdown")  # after the set-up cell (autograder.standalone)
        assert "".join(first).splitlines()[0] == m.heading(lang)
    for path in (course / "autograder" / "modules" / m.package).rglob("*.py"):
        assert all(module_of(name) in (None, m.package) for name in imported(path, course)), path
    assert all(module_of(name) in (None, m.package) for name in imported(course / "course_answers" / f"{m.package}.py", course))

    env = {**os.environ, "PYTHONPATH": str(course), "COURSE_NO_PROGRESS": "1", "COURSE_LANG": "en"}
    done = subprocess.run([sys.executable, "-c", IN_THE_COPY, str(course)], cwd=course, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]

    own = {f"{part}/{NEW}/" for part in ("lessons", "solutions", "exercises")} | {
        f"autograder/modules/{m.package}/", f"course_answers/{m.package}.py", f"tests/modules/{m.short}/"}
    changed = _status(course)
    assert "autograder/data/modules.json" in changed
    assert {c for c in changed if not c.startswith(tuple(own))} == {"autograder/data/modules.json"}, changed
    assert any(c.startswith(f"exercises/{NEW}/") for c in changed), "the student version was not generated"


def test_the_maps_name_the_new_module_until_they_are_written(course, serving):
    """After ``new-module`` the maps miss its row (the test of the maps fails with it); ``module-map --write``
    adds it to the READMEs; the start page's row is added by hand."""
    diff = module_map.differences("README.md", course)
    assert "+| 09 | [Compilers](lessons/09_compilers/09_compilers.en.ipynb) | [exercise](exercises/09_compilers/" in diff
    assert "+| 09 | [컴파일러](lessons/09_compilers/09_compilers.ko.ipynb) | [실습](" in diff
    assert cli.main(["instructor", "module-map", "--write", "--root", str(course)]) == 1  # the start page is left
    assert not module_map.differences("README.md", course)
    assert not module_map.differences("autograder/data/edition/README.md", course)
    start = module_map.differences(layout.start().lesson("en").as_posix(), course)
    assert "+| 09 | [Compilers](../09_compilers/09_compilers.en.ipynb) |" in start


def test_new_module_refuses_a_number_or_name_that_is_taken(course, serving, capsys):
    assert cli.main(["instructor", "new-module", "04", "other", "--title-ko", "가", "--title-en", "A",
                     "--root", str(course)]) == 2
    assert "04_training_memory" in capsys.readouterr().out
    assert cli.main(["instructor", "new-module", "9", "Bad-Name", "--title-ko", "가", "--title-en", "A",
                     "--root", str(course)]) == 2
