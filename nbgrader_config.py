"""nbgrader configuration for this repository (learners, instructors and tests share it).

Plain ``nbgrader`` commands run from the repository root read this file; the
course's own commands (``python -m autograder instructor ...``) load it too and
add the isolated, parallel grading on top (see docs/instructor.md).
"""
import os
from pathlib import Path

c = get_config()  # noqa: F821 (provided by nbgrader)
ROOT = Path(__file__).resolve().parent

# A class server (deploy/jupyterhub/) sets COURSE_ID and COURSE_EXCHANGE for every user.
c.CourseDirectory.course_id = os.environ.get("COURSE_ID", "ai-hardware")
c.CourseDirectory.root = str(ROOT)
c.CourseDirectory.source_directory = "solutions"
c.CourseDirectory.release_directory = "exercises"
# The gradebook: SQLite in the repository (one grading machine), or any SQLAlchemy URL,
# e.g. postgresql://grader@db/course for a class graded by several machines.
c.CourseDirectory.db_url = os.environ.get("COURSE_GRADEBOOK_URL", f"sqlite:///{ROOT / '.nbgrader' / 'gradebook.db'}")

# The class's time zone, set once: due dates, submission times, the export, feedback and collect's lines are shown in
# it, and a time written without a zone (--due, --received-at) is read in it (an IANA name; COURSE_TIMEZONE overrides).
c.Course.timezone = os.environ.get("COURSE_TIMEZONE", "Asia/Seoul")
c.NbGraderAPI.timezone = c.Course.timezone  # the formgrader's times

# The exchange (release/fetch/submit without JupyterHub): a folder the user owns;
# nbgrader's default /srv/nbgrader/exchange needs root rights.
c.Exchange.root = os.environ.get("COURSE_EXCHANGE", str(ROOT / ".exchange"))
c.Exchange.path_includes_course = True
# What this learner submitted, as the Assignments list shows it: one record per clone of the course (nbgrader keeps
# one per user by default, so two clones on one machine listed each other's submissions). A class server sets
# COURSE_EXCHANGE and keeps nbgrader's per-user record.
if "COURSE_EXCHANGE" not in os.environ:
    c.Exchange.cache = str(ROOT / ".nbgrader" / "exchange-cache")

c.ClearSolutions.code_stub = {"python": "# 여기에 코드를 작성하세요 / YOUR CODE HERE\nraise NotImplementedError()"}
c.ClearSolutions.text_stub = "여기에 답을 쓰세요 / YOUR ANSWER HERE"
# Measurement cells warm up libraries and devices: the default 30 s per cell is too short.
c.Execute.timeout = 300

# nbgrader zeroes a test cell that writes to stderr. These messages come from libraries,
# not from the learner's answer, and say nothing about it: drop them before grading.
c.IgnorePattern.enabled = True
c.IgnorePattern.pattern = "|".join([
    r"Matplotlib is building the font cache",  # first import of matplotlib on a machine
    r"Matplotlib created a temporary cache directory",  # read-only home (grading sandbox)
    r"huggingface/tokenizers: The current process just got forked",  # fork after tokenizers ran
])

# Feedback shows the messages of hidden tests but not their code.
c.GenerateFeedback.preprocessors = [
    "nbgrader.preprocessors.GetGrades",
    "nbgrader.preprocessors.ClearHiddenTests",
    "nbconvert.preprocessors.CSSHTMLHeaderPreprocessor",
]

# First open of a fresh clone: the gradebook's folder and the exchange must exist, or the Formgrader
# answers 500 and the Assignments list errors (autograder/grading/firstopen.py).
try:
    from autograder.grading.firstopen import prepare
except ImportError:  # nbgrader from another environment, without the course installed
    pass
else:
    prepare(c.CourseDirectory.db_url, c.Exchange.root)
