"""Known mistakes (``pytest -k mistakes``): every graded task lists the wrong answers learners are known to give,
and its visible checks fail each one with a bilingual message that names the mistake, and no other.

Points follow the point: every task states the rule it exists to teach (``Task.rule``) and which of its known
mistakes break it (``Task.central``); such a mistake keeps at most a third of the task's points, on the visible
cases and with the hidden ones.

A task's mistakes are data next to it: ``Task.mistakes`` (names) in its module's ``tasks.py``, a message
``mNN.mistake.<name>`` in its ``messages.yaml``, and the wrong answer itself in ``course_answers``
(``MISTAKES[task][name]``: a function run through the visible cases, or, for a measurement task whose real runs
depend on the machine, a :class:`~autograder.checks.core.Recorded` answer fed to ``score``).
"""
import re

import pytest

from autograder import layout, modules
from autograder.checks import task
from autograder.checks.core import CENTRAL, Recorded, _central, canonical, cases_for, collect, fraction, score_records
from autograder.checks.expected import answers, want
from autograder.grading.course import REPO
from autograder.grading.design import CHECK_CALL
from autograder.i18n import msg

HANGUL = re.compile(r"[\uac00-\ud7a3]")


def graded() -> list[str]:
    """Every task id a check cell of an exercise grades."""
    found = set()
    for path in layout.exercises("solutions", REPO):
        found.update(CHECK_CALL.findall(path.read_text(encoding="utf-8").replace('\\"', '"')))
    return sorted(found)


def known(task_id: str) -> dict:
    module_id, _, name = task_id.partition(".")
    return getattr(answers(module_id), "MISTAKES", {}).get(name, {})


CASES = [(task_id, name) for task_id in graded() for name in task(task_id).mistakes]


@pytest.mark.parametrize("task_id", graded())
def test_every_graded_task_lists_its_known_mistakes(task_id):
    t = task(task_id)
    assert t.mistakes, f"{task_id}: no known mistakes (Task.mistakes)"
    assert set(known(task_id)) == set(t.mistakes), \
        f"{task_id}: course_answers MISTAKES {sorted(known(task_id))} != Task.mistakes {sorted(t.mistakes)}"
    module_id = task_id.split(".")[0]
    assert t.rule is not None and HANGUL.search(t.rule.ko) and t.rule.en and not HANGUL.search(t.rule.en), \
        f"{task_id}: no rule the task exists to teach in both languages (Task.rule, {module_id}.rule.<task>)"
    assert t.central and set(t.central) <= set(t.mistakes), \
        f"{task_id}: Task.central {t.central} must name the known mistakes that break its rule"
    for name in t.mistakes:
        message = msg(f"{module_id}.mistake.{name}")
        assert HANGUL.search(message.ko) and message.en and not HANGUL.search(message.en), \
            f"{module_id}.mistake.{name}: the message must be in both languages"


def parts_for(task_id: str, wrong, hidden: bool = False) -> list:
    """The visible checks' parts for a wrong answer (``hidden``: with the hidden cases of seed 0 as well)."""
    t = task(task_id)
    if isinstance(wrong, Recorded):
        case = canonical(list(t.visible()))[wrong.case]
        scored = t.score(case, canonical(wrong.answer), want(task_id, case))
        return _central(t, scored if isinstance(scored, list) else [scored])  # as score_records does
    assert not t.measurement, f"{task_id}: a measurement task's wrong answers are Recorded (no run may depend on load)"
    return score_records(t, collect(t, wrong, cases_for(t, hidden, 0), task_id))


@pytest.mark.parametrize("task_id,name", CASES, ids=[f"{t}.{n}" for t, n in CASES])
def test_visible_checks_name_the_known_mistakes(task_id, name, monkeypatch):
    monkeypatch.delenv("COURSE_RECORD_ANSWERS", raising=False)
    parts = parts_for(task_id, known(task_id)[name])
    assert any(not p.ok for p in parts), f"{task_id}: the visible checks pass the mistake {name!r}"
    named = [p for p in parts if not p.ok and p.mistake == name]
    assert named, (f"{task_id}: the visible checks fail {name!r} without naming it; they said:\n"
                   + "\n".join(p.message.en for p in parts if not p.ok))
    message = named[0].message
    assert HANGUL.search(message.ko) and not HANGUL.search(message.en), "the message must be in both languages"
    others = sorted({p.mistake for p in parts if not p.ok and p.mistake not in (None, name)})
    assert not others, f"{task_id}: the mistake {name!r} is also told it made {others}: a hint fires only where its " \
                       "condition holds"


CENTRAL_CASES = [(t, n) for t, n in CASES if n in task(t).central]


@pytest.mark.parametrize("task_id,name", CENTRAL_CASES, ids=[f"{t}.{n}" for t, n in CENTRAL_CASES])
def test_a_mistake_that_breaks_the_rule_keeps_at_most_a_third(task_id, name, monkeypatch):
    monkeypatch.delenv("COURSE_RECORD_ANSWERS", raising=False)
    wrong = known(task_id)[name]
    for hidden in (False, True) if not isinstance(wrong, Recorded) else (False,):
        share = fraction(parts_for(task_id, wrong, hidden))
        assert share <= CENTRAL + 1e-9, (f"{task_id}: {name!r} breaks the task's rule yet keeps {share:.0%} of the "
                                         f"points ({'with' if hidden else 'without'} the hidden cases)")


def test_every_module_with_an_exercise_has_mistakes_data():
    for module_id in sorted({t.split(".")[0] for t in graded()}):
        assert hasattr(answers(module_id), "MISTAKES"), f"course_answers/{modules.folder(module_id)}.py has no MISTAKES"
