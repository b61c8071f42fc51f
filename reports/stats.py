"""Keep ``python -m reports.stats ...`` (the command older notes and scripts use) working.

The statistics live in the pure package :mod:`stats`; this module only forwards the command line.
"""

import sys

from stats.cli import main

if __name__ == "__main__":
    sys.exit(main())
