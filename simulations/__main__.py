"""``python -m simulations``: the command line (see :mod:`simulations.cli`)."""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
