"""``python -m autograder instructor ...`` (release, collect, grade, feedback, export) and ``submit``."""
from __future__ import annotations

import argparse
import os
from pathlib import Path

from ..i18n import Message, msg, t
from .course import REPO, Course, GradingError, without_library_warnings


def add_parser(subparsers, language_option) -> None:
    """Register ``instructor`` (with its subcommands) and the learner's ``submit`` (with ``language_option``'s
    ``--lang``), every text in the chosen language."""
    parent = argparse.ArgumentParser(add_help=False)
    parent.add_argument("--root", type=Path, default=Path(os.environ.get("COURSE_ROOT") or REPO),
                        help=t("과정 폴더 (기본: COURSE_ROOT, 없으면 이 저장소; 수업 서버의 강사는 ~/course)",
                               "course folder (default: COURSE_ROOT, else this repository; ~/course for the "
                               "instructor on a class server)"))
    parent.add_argument("--db-url", help=t("성적부 URL (기본: nbgrader_config.py; 예: postgresql://...)",
                                           "gradebook URL (default: nbgrader_config.py; e.g. postgresql://...)"))

    inst = subparsers.add_parser("instructor", help=t("nbgrader로 수업 채점", "grade the class with nbgrader"))
    sub = inst.add_subparsers(dest="action", required=True)
    p = sub.add_parser("generate", parents=[parent], help=t("solutions/NN -> exercises/NN (학생용 만들기)",
                                                            "solutions/NN -> exercises/NN (the student version)"))
    p.add_argument("assignment")
    p.set_defaults(func=_generate)
    p = sub.add_parser("lessons", help=t("lessons/NN/NN.ipynb -> NN.ko.ipynb, NN.en.ipynb (수업을 언어별로 만들기)",
                                         "lessons/NN/NN.ipynb -> NN.ko.ipynb, NN.en.ipynb (build each lesson in each "
                                         "language from its one source)"))
    p.add_argument("modules", nargs="*", help=t("예: 01_devices (기본: 모든 수업)", "e.g. 01_devices (default: every lesson)"))
    p.set_defaults(func=_lessons)
    p = sub.add_parser("edition", help=t("학습자용 판 쓰기: 해답, 숨은 테스트, 참조 구현 없이 (수업 저장소용)",
                                         "write the learner edition: no solutions, hidden tests or references (a "
                                         "class's repository)"))
    p.add_argument("folder", type=Path, help=t("새 폴더나 빈 폴더, 과정 폴더 밖",
                                               "a new or empty folder outside the course folder"))
    p.set_defaults(func=_edition)
    p = sub.add_parser("wheel", help=t("해답 없는 과정 패키지(휠) 만들기: 혼자 열린 노트북이 패키지 색인에서 설치하는 것",
                                       "build the course package (a wheel) without the answers: what a notebook opened "
                                       "alone installs from the package index"))
    p.add_argument("--out", type=Path, default=Path("dist"), help=t("휠을 쓸 폴더 (기본: dist/)",
                                                                    "folder for the wheel (default: dist/)"))
    p.set_defaults(func=_wheel)
    p = sub.add_parser("release", parents=[parent], help=t("학생용을 만들어 nbgrader 교환 폴더로 배포",
                                                           "generate, then release to the nbgrader exchange"))
    p.add_argument("assignment")
    p.add_argument("--due", help=t("마감, 예: 2026-12-01T23:59+09:00 (`deadline` 참고)",
                                   "due date, e.g. 2026-12-01T23:59+09:00 (see `deadline`)"))
    p.add_argument("--force", action="store_true", help=t("교환 폴더에 이미 있는 과제를 바꿈 (예: 새 성적부로 옮긴 뒤)",
                                                          "replace the assignment already in the exchange (e.g. "
                                                          "after switching to a new gradebook)"))
    p.set_defaults(func=_release)
    p = sub.add_parser("deadline", parents=[parent], help=t("마감과 지각 감점을 정하거나 보기",
                                                            "set or show due dates and the late penalty"))
    p.add_argument("assignment", nargs="?", help=t("예: 01_devices (기본: 모든 과제 나열)",
                                                   "e.g. 01_devices (default: list every assignment)"))
    p.add_argument("due", nargs="?", help=t("예: 2026-12-01T23:59+09:00, 지우려면 none",
                                            "e.g. 2026-12-01T23:59+09:00, or none to remove it"))
    p.add_argument("--late", help=t("지각 감점: none, zero, per-hour=점수, per-day=점수",
                                    "late penalty: none, zero, per-hour=POINTS or per-day=POINTS"))
    p.set_defaults(func=_deadline)
    p = sub.add_parser("roster", parents=[parent], help=t("수강생 명단 가져오기 (id,first_name,last_name,email)",
                                                          "import the class list"))
    p.add_argument("csv", nargs="?", type=Path, help=t("가져올 명단 CSV (기본: 학생 목록 보기)",
                                                       "roster CSV to import (default: list the students)"))
    p.set_defaults(func=_roster)
    p = sub.add_parser("collect", parents=[parent], help=t("폴더(zip, 노트북)나 교환 폴더에서 수집",
                                                           "collect from a folder (zips, notebooks) or the exchange"))
    p.add_argument("assignment")
    p.add_argument("folder", nargs="?", type=Path, help=t("제출물 폴더 (기본: 교환 폴더)",
                                                          "folder of submissions (default: the exchange)"))
    p.add_argument("--received-at", help=t("폴더의 파일을 받은 시각 (기본: 지금)",
                                           "when the folder's files were received (default: now), e.g. "
                                           "2026-12-01T23:00+09:00"))
    p.add_argument("--add-unknown", action="store_true", help=t("명단에 없는 학생도 받고 명단에 넣음 (기본: 거절)",
                                                                "also take students not on the roster, adding them "
                                                                "to it (default: refuse them)"))
    p.set_defaults(func=_collect)
    p = sub.add_parser("grade", parents=[parent], help=t("격리된 환경에서 병렬 자동 채점", "autograde in parallel, isolated"))
    p.add_argument("assignment")
    p.add_argument("--students", help=t("쉼표로 구분한 학번 (기본: 모든 제출물)", "comma-separated ids (default: every submission)"))
    p.add_argument("--workers", type=int, help=t("병렬 워커 수 (기본: 코어 수)", "parallel workers (default: number of cores)"))
    p.add_argument("--cell-timeout", type=int, help=t("셀당 초 (기본: Execute.timeout)",
                                                      "seconds per cell (default: Execute.timeout)"))
    p.add_argument("--measurement-timeout", type=int,
                   help=t("측정 셀(장치 잠금을 쥠)당 초, 셀 한도보다 짧을 때 (기본: SandboxedExecute.measurement_timeout, 없으면 셀 한도)",
                          "seconds per measurement cell (it holds the device lock), when shorter than the cell limit "
                          "(default: SandboxedExecute.measurement_timeout, else the cell limit)"))
    p.add_argument("--notebook-timeout", type=float, default=1800, help=t("노트북당 초 (기본 1800)",
                                                                          "seconds per notebook (default 1800)"))
    p.add_argument("--memory-gb", type=float, default=4, help=t("제출물당 메모리 GiB (기본 4)",
                                                                "memory per submission in GiB (default 4)"))
    p.add_argument("--scheduler", help=t("Dask 스케줄러 주소, 예: tcp://10.0.0.5:8786 — 제출물마다 작업 하나를 그 워커에서 채점 (기본: 이 기계의 "
                                         "워커 프로세스)",
                                         "Dask scheduler address, e.g. tcp://10.0.0.5:8786: one task per submission "
                                         "on its workers (default: this machine's worker processes)"))
    p.add_argument("--new-seed", action="store_true",
                   help=t("과제의 새 시드를 뽑아 반 전체를 다시 채점: 숨은 사례와 시뮬레이션 장치가 바뀜 (기본: 배포 때 뽑은 시드)",
                          "draw the assignment's new seed and re-grade the whole class: new hidden cases and "
                          "simulated devices (default: the seed drawn at release)"))
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--require-sandbox", action="store_true", help=t("bubblewrap을 쓸 수 없으면 실패",
                                                                       "fail if bubblewrap is not usable"))
    mode.add_argument("--no-sandbox", action="store_true", help=t("격리 없이 채점", "grade without isolation"))
    p.set_defaults(func=_grade)
    p = sub.add_parser("feedback", parents=[parent], help=t("학생별 HTML 피드백", "HTML feedback per student"))
    p.add_argument("assignment")
    p.add_argument("--student")
    p.add_argument("--release", action="store_true", help=t("교환 폴더로도 돌려주기", "also release it to the exchange"))
    p.set_defaults(func=_feedback)
    p = sub.add_parser("export", parents=[parent], help=t("CSV: 학생과 과제마다 한 줄",
                                                          "CSV: one row per student and assignment"))
    p.add_argument("--to", type=Path, help=t("CSV 경로 (기본: git이 무시하는 instructor/grades-<날짜>.csv)",
                                             "CSV path (default: instructor/grades-<date>.csv, ignored by git)"))
    p.add_argument("--bom", action="store_true", help=t("BOM으로 시작 (스프레드시트가 한글을 바르게 읽음)",
                                                        "start with a byte-order mark (spreadsheets then read Hangul "
                                                        "right)"))
    p.add_argument("--assignment", action="append", help=t("이 과제만 (여러 번 쓸 수 있음)", "only these assignments "
                                                                                  "(repeatable)"))
    p.add_argument("--format", dest="fmt", choices=("long", "wide", "canvas", "moodle", "gradescope"), default="long",
                   help=t("long: 학생과 과제마다 한 줄 (기본), wide: 학생마다 한 줄, canvas/moodle: 그 LMS의 성적 가져오기 CSV, gradescope: "
                          "과제 하나의 문항별 CSV",
                          "long: one row per student and assignment (default), wide: one row per student, "
                          "canvas/moodle: that LMS's grade import CSV, gradescope: one assignment's per-question CSV"))
    p.set_defaults(func=_export)
    p = sub.add_parser("check-hardware", help=t("이 컴퓨터에서 참조 해답을 몇 번 채점해 잃는 점수 보고",
                                                "grade the reference solutions here a few times; report lost points"))
    p.add_argument("modules", nargs="*", help=t("예: 02_gpu_architecture (기본: 모든 solutions/NN_*)",
                                                "e.g. 02_gpu_architecture (default: every solutions/NN_*)"))
    p.add_argument("--root", type=Path, default=REPO, help=t("solutions/를 점검할 과정 폴더 (기본: 이 저장소)",
                                                             "course folder whose solutions/ to check (default: this "
                                                             "repository)"))
    p.add_argument("--runs", type=int, default=3, help=t("참조 해답마다 채점 횟수 (기본 3)",
                                                         "gradings of each reference (default 3)"))
    p.add_argument("--workers", type=int, help=t("병렬 워커 수, grade와 같음 (기본: 코어 수)",
                                                 "parallel workers, as for grade (default: number of cores)"))
    p.add_argument("--no-sandbox", action="store_true", help=t("격리 없이 채점", "grade without isolation"))
    p.set_defaults(func=_check_hardware)
    p = sub.add_parser("tasks", help=t("실습의 설계 보기: 과제 종류, 단계, 확인하는 흔한 실수, 수업에서 베낄 수 있는 비율",
                                       "review how the exercises are built: task kinds, levels, the known mistakes "
                                       "checked, how much of each answer the lesson holds"))
    p.add_argument("modules", nargs="*", help=t("예: 03_memory_hierarchy (기본: 모든 solutions/NN_*)",
                                                "e.g. 03_memory_hierarchy (default: every solutions/NN_*)"))
    p.add_argument("--root", type=Path, default=REPO, help=t("과정 폴더 (기본: 이 저장소)",
                                                             "course folder (default: this repository)"))
    p.set_defaults(func=_tasks)
    p = sub.add_parser("new-module", help="새 모듈의 뼈대: 기록과 패키지, 해답, 테스트, 실습, 수업 / "
                                          "a new module's skeleton: its record, package, answers, tests, exercise and lesson")
    p.add_argument("number", help="두 자리 번호, 예: 08 / two-digit number, e.g. 08")
    p.add_argument("topic", help="주제, 영어 소문자와 밑줄, 예: serving / topic in lowercase and underscores, e.g. serving")
    p.add_argument("--title-ko", required=True, help="한국어 제목 / the title in Korean")
    p.add_argument("--title-en", required=True, help="영어 제목 / the title in English")
    p.add_argument("--root", type=Path, default=REPO, help="과정 폴더 (기본: 이 저장소) / course folder (default: this repository)")
    p.set_defaults(func=_new_module)
    p = sub.add_parser("module-map", help="README와 시작 페이지의 모듈 지도를 모듈 기록과 비교 / "
                                          "compare the module maps of the READMEs and the start page with the module records")
    p.add_argument("--write", action="store_true", help="README의 행을 기록에서 다시 씀 / rewrite the READMEs' rows from the records")
    p.add_argument("--root", type=Path, default=REPO, help="과정 폴더 (기본: 이 저장소) / course folder (default: this repository)")
    p.set_defaults(func=_module_map)
    p = sub.add_parser("hub-link", help=t("수업 JupyterHub에서 과정 노트북을 여는 nbgitpuller 링크",
                                          "nbgitpuller links that open the course's notebooks on a class's JupyterHub"),
                       description=t("처음 누르면 학생 홈에 과정을 복제하고, 다시 누르면 학생이 고친 내용을 두고 과정의 새 내용을 합친 뒤 "
                                     "노트북을 엽니다. 저장소 주소는 autograder/data/site.yaml에서 읽습니다.",
                                     "The first click clones the course into the student's home; later clicks merge the "
                                     "course's changes and keep the student's; then the notebook opens. The repository "
                                     "address is read from autograder/data/site.yaml."))
    p.add_argument("hub", help=t("JupyterHub 주소, 예: https://hub.example.edu", "the JupyterHub's address, e.g. https://hub.example.edu"))
    p.add_argument("notebooks", nargs="*", help=t("저장소 안의 노트북 경로 (기본: 두 언어의 시작 페이지)",
                                                  "notebooks' paths in the repository (default: the start page in both languages)"))
    p.set_defaults(func=_hub_link)

    p = subparsers.add_parser("submit", parents=[parent], help=t("제출 파일 만들기", "package an exercise for the instructor"),
                              description=t("실습 노트북을 zip 하나로 묶고, 풀지 않은 과제와 통과하지 못한 확인 셀을 알려 줍니다.",
                                            "Packs an exercise's notebooks into one zip and lists tasks not "
                                            "attempted and visible checks that fail."))
    p.add_argument("assignment", help=t("실습 폴더 이름, 예: 01_devices", "the exercise folder, e.g. 01_devices"))
    p.add_argument("--student", default=os.environ.get("COURSE_STUDENT_ID"),
                   help=t("내 학번 (또는 환경 변수 COURSE_STUDENT_ID)", "your id (or COURSE_STUDENT_ID)"))
    p.add_argument("--to", type=Path, help=t("zip을 만들 폴더 (기본: submissions/)", "output folder (default: submissions/)"))
    p.add_argument("--no-check", action="store_true",
                   help=t("확인 셀을 실행하지 않습니다", "do not run the visible checks"))
    p.add_argument("--check-timeout", type=float, default=300,
                   help=t("확인 셀 전체의 시간 한도(초, 기본 300)", "time limit for the visible checks (s, default 300)"))
    language_option(p)
    p.set_defaults(func=_submit)


def _course(args) -> Course:
    return Course(Path(args.root).resolve(), args.db_url)


def _guard(run):
    """Print a :class:`GradingError` (bilingual) instead of a traceback; exit status 2. No library warnings."""
    @without_library_warnings
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


def _lessons(args):
    from .. import bilingual, layout
    sources = [layout.lesson_source(m, REPO) for m in args.modules] or layout.lesson_sources(REPO)
    missing = [str(p) for p in sources if not p.is_file()]
    if missing:
        print(msg("grading.no_lesson_source", paths=", ".join(missing)).text())
        return 2
    for source in sources:
        for path in bilingual.write_languages(source):
            print(path)
    return 0


@_guard
def _edition(args):
    from .edition import write
    print(msg("grading.edition_written", folder=write(args.folder)).text())


@_guard
def _wheel(args):
    from .edition import wheel
    print(msg("grading.wheel_written", path=wheel(args.out)).text())


@_guard
def _release(args):
    from .deadlines import due_dates, set_due, show
    from .generate import release
    course = _course(args)
    release(course, args.assignment, force=args.force)
    if args.due is not None:
        set_due(course, args.assignment, args.due)
    due = due_dates(course).get(args.assignment)
    print(_with_due("grading.released", show(due, course.zone), assignment=args.assignment,
                    folder=course.folder("release", args.assignment), exchange=course.config().Exchange.root).text())


def _with_due(key: str, due: str, **values) -> Message:
    none = msg("grading.no_due")
    return Message(msg(key, due=due or none.ko, **values).ko, msg(key, due=due or none.en, **values).en)


@_guard
def _deadline(args):
    from .deadlines import describe_policy, due_dates, set_due, set_policy, show
    course = _course(args)
    if args.assignment:
        course.check_assignment(args.assignment)
    if args.late:
        set_policy(course, args.late)
    if args.assignment and args.due:
        set_due(course, args.assignment, args.due)
    dates = due_dates(course)
    for name in [args.assignment] if args.assignment else sorted(dates):
        print(_with_due("grading.due_set", show(dates.get(name), course.zone), assignment=name).text())
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
    from .safetext import shown
    course = _course(args)
    if args.folder is None:
        done = from_exchange(course, args.assignment, args.add_unknown)
    else:
        at = parse_time(args.received_at, zone=course.zone) if args.received_at else None
        done = from_folder(course, args.assignment, args.folder, at, args.add_unknown)
    for item in done:  # entry names are the submitters': shown with their control characters escaped
        mark = "➖" if item.ignored else "✅" if item.problem is None else "❌"
        why = Message(shown(item.why.ko), shown(item.why.en)).text() if item.why is not None else ""
        print(f"{mark} {shown(item.student):<20} {shown(item.source)}  {why}".rstrip())
        if item.added:
            print(f"   ➕ {msg('grading.collect_added', student=shown(item.student)).text()}")
        for name, kind in item.took:  # which file it took: none named where it cannot be read (the grader says why)
            if kind:
                print(f"   📓 {msg('grading.collect_took', file=shown(name), kind=msg(f'grading.file_{kind}')).text()}")
        if item.note is not None:
            print(f"   ⚠️ {Message(shown(item.note.ko), shown(item.note.en)).text()}")
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
    course.check_assignment(args.assignment)
    limits = Limits(args.cell_timeout, args.notebook_timeout, int(args.memory_gb * 2**30), args.measurement_timeout)
    isolate = True if args.require_sandbox else False if args.no_sandbox else None
    students = args.students.split(",") if args.students else None
    graded = {o.student for o in grade_class(course, args.assignment, students, args.workers, limits, isolate,
                                             scheduler=args.scheduler, new_seed=args.new_seed)}
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
    for assignment in args.assignment or []:
        course.check_assignment(assignment)
    path = args.to or default_path(course, args.fmt)
    count = write(course, path, args.assignment, bom=args.bom, fmt=args.fmt)
    print(msg("grading.exported", path=path, count=count).text())


@_guard
def _check_hardware(args):
    from .hardware_check import check, machine, report
    print(machine())
    text, lost = report(check(Path(args.root).resolve(), args.modules, max(1, args.runs), args.workers,
                              False if args.no_sandbox else None))
    print(text)
    return 1 if lost else 0


def _tasks(args):
    from .design import course, table
    print(table(course(Path(args.root).resolve(), args.modules)))


@_guard
def _new_module(args):
    from .new_module import create
    written = create(args.number, args.topic, args.title_ko, args.title_en, Path(args.root).resolve())
    print(msg("modules.created", module=f"{args.number}_{args.topic}", count=len(written) - 1).text())


def _module_map(args):
    from .module_map import PAGES, WRITTEN, differences, write
    root, differ = Path(args.root).resolve(), 0
    for page in PAGES:
        if args.write and page in WRITTEN and write(page, root):
            print(msg("modules.map_written", page=page).text())
        diff = differences(page, root)
        if diff:
            differ += 1
            print(msg("modules.map_differs" if page in WRITTEN else "modules.map_by_hand", page=page).text())
            print(diff)
    if not differ:
        print(msg("modules.maps_agree").text())
    return 1 if differ else 0


def _hub_link(args):
    from .. import launch
    from ..layout import start
    paths = args.notebooks or [start(REPO).lesson(lang).as_posix() for lang in ("ko", "en")]
    try:
        for path in paths:
            print(f"{path}\n  {launch.hub_link(args.hub, path)}")
    except ValueError as error:
        print(error)
        return 2
    return 0


@_guard
def _submit(args):
    from .submit import review, submit, worked_in
    course = _course(args)
    path = submit(course, args.assignment, args.student or "", args.to)
    for name, file in worked_in(course, args.assignment).items():
        print(msg("grading.submit_sends", file=file.name, notebook=name).text())
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
