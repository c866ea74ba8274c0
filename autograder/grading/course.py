"""Where a course lives and how nbgrader is configured for it."""
from __future__ import annotations

import functools
import os
import sys
import warnings
from dataclasses import dataclass
from datetime import datetime, tzinfo
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from traitlets.config import Config
from traitlets.config.loader import JSONFileConfigLoader, PyFileConfigLoader

from ..i18n import msg

REPO = Path(__file__).resolve().parents[2]
CONFIG_FILE = "nbgrader_config.py"


class GradingError(RuntimeError):
    """A grading command cannot go on; the message says what to do (both languages)."""


def use_venv_tools() -> None:
    """Put this interpreter's ``bin/`` first on PATH: nbgrader runs ``alembic`` when it creates a gradebook."""
    bindir = str(Path(sys.executable).parent)
    if os.environ.get("PATH", "").split(os.pathsep)[0] != bindir:
        os.environ["PATH"] = bindir + os.pathsep + os.environ.get("PATH", "")


@dataclass(frozen=True)
class Course:
    """A course directory: ``root`` holds solutions/, exercises/, submitted/, autograded/, feedback/.

    Its nbgrader configuration is ``root/nbgrader_config.py`` if there is one, else the
    repository's, then ``root/nbgrader_config.json`` (what the instructor's commands set, such as
    the late policy; nbgrader's own commands read it too); ``db_url`` replaces the gradebook URL.
    """

    root: Path = REPO
    db_url: str | None = None

    def config(self) -> Config:
        folder = self.root if (self.root / CONFIG_FILE).exists() else REPO
        config = PyFileConfigLoader(CONFIG_FILE, path=str(folder)).load_config()
        if (self.root / "nbgrader_config.json").is_file():
            config.merge(JSONFileConfigLoader("nbgrader_config.json", path=str(self.root)).load_config())
        config.CourseDirectory.root = str(self.root)
        if self.db_url:
            config.CourseDirectory.db_url = self.db_url
        elif folder != self.root:
            config.CourseDirectory.db_url = f"sqlite:///{self.root / '.nbgrader' / 'gradebook.db'}"
        if folder != self.root:  # the repository's file, another course: keep its state in its own folder
            config.Exchange.root = str(self.root / ".exchange")
        if config.CourseDirectory.db_url.startswith("sqlite:///"):
            Path(config.CourseDirectory.db_url[len("sqlite:///"):]).parent.mkdir(parents=True, exist_ok=True)
        return config

    @property
    def gradebook_url(self) -> str:
        return self.config().CourseDirectory.db_url

    @property
    def course_id(self) -> str:
        return self.config().CourseDirectory.course_id

    @property
    def zone(self) -> tzinfo:
        """The class's time zone, set once as ``c.Course.timezone`` (e.g. ``"Asia/Seoul"``) in the course's
        nbgrader configuration: times are shown in it, and a time written without a zone is read in it.
        Unset: this machine's zone."""
        name = self.config().Course.get("timezone")
        if not name:
            return datetime.now().astimezone().tzinfo
        try:
            return ZoneInfo(name)
        except (ZoneInfoNotFoundError, ValueError):
            raise GradingError(msg("grading.bad_timezone", zone=name).text()) from None

    def folder(self, kind: str, *parts: str) -> Path:
        """``kind`` is source, release, submitted, autograded or feedback."""
        config = self.config().CourseDirectory
        name = config.get(f"{kind}_directory") or kind
        return self.root.joinpath(name, *parts)

    def private(self, *parts: str) -> Path:
        """The instructor's private folder (``.nbgrader/``): grading records, scratch space."""
        return self.root.joinpath(".nbgrader", *parts)

    def notebooks(self, assignment: str) -> list[str]:
        """Names (without .ipynb) of the assignment's notebooks, from its source or released folder (a notebook's
        language files, ``<name>.ko.ipynb`` and ``<name>.en.ipynb``, are that notebook)."""
        from .languages import notebook_of
        for kind in ("source", "release"):
            found = sorted({notebook_of(p.name) for p in self.folder(kind, assignment).glob("*.ipynb")})
            if found:
                return found
        raise GradingError(msg("grading.no_assignment", assignment=assignment, root=self.root).text())

    def check_assignment(self, assignment: str) -> None:
        """Raise :class:`GradingError` unless ``assignment`` has a source folder or is in the gradebook."""
        from nbgrader.api import Gradebook
        if self.folder("source", assignment).is_dir():
            return
        with warnings.catch_warnings(), Gradebook(self.gradebook_url, self.course_id) as gb:
            warnings.simplefilter("ignore")
            if assignment in {a.name for a in gb.assignments}:
                return
        raise GradingError(msg("grading.unknown_assignment", assignment=assignment).text())


def api(course: Course, config: Config | None = None):
    """nbgrader's Python API on ``course`` (``config`` defaults to the course's)."""
    use_venv_tools()
    from nbgrader.apps.api import NbGraderAPI
    from nbgrader.coursedir import CourseDirectory
    config = config or course.config()
    return NbGraderAPI(coursedir=CourseDirectory(config=config), config=config)


def succeed(result: dict, key: str, **values) -> dict:
    """Raise a bilingual :class:`GradingError` with nbgrader's log when an API call failed."""
    if not result.get("success"):
        detail = (result.get("log") or "") + (result.get("error") or "")
        raise GradingError(msg(key, **values).text() + "\n" + detail.strip())
    return result


def without_library_warnings(function):
    """``function`` without the SQLAlchemy warnings nbgrader's API raises as it works (``SAWarning``: "Object of type
    <SubmittedAssignment> not in session", known and harmless): they would reach the instructor's terminal, from
    this process and from every worker."""
    @functools.wraps(function)
    def quiet(*args, **kwargs):
        from sqlalchemy.exc import SAWarning
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", category=SAWarning)
            return function(*args, **kwargs)
    return quiet
