"""Precision planning: how many more doubly-rated conversations to reach a target CI width."""

from __future__ import annotations

import math
from dataclasses import dataclass

DEFAULT_TARGET_WIDTH = 0.10
_TOLERANCE = 1e-9  # (0.15 / 0.10) ** 2 * 100 is 224.99999999999997, not 225.00000000000003


@dataclass(frozen=True)
class PrecisionPlan:
    """The interval width now and an estimate of the units needed for a target width.

    ``width``: the current interval width (high - low), None when undefined. ``target``: the
    target width. ``n_units``: the units the width rests on (doubly-rated conversations).
    ``n_needed``: estimated units for the target (None when it cannot be estimated);
    ``n_more_needed``: how many more than now (0 when already within the target). ``unit``
    names what is counted; ``note`` says the result in words, or why there is none.
    """

    width: float | None
    target: float
    n_units: int
    n_needed: int | None
    n_more_needed: int | None
    note: str
    unit: str = "conversations"

    def as_dict(self) -> dict[str, object]:
        """Return a JSON-ready mapping."""
        return {
            "width": self.width,
            "target": self.target,
            "n_units": self.n_units,
            "n_needed": self.n_needed,
            "n_more_needed": self.n_more_needed,
            "unit": self.unit,
            "note": self.note,
        }


def precision_plan(
    ci_width: float | None,
    n_units: int,
    target_width: float = DEFAULT_TARGET_WIDTH,
    *,
    unit: str = "conversations",
) -> PrecisionPlan:
    """Estimate how many more doubly-rated units would bring a CI under a target width.

    Estimator: a bootstrap interval's width shrinks like 1/sqrt(n) in the number of
    independent units n, so n_needed = ceil(n * (width / target)^2) and
    n_more_needed = max(0, n_needed - n). It assumes the new units come from the same design
    (same rater count per unit, same mix of labels and of agreement); it is an estimate for
    planning, not a guarantee (the width itself is a Monte Carlo estimate, and coefficients
    near their bounds or with many undefined resamples scale less regularly).

    Edge cases: an undefined width (None or NaN: no interval, e.g. one rater) or fewer than
    2 units give ``n_needed = n_more_needed = None`` with a note saying why; a width already
    within the target gives 0 more; a zero width (every resample equal) gives 0 more.
    ``target_width`` must be positive and ``ci_width`` non-negative (else ValueError).
    Reference: Efron & Tibshirani (1993), An Introduction to the Bootstrap, ch. 5 and 13
    (standard errors and percentile intervals of smooth statistics scale as n^-1/2).
    """
    if not target_width > 0:
        raise ValueError("target_width must be positive")
    n_units = int(n_units)
    if ci_width is None or math.isnan(ci_width):
        note = "no interval (undefined): cannot estimate the conversations needed"
        return PrecisionPlan(None, target_width, n_units, None, None, note, unit)
    if ci_width < 0:
        raise ValueError("ci_width must be non-negative")
    if n_units < 2:
        note = f"{n_units} doubly-rated {unit}: too few to extrapolate the interval width"
        return PrecisionPlan(ci_width, target_width, n_units, None, None, note, unit)
    needed = math.ceil(n_units * (ci_width / target_width) ** 2 - _TOLERANCE)
    more = max(0, needed - n_units)
    if more == 0:
        note = f"width {ci_width:.3f} is within the target {target_width:.2f}"
    else:
        note = (
            f"width {ci_width:.3f} over {n_units} doubly-rated {unit}; about {more} more "
            f"(about {needed} in all) would bring it to {target_width:.2f} "
            "(estimate: width shrinks as 1/sqrt(n), same design and raters)"
        )
    return PrecisionPlan(ci_width, target_width, n_units, needed, more, note, unit)
