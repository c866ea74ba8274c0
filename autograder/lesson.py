"""What lessons and exercises call: set-up, bilingual text, tables from data, quizzes."""
from __future__ import annotations

import html
import os
from typing import Iterable, Sequence

from . import plotting
from .i18n import Message, get_language, set_language


def notebook_language() -> str | None:
    """``ko``/``en`` from the running notebook's file name (``lesson.ko.ipynb``), if known."""
    name = os.environ.get("JPY_SESSION_NAME", "")  # jupyter-server sets it for each kernel
    for lang in ("ko", "en"):
        if name.endswith(f".{lang}.ipynb"):
            return lang
    return None


def setup(lang: str | None = None) -> str:
    """Prepare plots for Korean text and choose the language; returns the language.

    Order: ``lang`` argument, then ``COURSE_LANG``, then the notebook's name, else both.
    """
    plotting.setup()
    chosen = lang or (None if os.environ.get("COURSE_LANG") else notebook_language())
    if chosen:
        set_language(chosen)
    return get_language()


def t(ko: str, en: str) -> str:
    """Text for the current language (``"ko / en"`` when both are shown)."""
    lang = get_language()
    return ko if lang == "ko" else en if lang == "en" else f"{ko} / {en}"


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
               headers: dict[str, str | Message] | None = None) -> None:
    """Display ``rows`` as a table in the notebook."""
    from IPython.display import HTML, display
    display(HTML(table_html(rows, columns, headers)))


def quiz(question: Message, options: Sequence[Message], answer: int, explain: Message):
    """A multiple-choice check of understanding; shows whether the choice is right and why."""
    import ipywidgets as w

    choice = w.RadioButtons(options=[(o.text(), i) for i, o in enumerate(options)], value=None,
                            layout=w.Layout(width="auto"))
    button = w.Button(description=t("확인", "Check"))
    out = w.Output()

    def on_click(_):
        out.clear_output()
        with out:
            if choice.value is None:
                print(t("보기를 하나 고르세요.", "Pick one option."))
            elif choice.value == answer:
                print("✅ " + explain.text())
            else:
                print("❌ " + t("다시 생각해 보세요.", "Not quite; think again."))

    button.on_click(on_click)
    box = w.VBox([w.HTML(f"<b>{html.escape(question.text())}</b>"), choice, button, out])
    from IPython.display import display
    display(box)
    return box
