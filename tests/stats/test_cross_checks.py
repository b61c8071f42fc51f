"""Cross-checks against krippendorff, statsmodels, scikit-learn and a loop transcription.

Random data carry missing ratings and a varying number of raters per unit.
"""

from __future__ import annotations

from itertools import combinations

import krippendorff
import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.inter_rater import aggregate_raters
from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss_kappa

from stats import (
    RatingTable,
    cohen_kappa,
    fleiss_kappa,
    gwet_ac1,
    krippendorff_alpha,
    pairwise_cohen,
    percent_agreement,
)

from .helpers import random_ratings, to_labels

SEEDS = range(8)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval"])
def test_alpha_matches_the_krippendorff_package_with_missing_ratings(seed: int, level: str) -> None:
    data = random_ratings(seed, n_units=40 + 10 * seed, n_raters=3 + seed % 4, p_missing=0.35)
    table = RatingTable.from_matrix(to_labels(data), level=level)
    ours = krippendorff_alpha(table, level).alpha
    theirs = krippendorff.alpha(reliability_data=data.T, level_of_measurement=level)
    assert ours == pytest.approx(theirs, abs=1e-10)


@pytest.mark.parametrize("seed", SEEDS)
def test_ordinal_alpha_with_a_declared_order_of_text_labels_matches_the_package(seed: int) -> None:
    data = random_ratings(seed, n_categories=5, p_missing=0.2)
    words = ["never", "rarely", "sometimes", "often", "always"]
    labels = [[None if x is None else words[x - 1] for x in row] for row in to_labels(data)]
    table = RatingTable.from_matrix(labels, level="ordinal", order=words)
    theirs = krippendorff.alpha(
        reliability_data=data.T, level_of_measurement="ordinal", value_domain=[1, 2, 3, 4, 5]
    )
    assert krippendorff_alpha(table, "ordinal").alpha == pytest.approx(theirs, abs=1e-10)


@pytest.mark.parametrize("seed", SEEDS)
def test_fleiss_kappa_matches_statsmodels_when_every_unit_has_all_raters(seed: int) -> None:
    data = random_ratings(seed, n_raters=3 + seed, p_missing=0.0).astype(int)
    counts, _ = aggregate_raters(data)
    ours = fleiss_kappa(RatingTable.from_matrix(data.tolist()))
    assert ours.kappa == pytest.approx(sm_fleiss_kappa(counts, method="fleiss"), abs=1e-12)
    assert fleiss_kappa(counts).kappa == pytest.approx(ours.kappa, abs=1e-12)


def _irrcac_loop(matrix: list[list[int | None]]) -> tuple[float, float, float]:
    """Transcribe irrCAC's fleiss.kappa.raw / gwet.ac1.raw with plain loops (Gwet 2014)."""
    rows = [[x for x in row if x is not None] for row in matrix]
    rows = [r for r in rows if r]
    cats = sorted({x for r in rows for x in r})
    q = len(cats)
    pa_terms = []
    for r in rows:
        m = len(r)
        if m >= 2:
            pa_terms.append(sum(r.count(c) * (r.count(c) - 1) for c in cats) / (m * (m - 1)))
    pa = sum(pa_terms) / len(pa_terms)
    pi = [sum(r.count(c) / len(r) for r in rows) / len(rows) for c in cats]
    pe_f = sum(p * p for p in pi)
    pe_g = sum(p * (1 - p) for p in pi) / (q - 1)
    return pa, (pa - pe_f) / (1 - pe_f), (pa - pe_g) / (1 - pe_g)


@pytest.mark.parametrize("seed", SEEDS)
def test_percent_agreement_fleiss_and_ac1_match_a_loop_transcription_with_missing(
    seed: int,
) -> None:
    labels = to_labels(random_ratings(seed, p_missing=0.4))
    table = RatingTable.from_matrix(labels)
    pa, kappa, ac1 = _irrcac_loop(labels)
    assert percent_agreement(table).value == pytest.approx(pa, abs=1e-12)
    assert fleiss_kappa(table).kappa == pytest.approx(kappa, abs=1e-12)
    assert gwet_ac1(table).ac1 == pytest.approx(ac1, abs=1e-12)


@pytest.mark.parametrize("seed", SEEDS)
def test_pairwise_cohen_matches_scikit_learn_on_units_both_raters_rated(seed: int) -> None:
    data = random_ratings(seed, n_raters=4, p_missing=0.25)
    table = RatingTable.from_matrix(to_labels(data))
    summary = pairwise_cohen(table)
    expected = []
    for i, j in combinations(range(data.shape[1]), 2):
        both = ~np.isnan(data[:, i]) & ~np.isnan(data[:, j])
        expected.append(cohen_kappa_score(data[both, i], data[both, j]))
    assert [p.kappa for p in summary.pairs] == pytest.approx(expected, abs=1e-12)
    assert summary.mean == pytest.approx(np.mean(expected), abs=1e-12)


@pytest.mark.parametrize("seed", SEEDS)
def test_cohen_kappa_of_two_sequences_matches_scikit_learn(seed: int) -> None:
    data = random_ratings(seed, n_raters=2, p_missing=0.2)
    a, b = ([None if np.isnan(x) else f"c{int(x)}" for x in data[:, k]] for k in range(2))
    both = ~np.isnan(data).any(axis=1)
    result = cohen_kappa(a, b)
    assert result.kappa == pytest.approx(cohen_kappa_score(data[both, 0], data[both, 1]), abs=1e-12)
    assert result.n == int(both.sum())
