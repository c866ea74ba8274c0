"""Helpers that notebooks call: language choice, bilingual text, tables, quizzes, glossary."""
import re

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


@pytest.mark.parametrize("name, lang", [("/x/01_devices.ko.ipynb", "ko"), ("/x/01_devices.en.ipynb", "en"),
                                        ("/x/01_devices_exercise.ipynb", "both")])
def test_language_follows_the_notebook_name(monkeypatch, name, lang):
    monkeypatch.setenv("JPY_SESSION_NAME", name)
    assert lesson.setup() == lang


def test_course_lang_overrides_the_notebook_name(monkeypatch):
    monkeypatch.setenv("JPY_SESSION_NAME", "/x/01_devices.ko.ipynb")
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


def test_a_quiz_is_loaded_by_its_key_and_displayed_once(monkeypatch):
    import IPython.display
    shown = []
    monkeypatch.setattr(IPython.display, "display", lambda *objs, **kw: shown.extend(objs))
    assert lesson.quiz("m07.blocks_guard") is None
    assert len(shown) == 1  # returned nothing: a quiz that ends its cell is not displayed a second time
    with pytest.raises(KeyError, match="m07.blocks_guard"):   # an unknown key names the module's quizzes
        lesson.load_quiz("m07.no_such_quiz")


def test_the_quiz_widget_explains_the_right_choice_only(capsys):
    i18n.set_language("en")
    quiz = lesson.Quiz(Message("질문", "question"), (Message("하나", "one"), Message("둘", "two")), 1,
                       Message("둘이 맞습니다", "two is right"))
    question, choice, button, _ = lesson.quiz_widget(quiz).children
    assert "question" in question.value and [label for label, _ in choice.options] == ["one", "two"]
    said = []
    for value in (None, 0, 1):
        choice.value = value
        button.click()   # the button's handler, as a click in the notebook runs it
        said.append(capsys.readouterr().out)
    assert "Pick one option" in said[0] and "two is right" not in said[0]
    assert "❌" in said[1] and "two is right" not in said[1]
    assert "✅ two is right" in said[2]


def test_glossary_has_both_languages_and_renders():
    terms = glossary.terms()
    assert len(terms) >= 20
    assert len({t.term_en.lower() for t in terms}) == len(terms), "duplicate glossary terms"
    for term in terms:
        assert term.term_ko and term.definition.ko and term.definition.en
    for lang in ("ko", "en", "both"):
        table = glossary.markdown(lang)
        assert table.count("\n") == len(terms) + 1
    assert not re.search("[가-힣]", glossary.markdown("en")), "the English glossary shows Korean"


def test_an_unanswered_task_and_an_early_check_say_so_in_both_languages():
    """In a kernel (as JupyterLab runs an exercise): one bilingual line instead of a stack trace, still an error."""
    import nbclient
    import nbformat
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("from autograder import lesson\nfrom autograder.checks import check\nlesson.setup('both')"),
                nbformat.v4.new_code_cell("def answer():\n    pass\nraise NotImplementedError()"),
                nbformat.v4.new_code_cell("check('m03.intensity', arithmetic_intensity, points=3)"),
                nbformat.v4.new_code_cell("other_name + 1")]
    nbclient.NotebookClient(nb, allow_errors=True, timeout=120).execute()
    errors = [[o for o in c.outputs if o.output_type == "error"] for c in nb.cells[1:]]
    assert [len(e) for e in errors] == [1, 1, 1]
    assert errors[0][0].traceback[0].startswith("아직 구현하지") and "Not implemented yet" in errors[0][0].traceback[0]
    assert "`arithmetic_intensity`" in errors[1][0].traceback[0] and "Run the answer cell above" in errors[1][0].traceback[0]
    assert len(errors[2][0].traceback) > 1  # any other error keeps its stack trace


def test_a_trend_is_claimed_only_where_the_points_show_it():
    """Lesson 01's busy-machine points (n = 64 at 30 GFLOP/s, n = 128 at 0.06) must not be titled 'larger problems
    fill the device better'."""
    from autograder.lesson import rises
    assert rises([5.0, 9.0, 20.0, 19.0, 30.0]) and rises([1, 2], [3, 4])
    assert not rises([30.0, 0.06, 20.0, 25.0, 40.0]) and not rises([1.0, 1.1]) and not rises([1, 2], [4, 3])


def test_a_point_above_the_measured_roof_is_named_impossible():
    """Lesson 03 showed `add` at 143 % of a roof measured at a busier moment: the row says it is impossible."""
    from autograder.i18n import get_language, set_language
    from autograder.modules.m03_memory_hierarchy.lesson import roof_rows
    before = get_language()
    set_language("en")
    try:
        rows = roof_rows([("add", 1 / 12, 0.002), ("matmul", 100.0, 0.05)], peak_tflops=0.1, gbs=16.8)
    finally:
        set_language(before)
    assert rows[0]["of the roof"].startswith("above the roof (impossible)") and rows[1]["of the roof"] == "50%"


@pytest.mark.parametrize("page, kept", [("00_start_here.ko.ipynb", "ko"), ("00_start_here.ipynb", None)])
def test_the_start_page_remembers_its_language(tmp_path, monkeypatch, capsys, page, kept):
    """Run on the start page, setup(remember=True) makes the page's language the learner's choice (issue 29); the
    bilingual source has none, and remembers nothing."""
    from autograder import i18n, language
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    monkeypatch.delenv("COURSE_LANG", raising=False)
    monkeypatch.setenv(lesson.NOTEBOOK_ENV, str(tmp_path / page))
    monkeypatch.setattr(i18n, "_chosen", None)
    language.remembered.cache_clear()
    try:
        lesson.setup(remember=True)
        assert language.remembered() == kept
        assert ("기억" in capsys.readouterr().out) == (kept == "ko")
    finally:
        language.remembered.cache_clear()
