"""The course's website (issue 32), built once per run as the README builds it (``python -m autograder site``,
lessons executed), then checked page by page: both languages have the same pages; every internal link and anchor
resolves; no page shows raw Markdown or tofu; the glossary lists every term; each measured cell has the note on the
building machine; the language switch names the same page and keeps the section; each notebook's page shows its four
launch buttons. Then Chromium walks it over a loopback HTTP server: the start page, a lesson, the language switch,
search in Korean and English, and a phone's viewport. Screenshots go to the test's folder and to
``_build/site-screenshots/``; the build time is written beside them (``build.txt``) and to the terminal.

Needs the ``site`` extra (Sphinx, MyST-NB, sphinx-book-theme): the build fails, saying how to install it, without.
The browser part needs the browser suite's Playwright and Chromium (tests/fixtures/browser.py): outside CI it skips
saying why, under CI=true it fails.
"""
import os
import posixpath
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import unquote, urlsplit

import nbformat
import pytest

from autograder import glossary, launch, layout, website
from autograder.grading.course import REPO
from fixtures.browser import browser  # noqa: F401 (a fixture)
from fixtures.servers import free_port, stop

BUILD_S = 3600  # both languages' lessons executed, on a loaded 2-core machine
SHOTS = REPO / "_build" / "site-screenshots"
SKIP_PAGES = ("genindex", "search")  # Sphinx's own pages, without a notebook
RAW = re.compile(r"\*\*|:::|\$\$|\]\([^\s)]+\)|\{#")  # bold, a fence, display math, a link, a heading's id


# ---------------------------------------------------------------- the parts, without a build

@pytest.mark.parametrize("target, page, lang, want", [
    ("../../lessons/01_devices/01_devices.en.ipynb#cell-id=sec-find", "exercises/01_devices/01_devices_exercise.en.ipynb",
     "en", "../../lessons/01_devices/01_devices.en.html#sec-find"),
    ("01_devices.en.ipynb#cell-id=sec-async", "lessons/01_devices/01_devices.en.ipynb", "en", "01_devices.en.html#sec-async"),
    ("../../exercises/01_devices/01_devices_exercise.ipynb", "lessons/01_devices/01_devices.ko.ipynb", "ko",
     "../../exercises/01_devices/01_devices_exercise.ko.html"),  # the exercise of both languages: the page's language
    ("00_start_here.ko.ipynb", "lessons/00_start_here/00_start_here.en.ipynb", "en",
     "../../../ko/lessons/00_start_here/00_start_here.ko.html"),  # the other language's page stays that page
    ("#sec-find", "lessons/01_devices/01_devices.en.ipynb", "en", "#sec-find"),
    ("https://example.org/a.ipynb", "lessons/01_devices/01_devices.en.ipynb", "en", "https://example.org/a.ipynb"),
    ("arguments…", "lessons/07_kernels/07_kernels.en.ipynb", "en", "arguments…"),  # not a file: kept
])
def test_notebook_links_become_the_pages_links(target, page, lang, want):
    assert website.link_target(target, page, lang) == want


def test_a_link_to_a_repository_file_opens_it_on_the_repository():
    settings = launch.settings()
    assert website.link_target("architecture.md#x", "docs/instructor.md", "en") == \
        f"{settings['repository'].rstrip('/')}/blob/{settings['branch']}/docs/architecture.md#x"


def test_the_instructor_guide_gives_each_language_its_half_with_heading_ids(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "instructor.md").write_text(
        "# 강사 안내 / Instructor guide\n\n[한국어](#한국어) · [English](#english)\n\n---\n\n## 한국어\n\n### 준비\n\n"
        "### 수업 JupyterHub 링크 {#hub-links}\n\n가\n\n## English\n\n### Setup\n\n### Class JupyterHub links {#hub-links}\n\nb\n",
        encoding="utf-8")
    ko, en = (website.instructor_page(lang, tmp_path) for lang in ("ko", "en"))
    assert ko.startswith("# 강사 안내\n") and "## 준비" in ko and "(hub-links)=\n## 수업 JupyterHub 링크\n" in ko
    assert en.startswith("# Instructor guide\n") and "(hub-links)=\n## Class JupyterHub links\n" in en
    assert "Setup" not in ko and "준비" not in en and "{#" not in ko + en


def test_without_the_site_extra_the_command_says_how_to_install_it(monkeypatch, tmp_path):
    from autograder import cli, language, optional
    monkeypatch.setattr(language, "_option", None)  # restored after: the command's --lang chooses for the process
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))  # the site's --lang is not remembered as the learner's
    monkeypatch.setattr(optional, "ensure", lambda extra, why: {})
    real = website.importlib.util.find_spec
    monkeypatch.setattr(website.importlib.util, "find_spec", lambda name: None if name == "myst_nb" else real(name))
    for lang in ("ko", "en"):
        with pytest.raises(SystemExit) as stop:
            cli.main(["site", "--lang", lang, "--out", "/nonexistent/never-written"])
        assert 'pip install -e ".[site]"' in str(stop.value) and "myst_nb" in str(stop.value)
        assert ("패키지" in str(stop.value)) == (lang == "ko")
    assert not list(tmp_path.rglob("*"))


def test_the_root_page_goes_to_the_browsers_language():
    page = website.root_index(("ko", "en"))
    assert 'href="ko/index.html"' in page and 'href="en/index.html"' in page and "startsWith('ko')" in page


def test_a_class_hub_makes_the_hub_buttons_link_straight_there(tmp_path):
    """One language, not executed (the quick check), with a class's hub: each hub button is its nbgitpuller link."""
    hub = "https://hub.example.edu"
    done = subprocess.run([sys.executable, "-m", "autograder", "site", "--lang", "en", "--no-execute", "--hub", hub,
                           "--out", str(tmp_path / "site")], cwd=REPO, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert not (tmp_path / "site" / "ko").exists()
    for path in website.notebooks("en"):
        page = soup(tmp_path / "site" / "en" / f"{website.page_of(path)}.html")
        assert page.select_one(".course-bar a[data-kind=hub]")["href"] == launch.hub_link(hub, path)
        assert not page.select(".cell_output")  # as committed: no outputs
        assert "find_spec(\"autograder\")" not in page.get_text()  # the set-up cell of a notebook opened alone is not shown


# ---------------------------------------------------------------- the site, built once

@pytest.fixture(scope="module")
def site(tmp_path_factory, request):
    """The site, built once through the command; its folder."""
    out = tmp_path_factory.mktemp("site") / "site"
    before = git_status()
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "autograder", "site", "--out", str(out)], cwd=REPO,
                          capture_output=True, text=True, timeout=BUILD_S)
    seconds = time.perf_counter() - start
    assert done.returncode == 0, f"the site did not build:\n{done.stdout[-6000:]}\n{done.stderr[-6000:]}"
    assert git_status() == before  # the build writes nothing into the repository
    counts = {lang: len(pages(out, lang)) for lang in layout.LANGS}
    line = f"site built in {seconds:.0f} s; pages: " + ", ".join(f"{k} {v}" for k, v in counts.items())
    SHOTS.mkdir(parents=True, exist_ok=True)
    (SHOTS / "build.txt").write_text(line + "\n", encoding="utf-8")
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write_line(line)
    return out


def git_status() -> str:
    return subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=REPO, capture_output=True,
                          text=True).stdout


def pages(out: Path, lang: str) -> list[str]:
    """The page names of a language's site (``lessons/01_devices/01_devices.en``, ``glossary``, ...)."""
    root = out / lang
    names = [p.relative_to(root).with_suffix("").as_posix() for p in root.rglob("*.html")]
    return sorted(n for n in names if not n.startswith("_") and n not in SKIP_PAGES)


def soup(path: Path):
    from bs4 import BeautifulSoup
    return BeautifulSoup(path.read_text(encoding="utf-8"), "html.parser")


def article(page):
    """A page's own content (not the theme's navigation)."""
    return page.select_one("article.bd-article") or page.body


def test_every_page_exists_in_both_languages(site):
    ko, en = pages(site, "ko"), pages(site, "en")
    assert [website.in_other_language(p, "ko") for p in ko] == en
    for lang in layout.LANGS:
        wanted = {"index", "glossary", "instructor", *(website.page_of(p) for p in website.notebooks(lang))}
        assert wanted <= set(pages(site, lang)), wanted - set(pages(site, lang))
        assert len(website.notebooks(lang)) == len(layout.modules(part="lesson")) + len(layout.modules(part="exercise"))
    assert (site / "index.html").is_file()


def test_every_internal_link_and_anchor_resolves(site):
    ids, broken, checked = {}, [], 0

    def anchors(path: Path) -> set:
        if path not in ids:
            page = soup(path)
            ids[path] = {tag["id"] for tag in page.find_all(id=True)} | {tag["name"] for tag in page.find_all("a", attrs={"name": True})}
        return ids[path]

    for path in sorted(site.rglob("*.html")):
        if "_static" in path.parts:
            continue
        for tag in soup(path).find_all(["a", "link", "img", "script", "iframe"]):
            ref = tag.get("href") or tag.get("src")
            if not ref or ref.startswith(("mailto:", "javascript:", "data:")) or urlsplit(ref).scheme or ref.startswith("//"):
                continue
            parts = urlsplit(ref)
            target = path if not parts.path else Path(posixpath.normpath(path.parent / unquote(parts.path)))
            checked += 1
            if not target.exists():
                broken.append(f"{path.relative_to(site)}: {ref} (no such file)")
            elif parts.fragment and target.suffix == ".html" and unquote(parts.fragment) not in anchors(target):
                broken.append(f"{path.relative_to(site)}: {ref} (no such anchor)")
    assert checked > 1000
    assert not broken, "\n".join(broken[:50])


def test_no_page_shows_raw_markdown_or_tofu(site):
    found = []
    for lang in layout.LANGS:
        for name in pages(site, lang):
            path = site / lang / f"{name}.html"
            words = path.read_text(encoding="utf-8")
            if "\ufffd" in words:
                found.append(f"{lang}/{name}: U+FFFD")
            if re.search(r"missing from (?:current )?font", words):
                found.append(f"{lang}/{name}: a glyph missing from the font")
            body = article(soup(path))
            for tag in body.select("pre, code, script, style, .math, .MathJax"):
                tag.decompose()
            shown = body.get_text(" ")
            found += [f"{lang}/{name}: {raw[0]!r} near {shown[max(0, raw.start() - 60):raw.end() + 60]!r}"
                      for raw in RAW.finditer(shown)]
    assert not found, "\n".join(found)


def test_korean_lessons_draw_figures_with_a_hangul_font(site):
    """Matplotlib says when a glyph is missing from its fonts (checked on every page above); the Korean lessons do
    draw figures, with Korean words in them, under the course's font (autograder/plotting.py: NanumGothic)."""
    figures = sum(len(article(soup(site / "ko" / f"{website.page_of(p)}.html")).select(".cell_output img"))
                  for p in website.notebooks("ko") if p.startswith("lessons/"))
    assert figures >= 20


def test_the_glossary_lists_every_term_rendered(site):
    for lang in layout.LANGS:
        page = soup(site / lang / "glossary.html")
        for term in glossary.terms():
            section = page.find(id=website.term_anchor(term.term_en))
            assert section is not None, (lang, term.term_en)
            assert section.name == "section"
            name = section.find("h2").get_text(" ").replace("#", "").strip()
            assert (term.term_ko if lang == "ko" else term.term_en) in name, (lang, name)
            assert term.definition.text(lang) in section.get_text(" "), (lang, term.term_en)
            if lang == "en":
                assert not re.search("[가-힣]", section.get_text()), term.term_en  # one language on screen


def test_each_measured_cell_has_the_note_on_the_building_machine(site):
    tagged = 0
    for lang in layout.LANGS:
        note = re.escape(website.measured_note(lang, "@", "@")).split("@")[0]
        for path in (p for p in website.notebooks(lang) if p.startswith("lessons/")):
            wanted = sum(website.MEASURED in c.metadata.get("tags", []) for c in nbformat.read(REPO / path, 4).cells)
            cells = article(soup(site / lang / f"{website.page_of(path)}.html")).select(f".cell.tag_{website.MEASURED}")
            assert len(cells) == wanted, path
            for cell in cells:
                after = cell.find_next_sibling()
                assert after is not None and "measured-note" in after.get("class", []), (path, cell.get("id"))
                assert re.match(note, str(after)) and website.machine() in after.get_text(), after
            tagged += wanted
    assert tagged >= 20  # every lesson that measures, both languages


def test_the_language_switch_names_the_same_page_and_its_sections_exist_there(site):
    for lang in layout.LANGS:
        for name in pages(site, lang):
            page = soup(site / lang / f"{name}.html")
            switch = page.select("a.course-lang")
            assert len(switch) == 1, name
            there = Path(posixpath.normpath(site / lang / posixpath.dirname(name) / switch[0]["href"]))
            assert there == site / website.other(lang) / f"{website.in_other_language(name, lang)}.html"
            sections = {t["id"] for t in article(page).find_all(id=re.compile(r"^sec-"))}
            theirs = {t["id"] for t in article(soup(there)).find_all(id=re.compile(r"^sec-"))}
            assert sections == theirs, (name, sections ^ theirs)


def test_each_notebook_page_shows_its_four_launch_buttons(site):
    for lang in layout.LANGS:
        for path in website.notebooks(lang):
            name = website.page_of(path)
            shown = [(a["data-kind"], a.get_text(), a["href"])
                     for a in soup(site / lang / f"{name}.html").select(".course-bar a.course-button")]
            wanted = [(b.kind, b.label, b.url or f"{website.up(name)}instructor.html#hub-links")
                      for b in launch.buttons(path, lang)]
            assert len(wanted) == 4 and {k for k, _, _ in wanted} == {"local", "hub", "colab", "binder"}
            assert shown == wanted, path


# ---------------------------------------------------------------- in a browser

@pytest.fixture(scope="module")
def served(site, tmp_path_factory):
    """The built site over HTTP on the loopback interface (``python -m http.server``, stopped by its pid)."""
    import urllib.request
    port = free_port()
    log = tmp_path_factory.mktemp("http") / "server.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen([sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1",
                                 "--directory", str(site)], stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(100):
            try:
                with urllib.request.urlopen(url + "/index.html", timeout=2):
                    break
            except OSError:
                assert proc.poll() is None, log.read_text()
                time.sleep(0.2)
        yield url
    finally:
        stop(proc)


@pytest.fixture(scope="module")
def shot(tmp_path_factory):
    folder = tmp_path_factory.mktemp("site-shots")
    SHOTS.mkdir(parents=True, exist_ok=True)

    def take(page, name: str) -> Path:
        path = folder / f"{name}.png"
        page.screenshot(path=str(path), full_page=False)
        shutil.copy2(path, SHOTS / path.name)
        return path
    return take


def open_page(browser, url: str, locale: str = "en-US", viewport=(1280, 900)):
    """A page in a fresh context; what it cannot load from the loopback server (the math renderer's CDN) is refused
    at once, and its console errors about anything else are collected in ``page.errors``."""
    context = browser.new_context(locale=locale, viewport={"width": viewport[0], "height": viewport[1]})
    page = context.new_page()
    page.errors = []
    local = urlsplit(url).netloc
    page.route("**/*", lambda route: route.continue_() if urlsplit(route.request.url).netloc == local else route.abort())
    page.on("console", lambda m: page.errors.append(m.text) if m.type == "error"
            and urlsplit(m.location.get("url", "")).netloc == local and "Failed to load resource" not in m.text else None)
    page.on("pageerror", lambda e: page.errors.append(str(e)))
    page.goto(url)
    page.wait_for_load_state("load")
    return page


def test_the_start_page_goes_to_the_browsers_language(browser, served, shot):
    for lang, locale in (("ko", "ko-KR"), ("en", "en-US")):
        page = open_page(browser, served + "/", locale)
        page.wait_for_url(f"**/{lang}/index.html")
        assert page.locator("article a[href*='lessons/01_devices']").count() >= 1
        shot(page, f"site-start-{lang}")
        assert not page.errors, page.errors
        page.context.close()


def test_a_lesson_shows_its_outputs_and_figures(browser, served, shot):
    for lang in layout.LANGS:
        path = website.page_of(layout.lesson("03_memory_hierarchy", lang).as_posix())
        page = open_page(browser, f"{served}/{lang}/{path}.html")
        images = page.locator("article .cell_output img")
        assert images.count() >= 3
        assert page.evaluate("() => [...document.querySelectorAll('article .cell_output img')]"
                             ".every(i => i.complete && i.naturalWidth > 0)")
        assert page.locator(".course-bar a.course-button").count() == 4
        shot(page, f"site-lesson-{lang}")
        assert not page.errors, page.errors
        page.context.close()


def test_the_language_switch_lands_on_the_same_section(browser, served, shot):
    for lang in layout.LANGS:
        path = website.page_of(layout.lesson("01_devices", lang).as_posix())
        page = open_page(browser, f"{served}/{lang}/{path}.html#sec-async")
        page.click("a.course-lang")
        to = website.other(lang)
        page.wait_for_url(f"**/{to}/{website.in_other_language(path, lang)}.html#sec-async")
        assert page.evaluate("() => { const r = document.getElementById('sec-async').getBoundingClientRect();"
                             " return r.top >= -5 && r.top < window.innerHeight; }")
        shot(page, f"site-switch-{lang}-to-{to}")
        page.context.close()


@pytest.mark.parametrize("lang, word", [("ko", "대역폭"), ("en", "bandwidth")])
def test_search_finds_a_word_in_each_language(browser, served, shot, lang, word):
    page = open_page(browser, f"{served}/{lang}/search.html?q={word}")
    results = page.locator("#search-results ul.search li")
    results.first.wait_for(timeout=60_000)
    assert results.count() >= 3
    assert page.locator("#search-results a[href*='lessons/']").count() >= 1
    shot(page, f"site-search-{lang}")
    page.context.close()


def test_a_phone_sees_no_horizontal_scroll(browser, served, shot):
    for lang in layout.LANGS:
        for name, path in (("", "index"), ("-lesson", website.page_of(layout.lesson("05_networking", lang).as_posix()))):
            page = open_page(browser, f"{served}/{lang}/{path}.html", viewport=(390, 844))
            wide = page.evaluate("() => document.documentElement.scrollWidth - window.innerWidth")
            assert wide <= 1, (lang, path, wide)
            shot(page, f"site-mobile{name}-{lang}")
            page.context.close()
