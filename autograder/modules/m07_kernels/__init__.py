"""Module 07, writing kernels: threads, blocks and grids, guards, shared memory and barriers, coalescing, atomics,
reductions and prefix sums, tiled matrix multiply, occupancy, and the same tiles in Triton.

- ``device.py``: where kernels run (an NVIDIA GPU, or Numba's CUDA simulator and Triton's interpreter on a CPU),
  decided before ``numba.cuda`` and ``triton`` are imported.
- ``traffic.py``: the memory-traffic counter: global reads and writes per launch, sectors per warp request,
  races on shared and global memory, out-of-bounds accesses; loads and stores of a Triton kernel.
- ``clock.py``: the simulator as an asynchronous GPU on a virtual clock, where timing code gives an exact number
  and a wrong one tells what it counted and timed (task 9 without a GPU).
- ``tasks.py``: the graded tasks of exercise 07 (nine kernels, one of them timed: side by side with the course's
  copy kernel on a GPU, on the virtual clock on the simulator).
- ``lesson.py``: occupancy, the tile explorer and the lesson's figures. ``data/occupancy.yaml``: per-SM limits.
- ``data/quizzes.yaml``: the lesson's quizzes (``lesson.quiz("m07.<name>")``), answers and explanations.
"""
