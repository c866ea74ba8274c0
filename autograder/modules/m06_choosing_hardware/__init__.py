"""Module 06 (choosing hardware): what a training run costs (6·N·D, MFU, dated cloud prices), checking commonly
quoted figures, sizing inference (weights + KV cache, the batch against the time per token), monitoring
(nvidia-smi logs, NVML with a PyTorch fallback), the MFU of a measured step, and the report card.

- ``tasks.py``: the graded tasks (visible cases, how the learner is called, scoring, known mistakes named).
- ``lesson.py``: the lesson's figures, tables and widgets; the claims table (``data/claims.yaml`` checked against
  the data); the lesson's sample nvidia-smi log and the plot of a log; the MLP training step (frozen layers optional)
  and the peak its MFU is taken against (the step task uses them too).
- ``prices.py`` + ``data/prices.yaml``: the dated, sourced price table joined with the device profiles.
- ``report.py``: the capstone report card (gathered results, roofline figure, bilingual HTML page,
  a gloo all-reduce measurement).
- ``data/quizzes.yaml``: the lesson's quizzes (``lesson.quiz("m06.<name>")``), answers and explanations.
- ``data/nvidia_smi_log.csv``: the lesson's sample log; ``data/gpu_log_[a-e].csv``: the visible logs of the
  smi task (also shipped with the exercise); ``messages.yaml``; ``expected.json`` (generated).
"""
