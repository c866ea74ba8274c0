"""The tampering and broken-submission corpus (tests/grading_corpus/cases.yaml), graded as one class in parallel."""
import socket

import pytest
from nbgrader.api import Gradebook

from autograder.grading import export, sandbox
from autograder.grading.batch import grade_class
from autograder.grading.worker import Limits
from fixtures.grading_course import ASSIGNMENT, build, corpus, demo_course

CASES = corpus()
ISOLATED = sandbox.available()


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """Every case as one student; one parallel batch; the export rows by student."""
    course = demo_course(tmp_path_factory.mktemp("corpus"))
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    for name, case in CASES.items():
        build(course, name, case, port=server.getsockname()[1])
    limits = Limits(cell_s=5, notebook_s=25, memory_bytes=1 * 2**30)
    outcomes = grade_class(course, ASSIGNMENT, workers=2, limits=limits, isolate=ISOLATED)
    server.close()
    return course, outcomes, {row["student_id"]: row for row in export.rows(course, [ASSIGNMENT])}


@pytest.mark.parametrize("name", sorted(CASES))
def test_case_gets_its_score(graded, name):
    case = CASES[name]
    if case.get("isolation") and not ISOLATED:
        pytest.skip("bubblewrap is not usable here: isolation cases need it (apt-get install bubblewrap)")
    row = graded[2][name]
    assert row["score"] == pytest.approx(case["score"]), (case["about"], row)
    if "reason" in case:
        assert case["reason"] in row["reason"], row


def test_nothing_is_lost(graded):
    """Every submission has exactly one row with a status, and the gradebook agrees with the outcomes."""
    course, outcomes, rows = graded
    assert sorted(rows) == sorted(CASES) == [o.student for o in outcomes]
    assert all(row["status"] not in ("not graded", "missing") for row in rows.values())
    with Gradebook(course.gradebook_url, course.course_id) as gb:
        assert {s.student.id for s in gb.find_assignment(ASSIGNMENT).submissions} == set(CASES)


@pytest.mark.skipif(not ISOLATED, reason="bubblewrap is not usable here (apt-get install bubblewrap)")
def test_submission_cannot_touch_the_course(graded):
    course = graded[0]
    assert not (course.root / "pwned.txt").exists()
    with Gradebook(course.gradebook_url, course.course_id) as gb:
        submissions = gb.find_assignment(ASSIGNMENT).submissions
        assert all(g.manual_score is None for s in submissions for nb in s.notebooks for g in nb.grades)
