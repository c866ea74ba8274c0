"""What lessons and exercises call: set-up, bilingual text, tables from data, quizzes."""
from __future__ import annotations

import html
import os
import shlex
import subprocess
import time
from dataclasses import dataclass
from functools import lru_cache
from typing import Iterable, Sequence

from . import modules, plotting
from .datafile import read_yaml
from .i18n import Message, get_language, remember_language, set_language, t


NOTEBOOK_ENV = "COURSE_NOTEBOOK"  # a runner that knows the notebook's path may name it here


def notebook_language() -> str | None:
    """``ko``/``en`` of the running notebook, if it can be known.

    In order: the name jupyter-server gives the kernel (``JPY_SESSION_NAME``), the path in
    ``COURSE_NOTEBOOK``, then, where the kernel is run headless (nbclient, ``jupyter
    execute``/``nbconvert --execute``, papermill, nbval), the notebooks named on the command
    line of the process that started the kernel, when they are in the kernel's folder and
    agree. A notebook's language is its metadata ``language`` field, else its name
    (``01_devices.ko.ipynb``).
    """
    for name in (os.environ.get("JPY_SESSION_NAME", ""), os.environ.get(NOTEBOOK_ENV, "")):
        lang = _language_of(name) if name else None
        if lang:
            return lang
    found = {_language_of(path) for path in _launcher_notebooks()}
    found.discard(None)
    return found.pop() if len(found) == 1 else None


def _language_of(path: str) -> str | None:
    """The language of the notebook at ``path``: its metadata ``language``, else its name."""
    try:
        import json
        with open(path, encoding="utf-8") as handle:
            lang = (json.load(handle).get("metadata") or {}).get("language")
        if lang in ("ko", "en"):
            return lang
    except (OSError, ValueError, AttributeError):
        pass
    for lang in ("ko", "en"):
        if str(path).endswith(f".{lang}.ipynb"):
            return lang
    return None


def _launcher_notebooks() -> list[str]:
    """Notebooks in this kernel's folder named on the command line of the process that started it."""
    pid = os.environ.get("JPY_PARENT_PID") or str(os.getppid())
    args, parent_cwd = _command_line(pid)
    here = os.path.realpath(os.getcwd())
    out = []
    for arg in args:
        value = arg.split("=", 1)[-1]
        if not value.endswith(".ipynb"):
            continue
        path = value if os.path.isabs(value) else os.path.join(parent_cwd or here, value)
        if parent_cwd is None and not os.path.exists(path):
            path = os.path.join(here, os.path.basename(value))
        if os.path.isfile(path) and os.path.dirname(os.path.realpath(path)) == here:
            out.append(path)
    return out


def _command_line(pid: str) -> tuple[list[str], str | None]:
    """(arguments, working folder) of process ``pid``; empty where the system does not say."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            args = [a.decode("utf-8", "replace") for a in handle.read().split(b"\0") if a]
        try:
            return args, os.readlink(f"/proc/{pid}/cwd")
        except OSError:
            return args, None
    except OSError:
        pass
    if os.name != "posix":
        return [], None
    try:
        text = subprocess.run(["ps", "-o", "command=", "-p", pid], capture_output=True, text=True,
                              timeout=5).stdout
        return shlex.split(text), None
    except (OSError, ValueError, subprocess.SubprocessError):
        return [], None


def setup(lang: str | None = None, remember: bool = False) -> str:
    """Prepare plots for Korean text and choose the language; returns the language.

    Order: ``lang`` argument, then ``COURSE_LANG``, then the notebook's language
    (:func:`notebook_language`), else both. ``remember`` (the start page): the notebook's language, where it has
    one, becomes the learner's remembered choice for the course's commands and kernels
    (:func:`autograder.i18n.remember_language`), and a line says so.
    """
    plotting.setup()
    page = notebook_language()
    chosen = lang or (None if os.environ.get("COURSE_LANG") else page)
    if chosen:
        set_language(chosen)
    if remember and page:
        remember_language(page)
    _explain_unanswered()
    return get_language()


def _explain_unanswered() -> None:
    """In a notebook, an answer not written yet and a check run before its answer cell get one bilingual line
    instead of a stack trace (the cell still ends in an error, so nothing counts as done)."""
    try:
        from IPython import get_ipython
    except ImportError:
        return
    shell = get_ipython()
    if shell is None or not hasattr(shell, "set_custom_exc"):
        return

    import IPython
    shows_itself = IPython.version_info[0] < 9  # from IPython 9 on, a custom handler shows its own traceback

    def explain(shell, etype, value, tb, tb_offset=None):
        from .i18n import msg
        cell = (shell.user_ns.get("_ih") or [""])[-1]  # the cell being run
        if issubclass(etype, NotImplementedError):
            stb = [msg("check.not_implemented").text()]
        elif issubclass(etype, NameError) and "check(" in (cell or "") and getattr(value, "name", None):
            stb = [msg("check.missing_name", name=value.name).text()]
        else:
            stb = shell.InteractiveTB.structured_traceback(etype, value, tb, tb_offset=tb_offset)
        if not shows_itself:
            shell._showtraceback(etype, value, stb)
        return stb

    shell.set_custom_exc((NotImplementedError, NameError), explain)


LABEL = {"description_width": "initial"}  # a control's style: its label takes the room it needs (never cut off)


CLEARLY = 1.2   # a measured figure is clearly above another only from this factor on


def clearly_more(high: float, low: float) -> bool:
    """Whether the measured ``high`` is clearly above ``low`` (at least :data:`CLEARLY` times it): the one rule by
    which a lesson says one measurement is larger, faster or slower than another."""
    return high >= CLEARLY * low


def rises(*series) -> bool:
    """Whether every series of measurements rises: each value at least 0.9 times the one before, the last clearly
    above the first (:func:`clearly_more`). A figure states such a trend only where this holds: a lesson never
    claims a trend its own points (on a busy machine, say) contradict."""
    return all(len(v) > 1 and all(b >= 0.9 * a for a, b in zip(v, v[1:])) and clearly_more(v[-1], v[0]) for v in series)


SPREAD_LIMIT = 0.2   # a point whose two best passes differ by more than this share of the best is noisy
REMEASURE_S = 3.0    # at most this long measuring a noisy series again, after the two passes every series gets
MAX_PASSES = 5


class Measured(list):
    """A measured series: the best value of each point over its passes (a list), and ``spread``, the largest share by
    which a point's two best passes differ (0.3: 30 %)."""

    spread: float = 0.0
    passes: int = 1

    @property
    def busy(self) -> Message | None:
        """The label a figure of this series carries when its spread stayed above :data:`SPREAD_LIMIT`, else None."""
        from .i18n import msg
        return msg("measure.busy", spread=f"{100 * self.spread:.0f}") if self.spread > SPREAD_LIMIT else None

    def carried(self, values: Iterable) -> Measured:
        """``values``, one per point (rows made from this series, say), as a series with this one's spread and passes."""
        series = Measured(values)
        series.spread, series.passes = self.spread, self.passes
        return series


def measure(fn, points: Sequence, better=max, budget_s: float = REMEASURE_S, desc: str | None = None,
            key: str | None = None, agree=bool) -> Measured:
    """``fn(point)`` at every point, measured twice in turns, and again (a whole pass at a time) while a point's two
    best values differ by more than :data:`SPREAD_LIMIT` and ``budget_s`` allows. ``better``: ``max`` for rates,
    ``min`` for times; ``key``: where ``fn`` returns a dict, the figure compared (the best dict is kept); ``agree``:
    where processes measure together (ranks), each one's wish to measure again in, the group's decision out, so all
    make the same calls. The one rule by which a lesson's figure or table of measurements is known to be steady or
    busy."""
    from .progress import progress
    runs = [[fn(p)] for p in progress(points, desc=desc)]
    deadline = time.perf_counter() + budget_s
    series = _best_of(runs, better, key)
    while agree(bool(runs) and len(runs[0]) < MAX_PASSES and (len(runs[0]) < 2 or (series.spread > SPREAD_LIMIT
                                                                                 and time.perf_counter() < deadline))):
        for run, p in zip(runs, points):
            run.append(fn(p))
        series = _best_of(runs, better, key)
    return series


def _best_of(runs: list[list], better, key: str | None = None) -> Measured:
    figure = (lambda v: v[key]) if key else (lambda v: v)
    series = Measured(better(run, key=figure) for run in runs)
    series.passes = len(runs[0]) if runs else 0
    series.spread = max((_gap(sorted(map(figure, run), reverse=better is max)[:2]) for run in runs if len(run) > 1),
                        default=0.0)
    return series


def _gap(two: list[float]) -> float:
    """How far the second-best of two values is from the best, as a share of the larger."""
    high = max(abs(v) for v in two)
    return abs(two[0] - two[1]) / high if high else 0.0


def title(rising: str, other: str, *series: Sequence) -> str:
    """A figure's title from its points: ``rising`` only where every series rises (:func:`rises`), else ``other``
    (the same text twice: a title that states no trend); a series that stayed noisy (a :class:`Measured` with a
    spread above :data:`SPREAD_LIMIT`) adds the busy label."""
    return "\n".join([rising if rising == other or (series and rises(*series)) else other, *busy_labels(*series)])


def busy_labels(*series) -> list[str]:
    """The busy labels of the series that stayed noisy (:class:`Measured`), in the current language."""
    return sorted({s.busy.text() for s in series if isinstance(s, Measured) and s.busy is not None})


def _cell(value) -> str:
    if isinstance(value, Message):
        value = value.text()
    if isinstance(value, float):
        value = f"{value:,.4g}" if abs(value) < 1e5 else f"{value:,.0f}"
    return html.escape("" if value is None else str(value)).replace("\n", "<br>")


def table_html(rows: Sequence[dict], columns: Iterable[str] | None = None,
               headers: dict[str, str | Message] | None = None) -> str:
    """An HTML table of ``rows`` (dicts); ``headers`` maps a column to its title."""
    columns = list(columns or (rows[0].keys() if rows else []))
    headers = headers or {}
    head = "".join(f"<th>{_cell(headers.get(c, c))}</th>" for c in columns)
    body = "".join("<tr>" + "".join(f"<td>{_cell(r.get(c))}</td>" for c in columns) + "</tr>" for r in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def show_table(rows: Sequence[dict], columns: Iterable[str] | None = None,
               headers: dict[str, str | Message] | None = None, measured: Sequence = ()) -> None:
    """Display ``rows`` as a table in the notebook; ``measured``: the :class:`Measured` series the rows show, whose
    busy label (if it stayed noisy) is printed under the table."""
    from IPython.display import HTML, display
    caption = "".join(f"<p>{html.escape(label)}</p>" for label in busy_labels(measured))
    display(HTML(table_html(rows, columns, headers) + caption))


@dataclass(frozen=True)
class Quiz:
    """A multiple-choice check of understanding: the question, its options, the right one's index and why."""

    question: Message
    options: tuple[Message, ...]
    answer: int
    explain: Message


def load_quiz(key: str) -> Quiz:
    """The quiz ``key`` (``"m03.apple_capacity"``) from its module's ``data/quizzes.yaml``, where every quiz is kept,
    so that a lesson's code shows neither answer nor explanation; KeyError (bilingual) if there is none."""
    module_id, _, name = key.partition(".")
    found = _quizzes(module_id)
    if name not in found:
        from .i18n import msg
        raise KeyError(str(msg("lesson.unknown_quiz", key=key,
                               valid=", ".join(f"{module_id}.{n}" for n in found) or "-")))
    record = found[name]
    return Quiz(Message(**record["question"]), tuple(Message(**o) for o in record["options"]), record["answer"],
                Message(**record["explain"]))


@lru_cache(maxsize=None)
def _quizzes(module_id: str) -> dict:
    """The quizzes of module ``module_id`` by name (none for an unknown module or one without quizzes)."""
    if modules.folder(module_id) is None:
        return {}
    path = modules.path(module_id) / "data" / "quizzes.yaml"
    return read_yaml(path) if path.is_file() else {}


def quiz(key: str) -> None:
    """Display the quiz ``key`` (:func:`load_quiz`): whether the choice is right, and why.

    Returns nothing, so a quiz that ends its cell is displayed once (Jupyter would show a returned widget again).
    """
    from IPython.display import display
    display(quiz_widget(load_quiz(key)))


def quiz_widget(q: Quiz):
    """The quiz of :func:`quiz` as a widget (not displayed)."""
    import ipywidgets as w

    choice = w.RadioButtons(options=[(o.text(), i) for i, o in enumerate(q.options)], value=None,
                            layout=w.Layout(width="auto"))
    button = w.Button(description=t("확인", "Check"))
    out = w.Output()

    def on_click(_):
        out.clear_output()
        with out:
            if choice.value is None:
                print(t("보기를 하나 고르세요.", "Pick one option."))
            elif choice.value == q.answer:
                print("✅ " + q.explain.text())
            else:
                print("❌ " + t("다시 생각해 보세요.", "Not quite; think again."))

    button.on_click(on_click)
    return w.VBox([w.HTML(f"<b>{html.escape(q.question.text())}</b>"), choice, button, out])
