"""nbgrader for an instructor of the class hub: the course's own configuration, from their clone.

The hub sets COURSE_ROOT to the instructor's clone of the course (~/course): its nbgrader_config.py
gives the folders (solutions/, exercises/, the gradebook in .nbgrader/) and takes the exchange and the
course id from COURSE_EXCHANGE and COURSE_ID, so the Formgrader and the course's commands
(`python -m autograder instructor ...`, run in that folder) see the same course.
"""
import os

c = get_config()  # noqa: F821 (provided by nbgrader)
course = os.environ.get("COURSE_ROOT", "")
if course and os.path.isfile(os.path.join(course, "nbgrader_config.py")):
    load_subconfig("nbgrader_config.py", path=course)  # noqa: F821 (provided by traitlets)
