"""JupyterHub for one class on one Linux machine (see README.md here and docs/instructor.md, "Run a class").

- JupyterHub with configurable-http-proxy (npm), users are the machine's local accounts (PAM login,
  LocalProcessSpawner: each user's JupyterLab runs as that account, in its home folder).
- One course environment for everybody (COURSE_ENV, made once by setup.sh): every user's server is
  its ``jupyterhub-singleuser``.
- nbgrader's multi-user exchange (COURSE_EXCHANGE, world-writable, sticky) and one course id (COURSE_ID).
- Members of COURSE_INSTRUCTOR_GROUP are instructors: their server opens in their clone of the course
  (~/COURSE_DIR, whose nbgrader_config.py then applies) with the Formgrader; members of
  COURSE_STUDENT_GROUP get the Assignments list and Validate, without the Formgrader or the course list.

Every setting below can be changed with an environment variable of the same name when the hub starts
(setup.sh writes them to /etc/default/course-hub for the systemd unit); tests/test_class_hub.py
loads this file unchanged and only moves ports and folders into a temporary directory.
"""
import grp
import os
import pwd
from pathlib import Path

c = get_config()  # noqa: F821 (provided by JupyterHub)
HERE = Path(__file__).resolve().parent

COURSE_ENV = Path(os.environ.get("COURSE_ENV", "/opt/ai-hardware-course/.venv"))
COURSE_ID = os.environ.get("COURSE_ID", "ai-hardware")
COURSE_EXCHANGE = os.environ.get("COURSE_EXCHANGE", "/srv/nbgrader/exchange")
COURSE_DIR = os.environ.get("COURSE_DIR", "course")  # the instructor's clone, relative to their home
INSTRUCTORS = os.environ.get("COURSE_INSTRUCTOR_GROUP", "course-instructors")
STUDENTS = os.environ.get("COURSE_STUDENT_GROUP", "course-students")
STATE = Path(os.environ.get("COURSE_HUB_DIR", "/srv/jupyterhub"))

c.JupyterHub.bind_url = os.environ.get("COURSE_HUB_URL", "http://:8000")
c.JupyterHub.db_url = f"sqlite:///{STATE / 'jupyterhub.sqlite'}"
c.JupyterHub.cookie_secret_file = str(STATE / "jupyterhub_cookie_secret")
c.ConfigurableHTTPProxy.pid_file = str(STATE / "jupyterhub-proxy.pid")
c.JupyterHub.cleanup_servers = True

# Local accounts: a password login (PAM) for members of the two groups; instructors are hub admins.
c.JupyterHub.authenticator_class = "pam"
c.Authenticator.allowed_groups = {INSTRUCTORS, STUDENTS}
c.PAMAuthenticator.admin_groups = {INSTRUCTORS}

# Each user's JupyterLab, as that account, from the shared course environment.
c.JupyterHub.spawner_class = "localprocess"
c.Spawner.cmd = [str(COURSE_ENV / "bin" / "jupyterhub-singleuser")]
c.Spawner.default_url = "/lab"
# JupyterLab in the class's language (COURSE_LANG: ko or en), without the news popup (the course's settings).
COURSE_LANG = os.environ.get("COURSE_LANG", "ko")
c.Spawner.args = [f"--LabApp.app_settings_dir={HERE.parent.parent / 'autograder' / 'data' / 'jupyter' / 'lab' / COURSE_LANG}"]
c.Spawner.start_timeout = 120
c.Spawner.http_timeout = 120
c.Spawner.mem_limit = os.environ.get("COURSE_MEM_LIMIT")  # shown to users; enforcing needs systemd or cgroups


def _members(group: str) -> set[str]:
    try:
        entry = grp.getgrnam(group)
    except KeyError:
        return set()
    return set(entry.gr_mem) | {p.pw_name for p in pwd.getpwall() if p.pw_gid == entry.gr_gid}


def role(name: str) -> str:
    return "instructor" if name in _members(INSTRUCTORS) else "student"


def pre_spawn_hook(spawner):
    """Per role: the Jupyter configuration folders (roles/), the server's folder, and the course's variables."""
    name = spawner.user.name
    kind = role(name)
    home = Path(pwd.getpwnam(name).pw_dir)
    spawner.environment.update({
        "COURSE_ID": COURSE_ID,
        "COURSE_EXCHANGE": COURSE_EXCHANGE,
        "COURSE_ROLE": kind,
        # Earlier folders win: the role's settings over the environment's (which enable every extension); the
        # course's own settings last (lessons are saved without outputs: autograder/lesson_save.py).
        "JUPYTER_CONFIG_PATH": os.pathsep.join([str(HERE / "roles" / kind), str(HERE / "roles" / "common"),
                                                str(HERE.parent.parent / "autograder" / "data" / "jupyter")]),
        "PATH": os.pathsep.join([str(COURSE_ENV / "bin"), "/usr/local/bin", "/usr/bin", "/bin"]),
        "MPLBACKEND": "Agg",
    })
    course = home / COURSE_DIR
    if kind == "instructor":
        spawner.environment["COURSE_ROOT"] = str(course)  # roles/instructor/nbgrader_config.py loads its config
    spawner.notebook_dir = str(course if kind == "instructor" and course.is_dir() else home)


c.Spawner.pre_spawn_hook = pre_spawn_hook
