"""The ``course`` command (also ``python3 -m autograder``): thin subcommands over the package."""
from __future__ import annotations

import argparse
import sys


def _hardware(args: argparse.Namespace) -> int:
    from . import hardware, reference
    report = hardware.detect()
    print(hardware.describe(report))
    profile = reference.profile_for(refresh=args.refresh) if args.profile else None
    if profile is not None:
        print(f"\nprofile: {profile.name} ({'measured' if profile.measured else 'spec'})")
        for dtype, tflops in sorted(profile.peak_tflops.items()):
            print(f"  {dtype:>6}: {tflops:g} TFLOP/s")
        if profile.bandwidth_gbs:
            print(f"  memory bandwidth: {profile.bandwidth_gbs:g} GB/s")
    return 0


class CourseParser(argparse.ArgumentParser):
    """An argparse parser whose own words (usage, section titles, -h, errors) are in both languages.

    Subcommand parsers are made with the same class, so every ``--help`` is bilingual.
    """

    def __init__(self, *args, **kwargs):
        add_help = kwargs.pop("add_help", True)
        kwargs.setdefault("formatter_class", _Formatter)
        super().__init__(*args, add_help=False, **kwargs)
        self._positionals.title = "인자 / arguments"
        self._optionals.title = "옵션 / options"
        if add_help:
            self.add_argument("-h", "--help", action="help", default=argparse.SUPPRESS,
                              help="이 도움말을 보이고 끝냅니다 / show this help and exit")

    def add_subparsers(self, **kwargs):
        kwargs.setdefault("title", "명령 / commands")
        kwargs.setdefault("metavar", "COMMAND")
        return super().add_subparsers(**kwargs)

    def error(self, message: str):
        self.print_usage(sys.stderr)
        self.exit(2, f"{self.prog}: 오류 / error: {_translate(message)}\n"
                     f"  (`{self.prog} --help`: 도움말 / help)\n")


class _Formatter(argparse.HelpFormatter):
    def add_usage(self, usage, actions, groups, prefix=None):
        super().add_usage(usage, actions, groups, "사용법 / usage: " if prefix is None else prefix)


_ERRORS = (("unrecognized arguments", "알 수 없는 인자"), ("the following arguments are required", "다음 인자가 필요합니다"),
           ("invalid choice", "없는 선택지"), ("expected one argument", "값이 하나 필요합니다"),
           ("invalid float value", "숫자가 아닌 값"), ("invalid int value", "정수가 아닌 값"),
           ("not allowed with argument", "함께 쓸 수 없는 인자"))


def _translate(message: str) -> str:
    """argparse's English error with its Korean meaning in front."""
    for en, ko in _ERRORS:
        if message.startswith(en):
            return f"{ko} / {message}"
    return message


def build_parser() -> argparse.ArgumentParser:
    parser = CourseParser(prog="course", description="AI 하드웨어 과정 / AI hardware course")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("start", help="JupyterLab에서 시작 페이지 열기 / open JupyterLab on the start page")
    sub.add_parser("test", help="전체 테스트 실행 / run the whole test suite")
    hw = sub.add_parser("hardware", help="하드웨어와 프로파일 보기 / show detected hardware and its profile")
    hw.add_argument("--profile", action="store_true", help="프로파일도 보기(없으면 측정) / also show (or measure) the profile")
    hw.add_argument("--refresh", action="store_true", help="측정한 프로파일을 다시 측정 / re-measure the measured profile")
    hw.set_defaults(func=_hardware)
    from .grading import app
    app.add_parser(sub)  # instructor ... and submit
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] in ("start", "test"):
        from .bootstrap import main as bootstrap_main
        return bootstrap_main(argv)
    args = build_parser().parse_args(argv)
    return args.func(args)
