"""Run ``python -m stats agreement FILE.csv ...`` (see :mod:`stats.cli`)."""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
