"""The ``course`` command (also ``python3 -m autograder``): thin subcommands over the package."""
from __future__ import annotations

import argparse
import re
import sys

from . import language
from .i18n import get_language, t


def _hardware(args: argparse.Namespace) -> int:
    from . import hardware, reference
    report = hardware.detect()
    print(hardware.describe(report))
    profile = reference.profile_for(refresh=args.refresh) if args.profile else None
    if profile is not None:
        kind = t("측정값", "measured") if profile.measured else t("사양", "spec")
        print(f"\n{t('프로파일', 'profile')}: {profile.name} ({kind})")
        for dtype, tflops in sorted(profile.peak_tflops.items()):
            print(f"  {dtype:>6}: {tflops:g} TFLOP/s")
        if profile.bandwidth_gbs:
            print(f"  {t('메모리 대역폭', 'memory bandwidth')}: {profile.bandwidth_gbs:g} GB/s")
    return 0


def _site(args: argparse.Namespace) -> int:
    from . import website
    return website.main(args.out, args.lang, args.hub, not args.no_execute)


class CourseParser(argparse.ArgumentParser):
    """An argparse parser whose own words (usage, section titles, -h, errors) are in the chosen language.

    Subcommand parsers are made with the same class, so every ``--help`` follows the language.
    """

    def __init__(self, *args, **kwargs):
        add_help = kwargs.pop("add_help", True)
        kwargs.setdefault("formatter_class", _Formatter)
        super().__init__(*args, add_help=False, **kwargs)
        self._positionals.title = t("인자", "arguments")
        self._optionals.title = t("옵션", "options")
        if add_help:
            self.add_argument("-h", "--help", action="help", default=argparse.SUPPRESS,
                              help=t("이 도움말을 보이고 끝냅니다", "show this help and exit"))

    def add_subparsers(self, **kwargs):
        kwargs.setdefault("title", t("명령", "commands"))
        kwargs.setdefault("metavar", "COMMAND")
        return super().add_subparsers(**kwargs)

    def error(self, message: str):
        self.print_usage(sys.stderr)
        self.exit(2, f"{self.prog}: {t('오류', 'error')}: {argparse_text(message)}\n"
                     f"  (`{self.prog} --help`: {t('도움말', 'help')})\n")


class _Formatter(argparse.HelpFormatter):
    def add_usage(self, usage, actions, groups, prefix=None):
        super().add_usage(usage, actions, groups, t("사용법", "usage") + ": " if prefix is None else prefix)


# argparse's error messages (its gettext message ids, Python 3.10 to 3.13) and their Korean text.
_ARGPARSE_KO = {
    "argument %(argument_name)s: %(message)s": "인자 %(argument_name)s: %(message)s",
    "unrecognized arguments: %s": "알 수 없는 인자: %s",
    "the following arguments are required: %s": "다음 인자가 필요합니다: %s",
    "invalid choice: %(value)r (choose from %(choices)s)": "없는 선택지: %(value)r (고를 수 있는 것: %(choices)s)",
    "expected one argument": "값이 하나 필요합니다",
    "expected at most one argument": "값은 하나까지만 줄 수 있습니다",
    "expected at least one argument": "값이 하나 이상 필요합니다",
    "expected %s argument": "값이 %s개 필요합니다",
    "expected %s arguments": "값이 %s개 필요합니다",
    "invalid %(type)s value: %(value)r": "%(type)s 값이 아닙니다: %(value)r",
    "not allowed with argument %s": "%s 인자와 함께 쓸 수 없습니다",
    "one of the arguments %s is required": "다음 인자 중 하나가 필요합니다: %s",
    "ambiguous option: %(option)s could match %(matches)s": "모호한 옵션: %(option)s (후보: %(matches)s)",
    "ignored explicit argument %r": "무시된 값: %r",
}
_PLACEHOLDER = re.compile(r"%(?:\((\w+)\))?[rsd]")


def _pattern(msgid: str) -> re.Pattern:
    """A regular expression that matches ``msgid`` as argparse filled it in, one group per placeholder."""
    parts, end = [], 0
    for i, found in enumerate(_PLACEHOLDER.finditer(msgid)):
        parts += [re.escape(msgid[end:found.start()]), f"(?P<{found.group(1) or f'_{i}'}>.+?)"]
        end = found.end()
    return re.compile("".join(parts + [re.escape(msgid[end:])]) + "$", re.S)


_ARGPARSE = [(_pattern(msgid), ko) for msgid, ko in _ARGPARSE_KO.items()]


def argparse_text(message: str, lang: str | None = None) -> str:
    """argparse's English error in the chosen language (``"ko / en"`` under both); kept as it is if unknown."""
    lang = lang or get_language()
    if lang == "en":
        return message
    ko = _korean(message)
    if ko is None:
        return message
    return ko if lang == "ko" else f"{ko} / {message}"


def _korean(message: str) -> str | None:
    for pattern, ko in _ARGPARSE:
        found = pattern.match(message)
        if found:
            values = found.groupdict()
            if "message" in values:  # "argument X: <an error of its own>"
                values["message"] = _korean(values["message"]) or values["message"]
            names = iter(values.values())
            return _PLACEHOLDER.sub(lambda m: values[m.group(1)] if m.group(1) else next(names), ko)
    return None


def _language_option(parser: argparse.ArgumentParser) -> None:
    """``--lang`` (no default: a subcommand's must not hide the top level's)."""
    parser.add_argument(language.OPTION, choices=language.LANGUAGES, dest="lang", default=argparse.SUPPRESS,
                        help=t("이 명령과 다음 명령의 언어: ko, en 또는 both (기억됨)",
                               "language of this and later commands: ko, en or both (remembered)"))


def build_parser() -> argparse.ArgumentParser:
    """The command line, with every text in the chosen language (``autograder.i18n.get_language``)."""
    parser = CourseParser(prog="course", description=t("AI 하드웨어 과정", "AI hardware course"))
    _language_option(parser)
    sub = parser.add_subparsers(dest="command", required=True)
    start = sub.add_parser("start", allow_abbrev=False, help=t("JupyterLab에서 시작 페이지 열기", "open JupyterLab on the "
                                                                                         "start page"),
                           description=t("다른 옵션은 JupyterLab에 넘깁니다(`jupyter lab --help`).",
                                         "Other options go to JupyterLab (`jupyter lab --help`)."))
    _language_option(start)
    sub.add_parser("test", help=t("전체 테스트 실행", "run the whole test suite"))
    hw = sub.add_parser("hardware", help=t("하드웨어와 프로파일 보기", "show detected hardware and its profile"))
    hw.add_argument("--profile", action="store_true", help=t("프로파일도 보기(없으면 측정)", "also show (or measure) the profile"))
    hw.add_argument("--refresh", action="store_true", help=t("측정한 프로파일을 다시 측정", "re-measure the measured profile"))
    hw.set_defaults(func=_hardware)
    site = sub.add_parser("site", help=t("과정 웹사이트 만들기 (한국어와 영어)", "build the course's website (Korean and English)"),
                          description=t("수업을 실행해 결과와 함께 _build/site/에 ko/와 en/ 사이트를 만듭니다 (`site` 추가 패키지 필요: "
                                        "pip install -e \".[site]\").",
                                        "Runs the lessons and builds the ko/ and en/ sites with their outputs into _build/site/ "
                                        "(needs the `site` extra: pip install -e \".[site]\")."))
    site.add_argument("--out", metavar="DIR", help=t("출력 폴더 (기본: _build/site)", "output folder (default: _build/site)"))
    site.add_argument(language.OPTION, choices=("ko", "en"), dest="lang", default=None,
                      help=t("한 언어만 만들기 (이 명령의 언어도 됨, 기억하지 않음)",
                             "build one language only (also this command's language; not remembered)"))
    site.add_argument("--hub", metavar="URL", help=t("수업 JupyterHub 주소: 허브 단추가 그리로 바로 갑니다",
                                                     "your class's JupyterHub: hub buttons link straight there"))
    site.add_argument("--no-execute", action="store_true",
                      help=t("수업을 실행하지 않기 (결과 없이, 빠른 확인용)", "do not run the lessons (no outputs; quick checks)"))
    site.set_defaults(func=_site)
    from .grading import app
    app.add_parser(sub, _language_option)  # instructor ... and submit
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    from .bootstrap import keep_language, main as bootstrap_main
    lang, without = language.split(argv)
    if without[:1] in (["start"], ["test"]):
        return bootstrap_main(argv)
    language.choose(lang)
    args = build_parser().parse_args(argv)
    language.choose(getattr(args, "lang", None))
    if args.command != "site":  # the site's --lang picks the site's language, not the learner's
        keep_language(getattr(args, "lang", None))
    return args.func(args)
