"""``python3 -m autograder``: see :mod:`autograder.bootstrap`."""
import sys

from .bootstrap import main

sys.exit(main(sys.argv[1:]))
