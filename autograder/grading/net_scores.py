"""The formgrader shows the net score: the score after the late penalty, as the export and the feedback do.

nbgrader stores a late penalty on each submitted notebook (``late_submission_penalty``) but its formgrader
shows only the sum of the grades. :class:`NetScoresAPI` is nbgrader's API with every submission's, notebook's
and student's ``score``, and the averages per assignment and notebook, net of the penalty, computed on the current scores (manual ones included) by the
export's rule (:func:`deadlines.apply_penalties`), with ``raw_score`` and ``late_penalty`` beside it. The
Jupyter server extension here (enabled in the course's Jupyter settings) makes the formgrader build it. The
formgrader's pages have no place for the penalty or its reason: the export and the feedback show them.
"""
from __future__ import annotations

import warnings

from nbgrader.api import Assignment, SubmittedAssignment
from nbgrader.apps.api import NbGraderAPI

from .deadlines import apply_penalties, plugin


class NetScoresAPI(NbGraderAPI):
    """nbgrader's API; every ``score`` it returns is net of the late penalty (``raw_score``, ``late_penalty``)."""

    def get_submission(self, assignment_id, student_id, ungraded=None, students=None):
        found = super().get_submission(assignment_id, student_id, ungraded=ungraded, students=students)
        return found and self._net([found], self._penalties(assignment_id, student_id),
                                   lambda s: (s["name"], s["student"]))[0]

    def get_submissions(self, assignment_id):
        return self._net(super().get_submissions(assignment_id), self._penalties(assignment_id),
                         lambda s: (assignment_id, s["student"]))

    def get_student_notebook_submissions(self, student_id, assignment_id):
        return self._net(super().get_student_notebook_submissions(student_id, assignment_id),
                         self._penalties(assignment_id, student_id, notebooks=True),
                         lambda n: (assignment_id, student_id, n["name"]))

    def get_notebook_submissions(self, assignment_id, notebook_id):
        return self._net(super().get_notebook_submissions(assignment_id, notebook_id),
                         self._penalties(assignment_id, notebooks=True), lambda n: (assignment_id, n["student"], notebook_id))

    def get_assignment(self, assignment_id, released=None):
        found = super().get_assignment(assignment_id, released=released)
        if found and found.get("average_score"):
            with warnings.catch_warnings(), self.gradebook as gb:
                warnings.simplefilter("ignore")
                count = gb.find_assignment(assignment_id).num_submissions
            found["average_score"] = self._average(found["average_score"], self._penalties(assignment_id), count)
        return found

    def get_notebooks(self, assignment_id):
        notebooks = super().get_notebooks(assignment_id)
        penalties = self._penalties(assignment_id, notebooks=True)
        for nb in notebooks:
            mine = {k: v for k, v in penalties.items() if k[2] == nb["name"]}
            nb["average_score"] = self._average(nb["average_score"], mine, nb.get("num_submissions") or 0)
        return notebooks

    def get_student(self, student_id, submitted=None):
        found = super().get_student(student_id, submitted=submitted)
        return found and self._net([found], self._per_student(student_id), lambda s: s["id"])[0]

    def get_students(self):
        return self._net(super().get_students(), self._per_student(), lambda s: s["id"])

    def _per_student(self, student: str | None = None) -> dict[str, float]:
        """``{student: the penalties of all their late submissions}`` (of every student, or of ``student``)."""
        total: dict[str, float] = {}
        for (_, who), penalty in self._penalties(student=student).items():
            total[who] = total.get(who, 0.0) + penalty
        return total

    def _penalties(self, assignment: str | None = None, student: str | None = None, notebooks: bool = False) -> dict:
        """``{(assignment, student): penalty}`` (``notebooks``: ``{(assignment, student, notebook): penalty}``) of
        the late submissions (of ``assignment``, of ``student``, or all), recomputed on the current scores; the
        gradebook is left as it was."""
        out = {}
        late_plugin = plugin(None, self.config)
        with warnings.catch_warnings(), self.gradebook as gb:
            warnings.simplefilter("ignore")  # SQLAlchemy warnings inside nbgrader's API
            found = gb.db.query(SubmittedAssignment).join(Assignment, Assignment.id == SubmittedAssignment.assignment_id) \
                .filter(SubmittedAssignment.timestamp > Assignment.duedate)  # late, before any extension
            if assignment:
                found = found.filter(Assignment.name == assignment)
            if student:
                found = found.filter(SubmittedAssignment.student_id == student)
            for submission in found.all():
                if submission.total_seconds_late <= 0:
                    continue
                total = apply_penalties(None, submission, late_plugin)
                key = (submission.assignment.name, submission.student.id)
                if notebooks:
                    out.update({(*key, nb.name): nb.late_submission_penalty or 0.0 for nb in submission.notebooks})
                else:
                    out[key] = total
            gb.db.rollback()
        return out

    @staticmethod
    def _average(average: float, penalties: dict, count: int) -> float:
        """nbgrader's average over ``count`` submissions, less their penalties."""
        return max(0.0, average - sum(penalties.values()) / count) if count else average

    @staticmethod
    def _net(items: list[dict], penalties: dict, key) -> list[dict]:
        for item in items:
            penalty = penalties.get(key(item), 0.0) if item.get("autograded") is not False else 0.0
            item["raw_score"], item["late_penalty"] = item["score"], penalty
            item["score"] = max(0.0, item["score"] - penalty)
        return items


def _jupyter_server_extension_points():
    return [{"module": "autograder.grading.net_scores"}]


def _load_jupyter_server_extension(serverapp) -> None:
    """The formgrader's handlers build their API from ``formgrader.base.NbGraderAPI``: make it this one."""
    from nbgrader.server_extensions.formgrader import base
    base.NbGraderAPI = NetScoresAPI
    serverapp.log.info("autograder: the formgrader shows scores net of the late penalty")
