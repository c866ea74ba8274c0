"""``python3 -m autograder``: see :mod:`autograder.bootstrap`."""
import sys

from .bootstrap import main

if __name__ == "__main__":  # not when multiprocessing re-imports it in a worker
    sys.exit(main(sys.argv[1:]))
