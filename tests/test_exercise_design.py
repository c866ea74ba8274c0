"""Exercises that make a learner think: at least half of each exercise's tasks transfer the lesson's idea to a case
the lesson did not show, each exercise climbs from a marked warm-up to a marked stretch task, and no reference
answer can be copied from one lesson cell or one lesson helper (``python -m autograder instructor tasks`` prints
the table these tests read)."""
import ast
import contextlib
import importlib
import inspect
import io
import math
import random
import re

import nbformat
import pytest

from autograder import layout, modules
from autograder.checks import core
from autograder.checks.core import KINDS, LEVELS
from autograder.grading import design
from autograder.grading.course import REPO
from fixtures.learner_text import split_bilingual

ROWS = design.course(REPO)
MODULES = sorted({r.module for r in ROWS})
COPIED, MOSTLY_COPIED, AT_MOST_MOSTLY_COPIED = 0.85, 0.60, 3


@pytest.mark.parametrize("module", MODULES)
def test_at_least_half_of_an_exercise_is_transfer(module):
    rows = [r for r in ROWS if r.module == module]
    assert all(r.kind in KINDS and r.level in LEVELS for r in rows)
    transfer = [r.task_id for r in rows if r.kind == "transfer"]
    assert 2 * len(transfer) >= len(rows), f"{module}: {len(transfer)} of {len(rows)} tasks are transfer"


def headings(module: str) -> dict[str, str]:
    """Each graded task's heading (the last '## ' line above its check cell)."""
    out, last = {}, ""
    for path in [layout.exercise(module, "solutions", REPO)]:
        for cell in nbformat.read(str(path), as_version=4).cells:
            if cell.cell_type == "markdown":
                last = "\n".join(line for line in cell.source.splitlines() if line.startswith("## ")) or last
            elif cell.metadata.get("nbgrader", {}).get("grade"):
                match = design.CHECK_CALL.search(cell.source)
                if match:
                    out[match.group(1)] = last
    return out


@pytest.mark.parametrize("module", MODULES)
def test_an_exercise_climbs_from_a_warm_up_to_a_stretch_task(module):
    rows = [r for r in ROWS if r.module == module]
    assert rows[0].level == "warm-up", f"{module}: the first task is the warm-up"
    assert any(r.level == "stretch" for r in rows), f"{module}: no stretch task"
    marks = {"warm-up": ("워밍업", "warm-up"), "stretch": ("도전", "stretch")}
    titled = headings(module)
    for r in rows:
        for level, words in marks.items():
            marked = all(re.search(rf"\b{w}\b" if w.isascii() else w, titled[r.task_id], re.I) for w in words)
            assert marked == (r.level == level), \
                f"{r.task_id}: its heading says {level} in both languages exactly when it is one: {titled[r.task_id]!r}"


def test_no_answer_is_one_lesson_cell_away():
    copied = [f"{r.task_id}: {r.lesson_share:.0%} of cell {r.lesson_cell}" for r in ROWS if r.lesson_share >= COPIED]
    assert not copied, "answers that are one lesson cell:\n" + "\n".join(copied)
    mostly = [f"{r.task_id}: {r.lesson_share:.0%} of cell {r.lesson_cell}" for r in ROWS if r.lesson_share >= MOSTLY_COPIED]
    assert len(mostly) <= AT_MOST_MOSTLY_COPIED, "too many answers mostly in one lesson cell:\n" + "\n".join(mostly)


def test_no_answer_is_one_lesson_helper_away():
    """A learner can read (or call) the module's helpers: they must not hold an answer either. A measurement task's
    reference measurement is the referee's, by design, and is left out."""
    rows = [r for r in ROWS if not r.measurement]
    copied = [f"{r.task_id}: {r.helper_share:.0%} of {r.helper}" for r in rows if r.helper_share >= COPIED]
    assert not copied, "answers that are one helper function:\n" + "\n".join(copied)
    mostly = [f"{r.task_id}: {r.helper_share:.0%} of {r.helper}" for r in rows if r.helper_share >= MOSTLY_COPIED]
    assert len(mostly) <= AT_MOST_MOSTLY_COPIED, "too many answers mostly in one helper:\n" + "\n".join(mostly)


def task_cells(module: str) -> dict[str, list[tuple[int, str]]]:
    """Each graded task's markdown cells since the previous check cell, as (cell index, source)."""
    out, text = {}, []
    for path in [layout.exercise(module, "solutions", REPO)]:
        for i, cell in enumerate(nbformat.read(str(path), as_version=4).cells):
            if cell.cell_type == "markdown":
                text.append((i, cell.source))
            elif cell.metadata.get("nbgrader", {}).get("grade"):
                match = design.CHECK_CALL.search(cell.source)
                if match:
                    out[match.group(1)], text = text, []
    return out


def task_texts(module: str) -> dict[str, str]:
    """Each graded task's text: the markdown cells since the previous check cell."""
    return {task_id: "\n".join(source for _, source in cells) for task_id, cells in task_cells(module).items()}


BANDS = {"m01.speedup": "step", "m02.measure": "matmul", "m03.sweep": "sweep", "m05.measure": "allreduce",
         "m08.decode": "decode",
         "m06.mfu": "step", "m07.copy": "bandwidth"}  # the side_by_side kind each measurement task is scored with
CLOCK = {"m01.speedup": "calls", "m02.measure": "time_fn", "m03.sweep": "time_fn", "m06.mfu": "calls",
         "m08.decode": "time_fn"}  # the
# figures referee.off_clock holds: from time_fn's times, or no shorter than the calls of the step the check hands over


@pytest.mark.parametrize("task_id", sorted(BANDS))
def test_a_measurement_task_states_the_band_and_rounds_its_check_uses(task_id):
    """The text gives the band of expectations.yaml (as lo–hi, in both languages) and says which round counts as the
    check's verdict does (referee.which_round), so the two cannot drift apart."""
    from autograder.checks import referee, task
    from autograder.expectations import rules
    rule = rules()["side_by_side"][BANDS[task_id]]
    text = task_texts(_module(task_id.split(".")[0]))[task_id]
    band = f"{rule['lo']:g}–{rule['hi']:g}"
    assert text.count(band) >= 2, f"{task_id}: the text should give the band {band} in both languages"
    rounds = task(task_id).rounds
    which = referee.which_round(rounds)
    assert which.ko in text and which.en in text, f"{task_id}: say which of the {rounds} rounds counts: {which.en!r}"
    from autograder.i18n import msg
    again = msg("measure.again_rule", again=referee.AGAIN)  # referee.better: a miss the load explains
    assert again.ko in text and again.en in text, f"{task_id}: say that the check measures again: {again.en!r}"
    if task_id in CLOCK:  # referee.off_clock: what the course's clock holds the figure to
        rule = msg(f"measure.clock_rule_{CLOCK[task_id]}")
        assert rule.ko in text and rule.en in text, f"{task_id}: say how the course's clock holds it: {rule.en!r}"


# ---------------------------------------------------------------- what a task's text says about its check
def _module(name: str) -> str:
    """The exercise folder of a module named any way (``"04"``, ``"m04"``): its record's id."""
    return layout.module(name).id


def _tasks_module(number: str):
    return importlib.import_module(f"autograder.modules.{layout.module(number).package}.tasks")


def _student_defs(number: str) -> dict[str, ast.FunctionDef]:
    """Every function the student version of exercise ``number`` defines, by name."""
    module = _module(number)
    defs = {}
    for cell in nbformat.read(str(layout.exercise(module, "exercises", REPO)), as_version=4).cells:
        if cell.cell_type == "code":
            defs.update({n.name: n for n in ast.parse(cell.source).body if isinstance(n, ast.FunctionDef)})
    return defs


def _default(number: str, function: str, parameter: str):
    """The default of ``parameter`` in the student version's ``def function``."""
    args = _student_defs(number)[function].args
    named = dict(zip([a.arg for a in args.args][len(args.args) - len(args.defaults):], args.defaults))
    return ast.literal_eval(named[parameter])


def _solution_budget(task_id: str) -> float:
    """The ``budget_s`` the reference answer of ``task_id`` times with."""
    module = _module(task_id.split(".")[0])
    code = next(c for t, _, c in design._answers(layout.exercise(module, "solutions", REPO)) if t == task_id)
    return float(re.search(r"budget_s=([\d.]+)", code).group(1))


def _keyword_default(fn, parameter: str):
    return inspect.signature(fn).parameters[parameter].default


# Every time (seconds) an exercise's text states, and the task data that states it. A text says how long a check
# takes only from these: a wall time of a whole check depends on the machine's load, so no text promises one.
STATED_TIMES = {
    "01": {0.01: lambda: _keyword_default(importlib.import_module("autograder.modules.m01_devices.virtual").VirtualGPU,
                                          "work_s"),
           0.0001: lambda: _keyword_default(importlib.import_module("autograder.modules.m01_devices.virtual").VirtualGPU,
                                            "launch_s")},
    "02": {0.05: lambda: _tasks_module("02").BUDGET_S,
           1.6: lambda: _tasks_module("02").BUDGET_S * _tasks_module("02").PAST_FIRST,
           0.4: lambda: _solution_budget("m02.measure")},
    "03": {0.001: lambda: importlib.import_module("autograder.harness").MIN_SAMPLE_S},
    "05": {6: lambda: _tasks_module("05").RING_TIMEOUT_S, 0.1: lambda: _tasks_module("05").MEASURE_BUDGET_S,
           3: lambda: _tasks_module("05").MEASURE_LIMIT_S, 5: lambda: _tasks_module("05").FAKE_LIMIT_S},
    "06": {15: lambda: _keyword_default(importlib.import_module("autograder.reference").measured_profile, "budget_s"),
           0.3: lambda: _tasks_module("06").STEP_BUDGET_S},
    "07": {1: lambda: _default("07", "copy_bandwidth_gbs", "budget_s")},
}
WORDS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
         "nine": 9, "ten": 10, "fifteen": 15, "twenty": 20, "thirty": 30}
UNITS = {"ms": 1e-3, "s": 1, "sec": 1, "second": 1, "seconds": 1, "minute": 60, "minutes": 60, "hour": 3600,
         "hours": 3600, "초": 1, "분": 60, "시간": 3600}
WORD = "|".join(WORDS)
TIME = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)(?:\s?[–-]\s?(\d+(?:\.\d+)?))?\s?(ms|s|sec|seconds?|minutes?|hours?)(?![A-Za-z/²])|"
                  rf"\b({WORD})\s(seconds?|minutes?|hours?)\b|"
                  rf"(?<![\w.])(\d+(?:\.\d+)?)(?:\s?[–-]\s?(\d+(?:\.\d+)?))?\s?(초|분(?!의)|시간)|"
                  r"budget_s=(\d+(?:\.\d+)?)", re.I)


def stated_times(source: str) -> list[tuple[str, list[float]]]:
    """Each time ``source`` states: (its words, the seconds it states)."""
    found = []
    for m in TIME.finditer(source):
        if m.group(9):
            found.append((m.group(0), [float(m.group(9))]))
            continue
        first, second, unit = (m.group(1, 2, 3) if m.group(3) else (m.group(4), None, m.group(5)) if m.group(5)
                               else m.group(6, 7, 8))
        numbers = [float(WORDS.get(first.lower(), first))] + ([float(second)] if second else [])
        found.append((m.group(0), [n * UNITS[unit.lower()] for n in numbers]))
    return found


EXERCISES = [m.number for m in layout.modules(REPO, "exercise")]


@pytest.mark.parametrize("number", EXERCISES)
def test_a_time_an_exercise_states_comes_from_its_tasks(number):
    """A text states a time (how long a check, a round or a measurement takes, a limit, a budget) only where it is a
    figure of the task's data (``STATED_TIMES``), as that data has it: a check's wall time depends on the machine's
    load, so a text says what it depends on instead of promising one."""
    module = _module(number)
    cells = nbformat.read(str(layout.exercise(module, "solutions", REPO)), as_version=4).cells
    known = STATED_TIMES.get(number, {})
    wrong = []
    for i, cell in enumerate(cells):
        if cell.cell_type != "markdown":
            continue
        for words, seconds in stated_times(cell.source):
            for value in seconds:
                source = next((known[k] for k in known if math.isclose(k, value, rel_tol=1e-9)), None)
                if source is None:
                    wrong.append(f"ex{number} cell {i} states {words!r}: say what it depends on (rounds, budgets, "
                                 f"the machine's load), or state a figure of the task's data and add it to STATED_TIMES")
                elif not math.isclose(source(), value, rel_tol=1e-9):
                    wrong.append(f"ex{number} cell {i} states {words!r}, but the task's data has {source():g} s")
    assert not wrong, "\n".join(wrong)


def _halves(cells: list[tuple[int, str]], own: bool = False) -> dict[str, str]:
    """A task text's Korean and English parts (``own``: without the exercise's introduction, its '# ' cell)."""
    halves = [split_bilingual(source) for _, source in cells if not (own and source.lstrip().startswith("# "))]
    return {"ko": "\n".join(ko for ko, _ in halves), "en": "\n".join(en for _, en in halves)}


TASK_IDS = sorted(f"{m.short}.{name}" for m in layout.modules(REPO, "exercise") for name in modules.tasks(m.short))
HIDDEN_SEEDS = range(20)


def _hidden_draws(task_id: str) -> list[list]:
    from autograder.checks.expected import hidden_cases
    return [hidden_cases(task_id, random.Random(seed)) for seed in HIDDEN_SEEDS]


@pytest.mark.parametrize("task_id", TASK_IDS)
def test_a_text_counts_the_hidden_cases_as_the_check_draws_them(task_id):
    """A task's English text speaks of "the hidden case" exactly where the grader draws one hidden case (and the
    check's "Checked: N cases (1 of them hidden)" says one)."""
    text = _halves(task_cells(_module(task_id.split(".")[0]))[task_id], own=True)["en"]
    said = {m.group(1).lower() for m in re.finditer(r"\bhidden (cases?)\b", text, re.I)}
    counts = {len(draw) for draw in _hidden_draws(task_id)}
    one = counts == {1}
    assert not (one and "cases" in said), f"{task_id}: the grader draws one hidden case; the text says 'hidden cases'"
    assert not (not one and "case" in said), f"{task_id}: the grader draws {counts} hidden cases; the text says one"


def _every(key: str, *values):
    """Every draw holds a case whose ``key`` is each of ``values``."""
    return lambda draws: all(set(values) <= {c.get(key) for c in draw} for draw in draws)


def _only(key: str, values, within=None):
    """Every case's ``key`` (``within`` each case's list of that name) is one of ``values``, and every one is drawn."""
    def holds(draws):
        seen = [v for draw in draws for c in draw for v in ([x[key] for x in c[within]] if within else [c[key]])]
        return set(map(str, seen)) == set(map(str, values))
    return holds


# What a text says its hidden cases add, where it names figures: (the words, in English, and what the draws hold).
HIDDEN_CLAIMS = {
    "m02.measure": [("The hidden case measures bfloat16", _only("dtype", ["bfloat16"]))],
    "m02.limits": [("The hidden cases are fp32, tf32, FP6", lambda d: all(
        {"fp32", "tf32"} <= {c["format"]["name"] for c in draw}
        and any(c["format"]["exp_bits"] + c["format"]["man_bits"] == 5 and c["format"]["special"] == "none"
                for c in draw) for draw in d))],
    "m02.nm_mask": [("1:2, 2:4, 4:8, 1:4 and 8:32 patterns", lambda d: all(
        {(1, 2), (2, 4), (4, 8), (1, 4), (8, 32)} <= {(c["n"], c["m"]) for c in draw} for draw in d))],
    "m03.sweep": [("starts at another size (12–24 KiB)", lambda d: {c["start_kib"] for draw in d for c in draw} <= set(range(12, 25))),
                  ("(6×LLC or 10×LLC)", _only("beyond", [6, 10]))],
    "m05.ring": [("3 ranks", lambda d: all(c["world_sizes"] == [3] for draw in d for c in draw)),
                 ("float16, int32", lambda d: all({"float16", "int32"} <= {t["dtype"] for c in draw for t in c["tensors"]}
                                                  for draw in d))],
    "m07.guard": [("n = 1", _every("n", 1)), ("blocks of 32, 64 or 256 threads", _only("threads", [32, 64, 256]))],
    "m07.stride": [("1 or 3 blocks of 32 or 64 threads", lambda d: {(c["blocks"], c["threads"]) for draw in d for c in draw
                                                                   if c["n"] > 1 and c["blocks"] != 2}
                    == {(1, 32), (1, 64), (3, 32), (3, 64)}), ("n = 1", _every("n", 1))],
    "m07.pool": [("n = 1, n = 65", _every("n", 1, 65))],
    "m07.dot": [("n = 1", _every("n", 1))],
    "m07.scan": [("n = 1, n = 2", _every("n", 1, 2))],
    "m07.matmul": [("1×1×1", lambda d: all(any((c["m"], c["n"], c["k"]) == (1, 1, 1) for c in draw) for draw in d))],
    "m07.softmax": [("1×1", lambda d: all(any((c["rows"], c["cols"]) == (1, 1) for c in draw) for draw in d)),
                    ("|x| ~ 300", lambda d: all(any(c["scale"] == 300 for c in draw) for draw in d))],
    "m07.copy": [("6 or 8 times in the hidden case", _only("factor", [6, 8]))],
}


@pytest.mark.parametrize("task_id", sorted(HIDDEN_CLAIMS))
def test_what_a_text_says_the_hidden_cases_add_is_what_the_grader_draws(task_id):
    text = _halves(task_cells(_module(task_id.split(".")[0]))[task_id], own=True)["en"]
    draws = _hidden_draws(task_id)
    for words, holds in HIDDEN_CLAIMS[task_id]:
        assert words in text, f"{task_id}: the text no longer says {words!r}: update HIDDEN_CLAIMS with what it says"
        assert holds(draws), f"{task_id}: the text says the hidden cases hold {words!r}; {len(draws)} draws do not"


LEARNER = re.compile(r"""check\(\s*["'](m\d\d\.\w+)["']\s*,\s*(\([\w\s,]+\)|\w+)\s*,""")
TYPE_WORDS = {"tuple": ("tuple", "튜플"), "list": ("list", "리스트"), "dict": ("dict", "딕셔너리")}


def learner_functions(task_id: str) -> tuple[list[ast.FunctionDef], bool]:
    """The functions a learner writes for ``task_id`` (the student version's ``def`` lines), and whether the check
    takes them as a tuple."""
    module = _module(task_id.split(".")[0])
    cells = nbformat.read(str(layout.exercise(module, "exercises", REPO)), as_version=4).cells
    match = next(m for c in cells if c.cell_type == "code" for m in LEARNER.finditer(c.source) if m.group(1) == task_id)
    defs = _student_defs(task_id.split(".")[0])
    names = [n.strip() for n in match.group(2).strip("()").split(",") if n.strip()]
    return [defs[n] for n in names], match.group(2).startswith("(")


class _Recorded(Exception):
    """A recording stub stops the check here."""


def _recording_stub(fdef: ast.FunctionDef, seen: list[dict]):
    """A function with ``fdef``'s signature that records the types of the arguments it is called with, then stops."""
    P = inspect.Parameter
    args = fdef.args.posonlyargs + fdef.args.args
    first_default = len(args) - len(fdef.args.defaults)
    signature = inspect.Signature([P(a.arg, P.POSITIONAL_OR_KEYWORD, default=P.empty if i < first_default else None)
                                   for i, a in enumerate(args)])

    def stub(*a, **k):
        seen.append({name: type(value) for name, value in signature.bind(*a, **k).arguments.items()})
        raise _Recorded()
    stub.__signature__, stub.__name__ = signature, fdef.name
    return stub


def passed_types(task_id: str) -> dict[str, dict[str, set[type]]]:
    """What the check passes each learner function, per parameter: the types it was called with on the task's visible
    cases, through the task's own ``answer`` with a recording stub as the learner (a function the check does not call
    in this process, such as a CUDA kernel, records nothing)."""
    from autograder.checks import task
    functions, as_tuple = learner_functions(task_id)
    seen = {f.name: [] for f in functions}
    stubs = [_recording_stub(f, seen[f.name]) for f in functions]
    t = task(task_id)
    for case in core.canonical(list(t.visible())):
        with contextlib.redirect_stdout(io.StringIO()):
            try:
                t.answer(tuple(stubs) if as_tuple else stubs[0], case)
            except Exception:  # the stub stopped it, or the check needs what a stub cannot give
                pass
    return {name: {p: {call[p] for call in calls if p in call} for call in calls for p in call}
            for name, calls in seen.items()}




@pytest.mark.parametrize("task_id", TASK_IDS)
def test_a_text_names_each_argument_and_the_type_the_check_passes(task_id):
    """Each parameter of the learner's ``def`` is named in backticks in both languages, and one the check passes as a
    tuple, list or dict is described with that word on a line that names it, in both languages."""
    halves = _halves(task_cells(_module(task_id.split(".")[0]))[task_id])
    spans = {lang: re.findall(r"`([^`\n]+)`", text) for lang, text in halves.items()}
    types = passed_types(task_id)
    wrong = []
    for fdef in learner_functions(task_id)[0]:
        for arg in [a.arg for a in fdef.args.posonlyargs + fdef.args.args]:
            word = re.compile(rf"(?<![\w.]){re.escape(arg)}(?!\w)")
            for lang, text in halves.items():
                if not any(word.search(span) for span in spans[lang]):
                    wrong.append(f"{task_id}: the {lang} text never names `{arg}` (of `{fdef.name}`) in backticks")
                    continue
                named = [line for line in text.splitlines() if re.search(rf"`[^`\n]*{word.pattern}[^`\n]*`", line)]
                for kind in sorted({t.__name__ for t in types.get(fdef.name, {}).get(arg, ())} & set(TYPE_WORDS)):
                    said = TYPE_WORDS[kind][lang == "ko"]
                    if not any(said in line for line in named):
                        wrong.append(f"{task_id}: the check passes `{arg}` (of `{fdef.name}`) as a {kind}; say "
                                     f"{said!r} on a {lang} line that names it")
    assert not wrong, "\n".join(wrong)
