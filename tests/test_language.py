"""One language on the learner's screen (issue 29, item 3): the rule that chooses it (``--lang``, ``COURSE_LANG``,
the remembered choice, the locale, else both) and the real commands (``--help``, ``submit``, ``start``, the
``[course]`` lines of the set-up) run in a subprocess under each way of choosing.

Korean output: every line with an English sentence (two Latin words in a row, once commands, paths, options, code
in backticks, placeholders and names in capitals are left out) has Hangul. English output: no Hangul at all.
Both: Hangul and an English sentence."""
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from autograder import bootstrap, i18n, language

REPO = Path(__file__).resolve().parent.parent
HANGUL = re.compile("[가-힣]")
CODE = re.compile(r"`[^`]*`|\{[^}]*\}|\[[^\]]*\]|'[^']*'|\S*[/\\._=<>@]\S*|-{1,2}\w[\w-]*|\b[A-Z][A-Z0-9_]+\b|\S*\d\S*")
SENTENCE = re.compile(r"[A-Za-z]{2,}[ ,;:]+[A-Za-z]{2,}")
COMMAND_LINE = re.compile(r"^\s*(CMD |/\S+|python3? |pip |course )")  # a command to copy, or the fake launcher's line


def english_lines(text: str) -> list[str]:
    return [line for line in text.splitlines()
            if not COMMAND_LINE.match(line) and SENTENCE.search(CODE.sub(" ", line))]


def assert_language(text: str, lang: str) -> None:
    assert text.strip(), "no output"
    if lang == "ko":
        assert HANGUL.search(text), text
        assert not [line for line in english_lines(text) if not HANGUL.search(line)], text
    elif lang == "en":
        assert not HANGUL.search(text), text
        assert english_lines(text), text
    else:
        assert HANGUL.search(text) and [line for line in english_lines(text) if not HANGUL.search(line)], text


# ---------------------------------------------------------------- the rule, in this process
@pytest.fixture
def rule(monkeypatch, tmp_path):
    """No input to the rule but what a test sets: a config folder of its own, no option, no locale."""
    for key in ("COURSE_LANG", "LANGUAGE", "LC_ALL", "LC_MESSAGES", "LANG"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setattr(language, "_option", None)
    monkeypatch.setattr(i18n, "_chosen", None)
    language.remembered.cache_clear()
    yield tmp_path / "config" / "ai-hardware-course" / "language"
    language.remembered.cache_clear()


def test_each_input_comes_before_the_next(rule, monkeypatch):
    assert language.chosen() == "both"
    monkeypatch.setenv("LANG", "C.UTF-8")
    assert language.chosen() == "both"  # C says no language
    monkeypatch.setenv("LANG", "en_US.UTF-8")
    assert language.chosen() == "en"
    monkeypatch.setenv("LC_MESSAGES", "ko_KR.UTF-8")
    assert language.chosen() == "ko"
    language.remember("both")
    assert language.chosen() == "both"
    monkeypatch.setenv("COURSE_LANG", "en")
    assert language.chosen() == "en"
    language.choose("ko")
    assert language.chosen() == "ko" and i18n.get_language() == "ko"
    i18n.set_language("both")  # code that sets the language (a lesson's setup) decides for its process
    assert i18n.get_language() == "both"


def test_the_remembered_choice_is_read_once_per_process(rule):
    rule.parent.mkdir(parents=True)
    rule.write_text("en\n")
    assert language.chosen() == "en"
    rule.write_text("ko\n")
    assert language.chosen() == "en"  # read once: a kernel keeps what it started with
    language.remember("ko")  # this process's own choice is seen at once
    assert language.chosen() == "ko" and rule.read_text().strip() == "ko"
    rule.write_text("klingon\n")
    language.remembered.cache_clear()
    assert language.chosen() == "both"  # not a language: ignored


def test_a_start_page_cell_remembers_the_choice_and_says_so_in_it(rule, capsys):
    i18n.remember_language("en")
    out = capsys.readouterr().out
    assert rule.read_text().strip() == "en" and str(rule) in out
    assert_language(out, "en")
    assert i18n.get_language() == "en" and i18n.msg("grading.submit_all_good").text() == i18n.msg("grading.submit_all_good").en
    i18n.remember_language("ko")
    assert_language(capsys.readouterr().out, "ko")
    with pytest.raises(ValueError):
        i18n.remember_language("fr")


def test_the_option_is_found_anywhere_before_a_double_dash():
    assert language.split(["submit", "01_devices", "--lang", "en"]) == ("en", ["submit", "01_devices"])
    assert language.split(["--lang=ko", "start", "--port", "9"]) == ("ko", ["start", "--port", "9"])
    assert language.split(["--lang", "fr", "submit"]) == (None, ["--lang", "fr", "submit"])  # argparse refuses it
    assert language.split(["test", "--", "--lang", "en"])[0] is None


def test_the_rule_imports_only_the_standard_library():
    """bootstrap decides the language before the course's environment exists."""
    import ast
    tree = ast.parse(Path(language.__file__).read_text(encoding="utf-8"))
    names = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    names |= {n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert names <= set(sys.stdlib_module_names) | {"__future__"}, names


def test_a_page_in_one_language_follows_the_choice_and_under_both_the_locale(rule, monkeypatch):
    assert language.page("ko") == "ko" and language.page("en") == "en" and language.page("both") == "en"
    monkeypatch.setenv("LANG", "ko_KR.UTF-8")
    assert language.page("both") == "ko"


# ---------------------------------------------------------------- the real commands, in a subprocess
def run(tmp_path: Path, *args: str, env: dict | None = None, code: str | None = None) -> subprocess.CompletedProcess:
    """``python3 -m autograder args`` as a learner types it, with the Python outside .venv (the usage errors and the
    set-up's lines come from there), or the script ``code`` with them in this Python; a home and config folder of its
    own, a locale that names no language and no COURSE_* variable, then ``env``."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("COURSE_", "LC_", "LANG"))}
    clean.update(HOME=str(tmp_path / "home"), XDG_CONFIG_HOME=str(tmp_path / "config"), LANG="C.UTF-8",
                 PYTHONPATH=str(REPO), COURSE_NO_PROGRESS="1")
    clean.update(env or {})
    outside = getattr(sys, "_base_executable", sys.executable)  # the interpreter this venv was made from
    command = [sys.executable, "-c", code, *args] if code else [outside, "-m", "autograder", *args]
    return subprocess.run(command, cwd=tmp_path, env=clean, capture_output=True, text=True, timeout=120)


# start without JupyterLab: the set-up and the launch are replaced; the launch prints its command line instead.
FAKE_START = ("import sys; from autograder import bootstrap as b; b.ensure_venv = lambda: None; "
              "b.subprocess.call = lambda cmd, **kw: print('CMD', *cmd) or 0; sys.exit(b.main(sys.argv[1:]))")
SUBMIT = "import sys; from autograder import cli; sys.exit(cli.main(sys.argv[1:]))"

WAYS = {  # how the language was chosen -> (environment, extra arguments, the language expected)
    "COURSE_LANG=ko": ({"COURSE_LANG": "ko"}, [], "ko"),
    "COURSE_LANG=en": ({"COURSE_LANG": "en"}, [], "en"),
    "locale ko": ({"LANG": "ko_KR.UTF-8"}, [], "ko"),
    "locale en": ({"LC_ALL": "en_US.UTF-8"}, [], "en"),
    "--lang ko": ({"COURSE_LANG": "en"}, ["--lang", "ko"], "ko"),
    "--lang en": ({"LANG": "ko_KR.UTF-8"}, ["--lang=en"], "en"),
    "--lang both": ({"COURSE_LANG": "ko"}, ["--lang", "both"], "both"),
    "nothing": ({}, [], "both"),
}


@pytest.mark.parametrize("way", WAYS)
def test_help_is_in_one_language(tmp_path, way):
    env, extra, lang = WAYS[way]
    done = run(tmp_path, *extra, "--help", env=env)
    assert done.returncode == 0, done.stderr
    assert_language(done.stdout, lang)
    assert "submit" in done.stdout and "--lang" in done.stdout


@pytest.mark.parametrize("lang", ["ko", "en", "both"])
@pytest.mark.parametrize("argv,code", [(["submit", "--help"], 0), (["start", "--help"], 0), (["submit"], 2),
                                       (["bogus"], 2), (["instructor", "grade", "x", "--workers", "many"], 2)])
def test_every_learner_command_line_answer_is_in_one_language(tmp_path, lang, argv, code):
    done = run(tmp_path, *argv, env={"COURSE_LANG": lang})
    assert done.returncode == code, done.stdout + done.stderr
    assert_language(done.stdout + done.stderr, lang)
    assert "Traceback" not in done.stderr
    if code:  # the usage, the error, and the [course] line
        assert "[course]" in done.stdout and "course" in done.stderr


@pytest.mark.parametrize("way", WAYS)
def test_start_says_and_opens_the_start_page_in_one_language(tmp_path, way):
    env, extra, lang = WAYS[way]
    done = run(tmp_path, "start", *extra, "--no-browser", env=env, code=FAKE_START)
    assert done.returncode == 0, done.stderr
    said = [line for line in done.stdout.splitlines() if line.startswith("[course]")]
    assert said and not done.stderr
    assert_language("\n".join(said), lang)
    page = f"lessons/00_start_here/00_start_here.{'en' if lang == 'both' else lang}.ipynb"  # both: no locale here
    cmd = next(line for line in done.stdout.splitlines() if line.startswith("CMD")).split()
    assert f"--LabApp.default_url=/course/start/{page}" in cmd  # what JupyterLab prints and opens: autograder.start_page
    assert "--no-browser" in cmd and "--lang" not in " ".join(cmd)
    assert (REPO / page).exists()


@pytest.mark.parametrize("lang", ["ko", "en", "both"])
def test_the_set_ups_stop_is_in_one_language(tmp_path, lang):
    done = run(tmp_path, "hardware", env={"COURSE_LANG": lang, bootstrap.HOP: "/elsewhere/course"})
    assert done.returncode == 1 and "/elsewhere/course" in done.stderr
    assert_language(done.stderr, lang)
    assert all(line.startswith(("[course]", "  ")) for line in done.stderr.splitlines())


@pytest.mark.parametrize("lang", ["ko", "en"])
def test_submit_follows_the_language(tmp_path, lang):
    done = run(tmp_path, "submit", "99_nothing", "--no-check", "--student", "kim01", "--root", str(REPO),
               env={"COURSE_LANG": lang}, code=SUBMIT)
    assert "99_nothing" in done.stdout, done.stdout + done.stderr
    assert_language(done.stdout, lang)


def test_a_choice_made_with_lang_is_remembered_and_used_next_time(tmp_path):
    remembered = tmp_path / "config" / "ai-hardware-course" / "language"
    first = run(tmp_path, "start", "--lang", "ko", env={"LANG": "en_US.UTF-8"}, code=FAKE_START)
    assert remembered.read_text().strip() == "ko" and str(remembered) in first.stdout
    assert_language(first.stdout, "ko")
    assert_language(run(tmp_path, "--help", env={"LANG": "en_US.UTF-8"}).stdout, "ko")  # over the locale
    assert_language(run(tmp_path, "--help", env={"COURSE_LANG": "en"}).stdout, "en")  # COURSE_LANG first
    again = run(tmp_path, "--lang", "both", "submit", "--help")
    assert again.returncode == 0 and remembered.read_text().strip() == "ko"  # only a command that runs remembers
    run(tmp_path, "submit", "99_nothing", "--no-check", "--student", "kim01", "--root", str(REPO), "--lang", "en",
        code=SUBMIT)
    assert remembered.read_text().strip() == "en"
    assert_language(run(tmp_path, "--help").stdout, "en")


# ---------------------------------------------------------------- nbgrader validate: the course's verdict lines
VERDICT = ('from autograder.checks.core import report, Part\nfrom autograder.i18n import Message\n'
           'report(Message("합계", "Sum"), [Part(True, Message("하나", "one")), '
           'Part(False, Message("둘: 기댓값 2, 실제값 3", "two: expected 2, found 3"))], 2)')


@pytest.mark.parametrize("lang", ["ko", "en"])
def test_a_verdict_under_validate_is_in_the_chosen_language(rule, monkeypatch, lang):
    from autograder.checks import core
    from autograder.i18n import Message
    monkeypatch.setenv("NBGRADER_EXECUTION", "validate")
    monkeypatch.setenv("COURSE_LANG", lang)
    with pytest.raises(core.CheckFailed) as info:
        core.report(Message("합계", "Sum"), [core.Part(True, Message("하나", "one")),
                                             core.Part(False, Message("둘: 기댓값 2, 실제값 3", "two: expected 2, found 3"))], 2)
    assert_language(str(info.value), lang)


def test_nbgrader_validate_shows_the_verdict_in_the_remembered_language(tmp_path):
    """The kernel nbgrader validate starts reads the learner's remembered choice (over a Korean locale); nbgrader's
    own lines around it are nbgrader's English."""
    import nbformat
    cell = nbformat.v4.new_code_cell(VERDICT)
    cell.metadata["nbgrader"] = {"grade": True, "grade_id": "sum", "points": 2, "solution": False, "locked": True,
                                 "schema_version": 3}
    nbformat.write(nbformat.v4.new_notebook(cells=[cell]), str(tmp_path / "check.ipynb"))
    (tmp_path / "config" / "ai-hardware-course").mkdir(parents=True)
    (tmp_path / "config" / "ai-hardware-course" / "language").write_text("en\n")
    done = run(tmp_path, "validate", "check.ipynb", env={"LANG": "ko_KR.UTF-8"},
               code="import runpy; runpy.run_module('nbgrader', run_name='__main__')")
    error = done.stdout.split("The error was:", 1)[-1]
    assert "expected 2, found 3" in error and not HANGUL.search(error), done.stdout + done.stderr


def test_a_graded_kernel_speaks_both_languages_unless_the_class_chose_one(rule, monkeypatch, tmp_path):
    """Grading is not the learner's screen: neither the grader's locale nor a remembered choice changes it."""
    from autograder.grading.kernel import kernel_env
    monkeypatch.setenv("LANG", "en_US.UTF-8")
    language.remember("ko")
    assert kernel_env(str(tmp_path), {})["COURSE_LANG"] == "both"
    monkeypatch.setenv("COURSE_LANG", "ko")
    assert kernel_env(str(tmp_path), {})["COURSE_LANG"] == "ko"
