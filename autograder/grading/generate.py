"""Student versions from ``solutions/`` (nbgrader generate_assignment) and release to the exchange."""
from __future__ import annotations

from pathlib import Path

from .course import Course, api, succeed


def generate(course: Course, assignment: str, release_dir: Path | None = None) -> Path:
    """Write the student version of ``assignment`` and record its cells in the gradebook.

    ``release_dir`` (default: the course's ``exercises/``) receives ``<assignment>/*.ipynb``;
    the tests pass a temporary folder to compare with the committed copy.
    """
    config = course.config()
    if release_dir is not None:
        config.CourseDirectory.release_directory = str(release_dir)
    succeed(api(course, config).generate_assignment(assignment, force=True, create=True),
            "grading.generate_failed", assignment=assignment)
    return Path(config.CourseDirectory.root, config.CourseDirectory.release_directory, assignment)


def release(course: Course, assignment: str) -> None:
    """Generate, then copy the student version to the exchange (for ``nbgrader fetch`` / the Assignments tab)."""
    generate(course, assignment)
    Path(course.config().Exchange.root).mkdir(parents=True, exist_ok=True)
    succeed(api(course).release_assignment(assignment), "grading.release_failed", assignment=assignment)
