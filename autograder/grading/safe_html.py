"""Pages that show a submission (the formgrader's submission view, the HTML feedback) run none of it.

A submission's outputs and Markdown are a student's HTML. Rendered as they are, an ``<img onerror>``, a
``text/html`` or ``application/javascript`` output would run as the instructor in the Jupyter origin (read the
``_xsrf`` cookie, write files through ``/api/contents``). Two independent layers stop that:

1. ``SafeHTMLExporter`` is nbconvert's HTML exporter with ``sanitize_html`` on (JavaScript, widget and other
   active outputs dropped, HTML and SVG cleaned with bleach), Markdown cleaned after it is rendered (nbgrader's
   templates render Markdown without nbconvert's cleaning), and image outputs kept only as plain base64 with
   numeric sizes (their data and metadata go into attributes);
2. every page it writes starts with a Content-Security-Policy ``<meta>`` that lets only the template's own
   scripts run: its inline scripts by hash (found by rendering the same page for an empty notebook) and
   script files from the server. No inline handler, ``javascript:`` URL or injected ``<script>`` runs, no
   request leaves for another site, and no frame, plugin or form goes elsewhere.

The formgrader gets it through the Jupyter server extension here (enabled in the course's Jupyter settings):
once the server runs, it replaces the exporter nbgrader's formgrader renders submissions with; ``feedback``
uses it as nbgrader's ``GenerateFeedback.exporter_class``.
"""
from __future__ import annotations

import base64
import binascii
import copy
import hashlib
import re
from pathlib import Path

import bleach
import nbformat
from bleach.css_sanitizer import CSSSanitizer
from jinja2 import pass_context
from nbconvert.exporters import HTMLExporter
from nbconvert.preprocessors import Preprocessor

TAGS = {"a", "abbr", "b", "blockquote", "br", "caption", "code", "col", "colgroup", "dd", "del", "details", "div",
        "dl", "dt", "em", "h1", "h2", "h3", "h4", "h5", "h6", "hr", "i", "img", "kbd", "li", "ol", "p", "pre", "s",
        "samp", "small", "span", "strong", "sub", "summary", "sup", "table", "tbody", "td", "tfoot", "th", "thead",
        "tr", "u", "ul", "var"}
ATTRIBUTES = {"*": ["class", "id", "title", "lang", "dir", "align", "style"], "a": ["href", "name"],
              "img": ["src", "alt", "width", "height"], "td": ["colspan", "rowspan"], "th": ["colspan", "rowspan", "scope"],
              "ol": ["start"]}
PROTOCOLS = {"http", "https", "mailto", "data"}
IMAGES = ("image/png", "image/jpeg")
_BASE64 = re.compile(r"[A-Za-z0-9+/=\s]*")
_SCRIPT = re.compile(r"<script\b([^>]*)>(.*?)</script\s*>", re.IGNORECASE | re.DOTALL)
_HEAD = re.compile(r"<head\b[^>]*>", re.IGNORECASE)


def clean(html: str) -> str:
    """``html`` with only inert tags and attributes: no script, handler, style sheet, frame, form or
    ``javascript:`` URL (what is not allowed is removed; its text stays as text)."""
    return bleach.clean(str(html), tags=TAGS, attributes=ATTRIBUTES, protocols=PROTOCOLS, strip=True,
                        strip_comments=True, css_sanitizer=CSSSanitizer())


def policy(inline_scripts: list[str]) -> str:
    """The Content-Security-Policy of a page whose own inline scripts are ``inline_scripts``."""
    sources = ["'self'"] + ["'sha256-{}'".format(base64.b64encode(hashlib.sha256(s.encode("utf-8")).digest()).decode())
                            for s in sorted(set(inline_scripts))]
    return (f"default-src 'none'; script-src {' '.join(sources)}; "
            "style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self' data:; connect-src 'self'; "
            "form-action 'self'; base-uri 'none'; object-src 'none'; frame-src 'none'; worker-src 'none'")


def inline_scripts(html: str) -> list[str]:
    """The text of every inline ``<script>`` of a page (what a CSP hash is taken of)."""
    return [body for attrs, body in _SCRIPT.findall(html) if not re.search(r"\bsrc\s*=", attrs, re.IGNORECASE)]


def with_policy(html: str, csp: str) -> str:
    """``html`` with ``csp`` as the first element of its head (before any script runs)."""
    meta = f'<meta http-equiv="Content-Security-Policy" content="{csp}">'
    match = _HEAD.search(html)
    return html[:match.end()] + meta + html[match.end():] if match else meta + html


class InertImages(Preprocessor):
    """Image outputs kept only as plain base64 with numeric sizes, no file names: the template writes their
    data and metadata into ``<img>`` attributes unquoted."""

    def preprocess_cell(self, cell, resources, index):
        for out in cell.get("outputs", []) if cell.cell_type == "code" else []:
            data, meta = out.get("data", {}), out.get("metadata", {})
            for mime in IMAGES:
                if mime in data and not _plain_base64(data[mime]):
                    del data[mime]
            meta.pop("filenames", None)
            for mime in IMAGES:
                sizes = meta.get(mime)
                if isinstance(sizes, dict):
                    meta[mime] = {k: v for k, v in sizes.items() if k in ("width", "height") and _number(v)}
            for key in ("width", "height", "alt", "unconfined"):
                if key in meta and not _number(meta[key]):
                    del meta[key]
        cell.get("metadata", {}).pop("alt", None)
        return cell, resources


def _plain_base64(value) -> bool:
    if not isinstance(value, str) or not _BASE64.fullmatch(value):
        return False
    try:
        base64.b64decode("".join(value.split()), validate=True)
    except (binascii.Error, ValueError):
        return False
    return True


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


class SafeHTMLExporter(HTMLExporter):
    """nbconvert's HTML exporter for pages that show a submission (see the module's docstring)."""

    def __init__(self, *args, course_root: str | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self.course_root = course_root  # the formgrader's course: its pages get the feedback's banner
        self.sanitize_html = True
        self.register_preprocessor(InertImages(parent=self), enabled=True)

    def default_filters(self):
        yield from super().default_filters()
        yield "clean_html", clean

    @pass_context
    def markdown2html(self, context, source):
        return clean(super().markdown2html(context, source))

    def from_notebook_node(self, nb, resources=None, **kw):
        nb = self._with_banner(nb, resources or {})
        html, out = super().from_notebook_node(nb, resources=copy.deepcopy(resources), **kw)
        empty = nbformat.v4.new_notebook()
        own, _ = super().from_notebook_node(empty, resources=copy.deepcopy(resources), **kw)
        return with_policy(html, policy(inline_scripts(own))), out


    def _with_banner(self, nb, resources: dict):
        """In the formgrader (a submission's page names its assignment and student): the notebook with the
        feedback's first cell, the net score, the late penalty and the reasons, as the export has them."""
        assignment, student = resources.get("assignment_id"), resources.get("student")
        if not (self.course_root and assignment and student) or any(
                c.get("metadata", {}).get("aihw", {}).get("feedback_banner") for c in nb.cells):
            return nb
        from .course import Course
        from .export import student_reasons
        from .feedback import banner_cell
        cell = banner_cell(assignment, student, student_reasons(Course(Path(self.course_root)), assignment, student))
        if cell is None:
            return nb
        nb = copy.deepcopy(nb)
        nb.cells.insert(0, cell)
        return nb


def _jupyter_server_extension_points():
    return [{"module": "autograder.grading.safe_html"}]


def _load_jupyter_server_extension(serverapp) -> None:
    """Nothing to do before the server runs: nbgrader's formgrader sets its exporter when it loads."""


async def _start_jupyter_server_extension(serverapp) -> None:
    """Replace the exporter the formgrader renders submissions with (same configuration, same template)."""
    settings = serverapp.web_app.settings
    old = settings.get("nbgrader_exporter")
    if old is not None and not isinstance(old, SafeHTMLExporter):
        settings["nbgrader_exporter"] = SafeHTMLExporter(config=old.config, course_root=serverapp.root_dir)
        serverapp.log.info("autograder: the formgrader renders submissions sanitised, under a Content-Security-Policy")
