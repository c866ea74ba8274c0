"""Module 08 checks: the reference solution gets full marks."""
from autograder.checks import check
from course_answers.m08_serving import twice


def test_the_reference_gets_full_marks():
    assert check("m08.first", twice, points=1, hidden=True) is None
