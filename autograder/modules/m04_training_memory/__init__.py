"""Module 04, training memory: where a training step's memory goes (weights, gradients, optimizer states,
activations) and four ways to need less (mixed precision, checkpointing, accumulation, sharding).

- ``tasks.py``: the graded tasks of exercise 04.
- ``lesson.py``: the lesson's helpers (a tiny language model, peak-memory probes per backend, the
  techniques measured side by side, the decision diagram).
- ``data.py`` + ``data/``: the memory table (bytes per parameter, ZeRO stages, planning rule), the
  mixed-precision tolerances and the DeepSpeed configuration notes, with sources.
"""
