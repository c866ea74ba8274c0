"""Module 02, inside a GPU: SMs and Tensor Cores from the spec sheet, number formats bit by bit, what rounding
does to a matmul, measured matmul throughput against the dense peak, and 2:4 sparsity.

- ``tasks.py``: the graded tasks of exercise 02.
- ``lesson.py``: number formats (``FORMATS``, simulation of a format in fp32) and the lesson's tables.
- ``data/formats.yaml``, ``data/generations.yaml``: the formats and the GPU generations, with sources.
"""
