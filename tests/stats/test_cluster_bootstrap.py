"""The pooled bootstrap resamples whole conversations; undefined resamples are counted."""

from __future__ import annotations

import numpy as np
import pytest

from stats import RatingTable, agreement_report, fleiss_kappa, krippendorff_alpha
from stats.agreement import fleiss_batched
from stats.alpha import alpha_batched
from stats.bootstrap import bootstrap, bootstrap_intervals, make_rng, resample_weights

from .helpers import random_ratings

N_ITEMS = 10


def correlated_rows(n_conversations: int = 40, seed: int = 0) -> list[tuple]:
    """Conversations that are easy (raters agree on every item) or hard (they split on all).

    Items within a conversation are strongly correlated, so the (conversation, item) pairs of
    the pooled table are far from independent.
    """
    rng = np.random.default_rng(seed)
    rows = []
    for c in range(n_conversations):
        easy = rng.random() < 0.5
        for i in range(N_ITEMS):
            truth = rng.choice(["yes", "no"])
            other = "no" if truth == "yes" else "yes"
            labels = (truth, truth, truth) if easy else (truth, other, truth if i % 2 else other)
            rows += [(f"c{c}", f"r{r}", f"q{i}", label) for r, label in enumerate(labels)]
    return rows


def _width(report, name: str) -> float:  # type: ignore[no-untyped-def]
    ci = report.pooled.cis[name]
    return ci.high - ci.low


def test_pooled_interval_resamples_whole_conversations_and_is_wider() -> None:
    rows = correlated_rows()
    cluster = agreement_report(rows, bootstrap=1000, seed=5)
    pairs = agreement_report(rows, bootstrap=1000, seed=5, pooled_resampling="pairs")
    assert cluster.pooled_resampling == "cluster" and pairs.pooled_resampling == "pairs"
    assert cluster.pooled.resampling == "clusters" and cluster.pooled.n_clusters == 40
    assert pairs.pooled.resampling == "units" and pairs.pooled.n_clusters is None
    for name in ("percent_agreement", "fleiss_kappa", "krippendorff_alpha", "gwet_ac1"):
        assert _width(cluster, name) > 1.8 * _width(pairs, name), name
    # The point estimates do not depend on how the interval resamples.
    assert cluster.pooled.krippendorff_alpha == pairs.pooled.krippendorff_alpha


def test_per_item_intervals_do_not_depend_on_the_pooled_resampling() -> None:
    rows = correlated_rows(20)
    cluster = agreement_report(rows, bootstrap=200, seed=9)
    pairs = agreement_report(rows, bootstrap=200, seed=9, pooled_resampling="pairs")
    for item in cluster.items:
        assert cluster.items[item].cis == pairs.items[item].cis
        assert cluster.items[item].resampling == "units"


def test_same_seed_gives_the_same_cluster_interval() -> None:
    rows = correlated_rows(25)
    first = agreement_report(rows, bootstrap=300, seed=11).pooled.cis
    again = agreement_report(rows, bootstrap=300, seed=11).pooled.cis
    other = agreement_report(rows, bootstrap=300, seed=12).pooled.cis
    assert first == again
    assert first["krippendorff_alpha"] != other["krippendorff_alpha"]


def test_a_single_item_report_gives_the_same_interval_either_way() -> None:
    rows = [r for r in correlated_rows(30) if r[2] == "q0"]
    cluster = agreement_report(rows, bootstrap=300, seed=3).pooled.cis
    pairs = agreement_report(rows, bootstrap=300, seed=3, pooled_resampling="pairs").pooled.cis
    for name in cluster:
        assert (cluster[name].low, cluster[name].high) == (pairs[name].low, pairs[name].high)


def test_vectorised_cluster_bootstrap_equals_a_loop_over_drawn_conversations() -> None:
    data = random_ratings(4, n_units=24, n_raters=3, p_missing=0.2)
    table = RatingTable.from_matrix([[None if np.isnan(x) else int(x) for x in r] for r in data])
    clusters = [u // 3 for u in range(table.n_units)]  # 3 consecutive units per cluster
    stats = {"alpha": alpha_batched(table), "fleiss": fleiss_batched(table)}
    draws = bootstrap(stats, n_resamples=30, seed=2, clusters=clusters)
    n_clusters = max(clusters) + 1
    weights = np.vstack(list(resample_weights(n_clusters, 30, make_rng(2))))
    members = np.array(clusters)
    for b, w in enumerate(weights.astype(int)):
        unit_weights = w[members]
        counts = np.repeat(table.counts, unit_weights, axis=0)
        assert draws["alpha"][b] == pytest.approx(krippendorff_alpha(counts).alpha, abs=1e-12)
        assert draws["fleiss"][b] == pytest.approx(fleiss_kappa(counts).kappa, abs=1e-12)


def test_the_share_of_undefined_resamples_is_reported() -> None:
    # Two unanimous "yes" units and one split unit: a resample that misses the split unit
    # (probability (2/3)^3 = 8/27) holds one category, where kappa and alpha are undefined.
    counts = np.array([[3, 0], [3, 0], [2, 1]])
    intervals = bootstrap_intervals({"fleiss": fleiss_batched(counts)}, n_resamples=4000, seed=1)
    ci = intervals["fleiss"]
    assert ci.percent_undefined == pytest.approx(100 * ci.n_undefined / 4000)
    assert ci.percent_undefined == pytest.approx(100 * 8 / 27, abs=3)
    assert "%" in (ci.note or "") and "undefined" in (ci.note or "")
    assert ci.as_dict()["percent_undefined"] == ci.percent_undefined


def test_the_report_records_the_interval_method_and_undefined_percentages() -> None:
    rows = correlated_rows(10)
    data = agreement_report(rows, bootstrap=100, seed=1).as_dict()
    assert data["interval_method"] == "percentile_bootstrap_cluster"
    assert "whole conversations" in data["interval_method_label"]
    assert "per item: resamples of conversations" in data["interval_method_label"]
    assert data["pooled"]["ci_percent_undefined"]["krippendorff_alpha"] == 0.0
    assert data["pooled"]["bootstrap"]["fleiss_kappa"]["percent_undefined"] == 0.0
    pairs = agreement_report(rows, bootstrap=100, seed=1, pooled_resampling="pairs").as_dict()
    assert pairs["interval_method"] == "percentile_bootstrap_pairs"
    assert agreement_report(rows).as_dict()["interval_method"] == "none"


def test_an_unknown_pooled_resampling_is_rejected() -> None:
    with pytest.raises(ValueError, match="pooled_resampling"):
        agreement_report(correlated_rows(3), bootstrap=10, pooled_resampling="items")  # type: ignore[arg-type]
