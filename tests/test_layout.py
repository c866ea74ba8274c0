"""The shape of the package: a module is one folder, modules never reach into each other (what they share is the
core's knowledge layer), the core knows no module, the instructor's answers stay apart, and every module's
``expected.json`` is fresh."""
import ast
import json
from pathlib import Path

import nbformat
import pytest

from autograder import layout, modules
from autograder.checks import expected

REPO = Path(__file__).resolve().parent.parent
PACKAGE = REPO / "autograder"
ANSWERS = REPO / "course_answers"


def imported(path: Path, root: Path = REPO) -> set[str]:
    """Absolute names of everything a Python file of the course at ``root`` imports (relative imports resolved)."""
    package = list(path.relative_to(root).with_suffix("").parts)[:-1]
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            stem = ".".join(base + ([node.module] if node.module else []))
            names.update(f"{stem}.{a.name}" for a in node.names)
            names.add(stem)
    return names


def module_of(name: str) -> str | None:
    """The module folder an import name reaches into (``autograder.modules.m04_x...`` -> ``m04_x``)."""
    parts = name.split(".")
    return parts[2] if parts[:2] == ["autograder", "modules"] and len(parts) > 2 and parts[2][:1] == "m" else None


def code_of(notebook: Path) -> str:
    cells = nbformat.read(notebook, as_version=4).cells
    return "\n".join(c.source for c in cells if c.cell_type == "code")


def test_the_records_and_the_folders_agree():
    """Each module's record (``autograder/data/modules.json``) names exactly the folders and files it has."""
    problems = layout.problems(REPO)
    assert not problems, "\n".join(problems)


def test_a_module_is_found_by_any_of_its_names():
    for m in layout.modules(part="package"):
        for name in (m.id, m.package, m.short):
            assert layout.module(name) == m, name
    assert layout.module(4) == layout.module("04") == layout.module("m04_training_memory")
    with pytest.raises(ValueError, match="00_start_here, 00_demo"):
        layout.module("00")  # the start page and the grading demo share 00: the full name says which
    with pytest.raises(ValueError, match="no such module '99'.*known: 00_start_here"):
        layout.module("99")


def test_every_module_is_one_folder_with_its_tasks():
    assert set(modules.folders()) == {m.short for m in layout.modules(part="package")}
    for module_id, folder in modules.folders().items():
        assert (PACKAGE / "modules" / folder / "tasks.py").exists(), folder
        assert not (PACKAGE / "checks" / f"{module_id}.py").exists(), f"{module_id}: tasks belong in its folder"
    assert not (PACKAGE / "answers").exists(), "reference answers belong in course_answers/"


def test_modules_import_only_the_core_and_themselves():
    for folder in modules.folders().values():
        for path in (PACKAGE / "modules" / folder).rglob("*.py"):
            for name in imported(path):
                assert module_of(name) in (None, folder), f"{path.relative_to(REPO)} imports {name}"
                assert not name.startswith("course_answers"), f"{path.relative_to(REPO)} imports {name}"


def test_what_modules_share_sits_below_them_all():
    """The one place modules share rules: the core's knowledge layer, which imports nothing of the course but the
    YAML loader (so any module, answer or lesson can read it without reaching into another module)."""
    course = {name for name in imported(PACKAGE / "knowledge.py") if name.startswith("autograder")}
    assert course == {"autograder.datafile", "autograder.datafile.read_yaml"}


def test_the_core_knows_no_module():
    for path in PACKAGE.rglob("*.py"):
        if (PACKAGE / "modules") in path.parents:
            continue
        for name in imported(path):
            assert module_of(name) is None, f"{path.relative_to(REPO)} imports {name}"
            assert not name.startswith("course_answers"), f"{path.relative_to(REPO)} imports {name}"


def test_answers_import_the_core_and_their_own_module():
    for path in ANSWERS.glob("*.py"):
        for name in imported(path):
            assert module_of(name) in (None, path.stem), f"{path.relative_to(REPO)} imports {name}"
            assert not name.startswith("course_answers."), f"{path.relative_to(REPO)} imports {name}"
        if path.stem != "__init__":
            assert path.stem in modules.folders().values(), f"{path.name} names no module folder"


@pytest.mark.parametrize("kind", ["lessons", "exercises", "solutions"])
def test_notebooks_import_the_core_and_their_own_module(kind):
    found = [*layout.lessons("ko", REPO), *layout.lessons("en", REPO)] if kind == "lessons" else layout.exercises(kind, REPO)
    for notebook in found:
        own = layout.module(notebook.parent.name).package
        for node in ast.walk(ast.parse(_python(code_of(notebook)))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            for name in names:
                assert module_of(name) in (None, own), f"{notebook.relative_to(REPO)} imports {name}"
                assert not name.startswith(("course_answers", "autograder.answers")), \
                    f"{notebook.relative_to(REPO)} imports {name}"


def _python(code: str) -> str:
    """Notebook code without IPython magics and shell lines."""
    return "\n".join("" if line.lstrip().startswith(("%", "!")) else line for line in code.splitlines())


@pytest.mark.parametrize("module_id", sorted(modules.folders()))
def test_expected_answers_of_visible_cases_are_fresh(module_id):
    path = modules.path(module_id) / expected.FILE
    hint = f"run: python -m autograder instructor generate {layout.module(module_id).id} (or write_expected({module_id!r}))"
    assert path.exists(), f"{path.relative_to(REPO)} is missing: {hint}"
    assert expected.same(json.loads(path.read_text(encoding="utf-8")), expected.table(module_id)), \
        f"{path.relative_to(REPO)} is stale: {hint}"
