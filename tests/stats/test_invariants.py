"""Invariants: relabelling, reordering and perfect agreement."""

from __future__ import annotations

import numpy as np
import pytest

from stats import RatingTable, agreement_report

from .helpers import random_ratings, to_labels

COEFFICIENTS = (
    "percent_agreement",
    "fleiss_kappa",
    "fleiss_p0",
    "fleiss_pe",
    "cohen_kappa_mean",
    "krippendorff_alpha",
    "gwet_ac1",
)


def _long(matrix: list[list], item: str = "q1") -> list[tuple]:
    return [
        (f"u{u}", f"r{r}", item, label)
        for u, row in enumerate(matrix)
        for r, label in enumerate(row)
        if label is not None
    ]


def _values(matrix: list[list], **kwargs: object) -> dict[str, float | None]:
    pooled = agreement_report(_long(matrix), **kwargs).pooled  # type: ignore[arg-type]
    return {name: getattr(pooled, name) for name in COEFFICIENTS}


@pytest.mark.parametrize("seed", range(5))
def test_relabelling_nominal_categories_changes_nothing(seed: int) -> None:
    labels = to_labels(random_ratings(seed))
    names = {1: "zebra", 2: "apple", 3: "N/A", 4: "mango"}
    renamed = [[None if x is None else names[x] for x in row] for row in labels]
    assert _values(renamed) == pytest.approx(_values(labels), abs=1e-12)


@pytest.mark.parametrize("seed", range(5))
def test_reversing_an_ordinal_scale_changes_nothing(seed: int) -> None:
    labels = to_labels(random_ratings(seed))
    flipped = [[None if x is None else 5 - x for x in row] for row in labels]
    for level in ("ordinal", "interval"):
        assert _values(flipped, level=level) == pytest.approx(
            _values(labels, level=level), abs=1e-12
        )


@pytest.mark.parametrize("seed", range(5))
def test_permuting_units_and_raters_changes_nothing(seed: int) -> None:
    data = random_ratings(seed)
    rng = np.random.default_rng(100 + seed)
    shuffled = data[rng.permutation(data.shape[0])][:, rng.permutation(data.shape[1])]
    assert _values(to_labels(shuffled)) == pytest.approx(_values(to_labels(data)), abs=1e-12)


@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval"])
def test_perfect_agreement_gives_one_for_every_coefficient(level: str) -> None:
    truth = [1, 2, 3, 1, 2, 3, 3, 1]
    matrix = [[t, t, t if u % 3 else None] for u, t in enumerate(truth)]
    values = _values(matrix, level=level)
    assert values.pop("fleiss_pe") < 1
    assert values == pytest.approx(dict.fromkeys(values, 1.0))


def test_unobserved_categories_change_nothing_but_gwet_q() -> None:
    labels = to_labels(random_ratings(3, n_categories=3))
    plain = _values(labels)
    declared = _values(labels, order=[1, 2, 3, 4])
    gwet_plain, gwet_declared = plain.pop("gwet_ac1"), declared.pop("gwet_ac1")
    assert declared == pytest.approx(plain, abs=1e-12)
    assert gwet_declared != pytest.approx(gwet_plain)


def test_table_from_matrix_drops_units_and_raters_without_ratings() -> None:
    table = RatingTable.from_matrix([[1, None, 2], [None, None, None], [2, None, 2]])
    assert (table.n_units, table.n_raters, table.n_ratings) == (2, 2, 4)
    np.testing.assert_array_equal(table.counts, [[1, 1], [0, 2]])
