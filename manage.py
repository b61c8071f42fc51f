#!/usr/bin/env python
"""Django's command-line utility for administrative tasks."""

import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "evalsite.settings.base")
    # One line with the cause instead of a traceback when a service does not answer (core.cli).
    from core.cli import main as run

    sys.exit(run(sys.argv))


if __name__ == "__main__":
    main()
