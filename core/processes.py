"""Child processes that do not outlive the command that started them."""

from __future__ import annotations

import signal
import sys


def die_with_parent() -> None:
    """In a child (before exec): get SIGTERM if the parent dies, even by SIGKILL (Linux only)."""
    if sys.platform.startswith("linux"):
        import ctypes

        PR_SET_PDEATHSIG = 1
        try:
            ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
        except OSError:
            pass
