"""First open of a fresh clone: the folders nbgrader's Formgrader and Assignments list expect.

nbgrader_config.py calls :func:`prepare` each time nbgrader reads it (JupyterLab's server extensions
read it on start and on every request). On a fresh clone ``.nbgrader/`` (the SQLite gradebook's
folder) and the exchange do not exist yet: without them the Formgrader answers 500 ("unable to open
database file") and the Assignments list says the exchange directory does not exist. Creating them,
and finding ``alembic`` (nbgrader runs it to create a gradebook; a server started without the
environment's ``bin/`` on PATH does not find it), is all it takes for both to open on an empty course. Nothing here may fail nbgrader: a folder that
cannot be made (a shared exchange owned by root, a read-only checkout) is left to nbgrader's own
message.
"""
from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

from .. import language

NEXT_STEP = ("과제가 아직 없습니다. 강사: `python -m autograder instructor release 01_devices`로 배포하세요. "
             "학생: 강사가 배포하면 여기에 나타납니다.",
             "No assignments yet. Instructor: release one with `python -m autograder instructor release 01_devices`. "
             "Learners: released exercises appear here.")


def prepare(db_url: str, exchange: str, announce: bool = True) -> list[Path]:
    """Make the SQLite gradebook's folder and the exchange folder if missing; return what was made."""
    bindir = str(Path(sys.executable).parent)
    if shutil.which("alembic") is None and (Path(bindir) / "alembic").exists():
        os.environ["PATH"] = bindir + os.pathsep + os.environ.get("PATH", "")
    made = []
    wanted = [Path(exchange)]
    if db_url.startswith("sqlite:///"):
        wanted.insert(0, Path(db_url[len("sqlite:///"):]).parent)
    for folder in wanted:
        if folder.is_dir():
            continue
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError:
            continue
        made.append(folder)
    if made and announce:
        print(f"[course] {', '.join(map(str, made))}: " + language.pick(*NEXT_STEP, joiner=" / "), file=sys.stderr)
    return made

