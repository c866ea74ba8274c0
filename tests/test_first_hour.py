"""The learner's first hour (issue 21, item 7): submit's report, measured values on a pass, what
validate shows, the distributed hints, bilingual help and messages, and each lesson in its own language."""
import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import nbformat
import pytest

from autograder import i18n, layout
from autograder.checks import core
from autograder.checks.core import CheckFailed, Part
from autograder.expectations import Band, side_by_side
from autograder.i18n import Message, msg

ROOT = Path(__file__).resolve().parent.parent
HANGUL = re.compile("[가-힣]")
LATIN = re.compile("[A-Za-z]{3,}")


@pytest.fixture(autouse=True)
def both_languages(monkeypatch):
    monkeypatch.delenv("COURSE_LANG", raising=False)
    monkeypatch.delenv("NBGRADER_EXECUTION", raising=False)
    monkeypatch.delenv("NBGRADER_VALIDATING", raising=False)
    monkeypatch.setattr(i18n, "_chosen", None)


def bilingual(message: Message) -> bool:
    return bool(HANGUL.search(message.ko)) and bool(LATIN.search(message.en)) and not HANGUL.search(message.en)


# ---------------------------------------------------------------- every learner message in both languages
LEARNER_KEYS = ["check.passed", "check.partial", "check.failed", "check.raised", "m05.ring_skipped",
                "m05.hint_deadlock", "m05.hint_dist_argument", "measure.band", "measure.side_by_side",
                "grading.submit_not_attempted", "grading.submit_check_fails", "grading.submit_checks_unfinished",
                "grading.submit_all_good", "grading.submit_not_checked", "grading.submit_with_problems",
                "grading.submit_checking", "grading.submitted"]


@pytest.mark.parametrize("key", LEARNER_KEYS)
def test_learner_messages_are_in_both_languages(key):
    assert bilingual(i18n._catalog()[key])


def _parsers():
    from autograder.cli import build_parser
    top = build_parser()
    yield "course", top
    sub = next(a for a in top._actions if a.__class__.__name__ == "_SubParsersAction")
    for name in ("start", "test", "hardware", "submit"):
        yield name, sub.choices[name]


@pytest.mark.parametrize("name,parser", list(_parsers()), ids=lambda v: v if isinstance(v, str) else "")
def test_learner_help_is_bilingual(name, parser):
    text = parser.format_help()
    assert "사용법 / usage" in text and "이 도움말을 보이고 끝냅니다 / show this help and exit" in text
    own = [a for a in parser._actions if a.help and a.dest not in ("root", "db_url")]
    assert all(HANGUL.search(a.help) and LATIN.search(a.help) for a in own), [a.help for a in own]


def test_a_usage_error_says_it_in_both_languages(capsys):
    from autograder.cli import build_parser
    with pytest.raises(SystemExit):
        build_parser().parse_args(["submit", "01_devices", "--student-id", "kim01"])
    err = capsys.readouterr().err
    assert "알 수 없는 인자" in err and "unrecognized arguments" in err


# ---------------------------------------------------------------- verdicts: measured values, validate
def band_part(value):
    band = Band(lo=10.0, hi=40.0, unit="GB/s", reason=Message("이 머신의 기준", "this machine's reference"),
                basis="measured", profile_id=None)
    return band.part(value, Message("메모리 복사 대역폭을 이 머신에서 잰 값", "memory copy bandwidth measured on this machine"))


def test_a_passing_measurement_shows_its_value_and_band(capsys):
    assert core.report(Message("측정", "Measure"), [band_part(23.4)], 2) is None
    out = capsys.readouterr().out
    assert "✅" in out and "23.4 GB/s" in out and "10–40 GB/s" in out and "between 10 and 40" in out
    items = [line for line in out.splitlines() if line.startswith("  ✅")]
    assert items and "23.4" in items[0]  # the value is on the item's first line


def test_side_by_side_shows_value_reference_and_band_when_passing(capsys):
    answer = {"rounds": [{"gbs": 30.0}, {"gbs": 31.0}],
              "observed": {"walls": [1.0, 1.0], "reference": [{"gbs": 30.0}, {"gbs": 30.5}, {"gbs": 31.0}]}}
    measured, parts = side_by_side("bandwidth", answer, Message("복사", "copy"), lambda r: r["gbs"],
                                   lambda ref: ref["gbs"], lambda r: 0.0, "GB/s")
    assert measured and all(p.ok and p.measured for p in parts)
    core.report(Message("측정", "Measure"), parts, 2)
    out = capsys.readouterr().out
    flat = " ".join(out.split())
    assert "reference measured in turns" in flat and "번갈아 잰 기준값" in flat and re.search(r"Found 30(\.\d+)? GB/s", flat)


def test_verdict_lines_fit_what_nbgrader_validate_shows():
    long = Message("아주 긴 설명 " * 30, "a very long explanation " * 20)
    with pytest.raises(CheckFailed) as info:
        core.report(Message("과제", "Task"), [Part(False, long), band_part(99.5)], 2)
    lines = str(info.value).splitlines()
    assert max(len(line) for line in lines) <= 87 - 4  # validate indents by 4 and cuts after 87
    found = [line for line in lines if "99.5" in line]
    assert found and found[0].startswith("  ❌")


def test_partial_credit_under_validate_says_which_items_failed(monkeypatch, capsys):
    parts = [Part(True, Message("하나", "one")), Part(False, Message("둘: 기댓값 2, 실제값 3", "two: expected 2, found 3"))]
    assert core.report(Message("과제", "Task"), parts, 2) == pytest.approx(1.0)
    assert "1 of 2 items not passed" in capsys.readouterr().out
    monkeypatch.setenv("NBGRADER_EXECUTION", "validate")
    with pytest.raises(CheckFailed) as info:
        core.report(Message("과제", "Task"), parts, 2)
    text = str(info.value)
    assert "부분 점수" in text and "partial credit" in text and "expected 2, found 3" in text and "실제값 3" in text


# ---------------------------------------------------------------- the distributed mistakes
GLOO_TIMEOUT = ("RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:534] Timed out waiting 45000ms "
                "for send operation to complete")


def test_a_deadlocked_ring_gets_a_bilingual_hint():
    from autograder.modules.m05_networking import tasks as m05
    spec = {"shape": [10], "dtype": "float32", "seed": 1}
    answer = {"results": [
        {"world_size": 2, "spec": spec, "error": GLOO_TIMEOUT, "match": False, "used": [], "detail": ""},
        {"world_size": 2, "spec": spec, "error": m05.SKIPPED, "match": False, "used": [], "detail": ""}]}
    deadlock, skipped = m05.TASKS["ring"].score(None, answer, None)
    assert not deadlock.ok and "isend" in deadlock.message.en and "isend" in deadlock.message.ko
    assert "짝수 랭크" in deadlock.message.ko and "parity" in deadlock.message.en
    assert bilingual(skipped.message) and "skipped after an error" not in skipped.message.text()


def test_ring_errors_prefer_the_real_error_over_skipped():
    from autograder.modules.m05_networking import tasks as m05
    assert sorted(["skipped after an error", "ValueError: x"], key=lambda e: e == m05.SKIPPED)[0] == "ValueError: x"


def test_torch_distributed_instead_of_the_dist_argument_gets_a_hint():
    pytest.importorskip("torch")
    from autograder.modules.m05_networking import tasks as m05

    def busbw(dist, sizes, world_size):
        import torch
        import torch.distributed
        torch.distributed.all_reduce(torch.ones(4))  # not the `dist` the check passed
        return [1.0 for _ in sizes]

    task = m05.TASKS["measure"]
    case = m05._measure_visible()[0]
    answer = core.canonical(task.answer(busbw, case))  # a crash on the fake dist is scored as that case
    assert "Default process group has not been initialized" in answer["values"]["raised"]
    [part] = m05._measure_fake_score(case, answer, None)
    assert not part.ok and "`dist`" in part.message.ko and "`dist`" in part.message.en
    assert "dist.all_reduce(x)" in part.message.en


def test_error_hint_ignores_other_errors():
    from autograder.modules.m05_networking import tasks as m05
    assert m05.error_hint("ValueError: shapes do not match") is None
    assert m05.error_hint(GLOO_TIMEOUT) is not None


# ---------------------------------------------------------------- submit: not attempted, failing checks, zip
@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    sys.path.insert(0, str(ROOT / "tests"))
    from fixtures.grading_course import ASSIGNMENT, demo_course
    return demo_course(tmp_path_factory.mktemp("first_hour")), ASSIGNMENT


def answer(course, assignment, **sources):
    path = course.folder("release", assignment, "demo.ipynb")
    nb = nbformat.read(str(path), as_version=4)
    for cell in nb.cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        if grade_id in sources:
            cell.source = sources[grade_id]
    nbformat.write(nb, str(path))


def test_submit_on_an_untouched_exercise_lists_every_task_and_still_writes_the_zip(demo, tmp_path, capsys):
    from autograder.cli import main
    course, assignment = demo
    code = main(["submit", assignment, "--student", "kim01", "--to", str(tmp_path), "--root", str(course.root)])
    out = capsys.readouterr().out
    assert code == 0 and (tmp_path / f"kim01__{assignment}.zip").exists()
    assert out.count("풀지 않은 과제") == 3 and out.count("Not attempted") == 3
    assert "제출 파일은 만들었습니다" in out and "submission was written anyway" in out


def test_submit_lists_a_failing_visible_check_in_both_languages(demo, tmp_path):
    from autograder.grading.submit import review, submit
    course, assignment = demo
    answer(course, assignment, add_solution="def add(a, b):\n    return a + b\n",
           stats_solution="def stats(xs):\n    return {'mean': 0, 'max': max(xs)}\n")
    assert submit(course, assignment, "kim01", tmp_path).exists()
    notes = review(course, assignment, run=True, timeout_s=120)
    texts = [n.text("both") for n in notes]
    assert len(notes) == 2, texts
    assert "Not attempted" in notes[0].en and "풀지 않은" in notes[0].ko  # count_positive: the stub
    assert "Visible check not passed" in notes[1].en and "통과하지 못한" in notes[1].ko
    assert not [n for n in notes if "add" in n.en.lower() and "check" in n.en.lower() and "Task" not in n.en]
    assert review(course, assignment, run=False) == notes[:1]  # --no-check: the static list only


# ---------------------------------------------------------------- each lesson in its own language
def test_every_lesson_notebook_names_its_language():
    for path in layout.lessons("ko", ROOT) + layout.lessons("en", ROOT):
        lang = path.name.split(".")[-2]
        assert json.loads(path.read_text(encoding="utf-8"))["metadata"]["language"] == lang, path


def test_both_start_pages_offer_both_languages_first():
    for lang in ("ko", "en"):
        nb = json.loads(layout.lesson("00_start_here", lang, ROOT).read_text(encoding="utf-8"))
        heading = next(c for c in nb["cells"] if c["cell_type"] == "markdown")  # after the set-up cell
        first = "".join(heading["source"]).splitlines()[0]
        assert "(00_start_here.ko.ipynb)" in first and "(00_start_here.en.ipynb)" in first


@pytest.mark.parametrize("env,page", [({"LANG": "C.UTF-8"}, "en"), ({"LANG": "ko_KR.UTF-8"}, "ko"),
                                      ({"LANG": "C.UTF-8", "LANGUAGE": "ko:en"}, "ko"),
                                      ({"LANG": "C.UTF-8", "COURSE_LANG": "ko"}, "ko")])
def test_start_page_language(monkeypatch, env, page):
    from autograder import bootstrap
    for key in ("LANG", "LANGUAGE", "LC_ALL", "LC_MESSAGES", "COURSE_LANG"):
        monkeypatch.delenv(key, raising=False)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    assert bootstrap.start_page() == layout.lesson("00_start_here", page)


RUNNER = textwrap.dedent("""
    import sys, nbformat
    from nbclient import NotebookClient
    path = sys.argv[1]
    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": sys.argv[2]}}).execute()
    print("".join(o.get("text", "") for o in nb.cells[0].outputs))
""")


def test_a_headless_lesson_prints_only_its_own_language(tmp_path):
    """Under nbclient the kernel is not told the notebook's name: the lesson still picks its language."""
    cell = nbformat.v4.new_code_cell('from autograder import lesson\nlesson.setup()\nprint(lesson.t("가나다", "ABC"))')
    for lang in ("ko", "en"):
        nb = nbformat.v4.new_notebook(cells=[cell], metadata={"language": lang})
        nbformat.write(nb, str(tmp_path / f"01_devices.{lang}.ipynb"))
    env = {k: v for k, v in __import__("os").environ.items() if k not in ("COURSE_LANG", "JPY_SESSION_NAME")}
    env["MPLBACKEND"] = "Agg"
    for lang, want, other in (("ko", "가나다", "ABC"), ("en", "ABC", "가나다")):
        out = subprocess.run([sys.executable, "-c", RUNNER, str(tmp_path / f"01_devices.{lang}.ipynb"), str(tmp_path)],
                             capture_output=True, text=True, env=env, timeout=180, cwd=str(ROOT)).stdout
        assert want in out and other not in out, out


def test_notebook_language_from_course_notebook_and_metadata(tmp_path, monkeypatch):
    from autograder import lesson
    path = tmp_path / "anything.ipynb"
    nbformat.write(nbformat.v4.new_notebook(metadata={"language": "ko"}), str(path))
    monkeypatch.delenv("JPY_SESSION_NAME", raising=False)
    monkeypatch.setenv("COURSE_NOTEBOOK", str(path))
    assert lesson.notebook_language() == "ko"
