"""Module 03, the memory hierarchy and the roofline: arithmetic intensity, ridge points, what decoding an LLM
reads per token, capacity in binary units, fusion counted in bytes, and measured copy bandwidth and working-set sweeps.

- ``tasks.py``: the graded tasks of exercise 03.
- ``simulated.py``: the simulated GPU (deterministic clock) on which task 5 debugs a bandwidth measurement.
- ``analysis.py``: how a measured sweep is read (plateaus, knee).
- ``measure.py``: the reference read-bandwidth sweep the referee takes beside the learner's.
- ``lesson.py``: the lesson's helpers. ``data/models.yaml``: transformer shapes; ``data/datasheets.yaml``: datasheet
  rows as vendors print them; both with sources.
"""
