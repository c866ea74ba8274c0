"""Module 01, devices: CPUs, GPUs, Apple Silicon and TPUs; how code finds a device, what it has, how to time it
honestly, and where fine-tuning a model fits.

- ``tasks.py``: the graded tasks of exercise 01 (fakes of torch and MLX in ``autograder/fakes/devices.py``).
- ``lesson.py``: the small MLP training step the lesson and the speed-up task time, and the lesson's figures,
  tables and widgets (throughput, memory per recipe, the fit explorer, CUDA/NVML/CPU summaries).
"""
