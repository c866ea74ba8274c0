"""The learner's journey in a real browser (issue 16): the course's JupyterLab, as ``python3 -m autograder start``
runs it, on a fresh clone, driven by Playwright in Chromium.

Two servers on the loopback interface, one per interface language (the start page's language decides it), each
in its own fresh copy of the course. In them: the start page in both languages (no tofu, links to lessons open),
all cells of a Korean and an English lesson (no error or stderr output, every figure drawn, every quiz shown once,
a slider moved changes its output, no widget error), an exercise (a check before its answer shows the bilingual ❌,
the answer typed in makes it ✅, Validate reports the right result), the Assignments list and the Formgrader (no
error), and no browser console error anywhere. Screenshots of each step go to the folder the run prints
(``COURSE_BROWSER_SHOTS`` names one).

Needs Playwright for Python (the ``browser`` extra) and a Chromium (``/usr/bin/chromium``, Debian's package; Playwright's
own download is not used). Outside CI the suite skips when they are missing, saying why; in CI it must run.
"""
import contextlib
import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat
import pytest

from autograder import bootstrap, layout
from autograder.grading.course import REPO
from fixtures.browser import browser  # noqa: F401 (a fixture)
from fixtures.servers import free_port, fresh_copy, request, stop, wait_for

LESSONS = {"ko": "lessons/01_devices/01_devices.ko.ipynb", "en": "lessons/03_memory_hierarchy/03_memory_hierarchy.en.ipynb"}
EXERCISE = "exercises/03_memory_hierarchy/03_memory_hierarchy_exercise.ipynb"
RUN_S = 600  # a lesson's Run All on a loaded 2-core machine


@pytest.fixture(scope="module")
def shots(request):
    folder = Path(os.environ.get("COURSE_BROWSER_SHOTS") or tempfile.mkdtemp(prefix="aihw-browser-"))
    folder.mkdir(parents=True, exist_ok=True)
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write_line(f"browser screenshots: {folder}")
    return folder


@pytest.fixture(scope="module")
def labs():
    """One JupyterLab per interface language, each in a fresh clone, started as `autograder start` starts it
    (bootstrap.lab_command)."""
    tmp = Path(tempfile.mkdtemp(prefix="aihw-lab-"))
    servers, procs = {}, []
    try:
        for lang in ("ko", "en"):
            root = fresh_copy(tmp / lang)
            port, token = free_port(), secrets.token_hex(16)
            log = tmp / f"lab-{lang}.log"
            env = {k: v for k, v in os.environ.items() if not k.startswith(("JUPYTER", "COURSE_"))}
            env.update(COURSE_NO_PROGRESS="1", MPLBACKEND="module://matplotlib_inline.backend_inline",
                       XDG_CONFIG_HOME=str(tmp / f"config-{lang}"))  # the start page remembers its language here
            cmd, env = bootstrap.lab_command(
                lang, ["--no-browser", "--ip=127.0.0.1", f"--port={port}", "--port-retries=0",
                       f"--IdentityProvider.token={token}", "--LabApp.expose_app_in_browser=True"],
                env, root=root, jupyter=Path(sys.executable).parent / "jupyter")
            with open(log, "wb") as out:
                proc = subprocess.Popen(cmd, cwd=root, env=env, stdout=out, stderr=subprocess.STDOUT,
                                        start_new_session=True)
            procs.append(proc)
            wait_for(f"http://127.0.0.1:{port}/api/status", token, proc, log)
            servers[lang] = {"url": f"http://127.0.0.1:{port}", "token": token, "root": root, "log": log}
        yield servers
    finally:
        for proc in procs:
            stop(proc)
        shutil.rmtree(tmp, ignore_errors=True)


class Lab:
    """One browser page on one server; console errors and page errors are collected as they happen."""

    def __init__(self, browser, server, shots: Path, name: str, viewport: tuple[int, int] = (1400, 900)):
        self.server, self.shots, self.name, self.errors, self.step = server, shots, name, [], 0
        self.page = browser.new_page(viewport={"width": viewport[0], "height": viewport[1]})
        self.page.on("console", lambda m: self.errors.append(f"console {m.type}: {m.text}") if m.type == "error" else None)
        self.page.on("pageerror", lambda e: self.errors.append(f"page error: {e}"))

    def open(self, path: str) -> None:
        self.visit(f"{self.server['url']}/lab/tree/{path}?reset&token={self.server['token']}")  # a fresh workspace

    def visit(self, url: str) -> None:
        """Until the document ``url`` opens is ready and its kernel (if any) idle."""
        self.page.goto(url)
        self.page.wait_for_function("() => window.jupyterapp && window.jupyterapp.shell.currentWidget", timeout=60_000)
        self.page.wait_for_function(
            "() => { const w = window.jupyterapp.shell.currentWidget; return w && w.context && w.context.isReady"
            " && (!w.sessionContext || (w.sessionContext.session && w.sessionContext.session.kernel"
            " && w.sessionContext.session.kernel.status === 'idle')); }", timeout=120_000)

    def shot(self, what: str) -> Path:
        self.step += 1
        path = self.shots / f"{self.name}-{self.step:02d}-{what}.png"
        self.page.screenshot(path=str(path), full_page=False)
        return path

    def command(self, command_id: str, args: dict | None = None):
        return self.page.evaluate("([c, a]) => window.jupyterapp.commands.execute(c, a)", [command_id, args or {}])

    def run_all(self, seconds: float = RUN_S) -> None:
        self.command("notebook:run-all-cells")
        self.wait_idle(seconds)

    def wait_idle(self, seconds: float = RUN_S) -> None:
        """Until no cell is queued or running and the kernel is idle."""
        self.page.wait_for_timeout(500)
        self.page.wait_for_function(
            "() => { const w = window.jupyterapp.shell.currentWidget;"
            " const busy = [...w.content.node.querySelectorAll('.jp-InputArea-prompt')].some(p => p.textContent.includes('*'));"
            " return !busy && w.sessionContext.session.kernel.status === 'idle'; }", timeout=seconds * 1000, polling=500)
        self.page.wait_for_timeout(500)

    def cells(self) -> list[dict]:
        """The notebook model's cells as JSON (source, outputs), as JupyterLab holds them now."""
        return self.page.evaluate(
            "() => window.jupyterapp.shell.currentWidget.content.model.toJSON().cells")


def _text(output: dict) -> str:
    if output.get("output_type") == "stream":
        return "".join(output.get("text", ""))
    if output.get("output_type") == "error":
        return "\n".join(output.get("traceback", []))
    data = output.get("data", {})
    return "".join(data.get("text/plain", ""))


def no_tofu(page, selector: str, chars: str = "가힣한") -> bool:
    """``chars`` render in ``selector``'s font as real glyphs: each differs from the others and from a character no
    font has (tofu boxes would all be the same box)."""
    return page.evaluate("""([sel, chars]) => {
        const el = document.querySelector(sel); if (!el) return false;
        const s = getComputedStyle(el); const font = `${s.fontSize} ${s.fontFamily}`;
        const draw = (ch) => { const c = document.createElement('canvas'); c.width = 48; c.height = 48;
            const x = c.getContext('2d'); x.font = font; x.fillStyle = '#000'; x.fillText(ch, 4, 36);
            return Array.from(x.getImageData(0, 0, 48, 48).data).join(','); };
        const shapes = [...chars].map(draw);
        return new Set(shapes).size === shapes.length && !shapes.includes(draw('\\u{10FFFD}')); }""", [selector, chars])


@pytest.mark.parametrize("lang", ["ko", "en"])
def test_start_page_renders_and_its_links_open_lessons(browser, labs, shots, lang):
    lab = Lab(browser, labs[lang], shots, f"start-{lang}")
    lab.open(f"lessons/00_start_here/00_start_here.{lang}.ipynb")
    lab.shot("start-page")
    assert no_tofu(lab.page, ".jp-MarkdownCell .jp-RenderedMarkdown"), "Hangul in the start page renders as boxes"
    menu = lab.page.locator(".lm-MenuBar-itemLabel").first.inner_text()
    assert (menu == "파일") == (lang == "ko"), f"interface language: the first menu reads {menu!r}"
    assert no_tofu(lab.page, ".lm-MenuBar-itemLabel"), "Hangul in the menus renders as boxes"
    link = lab.page.locator(f".jp-RenderedMarkdown table a[href*='01_devices/01_devices.{lang}.ipynb']").first  # the module map
    link.click()
    lab.page.wait_for_function(
        f"() => window.jupyterapp.shell.currentWidget && window.jupyterapp.shell.currentWidget.title.label === '01_devices.{lang}.ipynb'"
        " && window.jupyterapp.shell.currentWidget.context.path.includes('01_devices')", timeout=60_000)
    lab.shot("lesson-01-opened")
    assert not lab.errors, "\n".join(lab.errors)


def _figure_cells(cells: list[dict]) -> list[int]:
    """Code cells whose source draws a figure (plt.show or a returned Figure)."""
    return [i for i, c in enumerate(cells) if c["cell_type"] == "code"
            and re.search(r"plt\.show\(\)|\bdisplay\(fig\b", "".join(c["source"]))]


@pytest.mark.parametrize("lang", ["ko", "en"])
def test_a_lesson_runs_in_the_browser_without_errors(browser, labs, shots, lang):
    lab = Lab(browser, labs[lang], shots, f"lesson-{lang}")
    lab.open(LESSONS[lang])
    lab.run_all()
    lab.shot("run-all")
    cells = lab.cells()
    problems = []
    for i, cell in enumerate(cells):
        if cell["cell_type"] != "code":
            continue
        source = "".join(cell["source"])
        outputs = cell.get("outputs", [])
        for out in outputs:
            if out["output_type"] == "error":
                problems.append(f"cell {i}: error {out.get('ename')}: {out.get('evalue')}")
            if out["output_type"] == "stream" and out.get("name") == "stderr":
                problems.append(f"cell {i}: stderr: {_text(out)[:300]}")
        quizzes = len(re.findall(r"\bquiz\(", source))
        widgets = [o for o in outputs if "application/vnd.jupyter.widget-view+json" in o.get("data", {})]
        if quizzes and len(widgets) != quizzes:
            problems.append(f"cell {i}: {quizzes} quiz call(s), {len(widgets)} widget(s) shown")
    for i in _figure_cells(cells):
        if not any("image/png" in o.get("data", {}) for o in cells[i].get("outputs", [])):
            problems.append(f"cell {i}: no figure drawn")
    rendered = lab.page.evaluate("() => window.jupyterapp.shell.currentWidget.node.innerText")
    if "Error displaying widget" in rendered:
        problems.append("a widget shows 'Error displaying widget'")
    assert not problems, "\n".join(problems)
    slider = lab.page.locator(".widget-slider .noUi-handle, .widget-slider input[type=range]").first
    if slider.count():
        cell = slider.locator("xpath=ancestor::div[contains(@class,'jp-CodeCell')][1]")
        shown = ("(cell) => [...cell.querySelectorAll('.jp-OutputArea-output img, .jp-OutputArea-output pre')]"
                 ".map(e => e.src || e.textContent).join('|')")
        before = cell.evaluate(shown)
        slider.scroll_into_view_if_needed()
        slider.focus()
        for _ in range(3):
            lab.page.keyboard.press("ArrowRight")
        lab.page.wait_for_timeout(2500)
        lab.shot("slider-moved")
        assert before and cell.evaluate(shown) != before, "moving a slider did not change the figure or text it drives"
    _a_quiz_hides_its_answer_until_answered(lab, cells, lang)
    assert not lab.errors, "\n".join(lab.errors)


def _a_quiz_hides_its_answer_until_answered(lab, cells: list[dict], lang: str) -> None:
    """The lesson's first quiz, as a learner meets it: neither its answer nor its explanation shows; a wrong option
    checked says ❌ without them; the right one shows ✅ and the explanation, in the lesson's language."""
    from autograder.lesson import load_quiz
    index, key = next((i, m[1]) for i, c in enumerate(cells) if c["cell_type"] == "code"
                      for m in [re.search(r"quiz\([\"']([\w.]+)[\"']\)", "".join(c["source"]))] if m)
    q = load_quiz(key)
    explain = getattr(q.explain, lang)
    cell = lab.page.locator(".jp-Notebook .jp-Cell").nth(index)
    cell.scroll_into_view_if_needed()
    assert explain[:40] not in cell.inner_text(), f"quiz {key}: its explanation shows before any answer"
    options = cell.locator(".widget-radio-box input[type=radio]")
    wrong = (q.answer + 1) % options.count()
    for choice, mark in ((wrong, "❌"), (q.answer, "✅")):
        options.nth(choice).check()
        cell.locator("button.widget-button").click()
        lab.page.wait_for_timeout(1500)
        shown = cell.locator(".widget-output").inner_text()
        assert mark in shown and (explain[:40] in shown) == (mark == "✅"), f"quiz {key}, option {choice}: {shown!r}"
    lab.shot("quiz-answered")


def _reference_answer(exercise: str, cell_id: str) -> str:
    """The reference solution of an answer cell: the solutions notebook's cell without nbgrader's markers."""
    source = nbformat.read(str(REPO / exercise.replace("exercises/", "solutions/", 1)), as_version=4)
    cell = next(c for c in source.cells if c.get("id") == cell_id)
    return re.sub(r"^[ \t]*### (BEGIN|END) SOLUTION[ \t]*\n", "", cell.source, flags=re.M)


def test_an_exercise_check_validate_assignments_and_formgrader(browser, labs, shots):
    lab = Lab(browser, labs["ko"], shots, "exercise")
    lab.open(EXERCISE)
    cells = lab.cells()
    answer = next(i for i, c in enumerate(cells) if c.get("metadata", {}).get("nbgrader", {}).get("solution"))
    check = next(i for i, c in enumerate(cells) if i > answer and c.get("metadata", {}).get("nbgrader", {}).get("grade"))
    setup = [i for i, c in enumerate(cells) if c["cell_type"] == "code" and i < answer]
    notebook = "window.jupyterapp.shell.currentWidget.content"
    for i in setup + [answer, check]:  # the answer cell as released: its stub raises NotImplementedError
        lab.page.evaluate(f"(i) => {{ {notebook}.activeCellIndex = i; }}", i)
        lab.command("notebook:run-cell")
        lab.wait_idle()
    stub = "\n".join(_text(o) for o in lab.cells()[answer].get("outputs", []))
    assert "Traceback" not in stub, f"an unanswered task shows a stack trace:\n{stub}"
    verdict = "\n".join(_text(o) for o in lab.cells()[check].get("outputs", []))
    lab.shot("check-before-answer")
    assert "❌" in verdict and re.search(r"[\uac00-\ud7a3]", verdict) and re.search(r"[A-Za-z]{4}", verdict), verdict
    # Type the reference answer into the answer cell, as a learner would, then run it and its check.
    code = _reference_answer(EXERCISE, cells[answer]["id"])
    lab.page.evaluate(f"(i) => {{ {notebook}.activeCellIndex = i; }}", answer)
    editor = lab.page.locator(".jp-Notebook .jp-Cell.jp-mod-active .cm-content")
    editor.click()
    lab.page.keyboard.press("Control+a")
    lab.page.keyboard.press("Delete")
    lab.page.keyboard.insert_text(code)
    typed = "".join(lab.cells()[answer]["source"])
    assert typed.strip() == code.strip(), f"the editor changed the typed answer:\n{typed}"
    for i in (answer, check):
        lab.page.evaluate(f"(i) => {{ {notebook}.activeCellIndex = i; }}", i)
        lab.command("notebook:run-cell")
        lab.wait_idle()
    verdict = "\n".join(_text(o) for o in lab.cells()[check].get("outputs", []))
    lab.shot("check-after-answer")
    assert "✅" in verdict and "❌" not in verdict, verdict
    assert no_tofu(lab.page, ".jp-OutputArea-output pre", "✅🟡❌"), "the verdict marks render as boxes (no emoji font)"
    lab.command("docmanager:save")
    lab.page.get_by_role("button", name="Validate").click()
    dialog = lab.page.locator(".jp-Dialog")
    dialog.wait_for(timeout=RUN_S * 1000)
    lab.page.wait_for_function("() => !document.querySelector('.jp-Dialog').innerText.includes('Validating')",
                               timeout=RUN_S * 1000)
    lab.shot("validate")
    report = dialog.inner_text()
    assert "NotImplementedError" in report or "❌" in report, f"Validate with unanswered tasks must fail:\n{report[:2000]}"
    lab.page.keyboard.press("Escape")
    for command, where in (("nbgrader:open-assignment-list", "assignments"), ("nbgrader:open-formgrader", "formgrader")):
        lab.command(command)
        lab.page.wait_for_timeout(4000)
        lab.shot(where)
        text = lab.page.locator(".lm-DockPanel-widget:visible").last.inner_text()
        for bad in ("Error fetching courses", "does not exist", "Loading, please wait"):
            assert bad not in text, f"{where}: {bad!r}\n{text[:1500]}"
    assert not lab.errors, "\n".join(lab.errors)


def test_every_markdown_cell_renders_its_bold_in_jupyterlab(browser, labs, shots):
    """JupyterLab's own Markdown renderer on every markdown cell of every lesson and exercise: no literal `**`
    (CommonMark leaves it when a bold ending in punctuation or code is followed by a Hangul particle)."""
    notebooks = [*layout.lessons("ko", REPO), *layout.lessons("en", REPO), *layout.exercises("solutions", REPO)]
    sources, places = [], []
    for path in notebooks:
        for i, cell in enumerate(nbformat.read(str(path), as_version=4).cells):
            if cell.cell_type == "markdown" and "**" in cell.source:
                sources.append(cell.source)
                places.append(f"{path.relative_to(REPO)} cell {i}")
    lab = Lab(browser, labs["ko"], shots, "markdown")
    lab.open("lessons/00_start_here/00_start_here.ko.ipynb")
    left = lab.page.evaluate("""async (sources) => {
        const rm = window.jupyterapp.shell.currentWidget.content.rendermime;
        const found = [];
        for (const [i, source] of sources.entries()) {
            const renderer = rm.createRenderer('text/markdown');
            await renderer.renderModel(rm.createModel({data: {'text/markdown': source}}));
            renderer.node.querySelectorAll('code, pre').forEach(e => e.remove());
            const text = renderer.node.textContent;
            const at = text.indexOf('**');
            if (at >= 0) found.push([i, text.slice(Math.max(0, at - 40), at + 40)]);
        }
        return found;
    }""", sources)
    assert len(sources) > 100, "the notebooks' bold text was not found"
    assert not left, "literal ** after rendering:\n" + "\n".join(f"{places[i]}: …{snippet}…" for i, snippet in left)
    assert not lab.errors, "\n".join(lab.errors)


def test_a_section_link_scrolls_to_its_section(browser, labs, shots):
    """A link to a place far down a lesson scrolls there, though JupyterLab has not drawn that cell yet (issue 29:
    links to ``<a id>`` anchors did not; the built notebooks link to the cell, ``#cell-id=…``)."""
    lab = Lab(browser, labs["en"], shots, "section-link")
    lab.open("lessons/04_training_memory/04_training_memory.en.ipynb")
    lab.page.locator(".jp-RenderedMarkdown a[href*='#cell-id=sec-references']").first.click()
    lab.page.wait_for_function("""() => { const nb = window.jupyterapp.shell.currentWidget.content;
        const cell = nb.widgets.find(c => c.model.id === 'sec-references');
        if (!cell || !cell.node.isConnected) return false;
        const r = cell.node.getBoundingClientRect(), v = nb.node.getBoundingClientRect();
        return r.bottom > v.top && r.top < v.bottom; }""", timeout=30_000)
    lab.shot("scrolled-to-references")
    assert not lab.errors, "\n".join(lab.errors)


def _printed_url(server: dict) -> str:
    """The first address JupyterLab printed (its log), as a learner copies it: its token is the one JupyterLab
    made up; this server's was given on its command line, which JupyterLab prints as ``...``."""
    log = server["log"].read_text(errors="replace")
    found = re.search(r"(http://127\.0\.0\.1:\d+/\S*\?token=)\.\.\.", log)
    assert found, f"JupyterLab printed no address:\n{log[-2000:]}"
    return found[1] + server["token"]


@pytest.mark.parametrize("lang", ["ko", "en"])
def test_the_printed_address_opens_the_start_page_in_the_servers_language(browser, labs, shots, lang):
    """The address `autograder start` prints (the labs fixture starts JupyterLab with its command line,
    bootstrap.lab_command) opens the start page in that server's language as the current document."""
    lab = Lab(browser, labs[lang], shots, f"printed-{lang}")
    url = _printed_url(labs[lang])
    lab.visit(url)
    from playwright.sync_api import TimeoutError as PlaywrightTimeout
    start = layout.start().lesson(lang).as_posix()
    with contextlib.suppress(PlaywrightTimeout):  # the layout other tests left is restored first, then the page opens
        lab.page.wait_for_function(f"() => window.jupyterapp.shell.currentWidget.context.path === {start!r}",
                                   timeout=30_000)
    lab.shot("printed-address")
    path = lab.page.evaluate("() => window.jupyterapp.shell.currentWidget.context.path")
    assert path == start, f"{url} opened {path!r}"
    assert lab.page.evaluate("() => window.jupyterapp.shell.mode") == "multiple-document"  # a wide screen: all of it
    assert not lab.errors, "\n".join(lab.errors)


PHONE = (390, 844)  # CSS pixels of a phone's screen


def test_the_printed_address_opens_a_readable_start_page_on_a_phone(browser, labs, shots):
    """On a phone-size screen the printed address opens the start page in JupyterLab's single-document mode
    (autograder.start_page): the sidebars collapsed, the text a readable column, its title in view (the full
    interface left the notebook 27 px wide beside the file browser)."""
    lab = Lab(browser, labs["ko"], shots, "phone", viewport=PHONE)
    lab.visit(_printed_url(labs["ko"]))
    lab.shot("phone-start-page")
    shell = lab.page.evaluate("() => ({mode: window.jupyterapp.shell.mode, left: window.jupyterapp.shell.leftCollapsed,"
                              " path: window.jupyterapp.shell.currentWidget.context.path})")
    assert shell == {"mode": "single-document", "left": True, "path": layout.start().lesson("ko").as_posix()}, shell
    box = lab.page.evaluate("""() => { const h = document.querySelector('.jp-RenderedMarkdown h1');
        const m = h.closest('.jp-RenderedMarkdown').getBoundingClientRect(), r = h.getBoundingClientRect();
        return {width: m.width, top: r.top, bottom: r.bottom}; }""")
    assert box["width"] >= 0.6 * PHONE[0] and 0 <= box["top"] and box["bottom"] <= PHONE[1], box
    assert no_tofu(lab.page, ".jp-MarkdownCell .jp-RenderedMarkdown")
    assert not lab.errors, "\n".join(lab.errors)


@pytest.mark.parametrize("path", [LESSONS["en"], EXERCISE.replace(".ipynb", ".ko.ipynb"), EXERCISE])
def test_an_untouched_notebook_closes_without_asking_to_save(browser, labs, shots, path):
    """The kernel's details JupyterLab writes into a notebook when its kernel starts are those the built notebook
    has (lesson_save.with_kernel; its Python's version added on opening, autograder.contents): nothing changed."""
    lab = Lab(browser, labs["ko"], shots, "untouched")
    lab.open(path)
    dirty = lab.page.evaluate("""async () => { const w = window.jupyterapp.shell.currentWidget;
        const kernel = w.sessionContext.session.kernel;
        await kernel.info; await kernel.spec; await new Promise(r => setTimeout(r, 1000));
        return w.context.model.dirty; }""")
    meta = lab.page.evaluate("() => window.jupyterapp.shell.currentWidget.context.model.toJSON().metadata")
    assert not dirty, f"{path}: marked changed after opening; its metadata now: {json.dumps(meta)}"
    lab.command("application:close")
    lab.page.wait_for_timeout(1000)
    lab.shot("closed")
    assert not lab.page.locator(".jp-Dialog").count(), lab.page.locator(".jp-Dialog").inner_text()
    assert not lab.errors, "\n".join(lab.errors)


def _rendered_markdown(lab: Lab) -> list[str]:
    """Every Markdown cell of the current notebook as JupyterLab renders it (cells not drawn yet are rendered here
    with its own renderer), a table row to a line, without code and without the links to this page in the other
    language (named in it)."""
    return lab.page.evaluate("""async () => {
        const panel = window.jupyterapp.shell.currentWidget, rm = panel.content.rendermime, texts = [];
        const other = panel.context.path.split('/').pop().replace(/\\.(ko|en)\\.ipynb$/, (m, l) => l === 'ko' ? '.en.ipynb' : '.ko.ipynb');
        for (const cell of panel.content.model.toJSON().cells.filter(c => c.cell_type === 'markdown')) {
            const renderer = rm.createRenderer('text/markdown');
            const source = Array.isArray(cell.source) ? cell.source.join('') : cell.source;
            await renderer.renderModel(rm.createModel({data: {'text/markdown': source}}));
            renderer.node.querySelectorAll('code, pre').forEach(e => e.remove());
            renderer.node.querySelectorAll('a').forEach(a => { if (decodeURIComponent(a.getAttribute('href') || '').includes(other)) a.remove(); });
            renderer.node.querySelectorAll('tr').forEach(tr => { tr.textContent = [...tr.children].map(c => c.textContent.trim()).join(' | '); });
            texts.push(renderer.node.innerText || renderer.node.textContent);
        }
        return texts; }""")


def _off_language(text: str, lang: str) -> list[str]:
    """Lines of ``text`` in the other language: in Korean, an English sentence without Hangul (test_language's
    rule); in English, any Hangul."""
    from test_language import HANGUL, english_lines
    if lang == "ko":
        return [line for line in english_lines(text) if not HANGUL.search(line)]
    return [line for line in text.splitlines() if HANGUL.search(line)]


@pytest.mark.parametrize("lang", ["ko", "en"])
def test_one_language_on_screen(browser, labs, shots, lang):
    """The start page (its text and what its cells print once run) and a lesson's text are in the server's
    language only."""
    lab = Lab(browser, labs[lang], shots, f"one-language-{lang}")
    problems = []
    for path, run in ((layout.start().lesson(lang).as_posix(), True), (layout.lessons(lang)[1].as_posix(), False)):
        lab.open(path)
        texts = _rendered_markdown(lab)
        if run:
            lab.run_all()
            texts += [_text(o) + "".join(o.get("data", {}).get("text/markdown", ""))
                      for c in lab.cells() if c["cell_type"] == "code" for o in c.get("outputs", [])]
        problems += [f"{path}: {line.strip()[:160]}" for text in texts for line in _off_language(text, lang)]
    lab.shot("start-page-run")
    assert not problems, "\n".join(problems)
