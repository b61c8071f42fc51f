"""Run ``python -m reports.stats agreement FILE.csv ...`` (see :mod:`reports.stats.cli`)."""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
