"""A private course folder and gradebook for each submission (nbgrader's SQLite takes one writer),
and the only way the grader reads or writes a file a submission could have touched.

Every such file is opened without following links (``O_NOFOLLOW`` on each folder and on the file),
must be a regular file with one link (no FIFO, socket, device, symlink or hard link to something
else), is compared after opening with what was checked before (``fstat``), and is size-bounded.
Files are written only as new files (``O_EXCL``) inside folders the grader made.
"""
from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

from nbgrader.api import Gradebook

from ..i18n import Message, msg
from .course import Course, use_venv_tools

MAX_FILE_BYTES = 100 * 2**20  # one notebook (outputs and images included)
TIMESTAMP = "timestamp.txt"
_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_READ = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC  # NONBLOCK: a FIFO never blocks the open


class UnsafeFile(OSError):
    """A file the grader will not read: ``reason`` says why (both languages)."""

    def __init__(self, reason: Message):
        super().__init__(reason.en)
        self.reason = reason


def _open_folder(base: Path, parts: tuple[str, ...]) -> int:
    """A descriptor of ``base``/``parts``, no component of ``parts`` being a link (``base`` is the grader's)."""
    fd = os.open(base, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for part in parts:
            if part in ("", ".", ".."):
                raise UnsafeFile(msg("grading.unsafe_file", name=part, kind="path"))
            child = os.open(part, _DIR, dir_fd=fd)
            os.close(fd)
            fd = child
    except OSError:
        os.close(fd)
        raise
    return fd


def _kind(mode: int, links: int) -> str | None:
    """What is wrong with a file of this mode (None: a plain regular file)."""
    if stat.S_ISLNK(mode):
        return "symbolic link"
    if stat.S_ISFIFO(mode):
        return "FIFO"
    if stat.S_ISSOCK(mode):
        return "socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "device"
    if stat.S_ISDIR(mode):
        return "folder"
    if not stat.S_ISREG(mode):
        return "special file"
    if links != 1:
        return "hard link"
    return None


def read_regular(base: Path, relative: str, limit: int = MAX_FILE_BYTES) -> bytes:
    """The bytes of ``base``/``relative``; :class:`UnsafeFile` unless it is a plain regular file of at most ``limit``."""
    parts = tuple(relative.split("/"))
    name = parts[-1]
    try:
        folder = _open_folder(base, parts[:-1])
    except UnsafeFile:
        raise
    except FileNotFoundError:
        raise
    except OSError:  # a component is a link or not a folder
        raise UnsafeFile(msg("grading.unsafe_file", name=relative, kind="link")) from None
    try:
        before = os.stat(name, dir_fd=folder, follow_symlinks=False)
        kind = _kind(before.st_mode, before.st_nlink)
        if kind:
            raise UnsafeFile(msg("grading.unsafe_file", name=relative, kind=kind))
        if before.st_size > limit:
            raise UnsafeFile(msg("grading.file_too_big", name=relative, limit=limit // 2**20))
        try:
            fd = os.open(name, _READ, dir_fd=folder)
        except OSError:
            raise UnsafeFile(msg("grading.unsafe_file", name=relative, kind="link")) from None
        try:
            after = os.fstat(fd)
            if (after.st_dev, after.st_ino) != (before.st_dev, before.st_ino) or _kind(after.st_mode, after.st_nlink):
                raise UnsafeFile(msg("grading.unsafe_file", name=relative, kind="replaced while read"))
            chunks, size = [], 0
            while size <= limit:
                chunk = os.read(fd, min(2**20, limit + 1 - size))
                if not chunk:
                    break
                chunks.append(chunk)
                size += len(chunk)
            if size > limit:
                raise UnsafeFile(msg("grading.file_too_big", name=relative, limit=limit // 2**20))
            return b"".join(chunks)
        finally:
            os.close(fd)
    finally:
        os.close(folder)


def make_folder(base: Path, *parts: str) -> Path:
    """``base``/``parts`` as real folders: a link or file in the way (inside ``base``, the grader's) is removed, never followed."""
    path = Path(base)
    for part in parts:
        path = path / part
        try:
            info = os.lstat(path)
        except FileNotFoundError:
            path.mkdir(mode=0o755)
            continue
        if not stat.S_ISDIR(info.st_mode):
            path.unlink()
            path.mkdir(mode=0o755)
    return path


def fresh_folder(base: Path, *parts: str) -> Path:
    """An empty real folder ``base``/``parts`` (what was there removed; no link on the way followed)."""
    parent = make_folder(base, *parts[:-1])
    remove(parent / parts[-1])
    (parent / parts[-1]).mkdir(mode=0o755)
    return parent / parts[-1]


def remove(path: Path) -> None:
    """Remove ``path`` (a folder's contents are removed, links unlinked and never followed)."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISDIR(info.st_mode):
        remove_tree(path)
        if os.path.lexists(path):
            shutil.rmtree(path)  # what is still there says why
    else:
        path.unlink()


def remove_tree(folder: Path | str) -> None:
    """Remove ``folder`` and everything in it as whoever runs the grader, never raising: a folder a
    submission left without permissions (mode 000, or read-only) is made the owner's again first (an
    unprivileged grader cannot list or empty it otherwise; root can). Links are unlinked, never followed."""
    shutil.rmtree(folder, ignore_errors=True)  # rmtree does not follow links inside (fd-based walk)
    if not os.path.lexists(folder):
        return
    _open_up(Path(folder))
    shutil.rmtree(folder, ignore_errors=True)


def _open_up(folder: Path) -> None:
    """Give the owner full access to ``folder`` and every folder in it (not through links)."""
    pending = [folder]
    while pending:
        path = pending.pop()
        try:
            os.chmod(path, stat.S_IRWXU, follow_symlinks=False)  # a link (swapped in since) raises
            pending += [Path(e.path) for e in os.scandir(path) if e.is_dir(follow_symlinks=False)]
        except (OSError, NotImplementedError):
            continue


def write_new(path: Path, data: bytes, mode: int = 0o644) -> None:
    """Write ``data`` to a new file ``path`` (whatever was there is removed; nothing is written through a link)."""
    remove(path)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    finally:
        os.close(fd)


def copy_regular(src_base: Path, relative: str, dest_base: Path, limit: int = MAX_FILE_BYTES) -> None:
    """Copy ``src_base``/``relative`` (a plain regular file, see :func:`read_regular`) to ``dest_base``/``relative``."""
    data = read_regular(src_base, relative, limit)
    parts = relative.split("/")
    Path(dest_base).mkdir(parents=True, exist_ok=True)
    write_new(make_folder(dest_base, *parts[:-1]) / parts[-1], data)


def template(course: Course, assignment: str, path: Path) -> None:
    """Copy ``assignment``'s structure (notebooks, cells, sources, due date) from the course gradebook to SQLite ``path``."""
    use_venv_tools()
    with Gradebook(course.gradebook_url, course.course_id) as src, \
            Gradebook(f"sqlite:///{path}", course.course_id) as dst:
        a = src.find_assignment(assignment)
        dst.update_or_create_assignment(a.name, duedate=a.duedate)
        for nb in a.notebooks:
            dst.update_or_create_notebook(nb.name, a.name)
            for c in nb.grade_cells:
                dst.update_or_create_grade_cell(c.name, nb.name, a.name, max_score=c.max_score, cell_type=c.cell_type)
            for c in nb.solution_cells:
                dst.update_or_create_solution_cell(c.name, nb.name, a.name)
            for c in nb.task_cells:
                dst.update_or_create_task_cell(c.name, nb.name, a.name, max_score=c.max_score, cell_type=c.cell_type)
            for c in nb.source_cells:
                dst.update_or_create_source_cell(c.name, nb.name, a.name, cell_type=c.cell_type, locked=c.locked,
                                                 source=c.source, checksum=c.checksum)


def source_files(course: Course, assignment: str) -> list[str]:
    """The instructor's data files of ``assignment`` (relative paths): what nbgrader puts next to the notebooks."""
    source = course.folder("source", assignment)
    if not source.is_dir():
        return []
    skip = {".ipynb_checkpoints", "__pycache__"}
    return sorted(p.relative_to(source).as_posix() for p in source.rglob("*")
                  if p.is_file() and not p.is_symlink() and p.suffix != ".ipynb"
                  and not set(p.relative_to(source).parts) & skip)


def prepare(course: Course, assignment: str, student: str, root: Path, template_db: Path) -> list[Message]:
    """``root``/: submitted/<student>/<assignment>/ (the assignment's notebooks and timestamp.txt only,
    each a plain regular file), the source's data files, gradebook.db. Returns why a file was left out."""
    remove(root)
    root.mkdir(parents=True)
    config = course.config().CourseDirectory
    submitted = make_folder(root, config.get("submitted_directory", "submitted"), student, assignment)
    origin = course.folder("submitted")
    reasons = []
    for name in [f"{n}.ipynb" for n in course.notebooks(assignment)] + [TIMESTAMP]:
        try:
            write_new(submitted / name, read_regular(origin, f"{student}/{assignment}/{name}",
                                                     2**16 if name == TIMESTAMP else MAX_FILE_BYTES))
        except FileNotFoundError:
            continue  # a missing notebook gets 0 (the worker says so)
        except UnsafeFile as refused:
            reasons.append(refused.reason)
    source = course.folder("source", assignment)
    for name in source_files(course, assignment):  # the instructor's; nbgrader copies them next to the graded notebook
        target = root / config.get("source_directory", "source") / assignment / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source / name, target)
    shutil.copyfile(template_db, root / "gradebook.db")
    return reasons
