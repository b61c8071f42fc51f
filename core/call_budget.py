"""How long one LLM call may take and how long it keeps trying: the timeout and the retry budget.

Chatbots, judges and a batch's user-agent each carry their own (``timeout_seconds``,
``retry_attempts``, ``retry_base_delay``, ``retry_max_delay``); this module holds the defaults,
the limits a stored value must respect and what a budget rides out, for every layer (no Django).

The wait after failed attempt *n* is drawn between half and all of
``min(max_delay, base_delay * 2 ** (n - 1))`` ("equal jitter": spread out, never near zero), and
never shorter than the provider's Retry-After. So the default, 8 attempts from 2 s up to 30 s,
waits at least 60 s in all (at most 120 s) before giving up: it rides out a provider outage of
about a minute, longer when the provider's Retry-After asks for it.
"""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_ATTEMPTS = 8
DEFAULT_BASE_DELAY = 2.0
DEFAULT_MAX_DELAY = 30.0

MAX_ATTEMPTS = 20
MAX_BASE_DELAY = 60.0
MAX_MAX_DELAY = 600.0
MIN_TIMEOUT = 1.0
MAX_TIMEOUT = 3600.0

FIELDS = ("timeout_seconds", "retry_attempts", "retry_base_delay", "retry_max_delay")
HELP = {
    "timeout_seconds": f"Seconds one attempt may wait for an answer ({MIN_TIMEOUT:g} to {MAX_TIMEOUT:g})",
    "retry_attempts": (
        f"Attempts per call before it fails (1 to {MAX_ATTEMPTS}): rate limits, server errors, timeouts, "
        "dropped connections and empty replies are tried again"
    ),
    "retry_base_delay": f"Seconds waited after the first failed attempt, doubling after each (0 to {MAX_BASE_DELAY:g})",
    "retry_max_delay": (
        f"The longest wait between two attempts ({MAX_MAX_DELAY:g} at most); a provider's Retry-After is "
        "honoured up to twice this"
    ),
}


def ceiling(attempt: int, base_delay: float, max_delay: float) -> float:
    """Return the longest wait after failed attempt number ``attempt`` (1-based)."""
    return min(max_delay, base_delay * 2 ** (attempt - 1))


@dataclass(frozen=True)
class RideOut:
    """The total wait between the first and the last attempt of a budget, at least and at most."""

    least: float
    most: float

    def __str__(self) -> str:
        return f"{_seconds(self.least)} to {_seconds(self.most)}"


def rides_out(attempts: int, base_delay: float, max_delay: float) -> RideOut:
    """Return how long an outage a budget waits through before the call fails (jitter aside)."""
    ceilings = [ceiling(n, base_delay, max_delay) for n in range(1, attempts)]
    return RideOut(sum(c / 2 for c in ceilings), sum(ceilings))


def _seconds(value: float) -> str:
    return f"{value:.0f} s" if value >= 10 else f"{value:.1f} s"


def budget_problems(
    *,
    timeout_seconds: float | None = None,
    retry_attempts: int | None = None,
    retry_base_delay: float | None = None,
    retry_max_delay: float | None = None,
    prefix: str = "",
) -> dict[str, list[str]]:
    """Return what is wrong with a timeout and retry budget, by field (``prefix`` + the names above)."""
    problems: dict[str, list[str]] = {}

    def bad(name: str, message: str) -> None:
        problems.setdefault(prefix + name, []).append(message)

    if timeout_seconds is not None and not MIN_TIMEOUT <= timeout_seconds <= MAX_TIMEOUT:
        bad("timeout_seconds", f"the timeout must be between {MIN_TIMEOUT:g} and {MAX_TIMEOUT:g} seconds")
    if retry_attempts is not None and not 1 <= retry_attempts <= MAX_ATTEMPTS:
        bad("retry_attempts", f"attempts must be between 1 and {MAX_ATTEMPTS}")
    if retry_base_delay is not None and not 0 <= retry_base_delay <= MAX_BASE_DELAY:
        bad("retry_base_delay", f"the first wait must be between 0 and {MAX_BASE_DELAY:g} seconds")
    if retry_max_delay is not None and not 0 <= retry_max_delay <= MAX_MAX_DELAY:
        bad("retry_max_delay", f"the longest wait must be between 0 and {MAX_MAX_DELAY:g} seconds")
    elif retry_max_delay is not None and retry_base_delay is not None and retry_max_delay < retry_base_delay:
        bad("retry_max_delay", "the longest wait may not be shorter than the first")
    return problems
