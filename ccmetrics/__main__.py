"""``python -m ccmetrics``: the command line (see :mod:`ccmetrics.cli`)."""

from .cli import run

if __name__ == "__main__":
    run()
