"""Module 05 (networking): link units (GB vs GiB, bits vs bytes, per direction vs both), PCIe, NVLink
and network ports, the node and the SuperPod's leaf/spine levels, collectives and the ring algorithm,
the α-β cost model, algorithm vs bus bandwidth and nccl-tests logs, all-reduce measured on real ranks,
and the scaling rooflines of data, fully sharded and tensor parallelism.

- ``tasks.py``: the graded tasks (visible cases, how the learner is called, scoring and the known mistakes
  it names) and the programs the ring and measurement tasks run on gloo ranks.
- ``tables.py`` + ``data/*.yaml``: the sourced tables (links, nodes, superpods, collectives, published
  nccl-tests logs).
- ``logs.py``: logs in nccl-tests' format written from the α-β model (the exercise's modelled logs).
- ``lesson.py``: the lesson's tables, figures and widgets, the α-β fit and the ring's chunk states.
- ``data/quizzes.yaml``: the lesson's quizzes (``lesson.quiz("m05.<name>")``), answers and explanations.
- ``messages.yaml``; ``expected.json`` (generated).

The rank runner and the all-reduce measurement are the core's (:mod:`autograder.ranks`); the fake
``torch.distributed`` of the measurement task is :mod:`autograder.fakes.dist` (with a first-call setup
cost added in ``tasks.FirstCallDist``).
"""
