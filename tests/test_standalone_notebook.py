"""A notebook opened alone (issue 32, part 3): in a fresh virtual environment with only PyTorch (CPU), pip and
ipykernel, a lesson and an exercise copied alone into an empty folder get ready from their first cell, which installs
the course package (a wheel built from this checkout, through COURSE_PACKAGE, the one thing the test changes); the
exercise's checks give the verdicts they give in a clone; and the exercise is handed in from a cell."""
import ast
import json
import os
import re
import subprocess
import sys
import types
import zipfile
from pathlib import Path

import nbformat
import pytest
import torch

from autograder import hardware, layout, profiles, standalone
from autograder.fakes.devices import fake_torch
from autograder.grading.edition import wheel

ROOT = Path(__file__).resolve().parent.parent
LESSON = layout.lesson("02_gpu_architecture", "en", ROOT)  # one of the quickest lessons
EXERCISE = "04_training_memory"  # no measurement task: its verdicts do not depend on the machine's load
TORCH = torch.__version__.split("+")[0]
DONE = re.compile(r"done \((\d+) s\)")

RUNNER = """
import json, sys, time, nbformat
from nbclient import NotebookClient
nb = nbformat.read(sys.argv[1], as_version=4)
seconds = {}
def timed(cell, cell_index, **_):
    seconds[cell_index] = time.monotonic() - started[cell_index]
started = {}
def start(cell, cell_index, **_):
    started[cell_index] = time.monotonic()
NotebookClient(nb, timeout=600, kernel_name=sys.argv[3], allow_errors=True, on_cell_start=start,
               on_cell_executed=timed, resources={"metadata": {"path": sys.argv[2]}}).execute()
nbformat.write(nb, sys.argv[4])
print(json.dumps(seconds))
"""


def check_cells(nb) -> list[dict]:
    """Each check cell's verdict: its task, the mark it printed (✅ 🟡 ❌) and the error it raised, if any."""
    out = []
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if cell.cell_type == "code" and meta.get("grade") and not meta.get("solution"):
            text = "".join(o.get("text", "") for o in cell.outputs if o.get("output_type") == "stream")
            marks = [m for m in ("✅", "🟡", "❌") if m in text]
            errors = [o["ename"] for o in cell.outputs if o.get("output_type") == "error"]
            out.append({"cell": meta["grade_id"], "mark": marks[:1], "errors": errors})
    return out


def with_solutions(nb):
    """The student notebook with the reference solutions (solutions/) pasted into its answer cells."""
    answers = {c.metadata["nbgrader"]["grade_id"]: c.source
               for c in nbformat.read(layout.exercise(EXERCISE, "solutions", ROOT), as_version=4).cells
               if c.metadata.get("nbgrader", {}).get("solution")}
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("solution") and cell.cell_type == "code":
            cell.source = answers[meta["grade_id"]]
    return nb


def student() -> nbformat.NotebookNode:
    return nbformat.read(layout.in_language(layout.exercise(EXERCISE, "exercises", ROOT), "en"), as_version=4)


@pytest.fixture(scope="module")
def bare(tmp_path_factory):
    """A fresh venv with only PyTorch (this test's version, CPU build where pip's indexes give it), pip and
    ipykernel, a kernel spec that runs it, and the course's wheel built from this checkout."""
    tmp = tmp_path_factory.mktemp("bare")
    built = wheel(tmp / "dist")
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    python = venv / "bin" / "python"
    done = subprocess.run([str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check",
                           f"torch=={TORCH}", "ipykernel"], capture_output=True, text=True, timeout=1200, env=alone())
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    spec = tmp / "jupyter" / "kernels" / "bare"
    spec.mkdir(parents=True)
    spec.joinpath("kernel.json").write_text(json.dumps({"argv": [str(python), "-m", "ipykernel_launcher", "-f",
                                                                 "{connection_file}"],
                                                        "display_name": "bare PyTorch", "language": "python"}))
    return types.SimpleNamespace(python=python, wheel=built, tmp=tmp, cache=tmp / "pip-cache")


def alone() -> dict:
    """This process's environment without what would find the course (PYTHONPATH) or steer it."""
    return {k: v for k, v in os.environ.items() if not k.startswith(("COURSE_", "NBGRADER_", "PYTHONPATH", "JPY_"))}


def run_alone(bare, nb, name: str, folder: Path, **env) -> tuple[nbformat.NotebookNode, dict]:
    """Run ``nb``, written as ``folder/name`` (an otherwise empty folder), in the bare venv's kernel; (the executed
    notebook, {cell index: seconds})."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    nbformat.write(nb, path)
    clean = alone()
    clean.update(COURSE_PACKAGE=str(bare.wheel), PIP_CACHE_DIR=str(bare.cache), MPLBACKEND="Agg",
                 COURSE_NO_PROGRESS="1", JUPYTER_PATH=str(bare.tmp / "jupyter"), **env)
    out = bare.tmp / f"out-{name}"
    done = subprocess.run([sys.executable, "-c", RUNNER, str(path), str(folder), "bare", str(out)], env=clean,
                          cwd=folder, capture_output=True, text=True, timeout=1500)
    assert done.returncode == 0, done.stderr[-3000:]
    seconds = {int(k): v for k, v in json.loads(done.stdout.strip().splitlines()[-1]).items()}
    return nbformat.read(out, as_version=4), seconds


def run_in_clone(nb, folder: Path) -> nbformat.NotebookNode:
    """Run ``nb`` in this checkout's kernel (the course package importable: the set-up cell does nothing)."""
    from nbclient import NotebookClient
    folder.mkdir(parents=True, exist_ok=True)
    NotebookClient(nb, timeout=600, kernel_name="python3", allow_errors=True,
                   resources={"metadata": {"path": str(folder)}}).execute()
    return nb


def errors(nb) -> list[str]:
    return [f"cell {i}: {o['ename']}: {o['evalue'][:300]}" for i, c in enumerate(nb.cells) if c.cell_type == "code"
            for o in c.outputs if o.get("output_type") == "error"]


def installed(python: Path) -> set[str]:
    done = subprocess.run([str(python), "-m", "pip", "freeze", "--disable-pip-version-check"], capture_output=True,
                          text=True, check=True, env=alone())
    return {line.split("==")[0].split(" @ ")[0].lower() for line in done.stdout.splitlines() if line}


def test_a_notebook_opened_alone_gets_ready_checks_and_hands_in(bare, tmp_path, capsys):
    before = installed(bare.python)
    assert not {"ai-hardware-course", "numpy", "matplotlib"} & before  # nothing of the course yet

    # The lesson, alone: its first cell installs the package (cold pip cache), and every cell runs.
    lesson, seconds = run_alone(bare, nbformat.read(LESSON, as_version=4), LESSON.name, tmp_path / "lesson")
    assert lesson.cells[0].id == standalone.CELL_ID
    assert not errors(lesson), errors(lesson)
    first = lesson.cells[0].outputs
    assert {o.get("name") for o in first} == {"stdout"}  # one line of progress, nothing on stderr
    text = "".join(o["text"] for o in first)
    assert text.startswith("Installing the course package ai-hardware-course") and DONE.search(text), text
    cold = seconds[0]

    # The exercise, alone, with the reference answers: the cell installs again from a warm cache (what the lesson's
    # cell installed is removed first), every check passes, and the hand-in from a cell writes the zip.
    added = installed(bare.python) - before
    assert "ai-hardware-course" in added
    subprocess.run([str(bare.python), "-m", "pip", "uninstall", "-y", "-q", "--disable-pip-version-check", *added],
                   check=True, capture_output=True, env=alone())
    folder = tmp_path / "exercise"
    name = layout.in_language(layout.exercise(EXERCISE, "exercises", ROOT), "en").name
    reference = with_solutions(student())
    reference.cells.append(nbformat.v4.new_code_cell(
        'from autograder.standalone import submit_here\nzip_path = submit_here("kim01")'))
    done, seconds = run_alone(bare, reference, name, folder, JPY_SESSION_NAME=f"exercises/{EXERCISE}/{name}")
    warm = seconds[0]
    assert DONE.search("".join(o.get("text", "") for o in done.cells[0].outputs))
    verdicts = check_cells(done)
    assert verdicts and all(v["mark"] == ["✅"] and not v["errors"] for v in verdicts), verdicts
    hand_in = "".join(o.get("text", "") for o in done.cells[-1].outputs)
    assert "Every task is attempted and passes its visible check" in hand_in and not errors(done), hand_in
    with zipfile.ZipFile(folder / f"kim01__{EXERCISE}.zip") as archive:
        assert sorted(archive.namelist()) == [f"{EXERCISE}_exercise.ipynb", standalone.MANIFEST]
        manifest = json.loads(archive.read(standalone.MANIFEST))
        assert (manifest["student"], manifest["assignment"]) == ("kim01", EXERCISE)
        assert archive.read(f"{EXERCISE}_exercise.ipynb") == (folder / name).read_bytes()

    # In a clone the same notebook gives the same verdicts; with the stubs, alone (the package is installed now:
    # the set-up cell does nothing) and in a clone, none passes, alike.
    assert check_cells(run_in_clone(with_solutions(student()), tmp_path / "clone")) == verdicts
    stubs, _ = run_alone(bare, student(), name, tmp_path / "stubs")
    assert stubs.cells[0].outputs == []
    assert all(v["mark"] != ["✅"] for v in check_cells(stubs)), check_cells(stubs)
    assert check_cells(run_in_clone(student(), tmp_path / "clone-stubs")) == check_cells(stubs)

    with capsys.disabled():
        print(f"\n[standalone] the set-up cell's install: {cold:.1f} s with a cold pip cache, {warm:.1f} s warm "
              f"({len(added)} packages beside PyTorch)")


# ------------------------------------------------------------------ the cell itself, the hand-in on Colab, the T4
def test_every_notebook_starts_with_the_set_up_cell_of_its_language_and_version():
    at = standalone.version(ROOT)
    notebooks = [*layout.lessons("ko", ROOT), *layout.lessons("en", ROOT), *layout.exercises("exercises", ROOT)]
    notebooks += [layout.in_language(p, lang) for p in layout.exercises("exercises", ROOT) for lang in ("ko", "en")]
    assert len(notebooks) == 2 * len(layout.lesson_sources(ROOT)) + 3 * len(layout.exercises("exercises", ROOT))
    for path in notebooks:
        first = nbformat.read(path, as_version=4).cells[0]
        lang = nbformat.read(path, as_version=4).metadata.get("language")
        assert first.id == standalone.CELL_ID and first.source == standalone.setup_source(lang, at), path
        assert f"ai-hardware-course=={at}" in first.source and not first.metadata.get("editable", True)
    assert "==9.9.9" in standalone.setup_source("en", "9.9.9")  # a version bump changes every notebook's cell


def test_the_set_up_cell_is_short_stdlib_only_and_does_nothing_where_the_package_is(capsys):
    for lang in ("ko", "en", None):
        source = standalone.setup_source(lang)
        assert len(source.splitlines()) <= 12
        imported = {alias.name.split(".")[0] for node in ast.walk(ast.parse(source))
                    if isinstance(node, ast.Import) for alias in node.names}
        assert imported <= set(sys.stdlib_module_names), imported
        exec(compile(source, "<set-up>", "exec"), {})
        assert capsys.readouterr() == ("", "")


def test_a_failed_install_says_what_to_do_in_the_notebooks_language(monkeypatch, capsys):
    import importlib.util
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None)
    monkeypatch.setenv("COURSE_PACKAGE", "/nowhere/ai_hardware_course-0.0.0-py3-none-any.whl")
    for lang, says in (("ko", "인터넷 연결을 확인하고"), ("en", "Check the internet connection")):
        with pytest.raises(RuntimeError, match=says):
            exec(compile(standalone.setup_source(lang), "<set-up>", "exec"), {})
        assert capsys.readouterr().err == ""


@pytest.fixture
def colab(monkeypatch):
    """A fake ``google.colab``: the page's notebook JSON, and the downloads it was asked for."""
    page = types.SimpleNamespace(downloads=[], ipynb=None)
    message = types.ModuleType("google.colab._message")
    message.blocking_request = lambda kind, timeout_sec=None: {"ipynb": page.ipynb} if kind == "get_ipynb" else None
    files = types.ModuleType("google.colab.files")
    files.download = page.downloads.append
    package = types.ModuleType("google.colab")
    package._message, package.files = message, files
    google = types.ModuleType("google")
    google.colab = package
    for name, module in {"google": google, "google.colab": package, "google.colab._message": message,
                         "google.colab.files": files}.items():
        monkeypatch.setitem(sys.modules, name, module)
    return page


@pytest.fixture
def english(monkeypatch):
    from autograder import i18n
    monkeypatch.setattr(i18n, "_chosen", "en")


def test_submit_here_on_colab_packs_the_pages_notebook_and_offers_it(colab, english, tmp_path, capsys):
    from autograder.checks import VERDICTS
    nb = with_solutions(student())
    colab.ipynb = json.loads(nbformat.writes(nb))
    VERDICTS.clear()
    out = standalone.submit_here("kim01", to=tmp_path)
    assert out == tmp_path / f"kim01__{EXERCISE}.zip" and colab.downloads == [str(out)]
    with zipfile.ZipFile(out) as archive:
        assert json.loads(archive.read(f"{EXERCISE}_exercise.ipynb")) == colab.ipynb
    said = capsys.readouterr().out
    assert said.count("Not checked in this kernel yet") == len([g for g in standalone.tasks_of(nb) if g.task])
    assert "downloads the zip" in said
    with pytest.raises(standalone.HandInError, match="student id"):
        standalone.submit_here("", to=tmp_path)
    with pytest.raises(standalone.HandInError, match="gimminjun"):  # the one id rule, with its suggestion
        standalone.submit_here("김민준", to=tmp_path)


def test_submit_here_without_a_notebook_it_can_find_says_to_give_the_path(monkeypatch, english, tmp_path):
    monkeypatch.delenv("JPY_SESSION_NAME", raising=False)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(standalone.HandInError, match="path="):
        standalone.submit_here("kim01")
    lesson = tmp_path / LESSON.name
    lesson.write_bytes(LESSON.read_bytes())
    with pytest.raises(standalone.HandInError, match="no check cell"):
        standalone.submit_here("kim01", path=lesson)


def test_colabs_t4_is_a_cuda_device_with_a_sourced_profile():
    t4 = fake_torch(gpus=[{"name": "Tesla T4", "total_memory": 15 * 2**30, "major": 7, "minor": 5, "sms": 40}])
    assert hardware.best_device(torch=t4) == "cuda"
    profile = profiles.match(t4.cuda.get_device_name(0))
    assert profile is not None and profile.id == "t4"
    assert profile.get("sms") == 40 and profile.memory_gib == 16 and profile.peak("float16") == 65
    assert any("t4-tensor-core-datasheet" in s for s in profile.sources)
    assert not profile.sparse_tflops and "no bf16, tf32 or sparsity" in profile.get("notes")  # dense figures only
