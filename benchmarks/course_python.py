"""Benchmarks run with the course's own Python: from any ``python3``, they re-run themselves with ``.venv``'s."""
from __future__ import annotations

import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
VENV_PYTHON = REPO / ".venv" / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def ensure(script: str) -> None:
    """Re-run ``script`` with ``.venv``'s Python when this one lacks the course, or say what to run."""
    try:
        import nbgrader  # noqa: F401
        return
    except ImportError:
        pass
    if VENV_PYTHON.exists() and Path(sys.prefix).resolve() != (REPO / ".venv").resolve():
        os.execv(str(VENV_PYTHON), [str(VENV_PYTHON), str(Path(script).resolve()), *sys.argv[1:]])
    name = Path(script).name
    sys.exit("The course is not installed for this Python. Run `python3 -m autograder setup` (creates .venv), "
             f"then `{VENV_PYTHON.relative_to(REPO)} benchmarks/{name}`.\n"
             "이 Python에는 과정이 설치되어 있지 않습니다. `python3 -m autograder setup`(.venv 생성) 후 "
             f"`{VENV_PYTHON.relative_to(REPO)} benchmarks/{name}`를 실행하세요.")
