"""Student versions from ``solutions/`` (nbgrader generate_assignment), the expected answers of the
visible cases (``expected.json``), and release to the exchange."""
from __future__ import annotations

import json
from pathlib import Path

import nbformat

from .. import layout, modules
from ..lesson_save import with_kernel
from ..standalone import with_hand_in, with_setup
from ..checks import expected
from ..checks.core import canonical
from . import languages, seeds
from ..i18n import msg
from .course import Course, GradingError, api, succeed


def write_expected(module_id: str) -> Path | None:
    """Rewrite ``modules/<folder>/expected.json`` from the references when it changed beyond the float32 noise
    between CPUs (``expected.same``), so that generating on another machine leaves the tree clean (None: no such
    module)."""
    if modules.folder(module_id) is None:
        return None
    path = modules.path(module_id) / expected.FILE
    table = expected.table(module_id)
    if not path.exists() or not expected.same(json.loads(path.read_text(encoding="utf-8")), canonical(table)):
        path.write_text(expected.dump(table), encoding="utf-8")
    return path


def generate(course: Course, assignment: str, release_dir: Path | None = None) -> Path:
    """Write the student version of ``assignment`` and record its cells in the gradebook; beside each notebook
    its Korean and English files (``languages.for_learner``), each naming its kernel as the course names it
    (:func:`autograder.lesson_save.with_kernel`) and starting with the set-up cell of a notebook opened alone
    (:func:`autograder.standalone.with_setup`, both languages in the bilingual one) and ending with how to hand it in
    from a cell (:func:`autograder.standalone.with_hand_in`); refresh the ``expected.json`` of the module whose
    record names it (the visible checks of a learner's install read it).

    ``release_dir`` (default: the course's ``exercises/``) receives ``<assignment>/*.ipynb``;
    the tests pass a temporary folder to compare with the committed copy.
    """
    for module in layout.modules(part="package"):
        if module.id == assignment:
            write_expected(module.short)
    config = course.config()
    if release_dir is not None:
        config.CourseDirectory.release_directory = str(release_dir)
    succeed(api(course, config).generate_assignment(assignment, force=True, create=True),
            "grading.generate_failed", assignment=assignment)
    folder = Path(config.CourseDirectory.root, config.CourseDirectory.release_directory, assignment)
    for source in sorted(course.folder("source", assignment).glob("*.ipynb")):
        student = with_hand_in(with_setup(nbformat.read(str(folder / source.name), as_version=4), None), None)
        with_kernel(student.metadata)
        nbformat.write(student, str(folder / source.name))
        for lang in languages.LANGUAGES:
            nbformat.write(languages.for_learner(student, lang), str(folder / languages.file_name(source.stem, lang)))
    return folder


def release(course: Course, assignment: str, force: bool = False) -> None:
    """Generate (which creates the gradebook's tables on a new database), then copy the student version to the
    exchange (for ``nbgrader fetch`` / the Assignments tab); one already there is replaced only with ``force``. The
    assignment's seed is drawn now unless it has one (``seeds.of``)."""
    config = course.config()
    if not force and (Path(config.Exchange.root) / course.course_id / "outbound" / assignment).is_dir():
        raise GradingError(msg("grading.release_exists", assignment=assignment, exchange=config.Exchange.root).text())
    generate(course, assignment)
    seeds.of(course, assignment)
    Path(config.Exchange.root).mkdir(parents=True, exist_ok=True)
    config.ExchangeReleaseAssignment.force = force
    succeed(api(course, config).release_assignment(assignment), "grading.release_failed", assignment=assignment)
