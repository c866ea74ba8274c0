"""A new module's skeleton (``python -m autograder instructor new-module 08 serving --title-ko ... --title-en ...``):
its record in ``data/modules.json`` and its own files, each minimal but working (one task, ``first``, that its
reference passes): the package folder, the answers, the tests, the exercise's source and the lesson (its one
source and the two notebooks built from it). Nothing else is touched: the module maps (``instructor module-map``)
and the student version (``instructor generate``) are the next steps (docs/instructor.md)."""
from __future__ import annotations

import json
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from .. import bilingual, layout
from ..lesson_save import with_kernel
from ..i18n import msg
from .course import REPO, GradingError



def create(number: str, topic: str, title_ko: str, title_en: str, root: Path = REPO) -> list[Path]:
    """Write the record and the files of module ``number``_``topic`` in the course at ``root``; the files written."""
    root = Path(root)
    module = layout.Module(number, topic, title_ko, title_en)
    records = layout.modules(root)
    if not (layout.NUMBER.fullmatch(number) and layout.TOPIC.fullmatch(topic) and title_ko and title_en):
        raise GradingError(msg("modules.bad_name", number=number, topic=topic).text())
    taken = [m.id for m in records if m.id == module.id or m.number == number]
    if taken:
        raise GradingError(msg("modules.taken", module=module.id, taken=", ".join(taken)).text())
    files = {**_package(module), **_answers(module), **_tests(module)}
    written = []
    for path, text in files.items():
        written.append(_write(root / path, text))
    written.append(_notebook(module.exercise("solutions", root), _exercise(module)))
    written.append(_notebook(layout.lesson_source(module.id, root), _lesson(module)))
    written += bilingual.write_languages(written[-1])
    path = layout.records_file(root)
    about = json.loads(path.read_text(encoding="utf-8"))["_about"]
    path.write_text(layout.dump(sorted([*records, module], key=lambda m: m.number), about), encoding="utf-8")
    return [path, *written]


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def _notebook(path: Path, nb) -> Path:
    nbformat.validate(nb)
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, str(path))
    return path


def _package(m: layout.Module) -> dict[str, str]:
    folder = Path("autograder") / "modules" / m.package
    return {
        folder / "__init__.py": f'"""Module {m.number}, {m.title_en}.\n\n- ``tasks.py``: the graded tasks of exercise '
                                f'{m.number}.\n- ``lesson.py``: the lesson\'s helpers.\n"""\n',
        folder / "lesson.py": f'"""Module {m.number} lesson helpers: what the lesson\'s cells call."""\n',
        folder / "messages.yaml": (
            f"# Messages of module {m.number} ({m.topic.replace('_', ' ')}). Keys: {m.short}.<name>.\n"
            f"{m.short}.title.first:\n  ko: \"과제 1 · 두 배\"\n  en: \"Task 1 · Twice\"\n"
            f"{m.short}.rule.first:\n  ko: \"두 배는 값에 2를 곱한 것입니다.\"\n  en: \"Twice a value is the value times 2.\"\n"),
        folder / "tasks.py": f'''"""Tasks of module {m.number} ({m.topic.replace("_", " ")})."""
from __future__ import annotations

from ...checks.core import Part, Task, close
from ...i18n import msg


def _score_first(case, answer, want) -> Part:
    return Part(close(answer, want), msg("check.expected_found", what=f"twice({{case}})", expected=want, found=answer))


TASKS = {{
    "first": Task(title=msg("{m.short}.title.first"), answer=lambda fn, case: fn(case), score=_score_first,
                  visible=lambda: [1, 2.5], kind="recall", level="warm-up", rule=msg("{m.short}.rule.first")),
}}
''',
    }


def _answers(m: layout.Module) -> dict[str, str]:
    return {Path("course_answers") / f"{m.package}.py": f'''"""Reference answers and hidden cases of module {m.number} ({m.topic.replace("_", " ")})."""
from __future__ import annotations


def twice(x: float) -> float:
    return 2 * x


EXPECT = {{"first": twice}}

HIDDEN = {{"first": lambda rng: [rng.uniform(-10, 10) for _ in range(3)]}}

MISTAKES = {{"first": {{}}}}
'''}


def _tests(m: layout.Module) -> dict[str, str]:
    return {Path("tests") / "modules" / m.short / f"test_{m.short}_tasks.py": f'''"""Module {m.number} checks: the reference solution gets full marks."""
from autograder.checks import check
from course_answers.{m.package} import twice


def test_the_reference_gets_full_marks():
    assert check("{m.short}.first", twice, points=1, hidden=True) is None
'''}


def _graded(cell, grade_id: str, **flags):
    cell.metadata["nbgrader"] = {"grade": False, "grade_id": grade_id, "locked": True, "schema_version": 3,
                                 "solution": False, "task": False, **flags}
    cell.id = grade_id.replace("_", "-")
    return cell


def _exercise(m: layout.Module):
    lessons = {lang: f"../../lessons/{m.id}/{m.lesson(lang).name}" for lang in layout.LANGS}
    nb = new_notebook(metadata=with_kernel({}))
    nb.cells = [
        _graded(new_markdown_cell(f"# 실습 {m.number} · {m.title_ko}\n\n[수업 {m.number} (한국어)]({lessons['ko']})\n\n---\n\n"
                                  f"# Exercise {m.number} · {m.title_en}\n\n[Lesson {m.number} (English)]({lessons['en']})"),
                "intro"),
        _graded(new_code_cell("from autograder.checks import check"), "setup"),
        _graded(new_markdown_cell("## 과제 1 · 두 배 (1점, 워밍업)\n\n`twice(x)`가 `x`의 두 배를 돌려주게 완성하세요.\n\n---\n\n"
                                  "## Task 1 · Twice (1 point, warm-up)\n\nComplete `twice(x)` so that it returns twice `x`."),
                "first_md"),
        _graded(new_code_cell("def twice(x):\n    ### BEGIN SOLUTION\n    return 2 * x\n    ### END SOLUTION"),
                "first_solution", locked=False, solution=True),
        _graded(new_code_cell(f'check("{m.short}.first", twice, points=1,\n### BEGIN HIDDEN TESTS\n      hidden=True,\n'
                              "### END HIDDEN TESTS\n)"), "first_test", grade=True, points=1),
    ]
    return nb


def _lesson(m: layout.Module):
    """The lesson's one source: each text its Korean, a line ``---``, its English (``autograder.bilingual``)."""
    nb = new_notebook(metadata=with_kernel({}))
    nb.cells = [new_markdown_cell(f"{m.heading('ko')}\n\n[English]({m.lesson('en').name}) / **한국어**\n\n"
                                  "이 수업에서 배울 것을 여기에 씁니다.\n\n---\n\n"
                                  f"{m.heading('en')}\n\n**English** / [한국어]({m.lesson('ko').name})\n\n"
                                  "What this lesson teaches goes here."),
                new_code_cell(f"from autograder import lesson\nlesson.setup()\n\nfrom autograder.modules.{m.package} "
                              f"import lesson as {m.short}"),
                new_markdown_cell("## 요약\n\n- 수업의 요점을 여기에 씁니다.\n\n---\n\n## Summary\n\n- The lesson's points go here.")]
    for i, cell in enumerate(nb.cells):
        cell.id = f"{m.short}-{i:02d}"
    return nb
