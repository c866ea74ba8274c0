"""Module 04, training memory: where a training step's memory goes (weights, gradients, optimizer states,
activations) and four ways to need less (mixed precision, checkpointing, accumulation, sharding).

- ``tasks.py``: the graded tasks of exercise 04 (and the planted accumulation bugs of task 6).
- ``lesson.py``: the lesson's helpers (a tiny language model, peak-memory probes per backend, the
  techniques measured side by side, the decision diagram, bytes per recipe, the activation estimate,
  the calculator and figures).
- ``data.py`` + ``data/``: the memory table (bytes per parameter, ZeRO stages, activation estimate,
  planning rule), the tolerance of a mixed-precision step (``amp.yaml``), recorded loss-scale logs
  (``scaler_logs.yaml``) and the DeepSpeed configuration notes, with sources.
- ``data/quizzes.yaml``: the lesson's quizzes (``lesson.quiz("m04.<name>")``), answers and explanations.
"""
