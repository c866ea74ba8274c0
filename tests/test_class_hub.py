"""A class on JupyterHub, end to end with real processes, and the first open of a fresh clone.

* First open: JupyterLab's server (``jupyter server``) on a fresh clone answers the endpoints the
  Formgrader and the Assignments panel call with an empty gradebook and an empty list (a submission another
  clone on the machine recorded in the user's Jupyter data folder is not this clone's).
* Lessons: a lesson opened and saved the way JupyterLab saves it, then updated with nbgitpuller
  (what learners use), keeps the learner's work and takes the course's changes.
* The class: deploy/jupyterhub/jupyterhub_config.py, unchanged, runs a real JupyterHub (with
  configurable-http-proxy and LocalProcessSpawner) on 127.0.0.1 for throwaway local accounts: an
  instructor and three students. Through the Hub's REST API and each user's server (nbgrader's
  server extensions): release, fetch, submit (reference, blank, a tampering case of the corpus),
  then the course's own roster import, collect, parallel sandboxed grade, feedback --release and export as the
  instructor, and each student fetches their feedback. Students can read neither each other's work
  nor the instructor's files; everything the test started is stopped (by pid) and removed.

The hub needs root (local accounts, LocalProcessSpawner), ``configurable-http-proxy`` (npm) and
``jupyterhub`` (pip): where one is missing the test skips saying why; under CI=true it fails.
"""
from __future__ import annotations

import csv
import grp
import json
import os
import pwd
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.parse
from pathlib import Path

import pytest

from autograder import launch
from autograder.grading.course import REPO
from fixtures.accounts import blocked_ancestors, python_namespace
from fixtures import servers
from fixtures.grading_course import ASSIGNMENT, HERE, build, corpus, demo_course
from fixtures.servers import START_S, free_port, fresh_copy, request, stop, wait_for

PREFIX = "aihwhub"  # throwaway accounts and groups: aihwhub-inst, aihwhub-s1..s3
COURSE_ID = "aihw-class"
TAMPER = "liar_int"  # a corpus case that must score 0 with or without the sandbox
CLASS = {f"{PREFIX}-s1": "reference", f"{PREFIX}-s2": "blank", f"{PREFIX}-s3": TAMPER}
INSTRUCTOR = f"{PREFIX}-inst"
GROUPS = {"instructors": f"{PREFIX}-instructors", "students": f"{PREFIX}-students"}


def unavailable(reason: str):
    servers.unavailable("the class hub test", reason)


# --- first open of a fresh clone, and lessons updated with nbgitpuller ---------------------------------

@pytest.fixture(scope="module")
def clone():
    """A learner's clone of the course (``upstream``) with JupyterLab's server running in it."""
    tmp = Path(tempfile.mkdtemp(prefix="aihw-firstopen-"))
    upstream = fresh_copy(tmp / "upstream")
    learner = tmp / "learner"
    subprocess.run(["git", "clone", "-q", str(upstream), str(learner)], check=True)
    port, token = free_port(), secrets.token_hex(16)
    log = tmp / "server.log"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("COURSE_EXCHANGE", "COURSE_GRADEBOOK", "JUPYTER"))}
    env["PATH"] = "/usr/bin:/bin"  # as a desktop launcher starts it: the environment's bin/ is not on PATH
    env["JUPYTER_CONFIG_PATH"] = str(learner / "autograder" / "data" / "jupyter")  # as `autograder start` sets it
    # The user's Jupyter data folder, where nbgrader keeps its record of submissions by default: another clone on
    # this machine submitted from there. This clone keeps its own record and must not list that submission.
    env["JUPYTER_DATA_DIR"] = str(tmp / "jupyter-data")
    env["XDG_CONFIG_HOME"] = str(tmp / "config")  # no language remembered: the server's lines in both languages
    other = tmp / "jupyter-data" / "nbgrader_cache" / "ai-hardware" / "learner+01_devices+2026-11-20 10:00:00.000000 UTC"
    other.mkdir(parents=True)
    shutil.copy2(learner / "exercises" / "01_devices" / "01_devices_exercise.ipynb", other)
    (other / "timestamp.txt").write_text("2026-11-20 10:00:00.000000 UTC")
    with open(log, "wb") as out:
        proc = subprocess.Popen([str(Path(sys.executable).parent / "jupyter"), "server", "--no-browser",
                                 "--ip=127.0.0.1", f"--port={port}", "--port-retries=0", f"--IdentityProvider.token={token}",
                                 f"--ServerApp.root_dir={learner}",
                                 f"--LabApp.app_settings_dir={learner / 'autograder/data/jupyter/lab/ko'}",  # as start does
                                 *(["--allow-root"] if os.geteuid() == 0 else [])],
                                cwd=learner, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        wait_for(f"http://127.0.0.1:{port}/api/status", token, proc, log)
        yield {"url": f"http://127.0.0.1:{port}", "token": token, "root": learner, "upstream": upstream, "log": log}
    finally:
        stop(proc)
        shutil.rmtree(tmp, ignore_errors=True)


def test_fresh_clone_formgrader_and_assignments_open(clone):
    url, token = clone["url"], clone["token"]
    status, body = request(f"{url}/formgrader/api/assignments", token)
    assert status == 200, body[-2000:]
    assignments = json.loads(body)
    assert {a["name"] for a in assignments} >= {"01_devices"} and all(a["num_submissions"] == 0 for a in assignments)
    for path in ("/formgrader/api/students", "/formgrader/api/status"):
        status, body = request(url + path, token)
        assert status == 200, (path, body[-500:])
    assert json.loads(request(f"{url}/formgrader/api/students", token)[1]) == []
    for page in ("/formgrader/manage_assignments", "/formgrader/gradebook", "/formgrader/manage_students"):
        status, body = request(url + page, token)
        assert status == 200 and b"error-500" not in body, (page, status)
    for path in (f"/assignments?course_id=ai-hardware", "/courses"):
        status, body = request(url + path, token)
        assert status == 200 and json.loads(body) == {"success": True, "value": []}, (path, body[-800:])
    log = clone["log"].read_text(errors="replace")
    assert "No assignments yet" in log and "과제가 아직 없습니다" in log  # the one-line next step, once
    status = subprocess.run(["git", "status", "--porcelain"], cwd=clone["root"], capture_output=True, text=True)
    assert status.stdout == "", status.stdout  # .nbgrader/ and .exchange/ are ignored


def test_a_korean_start_opens_jupyterlab_in_korean_without_the_news_popup(clone):
    """The settings `autograder start` gives JupyterLab for a Korean start page (the language pack is installed)."""
    url, token = clone["url"], clone["token"]
    def default(plugin, key):
        status, body = request(f"{url}/lab/api/settings/{plugin}", token)
        assert status == 200, body[-500:]
        return json.loads(body)["schema"]["properties"][key]["default"]
    assert default("@jupyterlab/translation-extension:plugin", "locale") == "ko_KR"
    assert default("@jupyterlab/apputils-extension:notification", "fetchNews") == "false"
    status, body = request(f"{url}/lab/api/translations/ko_KR", token)
    assert status == 200 and json.loads(body).get("data"), "the Korean language pack is installed"


def _save(clone, path: str, nb: dict) -> None:
    """Save a notebook through the server, as JupyterLab's save and autosave do."""
    status, body = request(f"{clone['url']}/api/contents/{path}", clone["token"], "PUT",
                           data={"type": "notebook", "format": "json", "content": nb})
    assert status == 200, body[-800:]


def _run_in_jupyterlab(nb: dict) -> dict:
    """What running a notebook in JupyterLab adds: outputs, counts, timings, the kernel's details, widget state."""
    nb["metadata"]["language_info"] = {"codemirror_mode": {"name": "ipython", "version": 3}, "file_extension": ".py",
                                       "mimetype": "text/x-python", "name": "python", "nbconvert_exporter": "python",
                                       "pygments_lexer": "ipython3", "version": sys.version.split()[0]}
    nb["metadata"]["kernelspec"]["display_name"] = "Python 3 (ipykernel)"
    nb["metadata"]["widgets"] = {"application/vnd.jupyter.widget-state+json": {"state": {}, "version_major": 2}}
    for i, cell in enumerate(c for c in nb["cells"] if c["cell_type"] == "code"):
        cell["execution_count"] = i + 1
        cell["outputs"] = [{"output_type": "stream", "name": "stdout", "text": f"measured here {i}\n"}]
        cell["metadata"]["execution"] = {"iopub.status.busy": "2026-11-24T10:00:00.000000Z"}
    return nb


def test_a_lesson_opened_and_run_leaves_git_status_clean(clone):
    """The course's pre-save hook (autograder/lesson_save.py) saves a lesson without what running added; an
    exercise, the learner's own work, keeps its outputs."""
    url, token, root = clone["url"], clone["token"], clone["root"]
    for lesson in ("lessons/01_devices/01_devices.en.ipynb", "lessons/03_memory_hierarchy/03_memory_hierarchy.ko.ipynb"):
        nb = json.loads(request(f"{url}/api/contents/{lesson}?content=1", token)[1])["content"]
        _save(clone, lesson, _run_in_jupyterlab(nb))
    status = subprocess.run(["git", "status", "--porcelain"], cwd=root, capture_output=True, text=True)
    assert status.stdout == "", "a lesson that was only run must stay the committed file:\n" + status.stdout
    exercise = "exercises/01_devices/01_devices_exercise.ipynb"
    nb = json.loads(request(f"{url}/api/contents/{exercise}?content=1", token)[1])["content"]
    _save(clone, exercise, _run_in_jupyterlab(nb))
    saved = json.loads((root / exercise).read_text(encoding="utf-8"))
    assert any(c.get("outputs") for c in saved["cells"]), "an exercise is saved as the learner left it"
    subprocess.run(["git", "checkout", "-q", "--", exercise], cwd=root, check=True)


def test_lesson_saved_by_jupyterlab_then_updated_with_nbgitpuller(clone):
    """JupyterLab's save (language_info from the kernel, outputs, an edit) and a course update: the update
    merges, the learner's work stays, and nothing asks the learner to resolve anything."""
    url, token, root, upstream = clone["url"], clone["token"], clone["root"], clone["upstream"]
    lesson = "lessons/01_devices/01_devices.en.ipynb"
    status, body = request(f"{url}/api/contents/{lesson}?content=1", token)
    assert status == 200
    model = json.loads(body)
    nb = model["content"]
    nb["metadata"]["language_info"] = {"codemirror_mode": {"name": "ipython", "version": 3}, "file_extension": ".py",
                                       "mimetype": "text/x-python", "name": "python", "nbconvert_exporter": "python",
                                       "pygments_lexer": "ipython3", "version": sys.version.split()[0]}
    code = next(c for c in nb["cells"] if c["cell_type"] == "code")
    code["execution_count"] = 1
    code["outputs"] = [{"output_type": "stream", "name": "stdout", "text": "measured here\n"}]
    nb["cells"].append({"cell_type": "markdown", "id": "learner-note", "metadata": {}, "source": "my note"})
    status, _ = request(f"{url}/api/contents/{lesson}", token, "PUT", data={"type": "notebook", "format": "json",
                                                                            "content": nb})
    assert status == 200
    # The course changes: the same lesson's first cell, and another file.
    upstream_nb = json.loads((upstream / lesson).read_text(encoding="utf-8"))
    upstream_nb["cells"][0]["source"].append("\nUpdated by the course.")
    (upstream / lesson).write_text(json.dumps(upstream_nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    (upstream / "lessons" / "NEW.md").write_text("new lesson material\n")
    git = ["git", "-c", "user.name=course", "-c", "user.email=course@example.org"]
    subprocess.run(["git", "add", "-A"], cwd=upstream, check=True)
    subprocess.run([*git, "commit", "-q", "-m", "update"], cwd=upstream, check=True)
    pulled = subprocess.run([str(Path(sys.executable).parent / "gitpuller"), str(upstream), "main", str(root)],
                            capture_output=True, text=True, timeout=120)
    assert pulled.returncode == 0, pulled.stdout + pulled.stderr
    assert (root / "lessons" / "NEW.md").read_text() == "new lesson material\n"
    mine = json.loads((root / lesson).read_text(encoding="utf-8"))
    assert any(c.get("id") == "learner-note" for c in mine["cells"])
    assert "Updated by the course." in "".join(mine["cells"][0]["source"])
    assert not any(c.get("outputs") for c in mine["cells"])  # saved without outputs (lesson_save.py)


# --- the class on JupyterHub ---------------------------------------------------------------------------

def _run(*args, **kw):
    return subprocess.run([str(a) for a in args], capture_output=True, text=True, **kw)


def _remove_accounts():
    for name in [INSTRUCTOR, *CLASS]:
        try:
            uid = pwd.getpwnam(name).pw_uid
        except KeyError:
            continue
        for pid in _pids_of(uid):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        _run("userdel", name)
    for group in GROUPS.values():
        try:
            grp.getgrnam(group)
        except KeyError:
            continue
        _run("groupdel", group)


def _pids_of(uid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if entry.stat().st_uid == uid:
                    found.append(int(entry.name))
            except OSError:
                pass
    return found


def _as(hub: dict, user: str, *args, cwd: Path, env: dict, timeout: float = 240):
    """``args`` as ``user`` (a terminal in their server), in the hub's mount namespace when it has one."""
    account = pwd.getpwnam(user)
    full = {"HOME": account.pw_dir, "USER": user, "LOGNAME": user, "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin",
            "MPLBACKEND": "Agg", "COURSE_NO_PROGRESS": "1", "LANG": os.environ.get("LANG", "C.UTF-8"), **env}
    cmd = ["runuser", "-u", user, "--", "env", "-i", *[f"{k}={v}" for k, v in full.items()], *map(str, args)]
    if hub["namespaced"]:
        cmd = ["nsenter", f"--target={hub['proc'].pid}", "--mount", f"--wd={cwd}", "--", *cmd]
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def hub():
    if os.geteuid() != 0:
        unavailable("the class hub needs root: local accounts (useradd) and JupyterHub's LocalProcessSpawner")
    missing = [p for p in ("configurable-http-proxy", "useradd", "groupadd", "runuser", "unshare", "nsenter")
               if shutil.which(p) is None]
    if missing:
        unavailable(f"not installed: {', '.join(missing)} (npm install -g configurable-http-proxy; passwd)")
    for module in ("jupyterhub", "nbgitpuller"):
        if _run(sys.executable, "-c", f"import {module}").returncode:
            unavailable(f"{module} is not installed in {sys.prefix} (pip install 'ai-hardware-course[hub]')")
    tmp = Path(tempfile.mkdtemp(prefix="aihw-hub-"))
    tmp.chmod(0o755)
    _remove_accounts()
    proc = None
    try:
        for group in GROUPS.values():
            made = _run("groupadd", group)
            assert made.returncode == 0, made.stderr
        homes = tmp / "home"
        homes.mkdir(mode=0o755)
        for name in [INSTRUCTOR, *CLASS]:
            group = GROUPS["instructors" if name == INSTRUCTOR else "students"]
            made = _run("useradd", "-m", "-d", homes / name, "-G", group, "-s", "/bin/bash", name)
            assert made.returncode == 0, made.stderr
            (homes / name).chmod(0o700)  # what setup.sh sets: nobody reads another's home
        exchange = tmp / "exchange"
        exchange.mkdir()
        exchange.chmod(0o1777)
        # The instructor's course: the course's nbgrader_config.py with the small demo exercise.
        course = homes / INSTRUCTOR / "course"
        course.mkdir()
        shutil.copy2(REPO / "nbgrader_config.py", course / "nbgrader_config.py")
        shutil.copytree(HERE / "course" / "solutions", course / "solutions")
        _run("chown", "-R", f"{INSTRUCTOR}:{INSTRUCTOR}", course)
        # The submissions, built from the corpus as the demo course's tests build them.
        scratch = demo_course(tmp / "scratch")
        cases = corpus()
        notebooks = {}
        for student, case in CLASS.items():
            build(scratch, student, cases[case])
            notebooks[student] = json.loads(scratch.folder("submitted", student, ASSIGNMENT, "demo.ipynb").read_text())
        state = tmp / "hub"
        state.mkdir()
        port, token = free_port(), secrets.token_hex(24)
        config = tmp / "test_hub_config.py"
        config.write_text(
            f"load_subconfig({str(REPO / 'deploy' / 'jupyterhub' / 'jupyterhub_config.py')!r})\n"
            f"c.JupyterHub.hub_port = {free_port()}\n"
            f"c.ConfigurableHTTPProxy.api_url = 'http://127.0.0.1:{free_port()}'\n"
            f"c.JupyterHub.services = [{{'name': 'class-test', 'api_token': {token!r}}}]\n"
            "c.JupyterHub.load_roles = [{'name': 'class-test', 'services': ['class-test'], 'scopes': "
            "['admin:users', 'admin:servers', 'access:servers', 'list:users', 'read:users']}]\n")
        env = {**os.environ, "COURSE_ENV": sys.prefix, "COURSE_ID": COURSE_ID, "COURSE_EXCHANGE": str(exchange),
               "COURSE_INSTRUCTOR_GROUP": GROUPS["instructors"], "COURSE_STUDENT_GROUP": GROUPS["students"],
               "COURSE_HUB_DIR": str(state), "COURSE_HUB_URL": f"http://127.0.0.1:{port}"}
        env["PATH"] = f"{Path(sys.executable).parent}:{env.get('PATH', '/usr/bin:/bin')}"
        log = tmp / "hub.log"
        blocked = blocked_ancestors(pwd.getpwnam(INSTRUCTOR), [Path(sys.executable), Path(sys.prefix),
                                                                Path(sys.base_prefix), REPO])
        wrap = python_namespace(blocked, tmp) if blocked else []
        with open(log, "wb") as out:
            proc = subprocess.Popen([*wrap, sys.executable, "-m", "jupyterhub", "-f", str(config)], cwd=state, env=env,
                                    stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        base = f"http://127.0.0.1:{port}"
        wait_for(f"{base}/hub/api/", token, proc, log)
        yield {"base": base, "token": token, "tmp": tmp, "exchange": exchange, "course": course, "log": log,
               "notebooks": notebooks, "proc": proc, "namespaced": bool(blocked)}
    finally:
        if proc is not None:
            stop(proc)
        _remove_accounts()
        shutil.rmtree(tmp, ignore_errors=True)


def test_class_on_jupyterhub(hub, monkeypatch):
    base, token, course, exchange = hub["base"], hub["token"], hub["course"], hub["exchange"]
    api = f"{base}/hub/api"
    users = [INSTRUCTOR, *CLASS]
    status, body = request(f"{api}/users", token, "POST", data={"usernames": users})
    assert status in (201, 409), (status, body, hub["log"].read_text(errors="replace")[-4000:])
    for name in users:
        status, body = request(f"{api}/users/{name}/server", token, "POST")
        assert status in (201, 202), (name, status, body, hub["log"].read_text(errors="replace")[-4000:])
    end = time.monotonic() + START_S
    waiting = set(users)
    while waiting and time.monotonic() < end:
        for name in sorted(waiting):
            model = json.loads(request(f"{api}/users/{name}", token)[1])
            if (model.get("servers", {}).get("") or {}).get("ready"):
                waiting.discard(name)
        time.sleep(1)
    assert not waiting, f"servers not ready: {waiting}\n{hub['log'].read_text(errors='replace')[-3000:]}"

    def user(name, path, **kw):
        return request(f"{base}/user/{name}/{path}", token, **kw)

    # The instructor has the formgrader on an empty course; students have no formgrader.
    status, body = user(INSTRUCTOR, "formgrader/api/assignments")
    assert status == 200, body[-2000:]
    for student in CLASS:
        assert user(student, "formgrader/api/assignments")[0] == 404
        assert json.loads(user(student, f"assignments?course_id={COURSE_ID}")[1]) == {"success": True, "value": []}

    # The site's "open on your class's JupyterHub" button (launch.hub_link) on this hub, for a course repository the
    # hub reaches: nbgitpuller clones it into the student's home, and the notebook the link opens is there.
    student, lesson = list(CLASS)[0], "lessons/01_devices/01_devices.en.ipynb"
    upstream = hub["tmp"] / "course-upstream"
    (upstream / lesson).parent.mkdir(parents=True)
    shutil.copy2(REPO / lesson, upstream / lesson)
    git = ["git", "-c", "user.name=course", "-c", "user.email=course@example.org", "-C", str(upstream)]
    for step in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "course"]):
        assert _run(*git, *step).returncode == 0, step
    _run("chown", "-R", f"{student}:{student}", upstream)  # git serves a repository its owner runs
    settings = dict(launch.settings(), repository=str(upstream))
    monkeypatch.setattr(launch, "settings", lambda: settings)
    link = urllib.parse.urlsplit(launch.hub_link(base, lesson))
    assert link.path == "/hub/user-redirect/git-pull"  # the hub sends each user to their own server's git-pull
    query = urllib.parse.parse_qs(link.query)
    status, body = user(student, f"git-pull?{link.query}")  # nbgitpuller's page, which then calls its api
    assert status == 200, body[-2000:]
    status, body = user(student, "git-pull/api?" + urllib.parse.urlencode(
        {"repo": query["repo"][0], "branch": query["branch"][0]}), timeout=120)
    assert status == 200 and b'"phase": "finished"' in body, body[-2000:]
    opened = query["urlpath"][0].removeprefix("lab/tree/")
    assert opened == f"course-upstream/{lesson}"
    assert user(student, f"api/contents/{opened}")[0] == 200

    # Release from the formgrader (Generate, then Release), as the instructor clicks.
    for action in ("assign", "release"):
        status, body = user(INSTRUCTOR, f"formgrader/api/assignment/{ASSIGNMENT}/{action}", method="POST")
        assert status == 200 and json.loads(body).get("success"), (action, body[-2000:])

    # Each student: the Assignments panel lists it, fetch, work (contents API), submit.
    for student, notebook in hub["notebooks"].items():
        listed = json.loads(user(student, f"assignments?course_id={COURSE_ID}")[1])
        assert listed["success"] and [a["status"] for a in listed["value"]] == ["released"], listed
        form = {"course_id": COURSE_ID, "assignment_id": ASSIGNMENT}
        status, body = user(student, "assignments/fetch", method="POST", form=form)
        assert status == 200 and json.loads(body)["success"], body[-2000:]
        path = f"api/contents/{COURSE_ID}/{ASSIGNMENT}/demo.ipynb"
        assert user(student, path)[0] == 200
        status, body = user(student, path, method="PUT", data={"type": "notebook", "format": "json", "content": notebook})
        assert status == 200, body[-1000:]
        status, body = user(student, "assignments/submit", method="POST", form=form)
        assert status == 200 and json.loads(body)["success"], body[-2000:]

    # The instructor's terminal: the course's own commands on the exchange, on COURSE_ROOT as the hub sets it.
    env = {"COURSE_ID": COURSE_ID, "COURSE_EXCHANGE": str(exchange), "COURSE_ROOT": str(course)}
    grades = course / "grades.csv"
    roster = course / "roster.csv"
    roster.write_text("id,first_name,last_name,email\n" + "".join(f"{s},,,\n" for s in CLASS), encoding="utf-8")
    for step in (["roster", roster], ["collect", ASSIGNMENT], ["grade", ASSIGNMENT, "--workers", "2", "--notebook-timeout", "300"],
                 ["feedback", ASSIGNMENT, "--release"], ["export", "--to", grades]):
        done = _as(hub, INSTRUCTOR, sys.executable, "-m", "autograder", "instructor", *step, cwd=course, env=env, timeout=300)
        assert done.returncode == 0, (step, done.stdout[-3000:], done.stderr[-3000:])
    for student in CLASS:
        assert (course / "submitted" / student / ASSIGNMENT / "demo.ipynb").is_file(), student
    with open(grades, encoding="utf-8") as f:
        rows = {r["student_id"]: r for r in csv.DictReader(f) if r["assignment"] == ASSIGNMENT}
    assert set(rows) == set(CLASS), rows
    cases = corpus()
    for student, case in CLASS.items():
        assert float(rows[student]["score"]) == pytest.approx(cases[case]["score"]), (student, rows[student])
        assert float(rows[student]["max_score"]) == 6
        assert rows[student]["status"] not in ("missing", "refused", "error"), rows[student]

    # Nobody reads another's work: not the exchange's inbound, not a home, not the instructor's course.
    s1, s2 = list(CLASS)[:2]
    probe = ("import os, sys\nfor p in sys.argv[1:]:\n    try:\n        os.listdir(p) if os.path.isdir(p) else open(p).read()\n"
             "        print('READ', p)\n    except PermissionError:\n        pass\n")
    secret_paths = [exchange / COURSE_ID / "inbound", exchange / COURSE_ID / "feedback",
                    hub["tmp"] / "home" / s2, hub["tmp"] / "home" / s2 / COURSE_ID / ASSIGNMENT / "demo.ipynb",
                    hub["tmp"] / "home" / INSTRUCTOR, course / "solutions" / ASSIGNMENT / "demo.ipynb",
                    course / ".nbgrader" / "gradebook.db"]
    seen = _as(hub, s1, sys.executable, "-c", probe, *secret_paths, cwd=Path("/"), env={})
    assert seen.returncode == 0 and "READ" not in seen.stdout, seen.stdout + seen.stderr

    # Each student fetches their feedback from the Assignments panel's endpoint.
    for student in CLASS:
        form = {"course_id": COURSE_ID, "assignment_id": ASSIGNMENT}
        status, body = user(student, "assignments/fetch_feedback", method="POST", form=form)
        assert status == 200 and json.loads(body)["success"], body[-2000:]
        home = hub["tmp"] / "home" / student
        pages = list((home / COURSE_ID / ASSIGNMENT / "feedback").glob("*/demo.html"))
        assert len(pages) == 1, (student, body[-2000:])
        text = pages[0].read_text(encoding="utf-8")
        assert str(cases[CLASS[student]]["score"]) in text or f"{float(cases[CLASS[student]]['score']):g}" in text
        assert pages[0].stat().st_uid == pwd.getpwnam(student).pw_uid

    # Tear down the servers through the Hub; the fixture stops the Hub and the proxy.
    for name in users:
        assert request(f"{api}/users/{name}/server", token, "DELETE")[0] in (202, 204)
