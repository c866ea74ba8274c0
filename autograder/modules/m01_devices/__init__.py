"""Module 01, devices: CPUs, GPUs, Apple Silicon and TPUs; how code finds a device, what it has, how to time it
honestly, and where fine-tuning a model fits.

- ``tasks.py``: the graded tasks of exercise 01 and the timers with planted bugs that its audit task grades on.
- ``virtual.py``: ``VirtualGPU``, an asynchronous device on a virtual clock (exact timings on any machine, under
  any load), used by the lesson and the timer tasks.
- ``machines.py``: torch and MLX as other machines answer (a T4, a ROCm node, a Mac; an MLX that computes lazily or
  fails when it evaluates), on top of the core fakes in ``autograder/fakes/devices.py``.
- ``lesson.py``: the small MLP training step the lesson and the speed-up task time (with the CPU threads that
  task times it on), and the lesson's figures, tables and widgets (throughput, memory per recipe, the fit
  explorer, CUDA/NVML/CPU summaries).
- ``data/quizzes.yaml``: the lesson's quizzes (``lesson.quiz("m01.<name>")``), answers and explanations.
"""
