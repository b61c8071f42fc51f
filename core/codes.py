"""Pseudonymous codes (conversations, chatbots, batches): short, random, easy to read aloud."""

from __future__ import annotations

import secrets

CODE_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"  # no 0/O, 1/I: codes are read aloud


def new_code(prefix: str, length: int = 6) -> str:
    """Return ``prefix`` followed by ``length`` random characters of the code alphabet."""
    return prefix + "".join(secrets.choice(CODE_ALPHABET) for _ in range(length))
