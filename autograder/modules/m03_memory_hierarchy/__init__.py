"""Module 03, the memory hierarchy and the roofline: arithmetic intensity, ridge points, what decoding an LLM
reads per token, capacity in binary units, fusion counted in bytes, and measured copy bandwidth and working-set sweeps.

- ``tasks.py``: the graded tasks of exercise 03.
- ``simulated.py``: the simulated GPU (deterministic clock) on which task 5 debugs a bandwidth measurement.
- ``analysis.py``: how a measured sweep is read (plateaus, knee).
- ``measure.py``: the course's read-bandwidth measurement: the lesson's sweep, and the reference the referee takes
  beside the learner's sweep (task 6 counts the calls made to it from the learner's function).
- ``lesson.py``: the lesson's helpers. ``data/models.yaml``: transformer shapes (with sliding-window layers);
  ``data/datasheets.yaml``: datasheet rows as vendors print them; both with sources.
- ``data/quizzes.yaml``: the lesson's quizzes (``lesson.quiz("m03.<name>")``), answers and explanations.
"""
