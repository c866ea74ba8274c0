"""The suite's language is the same on every machine: no remembered choice (a config folder of its own) and no
locale that names a language, so messages are in both languages unless a test chooses one
(:mod:`autograder.language`)."""
import os
import tempfile


def pytest_configure(config):
    os.environ["XDG_CONFIG_HOME"] = tempfile.mkdtemp(prefix="course-config-")
    for key in ("LANGUAGE", "LC_MESSAGES"):
        os.environ.pop(key, None)
    for key in ("LC_ALL", "LANG"):
        if os.environ.get(key, "C").split(".")[0].upper() not in ("C", "POSIX"):
            os.environ[key] = "C.UTF-8"


def pytest_runtest_teardown(item):
    """No test leaves a remembered choice for the next (a notebook run in a test remembers its page's language)."""
    from pathlib import Path
    remembered = Path(os.environ["XDG_CONFIG_HOME"]) / "ai-hardware-course" / "language"
    if remembered.exists():
        remembered.unlink()
        from autograder import language
        language.remembered.cache_clear()
