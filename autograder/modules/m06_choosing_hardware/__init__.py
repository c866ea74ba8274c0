"""Module 06 (choosing hardware): what a training run costs (6·N·D, MFU, dated cloud prices), checking
published claims, sizing inference (weights + KV cache, bandwidth-bound tokens/s), monitoring
(nvidia-smi logs, NVML with a PyTorch fallback), the MFU of a measured step, and the report card.

- ``tasks.py``: the graded tasks (visible cases, how the learner is called, scoring).
- ``lesson.py``: the lesson's figures, tables and widgets; the sample nvidia-smi log and its generator;
  the MLP training step and the peak its MFU is taken against (the MFU task uses them too).
- ``prices.py`` + ``data/prices.yaml``: the dated, sourced price table joined with the device profiles.
- ``report.py``: the capstone report card (gathered results, roofline figure, bilingual HTML page,
  a gloo all-reduce measurement).
- ``data/nvidia_smi_log.csv``: the sample log (also shipped with the exercise); ``messages.yaml``;
  ``expected.json`` (generated).
"""
