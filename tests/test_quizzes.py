"""Every lesson quiz is one call by key, `lesson.quiz("m03.apple_capacity")`, and lives in its module's
`data/quizzes.yaml`: the key exists, its texts are in both languages, its answer is one of its options, and no
lesson shows an answer or an explanation before the learner picks an option."""
import json
import re
from pathlib import Path

import pytest

from autograder import lesson, modules
from autograder.datafile import read_yaml

ROOT = Path(__file__).resolve().parent.parent
LESSONS = sorted(ROOT.glob("lessons/*/*.ipynb"))   # each lesson's one source and its Korean and English builds
CALL = re.compile(r"""\blesson\.quiz\(["']([^"']+)["']\)""")


def cells(path: Path) -> list[tuple[str, str]]:
    """(cell type, source) of every cell of the notebook at ``path``."""
    return [(c["cell_type"], "".join(c["source"])) for c in json.loads(path.read_text(encoding="utf-8"))["cells"]]


def used() -> dict[str, list[str]]:
    """Quiz key -> the notebooks that call it."""
    found = {}
    for path in LESSONS:
        for kind, source in cells(path):
            if kind == "code":
                for key in CALL.findall(source):
                    found.setdefault(key, []).append(str(path.relative_to(ROOT)))
    return found


def stored() -> dict[str, dict]:
    """Quiz key -> its record, from every module's data/quizzes.yaml."""
    found = {}
    for module_id in modules.folders():
        path = modules.path(module_id) / "data" / "quizzes.yaml"
        if path.is_file():
            found.update({f"{module_id}.{name}": record for name, record in read_yaml(path).items()})
    return found


def test_every_quiz_call_is_one_key_and_every_stored_quiz_is_used():
    for path in LESSONS:
        for kind, source in cells(path):
            if kind == "code" and "quiz(" in source:
                assert len(re.findall(r"\bquiz\(", source)) == len(CALL.findall(source)), (
                    f"{path.relative_to(ROOT)}: a quiz is called with its texts, not its key:\n{source[:300]}")
    keys = used()
    assert len(keys) >= 17
    assert set(keys) == set(stored()), f"used but not stored: {set(keys) - set(stored())}; " \
                                       f"stored but not used: {set(stored()) - set(keys)}"
    for key, paths in keys.items():
        assert all(key[1:3] == Path(p).parent.name[:2] for p in paths), f"{key} is called from another module's lesson: {paths}"


@pytest.mark.parametrize("key", sorted(stored()))
def test_a_stored_quiz_is_complete_in_both_languages(key):
    record = stored()[key]
    assert set(record) <= {"question", "options", "answer", "explain", "source"}, set(record)
    texts = [record["question"], record["explain"], *record["options"]]
    assert all(set(text) == {"ko", "en"} and text["ko"].strip() and text["en"].strip() for text in texts), texts
    assert len(record["options"]) >= 2
    assert isinstance(record["answer"], int) and 0 <= record["answer"] < len(record["options"])
    assert all(isinstance(s, str) and s.strip() for s in record.get("source", [])), record.get("source")
    quiz = lesson.load_quiz(key)
    assert quiz.options[quiz.answer].en == record["options"][record["answer"]]["en"]


@pytest.mark.parametrize("path", LESSONS, ids=lambda p: p.name)
def test_no_lesson_shows_an_answer_or_an_explanation(path):
    text = "\n".join(source for _, source in cells(path))
    code = "\n".join(source for kind, source in cells(path) if kind == "code")
    assert "answer=" not in code.replace(" ", "")
    for key, record in stored().items():
        for lang in ("ko", "en"):   # its beginning: an explanation written in code may be split over lines
            assert record["explain"][lang][:40] not in text, f"{path.name} shows the explanation of {key} ({lang})"
