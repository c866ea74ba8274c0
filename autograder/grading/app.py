"""``python -m autograder instructor ...`` (release, collect, grade, feedback, export) and ``submit``."""
from __future__ import annotations

import argparse
import os
from pathlib import Path

from ..i18n import Message, msg
from .course import REPO, Course, GradingError


def add_parser(subparsers) -> None:
    """Register ``instructor`` (with its subcommands) and the learner's ``submit``."""
    parent = argparse.ArgumentParser(add_help=False)
    parent.add_argument("--root", type=Path, default=REPO, help="course folder (default: this repository)")
    parent.add_argument("--db-url", help="gradebook URL (default: nbgrader_config.py; e.g. postgresql://...)")

    inst = subparsers.add_parser("instructor", help="grade the class with nbgrader / nbgrader로 채점")
    sub = inst.add_subparsers(dest="action", required=True)
    p = sub.add_parser("generate", parents=[parent], help="solutions/NN -> exercises/NN (student version)")
    p.add_argument("assignment")
    p.set_defaults(func=_generate)
    p = sub.add_parser("release", parents=[parent], help="generate, then release to the nbgrader exchange")
    p.add_argument("assignment")
    p.add_argument("--due", help="due date, e.g. 2026-12-01T23:59+09:00 (see `deadline`)")
    p.set_defaults(func=_release)
    p = sub.add_parser("deadline", parents=[parent], help="set or show due dates and the late penalty / 마감과 지각 감점")
    p.add_argument("assignment", nargs="?", help="e.g. 01_devices (default: list every assignment)")
    p.add_argument("due", nargs="?", help="e.g. 2026-12-01T23:59+09:00, or none to remove it")
    p.add_argument("--late", help="late penalty: none, zero, per-hour=POINTS or per-day=POINTS")
    p.set_defaults(func=_deadline)
    p = sub.add_parser("roster", parents=[parent], help="import the class list (id,first_name,last_name,email) / 명단")
    p.add_argument("csv", nargs="?", type=Path, help="roster CSV to import (default: list the students)")
    p.set_defaults(func=_roster)
    p = sub.add_parser("collect", parents=[parent], help="collect from a folder (zips, notebooks) or the exchange")
    p.add_argument("assignment")
    p.add_argument("folder", nargs="?", type=Path, help="folder of submissions (default: the exchange)")
    p.add_argument("--received-at", help="when the folder's files were received (default: now), e.g. 2026-12-01T23:00+09:00")
    p.set_defaults(func=_collect)
    p = sub.add_parser("grade", parents=[parent], help="autograde in parallel, isolated")
    p.add_argument("assignment")
    p.add_argument("--students", help="comma-separated ids (default: every submission)")
    p.add_argument("--workers", type=int, help="parallel workers (default: number of cores)")
    p.add_argument("--cell-timeout", type=int, help="seconds per cell (default: Execute.timeout)")
    p.add_argument("--notebook-timeout", type=float, default=1800, help="seconds per notebook (default 1800)")
    p.add_argument("--memory-gb", type=float, default=4, help="memory per submission in GiB (default 4)")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--require-sandbox", action="store_true", help="fail if bubblewrap is not usable")
    mode.add_argument("--no-sandbox", action="store_true", help="grade without isolation")
    p.set_defaults(func=_grade)
    p = sub.add_parser("feedback", parents=[parent], help="HTML feedback per student")
    p.add_argument("assignment")
    p.add_argument("--student")
    p.add_argument("--release", action="store_true", help="also release it to the exchange")
    p.set_defaults(func=_feedback)
    p = sub.add_parser("export", parents=[parent], help="CSV: one row per student and assignment")
    p.add_argument("--to", type=Path, help="CSV path (default: instructor/grades-<date>.csv, ignored by git)")
    p.add_argument("--bom", action="store_true", help="start with a byte-order mark (spreadsheets then read Hangul right)")
    p.add_argument("--assignment", action="append", help="only these assignments (repeatable)")
    p.set_defaults(func=_export)
    p = sub.add_parser("check-hardware", help="grade the reference solutions here a few times; report lost points")
    p.add_argument("modules", nargs="*", help="e.g. 02_gpu_architecture (default: every solutions/NN_*)")
    p.add_argument("--root", type=Path, default=REPO, help="course folder whose solutions/ to check (default: this repository)")
    p.add_argument("--runs", type=int, default=3, help="gradings of each reference (default 3)")
    p.add_argument("--workers", type=int, help="parallel workers, as for grade (default: number of cores)")
    p.add_argument("--no-sandbox", action="store_true", help="grade without isolation")
    p.set_defaults(func=_check_hardware)

    p = subparsers.add_parser("submit", parents=[parent], help="제출 파일 만들기 / package an exercise for the instructor",
                              description="실습 노트북을 zip 하나로 묶고, 풀지 않은 과제와 통과하지 못한 확인 셀을 알려 줍니다. / "
                                          "Packs an exercise's notebooks into one zip and lists tasks not attempted "
                                          "and visible checks that fail.")
    p.add_argument("assignment", help="실습 폴더 이름, 예: 01_devices / the exercise folder, e.g. 01_devices")
    p.add_argument("--student", default=os.environ.get("COURSE_STUDENT_ID"),
                   help="내 학번 (또는 환경 변수 COURSE_STUDENT_ID) / your id (or COURSE_STUDENT_ID)")
    p.add_argument("--to", type=Path, help="zip을 만들 폴더 (기본: submissions/) / output folder (default: submissions/)")
    p.add_argument("--no-check", action="store_true",
                   help="확인 셀을 실행하지 않습니다 / do not run the visible checks")
    p.add_argument("--check-timeout", type=float, default=300,
                   help="확인 셀 전체의 시간 한도(초, 기본 300) / time limit for the visible checks (s, default 300)")
    p.set_defaults(func=_submit)


def _course(args) -> Course:
    return Course(Path(args.root).resolve(), args.db_url)


def _guard(run):
    """Print a :class:`GradingError` (bilingual) instead of a traceback; exit status 2."""
    def wrapped(args) -> int:
        from .submit import SubmitError
        try:
            return run(args) or 0
        except (GradingError, SubmitError) as error:
            print(error)
            return 2
    return wrapped


@_guard
def _generate(args):
    from .generate import generate
    print(generate(_course(args), args.assignment))


@_guard
def _release(args):
    from .deadlines import due_dates, set_due, show
    from .generate import release
    course = _course(args)
    release(course, args.assignment)
    if args.due is not None:
        set_due(course, args.assignment, args.due)
    due = due_dates(course).get(args.assignment)
    print(_with_due("grading.released", show(due), assignment=args.assignment,
                    folder=course.folder("release", args.assignment), exchange=course.config().Exchange.root).text())


def _with_due(key: str, due: str, **values) -> Message:
    none = msg("grading.no_due")
    return Message(msg(key, due=due or none.ko, **values).ko, msg(key, due=due or none.en, **values).en)


@_guard
def _deadline(args):
    from .deadlines import describe_policy, due_dates, set_due, set_policy, show
    course = _course(args)
    if args.late:
        set_policy(course, args.late)
    if args.assignment and args.due:
        set_due(course, args.assignment, args.due)
    dates = due_dates(course)
    for name in [args.assignment] if args.assignment else sorted(dates):
        print(_with_due("grading.due_set", show(dates.get(name)), assignment=name).text())
    policy = describe_policy(course)
    print(Message(msg("grading.late_policy", policy=policy.ko).ko, msg("grading.late_policy", policy=policy.en).en).text())


@_guard
def _roster(args):
    from .roster import import_roster, students
    course = _course(args)
    if args.csv is not None:
        print(msg("grading.roster_imported", count=import_roster(course, args.csv), path=args.csv).text())
        return
    for sid, person in sorted(students(course).items()):
        print(f"{sid:<20} {person['last_name']} {person['first_name']}  {person['email']}".rstrip())


@_guard
def _collect(args):
    from .collect import from_exchange, from_folder, refusal_log, summary
    from .deadlines import parse_time
    course = _course(args)
    if args.folder is None:
        done = from_exchange(course, args.assignment)
    else:
        at = parse_time(args.received_at) if args.received_at else None
        done = from_folder(course, args.assignment, args.folder, at)
    for item in done:
        mark = "➖" if item.ignored else "✅" if item.problem is None else "❌"
        why = item.why.text() if item.why is not None else ""
        print(f"{mark} {item.student:<20} {item.source}  {why}".rstrip())
        if item.note is not None:
            print(f"   ⚠️ {item.note.text()}")
    print(summary(done).text())
    if any(item.problem for item in done):
        print(msg("grading.collect_refused_log", path=refusal_log(course, args.assignment)).text())
        return 1


@_guard
def _grade(args):
    from .batch import grade_class
    from .export import rows, summary
    from .worker import Limits
    course = _course(args)
    limits = Limits(args.cell_timeout, args.notebook_timeout, int(args.memory_gb * 2**30))
    isolate = True if args.require_sandbox else False if args.no_sandbox else None
    students = args.students.split(",") if args.students else None
    graded = {o.student for o in grade_class(course, args.assignment, students, args.workers, limits, isolate)}
    print(summary([r for r in rows(course, [args.assignment]) if r["student_id"] in graded]))


@_guard
def _feedback(args):
    from .feedback import feedback
    for path in feedback(_course(args), args.assignment, args.student, args.release):
        print(path)


@_guard
def _export(args):
    from .export import default_path, write
    course = _course(args)
    path = args.to or default_path(course)
    count = write(course, path, args.assignment, bom=args.bom)
    print(msg("grading.exported", path=path, count=count).text())


@_guard
def _check_hardware(args):
    from .hardware_check import check, machine, report
    print(machine())
    text, lost = report(check(Path(args.root).resolve(), args.modules, max(1, args.runs), args.workers,
                              False if args.no_sandbox else None))
    print(text)
    return 1 if lost else 0


@_guard
def _submit(args):
    from .submit import review, submit
    course = _course(args)
    path = submit(course, args.assignment, args.student or "", args.to)
    if not args.no_check:
        print(msg("grading.submit_checking", seconds=f"{args.check_timeout:g}").text(), flush=True)
    notes = review(course, args.assignment, run=not args.no_check, timeout_s=args.check_timeout)
    for note in notes:
        print(note.text())
    if notes:
        print(msg("grading.submit_with_problems").text())
    else:
        print(msg("grading.submit_not_checked" if args.no_check else "grading.submit_all_good").text())
    print(msg("grading.submitted", path=path).text())
