"""nbgrader for every user of the class hub (deploy/jupyterhub/): the shared exchange and the course id.

An instructor's server runs in their clone of the course, whose own nbgrader_config.py (read after
this one) sets the course folders; it takes the exchange and the course id from the same variables.
"""
import os

c = get_config()  # noqa: F821 (provided by nbgrader)
c.CourseDirectory.course_id = os.environ.get("COURSE_ID", "ai-hardware")
c.Exchange.root = os.environ.get("COURSE_EXCHANGE", "/srv/nbgrader/exchange")
c.Exchange.path_includes_course = True
