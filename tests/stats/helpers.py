"""Shared data for the statistics tests."""

from __future__ import annotations

import numpy as np

# Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", section C ("nominal data,
# any number of observers, missing data"): observers A-D (rows) x units 1-12 (columns), None
# where an observer did not code the unit. Reproduced from memory and confirmed against the
# `krippendorff` package, which gives the paper's 0.743 / 0.815 / 0.849 for this matrix.
KRIPPENDORFF_2011 = [
    [1, 2, 3, 3, 2, 1, 4, 1, 2, None, None, None],
    [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, None, 3],
    [None, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, None],
    [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, None],
]


def units_by_raters(observers_by_units: list[list]) -> list[list]:
    """Transpose an observers x units matrix into units x raters."""
    return [list(col) for col in zip(*observers_by_units, strict=True)]


def random_ratings(
    seed: int,
    *,
    n_units: int = 60,
    n_raters: int = 5,
    n_categories: int = 4,
    p_missing: float = 0.3,
    p_agree: float = 0.6,
) -> np.ndarray:
    """Return a units x raters float matrix of labels 1..q with NaN for missing ratings.

    Each unit has a true category; a rater reports it with probability ``p_agree`` and a
    uniformly random category otherwise, so the data have realistic, non-trivial agreement.
    """
    rng = np.random.default_rng(seed)
    truth = rng.integers(1, n_categories + 1, size=n_units)
    noise = rng.integers(1, n_categories + 1, size=(n_units, n_raters))
    keep = rng.random((n_units, n_raters)) < p_agree
    data = np.where(keep, truth[:, None], noise).astype(float)
    data[rng.random((n_units, n_raters)) < p_missing] = np.nan
    return data


def to_labels(matrix: np.ndarray) -> list[list]:
    """Turn a float matrix with NaN into a list-of-lists of ints with None."""
    return [[None if np.isnan(x) else int(x) for x in row] for row in matrix]
