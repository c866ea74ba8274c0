"""Module 02, inside a GPU: SMs and Tensor Cores from the parts and from spec sheets (and their traps), number formats
bit by bit, rounding to nearest even, what rounding does to a matmul, measured matmul throughput against the dense
peak, and N:M structured sparsity.

- ``tasks.py``: the graded tasks of exercise 02.
- ``lesson.py``: number formats (``FORMATS``, simulation of a format in fp32), the lesson's tables, figures and measurements.
- ``data/formats.yaml``, ``data/generations.yaml``: the formats and the GPU generations, with sources.
- ``data/spec_sheets.yaml``: spec-sheet figures as vendors print them (exercise task 2).
- ``data/measured_matmul.yaml``: public measurements of how close chips get to their dense matmul peak.
- ``data/quizzes.yaml``: the lesson's quizzes (``lesson.quiz("m02.<name>")``), answers and explanations.
"""
