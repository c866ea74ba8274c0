"""HTML feedback per student (nbgrader generate_feedback; hidden test code removed, messages kept).

nbgrader copies and chmods what it finds next to the graded notebooks, following links: it runs
here in a private staging course that holds only the assignment's graded notebooks, each copied
from ``autograded/`` as a plain regular file. The HTML it writes is copied back into
``feedback/<student>/<assignment>/`` the same way. A student whose feedback fails is reported;
the others get theirs.

Every student gets a feedback file: on top of the graded notebook a cell in the notebook's language (both
where it has none) with the score, the late penalty (or that it was on time) and what happened while grading; a student
whose submission could not be graded (broken, refused at collect, missing) gets a page that says
why, in both languages, under the same name.
"""
from __future__ import annotations

import html as html_lib
import stat
import sys
import tempfile
from pathlib import Path

import nbformat

from ..i18n import Message, msg
from . import languages
from .course import Course, GradingError, api, succeed
from .safe_html import SafeHTMLExporter, policy, with_policy
from .scratch import TIMESTAMP, UnsafeFile, fresh_folder, make_folder, read_regular, write_new


def feedback(course: Course, assignment: str, student: str | None = None, release: bool = False,
             out=None) -> list[Path]:
    """Write ``feedback/<student>/<assignment>/*.html``; ``release`` also puts it in the exchange (see
    :func:`release_to_exchange`). Returns the files written; a student whose feedback failed is printed to ``out``
    with the reason. An unknown assignment or student raises :class:`GradingError`."""
    from .export import rows
    from .roster import check_student, id_problem
    out = out or sys.stdout
    course.check_assignment(assignment)
    if student:
        check_student(course, student, assignment)
    graded = course.folder("autograded")
    table = {r["student_id"]: r for r in rows(course, [assignment])}
    notebooks = course.notebooks(assignment)
    everyone = sorted(p.name for p in graded.iterdir() if _is_dir(p / assignment) and any(
        _is_file(p / assignment / f"{n}.ipynb") for n in notebooks)) if graded.is_dir() else []
    ungraded = sorted(s for s in table if s not in everyone and not id_problem(s) and (not student or s == student))
    students = [student] if student and student in everyone else [] if student else \
        [s for s in everyone if not id_problem(s)]
    problems, written = {}, []
    with tempfile.TemporaryDirectory(prefix="aihw-feedback-") as tmp:
        stage = Path(tmp)
        config = course.config()
        url = course.gradebook_url
        config.CourseDirectory.root = str(stage)
        config.CourseDirectory.db_url = url
        config.GenerateFeedback.exporter_class = SafeHTMLExporter  # a student's outputs run nothing
        staged = []
        for s in students:
            try:
                if not _is_dir(graded / s) or not _is_dir(graded / s / assignment):
                    raise UnsafeFile(msg("grading.unsafe_file", name=f"{s}/{assignment}", kind="not graded"))
                dest = make_folder(stage, "autograded", s, assignment)
                banner = _banner(assignment, s, table.get(s))
                for name in notebooks:
                    try:
                        data = read_regular(graded, f"{s}/{assignment}/{name}.ipynb")
                    except FileNotFoundError:
                        continue
                    write_new(dest / f"{name}.ipynb", _with_banner(data, banner))
                staged.append(s)
            except (OSError, ValueError) as exc:
                problems[s] = exc.reason.en if isinstance(exc, UnsafeFile) else f"{type(exc).__name__}: {exc}"
        if staged:
            result = api(course, config).generate_feedback(assignment, student_id=student, force=True)
            if not result.get("success") and student:
                problems.setdefault(student, _last_line(result))
        for s in staged:
            try:
                html = {f"{n}.html": read_regular(stage, f"feedback/{s}/{assignment}/{n}.html") for n in notebooks
                        if (stage / "feedback" / s / assignment / f"{n}.html").exists()}
                if not html:
                    raise ValueError(problems.get(s) or _last_line(result))
                course.folder("feedback").mkdir(parents=True, exist_ok=True)
                dest = fresh_folder(course.folder("feedback"), s, assignment)
                for name, data in html.items():
                    write_new(dest / name, data)
                    written.append(dest / name)
                _stamp(course, s, assignment, dest)
            except (OSError, ValueError) as exc:
                problems[s] = exc.reason.en if isinstance(exc, UnsafeFile) else str(exc).splitlines()[0][:200]
    for s in ungraded:
        try:
            page = _page(assignment, s, table[s]).encode("utf-8")
            course.folder("feedback").mkdir(parents=True, exist_ok=True)
            dest = fresh_folder(course.folder("feedback"), s, assignment)
            for name in notebooks:
                write_new(dest / f"{name}.html", page)
                written.append(dest / f"{name}.html")
            _stamp(course, s, assignment, dest)
        except OSError as exc:
            problems[s] = exc.reason.en if isinstance(exc, UnsafeFile) else f"{type(exc).__name__}: {exc}"
    for s, detail in sorted(problems.items()):
        print(msg("grading.feedback_student_failed", student=s, detail=detail).text(), file=out)
    if release:
        release_to_exchange(course, assignment, written, student, out)
    return sorted(written)


def release_to_exchange(course: Course, assignment: str, written: list[Path], student: str | None, out) -> None:
    """Release the feedback of each submission that came through the exchange (nbgrader's release_feedback);
    print who got theirs and who did not, and why. Raise :class:`GradingError` when nobody's was released."""
    folders = sorted({p.parent for p in written})
    came = [f.parent.name for f in folders if (f / SUBMISSION_FILES[1]).is_file()]
    kept = [f.parent.name for f in folders if f.parent.name not in came]
    for s in kept:  # from a folder (no exchange secret to name it by) or not collected at all
        why = "grading.feedback_kept_folder" if course.folder("submitted", s, assignment).is_dir() else \
            "grading.feedback_kept_none"
        print(msg(why, student=s, folder=course.folder("feedback", s, assignment)).text(), file=out)
    if not came:
        raise GradingError(msg("grading.feedback_nothing_released", assignment=assignment, count=len(folders),
                               folder=course.folder("feedback")).text())
    config = course.config()
    config.CourseDirectory.student_id_exclude = ",".join(kept)
    succeed(api(course, config).release_feedback(assignment, student_id=student), "grading.feedback_failed",
            assignment=assignment)
    print(msg("grading.feedback_released", count=len(came), students=", ".join(came),
              exchange=config.Exchange.root).text(), file=out)


SUBMISSION_FILES = (TIMESTAMP, "submission_secret.txt")  # what nbgrader's release_feedback reads next to the HTML


def _stamp(course: Course, student: str, assignment: str, dest: Path) -> None:
    """The submission's time and secret (from the exchange) next to its feedback: nbgrader's release_feedback
    names the released feedback by them."""
    for name in SUBMISSION_FILES:
        try:
            data = read_regular(course.folder("submitted"), f"{student}/{assignment}/{name}")
        except (OSError, ValueError):
            continue  # not collected from the exchange: nothing to release for this student
        write_new(dest / name, data)


def _banner(assignment: str, student: str, row: dict | None) -> Message:
    """What the feedback says first, as Markdown: score, lateness and penalty, reasons (both languages)."""
    from .deadlines import duration, parse_time
    if row is None:
        return Message("", "")
    lines_ko, lines_en = [], []
    score = msg("grading.feedback_score", net=f"{row['score']:g}", max=f"{row['max_score']:g}")
    lines_ko.append(f"**{score.ko}**")
    lines_en.append(f"**{score.en}**")
    if row.get("due") and row.get("submitted_at"):
        late = (parse_time(row["submitted_at"]) - parse_time(row["due"])).total_seconds()
        if late > 0:
            ko = msg("grading.late_line", due=row["due"], late=duration(late).ko, received=row["submitted_at"],
                     penalty=f"{row['late_penalty']:g}", raw=f"{row['raw_score']:g}", net=f"{row['score']:g}").ko
            en = msg("grading.late_line", due=row["due"], late=duration(late).en, received=row["submitted_at"],
                     penalty=f"{row['late_penalty']:g}", raw=f"{row['raw_score']:g}", net=f"{row['score']:g}").en
        else:
            line = msg("grading.on_time_line", due=row["due"], received=row["submitted_at"])
            ko, en = line.ko, line.en
        lines_ko.append(ko)
        lines_en.append(en)
    if row.get("reason_en"):
        head = msg("grading.feedback_problems")
        lines_ko += [head.ko] + [f"- {r}" for r in row["reason_ko"].split("; ")]
        lines_en += [head.en] + [f"- {r}" for r in row["reason_en"].split("; ")]
    return Message("\n\n".join(lines_ko), "\n\n".join(lines_en))


def _with_banner(data: bytes, banner: Message) -> bytes:
    """The graded notebook with ``banner`` as its first cell (a plain Markdown cell nbgrader does not grade), in
    the notebook's language (``languages.language_of``; both where it has none)."""
    if not banner.en:
        return data
    try:
        nb = nbformat.reads(data.decode("utf-8"), as_version=4)
    except Exception:
        return data
    nb.cells.insert(0, _cell(banner, languages.language_of(nb)))
    return nbformat.writes(nb).encode("utf-8")


def banner_cell(assignment: str, student: str, row: dict | None):
    """The feedback's first cell for ``row`` (an export row), as a Markdown cell; None without a row. The
    formgrader's submission pages show it too (``safe_html``)."""
    banner = _banner(assignment, student, row)
    return _cell(banner) if banner.en else None


def _cell(banner: Message, lang: str | None = None):
    title = msg("grading.feedback_title", assignment="", student="")
    cell = nbformat.v4.new_markdown_cell(getattr(banner, lang) if lang else f"{banner.ko}\n\n---\n\n{banner.en}")
    cell.metadata["aihw"] = {"feedback_banner": True, "title": title.en}
    return cell


def _page(assignment: str, student: str, row: dict) -> str:
    """A feedback page for a submission that could not be graded: why, in both languages."""
    esc = html_lib.escape
    title = msg("grading.feedback_title", assignment=assignment, student=student)
    banner = _banner(assignment, student, row)
    lead = msg("grading.feedback_nothing_graded")

    def block(lang: str, text: str, intro: str) -> str:
        items = "".join(f"<p>{esc(p).replace('**', '')}</p>" if not p.startswith("- ") else f"<li>{esc(p[2:])}</li>"
                        for p in text.split("\n\n") for p in p.split("\n"))
        return f'<section lang="{lang}"><p>{esc(intro)}</p>{items}</section>'

    return with_policy(f'<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>{esc(title.en)}</title></head><body>'
                       f"<h1>{esc(title.ko)}</h1>{block('ko', banner.ko, lead.ko)}<hr>"
                       f"<h1>{esc(title.en)}</h1>{block('en', banner.en, lead.en)}</body></html>\n", policy([]))


def _is_file(path: Path) -> bool:
    try:
        return stat.S_ISREG(path.lstat().st_mode)
    except OSError:
        return False


def _is_dir(path: Path) -> bool:
    try:
        return stat.S_ISDIR(path.lstat().st_mode)
    except OSError:
        return False


def _last_line(result: dict) -> str:
    text = (result.get("error") or "") + (result.get("log") or "")
    lines = [line for line in text.splitlines() if "rror" in line] or text.strip().splitlines() or ["failed"]
    return lines[-1].strip()[:200]
