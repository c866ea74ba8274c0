"""Nothing a submission shows acts for the instructor (issue 31): the corpus's ``xss_*`` submissions, graded, opened
in the formgrader by a logged-in instructor in Chromium, and their HTML feedback opened too.

The course is graded by the real grader, the formgrader is nbgrader's in a real Jupyter server on the loopback
interface (the course's Jupyter settings enable ``autograder.grading.safe_html``), and the browser logs in with
the server's token, so a script that ran would have the instructor's ``_xsrf`` cookie. Each payload would set
``window.__pwned`` and write ``pwned.txt`` into the course through ``/api/contents``: neither may happen, no
request may go to ``/api/contents``, the formgrader's own scripts must run, and the submission's text must
show (inert). A control renders one payload with nbconvert's plain exporter and sees it run, so the probe works.
"""
import re
import shutil
from html.parser import HTMLParser

import pytest
from nbconvert.exporters import HTMLExporter
from nbgrader.api import Gradebook

from autograder.grading import sandbox
from autograder.grading.batch import grade_class
from autograder.grading.course import REPO, CONFIG_FILE
from autograder.grading.feedback import feedback
from autograder.grading.safe_html import inline_scripts, policy
from autograder.grading.worker import Limits
from fixtures.browser import browser  # noqa: F401 (a fixture)
from fixtures.grading_course import ASSIGNMENT, build, corpus, demo_course
from fixtures.servers import course_jupyter

CASES = {name: case for name, case in corpus().items() if name.startswith("xss_")}
MARKERS = {"xss_img_onerror": "AIHW-XSS-img", "xss_script_tag": "AIHW-XSS-script", "xss_javascript_output": "AIHW-XSS-js",
           "xss_javascript_url": "AIHW-XSS-link", "xss_image_attributes": "AIHW-XSS-png",
           "xss_svg_and_frame": "AIHW-XSS-frame", "xss_markdown": "AIHW-XSS-markdown"}


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    """The demo course with the xss submissions graded (sandboxed where bubblewrap works) and their feedback."""
    course = demo_course(tmp_path_factory.mktemp("formgrader"))
    shutil.copy(REPO / CONFIG_FILE, course.root / CONFIG_FILE)  # the formgrader reads the course's configuration
    for name, case in CASES.items():
        build(course, name, case)
    grade_class(course, ASSIGNMENT, workers=2, limits=Limits(cell_s=20, notebook_s=120), isolate=sandbox.available())
    feedback(course, ASSIGNMENT)
    return course


@pytest.fixture(scope="module")
def formgrader(course):
    """nbgrader's formgrader in a Jupyter server on 127.0.0.1, configured as the course configures it."""
    with course_jupyter(course.root) as (url, token, log):
        yield {"url": url, "token": token, "log": log}


class _Attributes(HTMLParser):
    def __init__(self):
        super().__init__()
        self.active = []

    def handle_starttag(self, tag, attrs):
        self.active += [(tag, k, v) for k, v in attrs if k.startswith("on") or (
            k in ("href", "src", "action", "formaction") and (v or "").strip().lower().startswith("javascript:"))]


def _active_attributes(html: str) -> list:
    """The event handlers and javascript: URLs among a page's tag attributes."""
    parser = _Attributes()
    parser.feed(html)
    return parser.active


def _submission_ids(course) -> dict[str, str]:
    with Gradebook(course.gradebook_url, course.course_id) as gb:
        return {name: gb.find_submission_notebook("demo", ASSIGNMENT, name).id for name in CASES}


def _visit(browser, url: str, click: bool):
    """Open ``url`` in a fresh page; what ran: (page text, window.__pwned, formgrader's own script ran, requests)."""
    context = browser.new_context()
    page = context.new_page()
    requests = []
    page.on("request", lambda r: requests.append(f"{r.method} {r.url}"))
    page.goto(url, wait_until="load")
    if click and page.locator("#aihw-link").count():
        page.locator("#aihw-link").click()
    page.wait_for_timeout(1500)  # an image error, a fetch: what a payload does happens within this
    seen = (page.inner_text("body"), page.evaluate("() => window.__pwned"),
            page.evaluate("() => typeof submission_id === 'string' && typeof jQuery === 'function'"), requests)
    context.close()
    return seen


def test_the_probe_sees_a_payload_run_without_the_guard(browser, course, tmp_path):
    """Control: the autograded notebook rendered by nbconvert's plain exporter runs the payload."""
    graded = course.folder("autograded", "xss_img_onerror", ASSIGNMENT, "demo.ipynb")
    plain = tmp_path / "plain.html"
    plain.write_text(HTMLExporter().from_filename(str(graded))[0], encoding="utf-8")
    assert _visit(browser, plain.as_uri(), click=False)[1] == 1


def test_no_submission_runs_script_in_the_formgrader(browser, course, formgrader):
    ids = _submission_ids(course)
    for name in CASES:
        url = f"{formgrader['url']}/formgrader/submissions/{ids[name]}/?token={formgrader['token']}"
        text, pwned, own, requests = _visit(browser, url, click=name == "xss_javascript_url")
        assert pwned is None, f"{name}: a script of the submission ran in the formgrader"
        assert not [r for r in requests if "/api/contents" in r], (name, requests)
        assert own, f"{name}: the formgrader's own scripts did not run (the policy is too strict)"
        assert MARKERS[name] in text, f"{name}: the submission's output is not shown"
    assert not list(course.root.rglob("pwned.txt"))


def test_feedback_pages_run_nothing(browser, course):
    for name in CASES:
        page = course.folder("feedback", name, ASSIGNMENT, "demo.html")
        html = page.read_text(encoding="utf-8")
        csp = re.search(r'<meta http-equiv="Content-Security-Policy" content="([^"]+)"', html)
        assert csp and html.index(csp.group(0)) < html.lower().index("<script"), f"{name}: no policy before scripts"
        assert csp.group(1) == policy(inline_scripts(html)) and "pwned" not in " ".join(inline_scripts(html)), name
        assert not _active_attributes(html), (name, _active_attributes(html))
        text, pwned, _, requests = _visit(browser, page.as_uri(), click=name == "xss_javascript_url")
        assert pwned is None and MARKERS[name] in text, name
