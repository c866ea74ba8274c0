"""Module 08, Serving a model: prefill and decode, the KV cache, batching, quantization and speculative decoding.

- ``tasks.py``: the graded tasks of exercise 08.
- ``lesson.py``: the lesson's helpers.
"""
