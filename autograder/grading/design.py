"""How each exercise is built: its tasks' kinds and levels, the known mistakes their visible checks name, and how
much of each reference answer a learner could copy from the lesson (``python -m autograder instructor tasks``).

Copying is measured as the share of a reference answer's tokens (names, numbers, strings and operators, counted
with repetition; brackets and punctuation left out) found in one code cell of the module's lesson, and in one
function of the module's own package (the lesson helpers a learner can read or call).
"""
from __future__ import annotations

import ast
import io
import re
import tokenize
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import nbformat

from .. import layout, modules
from ..checks import task

SKIPPED = {tokenize.NEWLINE, tokenize.NL, tokenize.INDENT, tokenize.DEDENT, tokenize.COMMENT, tokenize.ENDMARKER}
PUNCTUATION = set("()[]{},:.;")
CHECK_CALL = re.compile(r"""check\(\s*["'](m\d\d\.\w+)["']""")
REGION = re.compile(r"### BEGIN SOLUTION\n(.*?)### END SOLUTION", re.S)


def tokens(code: str) -> Counter:
    """The multiset of a code's tokens (names, numbers, strings, operators)."""
    found = Counter()
    try:
        for tok in tokenize.generate_tokens(io.StringIO(code).readline):
            if tok.type not in SKIPPED and tok.string not in PUNCTUATION:
                found[tok.string] += 1
    except (tokenize.TokenError, IndentationError, SyntaxError):
        pass
    return found


def _dedent_regions(source: str) -> str:
    import textwrap
    return "\n".join(textwrap.dedent(region) for region in REGION.findall(source))


@dataclass(frozen=True)
class TaskDesign:
    """One graded task of an exercise, as the instructor's review sees it."""

    module: str          # "03_memory_hierarchy"
    task_id: str         # "m03.intensity"
    title: str           # English title
    points: float
    kind: str
    level: str
    mistakes: tuple[str, ...]
    lesson_share: float  # largest share of the answer's tokens in one lesson code cell
    lesson_cell: int     # that cell's index in the lesson notebook (-1: none)
    helper_share: float  # largest share in one function or class of the module's package
    helper: str          # "lesson.py:fit_rows"
    measurement: bool


def _answers(notebook: Path) -> list[tuple[str, float, str]]:
    """(task id, points, reference answer code) for each check cell, in order."""
    nb = nbformat.read(str(notebook), as_version=4)
    out, pending = [], []
    for cell in nb.cells:
        grading = cell.metadata.get("nbgrader", {})
        if cell.cell_type != "code":
            continue
        if grading.get("solution"):
            pending.append(_dedent_regions(cell.source))
        match = CHECK_CALL.search(cell.source) if grading.get("grade") else None
        if match:
            out.append((match.group(1), float(grading.get("points", 0)), "\n".join(pending)))
            pending = []
    return out


def _lesson_cells(repo: Path, module: str) -> list[tuple[int, Counter]]:
    path = layout.lesson(module, "en", repo)
    if not path.exists():
        return []
    nb = nbformat.read(str(path), as_version=4)
    return [(i, tokens(c.source)) for i, c in enumerate(nb.cells) if c.cell_type == "code"]


def _helpers(module_id: str) -> list[tuple[str, Counter]]:
    """Every function and class (methods included) of the module's package, by ``file:name``."""
    out = []
    for path in sorted(modules.path(module_id).glob("*.py")):
        text = path.read_text(encoding="utf-8")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                out.append((f"{path.name}:{node.name}", tokens(ast.get_source_segment(text, node) or "")))
    return out


def _best(answer: Counter, places: list[tuple]) -> tuple[float, object]:
    total = sum(answer.values())
    if not total:
        return 0.0, None
    share, where = max(((sum((answer & found).values()) / total, where) for where, found in places),
                       default=(0.0, None), key=lambda pair: pair[0])
    return share, where


def exercise(repo: Path, module: str) -> list[TaskDesign]:
    """The tasks of the exercise ``solutions/<module>/<module>_exercise.ipynb``, in notebook order."""
    rows = []
    lesson = _lesson_cells(repo, module)
    for task_id, points, code in _answers(layout.exercise(module, "solutions", repo)):
        t = task(task_id)
        answer = tokens(code)
        lesson_share, cell = _best(answer, lesson)
        helper_share, helper = _best(answer, _helpers(task_id.split(".")[0]))
        rows.append(TaskDesign(module, task_id, t.title.en, points, t.kind, t.level, tuple(t.mistakes),
                               lesson_share, -1 if cell is None else cell, helper_share, helper or "-",
                               t.measurement))
    return rows


def course(repo: Path, names: list[str] | None = None) -> list[TaskDesign]:
    """The tasks of every exercise of the course at ``repo`` (``names``: of those folders only), in module order."""
    found = [m.id for m in layout.modules(repo, "exercise")]
    return [row for module in found if not names or module in names for row in exercise(repo, module)]


def table(rows: list[TaskDesign]) -> str:
    """A markdown table: one row per task."""
    lines = ["| task | points | kind | level | nearest lesson cell | share | nearest helper | share | known mistakes checked |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        cell = f"cell {r.lesson_cell}" if r.lesson_cell >= 0 else "-"
        lines.append(f"| {r.task_id} {r.title} | {r.points:g} | {r.kind} | {r.level} | {cell} | {r.lesson_share:.0%} | "
                     f"{r.helper} | {r.helper_share:.0%} | {', '.join(r.mistakes) or '-'} |")
    return "\n".join(lines)
