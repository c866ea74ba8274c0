"""The learner edition (``instructor edition``): no solution, hidden test or reference in it, and every
visible check gives ✅ to the reference solution inside the edition's own install."""
import ast
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from autograder import layout
from autograder.grading.course import GradingError
from autograder.grading.edition import write

REPO = Path(__file__).resolve().parent.parent
MIN_CHARS = 24  # shorter lines (`return out`, `scaler.update()`) say nothing about an answer
SHARED_LINES = 3  # a unit leaks when this many of its lines (or all, if it has fewer) sit in one file of the edition
TEXT = {".py", ".ipynb", ".md", ".yaml", ".yml", ".json", ".toml", ".txt", ".csv", ".html", ".cfg", ""}


@pytest.fixture(scope="module")
def edition(tmp_path_factory) -> Path:
    return write(tmp_path_factory.mktemp("edition") / "course")


def _regions(source: str, begin: str, end: str) -> list[str]:
    lines, inside, out = source.splitlines(), False, []
    for line in lines:
        if begin in line:
            inside = True
        elif end in line:
            inside = False
        elif inside:
            out.append(line)
    return out


def _distinctive(lines) -> list[str]:
    """Stripped lines long enough to say something, imports and comments left out."""
    out = []
    for line in lines:
        line = line.strip()
        if len(line) >= MIN_CHARS and not line.startswith(("#", "import ", "from ")):
            out.append(line)
    return list(dict.fromkeys(out))


def _measurement(task_ids) -> bool:
    from autograder.checks import task
    return any(task(t).measurement for t in task_ids)


def secret_units() -> dict[str, list[str]]:
    """Each solution region, hidden-test block and reference function -> its distinctive lines.

    Measurement tasks are exempt, with the reference functions their solutions define and call: they are
    graded side by side with the course's own measurement, which a learner's install carries by design.
    """
    units, exempt = {}, set()
    for path in layout.exercises("solutions", REPO):
        cells, pending = nbformat.read(path, as_version=4).cells, []
        for cell in cells:
            meta = cell.metadata.get("nbgrader", {})
            where = f"{path.relative_to(REPO)} ({meta.get('grade_id')})"
            lines = _regions(cell.source, "### BEGIN SOLUTION", "### END SOLUTION")
            if cell.cell_type == "markdown" and meta.get("solution"):
                lines = cell.source.splitlines()
            if lines:
                units[where] = _distinctive(lines)
                pending.append((where, cell.source))
            hidden = _regions(cell.source, "### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS")
            if hidden:
                units[where + " hidden tests"] = _distinctive(hidden)
            if cell.cell_type == "code" and meta.get("grade"):
                if _measurement(re.findall(r'check\("([\w.]+)"', cell.source)):
                    for name, source in pending:
                        units.pop(name, None)
                        exempt.update(re.findall(r"^def (\w+)", source, re.M))
                pending = []
    for path in sorted((REPO / "course_answers").glob("*.py")):
        text = path.read_text(encoding="utf-8")
        functions = {n.name: ast.get_source_segment(text, n) for n in ast.walk(ast.parse(text))
                     if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
        called = {name for name, source in functions.items() if name in exempt
                  for other in functions if f"{other}(" in source for name in (other,)}
        for name, source in functions.items():
            if name not in exempt and name not in called:
                units[f"{path.relative_to(REPO)} ({name})"] = _distinctive(source.splitlines()[1:])
    return {where: lines for where, lines in units.items() if lines}


def edition_lines(root: Path) -> dict[str, str]:
    """Every stripped line of every text file in the edition (notebooks: cell sources) -> the first file with it."""
    out = {}
    for path in sorted(p for p in root.rglob("*") if p.is_file() and p.suffix in TEXT):
        if path.suffix == ".ipynb":
            text = "\n".join(c.source for c in nbformat.read(path, as_version=4).cells)
        else:
            text = path.read_text(encoding="utf-8", errors="replace")
        for line in text.splitlines():
            out.setdefault(line.strip(), str(path.relative_to(root)))
    return out


def test_the_edition_holds_the_learners_part_only(edition):
    assert sorted(p.name for p in edition.iterdir()) == sorted(
        [".gitignore", "LICENSE", "README.md", "autograder", "environment.yml", "exercises", "lessons",
         "nbgrader_config.py", "pyproject.toml"])
    assert not list(edition.rglob("course_answers")) and not list(edition.rglob("solutions"))
    assert not list(edition.rglob("__pycache__")) and not list(edition.rglob("answers"))
    assert 'include = ["autograder*"]' in (edition / "pyproject.toml").read_text()
    readme = (edition / "README.md").read_text(encoding="utf-8")
    assert "learner edition" in readme and "수강생용" in readme and "docs/instructor.md" not in readme
    assert all(path.exists() for path in layout.exercises("exercises", edition))
    assert sorted({p.parent.name for p in edition.glob("exercises/*/*.ipynb")}) == [
        m.id for m in layout.modules(REPO, "exercise")]
    assert all(path.with_suffix(f".{lang}.ipynb").exists() for path in layout.exercises("exercises", edition)
               for lang in ("ko", "en")), "an exercise without its Korean or English notebook"


def test_no_solution_hidden_test_or_reference_text_is_in_the_edition(edition):
    units, seen = secret_units(), edition_lines(edition)
    assert len(units) > 100  # the scan has something to look for
    leaks = []
    for where, lines in units.items():
        by_file: dict[str, list[str]] = {}
        for line in lines:
            if line in seen:
                by_file.setdefault(seen[line], []).append(line)
        for found, shared in by_file.items():
            if len(shared) >= min(SHARED_LINES, len(lines)):
                leaks.append(f"{where} -> {found}: " + " | ".join(shared[:4]))
    assert not leaks, "text of the instructor's part in the learner edition:\n" + "\n".join(sorted(leaks))


def test_an_edition_is_written_into_an_empty_folder_outside_the_course(tmp_path):
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("x")
    with pytest.raises(GradingError, match="not empty"):
        write(tmp_path / "full")
    with pytest.raises(GradingError, match="inside the course folder"):
        write(REPO / "build" / "edition")


RUN = r"""
import json, sys
import nbformat
from nbclient import NotebookClient
nb = nbformat.read(sys.argv[1], as_version=4)
NotebookClient(nb, timeout=600, kernel_name="learner-edition", allow_errors=True,
               resources={"metadata": {"path": sys.argv[2]}}).execute()
import autograder, importlib.util
cells = [{"grade_id": c.metadata.get("nbgrader", {}).get("grade_id"), "grade": c.metadata.get("nbgrader", {}).get("grade", False),
          "text": "".join(o.get("text", "") for o in c.get("outputs", [])),
          "errors": [o.get("ename", "") + ": " + o.get("evalue", "")[:400] for o in c.get("outputs", []) if o.get("output_type") == "error"]}
         for c in nb.cells if c.cell_type == "code"]
print(json.dumps({"cells": cells, "package": autograder.__file__, "answers": importlib.util.find_spec("course_answers") is not None}))
"""


@pytest.fixture(scope="module")
def learner_python(edition, tmp_path_factory) -> Path:
    """A fresh virtual environment with the edition installed (not editable); the course's dependencies
    come from this interpreter's site-packages as a plain path (so the instructor's editable install,
    course_answers included, is not active there)."""
    venv = tmp_path_factory.mktemp("learner") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    deps = [p for p in sys.path if p.endswith("site-packages") and Path(p).is_dir()]
    Path(site, "course_dependencies.pth").write_text("\n".join(deps) + "\n")
    done = subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
                           "--no-index", str(edition)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    spec = venv / "share" / "jupyter" / "kernels" / "learner-edition"  # a kernel that runs this interpreter
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({"argv": [str(python), "-m", "ipykernel_launcher", "-f",
                                                           "{connection_file}"], "display_name": "learner edition",
                                                  "language": "python"}))
    return python


def with_solutions(exercise: Path, solution: Path) -> nbformat.NotebookNode:
    """The student version with the reference solution pasted into its answer cells (by grade id)."""
    answers = {c.metadata["nbgrader"]["grade_id"]: c.source for c in nbformat.read(solution, as_version=4).cells
               if c.metadata.get("nbgrader", {}).get("solution")}
    nb = nbformat.read(exercise, as_version=4)
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("solution") and cell.cell_type == "code":
            cell.source = answers[meta["grade_id"]]
    return nb


@pytest.mark.parametrize("assignment", [m.id for m in layout.modules(REPO, "exercise")])
def test_every_visible_check_passes_the_reference_solution_in_the_learners_install(
        edition, learner_python, assignment, tmp_path):
    folder = edition / "exercises" / assignment
    pasted = tmp_path / layout.exercise(assignment).name
    nbformat.write(with_solutions(layout.exercise(assignment, "exercises", edition),
                                  layout.exercise(assignment, "solutions", REPO)), pasted)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("COURSE_", "NBGRADER_", "PYTHONPATH"))}
    done = subprocess.run([str(learner_python), "-c", RUN, str(pasted), str(folder)], capture_output=True, text=True, cwd=tmp_path,
                          timeout=1200, env={**env, "COURSE_LANG": "en", "COURSE_NO_PROGRESS": "1",
                                             "JUPYTER_PATH": str(learner_python.parent.parent / "share" / "jupyter")})
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert not out["answers"] and Path(out["package"]).is_relative_to(learner_python.parent.parent), out["package"]
    graded = [c for c in out["cells"] if c["grade"]]
    assert graded, "no check cells found"
    for cell in out["cells"]:
        assert not cell["errors"], f"{assignment} {cell['grade_id']}: {cell['errors']}"
    for cell in graded:
        assert "✅" in cell["text"], f"{assignment} {cell['grade_id']}: {cell['text'][-600:]}"
