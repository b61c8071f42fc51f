"""Holm's step-down adjustment of the pairs' p-values (they come from :mod:`.interval`)."""

from __future__ import annotations

from collections.abc import Sequence

from ..data import StatsInputError

__all__ = ["holm"]


def holm(p_values: Sequence[float | None]) -> list[float | None]:
    """Return Holm's adjusted p-values; None stays None (a pair not tested is not in the family).

    Holm (1979), Scand. J. Statist. 6:65-70: with the m tested p-values in increasing order
    p_(1) <= ... <= p_(m), the adjusted p_(i) is max over j <= i of min(1, (m - j + 1) p_(j)).
    Rejecting where the adjusted p-value is below alpha controls the familywise error rate at
    alpha under any dependence between the tests. Equal to statsmodels'
    ``multipletests(method="holm")`` on the tested values. Ties keep their input order (the
    adjusted values of tied p-values are equal either way). A p-value outside [0, 1] or NaN
    raises StatsInputError.
    """
    tested = [(i, float(p)) for i, p in enumerate(p_values) if p is not None]
    for i, p in tested:
        if not 0.0 <= p <= 1.0:  # also NaN
            raise StatsInputError(f"p_values[{i}] is not a probability: {p!r}")
    out: list[float | None] = [None] * len(p_values)
    m = len(tested)
    running = 0.0
    for rank, (i, p) in enumerate(sorted(tested, key=lambda t: t[1])):
        running = max(running, min(1.0, (m - rank) * p))
        out[i] = running
    return out
