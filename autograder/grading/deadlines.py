"""Due dates, submission times and late penalties, all from the instructor's side.

- The due date is nbgrader's ``Assignment.duedate`` in the gradebook (naive UTC, as nbgrader keeps it),
  set by ``instructor deadline`` or ``instructor release --due``. Times are shown in the class's zone
  (``Course.zone``: ``c.Course.timezone``), and a time written without a zone is read in it.
- The submission time is the ``timestamp.txt`` that ``collect`` writes: the time the file was received
  (or the time the instructor gives), or the time the exchange folder was made. A time the submission
  states itself (``submission.json``) is kept only to be shown when it disagrees.
- The late penalty is nbgrader's: ``AssignLatePenalties.plugin_class`` (nbgrader's
  ``LateSubmissionPlugin``, ``penalty_method`` none or zero, or :class:`LatePenalty` below, points
  per started hour or day), read from the course's nbgrader configuration; ``instructor deadline
  --late ...`` writes it to ``nbgrader_config.json`` in the course root, which nbgrader's own
  commands read too. The penalty is stored on each submitted notebook
  (``late_submission_penalty``; the course's formgrader extension subtracts it) and recomputed on every merge and export,
  so a manual grade given later is penalised the same way.
"""
from __future__ import annotations

import json
import math
import re
import warnings
from datetime import datetime, timezone, tzinfo
from pathlib import Path

from nbgrader.api import Gradebook, MissingEntry
from nbgrader.plugins import LateSubmissionPlugin
from traitlets import Enum, Float
from traitlets.utils.importstring import import_item

from ..i18n import Message, both, msg
from .course import Course, GradingError

JSON_CONFIG = "nbgrader_config.json"
PLUGIN = "autograder.grading.deadlines.LatePenalty"


class LatePenalty(LateSubmissionPlugin):
    """``points`` off for each started ``per`` (hour or day) late, never below 0 (nbgrader clamps it)."""

    per = Enum(("hour", "day"), default_value="day", help="The unit of lateness.").tag(config=True)
    points = Float(0.0, help="Points off per started unit, for the whole assignment.").tag(config=True)
    share = Float(1.0, help="This notebook's share of the assignment's points (set by the grader).")

    def late_submission_penalty(self, student_id, score, total_seconds_late):
        if total_seconds_late <= 0:
            return None
        units = math.ceil(total_seconds_late / (3600 if self.per == "hour" else 86400))
        return round(units * self.points * self.share, 4)


# --- times -----------------------------------------------------------------------------------

def parse_time(text: str, key: str = "grading.bad_time", zone: tzinfo | None = None) -> datetime:
    """An aware datetime from ISO text (``2026-12-01T23:59+09:00``; no zone: ``zone``, the class's
    (:attr:`Course.zone`), else this machine's)."""
    try:
        moment = datetime.fromisoformat(text.strip().replace(" ", "T", 1) if " " in text.strip()[:11] else text.strip())
    except (ValueError, AttributeError):
        raise GradingError(msg(key, when=text).text()) from None
    if moment.tzinfo:
        return moment
    return moment.replace(tzinfo=zone) if zone is not None else moment.astimezone()


def to_utc_naive(moment: datetime) -> datetime:
    """nbgrader's form: naive UTC."""
    return moment.astimezone(timezone.utc).replace(tzinfo=None) if moment.tzinfo else moment


def show(moment: datetime | None, zone: tzinfo | None = None) -> str:
    """A naive-UTC (nbgrader) or aware time as ``2026-12-01T23:59:00+09:00`` in ``zone``, the class's
    (:attr:`Course.zone`; None: this machine's); '' for None."""
    if moment is None:
        return ""
    aware = moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)
    return aware.astimezone(zone).isoformat(timespec="seconds")


def duration(seconds: float) -> Message:
    """``2일 3시간 5분`` / ``2 d 3 h 5 min``."""
    minutes = int(math.ceil(seconds / 60))
    d, rest = divmod(minutes, 1440)
    h, m = divmod(rest, 60)
    ko = " ".join(f"{v}{u}" for v, u in ((d, "일"), (h, "시간"), (m, "분")) if v) or "0분"
    en = " ".join(f"{v} {u}" for v, u in ((d, "d"), (h, "h"), (m, "min")) if v) or "0 min"
    return both(ko, en)


# --- due dates -------------------------------------------------------------------------------

def set_due(course: Course, assignment: str, when: str | None) -> datetime | None:
    """Store ``assignment``'s due date (``None``/'none' removes it); returns it (naive UTC)."""
    due = None if when in (None, "", "none") else to_utc_naive(parse_time(when, "grading.bad_due", course.zone))
    ensure_assignment(course, assignment)
    with warnings.catch_warnings(), Gradebook(course.gradebook_url, course.course_id) as gb:
        warnings.simplefilter("ignore")
        record = gb.find_assignment(assignment)
        record.duedate = due
        gb.db.commit()
    return due


def due_dates(course: Course) -> dict[str, datetime | None]:
    """Every assignment of the gradebook and its due date (naive UTC)."""
    with warnings.catch_warnings(), Gradebook(course.gradebook_url, course.course_id) as gb:
        warnings.simplefilter("ignore")
        return {a.name: a.duedate for a in gb.assignments}


def ensure_assignment(course: Course, assignment: str) -> None:
    """Record ``assignment`` in the gradebook from its source if it is not there (exercises/ untouched)."""
    import tempfile
    from .course import use_venv_tools
    from .generate import generate
    use_venv_tools()
    with warnings.catch_warnings(), Gradebook(course.gradebook_url, course.course_id) as gb:
        warnings.simplefilter("ignore")
        try:
            gb.find_assignment(assignment)
            return
        except MissingEntry:
            pass
    if not course.folder("source", assignment).is_dir():
        raise GradingError(msg("grading.unknown_assignment", assignment=assignment).text())
    with tempfile.TemporaryDirectory() as release:
        generate(course, assignment, release_dir=Path(release))


# --- the late policy -------------------------------------------------------------------------

def set_policy(course: Course, policy: str) -> Message:
    """``none``, ``zero``, ``per-hour=P`` or ``per-day=P`` into the course root's ``nbgrader_config.json``."""
    found = re.fullmatch(r"\s*(none|zero|per-(hour|day)\s*[=:]\s*([0-9]*\.?[0-9]+))\s*", policy or "")
    if not found:
        raise GradingError(msg("grading.bad_late_policy", policy=policy).text())
    path = course.root / JSON_CONFIG
    data = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    for section in ("LatePenalty", "LateSubmissionPlugin"):
        data.pop(section, None)
    data.get("AssignLatePenalties", {}).pop("plugin_class", None)
    if not data.get("AssignLatePenalties"):
        data.pop("AssignLatePenalties", None)
    if found.group(2):
        data.setdefault("AssignLatePenalties", {})["plugin_class"] = PLUGIN
        data["LatePenalty"] = {"per": found.group(2), "points": float(found.group(3))}
    else:
        data["LateSubmissionPlugin"] = {"penalty_method": found.group(1)}
    path.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    return describe_policy(course)


def plugin(course: Course, config=None) -> LateSubmissionPlugin:
    """The configured late-submission plugin (nbgrader's by default)."""
    config = config or course.config()
    cls = config.AssignLatePenalties.get("plugin_class", LateSubmissionPlugin)
    cls = import_item(cls) if isinstance(cls, str) else cls
    return cls(config=config)


def describe_policy(course: Course) -> Message:
    p = plugin(course)
    if isinstance(p, LatePenalty):
        return msg(f"grading.policy_per_{p.per}", points=f"{p.points:g}")
    return msg("grading.policy_zero") if p.penalty_method == "zero" else msg("grading.policy_none")


def apply_penalties(course: Course, submission, late_plugin: LateSubmissionPlugin | None = None) -> float:
    """Set each notebook's ``late_submission_penalty`` of ``submission`` (a gradebook SubmittedAssignment)
    as nbgrader's AssignLatePenalties does, with the current scores (manual ones included); the total."""
    late_plugin = late_plugin or plugin(course)
    late = submission.total_seconds_late
    total_max = sum(nb.max_score for nb in submission.notebooks) or 1.0
    total = 0.0
    for nb in submission.notebooks:
        penalty = None
        if late > 0:
            if isinstance(late_plugin, LatePenalty):
                late_plugin.share = nb.max_score / total_max
            penalty = late_plugin.late_submission_penalty(submission.student.id, nb.score, late)
            if penalty is not None:
                penalty = min(max(0.0, penalty), nb.score)
        nb.late_submission_penalty = penalty
        total += penalty or 0.0
    return total


def time_note(record: dict, zone: tzinfo | None = None) -> Message | None:
    """The disagreement ``collect`` saw between the submission's own time and the received time, if any
    (times in ``zone``, the class's)."""
    received = record.get("received") or {}
    if received.get("claimed") and received.get("disagrees"):
        key = "grading.exchange_time_differs" if received.get("via") == "exchange" else "grading.received_differs"
        return msg(key, claimed=show(datetime.fromisoformat(received["claimed"]), zone),
                   received=show(datetime.fromisoformat(received["at"]), zone))
    return None
