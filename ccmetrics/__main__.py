"""``python -m ccmetrics``: the command line (see :mod:`ccmetrics.cli`)."""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
