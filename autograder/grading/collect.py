"""Submissions into ``submitted/<student>/<assignment>/``: from a folder, or from nbgrader's exchange.

The student is who the instructor's side says: the exchange's folder name, or the name of the
entry in the folder, which the instructor controls: ``<student>__<assignment>.zip`` (what
``python -m autograder submit`` makes), ``<student>.zip``, a folder ``<student>/``, or notebooks
``<student>.ipynb`` / ``<student>__<notebook>.ipynb``. A ``submission.json`` that names another
student or assignment refuses the entry; it never places files.

Only the assignment's notebooks are taken, each read without following links, as a plain regular
file of bounded size; every refusal is printed and kept in ``.nbgrader/collect/<assignment>.jsonl``.

The submission time (``timestamp.txt``, what nbgrader compares with the due date) is the time the
instructor's side received it: the time of this collect or the time the instructor gives
(``--received-at``) for a folder; the time the exchange folder was made for the exchange. Neither
the file's modification time nor the ``submission.json`` time is trusted; a stated time that would
change the verdict (or lies in the future) is kept in ``.nbgrader/received/<assignment>/<id>.json``
and shown by collect, the export and the feedback. A ``--received-at`` in the future is refused.

Only students on the roster (the gradebook's students) are collected: an entry of anyone else (an OS
account such as ``root`` in the exchange) is refused, saying so, unless ``add_unknown`` puts them on
the roster first (``collect --add-unknown``).
"""
from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shutil
import stat
import tempfile
import zipfile
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path, PurePosixPath

from ..i18n import Message, msg
from ..standalone import MANIFEST
from . import languages
from .course import Course, GradingError, api, succeed
from .roster import add_students, id_problem, students
from .scratch import MAX_FILE_BYTES, TIMESTAMP, UnsafeFile, fresh_folder, read_regular, write_new

STUDENT_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")  # kept for old imports; the rule: roster.id_problem
MAX_ZIP_BYTES = 200 * 2**20
SKIP = (".ipynb_checkpoints", "__pycache__", "__MACOSX")


@dataclass(frozen=True)
class Collected:
    student: str
    source: str
    problem: str | None = None  # why it was not collected (English, one line)
    why: Message | None = None  # the same, both languages
    replaced: bool = False  # an earlier submission of this student was replaced
    ignored: bool = False  # for another assignment: neither received nor refused
    note: Message | None = None  # the submission's own time disagrees with the received time
    added: bool = False  # put on the roster by this collect (add_unknown)
    took: tuple[tuple[str, str | None], ...] = ()  # each notebook's file taken and which it is (languages.kind_of)


class Refused(ValueError):
    def __init__(self, reason: Message):
        super().__init__(reason.en)
        self.reason = reason


TOLERANCE_S = 600  # a stated time this much after the received time is shown (clocks differ a little)


def from_exchange(course: Course, assignment: str, add_unknown: bool = False) -> list[Collected]:
    """nbgrader collect (the exchange that ``nbgrader submit`` and the Assignments tab use); then each
    collected submission's time is the time its exchange folder was made (the folder's inode change
    time, which its owner cannot set back), not the time its name or ``timestamp.txt`` states.
    A student not on the roster is refused (nothing of theirs stays in ``submitted/``) unless ``add_unknown``."""
    course.check_assignment(assignment)
    config = course.config()
    inbound = Path(config.Exchange.root) / course.course_id / "inbound"
    entries = list(inbound.glob(f"*+{assignment}+*")) if inbound.is_dir() else []
    unsafe = {entry.name: found for entry in entries
              if (found := _special_entry(entry))}  # nbgrader's collect would copy what a link points at
    unknown = {entry.name.split("+")[0] for entry in entries} - set(students(course))
    unknown = {s for s in unknown if not id_problem(s)}
    with _held(course, assignment, set() if add_unknown else unknown):
        succeed(api(course).collect(assignment), "grading.collect_failed", assignment=assignment)
    latest = {}
    for entry in inbound.glob(f"*+{assignment}+*") if inbound.is_dir() else []:
        parts = entry.name.split("+")
        if len(parts) < 3 or parts[1] != assignment:
            continue
        try:
            info = entry.lstat()
            from nbgrader.utils import parse_utc
            claimed = parse_utc(parts[2]).replace(tzinfo=timezone.utc)
        except (OSError, ValueError, OverflowError):
            continue
        if parts[0] not in latest or claimed > latest[parts[0]][0]:
            made = datetime.fromtimestamp(info.st_ctime, timezone.utc)
            latest[parts[0]] = (claimed, made, entry.name)
    done = []
    for student, (claimed, made, name) in sorted(latest.items()):
        if id_problem(student):
            done.append(_refused(course, assignment, student, name, id_problem(student)))
            continue
        folder = course.folder("submitted", student, assignment)
        if student in unknown and not add_unknown:
            done.append(_refused(course, assignment, student, name, msg("grading.not_on_roster", student=student,
                                                                        name=name), off_roster=True))
            continue
        if name in unsafe:
            if _is_folder(folder):
                shutil.rmtree(folder)  # what nbgrader copied through the link: never graded
            done.append(_refused(course, assignment, student, name, msg("grading.zip_link", name=name,
                                                                           entry=unsafe[name])))
            continue
        if not _is_folder(folder):
            continue
        took = _one_file_each(folder, course.notebooks(assignment))
        disagrees = made - claimed > _seconds(TOLERANCE_S) or claimed - made > _seconds(TOLERANCE_S)
        at = made if disagrees else claimed
        write_new(folder / TIMESTAMP, at.isoformat().encode("utf-8"))
        note = _remember(course, assignment, student, name, at, claimed, disagrees, "exchange")
        done.append(Collected(student, name, note=note, added=student in unknown, took=took))
    add_students(course, [c.student for c in done if c.added])
    return done


def _one_file_each(folder: Path, notebooks: list[str]) -> tuple[tuple[str, str | None], ...]:
    """What nbgrader's collect copied (the learner's whole exercise folder) with one file per notebook: the one
    the learner worked in (``languages.worked_in``) under the notebook's name, its other language files removed.
    Returns each file taken and which it is (``languages.kind_of``)."""
    took = []
    for notebook in notebooks:
        found = {}
        for name in languages.file_names(notebook):
            with contextlib.suppress(OSError, ValueError):
                found[name] = (read_regular(folder, name), (folder / name).lstat().st_mtime)
        if not found:
            continue
        chosen = languages.worked_in(found)
        data = found[chosen][0]
        took.append((chosen, languages.kind_of(chosen, data)))
        if set(found) - {languages.file_name(notebook)}:
            for name in found:
                (folder / name).unlink()
            write_new(folder / languages.file_name(notebook), data)
    return tuple(took)


@contextlib.contextmanager
def _held(course: Course, assignment: str, unknown: set[str]):
    """Around nbgrader's collect (which takes everyone in the exchange): what it copies for ``unknown`` students
    is removed afterwards, and a folder of theirs that was there before is put back as it was."""
    hold = course.private("collect", "held")
    kept = []
    for student in sorted(unknown):
        folder = course.folder("submitted", student, assignment)
        if _is_folder(folder):
            hold.mkdir(parents=True, exist_ok=True)
            place = Path(tempfile.mkdtemp(dir=hold)) / assignment
            folder.rename(place)
            kept.append((folder, place))
    try:
        yield
    finally:
        for student in unknown:
            if _is_folder(course.folder("submitted", student, assignment)):
                shutil.rmtree(course.folder("submitted", student, assignment))
            with contextlib.suppress(OSError):
                course.folder("submitted", student).rmdir()  # only if nothing else of theirs is there
        for folder, place in kept:
            folder.parent.mkdir(parents=True, exist_ok=True)
            place.rename(folder)
            place.parent.rmdir()


def _special_entry(folder: Path) -> str | None:
    """The first link or special file (FIFO, socket, device) inside a submission folder, or None."""
    try:
        if not stat.S_ISDIR(folder.lstat().st_mode):
            return folder.name
    except OSError:
        return folder.name
    for root, dirs, files in os.walk(folder):  # os.walk does not follow links into folders
        for name in dirs + files:
            mode = os.lstat(os.path.join(root, name)).st_mode
            if not (stat.S_ISDIR(mode) or stat.S_ISREG(mode)):
                return os.path.relpath(os.path.join(root, name), folder)
    return None


def _seconds(n: float):
    from datetime import timedelta
    return timedelta(seconds=n)


def _due(course: Course, assignment: str) -> datetime | None:
    from nbgrader.api import Gradebook, MissingEntry
    try:
        with Gradebook(course.gradebook_url, course.course_id) as gb:
            due = gb.find_assignment(assignment).duedate
    except MissingEntry:
        return None
    return due.replace(tzinfo=timezone.utc) if due else None


def _disagrees(claimed: datetime | None, received: datetime, due: datetime | None) -> bool:
    """A stated time that would change the verdict (on time by it, late by the received time) or is in the future."""
    if claimed is None:
        return False
    if claimed - received > _seconds(TOLERANCE_S):
        return True
    return due is not None and (claimed <= due) != (received <= due)


def _remember(course: Course, assignment: str, student: str, source: str, at: datetime, claimed: datetime | None,
              disagrees: bool, via: str) -> Message | None:
    """``.nbgrader/received/<assignment>/<student>.json``: when and how it was received, what it stated."""
    path = course.private("received", assignment, f"{student}.json")
    path.parent.mkdir(parents=True, exist_ok=True)
    record = {"at": at.isoformat(), "via": via, "source": source,
              "claimed": claimed.isoformat() if claimed else None, "disagrees": bool(disagrees)}
    write_new(path, json.dumps(record, ensure_ascii=False, indent=1).encode("utf-8"))
    from .deadlines import time_note
    return time_note({"received": record}, course.zone)


def received(course: Course, assignment: str, student: str) -> dict:
    """What :func:`_remember` kept ({} if nothing)."""
    path = course.private("received", assignment, f"{student}.json")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def from_folder(course: Course, assignment: str, folder: Path, received_at: datetime | None = None,
                add_unknown: bool = False) -> list[Collected]:
    """Copy every student's notebooks from ``folder``; a later entry for the same student replaces an earlier one.
    Each is received at ``received_at`` (default: now; a time in the future is refused). A student not on the
    roster is refused unless ``add_unknown`` (then they are put on it)."""
    notebooks = course.notebooks(assignment)
    folder = Path(folder)
    if not _is_folder(folder):
        raise GradingError(msg("grading.collect_no_folder", folder=folder).text())
    now = datetime.now(timezone.utc)
    if received_at is not None and received_at > now:
        raise GradingError(msg("grading.received_in_future", when=received_at.isoformat(),
                               now=now.astimezone().isoformat(timespec="seconds")).text())
    at = (received_at or now).astimezone(timezone.utc)
    due = _due(course, assignment)
    roster = set(students(course))
    done = []
    for entry in sorted(folder.iterdir()):
        if entry.name.startswith("."):
            continue
        student = _student(entry.name)
        try:
            if _other_assignment(entry.name, assignment, notebooks):
                done.append(Collected(student, entry.name, ignored=True))
                continue
            if id_problem(student):
                raise Refused(id_problem(student))
            if student not in roster and not add_unknown:
                done.append(_refused(course, assignment, student, entry.name,
                                     msg("grading.not_on_roster", student=student, name=entry.name), off_roster=True))
                continue
            files, took, stated = _read(folder, entry.name, assignment, notebooks, student)
            claimed = _stated_time(stated)
            newcomer = student not in roster
            if newcomer:
                add_students(course, [student])
                roster.add(student)
            replaced = _store(course, assignment, student, files, at.isoformat())
            note = _remember(course, assignment, student, entry.name, at, claimed, _disagrees(claimed, at, due),
                             "folder")
            done.append(Collected(student, entry.name, replaced=replaced, note=note, added=newcomer, took=took))
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


def _refused(course: Course, assignment: str, student: str, source: str, reason: Message,
             off_roster: bool = False) -> Collected:
    """Log the refusal (``off_roster``: of someone not in the class, whom the export leaves out)."""
    log = refusal_log(course, assignment)
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "a", encoding="utf-8") as handle:
        handle.write(json.dumps({"time": datetime.now(timezone.utc).isoformat(), "source": source,
                                 "student": student, "reason": reason.en, "off_roster": off_roster},
                                ensure_ascii=False) + "\n")
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


def _stated_time(stamp: str | None) -> datetime | None:
    """The time a submission states for itself (aware UTC), or None if none or unreadable."""
    try:
        moment = datetime.fromisoformat(str(stamp))
    except (TypeError, ValueError):
        return None
    return (moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)).astimezone(timezone.utc)


def _read(folder: Path, name: str, assignment: str, notebooks: list[str],
          student: str) -> tuple[dict[str, bytes], tuple[tuple[str, str | None], ...], str | None]:
    """({notebook file name: content}, each file taken and which it is (:func:`_pick`), the time its manifest
    states, if any) of one entry of the folder."""
    info = (folder / name).lstat()
    stamp = None  # the file's modification time on this disk says nothing about when it was submitted
    if stat.S_ISLNK(info.st_mode):
        raise UnsafeFile(msg("grading.unsafe_file", name=name, kind="symbolic link"))
    if stat.S_ISDIR(info.st_mode):
        base = f"{name}/{assignment}" if _is_folder(folder / name / assignment) else name
        found, times = {}, {}
        for path in (folder / base).iterdir():
            if path.name.endswith(".ipynb") and not path.name.startswith("."):
                found[path.name] = lambda n=path.name: read_regular(folder, f"{base}/{n}")
                times[path.name] = path.lstat().st_mtime
        return *_pick(found, notebooks, name, times), stamp
    if name.endswith(".ipynb"):
        notebook = name[:-len(".ipynb")].partition("__")[2] or notebooks[0]
        return *_pick({f"{notebook}.ipynb": lambda: read_regular(folder, name)}, notebooks, name), stamp
    if name.endswith(".zip"):
        files, manifest = _unzip(read_regular(folder, name, MAX_ZIP_BYTES), name)
        _check_manifest(manifest, name, student, assignment)
        return *_pick(files, notebooks, name), manifest.get("timestamp")
    if not stat.S_ISREG(info.st_mode):
        raise UnsafeFile(msg("grading.unsafe_file", name=name, kind="special file"))
    raise Refused(msg("grading.unknown_entry", name=name))


def _is_folder(path: Path) -> bool:
    try:
        return stat.S_ISDIR(path.lstat().st_mode)
    except OSError:
        return False


def _pick(found: dict, notebooks: list[str], name: str,
          times: dict[str, float] | None = None) -> tuple[dict[str, bytes], tuple[tuple[str, str | None], ...]]:
    """The assignment's notebooks among ``found`` (name -> bytes, or a function reading them); a single
    notebook with another name is the assignment's only notebook. A notebook's language files
    (``<notebook>.ko.ipynb``, ``<notebook>.en.ipynb``) are that notebook: of several, the one the learner worked in
    (``languages.worked_in``; ``times``: when each was changed, where known). Nothing else is read. Returns them
    with each file taken and which it is (``languages.kind_of``).
    :class:`Refused` when none is there, saying what is (several notebooks of other names, notebooks deeper in
    folders)."""
    wanted = [f"{n}.ipynb" for n in notebooks]
    top = [n for n in found if "/" not in n and n.endswith(".ipynb")]
    named = {}  # the file's own name, where it is taken as the notebook of another
    if len(wanted) == 1 and len(top) == 1 and top[0] not in wanted:
        found, named = {wanted[0]: found[top[0]]}, {wanted[0]: top[0]}
    picked, took = {}, []
    for notebook in notebooks:
        files = {f: (found[f]() if callable(found[f]) else found[f]) for f in languages.file_names(notebook) if f in found}
        if files:
            chosen = languages.worked_in({f: (data, (times or {}).get(f)) for f, data in files.items()})
            picked[languages.file_name(notebook)] = files[chosen]
            own = named.get(chosen, chosen)
            took.append((own, languages.kind_of(own, files[chosen])))
    if picked:
        return picked, tuple(took)
    others = sorted(n for n in found if n.endswith(".ipynb"))
    if not others:
        raise Refused(msg("grading.collect_no_notebook", name=name))
    listed = ", ".join(others[:5]) + (f", ... ({len(others)})" if len(others) > 5 else "")
    raise Refused(msg("grading.collect_other_notebooks", name=name, found=listed[:300], wanted=", ".join(wanted)))


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
