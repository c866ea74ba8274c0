"""Submissions into ``submitted/<student>/<assignment>/``: from a folder, or from nbgrader's exchange.

The student is who the instructor's side says: the exchange's folder name, or the name of the
entry in the folder, which the instructor controls: ``<student>__<assignment>.zip`` (what
``python -m autograder submit`` makes), ``<student>.zip``, a folder ``<student>/``, or notebooks
``<student>.ipynb`` / ``<student>__<notebook>.ipynb``. A ``submission.json`` that names another
student or assignment refuses the entry; it never places files.

Only the assignment's notebooks are taken, each read without following links, as a plain regular
file of bounded size; every refusal is printed and kept in ``.nbgrader/collect/<assignment>.jsonl``.
"""
from __future__ import annotations

import io
import os
import json
import re
import stat
import zipfile
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path, PurePosixPath

from ..i18n import Message, msg
from .course import Course, api, succeed
from .scratch import MAX_FILE_BYTES, TIMESTAMP, UnsafeFile, fresh_folder, read_regular, write_new

STUDENT_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
MAX_ZIP_BYTES = 200 * 2**20
MANIFEST = "submission.json"
SKIP = (".ipynb_checkpoints", "__pycache__", "__MACOSX")


@dataclass(frozen=True)
class Collected:
    student: str
    source: str
    problem: str | None = None  # why it was not collected (English, one line)
    why: Message | None = None  # the same, both languages
    replaced: bool = False  # an earlier submission of this student was replaced
    ignored: bool = False  # for another assignment: neither received nor refused


class Refused(ValueError):
    def __init__(self, reason: Message):
        super().__init__(reason.en)
        self.reason = reason


def from_exchange(course: Course, assignment: str) -> None:
    """nbgrader collect (the exchange that ``nbgrader submit`` and the Assignments tab use)."""
    succeed(api(course).collect(assignment), "grading.collect_failed", assignment=assignment)


def from_folder(course: Course, assignment: str, folder: Path) -> list[Collected]:
    """Copy every student's notebooks from ``folder``; a later entry for the same student replaces an earlier one."""
    notebooks = course.notebooks(assignment)
    folder = Path(folder)
    done = []
    for entry in sorted(folder.iterdir()):
        if entry.name.startswith("."):
            continue
        student = _student(entry.name)
        try:
            if _other_assignment(entry.name, assignment, notebooks):
                done.append(Collected(student, entry.name, ignored=True))
                continue
            if not STUDENT_ID.match(student):
                raise Refused(msg("grading.bad_student_id", student=student))
            files, stamp = _read(folder, entry.name, assignment, notebooks, student)
            if not files:
                raise Refused(msg("grading.collect_no_notebook", name=entry.name))
            replaced = _store(course, assignment, student, files, stamp)
            done.append(Collected(student, entry.name, replaced=replaced))
        except (Refused, UnsafeFile) as exc:
            done.append(_refused(course, assignment, student, entry.name, exc.reason))
        except (OSError, ValueError, zipfile.BadZipFile) as exc:
            reason = msg("grading.collect_unreadable", name=entry.name,
                         error=f"{type(exc).__name__}: {exc}".splitlines()[0][:160])
            done.append(_refused(course, assignment, student, entry.name, reason))
    return done


def summary(done: list[Collected]) -> Message:
    """One line: how many were received, refused, replaced."""
    refused = sum(1 for c in done if c.problem)
    received = sum(1 for c in done if not c.problem and not c.ignored)
    return msg("grading.collect_summary", received=received, refused=refused,
               replaced=sum(1 for c in done if c.replaced))


def refusal_log(course: Course, assignment: str) -> Path:
    return course.private("collect", f"{assignment}.jsonl")


def _refused(course: Course, assignment: str, student: str, source: str, reason: Message) -> Collected:
    log = refusal_log(course, assignment)
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "a", encoding="utf-8") as handle:
        handle.write(json.dumps({"time": datetime.now(timezone.utc).isoformat(), "source": source,
                                 "student": student, "reason": reason.en}, ensure_ascii=False) + "\n")
    return Collected(student, source, reason.en, reason)


def _student(name: str) -> str:
    """The student id an entry's name gives (``<student>__<rest>``, ``<student>.<ext>``, ``<student>/``)."""
    stem = name[:-len(".ipynb")] if name.endswith(".ipynb") else name[:-len(".zip")] if name.endswith(".zip") else name
    return stem.split("__")[0]


def _other_assignment(name: str, assignment: str, notebooks: list[str]) -> bool:
    """``<student>__<other assignment>.zip``."""
    if not name.endswith(".zip") or "__" not in name:
        return False
    return name[:-len(".zip")].split("__", 1)[1] != assignment


def _read(folder: Path, name: str, assignment: str, notebooks: list[str], student: str) -> tuple[dict[str, bytes], str]:
    """({notebook file name: content}, timestamp) of one entry of the folder."""
    info = (folder / name).lstat()
    stamp = datetime.fromtimestamp(info.st_mtime, timezone.utc).isoformat()
    if stat.S_ISLNK(info.st_mode):
        raise UnsafeFile(msg("grading.unsafe_file", name=name, kind="symbolic link"))
    if stat.S_ISDIR(info.st_mode):
        base = f"{name}/{assignment}" if _is_folder(folder / name / assignment) else name
        found = {}
        for path in (folder / base).iterdir():
            if path.name.endswith(".ipynb") and not path.name.startswith("."):
                found[path.name] = lambda n=path.name: read_regular(folder, f"{base}/{n}")
        return _pick(found, notebooks), stamp
    if name.endswith(".ipynb"):
        notebook = name[:-len(".ipynb")].partition("__")[2] or notebooks[0]
        return _pick({f"{notebook}.ipynb": lambda: read_regular(folder, name)}, notebooks), stamp
    if name.endswith(".zip"):
        files, manifest = _unzip(read_regular(folder, name, MAX_ZIP_BYTES), name)
        _check_manifest(manifest, name, student, assignment)
        return _pick(files, notebooks), str(manifest.get("timestamp") or stamp)
    if not stat.S_ISREG(info.st_mode):
        raise UnsafeFile(msg("grading.unsafe_file", name=name, kind="special file"))
    raise Refused(msg("grading.unknown_entry", name=name))


def _is_folder(path: Path) -> bool:
    try:
        return stat.S_ISDIR(path.lstat().st_mode)
    except OSError:
        return False


def _pick(found: dict, notebooks: list[str]) -> dict[str, bytes]:
    """The assignment's notebooks among ``found`` (name -> bytes, or a function reading them); a single
    notebook with another name is the assignment's only notebook. Nothing else is read."""
    wanted = [f"{n}.ipynb" for n in notebooks]
    top = [n for n in found if "/" not in n and n.endswith(".ipynb")]
    if len(wanted) == 1 and len(top) == 1 and top[0] not in wanted:
        found = {wanted[0]: found[top[0]]}
    return {n: (found[n]() if callable(found[n]) else found[n]) for n in wanted if n in found}


def _check_manifest(manifest: dict, name: str, student: str, assignment: str) -> None:
    named = manifest.get("student")
    if named is not None and str(named) != student:
        raise Refused(msg("grading.foreign_manifest", name=name, named=str(named)[:64], student=student))
    if manifest.get("assignment") not in (None, assignment):
        raise Refused(msg("grading.manifest_assignment", name=name, named=str(manifest["assignment"])[:64],
                          assignment=assignment))


def _unzip(data: bytes, name: str) -> tuple[dict[str, bytes], dict]:
    """({notebook path: content}, manifest) of a zip; links, absolute or parent paths and oversized content refuse it."""
    files, manifest, total = {}, {}, 0
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        for info in archive.infolist():
            path = PurePosixPath(info.filename)
            if path.is_absolute() or ".." in path.parts or "\\" in info.filename:
                raise Refused(msg("grading.zip_unsafe", name=name, entry=info.filename[:120]))
            kind = stat.S_IFMT(info.external_attr >> 16)  # 0: no Unix type recorded (a plain file)
            if kind not in (0, stat.S_IFREG, stat.S_IFDIR):
                raise Refused(msg("grading.zip_link", name=name, entry=info.filename[:120]))
            if info.is_dir() or set(path.parts) & set(SKIP):
                continue
            if not (info.filename.endswith(".ipynb") or info.filename == MANIFEST):
                continue  # only notebooks are taken
            with archive.open(info) as handle:
                content = handle.read(MAX_FILE_BYTES + 1)
            total += len(content)
            if len(content) > MAX_FILE_BYTES or total > MAX_ZIP_BYTES:
                raise Refused(msg("grading.file_too_big", name=f"{name}:{info.filename}", limit=MAX_FILE_BYTES // 2**20))
            if info.filename == MANIFEST:
                try:
                    manifest = json.loads(content or b"{}")
                except ValueError:
                    raise Refused(msg("grading.bad_manifest", name=name)) from None
                if not isinstance(manifest, dict):
                    raise Refused(msg("grading.bad_manifest", name=name))
            else:
                files[path.as_posix()] = content
    # a zip of the exercise folder: strip the common leading folder
    tops = {PurePosixPath(n).parts[0] for n in files}
    if len(tops) == 1 and all(len(PurePosixPath(n).parts) > 1 for n in files):
        top = tops.pop()
        files = {n[len(top) + 1:]: content for n, content in files.items()}
    return files, manifest


def _store(course: Course, assignment: str, student: str, files: dict[str, bytes], stamp: str) -> bool:
    """Replace ``submitted/<student>/<assignment>/`` by ``files`` (new regular files; nothing followed).
    True if there was a submission there."""
    moment = _nbgrader_time(stamp)
    base = course.folder("submitted")
    base.mkdir(parents=True, exist_ok=True)
    replaced = os.path.lexists(base / student / assignment) and not os.path.islink(base / student)
    dest = fresh_folder(base, student, assignment)
    for name, data in files.items():
        write_new(dest / name, data)
    write_new(dest / TIMESTAMP, moment.encode("utf-8"))
    return replaced


def _nbgrader_time(stamp: str) -> str:
    """nbgrader reads timestamp.txt with dateutil; keep it in UTC."""
    try:
        moment = datetime.fromisoformat(stamp)
    except ValueError:
        raise Refused(msg("grading.bad_manifest", name=TIMESTAMP)) from None
    return (moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)).astimezone(timezone.utc).isoformat()
