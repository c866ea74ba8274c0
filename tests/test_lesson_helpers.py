"""Helpers that notebooks call: language choice, bilingual text, tables, quizzes, glossary."""
import pytest

from autograder import glossary, i18n, lesson
from autograder.i18n import Message


@pytest.fixture(autouse=True)
def reset_language(monkeypatch):
    monkeypatch.delenv("COURSE_LANG", raising=False)
    monkeypatch.delenv("JPY_SESSION_NAME", raising=False)
    i18n._chosen = None
    yield
    i18n._chosen = None


@pytest.mark.parametrize("name, lang", [("/x/lesson.ko.ipynb", "ko"), ("/x/lesson.en.ipynb", "en"),
                                        ("/x/exercise.ipynb", "both")])
def test_language_follows_the_notebook_name(monkeypatch, name, lang):
    monkeypatch.setenv("JPY_SESSION_NAME", name)
    assert lesson.setup() == lang


def test_course_lang_overrides_the_notebook_name(monkeypatch):
    monkeypatch.setenv("JPY_SESSION_NAME", "/x/lesson.ko.ipynb")
    monkeypatch.setenv("COURSE_LANG", "en")
    assert lesson.setup() == "en"
    assert lesson.t("가", "a") == "a"


def test_both_languages_by_default():
    assert lesson.setup() == "both"
    assert lesson.t("가", "a") == "가 / a"


def test_table_html_escapes_and_formats():
    html = lesson.table_html([{"name": "<b>", "tflops": 989.4, "note": Message("가", "a")}],
                             headers={"tflops": Message("처리량", "throughput")})
    assert "&lt;b&gt;" in html and "989.4" in html and "처리량" in html and "가" in html


def test_quiz_builds_a_widget():
    box = lesson.quiz(Message("질문", "question"), [Message("하나", "one"), Message("둘", "two")], 1,
                      Message("둘이 맞습니다", "two is right"))
    assert len(box.children) == 4


def test_glossary_has_both_languages_and_renders():
    terms = glossary.terms()
    assert len(terms) >= 20
    assert len({t.term_en.lower() for t in terms}) == len(terms), "duplicate glossary terms"
    for term in terms:
        assert term.term_ko and term.definition.ko and term.definition.en
    for lang in ("ko", "en", "both"):
        table = glossary.markdown(lang)
        assert table.count("\n") == len(terms) + 1
