"""A PostgreSQL gradebook, against a real server on 127.0.0.1: the same class graded into PostgreSQL and
into SQLite with the same seed gives the same export, row for row; feedback and the formgrader's API read it; the
instructor guide's switch of a released course from SQLite to PostgreSQL runs as written.

The server is Debian's ``postgresql`` (``initdb`` and ``pg_ctl`` from /usr/lib/postgresql/*/bin, or on
PATH), started in a temporary folder for this module and stopped by its pid file; as root it runs as
the ``postgres`` account (or a throwaway ``aihw-pgtest`` account made here). Where no server can start
the tests skip saying why; under CI=true they fail.
"""
import csv
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from autograder.cli import main
from autograder.grading.batch import grade_class
from autograder.grading.course import REPO, Course
from autograder.grading import seeds
from autograder.grading.deadlines import show
from autograder.grading.generate import generate
from fixtures.grading_course import ASSIGNMENT, HERE, SIGN_DEPENDENT, build, corpus, sign_dependent_score
from fixtures import servers

START_S = 60
CLASS = {"p01": "all_correct", "p02": "partial_stats", "p03": "blank", "p04": "hard_coded", "p05": "no_notebook",
         "p06": "sign_dependent"}
TIMING = ("submitted_at",)  # when the submission was received: the moment each course was built


def unavailable(reason: str):
    servers.unavailable("the PostgreSQL test", reason)


def _bin() -> Path | None:
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"), key=lambda p: int(p.parent.parent.name)
                   if p.parent.parent.name.isdigit() else 0)
    if found:
        return found[-1].parent
    initdb = shutil.which("initdb")
    return Path(initdb).resolve().parent if initdb else None


def _account() -> str | None:
    """The unprivileged account the server runs as when this test runs as root (PostgreSQL refuses root)."""
    for name in ("postgres", "aihw-pgtest"):
        try:
            pwd.getpwnam(name)
            return name
        except KeyError:
            continue
    made = subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", "aihw-pgtest"],
                          capture_output=True, text=True)
    return "aihw-pgtest" if made.returncode == 0 else None


@pytest.fixture(scope="module")
def server():
    """A function: database name -> SQLAlchemy URL of a new database on a server on 127.0.0.1."""
    pytest.importorskip("psycopg") if os.environ.get("CI") != "true" else None
    import psycopg
    bindir = _bin()
    if bindir is None:
        unavailable("PostgreSQL is not installed (apt-get install postgresql; .ci/run does it as root)")
    as_user = []
    folder = Path(tempfile.mkdtemp(prefix="aihw-pg-"))
    if os.geteuid() == 0:
        account = _account()
        if account is None:
            shutil.rmtree(folder, ignore_errors=True)
            unavailable("running as root and no unprivileged account for PostgreSQL could be found or made")
        as_user = ["runuser", "-u", account, "--"]
        shutil.chown(folder, account)
    data = folder / "data"
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    run = lambda *args, **kw: subprocess.run([*as_user, *args], capture_output=True, text=True, **kw)  # noqa: E731
    made = run(str(bindir / "initdb"), "-D", str(data), "-U", "grader", "-A", "trust", "-E", "UTF8", "--locale=C",
               "--no-sync", timeout=120)
    if made.returncode:
        shutil.rmtree(folder, ignore_errors=True)
        unavailable(f"initdb failed: {made.stderr[-1500:]}")
    options = f"-c listen_addresses=127.0.0.1 -c port={port} -c unix_socket_directories={folder} -c fsync=off"
    started = run(str(bindir / "pg_ctl"), "-D", str(data), "-o", options, "-l", str(folder / "server.log"),
                  "-w", "-t", str(START_S), "start", timeout=START_S + 30)
    try:
        if started.returncode:
            log = (folder / "server.log").read_text(errors="replace")[-1500:] if (folder / "server.log").exists() else ""
            unavailable(f"pg_ctl start failed: {started.stderr[-800:]} {log}")
        base = f"postgresql://grader@127.0.0.1:{port}"

        def database(name: str) -> str:
            deadline = time.monotonic() + START_S
            while True:
                try:
                    con = psycopg.connect(f"{base}/postgres", connect_timeout=5, autocommit=True)
                    break
                except psycopg.OperationalError:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.5)
            with con.cursor() as cur:
                cur.execute(f'CREATE DATABASE "{name}"')
            con.close()
            return f"{base}/{name}"

        yield database
    finally:
        if (data / "postmaster.pid").exists():
            run(str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "-t", "30", "stop", timeout=60)
        shutil.rmtree(folder, ignore_errors=True)


def _course(root: Path, db_url: str | None) -> Course:
    """The demo course in ``root``; with ``db_url``: the repository's configuration, gradebook from COURSE_GRADEBOOK_URL."""
    shutil.copytree(HERE / "course" / "solutions", root / "solutions")
    if db_url:
        shutil.copy(REPO / "nbgrader_config.py", root / "nbgrader_config.py")
    course = Course(root)
    generate(course, ASSIGNMENT)
    cases = {**corpus(), "sign_dependent": SIGN_DEPENDENT}
    for student, case in CLASS.items():
        build(course, student, cases[case])
    return course


def _same_seed(source: Course, target: Course) -> seeds.Drawn:
    """``source``'s seed of the assignment, stored in ``target``'s gradebook too (as moving the gradebook would)."""
    from sqlalchemy import create_engine, text
    drawn = seeds.of(source, ASSIGNMENT)
    seeds.of(target, ASSIGNMENT)
    engine = create_engine(target.gradebook_url)
    with engine.begin() as con:
        con.execute(text(f"UPDATE {seeds.TABLE} SET seed = :seed, secret = :secret WHERE assignment = :name"),
                     {"seed": drawn.seed, "secret": drawn.secret, "name": ASSIGNMENT})
    engine.dispose()
    assert seeds.of(target, ASSIGNMENT) == drawn
    return drawn


def _export(course: Course, path: Path) -> list[dict]:
    assert main(["instructor", "export", "--root", str(course.root), "--to", str(path)]) == 0
    with open(path, encoding="utf-8") as handle:
        return [{k: v for k, v in row.items() if k not in TIMING} for row in csv.DictReader(handle)]


def test_a_class_graded_into_postgresql_exports_what_sqlite_does(server, tmp_path, monkeypatch, capsys):
    url = server("course_a")
    monkeypatch.setenv("COURSE_GRADEBOOK_URL", url)
    pg = _course(tmp_path / "pg", url)
    assert pg.gradebook_url == url
    monkeypatch.delenv("COURSE_GRADEBOOK_URL")
    lite = _course(tmp_path / "lite", None)
    assert lite.gradebook_url.startswith("sqlite:///")
    grade_class(lite, ASSIGNMENT, workers=2)
    lite_rows = _export(lite, tmp_path / "lite.csv")

    monkeypatch.setenv("COURSE_GRADEBOOK_URL", url)
    drawn = _same_seed(lite, pg)
    capsys.readouterr()
    grade_class(pg, ASSIGNMENT, workers=2)
    assert "not SQLite" in capsys.readouterr().out  # no file to back up: the database's own tools do it
    assert not pg.private("backups").exists()
    assert not (pg.root / ".nbgrader" / "gradebook.db").exists()
    pg_rows = _export(pg, tmp_path / "pg.csv")
    assert len(pg_rows) == len(CLASS) and pg_rows == lite_rows
    assert {r["student_id"]: float(r["score"]) for r in pg_rows} == \
        {"p01": 6.0, "p02": 4.5, "p03": 0.0, "p04": 0.5, "p05": 0.0, "p06": sign_dependent_score(drawn.seed)}

    # re-grading updates the rows, nothing is added or changed
    grade_class(pg, ASSIGNMENT, ["p02", "p06"], workers=1)
    assert _export(pg, tmp_path / "pg2.csv") == lite_rows

    # feedback and the formgrader (nbgrader's API over the same URL) read the PostgreSQL gradebook
    assert main(["instructor", "feedback", ASSIGNMENT, "--root", str(pg.root)]) == 0
    html = pg.folder("feedback", "p02", ASSIGNMENT, "demo.html").read_text(encoding="utf-8")
    assert "4.5" in html
    from autograder.grading.course import api
    submissions = {s["student"]: s for s in api(pg).get_submissions(ASSIGNMENT)}
    assert set(submissions) == set(CLASS) and submissions["p01"]["score"] == 6.0


def _course_on(url: str, tmp_path: Path, monkeypatch, students: list[str]) -> tuple[str, Path, Course]:
    """The demo course with its gradebook at ``url`` (no configuration file, no environment variable), generated,
    with an all-correct submission of each of ``students``."""
    monkeypatch.delenv("COURSE_GRADEBOOK_URL", raising=False)
    root = tmp_path / "course"
    shutil.copytree(HERE / "course" / "solutions", root / "solutions")
    course = Course(root, url)
    generate(course, ASSIGNMENT)
    for student in students:
        build(course, student, corpus()["all_correct"])
    return url, root, course


def test_the_db_url_option_points_every_command_at_postgresql(server, tmp_path, monkeypatch, capsys):
    """``--db-url`` (no environment variable): grade and export with a course that has no configuration file."""
    url, root, course = _course_on(server("course_b"), tmp_path, monkeypatch, ["q01"])
    assert main(["instructor", "grade", ASSIGNMENT, "--root", str(root), "--db-url", url, "--workers", "1"]) == 0
    assert "6/6" in capsys.readouterr().out
    rows = _export_with(root, url, tmp_path / "out.csv")
    assert [(r["student_id"], float(r["score"]), r["status"]) for r in rows] == [("q01", 6.0, "graded")]
    assert not (root / ".nbgrader" / "gradebook.db").exists()


def _export_with(root: Path, url: str, path: Path) -> list[dict]:
    assert main(["instructor", "export", "--root", str(root), "--db-url", url, "--to", str(path)]) == 0
    with open(path, encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def test_the_guides_switch_to_postgresql_runs_as_written(server, tmp_path, monkeypatch, capsys):
    """docs/instructor.md, "Grading a large course", 1: a course released on SQLite switches to PostgreSQL with the
    guide's commands (the roster import creates the tables; `release --force` puts the assignment back with its due
    date), then collects, grades and exports from PostgreSQL."""
    monkeypatch.delenv("COURSE_GRADEBOOK_URL", raising=False)
    root = tmp_path / "course"
    shutil.copytree(HERE / "course" / "solutions", root / "solutions")
    shutil.copy(REPO / "nbgrader_config.py", root / "nbgrader_config.py")  # a clone of the course carries it
    cli = lambda *args: main(["instructor", *map(str, args), "--root", str(root)])  # noqa: E731
    assert cli("release", ASSIGNMENT) == 0  # the class started on SQLite
    roster = tmp_path / "students.csv"
    roster.write_text("id,first_name,last_name,email\nq01,Ada,Lovelace,ada@example.org\n", encoding="utf-8")

    url = server("course_c")  # createdb
    monkeypatch.setenv("COURSE_GRADEBOOK_URL", url)  # export COURSE_GRADEBOOK_URL=...
    capsys.readouterr()
    assert cli("release", ASSIGNMENT) == 2  # already in the exchange: the guide's --force is needed
    assert "--force" in capsys.readouterr().out
    assert cli("roster", roster) == 0
    due = (datetime.now(timezone.utc) + timedelta(days=7)).replace(second=0, microsecond=0)
    assert cli("release", ASSIGNMENT, "--force", "--due", due.isoformat()) == 0
    course = Course(root)
    assert show(due, course.zone) in capsys.readouterr().out

    assert course.gradebook_url == url
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    shutil.copy(course.folder("source", ASSIGNMENT, "demo.ipynb"), inbox / "q01.ipynb")
    assert cli("collect", ASSIGNMENT, inbox) == 0
    assert cli("grade", ASSIGNMENT, "--workers", "1") == 0
    rows = _export_with(root, url, tmp_path / "out.csv")
    assert [(r["student_id"], r["first_name"], float(r["score"]), r["status"]) for r in rows] == \
        [("q01", "Ada", 6.0, "graded")]
    assert rows[0]["due"] == show(due, course.zone)


def test_a_batch_stopped_midway_leaves_the_postgresql_gradebook_untouched(server, tmp_path, monkeypatch, capsys):
    """The preflight passes (replaced here), then every kernel exits as it starts (the course's kernel arguments):
    the batch stops at the third, exit 2, and the PostgreSQL gradebook keeps exactly the rows it had."""
    import json
    from autograder.grading import batch
    url, root, course = _course_on(server("course_d"), tmp_path, monkeypatch, ["r01", "r02", "r03", "r04", "r05"])
    assert main(["instructor", "grade", ASSIGNMENT, "--root", str(root), "--db-url", url, "--workers", "1",
                 "--students", "r01"]) == 0
    before = _export_with(root, url, tmp_path / "before.csv")
    assert [r["status"] for r in before].count("graded") == 1
    dies = ("--IPKernelApp.exec_lines=import os, sys; os.write(sys.stderr.fileno(), b'aihw-test: dies as it starts\\n'); "
            "os._exit(3)")
    (root / "nbgrader_config.json").write_text(json.dumps({"SandboxedExecute": {"extra_arguments": [dies]}}))
    monkeypatch.setattr(batch, "preflight", lambda job: None)
    capsys.readouterr()
    assert main(["instructor", "grade", ASSIGNMENT, "--root", str(root), "--db-url", url, "--workers", "1"]) == 2
    out = capsys.readouterr().out
    assert "Grading stopped: 3 of the 3 kernels so far failed to start the same way" in out, out
    assert "aihw-test: dies as it starts" in out and "2 submissions were not graded" in out
    (root / "nbgrader_config.json").unlink()
    assert _export_with(root, url, tmp_path / "after.csv") == before
