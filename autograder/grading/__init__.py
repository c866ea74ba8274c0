"""The instructor's grading pipeline over nbgrader 0.9.

| module | one job |
|---|---|
| ``course`` | where a course lives; its nbgrader configuration |
| ``generate`` | student versions from ``solutions/`` (and release to the exchange) |
| ``collect`` | submissions from a folder (zips, folders, notebooks) or the exchange |
| ``intake`` | repair or reject one submitted notebook before nbgrader reads it |
| ``sandbox`` | the bubblewrap command line that isolates a submission's kernel |
| ``kernel`` | a Jupyter kernel manager that starts the kernel inside the sandbox |
| ``watchdog`` | memory and wall-time limits on the kernel's processes; ``Frozen``: all of them stopped while the grader takes a reference |
| ``records`` | re-scores a test cell from its answer records, outside the learner's kernel |
| ``referee`` | the grader's side of measurement checks and simulated devices, over a Unix socket |
| ``seeds`` | an assignment's seed (hidden cases) and device secret, kept with the gradebook |
| ``preprocessors`` | the nbgrader preprocessors that use the four above |
| ``scratch`` | a private course directory and gradebook per submission |
| ``worker`` | grades one submission in its scratch course |
| ``merge`` | the single writer: scratch results into the real gradebook |
| ``batch`` | grades a class in parallel, with a progress bar and a summary |
| ``feedback``, ``export`` | HTML feedback per student; the CSV of grades with reasons |
| ``submit`` | the learner's side: package an exercise for the instructor |
| ``app`` | the ``instructor`` and ``submit`` subcommands |
"""
