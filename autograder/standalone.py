"""A notebook opened alone (Colab, Kaggle, a download): its first cell, and its hand-in from a cell.

Every lesson and exercise notebook the course builds starts with :func:`setup_source`'s cell (:func:`with_setup`:
``bilingual.for_language`` for lessons and each language's exercise, ``grading/generate`` for the bilingual one).
Where ``autograder`` cannot be imported it installs ``ai-hardware-course==<version>`` (:func:`version`, from
pyproject.toml) from the package index with pip, quietly, in one line; ``COURSE_PACKAGE`` (set by
tests/test_standalone_notebook.py only) replaces that requirement, e.g. with a wheel's path. In a clone, on a class
hub and in the grader the package is there and the cell does nothing. The cell is stdlib-only.

:func:`submit_here` writes the zip ``python3 -m autograder submit`` writes (:func:`pack`) from the notebook the kernel
runs: the file JupyterLab saved (its session's path), or on Colab the notebook's JSON from the page, which the
browser then downloads.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from .i18n import Message, msg
from .optional import DIST

PACKAGE_ENV = "COURSE_PACKAGE"  # the test's wheel instead of the package index's release
CELL_ID = "course-setup"
MANIFEST = "submission.json"  # beside the notebooks in a submission's zip (grading/collect reads it)
ROOT = Path(__file__).resolve().parent.parent

# The cell's texts, per language ({dist}, {version}, {requirement}, {seconds}: filled in by setup_source and the cell).
TEXT = {
    "ko": {"comment": "과정 패키지가 없으면(Colab, Kaggle, 내려받은 노트북) 설치합니다. 클론과 수업 서버에서는 아무것도 하지 않습니다.",
           "installing": "과정 패키지 {dist} {version} 설치 중…",
           "done": "완료({seconds:.0f}초).",
           "failed": "과정 패키지를 설치하지 못했습니다. 인터넷 연결을 확인하고(Kaggle: Settings → Internet 켜기) 이 셀을 다시 "
                     "실행하세요. 그래도 안 되면 새 셀에서 `%pip install {requirement}` 명령을 실행한 뒤 커널을 다시 시작하세요."},
    "en": {"comment": "Installs the course package where it is missing (Colab, Kaggle, a downloaded notebook). In a clone "
                      "or on a class hub it does nothing.",
           "installing": "Installing the course package {dist} {version}…",
           "done": "done ({seconds:.0f} s).",
           "failed": "Could not install the course package. Check the internet connection (Kaggle: Settings → Internet "
                     "on) and run this cell again. If it still fails, run `%pip install {requirement}` in a new cell, "
                     "then restart the kernel."},
}

TEMPLATE = '''# {comment}
import importlib.util, os, subprocess, sys, time
if importlib.util.find_spec("autograder") is None:
    _started = time.monotonic()
    print({installing!r}, end=" ", flush=True)
    _pip = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--disable-pip-version-check",
                           os.environ.get({env!r}, {requirement!r})], capture_output=True, text=True)
    if _pip.returncode:
        print("\\n" + _pip.stdout[-1500:] + _pip.stderr[-1500:])
        raise RuntimeError({failed!r})
    importlib.invalidate_caches()
    print({done!r}.format(seconds=time.monotonic() - _started))'''


def version(root: Path | str | None = None) -> str:
    """The course's version: pyproject.toml's where the package sits in a clone (``root``), else the installed one's."""
    path = Path(root or ROOT) / "pyproject.toml"
    if path.is_file():
        try:
            import tomllib
        except ImportError:  # Python 3.10
            import tomli as tomllib
        return tomllib.loads(path.read_text(encoding="utf-8"))["project"]["version"]
    from importlib.metadata import version as installed
    return installed(DIST)


def setup_source(lang: str | None, at: str | None = None) -> str:
    """The first cell's code in ``lang`` (``ko``/``en``; None: both, Korean then English) for version ``at``."""
    at = at or version()
    langs = ("ko", "en") if lang is None else (lang,)
    text = {key: " / ".join(TEXT[code][key] for code in langs) for key in TEXT["en"]}
    requirement = f"{DIST}=={at}"
    fill = {"dist": DIST, "version": at, "requirement": requirement}
    return TEMPLATE.format(comment=text["comment"], installing=text["installing"].format(**fill),
                           done=text["done"], failed=text["failed"].format(**fill), env=PACKAGE_ENV,
                           requirement=requirement)


def with_setup(nb, lang: str | None, at: str | None = None):
    """``nb`` (nbformat; changed in place and returned) starting with the set-up cell in ``lang``, once: locked (not
    editable, not deletable), no nbgrader cell (the grader's kernel has the package, so it runs and does nothing)."""
    import nbformat
    cell = nbformat.v4.new_code_cell(setup_source(lang, at), id=CELL_ID)
    cell.metadata.update(editable=False, deletable=False, tags=[CELL_ID])
    nb.cells = [cell] + [c for c in nb.cells if c.get("id") != CELL_ID]
    return nb


# ---------------------------------------------------------------------------------------------- the hand-in
HAND_IN_ID = "course-hand-in"
HAND_IN = {
    "ko": "**여기서 바로 제출하기**(Colab, Kaggle, 내려받은 노트북 등 클론 밖): 저장한 뒤 새 셀에서 "
          "`from autograder.standalone import submit_here; submit_here(\"학번\")`을 실행하세요. "
          "과정의 `submit` 명령과 같은 zip을 만들고(Colab에서는 브라우저가 내려받습니다), 풀지 않은 과제와 "
          "이 커널에서 통과하지 못한 확인 셀을 알려 줍니다. 그 zip을 강사에게 보내세요.",
    "en": "**Hand in from here** (Colab, Kaggle, a downloaded notebook: outside a clone): save, then run "
          "`from autograder.standalone import submit_here; submit_here(\"YOUR_ID\")` in a new cell. It writes the zip "
          "the course's `submit` command writes (on Colab your browser downloads it) and lists the tasks not "
          "attempted and the checks not passed in this kernel. Send that zip to your instructor.",
}


def with_hand_in(nb, lang: str | None):
    """``nb`` (an exercise; changed in place and returned) ending with how to hand it in from a cell, in ``lang``
    (None: Korean, a line ``---``, English), once, locked."""
    import nbformat
    text = HAND_IN[lang] if lang else f"{HAND_IN['ko']}\n\n---\n\n{HAND_IN['en']}"
    cell = nbformat.v4.new_markdown_cell(text, id=HAND_IN_ID)
    cell.metadata.update(editable=False, deletable=False)
    nb.cells = [c for c in nb.cells if c.get("id") != HAND_IN_ID] + [cell]
    return nb


CHECK_CALL = re.compile(r"""check\(\s*["']([A-Za-z0-9_]+\.[A-Za-z0-9_]+)["']""")


@dataclass(frozen=True)
class Graded:
    """A test cell of the exercise: the task it checks and whether its answer cells were left as released."""

    notebook: str
    cell: int
    grade_id: str
    task: str | None
    points: float
    untouched: bool


def tasks_of(nb, notebook: str = "") -> list[Graded]:
    """The graded test cells of ``nb``, each with whether the answer cells before it are untouched (still raising
    NotImplementedError, or, where nbgrader is installed, with the released checksum)."""
    try:
        from nbgrader.utils import compute_checksum
    except ImportError:  # a notebook service's kernel: the stub's line is the evidence
        compute_checksum = None

    def released(cell) -> bool:
        return "raise NotImplementedError" in cell.source or (
            compute_checksum is not None and cell.metadata.nbgrader.get("checksum") == compute_checksum(cell))

    out, answers = [], []
    for i, cell in enumerate(nb.cells):
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if meta.get("solution") and not meta.get("grade"):
            answers.append(cell)
        elif meta.get("grade") and not meta.get("solution") and cell.cell_type == "code":
            found = CHECK_CALL.search(cell.source)
            out.append(Graded(notebook, i, meta.get("grade_id", str(i)), found.group(1) if found else None,
                              float(meta.get("points", 0)), bool(answers) and all(map(released, answers))))
            answers = []
    return out


def label(g: Graded) -> Message:
    """The task's bilingual title, or its test cell's id."""
    if g.task:
        try:
            from .checks import task
            return task(g.task).title
        except Exception:  # an unknown or broken task still gets listed
            pass
    return Message(g.grade_id, g.grade_id)


def pack(out: Path, student: str, assignment: str, notebooks: dict[str, bytes], course: str = "") -> Path:
    """Write the submission zip ``out``: the notebooks (name -> content) and the manifest ``collect`` reads."""
    import zipfile
    manifest = {"student": student, "assignment": assignment, "course": course,
                "timestamp": datetime.now(timezone.utc).isoformat(),
                "files": {name: hashlib.sha256(data).hexdigest() for name, data in notebooks.items()}}
    out.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in notebooks.items():
            archive.writestr(name, data)
        archive.writestr(MANIFEST, json.dumps(manifest, ensure_ascii=False, indent=1))
    return out


class HandInError(ValueError):
    """The hand-in was refused; the message says why and what to do."""


def submit_here(student: str | None = None, path: str | Path | None = None, to: str | Path = ".") -> Path:
    """Write ``<student>__<assignment>.zip`` into ``to`` from this kernel's exercise notebook, as ``python3 -m
    autograder submit`` writes it; print what it holds, the tasks not attempted and the checks not passed in this
    kernel; on Colab offer it for download. ``path``: the notebook, where the kernel cannot tell which it runs."""
    from .grading import languages, roster

    student = student or os.environ.get("COURSE_STUDENT_ID", "")
    if not student:
        raise HandInError(msg("standalone.need_id").text())
    problem = roster.id_problem(student)  # the one id rule
    if problem:
        raise HandInError(problem.text())
    data, colab = _this_notebook(path)
    nb = _read(data)
    graded = tasks_of(nb)
    module = next((g.task.split(".")[0] for g in graded if g.task), None)
    from . import layout
    found = [m for m in layout.modules(part="exercise") if m.short == module]
    if not found:
        raise HandInError(msg("standalone.not_an_exercise").text())
    assignment = found[0].id
    name = languages.file_name(layout.exercise(assignment).stem)
    out = pack(Path(to) / f"{student}__{assignment}.zip", student, assignment, {name: data})
    notes = _notes(graded)
    for note in notes:
        print(note.text())
    print(msg("grading.submit_with_problems" if notes else "grading.submit_all_good").text())
    print(msg("grading.submitted", path=out.resolve()).text())
    if colab is not None:
        colab.download(str(out))
        print(msg("standalone.downloaded").text())
    else:
        print(msg("standalone.as_saved").text())
    return out


def _notes(graded: list[Graded]) -> list[Message]:
    """Tasks not attempted, and attempted ones whose check in this kernel gave less than full points or has not run."""
    from .checks import VERDICTS
    notes = []
    for g in graded:
        if g.untouched:
            notes.append(msg("grading.submit_not_attempted", task=label(g)))
        elif g.task and g.task not in VERDICTS:
            notes.append(msg("standalone.not_checked", task=label(g)))
        elif g.task and VERDICTS[g.task] < g.points:
            notes.append(msg("grading.submit_check_fails", task=label(g), earned=f"{VERDICTS[g.task]:g}",
                             points=f"{g.points:g}"))
    return notes


def _this_notebook(path) -> tuple[bytes, object]:
    """(the notebook's bytes, Colab's ``files`` module or None): ``path``, else Colab's page, else JupyterLab's
    session (``JPY_SESSION_NAME``, which ipykernel also keeps as ``__session__``; the kernel runs in its folder)."""
    if path is not None:
        return _file(Path(path)), None
    try:
        from google.colab import _message, files
    except ImportError:
        pass
    else:
        reply = _message.blocking_request("get_ipynb", timeout_sec=60)
        if isinstance(reply, dict) and isinstance(reply.get("ipynb"), dict):
            return json.dumps(reply["ipynb"], ensure_ascii=False).encode("utf-8"), files
    session = os.environ.get("JPY_SESSION_NAME") or _user_namespace().get("__session__") or ""
    for candidate in (Path(session), Path(Path(session).name)):
        if session and candidate.suffix == ".ipynb" and candidate.is_file():
            return _file(candidate), None
    raise HandInError(msg("standalone.which_notebook").text())


def _user_namespace() -> dict:
    try:
        from IPython import get_ipython
    except ImportError:
        return {}
    shell = get_ipython()
    return getattr(shell, "user_ns", {}) if shell is not None else {}


def _file(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError:
        raise HandInError(msg("grading.submit_missing", path=path).text()) from None


def _read(data: bytes):
    import nbformat
    try:
        return nbformat.reads(data.decode("utf-8"), as_version=4)
    except Exception as exc:  # any reason the notebook cannot be read
        raise HandInError(msg("grading.submit_malformed", path="notebook",
                              error=str(exc).splitlines()[0][:200]).text()) from None
