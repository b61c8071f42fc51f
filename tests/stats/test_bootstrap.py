"""The vectorised unit bootstrap equals a per-resample loop, and is seeded and fast."""

from __future__ import annotations

import time

import krippendorff
import numpy as np
import pytest

from stats import (
    RatingTable,
    agreement_report,
    fleiss_kappa,
    gwet_ac1,
    krippendorff_alpha,
    pairwise_cohen,
    percent_agreement,
)
from stats.agreement import (
    cohen_mean_batched,
    fleiss_batched,
    gwet_batched,
    percent_agreement_batched,
)
from stats.alpha import alpha_batched
from stats.bootstrap import (
    bootstrap,
    make_rng,
    percentile_interval,
    resample_weights,
)

from .helpers import random_ratings, to_labels


def _long(matrix: np.ndarray, items: int = 1) -> list[tuple]:
    return [
        (f"u{u}", f"r{r}", f"q{i}", None if np.isnan(x) else int(x))
        for i in range(items)
        for u, row in enumerate(matrix)
        for r, x in enumerate(row)
    ]


@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval"])
def test_vectorised_alpha_equals_a_loop_over_resampled_units(level: str) -> None:
    data = random_ratings(7, n_units=30, n_raters=4, p_missing=0.3)
    table = RatingTable.from_matrix(to_labels(data), level=level)
    draws = bootstrap({"a": alpha_batched(table, level)}, n_resamples=40, seed=11)["a"]
    weights = np.vstack(list(resample_weights(table.n_units, 40, make_rng(11))))
    values = data[~np.isnan(data).all(axis=1)]
    for b, w in enumerate(weights.astype(int)):
        resampled = np.repeat(values, w, axis=0)
        expected = krippendorff.alpha(reliability_data=resampled.T, level_of_measurement=level)
        assert draws[b] == pytest.approx(expected, abs=1e-10)
        counts = np.repeat(table.counts, w, axis=0)
        assert draws[b] == pytest.approx(krippendorff_alpha(counts, level, table.values).alpha)


def test_vectorised_agreement_fleiss_ac1_and_cohen_equal_a_loop() -> None:
    table = RatingTable.from_matrix(to_labels(random_ratings(3, p_missing=0.4)))
    q = len(table.categories)
    stats = {
        "pa": percent_agreement_batched(table),
        "fleiss": fleiss_batched(table),
        "gwet": gwet_batched(table),
        "cohen": cohen_mean_batched(table),
    }
    draws = bootstrap(stats, n_resamples=25, seed=5)
    weights = np.vstack(list(resample_weights(table.n_units, 25, make_rng(5))))
    for b, w in enumerate(weights.astype(int)):
        counts = np.repeat(table.counts, w, axis=0)
        codes = np.repeat(table.codes, w, axis=0)
        resampled = RatingTable.from_codes(
            codes, units=range(len(codes)), raters=table.raters, categories=table.categories
        )
        assert draws["pa"][b] == pytest.approx(percent_agreement(counts).value, abs=1e-12)
        assert draws["fleiss"][b] == pytest.approx(fleiss_kappa(counts).kappa, abs=1e-12)
        assert draws["gwet"][b] == pytest.approx(gwet_ac1(counts, q).ac1, abs=1e-12)
        assert draws["cohen"][b] == pytest.approx(pairwise_cohen(resampled).mean, abs=1e-12)


def test_resample_weights_draw_each_unit_count_times_with_replacement() -> None:
    weights = np.vstack(list(resample_weights(17, 300, make_rng(0), chunk_size=64)))
    assert weights.shape == (300, 17)
    assert (weights.sum(axis=1) == 17).all()
    # Each unit is drawn once per resample on average.
    assert weights.mean() == pytest.approx(1.0, abs=0.05)


def test_same_seed_gives_the_same_intervals_and_a_new_seed_others() -> None:
    rows = _long(random_ratings(2, n_units=50), items=2)
    first = agreement_report(rows, bootstrap=200, seed=42)
    again = agreement_report(rows, bootstrap=200, seed=42)
    other = agreement_report(rows, bootstrap=200, seed=43)
    assert first.as_dict() == again.as_dict()
    assert first.pooled.cis["krippendorff_alpha"] != other.pooled.cis["krippendorff_alpha"]


def test_a_missing_seed_is_drawn_and_recorded_for_reproducibility() -> None:
    rows = _long(random_ratings(2, n_units=30))
    report = agreement_report(rows, bootstrap=50)
    assert isinstance(report.seed, int)
    assert agreement_report(rows, bootstrap=50, seed=report.seed).as_dict() == report.as_dict()


@pytest.mark.parametrize("seed", range(4))
def test_the_interval_contains_the_estimate(seed: int) -> None:
    rows = _long(random_ratings(seed, n_units=80, n_raters=3, p_missing=0.1))
    for level in ("nominal", "ordinal"):
        pooled = agreement_report(rows, bootstrap=500, seed=seed, level=level).pooled
        for name, ci in pooled.cis.items():
            estimate = getattr(pooled, name)
            assert ci.low is not None and ci.high is not None
            assert ci.low <= estimate <= ci.high, name
            assert ci.n_resamples == 500 and ci.n_undefined == 0


def test_percentile_interval_leaves_out_undefined_resamples_and_counts_them() -> None:
    values = np.array([np.nan, 0.1, 0.2, 0.3, np.nan, 0.4, 0.5])
    ci = percentile_interval(values, confidence=0.5)
    assert (ci.n_resamples, ci.n_undefined) == (7, 2)
    assert (ci.low, ci.high) == pytest.approx((0.2, 0.4))
    assert "2 of 7" in (ci.note or "")
    none = percentile_interval(np.array([np.nan, np.nan]))
    assert none.low is None and none.high is None and none.n_undefined == 2


def test_a_thousand_resamples_of_a_large_study_run_fast() -> None:
    # 200 units x 14 items with 4 raters, then a pooled table of 2,800 units.
    rows = _long(random_ratings(0, n_units=200, n_raters=4, p_missing=0.05), items=14)
    start = time.perf_counter()
    report = agreement_report(rows, bootstrap=1000, seed=1, level="ordinal")
    elapsed = time.perf_counter() - start
    assert report.pooled.n_units == 2800
    assert report.pooled.cis["krippendorff_alpha"].n_resamples == 1000
    assert elapsed < 15, f"full report with 1,000 resamples took {elapsed:.1f}s"
