"""Category scales: sorting labels, numeric values, and the declared order of a scale."""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

Label = Hashable
Level = Literal["nominal", "ordinal", "interval"]
LEVELS: tuple[Level, ...] = ("nominal", "ordinal", "interval")


class StatsInputError(ValueError):
    """Input the statistics cannot be computed from (bad level, unknown label, duplicate)."""


def as_number(label: object) -> float | None:
    """Return the finite numeric value of a label ("3", 3, 2.5), or None if it has none."""
    if isinstance(label, bool):
        return None
    if isinstance(label, int | float | np.integer | np.floating):
        value = float(label)
    elif isinstance(label, str):
        try:
            value = float(label.strip())
        except ValueError:
            return None
    else:
        return None
    return value if math.isfinite(value) else None


def _sort_key(label: Label) -> tuple[int, float, str]:
    number = as_number(label)
    if number is not None:
        return (0, number, str(label))
    return (1, 0.0, str(label))


def sort_labels(labels: Iterable[Label]) -> tuple[Label, ...]:
    """Sort labels: numeric-like labels by value first, then the rest alphabetically."""
    return tuple(sorted(set(labels), key=_sort_key))


@dataclass(frozen=True)
class Scale:
    """The categories in column order and, for ordinal/interval data, their numeric values."""

    categories: tuple[Label, ...]
    values: tuple[float, ...] | None
    declared: bool  # True when the caller listed the categories (``order``)


def build_scale(
    labels: Iterable[Label],
    *,
    level: Level = "nominal",
    order: Sequence[Label] | None = None,
) -> Scale:
    """Fix the category columns and their values for the observed labels.

    With ``order`` the scale is exactly those labels in that order (unused ones included, which
    matters for Gwet's AC1); a label outside it raises :class:`StatsInputError`. Without it,
    the observed labels are sorted (numbers by value). Ordinal and interval data need an order:
    ``order`` or labels that are all numeric. Interval distances use the numeric values when
    every label is numeric, otherwise the positions 1..q of ``order`` (equal spacing).
    """
    if level not in LEVELS:
        raise StatsInputError(f"level must be one of {LEVELS}, not {level!r}")
    observed = set(labels)
    if order is not None:
        categories = tuple(dict.fromkeys(order))
        outside = observed - set(categories)
        if outside:
            shown = ", ".join(repr(x) for x in sort_labels(outside))
            raise StatsInputError(f"label(s) {shown} not in the declared order {categories!r}")
    else:
        categories = sort_labels(observed)
    if level == "nominal":
        return Scale(categories, None, order is not None)
    numbers = [as_number(c) for c in categories]
    if all(n is not None for n in numbers):
        values = tuple(float(n) for n in numbers if n is not None)
        if len(set(values)) != len(values):
            raise StatsInputError(f"two labels share a numeric value in {categories!r}")
        if order is not None and level == "ordinal":
            values = tuple(float(i) for i in range(1, len(categories) + 1))
    elif order is not None:
        values = tuple(float(i) for i in range(1, len(categories) + 1))
    else:
        bad = [c for c, n in zip(categories, numbers, strict=True) if n is None]
        raise StatsInputError(
            f"{level} data need numeric labels or an explicit order; "
            f"non-numeric label(s): {', '.join(repr(b) for b in bad)}"
        )
    if order is None:
        # Numeric labels without a declared order: sort columns by value.
        pairs = sorted(zip(values, categories, strict=True), key=lambda p: p[0])
        values = tuple(v for v, _ in pairs)
        categories = tuple(c for _, c in pairs)
    return Scale(categories, values, order is not None)
