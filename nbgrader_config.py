"""nbgrader configuration for this repository (learners, instructors and tests share it)."""
from pathlib import Path

c = get_config()  # noqa: F821 (provided by nbgrader)
ROOT = Path(__file__).resolve().parent

c.CourseDirectory.course_id = "ai-hardware"
c.CourseDirectory.root = str(ROOT)
c.CourseDirectory.source_directory = "solutions"
c.CourseDirectory.release_directory = "exercises"
c.CourseDirectory.db_url = f"sqlite:///{ROOT / '.nbgrader' / 'gradebook.db'}"

c.ClearSolutions.code_stub = {"python": "# 여기에 코드를 작성하세요 / YOUR CODE HERE\nraise NotImplementedError()"}
c.ClearSolutions.text_stub = "여기에 답을 쓰세요 / YOUR ANSWER HERE"
# Measurement cells warm up libraries and devices: the default 30 s per cell is too short.
c.Execute.timeout = 300
