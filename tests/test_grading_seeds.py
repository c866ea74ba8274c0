"""Reproducible grades: an assignment's seed and device secret, kept with the gradebook (``grading/seeds.py``).

The hidden cases of every grading of an assignment come from its seed; a simulated device's parameters from a
key derived from its secret, the task and the case; so grading a class twice gives the same rows. (SQLite
against PostgreSQL: test_grading_postgres.py; the pool against Dask: test_grading_dask.py.)
"""
import csv
import json
import sqlite3

import pytest

from autograder.checks import core, referee, task
from autograder.cli import main
from autograder.grading import preprocessors, seeds
from autograder.grading.batch import grade_class
from autograder.grading.referee import RefereeServer
from fixtures.grading_course import ASSIGNMENT, SIGN_DEPENDENT, build, corpus, demo_course, sign_dependent_score

TIMING = ("submitted_at",)


def test_an_assignment_has_one_seed_kept_in_its_gradebook_until_a_new_one_is_drawn(tmp_path):
    course = demo_course(tmp_path / "course")
    first = seeds.of(course, ASSIGNMENT)
    assert seeds.of(course, ASSIGNMENT) == first
    assert seeds.of(course, "01_other") != first  # each assignment its own
    with sqlite3.connect(course.gradebook_url[len("sqlite:///"):]) as con:  # in the gradebook's own database
        tables = {name for (name,) in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert {seeds.TABLE, "assignment", "grade"} <= tables
    drawn = seeds.of(course, ASSIGNMENT, new=True)
    assert drawn.seed != first.seed and drawn.secret != first.secret and seeds.of(course, ASSIGNMENT) == drawn


def test_a_simulated_device_is_the_same_at_every_grading_of_a_submission(tmp_path, monkeypatch):
    """m03.debug's device through the referee's socket, as a kernel sees it: the grader's parameters come from
    the submission's key, the task and the case."""
    source = 'check("m03.debug", measure, points=3)'
    case = core.cases_for(task("m03.debug"), False, 0)[0]
    key = seeds.submission_key("ab" * 32, ASSIGNMENT, "s01")
    other = seeds.submission_key("ab" * 32, ASSIGNMENT, "s02")
    assert key != other != seeds.submission_key("cd" * 32, ASSIGNMENT, "s02")

    def device(key: str, run: str) -> dict:
        folder = tmp_path / run
        folder.mkdir()
        monkeypatch.setenv(referee.SOCKET_ENV, str(folder / "referee.sock"))
        with RefereeServer(folder / "referee.sock", 0, lambda: ("debug", source), device_key=key) as server:
            referee.RemoteDevice(str(folder / "referee.sock"), "m03.debug", case).close()
        return server.observed()["debug"]["m03.debug|0"]["device"]

    assert device(key, "a") == device(key, "b")  # graded again: the same device
    assert device(key, "c") != device(other, "d")  # another student's
    assert device("", "e") != device("", "f")  # no key (a referee outside a class grading): drawn afresh


def _export(course, path) -> list[dict]:
    assert main(["instructor", "export", "--root", str(course.root), "--to", str(path)]) == 0
    with open(path, encoding="utf-8") as handle:
        return [{k: v for k, v in row.items() if k not in TIMING} for row in csv.DictReader(handle)]


def test_grading_a_class_twice_gives_the_same_rows_and_a_new_seed_is_drawn_only_on_purpose(tmp_path, capsys,
                                                                                           monkeypatch):
    course = demo_course(tmp_path / "course")
    cases = corpus()
    for student, name in {"r01": "all_correct", "r02": "hard_coded", "r03": "partial_stats"}.items():
        build(course, student, cases[name])
    build(course, "r04", SIGN_DEPENDENT)
    grade_class(course, ASSIGNMENT, workers=2, isolate=False)
    first = _export(course, tmp_path / "first.csv")
    stored = seeds.of(course, ASSIGNMENT)  # drawn by the first grading (the demo course was never released)
    record = json.loads(course.private("records", ASSIGNMENT, "r04.json").read_text(encoding="utf-8"))
    assert record["seed"] == stored.seed
    row = {r["student_id"]: r for r in first}["r04"]
    assert float(row["score"]) == pytest.approx(sign_dependent_score(stored.seed)), stored  # the stored seed's cases

    keys = {}

    class Referee(RefereeServer):  # one worker grades in this process: the key each submission's referee got (the
        # preflight's kernel, which grades nothing, gets none)
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            keys[self.path] = self.device_key

    monkeypatch.setattr(preprocessors, "RefereeServer", Referee)
    grade_class(course, ASSIGNMENT, workers=1, isolate=False)
    assert _export(course, tmp_path / "second.csv") == first
    assert sorted(k for k in keys.values() if k) == sorted(seeds.submission_key(stored.secret, ASSIGNMENT, s)
                                           for s in ("r01", "r02", "r03", "r04"))
    monkeypatch.undo()

    capsys.readouterr()
    args = ["instructor", "grade", ASSIGNMENT, "--root", str(course.root), "--no-sandbox", "--new-seed"]
    assert main([*args, "--students", "r04"]) == 2  # one student on a new seed: refused, nothing drawn
    assert "--students" in capsys.readouterr().out and seeds.of(course, ASSIGNMENT) == stored
    assert main(args) == 0
    assert "new seed" in capsys.readouterr().out
    drawn = seeds.of(course, ASSIGNMENT)
    assert drawn.seed != stored.seed
    row = {r["student_id"]: r for r in _export(course, tmp_path / "third.csv")}["r04"]
    assert float(row["score"]) == pytest.approx(sign_dependent_score(drawn.seed))


def test_release_draws_the_seed(tmp_path):
    course = demo_course(tmp_path / "course")
    db = course.gradebook_url[len("sqlite:///"):]
    assert main(["instructor", "release", ASSIGNMENT, "--root", str(course.root)]) == 0
    with sqlite3.connect(db) as con:
        rows = con.execute(f"SELECT assignment, seed, secret FROM {seeds.TABLE}").fetchall()
    assert rows == [(ASSIGNMENT, seeds.of(course, ASSIGNMENT).seed, seeds.of(course, ASSIGNMENT).secret)]
