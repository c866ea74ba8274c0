"""Text a submission wrote reaches a person only neutralised (terminal, feedback, CSV), cleanup works as any
user, the course's kernel grades every notebook, and refusals and repairs say what was wrong (issue 31, 4-5)."""
import csv
import json
import os
import pwd
import stat
import tempfile
import zipfile
from pathlib import Path

import nbformat
import pytest

from autograder.grading import export
from autograder.grading.safetext import shown, spreadsheet

ATTACK = "\x1b[2K\x1b[1A\x07\r\x7f\x9b31m\u202eevil\u2028=HYPERLINK(\"http://x\")"


def _controls(text: str) -> list[str]:
    import unicodedata
    return [c for c in text if unicodedata.category(c) in ("Cc", "Zl", "Zp") or 0x202A <= ord(c) <= 0x202E
            or 0x2066 <= ord(c) <= 0x2069]


def test_shown_escapes_every_control_character_and_keeps_the_rest():
    text = shown("점수 ✅ " + ATTACK + "\n\tcafé")
    assert not _controls(text)
    assert "\\x1b[2K\\x1b[1A\\x07\\x0d\\x7f\\x9b31m\\u202eevil\\u2028" in text and "\\x0a\\x09café" in text
    assert text.startswith("점수 ✅ ") and shown(text) == text  # once is enough


@pytest.mark.parametrize("value, cell", [
    ("=1+1", "'=1+1"), ("+1", "'+1"), ("-2+3", "'-2+3"), ("@SUM(A1)", "'@SUM(A1)"), ("\t=1", "'\t=1"),
    ("a=b", "a=b"), ("", ""), ("점수 -1", "점수 -1"), (-1.5, -1.5), (6, 6), (None, None)])
def test_spreadsheet_quotes_what_a_spreadsheet_would_run(value, cell):
    assert spreadsheet(value) == cell


def _table():
    row = {"assignment": "00_demo", "student_id": "kim01", "first_name": "=cmd|'/C calc'!A0", "last_name": "@x",
           "email": "+a@example.org", "raw_score": -0.0, "late_penalty": 0.0, "score": 0.0, "max_score": 6.0,
           "due": "", "submitted_at": "", "late_by": "", "status": "graded with problems", "graded_on": "",
           "isolated": "", "task:add_test": 0.0, "_tasks": ["task:add_test"]}
    return [export._with_reason(row, ["=HYPERLINK(\"http://x\")" + ATTACK, "-" + ATTACK])]


def test_reasons_of_an_export_row_are_shown_safely():
    row = _table()[0]
    for key in ("reason", "reason_en", "reason_ko"):
        assert not _controls(row[key]) and "\\x1b[2K" in row[key], row[key]


def test_every_csv_cell_is_neither_a_control_sequence_nor_a_formula(tmp_path, monkeypatch):
    monkeypatch.setattr(export, "rows", lambda course, assignments=None: _table())
    path = tmp_path / "grades.csv"
    assert export.write(None, path) == 1
    text = path.read_bytes().decode("utf-8")
    assert not _controls(text.replace("\r\n", ""))  # only the CSV's own line ends
    with open(path, encoding="utf-8", newline="") as handle:
        (row,) = list(csv.DictReader(handle))
    texts = [v for v in row.values() if v and not v.lstrip("-").replace(".", "").isdigit()]
    assert texts and all(not v.startswith(("=", "+", "-", "@")) for v in texts), row
    assert row["first_name"] == "'=cmd|'/C calc'!A0" and row["reason_en"].startswith("'=HYPERLINK")
    assert float(row["raw_score"]) == 0  # numbers stay numbers


def test_the_terminal_summary_shows_no_control_character():
    table = [{**_table()[0], "student_id": "kim\x1b[2J01"}]
    text = export.summary(table)
    assert not _controls(text.replace("\n", "")) and "\\x1b[2J" in text


def test_collect_prints_entry_names_with_their_control_characters_escaped(tmp_path, capsys):
    from autograder.cli import main
    from fixtures.grading_course import ASSIGNMENT, demo_course
    course = demo_course(tmp_path / "course")
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    (inbox / "kim\x1b[2J\x1b[1A.ipynb").write_text("{}", encoding="utf-8")
    assert main(["instructor", "collect", ASSIGNMENT, str(inbox), "--add-unknown", "--root", str(course.root)]) == 1
    out = capsys.readouterr().out
    assert "\x1b" not in out and "kim\\x1b[2J\\x1b[1A" in out


def _zip(path: Path, entries: dict[str, bytes]) -> None:
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in entries.items():
            archive.writestr(name, data)


def test_collect_says_what_a_refused_zip_holds(tmp_path):
    from autograder.grading.collect import from_folder
    from fixtures.grading_course import ASSIGNMENT, demo_course
    course = demo_course(tmp_path / "course")
    stub = nbformat.writes(nbformat.v4.new_notebook()).encode()
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    _zip(inbox / "two__00_demo.zip", {"first.ipynb": stub, "second.ipynb": stub})
    _zip(inbox / "deep__00_demo.zip", {"a/b/demo.ipynb": stub, "a/readme.txt": b"x"})
    _zip(inbox / "none__00_demo.zip", {"readme.txt": b"x"})
    done = {c.source: c for c in from_folder(course, ASSIGNMENT, inbox, add_unknown=True)}
    two, deep, none = (done[f"{s}__00_demo.zip"] for s in ("two", "deep", "none"))
    assert "first.ipynb, second.ipynb" in two.problem and "demo.ipynb" in two.problem and "노트북" in two.why.ko
    assert "b/demo.ipynb" in deep.problem
    assert "no notebook" in none.problem


def _notebook(tmp_path: Path, extra_metadata: dict | None = None) -> Path:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("x = 1", metadata={"nbgrader": {
                    "grade": False, "grade_id": "add_solution", "locked": False, "schema_version": 3,
                    "solution": True, "task": False}}),
                nbformat.v4.new_code_cell("check('m00.add', add, points=100)", metadata={"nbgrader": {
                    "grade": True, "grade_id": "bonus", "locked": True, "points": 100, "schema_version": 3,
                    "solution": False, "task": False}})]
    nb.metadata.update(extra_metadata or {})
    path = tmp_path / "demo.ipynb"
    nbformat.write(nb, str(path))
    return path


def test_intake_turns_a_graded_cell_the_assignment_lacks_into_an_ordinary_cell(tmp_path):
    from autograder.grading.intake import admit
    path = _notebook(tmp_path)
    reason = admit(path, {"add_solution", "add_test"})
    assert "bonus" in reason.en and "not the assignment's" in reason.en and "채점" in reason.ko
    cells = nbformat.read(str(path), as_version=4).cells
    assert "nbgrader" in cells[0].metadata and "nbgrader" not in cells[1].metadata
    assert admit(path, {"add_solution", "add_test"}) is None  # repaired once


def test_every_notebook_is_graded_with_the_course_kernel(tmp_path):
    from autograder.grading.preprocessors import course_kernel
    notes = tmp_path / "notes.jsonl"
    named = nbformat.v4.new_notebook(metadata={"kernelspec": {"name": "no-such-kernel", "display_name": "x"}})
    assert course_kernel(named, "", str(notes), "demo") == "python3"
    assert course_kernel(nbformat.v4.new_notebook(), "", str(notes), "demo") == "python3"
    assert course_kernel(named, "course-kernel", str(notes), "demo") == "course-kernel"
    lines = [json.loads(line)["reason"] for line in notes.read_text(encoding="utf-8").splitlines()]
    assert lines == ["demo.ipynb: the notebook names the kernel 'no-such-kernel'; graded with the course's kernel "
                     "'python3'", "demo.ipynb: the notebook names the kernel 'no-such-kernel'; graded with the "
                     "course's kernel 'course-kernel'"]


def _locked_tree(base: Path) -> tuple[Path, Path]:
    """A scratch folder as a submission may leave it (mode 000 and read-only folders, a link to a folder outside)."""
    outside = base / "outside"
    (outside / "keep").mkdir(parents=True)
    (outside / "keep" / "file").write_text("x")
    scratch = base / "scratch"
    (scratch / "work" / "locked" / "deeper").mkdir(parents=True)
    (scratch / "work" / "locked" / "deeper" / "big.bin").write_bytes(b"x" * 4096)
    (scratch / "work" / "readonly").mkdir()
    (scratch / "work" / "readonly" / "file").write_text("x")
    (scratch / "work" / "link").symlink_to(outside / "keep")
    os.chmod(outside / "keep", 0o500)
    os.chmod(scratch / "work" / "locked" / "deeper", 0)
    os.chmod(scratch / "work" / "locked", 0)
    os.chmod(scratch / "work" / "readonly", 0o500)
    return scratch, outside


def _as_unprivileged(function) -> None:
    """Run ``function`` in a child process as an unprivileged user (as this user when not root)."""
    if os.geteuid() != 0:
        function()
        return
    user = pwd.getpwnam("nobody")
    pid = os.fork()
    if pid == 0:  # the child: drop root, run, report by exit status only
        try:
            os.setgroups([])
            os.setgid(user.pw_gid)
            os.setuid(user.pw_uid)
            function()
            os._exit(0)
        except BaseException:
            os._exit(1)
    assert os.waitpid(pid, 0)[1] == 0


def test_cleanup_removes_folders_a_submission_locked_as_any_user():
    from autograder.grading.scratch import remove_tree
    base = Path(tempfile.mkdtemp(prefix="aihw-cleanup-"))
    try:
        scratch, outside = _locked_tree(base)
        if os.geteuid() == 0:  # the tree belongs to the unprivileged user that removes it
            user = pwd.getpwnam("nobody")
            for path in [base, *base.rglob("*")]:
                os.chown(path, user.pw_uid, user.pw_gid, follow_symlinks=False)
        _as_unprivileged(lambda: remove_tree(scratch))
        assert not os.path.lexists(scratch)
        assert (outside / "keep" / "file").read_text() == "x"  # the link was removed, not followed
        assert stat.S_IMODE(os.stat(outside / "keep").st_mode) == 0o500
    finally:
        for path in [base, *base.rglob("*")]:
            if path.is_dir() and not path.is_symlink():
                os.chmod(path, 0o700)
        import shutil
        shutil.rmtree(base, ignore_errors=True)


def test_a_measurement_cell_has_its_own_shorter_time_limit():
    from autograder.grading.preprocessors import SandboxedExecute
    meta = {"nbgrader": {"grade": True, "grade_id": "t", "points": 1, "locked": True, "solution": False}}
    measuring = nbformat.v4.new_code_cell('check("m00.count", count_positive, points=1)', metadata=meta)
    other = nbformat.v4.new_code_cell('check("m00.add", add, points=2)', metadata=meta)
    run = SandboxedExecute(timeout=300, measurement_timeout=60)
    assert (run.cell_limit(measuring), run.cell_limit(other)) == (60, 300)
    assert SandboxedExecute(timeout=30, measurement_timeout=60).cell_limit(measuring) == 30
    assert SandboxedExecute(timeout=300).cell_limit(measuring) == 300
    assert SandboxedExecute(timeout=None, measurement_timeout=60).cell_limit(measuring) == 60


def _deep(depth: int) -> list:
    x = []
    for _ in range(depth):
        x = [x]
    return x


def test_a_record_nested_too_deep_is_no_record_and_its_output_is_dropped():
    from autograder.checks.core import RECORD_MIME
    from autograder.grading import records
    from autograder.grading.preprocessors import SandboxedExecute
    assert records.payloads([{"output_type": "display_data", "data": {RECORD_MIME: "[" * 100000 + "]" * 100000}}]) \
        == [None]
    run = SandboxedExecute()
    run._sizes, run._cut, run._unreadable = {}, set(), set()
    outs = []
    message = {"msg_type": "display_data", "content": {"data": {RECORD_MIME: {"records": _deep(100000)}},
                                                       "metadata": {}}}
    assert run.output(outs, message, None, 4) is None and run.output(outs, message, None, 4) is None
    assert len(outs) == 1 and "nested too deep" in outs[0].text and run._unreadable == {4}


def test_a_verdict_shows_an_answer_with_control_characters_escaped():
    from autograder.checks.core import RECORD_MIME
    from autograder.grading import records
    payload = {"task": "m00.add", "hidden": False, "seed": 0,
               "records": [{"case": [1, 2], "answer": "\x1b[2J\x1b]0;pwned\x07", "error": None},
                           {"case": [0.5, 0.25], "answer": 0.75, "error": None}]}
    verdict = records.rescore('check("m00.add", add, points=2)', [
        {"output_type": "display_data", "data": {RECORD_MIME: json.dumps(payload)}}], 0, 2)
    assert verdict.earned < 2 and "\\x1b[2J" in verdict.text and not _controls(verdict.text.replace("\n", ""))


def test_a_measurement_cell_is_stopped_at_its_own_limit(tmp_path):
    """Graded for real: a measured function that sleeps with the device lock held is stopped at the measurement
    limit (3 s), not the cell limit (60 s), and the cells before it count."""
    from autograder.grading import sandbox
    from autograder.grading.batch import grade_class
    from autograder.grading.worker import Limits
    from fixtures.grading_course import ASSIGNMENT, build, corpus, demo_course
    course = demo_course(tmp_path / "course")
    ok = corpus()["all_correct"]["cells"]
    build(course, "sleeper", {"cells": {**ok, "count_solution": "import time\ndef count_positive(xs):\n"
                                                                 "    time.sleep(1000)"}})
    (outcome,) = grade_class(course, ASSIGNMENT, workers=1, isolate=sandbox.available(),
                             limits=Limits(cell_s=60, notebook_s=300, memory_bytes=2**30, measurement_s=3))
    (row,) = export.rows(course, [ASSIGNMENT])
    assert outcome.error is None and row["score"] == 5 and "time limit (3 s)" in row["reason"], row


def test_the_feedback_page_shows_reasons_with_control_characters_escaped():
    from autograder.grading.feedback import _banner, _page
    row = _table()[0]
    page = _page("00_demo", "kim01", row)
    assert "\x1b" not in page and "\u202e" not in page and "\\x1b[2K" in page
    assert not _controls(_banner("00_demo", "kim01", row).en.replace("\n", ""))
