"""Submissions into ``submitted/<student>/<assignment>/``: from a folder, or from nbgrader's exchange.

A folder may hold, per student: ``<student>__<assignment>.zip`` (what ``python -m autograder
submit`` makes, with a ``submission.json`` naming the student), ``<student>.zip``, a folder
``<student>/``, or notebooks ``<student>.ipynb`` / ``<student>__<notebook>.ipynb``.
"""
from __future__ import annotations

import json
import re
import shutil
import zipfile
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path, PurePosixPath

from ..i18n import msg
from .course import Course, api, succeed

STUDENT_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
MAX_ZIP_BYTES = 200 * 2**20
MANIFEST = "submission.json"
SKIP = (".ipynb_checkpoints", "__pycache__", "__MACOSX")


@dataclass(frozen=True)
class Collected:
    student: str
    source: str
    problem: str | None = None  # why it was not collected (English, one line)


def from_exchange(course: Course, assignment: str) -> None:
    """nbgrader collect (the exchange that ``nbgrader submit`` and the Assignments tab use)."""
    succeed(api(course).collect(assignment), "grading.collect_failed", assignment=assignment)


def from_folder(course: Course, assignment: str, folder: Path) -> list[Collected]:
    """Copy every student's files from ``folder``; a later entry for the same student replaces an earlier one."""
    notebooks = course.notebooks(assignment)
    done = []
    for entry in sorted(Path(folder).iterdir()):
        if entry.name.startswith(".") or entry.is_symlink():
            continue
        try:
            student, files, stamp = _read(entry, assignment)
        except (ValueError, OSError, zipfile.BadZipFile) as exc:
            done.append(Collected("?", entry.name, f"{type(exc).__name__}: {exc}"))
            continue
        if not STUDENT_ID.match(student):
            done.append(Collected(student, entry.name, msg("grading.bad_student_id", student=student).en))
            continue
        _store(course, assignment, student, _rename(files, notebooks), stamp)
        done.append(Collected(student, entry.name))
    return done


def _read(entry: Path, assignment: str) -> tuple[str, dict[str, bytes], str]:
    """(student id, {relative path: content}, timestamp) of one entry of the folder."""
    stamp = datetime.fromtimestamp(entry.stat().st_mtime, timezone.utc).isoformat()
    if entry.is_dir():
        root = entry / assignment if (entry / assignment).is_dir() else entry
        files = {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*")
                 if p.is_file() and not p.is_symlink() and not set(p.relative_to(root).parts) & set(SKIP)}
        return entry.name, files, stamp
    if entry.suffix == ".ipynb":
        student, _, notebook = entry.stem.partition("__")
        return student, {f"{notebook or entry.stem}.ipynb": entry.read_bytes()}, stamp
    if entry.suffix == ".zip":
        files = _unzip(entry)
        manifest = json.loads(files.pop(MANIFEST, b"{}") or b"{}")
        student = str(manifest.get("student") or entry.stem.split("__")[0])
        return student, files, str(manifest.get("timestamp") or stamp)
    raise ValueError(msg("grading.unknown_entry", name=entry.name).en)


def _unzip(path: Path) -> dict[str, bytes]:
    """The files of a zip, refusing absolute or parent paths and oversized content."""
    files, total = {}, 0
    with zipfile.ZipFile(path) as archive:
        for info in archive.infolist():
            name = PurePosixPath(info.filename)
            if info.is_dir() or set(name.parts) & set(SKIP):
                continue
            if name.is_absolute() or ".." in name.parts:
                raise ValueError(f"unsafe path in zip: {info.filename}")
            total += info.file_size
            if total > MAX_ZIP_BYTES:
                raise ValueError(f"zip larger than {MAX_ZIP_BYTES // 2**20} MiB")
            files[name.as_posix()] = archive.read(info)
    # a zip of the exercise folder: strip the common leading folder
    tops = {PurePosixPath(n).parts[0] for n in files if n != MANIFEST}
    if len(tops) == 1 and all(len(PurePosixPath(n).parts) > 1 for n in files if n != MANIFEST):
        top = tops.pop()
        files = {(n if n == MANIFEST else n[len(top) + 1:]): data for n, data in files.items()}
    return files


def _rename(files: dict[str, bytes], notebooks: list[str]) -> dict[str, bytes]:
    """A single notebook with another name is the assignment's only notebook."""
    submitted = [n for n in files if n.endswith(".ipynb") and "/" not in n]
    if len(notebooks) == 1 and len(submitted) == 1 and submitted[0] != f"{notebooks[0]}.ipynb":
        files = dict(files)
        files[f"{notebooks[0]}.ipynb"] = files.pop(submitted[0])
    return files


def _store(course: Course, assignment: str, student: str, files: dict[str, bytes], stamp: str) -> None:
    dest = course.folder("submitted", student, assignment)
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    for name, data in files.items():
        path = dest / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    (dest / "timestamp.txt").write_text(_nbgrader_time(stamp), encoding="utf-8")


def _nbgrader_time(stamp: str) -> str:
    """nbgrader reads timestamp.txt with dateutil; keep it in UTC."""
    moment = datetime.fromisoformat(stamp)
    return (moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)).astimezone(timezone.utc).isoformat()
