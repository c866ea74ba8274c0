"""Module 03, the memory hierarchy and the roofline: arithmetic intensity, ridge points, what decoding an LLM
reads per token, on-chip capacity, and measured copy bandwidth and working-set sweeps.

- ``tasks.py``: the graded tasks of exercise 03.
- ``analysis.py``: how a measured sweep (plateaus, knee) and a plotted roofline are read.
- ``measure.py``: the reference read-bandwidth sweep the referee takes beside the learner's.
- ``lesson.py``: the lesson's helpers. ``data/models.yaml``: transformer shapes, with sources.
"""
