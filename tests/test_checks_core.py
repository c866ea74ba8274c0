"""The check machinery: verdicts, partial credit, records, and resistance to tricks."""
import json
import random

import pytest

from autograder import i18n
from autograder.checks import core
from autograder.checks.core import CheckFailed, Part, Task
from autograder.i18n import Message


def square_task() -> Task:
    return Task(
        title=Message("제곱", "Square"),
        answer=lambda fn, case: fn(case),
        score=lambda case, ans, want: Part(ans == want, Message(f"{case}²", f"{case}²")),
        visible=lambda: [2, 3],
        id="m99.square",
    )


@pytest.fixture(autouse=True)
def square_references(monkeypatch):
    """The instructor's side of the square task: its expected answers and hidden cases."""
    from autograder.checks import expected
    real_want, real_hidden = expected.want, expected.hidden_cases
    monkeypatch.setattr(expected, "want", lambda tid, case: case * case if tid == "m99.square" else real_want(tid, case))
    monkeypatch.setattr(expected, "hidden_cases", lambda tid, rng: [rng.randint(4, 100) for _ in range(2)]
                        if tid == "m99.square" else real_hidden(tid, rng))


def run(fn, hidden=False, points=2.0, seed=7):
    task = square_task()
    records = core.collect(task, fn, core.cases_for(task, hidden, seed))
    return core.report(task.title, core.score_records(task, records), points), records


def test_full_marks_return_none_and_print_to_stdout_only(capsys):
    earned, _ = run(lambda x: x * x, hidden=True)
    out, err = capsys.readouterr()
    assert earned is None and "✅" in out and err == ""


def test_partial_credit_returns_points(capsys):
    earned, _ = run(lambda x: x * x if x == 2 else 0)
    assert earned == pytest.approx(1.0)
    assert capsys.readouterr().err == ""


def test_nothing_right_raises_bilingual(capsys):
    with pytest.raises(CheckFailed) as info:
        run(lambda x: -1)
    text = str(info.value)
    assert "통과하지" in text and "not passed" in text


def test_not_implemented_says_what_to_do():
    def stub(x):
        raise NotImplementedError()
    with pytest.raises(CheckFailed, match="NotImplementedError"):
        run(stub)


def test_hard_coded_answers_fail_hidden_cases():
    table = {2: 4, 3: 9}
    earned, _ = run(lambda x: table.get(x, 0), hidden=True, points=4)
    assert earned == pytest.approx(2.0)


def test_hidden_cases_follow_the_seed():
    task = square_task()
    assert core.cases_for(task, True, 1) == core.cases_for(task, True, 1)
    assert core.cases_for(task, False, 1) == [2, 3]


def test_int_subclass_with_always_true_eq_is_flattened():
    class Liar(int):
        def __eq__(self, other):
            return True
        __hash__ = int.__hash__

    with pytest.raises(CheckFailed):
        run(lambda x: Liar(0))


def test_unserialisable_answers_are_reported():
    with pytest.raises(CheckFailed, match="serializ"):
        run(lambda x: object())


def test_records_are_json(monkeypatch, capsys):
    monkeypatch.setenv("COURSE_RECORD_ANSWERS", "1")
    task = square_task()
    records = core.collect(task, lambda x: x * x, [2])
    core.emit("m99.square", 2, False, 5, records)
    payload = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert payload["task"] == "m99.square" and payload["records"][0]["answer"] == 4


def test_language_setting_chooses_messages():
    i18n.set_language("en")
    try:
        assert Message("가", "a").text() == "a"
        with pytest.raises(ValueError):
            i18n.set_language("fr")
    finally:
        i18n._chosen = None
    assert Message("가", "a").text() == "가\na"


def test_catalogued_messages_exist_in_both_languages():
    for key, message in i18n._catalog().items():
        assert message.ko.strip() and message.en.strip(), key


def test_unknown_task_is_a_clear_failure():
    from autograder.checks import check
    with pytest.raises(CheckFailed, match="m99.nothing"):
        check("m99.nothing", None, points=1)


def test_failed_check_shows_the_verdict_not_a_stack_trace():
    with pytest.raises(CheckFailed) as info:
        run(lambda x: -1)
    assert info.value._render_traceback_() == [str(info.value)]


def test_recording_mode_records_and_leaves_the_scoring_to_the_grader(monkeypatch, capsys):
    """With COURSE_RECORD_ANSWERS=1 the kernel only records: nothing is scored where the answers are hidden."""
    import sys

    from autograder.checks import check
    monkeypatch.setenv("COURSE_RECORD_ANSWERS", "1")
    monkeypatch.setenv("COURSE_GRADING_SEED", "5")
    monkeypatch.setitem(sys.modules, "course_answers.m00_demo", None)  # as in the grading sandbox
    assert check("m00.add", lambda a, b: -1, points=2) is None  # a wrong answer raises nothing here
    out = capsys.readouterr().out.splitlines()
    payload = json.loads(next(line for line in out if line.startswith("{")))
    assert payload["task"] == "m00.add" and payload["seed"] == 5 and payload["records"][0]["answer"] == -1
    assert any("outside this kernel" in line for line in out)


def test_plain_tasks_take_one_turn_and_record_the_bare_answer():
    task = square_task()
    assert not task.measurement and task.reference is None and task.rounds == 1
    assert core.collect(task, lambda x: x * x, [3], "m99.square") == [{"case": 3, "answer": 9, "error": None}]


def test_measurement_tasks_record_their_rounds_and_what_the_referee_saw(monkeypatch):
    monkeypatch.delenv("COURSE_REFEREE", raising=False)
    task = Task(title=Message("제곱", "Square"), answer=lambda fn, case: fn(case),
                score=lambda case, ans, want: Part(True, Message("", "")), visible=lambda: [2],
                measurement=True, reference=lambda case, ans: {"square": case * case}, rounds=3)
    [record] = core.collect(task, lambda x: x * x, [2], "m99.square")
    assert record["error"] is None and set(record["answer"]) == {"rounds", "observed"}
    assert record["answer"]["rounds"] == [4, 4, 4]
    assert len(record["answer"]["observed"]["walls"]) == 3
    assert record["answer"]["observed"]["reference"] == [{"square": 4}] * 3


def test_partial_verdict_shows_which_labelled_parts_are_right(capsys, monkeypatch):
    monkeypatch.setenv("COURSE_LANG", "en")
    parts = [Part(True, Message("능선점 맞음", "ridge right"), label=Message("H100 → 능선점", "H100 → ridge")),
             Part(False, Message("도달 가능한 값이 틀림", "attainable is wrong"), label=Message("H100 → 도달", "H100 → attainable"))]
    assert core.report(Message("루프라인", "Roofline"), parts, points=2) == 1.0
    out = capsys.readouterr().out
    assert "✅ H100 → ridge" in out and "❌ attainable is wrong" in out and "H100 → attainable" not in out


def test_a_part_can_name_the_known_mistake_it_recognised():
    part = Part(False, Message("방향별과 양방향을 확인하세요", "check per direction vs both"), mistake="per_direction")
    assert part.mistake == "per_direction" and Part(True, Message("", "")).mistake is None


def test_partial_points_show_once_in_a_notebook_and_as_a_number_to_nbgrader(monkeypatch):
    parts = [Part(True, Message("가", "a")), Part(False, Message("나", "b"))]
    monkeypatch.delenv("NBGRADER_EXECUTION", raising=False)
    earned = core.report(Message("과제", "Task"), parts, points=2)
    assert earned == 1.0 and hasattr(earned, "_ipython_display_")  # no stray "Out: 1.0" under the verdict
    monkeypatch.setenv("NBGRADER_EXECUTION", "autograde")
    graded = core.report(Message("과제", "Task"), parts, points=2)
    assert graded == 1.0 and type(graded) is float  # nbgrader reads the cell's result


def test_a_partial_verdict_adds_up(capsys):
    """Its count is what it lists (issue 27): a label that failed in one case is not a ✅ (that case's own message is),
    a part that earns nothing (a gated case) is not a ✅, and parts that share a label are counted, "(×2)"."""
    from autograder.checks.core import Part, report
    from autograder.i18n import Message
    dtype, values = Message("자료형", "dtype"), Message("값", "values")
    parts = [Part(True, Message("사례 1: 자료형 맞음", "case 1: dtype right"), label=dtype),
             Part(False, Message("사례 2: 자료형이 틀림", "case 2: wrong dtype"), label=dtype),
             Part(True, Message("사례 1: 값 맞음", "case 1: values right"), label=values),
             Part(True, Message("사례 2: 값 맞음", "case 2: values right"), label=values),
             Part(True, Message("사례 3: 값 맞음", "case 3: values right"), weight=0.0, label=Message("규칙", "rule"))]
    i18n.set_language("en")
    try:
        report(Message("과제", "Task"), parts, 4)
    finally:
        i18n._chosen = None
    out = capsys.readouterr().out
    lines = [line for line in out.splitlines() if line.startswith(("  ✅", "  ❌"))]
    assert "1 of 4 items not passed" in out, out
    assert "✅ dtype" not in out and "✅ case 1: dtype right" in out and "✅ values (×2)" in out and "rule" not in out
    assert len(lines) == 3


def test_a_right_answer_is_not_a_constant_where_every_case_expects_the_same(monkeypatch):
    """The same answer for every case is evidence of ignoring the input only where the references differ: hidden
    cases that happen to expect the same answer (the demo's count drew [2, 2]) keep a right answer's points."""
    task = square_task()
    records = [{"case": 2, "answer": 4, "error": None}, {"case": -2, "answer": 4, "error": None}]
    assert core.same_for_every_input(task, records) is None
    assert core.fraction(core.score_records(task, records)) == 1.0
    records[1] = {"case": 3, "answer": 4, "error": None}
    assert core.same_for_every_input(task, records) == "4"
    assert core.fraction(core.score_records(task, records)) == 0.0


def test_a_mistake_that_breaks_the_rule_keeps_a_third_and_the_verdict_says_why(capsys):
    """``Task.central``: a failing part that names such a mistake caps the task at :data:`core.CENTRAL`, whatever the
    other parts earn; another mistake does not."""
    from dataclasses import replace
    task = replace(square_task(), rule=Message("제곱은 자기 자신을 곱한다", "a square multiplies a number by itself"),
                   central=("doubled",), mistakes=("doubled", "sign"))

    def score(case, ans, want):
        mistake = "doubled" if ans == 2 * case else "sign" if ans == -want else None
        return [Part(ans == want, Message(f"{case}²", f"{case}²"), mistake=mistake)] + \
               [Part(True, Message(f"{case} 형식", f"{case} type"), weight=1.0)] * 3
    task = replace(task, score=score)
    doubled = [{"case": 2, "answer": 4, "error": None}, {"case": 3, "answer": 6, "error": None}]
    parts = core.score_records(task, doubled)
    assert core.fraction(parts) == pytest.approx(core.CENTRAL)  # 7 of 8 parts right, still a third
    i18n.set_language("en")
    try:
        core.report(task.title, parts, 3)
    finally:
        i18n._chosen = None
    said = " ".join(capsys.readouterr().out.split())
    assert "breaks the rule the task is about (a square multiplies a number by itself): it keeps at most a third" in said
    sign = [{"case": 2, "answer": 4, "error": None}, {"case": 3, "answer": -9, "error": None}]
    assert core.fraction(core.score_records(task, sign)) == pytest.approx(7 / 8)


def test_a_pass_says_what_it_checked(capsys):
    from dataclasses import replace
    task = replace(square_task(), score=lambda case, ans, want: [
        Part(ans == want, Message(f"{case}²", f"{case}²"), label=Message("값", "values")),
        Part(isinstance(ans, int), Message(f"{case} 정수", f"{case} int"), label=Message("자료형", "type"))])
    records = core.collect(task, lambda x: x * x, core.cases_for(task, True, 7))
    parts = core.score_records(task, records)
    i18n.set_language("en")
    try:
        core.report(task.title, parts, 2, core.scope(task, records, parts))
    finally:
        i18n._chosen = None
    assert "🔎 Checked: 4 cases (2 of them hidden) · parts: values, type" in capsys.readouterr().out
