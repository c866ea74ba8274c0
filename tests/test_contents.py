"""The course's Jupyter file manager (autograder/contents.py): a built notebook opens with this Python's version in
its language_info, as its kernel reports it, so JupyterLab finds nothing to change; other notebooks as they are."""
import asyncio
import sys

import nbformat

from autograder.contents import ContentsManager
from autograder.lesson_save import with_kernel


def test_a_built_notebook_opens_with_this_pythons_version_and_others_as_they_are(tmp_path):
    built = nbformat.v4.new_notebook(metadata=with_kernel({}))
    other = nbformat.v4.new_notebook(metadata={"language_info": {"name": "python", "version": "3.9.1"}})
    nbformat.write(built, str(tmp_path / "built.ipynb"))
    nbformat.write(other, str(tmp_path / "other.ipynb"))
    manager = ContentsManager(root_dir=str(tmp_path))
    opened = asyncio.run(manager.get("built.ipynb"))["content"]["metadata"]
    assert opened["language_info"] == dict(with_kernel({})["language_info"], version=sys.version.split()[0])
    assert opened["kernelspec"]["display_name"] == "Python 3 (ipykernel)"
    assert asyncio.run(manager.get("other.ipynb"))["content"]["metadata"]["language_info"]["version"] == "3.9.1"
    assert "version" not in nbformat.read(str(tmp_path / "built.ipynb"), as_version=4).metadata["language_info"]


def test_the_start_address_sends_a_narrow_screen_to_the_single_document_mode():
    """autograder.start_page: the page behind the address `start` prints (the browser suite opens it at phone and
    desktop sizes)."""
    from autograder import start_page
    html = start_page.page_for("/base/", "lessons/00 start/00_start_here.ko.ipynb")
    assert '"/base/doc/tree/lessons/00%20start/00_start_here.ko.ipynb?reset"' in html
    assert '"/base/lab/tree/lessons/00%20start/00_start_here.ko.ipynb"' in html
    assert start_page.NARROW in html and 'name="viewport"' in html
    assert start_page.address("lessons/x.ipynb") == "/course/start/lessons/x.ipynb"
