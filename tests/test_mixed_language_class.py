"""One class, both languages (issue 29): one assignment released once, a learner in the Korean notebook and one in
the English notebook of exercise 04 (its first two tasks), submitted with `submit`, collected from one folder and
graded in one batch. The same answers get the same score; each learner's graded notebook and feedback speak the
language they worked in, and nothing of the other; one CSV holds both rows. Also the unit rules: which file
`submit` sends, and how collect maps a notebook's language files to the assignment's notebook."""
import csv
import json
import os
import re
import shutil
import time
import zipfile
from pathlib import Path

import nbformat
import pytest

from autograder import i18n
from autograder.cli import main
from autograder.grading import collect, generate, languages, sandbox
from autograder.grading.course import REPO, Course
from autograder.grading.submit import worked_in

ASSIGNMENT = "04_training_memory"
NOTEBOOK = f"{ASSIGNMENT}_exercise"
LAST_CELL = "saved_test"  # tasks 1 and 2 (5 points): no measurement task, one small torch model
WRONG_SAVED = "def predict_saved(d, h, depth, act, batch, dtype, segments):\n    return {'plain': 0, 'checkpointed': 0}"


@pytest.fixture(scope="module")
def template(tmp_path_factory) -> Path:
    """Exercise 04 cut after task 2, its student version and language files generated once (expected.json is the
    repository's, checked by tests/test_layout.py: not recomputed here)."""
    root = tmp_path_factory.mktemp("mixed") / "course"
    source = root / "solutions" / ASSIGNMENT
    source.mkdir(parents=True)
    nb = nbformat.read(str(REPO / "solutions" / ASSIGNMENT / f"{NOTEBOOK}.ipynb"), as_version=4)
    ids = [c.metadata.get("nbgrader", {}).get("grade_id") for c in nb.cells]
    nb.cells = nb.cells[:ids.index(LAST_CELL) + 1]
    nbformat.write(nb, str(source / f"{NOTEBOOK}.ipynb"))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(generate, "write_expected", lambda module_id: None)
        generate.generate(Course(root), ASSIGNMENT)
    return root


def small_course(template: Path, root: Path) -> Course:
    """A fresh copy of the template course (its own gradebook) in ``root``."""
    shutil.copytree(template, root)
    return Course(root)


def answered(course: Course, lang: str | None) -> nbformat.NotebookNode:
    """The released file in ``lang`` with task 1 answered as the solution does and task 2 wrong."""
    nb = nbformat.read(str(course.folder("release", ASSIGNMENT, languages.file_name(NOTEBOOK, lang))), as_version=4)
    solution = {c.metadata.nbgrader.grade_id: c.source for c in nbformat.read(
        str(course.folder("source", ASSIGNMENT, f"{NOTEBOOK}.ipynb")), as_version=4).cells if "nbgrader" in c.metadata}
    for cell in nb.cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        if grade_id == "breakdown_solution":
            cell.source = solution[grade_id]
        elif grade_id == "saved_solution":
            cell.source = WRONG_SAVED
    return nb


def learner_submits(course: Course, tmp: Path, student: str, lang: str, chosen: str | None, monkeypatch,
                    capsys) -> Path:
    """The learner's copy of the released folder, ``lang``'s file answered, sent with `submit` while the course's
    language is ``chosen`` (None: not chosen)."""
    root = tmp / "learners" / student
    shutil.copytree(course.folder("release", ASSIGNMENT), root / "exercises" / ASSIGNMENT)
    nbformat.write(answered(course, lang), str(root / "exercises" / ASSIGNMENT / languages.file_name(NOTEBOOK, lang)))
    monkeypatch.setattr(i18n, "_chosen", None)
    if chosen:
        monkeypatch.setenv("COURSE_LANG", chosen)
    else:
        monkeypatch.delenv("COURSE_LANG", raising=False)
    status = main(["submit", ASSIGNMENT, "--student", student, "--to", str(tmp / "inbox"), "--no-check",
                   "--root", str(root)])
    out = capsys.readouterr().out
    assert status == 0, out
    assert languages.file_name(NOTEBOOK, lang) in out, out  # it says which notebook it sent
    monkeypatch.delenv("COURSE_LANG", raising=False)
    monkeypatch.setattr(i18n, "_chosen", None)
    return tmp / "inbox" / f"{student}__{ASSIGNMENT}.zip"


def test_one_class_graded_in_both_languages(template, tmp_path, monkeypatch, capsys):
    course = small_course(template, tmp_path / "course")
    released = sorted(p.name for p in course.folder("release", ASSIGNMENT).glob("*.ipynb"))
    assert released == sorted(languages.file_names(NOTEBOOK)) and course.notebooks(ASSIGNMENT) == [NOTEBOOK]

    learner_submits(course, tmp_path, "kim", "ko", "ko", monkeypatch, capsys)
    learner_submits(course, tmp_path, "smith", "en", None, monkeypatch, capsys)  # the one changed last
    for student, lang in (("kim", "ko"), ("smith", "en")):
        with zipfile.ZipFile(tmp_path / "inbox" / f"{student}__{ASSIGNMENT}.zip") as archive:
            assert sorted(archive.namelist()) == [f"{NOTEBOOK}.ipynb", "submission.json"]
            assert json.loads(archive.read(f"{NOTEBOOK}.ipynb"))["metadata"]["language"] == lang

    root = ["--root", str(course.root)]
    assert main(["instructor", "collect", ASSIGNMENT, str(tmp_path / "inbox"), "--add-unknown", *root]) == 0
    flag = "--require-sandbox" if sandbox.available() else "--no-sandbox"
    assert main(["instructor", "grade", ASSIGNMENT, "--workers", "2", "--cell-timeout", "120", "--notebook-timeout",
                 "300", "--memory-gb", "3", flag, *root]) == 0
    assert main(["instructor", "feedback", ASSIGNMENT, *root]) == 0
    assert main(["instructor", "export", "--assignment", ASSIGNMENT, "--to", str(tmp_path / "grades.csv"), *root]) == 0
    out = capsys.readouterr().out

    with open(tmp_path / "grades.csv", encoding="utf-8", newline="") as handle:
        rows = {r["student_id"]: r for r in csv.DictReader(handle)}
    assert sorted(rows) == ["kim", "smith"], out[-2000:]
    assert rows["kim"]["score"] == rows["smith"]["score"] and float(rows["kim"]["score"]) == 2, rows
    assert float(rows["kim"]["max_score"]) == 5, rows

    own = {"ko": ("실습 04", "과제 1 · 학습 메모리 예산", "확인한 것", "점수: 2 / 5"),
           "en": ("Exercise 04", "Task 1 · The training memory budget", "Checked:", "Score: 2 / 5")}
    for student, lang, other in (("kim", "ko", "en"), ("smith", "en", "ko")):
        graded = nbformat.read(str(course.folder("autograded", student, ASSIGNMENT, f"{NOTEBOOK}.ipynb")),
                               as_version=4)
        assert languages.language_of(graded) == lang
        text = "\n".join(c.source if c.cell_type == "markdown" else "".join(o.get("text", "") for o in c.outputs)
                         for c in graded.cells)
        page = course.folder("feedback", student, ASSIGNMENT, f"{NOTEBOOK}.html").read_text(encoding="utf-8")
        for phrase in own[lang]:
            assert phrase in page, (student, phrase)
        for phrase in own[other]:
            assert phrase not in page and phrase not in text, (student, phrase)
        hangul = re.findall(r"[\uac00-\ud7a3]+", re.sub(r"<[^>]+>", " ", page))
        assert (len(hangul) > 100) == (lang == "ko"), (student, hangul[:20])  # no Korean prose in the English page


def test_submit_sends_the_notebook_worked_in(template, tmp_path, monkeypatch):
    """The chosen language's file, unless only another has an attempted task; else the one changed last."""
    course = small_course(template, tmp_path / "course")
    work = course.folder("release", ASSIGNMENT)
    monkeypatch.setattr(i18n, "_chosen", None)
    monkeypatch.delenv("COURSE_LANG", raising=False)
    now = time.time()
    for i, name in enumerate(languages.file_names(NOTEBOOK)):
        os.utime(work / name, (now - 100 + i, now - 100 + i))
    assert worked_in(course, ASSIGNMENT)[f"{NOTEBOOK}.ipynb"].name == f"{NOTEBOOK}.en.ipynb"  # changed last
    monkeypatch.setenv("COURSE_LANG", "ko")
    assert worked_in(course, ASSIGNMENT)[f"{NOTEBOOK}.ipynb"].name == f"{NOTEBOOK}.ko.ipynb"  # chosen
    nbformat.write(answered(course, None), str(work / f"{NOTEBOOK}.ipynb"))  # the only one with answers
    assert worked_in(course, ASSIGNMENT)[f"{NOTEBOOK}.ipynb"].name == f"{NOTEBOOK}.ipynb"
    nbformat.write(answered(course, "ko"), str(work / f"{NOTEBOOK}.ko.ipynb"))
    assert worked_in(course, ASSIGNMENT)[f"{NOTEBOOK}.ipynb"].name == f"{NOTEBOOK}.ko.ipynb"
    monkeypatch.setenv("COURSE_LANG", "both")  # no one language: the one changed last of those with answers
    os.utime(work / f"{NOTEBOOK}.ipynb", (now + 10, now + 10))
    assert worked_in(course, ASSIGNMENT)[f"{NOTEBOOK}.ipynb"].name == f"{NOTEBOOK}.ipynb"


@pytest.mark.parametrize("names, taken", [
    ((f"{NOTEBOOK}.ko.ipynb",), "ko"),
    ((f"{NOTEBOOK}.en.ipynb", f"{NOTEBOOK}.ko.ipynb"), "en"),  # the English one has answers
    ((f"{NOTEBOOK}.ipynb", f"{NOTEBOOK}.ko.ipynb", f"{NOTEBOOK}.en.ipynb"), "en"),
])
def test_collect_takes_a_language_file_as_the_notebook(template, tmp_path, names, taken):
    """A folder entry, a zip and nbgrader's exchange copy: one notebook, the one with answers, under its name."""
    course = small_course(template, tmp_path / "course")
    files = {}
    for name in names:
        lang = next((lang for lang in languages.LANGUAGES if name.endswith(f".{lang}.ipynb")), None)
        nb = answered(course, lang) if lang == taken else \
            nbformat.read(str(course.folder("release", ASSIGNMENT, name)), as_version=4)
        files[name] = nbformat.writes(nb).encode("utf-8")
    inbox = tmp_path / "inbox"
    (inbox / "kim").mkdir(parents=True)
    with zipfile.ZipFile(inbox / f"lee__{ASSIGNMENT}.zip", "w") as archive:
        for name, data in files.items():
            (inbox / "kim" / name).write_bytes(data)
            archive.writestr(f"{ASSIGNMENT}/{name}", data)
    done = collect.from_folder(course, ASSIGNMENT, inbox, add_unknown=True)
    assert [c.problem for c in done] == [None, None], done
    said = ((languages.file_name(NOTEBOOK, taken), taken),)
    assert [c.took for c in done] == [said, said]
    exchange = tmp_path / "exchange-copy"
    exchange.mkdir()
    for name, data in files.items():
        (exchange / name).write_bytes(data)
    assert collect._one_file_each(exchange, [NOTEBOOK]) == said
    for folder in (course.folder("submitted", "kim", ASSIGNMENT), course.folder("submitted", "lee", ASSIGNMENT),
                   exchange):
        assert sorted(p.name for p in folder.glob("*.ipynb")) == [f"{NOTEBOOK}.ipynb"], folder
        assert languages.language_of(nbformat.read(str(folder / f"{NOTEBOOK}.ipynb"), as_version=4)) == taken


@pytest.mark.parametrize("lang, kinds", [
    ("en", ("the Korean file", "the English file", "the bilingual release")),
    ("ko", ("한국어판", "영어판", "두 언어 배포본")),
])
def test_collect_says_which_file_it_took_in_the_instructors_language(template, tmp_path, monkeypatch, capsys,
                                                                      lang, kinds):
    """A folder with the Korean file, a zip of what `submit` sends (the English file under the notebook's name), the
    bilingual release alone, and a file that cannot be read (no language claimed for it: the grader says why)."""
    course = small_course(template, tmp_path / "course")
    inbox = tmp_path / "inbox"
    (inbox / "kim").mkdir(parents=True)
    nbformat.write(answered(course, "ko"), str(inbox / "kim" / languages.file_name(NOTEBOOK, "ko")))
    with zipfile.ZipFile(inbox / f"lee__{ASSIGNMENT}.zip", "w") as archive:
        archive.writestr(f"{NOTEBOOK}.ipynb", nbformat.writes(answered(course, "en")))
    shutil.copy(course.folder("release", ASSIGNMENT, f"{NOTEBOOK}.ipynb"), inbox / "park.ipynb")
    (inbox / "choi.ipynb").write_text("not a notebook")
    monkeypatch.setattr(i18n, "_chosen", None)
    monkeypatch.setenv("COURSE_LANG", lang)
    main(["instructor", "collect", ASSIGNMENT, str(inbox), "--add-unknown", "--root", str(course.root)])
    lines = capsys.readouterr().out.splitlines()
    took = {}
    for line in lines:
        if line[:1] in "✅❌":
            student = line.split()[1]
        elif line.strip().startswith("📓"):
            took[student] = line.strip()
    ko, en, both = kinds
    took_word = "Took" if lang == "en" else "받은 파일:"
    assert took == {"kim": f"📓 {took_word} {NOTEBOOK}.ko.ipynb ({ko})", "lee": f"📓 {took_word} {NOTEBOOK}.ipynb ({en})",
                    "park": f"📓 {took_word} {NOTEBOOK}.ipynb ({both})"}, lines


@pytest.mark.parametrize("path", sorted(REPO.glob("exercises/*/*_exercise.*.ipynb")), ids=lambda p: p.name)
def test_an_exercise_language_file_speaks_only_its_language(path):
    """Text in its language only, links to the lessons in it, no nbgrader metadata on a locked text cell."""
    lang = path.name.split(".")[-2]
    nb = nbformat.read(str(path), as_version=4)
    assert languages.language_of(nb) == lang
    for i, cell in enumerate(c for c in nb.cells if c.cell_type == "markdown"):
        hangul = re.search(r"[\uac00-\ud7a3]", cell.source)
        assert bool(hangul) == (lang == "ko") or not re.search(r"[A-Za-z\uac00-\ud7a3]{3}", cell.source), (i, cell.source[:80])
        assert f".{'en' if lang == 'ko' else 'ko'}.ipynb" not in cell.source, (i, cell.source[:80])
        assert "nbgrader" not in cell.metadata and cell.metadata.get("editable") is False, i
