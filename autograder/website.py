"""The course's website: one Sphinx site per language (MyST-NB, sphinx-book-theme), built from the files a learner
opens. ``python3 -m autograder site`` stages a source tree per language in a temporary folder (the lessons' and
exercises' notebooks in that language at their repository paths, a start page from ``data/modules.json``, the
glossary from ``data/glossary.yaml``, the instructor guide's half in that language), builds both side by side, each
in its own process, and writes ``ko/``, ``en/`` and a root ``index.html`` that picks the reader's language.

Lessons are executed while building (a cell that raises stops the build); exercises are shown as they are (their
stubs raise). Under each cell tagged ``measured`` in a lesson's one source the page says which machine measured it,
when, and that the reader's run will differ. Every page has a bar at its top: the same page in the other language
(keeping the section: the anchors are the same in both) and, on a notebook's page, the launch buttons of
:func:`autograder.launch.buttons`. Notebooks link to each other as JupyterLab does (``X.en.ipynb#cell-id=sec-…``);
the staged copies link to the pages (``X.en.html#sec-…``). This module is also the Sphinx extension that draws the bar.
"""
from __future__ import annotations

import atexit
import datetime
import html
import importlib.util
import json
import os
import posixpath
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from . import layout, standalone
from .i18n import msg

LANGS = layout.LANGS
EXTRA = "site"
NEEDS = ("sphinx", "myst_nb", "sphinx_book_theme", "linkify_it", "bs4")
ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "_build" / "site"
WIDGET = "application/vnd.jupyter.widget-view+json"  # a widget's view, drawn from its saved state
MEASURED = "measured"  # the cell tag of a lesson's measuring cells
LINK = re.compile(r"(?P<open>\]\(|href=\")(?P<target>[^)\s\"]+)")
SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
LANG_FILE = re.compile(r"\.(ko|en)\.ipynb$")
HEADING_ID = re.compile(r"^(#+ .*?)\s*\{#([A-Za-z0-9_-]+)\}\s*$", re.MULTILINE)
CELL_TIMEOUT_S = 600  # a lesson cell's limit while building: generous (cells run in seconds), a loaded 2-core machine too
STATIC = {
    "course.css": """
.course-bar { display: flex; flex-wrap: wrap; gap: .4rem .6rem; align-items: center; margin: 0 0 1.2rem;
  padding: .5rem .7rem; border: 1px solid var(--pst-color-border); border-radius: .4rem; font-size: .9rem; }
.course-bar a { text-decoration: none; }
.course-lang { font-weight: 600; margin-right: auto; }
.course-button { padding: .15rem .55rem; border: 1px solid var(--pst-color-primary); border-radius: 1rem; }
.course-note { flex-basis: 100%; margin: 0; font-size: .85rem; color: var(--pst-color-text-muted); }
.measured-note { font-size: .85rem; color: var(--pst-color-text-muted); border-left: 3px solid var(--pst-color-warning);
  padding-left: .6rem; margin: .3rem 0 1rem; }
.bd-article img { max-width: 100%; height: auto; }
.bd-article p, .bd-article li { overflow-wrap: break-word; }
.bd-article code.literal, .bd-article code.literal span.pre { overflow-wrap: anywhere; white-space: normal; }
@media (max-width: 960px) { .bd-article table { display: block; max-width: 100%; overflow-x: auto; } }
html[lang="ko"] .bd-article p, html[lang="ko"] .bd-article li, html[lang="ko"] .bd-article h1,
html[lang="ko"] .bd-article h2 { word-break: keep-all; }
.bd-article .cell_output, .bd-article div.highlight, .bd-article pre { max-width: 100%; overflow-x: auto; }
""",
    "course.js": """
document.addEventListener("click", (event) => {
  const link = event.target.closest("a.course-lang");
  if (link && window.location.hash) { link.href = link.href.split("#")[0] + window.location.hash; }
});
""",
}


def text(key: str, lang: str, **values) -> str:
    return msg(key, **values).text(lang)


# ---------------------------------------------------------------- what the site holds

def notebooks(lang: str, root: Path = ROOT) -> list[str]:
    """The repository paths of the notebooks that have a page in ``lang``: lessons, then exercises, module order."""
    lessons = [layout.lesson(m.id, lang).as_posix() for m in layout.modules(root, "lesson")]
    exercises = [layout.in_language(layout.exercise(m.id, "exercises"), lang).as_posix()
                 for m in layout.modules(root, "exercise")]
    return [p for p in lessons + exercises if (root / p).is_file()]


def page_of(path: str) -> str:
    """A notebook's page name (its path without ``.ipynb``): Sphinx writes it to ``<page>.html``."""
    return path[: -len(".ipynb")] if path.endswith(".ipynb") else path


def other(lang: str) -> str:
    return "en" if lang == "ko" else "ko"


def in_other_language(pagename: str, lang: str) -> str:
    """The same page in the other language (a notebook's name carries its language; other pages have one name)."""
    return re.sub(rf"\.{lang}$", f".{other(lang)}", pagename)


def up(pagename: str) -> str:
    """From a page to its site's root (``ko/``, ``en/``)."""
    return "../" * pagename.count("/")


def repository_url() -> str:
    """The repository's files on the web (``<repository>/blob/<branch>``), for links to files that are not pages."""
    from . import launch
    settings = launch.settings()
    return f"{settings['repository'].rstrip('/')}/blob/{settings['branch']}"


def link_target(target: str, page: str, lang: str, root: Path = ROOT) -> str:
    """Where a link of the notebook ``page`` (repository path) points on the site: a notebook's page in this language
    or, where it names the other one, the other site's page; ``#cell-id=X`` as ``#X``; a repository file that is not
    a page, on the repository's web view. Anything else is kept."""
    if SCHEME.match(target) or target.startswith("/"):
        return target
    path, hash_, anchor = target.partition("#")
    anchor = anchor.removeprefix("cell-id=")
    fragment = f"#{anchor}" if hash_ else ""
    if not path:
        return fragment or target
    repo = posixpath.normpath(posixpath.join(posixpath.dirname(page), path))
    if repo.startswith("../") or not (root / repo).exists():
        return target
    if repo.endswith(".ipynb"):
        named = LANG_FILE.search(repo)
        if not named and (root / layout.in_language(Path(repo), lang)).is_file():
            repo, named = layout.in_language(Path(repo), lang).as_posix(), None
        to = named.group(1) if named else lang
        html_path = page_of(repo) + ".html"
        if to == lang:
            return posixpath.relpath(html_path, posixpath.dirname(page) or ".") + fragment
        return f"{up(page)}../{to}/{html_path}{fragment}"
    return f"{repository_url()}/{repo}{fragment}"


def rewrite_links(source: str, page: str, lang: str, root: Path = ROOT) -> str:
    return LINK.sub(lambda m: m["open"] + link_target(m["target"], page, lang, root), source)


def machine() -> str:
    """The building machine as the course's hardware detection names it: the CPU model, then each accelerator."""
    from . import hardware
    report = hardware.detect()
    return " / ".join([report.cpu.model, *(acc.name for acc in report.accelerators)])


def measured_note(lang: str, machine_name: str, date: str) -> str:
    return f'<p class="measured-note">{html.escape(text("site.measured_note", lang, machine=machine_name, date=date))}</p>'


# ---------------------------------------------------------------- staging one language's source tree

def stage_notebook(path: str, lang: str, dest: Path, note: str | None, root: Path = ROOT) -> None:
    """The notebook ``path`` in ``dest`` at the same path: links made the site's, ``note`` (HTML) under each cell
    tagged ``measured``, and the set-up cell (``standalone.CELL_ID``) not shown."""
    import nbformat
    nb = nbformat.read(root / path, as_version=4)
    cells = []
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            cell.source = rewrite_links(cell.source, path, lang, root)
        if cell.get("id") == standalone.CELL_ID:  # the set-up of a notebook opened alone: nothing a reader needs
            cell.metadata["tags"] = [*cell.metadata.get("tags", []), "remove-cell"]
        cells.append(cell)
        if note and cell.cell_type == "code" and MEASURED in cell.metadata.get("tags", []):
            cells.append(nbformat.v4.new_markdown_cell(note, id=f"{cell.id}-measured"[:64]))
    nb.cells = cells
    if not path.startswith("lessons/"):
        nb.metadata["mystnb"] = {"execution_mode": "off"}  # an exercise as it is: its stubs raise
    target = dest / path
    target.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, target)
    for data in (root / path).parent.iterdir():  # the data files beside it (an exercise's logs)
        if data.is_file() and data.suffix != ".ipynb":
            shutil.copy2(data, target.parent / data.name)


def term_anchor(term_en: str) -> str:
    """A glossary term's anchor, the same in both languages: ``term-`` and its English name in lowercase words."""
    return "term-" + re.sub(r"[^a-z0-9]+", "-", term_en.lower()).strip("-")


def glossary_page(lang: str) -> str:
    from . import glossary
    lines = [f"# {text('site.glossary', lang)}", "", text("site.glossary_intro", lang), ""]
    terms = sorted(glossary.terms(), key=glossary.korean_order) if lang == "ko" else glossary.terms()
    for term in terms:
        heading = term.term_en if lang == "en" else (
            term.term_ko if term.term_en.lower() in term.term_ko.lower() else f"{term.term_ko} ({term.term_en})")
        lines += [f"({term_anchor(term.term_en)})=", f"## {_escape(heading)}", "", _escape(term.definition.text(lang)), ""]
    return "\n".join(lines)


def _escape(words: str) -> str:
    """Text from data shown as it is, not read as Markdown."""
    return re.sub(r"([\\`*_\[\]<>#|$])", r"\\\1", words)


def instructor_page(lang: str, root: Path = ROOT) -> str:
    """The instructor guide's half in ``lang`` (its ``## 한국어`` / ``## English`` sections), its headings' ids
    (``{#hub-links}``) as MyST targets and its links to repository files on the repository's web view."""
    source = (root / "docs" / "instructor.md").read_text(encoding="utf-8")
    title = source.splitlines()[0]
    parts = re.split(r"^## (?:한국어|English)\s*$", source, flags=re.MULTILINE)
    half = parts[1] if lang == "ko" else parts[2]
    half = re.sub(r"^---\s*$", "", half, flags=re.MULTILINE).strip()
    half = HEADING_ID.sub(lambda m: f"({m[2]})=\n{m[1]}", half)
    half = re.sub(r"^(#+) ", lambda m: m[1][:-1] + " " if len(m[1]) > 2 else m[1] + " ", half, flags=re.MULTILINE)
    half = rewrite_links(half, "docs/instructor.md", lang, root)
    heading = title.split(" / ")[0 if lang == "ko" else -1].lstrip("# ").strip()
    return f"# {heading}\n\n{half}\n"


def index_page(lang: str, root: Path = ROOT) -> str:
    """The site's start page: the course's modules in order, each lesson and exercise, then the reference pages."""
    lines = [f"# {text('site.title', lang)}", "", text("site.intro", lang), ""]
    toc = []
    for m in layout.modules(root):
        lesson = layout.lesson(m.id, lang).as_posix() if "lesson" in m.has else None
        exercise = layout.in_language(layout.exercise(m.id, "exercises"), lang).as_posix() if "exercise" in m.has else None
        if lesson is None or not (root / lesson).is_file():
            continue
        line = f"- [{m.number} · {_escape(m.title(lang))}]({page_of(lesson)}.html)"
        toc.append(page_of(lesson))
        if exercise and (root / exercise).is_file():
            line += f" · [{text('site.exercise_of', lang, number=m.number)}]({page_of(exercise)}.html)"
            toc.append(page_of(exercise))
        lines.append(line)
    lines += ["", f"- [{text('site.glossary', lang)}](glossary.html)", f"- [{text('site.instructor', lang)}](instructor.html)", ""]
    lessons = [p for p in toc if p.startswith("lessons/")]
    exercises = [p for p in toc if p.startswith("exercises/")]
    for caption, pages in ((text("site.lessons", lang), lessons), (text("site.exercises", lang), exercises),
                           (text("site.reference", lang), ["glossary", "instructor"])):
        lines += ["```{toctree}", ":hidden:", ":maxdepth: 1", f":caption: {caption}", "", *pages, "```", ""]
    return "\n".join(lines)


def conf(lang: str, execute: bool, hub: str | None) -> str:
    """The staged tree's ``conf.py``."""
    settings = {
        "project": text("site.title", lang), "html_title": text("site.title", lang), "language": lang,
        "extensions": ["myst_nb", "autograder.website"],
        "exclude_patterns": ["_build", "**.ipynb_checkpoints"],
        "html_theme": "sphinx_book_theme",
        "html_theme_options": {"show_toc_level": 2, "use_download_button": True, "use_fullscreen_button": False},
        "html_context": {"default_mode": "light"},
        "html_static_path": ["_static"], "html_css_files": ["course.css"], "html_js_files": ["course.js"],
        "smartquotes": False,  # the text as the notebooks have it
        "html_copy_source": False, "html_show_sourcelink": False, "html_last_updated_fmt": None,
        "myst_enable_extensions": ["dollarmath", "html_image", "linkify"],  # bare addresses are links, as in JupyterLab
        "myst_all_links_external": True,  # staged links already point at the pages (link_target)
        "nb_execution_mode": "force" if execute else "off",
        "nb_execution_timeout": CELL_TIMEOUT_S,
        "nb_execution_raise_on_error": True,
        "nb_execution_show_tb": True,
        "nb_merge_streams": True,
        "suppress_warnings": ["myst.header", "mystnb.unknown_mime_type"],
        "course_lang": lang, "course_hub": hub,
    }
    return "\n".join(f"{key} = {value!r}" for key, value in settings.items()) + "\n"


def stage(lang: str, dest: Path, execute: bool, hub: str | None, note: str | None, root: Path = ROOT) -> list[str]:
    """Write ``lang``'s source tree into ``dest``; its pages' names."""
    dest.mkdir(parents=True, exist_ok=True)
    (dest / "conf.py").write_text(conf(lang, execute, hub), encoding="utf-8")
    (dest / "_static").mkdir(exist_ok=True)
    for name, body in STATIC.items():
        (dest / "_static" / name).write_text(body.lstrip(), encoding="utf-8")
    (dest / "index.md").write_text(index_page(lang, root), encoding="utf-8")
    (dest / "glossary.md").write_text(glossary_page(lang), encoding="utf-8")
    (dest / "instructor.md").write_text(instructor_page(lang, root), encoding="utf-8")
    pages = ["index", "glossary", "instructor"]
    for path in notebooks(lang, root):
        stage_notebook(path, lang, dest, note if path.startswith("lessons/") else None, root)
        pages.append(page_of(path))
    return pages


# ---------------------------------------------------------------- building

def ensure_installed() -> None:
    """The ``site`` extra, installed where the installed course declares it (:func:`autograder.optional.ensure`);
    a clear error naming the install command where it is still missing."""
    from . import optional
    failed = optional.ensure(EXTRA, msg("site.why"))
    absent = [name for name in NEEDS if importlib.util.find_spec(name) is None]
    if absent or failed:
        why = ", ".join(absent or failed)
        raise SystemExit(str(msg("site.missing", why=why)))


def build_env(lang: str, scratch: Path) -> dict:
    """The builder's environment: the page's language, and a configuration and cache of its own, so that nothing
    of the builder's user changes; figures drawn inline."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("COURSE_", "JUPYTER"))}
    env.update(COURSE_LANG=lang, COURSE_NO_PROGRESS="1", XDG_CONFIG_HOME=str(scratch / "config"),
               COURSE_CACHE_DIR=str(scratch / "cache"), MPLBACKEND="module://matplotlib_inline.backend_inline",
               PYTHONPATH=os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]))
    return env


def root_index(langs: tuple[str, ...]) -> str:
    """The root page: a link per language, and a script that goes to the browser's language."""
    links = "\n".join(f'<li><a href="{lang}/index.html" hreflang="{lang}" lang="{lang}">'
                      f'{html.escape(text("site.title", lang))} ({"한국어" if lang == "ko" else "English"})</a></li>'
                      for lang in langs)
    pick = " / ".join(text("site.pick_language", lang) for lang in langs)
    script = ("" if len(langs) < 2 else
              "<script>const l=(navigator.languages||[navigator.language||'']).find(x=>x)||'';"
              "window.location.replace((l.toLowerCase().startsWith('ko')?'ko':'en')+'/index.html'+window.location.hash);"
              "</script>")
    return (f'<!DOCTYPE html>\n<html><head><meta charset="utf-8"><meta name="viewport" '
            f'content="width=device-width, initial-scale=1"><title>{html.escape(pick)}</title>{script}</head>\n'
            f"<body><h1>{html.escape(pick)}</h1><ul>\n{links}\n</ul></body></html>\n")


def build(out: Path = DEFAULT_OUT, langs: tuple[str, ...] = LANGS, hub: str | None = None, execute: bool = True,
          root: Path = ROOT) -> dict:
    """Build the site into ``out``: each language in its own process, side by side. ``{"seconds", "pages"}``
    (pages: per language); a SystemExit saying which language failed where one did."""
    ensure_installed()
    out = Path(out).resolve()
    start = time.perf_counter()
    note = measured_note_maker()
    with tempfile.TemporaryDirectory(prefix="aihw-site-") as tmp:
        tmp = Path(tmp)
        procs, pages = {}, {}
        for lang in langs:
            src, scratch = tmp / "src" / lang, tmp / "scratch" / lang
            pages[lang] = stage(lang, src, execute, hub, note(lang), root)
            scratch.mkdir(parents=True)
            log = open(tmp / f"sphinx-{lang}.log", "wb")
            procs[lang] = (subprocess.Popen(
                [sys.executable, "-m", "sphinx", "-b", "html", "-q", "-d", str(scratch / "doctrees"), str(src),
                 str(scratch / "html")], cwd=src, env=build_env(lang, scratch), stdout=log, stderr=subprocess.STDOUT), log)
        failed = []
        for lang, (proc, log) in procs.items():
            code = proc.wait()
            log.close()
            words = (tmp / f"sphinx-{lang}.log").read_text(encoding="utf-8", errors="replace")
            if words.strip():
                print(words[-20000:], file=sys.stderr if code else sys.stdout)
            if code:
                failed.append(str(msg("site.failed", lang=lang, code=code)))
        if failed:
            raise SystemExit("\n".join(failed))
        out.mkdir(parents=True, exist_ok=True)
        for lang in langs:  # MyST-NB keeps its executed copies beside the output: the output alone is the site
            if (out / lang).exists():
                shutil.rmtree(out / lang)
            shutil.move(tmp / "scratch" / lang / "html", out / lang)
    (out / "index.html").write_text(root_index(tuple(langs)), encoding="utf-8")
    (out / ".nojekyll").write_text("", encoding="utf-8")
    seconds = time.perf_counter() - start
    return {"seconds": seconds, "pages": {lang: len(p) for lang, p in pages.items()}}


def measured_note_maker():
    """The measured-figure note in a language: this machine (``hardware.detect``) and today's date (UTC)."""
    name, date = machine(), datetime.datetime.now(datetime.timezone.utc).date().isoformat()
    return lambda lang: measured_note(lang, name, date)


def main(out: str | None, lang: str | None, hub: str | None, execute: bool) -> int:
    """``python3 -m autograder site``."""
    langs = (lang,) if lang else LANGS
    out = Path(out) if out else DEFAULT_OUT
    done = build(out, langs, hub, execute)
    pages = "/".join(str(n) for n in done["pages"].values())
    print(msg("site.built", path=out / "index.html", seconds=done["seconds"], pages=pages))
    return 0


# ---------------------------------------------------------------- the Sphinx extension: the bar on every page

def bar(pagename: str, lang: str, hub: str | None, widgets: bool = False) -> str:
    """The bar at a page's top: the language switch, and on a notebook's page its launch buttons (and, where the page
    shows widgets, that they answer only in a running notebook)."""
    to = other(lang)
    switch = (f'<a class="course-lang" hreflang="{to}" lang="{to}" '
              f'href="{up(pagename)}../{to}/{in_other_language(pagename, lang)}.html">{text("site.other_language", lang)}</a>')
    parts = [switch]
    if pagename.startswith(("lessons/", "exercises/")):
        from . import launch
        for button in launch.buttons(pagename + ".ipynb", lang, hub):
            url = button.url or f"{up(pagename)}instructor.html#hub-links"
            parts.append(f'<a class="course-button" data-kind="{button.kind}" href="{html.escape(url)}">'
                         f"{html.escape(button.label)}</a>")
        if pagename.startswith("exercises/"):
            parts.append(f'<p class="course-note">{html.escape(text("site.exercise_note", lang))}</p>')
        elif widgets:
            parts.append(f'<p class="course-note">{html.escape(text("site.widget_note", lang))}</p>')
    return '<div class="course-bar">' + "".join(parts) + "</div>\n"


def _page_context(app, pagename, templatename, context, doctree) -> None:
    if doctree is not None and "body" in context:
        widgets = WIDGET in context["body"]
        context["body"] = bar(pagename, app.config.course_lang, app.config.course_hub, widgets) + context["body"]


def _steady_kernels() -> None:
    """Two changes to how nbclient runs the lessons' kernels while building. Its mirror of each ipywidgets Output
    widget (``interact`` draws into one) sends the widget's state to the kernel on the shell socket while it awaits
    the cell's reply on that same socket, and now and then the reply is never seen, so the build waits for the cell's
    time limit (jupyter/nbclient#312, open): without the mirror the widget's outputs are the cell's own, which is what
    a page without a kernel can show anyway. And kernels talk over Unix sockets (``ipc``), not TCP ports that two
    kernels starting at once in the two builds (or other programs) may both pick."""
    import nbclient
    from traitlets.config import Config
    init = nbclient.NotebookClient.__init__
    if getattr(init, "course_steady", False):
        return
    sockets = tempfile.mkdtemp(prefix="aihw-kernels-")  # an absolute path: a kernel runs in its notebook's folder
    atexit.register(shutil.rmtree, sockets, True)

    def steady(self, *args, **kwargs):
        config = Config(kwargs.pop("config", None) or {})
        config.KernelManager.transport = "ipc"
        config.KernelManager.ip = os.path.join(sockets, "kernel")
        init(self, *args, config=config, **kwargs)
        self.widget_registry = {}
    steady.course_steady = True
    nbclient.NotebookClient.__init__ = steady


def setup(app):
    """The Sphinx extension (``conf.py``'s ``extensions``)."""
    _steady_kernels()
    app.add_config_value("course_lang", "en", "html")
    app.add_config_value("course_hub", None, "html")
    app.connect("html-page-context", _page_context)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
