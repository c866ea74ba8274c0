"""The address the course's JupyterLab prints and opens (issue 29): ``/course/start/<page>`` (a Jupyter server
extension, enabled in the course's Jupyter settings) opens the start page in JupyterLab's full interface on a wide
screen, and on a narrow one, such as a phone, in its single-document mode, whose sidebars are collapsed (the full
interface leaves the notebook a column a few pixels wide there). Imports only the standard library until the server
loads it: ``bootstrap`` names the address before the course's environment exists."""
from __future__ import annotations

import html
import json

PATH = "/course/start/"
NARROW = "(max-width: 760px)"  # as wide as a phone or a narrow window: the single-document mode

PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>AI hardware course</title>
<script>location.replace((window.matchMedia({narrow}).matches ? {doc} : {lab}) + location.hash);</script>
</head><body><noscript><a href="{lab_href}">JupyterLab</a></noscript></body></html>
"""


def address(page: str) -> str:
    """The path (JupyterLab's ``default_url``) that opens ``page`` (relative to the server's root) this way."""
    return PATH + page


def page_for(base_url: str, page: str) -> str:
    """The HTML that sends a browser on to ``/doc/tree/<page>`` on a narrow screen (its saved layout reset), else
    ``/lab/tree/<page>`` (the learner's layout kept)."""
    from jupyter_server.utils import url_escape, url_path_join
    lab, doc = (url_path_join(base_url, mode, "tree", url_escape(page)) for mode in ("lab", "doc"))
    doc += "?reset"  # a layout saved on a wide screen (the file browser open) would squeeze the page again
    return PAGE.format(narrow=json.dumps(NARROW), doc=json.dumps(doc), lab=json.dumps(lab), lab_href=html.escape(lab))


def _jupyter_server_extension_points():
    return [{"module": "autograder.start_page"}]


def _load_jupyter_server_extension(serverapp) -> None:
    from jupyter_server.base.handlers import JupyterHandler
    from jupyter_server.utils import url_path_join
    from tornado import web

    class StartHandler(JupyterHandler):
        @web.authenticated
        def get(self, page: str) -> None:
            self.set_header("Cache-Control", "no-store")
            self.finish(page_for(self.base_url, page))

    serverapp.web_app.add_handlers(".*$", [(url_path_join(serverapp.base_url, PATH, "(.+)"), StartHandler)])
