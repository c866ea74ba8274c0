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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="course", description="AI hardware course / AI 하드웨어 과정")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("start", help="open JupyterLab on the start page / 시작 페이지 열기")
    sub.add_parser("test", help="run the whole test suite / 전체 테스트 실행")
    hw = sub.add_parser("hardware", help="show detected hardware and its profile / 하드웨어와 프로파일 보기")
    hw.add_argument("--profile", action="store_true", help="also show (or measure) the profile")
    hw.add_argument("--refresh", action="store_true", help="re-measure the measured profile")
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
