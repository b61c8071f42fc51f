"""The leaderboard's procedures equal their reference implementations.

Holm equals statsmodels' multipletests; the paired and unpaired cluster bootstraps equal
scipy.stats.bootstrap given the same generator, with a statistic written here from the
published score formulas (stats.vera_mh_score, stats.amhart_score, stats.ppi) on the drawn
conversations; point estimates equal stats.ppi's and the scorecard's.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as scipy_stats
from statsmodels.stats.multitest import multipletests

from stats import amhart_score, vera_mh_score
from stats.leaderboard import Unit, bootstrap_p_value, compare_chatbots, holm
from stats.ppi import ppi_amhart_score, ppi_vera_mh_score
from stats.scorecard import amhart_scorecard, vera_mh_scorecard

from .leaderboard_data import amhart_units, vera_units, with_humans

SEED = 123
B = 999


@pytest.mark.parametrize(
    "p",
    [
        [0.01, 0.04, 0.03, 0.2, 0.5],
        [0.001, 0.001, 0.04, 0.04, 1.0],  # ties
        [0.0, 0.3, 0.3, 0.9],
        [0.049],
        list(np.random.default_rng(4).random(12) ** 3),
    ],
)
def test_holm_equals_statsmodels_multipletests(p: list[float]) -> None:
    expected = multipletests(p, alpha=0.05, method="holm")[1]
    assert holm(p) == pytest.approx(list(expected), abs=1e-12)


def test_holm_leaves_untested_pairs_out_of_the_family() -> None:
    p = [0.01, None, 0.02, None, 0.04]
    expected = multipletests([0.01, 0.02, 0.04], method="holm")[1]
    got = holm(p)
    assert got[1] is None and got[3] is None
    assert [got[0], got[2], got[4]] == pytest.approx(list(expected))


def _clusters(units: list[Unit], chatbots: tuple[str, ...]) -> list:
    """Return the clusters holding these chatbots' conversations, in order of first appearance."""
    return list(dict.fromkeys(u.cluster for u in units if u.chatbot in chatbots))


def _labels_of(units: list[Unit], chatbot: str, clusters: list, drawn: np.ndarray) -> list[list[str]]:
    by_cluster: dict = {}
    for u in units:
        if u.chatbot == chatbot:
            by_cluster.setdefault(u.cluster, []).append(u.judge)
    return [entry for i in drawn for entry in by_cluster.get(clusters[int(i)], [])]


def test_paired_interval_equals_scipy_bootstrap_with_the_same_generator() -> None:
    units = vera_units({"A": 0.6, "B": 0.0}, personas=25, repetitions=2, seed=3)
    clusters = _clusters(units, ("A", "B"))

    def difference(drawn: np.ndarray) -> float:
        pooled_a = [label for entry in _labels_of(units, "A", clusters, drawn) for label in entry]
        pooled_b = [label for entry in _labels_of(units, "B", clusters, drawn) for label in entry]
        return vera_mh_score(pooled_a).score - vera_mh_score(pooled_b).score

    reference = scipy_stats.bootstrap(
        (np.arange(len(clusters)),), difference, n_resamples=B, method="percentile", vectorized=False,
        rng=np.random.default_rng(SEED),
    )
    pair = compare_chatbots(units, score="vera_mh", method="judge_only", n_resamples=B, seed=SEED).pairs[0]
    assert (pair.a, pair.b, pair.design) == ("A", "B", "paired")
    assert pair.low == pytest.approx(reference.confidence_interval.low, abs=1e-9)
    assert pair.high == pytest.approx(reference.confidence_interval.high, abs=1e-9)
    assert pair.p_value == pytest.approx(bootstrap_p_value(reference.bootstrap_distribution))
    assert pair.difference == pytest.approx(difference(np.arange(len(clusters))))


def test_unpaired_interval_equals_scipy_bootstrap_of_two_independent_samples() -> None:
    units = amhart_units({"A": 0.8, "B": 0.0}, personas=6, repetitions=5, seed=8)
    # Different persona cards for each chatbot: the design does not pair them.
    units = [Unit(u.chatbot, (u.chatbot, *u.cluster), judge=u.judge) for u in units]
    clusters_a, clusters_b = _clusters(units, ("A",)), _clusters(units, ("B",))

    def mean_score(entries: list[list[str]]) -> float:
        return float(np.mean([amhart_score(e).score for e in entries]))

    def difference(drawn_a: np.ndarray, drawn_b: np.ndarray) -> float:
        return mean_score(_labels_of(units, "A", clusters_a, drawn_a)) - mean_score(_labels_of(units, "B", clusters_b, drawn_b))

    reference = scipy_stats.bootstrap(
        (np.arange(len(clusters_a)), np.arange(len(clusters_b))), difference, n_resamples=B, method="percentile",
        vectorized=False, rng=np.random.default_rng(SEED),
    )
    pair = compare_chatbots(units, score="amhart", method="judge_only", n_resamples=B, seed=SEED,
                            cluster_name=("persona × repetition", "persona × repetition clusters")).pairs[0]
    assert pair.design == "unpaired" and pair.n_shared == 0
    assert "does not pair them" in pair.design_note
    assert pair.low == pytest.approx(reference.confidence_interval.low, abs=1e-12)
    assert pair.high == pytest.approx(reference.confidence_interval.high, abs=1e-12)


def test_a_chatbots_own_interval_equals_scipy_one_sample_cluster_bootstrap() -> None:
    units = vera_units({"A": 0.3, "B": 0.0}, personas=20, seed=5)
    clusters = _clusters(units, ("A",))

    def score(drawn: np.ndarray) -> float:
        return vera_mh_score([label for entry in _labels_of(units, "A", clusters, drawn) for label in entry]).score

    reference = scipy_stats.bootstrap((np.arange(len(clusters)),), score, n_resamples=B, method="percentile",
                                      vectorized=False, rng=np.random.default_rng(SEED))
    own = compare_chatbots(units, score="vera_mh", method="judge_only", n_resamples=B, seed=SEED).scores[0]
    assert own.chatbot == "A"
    assert (own.low, own.high) == pytest.approx((reference.confidence_interval.low, reference.confidence_interval.high))


def test_ppi_is_re_estimated_in_every_resample_as_stats_ppi_computes_it() -> None:
    units = with_humans(vera_units({"A": 0.5, "B": 0.0}, personas=12, repetitions=3, seed=2), every=2, seed=1)
    clusters = _clusters(units, ("A", "B"))
    by = {(u.chatbot, u.cluster): [] for u in units}
    for u in units:
        by[(u.chatbot, u.cluster)].append(u)

    def ppi(chatbot: str, drawn: np.ndarray) -> float:
        conversations = [u for i in drawn for u in by.get((chatbot, clusters[int(i)]), [])]
        rated = [u for u in conversations if u.human is not None]
        unrated = [u for u in conversations if u.human is None]
        return ppi_vera_mh_score([u.human for u in rated], [u.judge for u in rated], [u.judge for u in unrated]).ppi.estimate

    reference = scipy_stats.bootstrap(
        (np.arange(len(clusters)),), lambda drawn: ppi("A", drawn) - ppi("B", drawn), n_resamples=199,
        method="percentile", vectorized=False, rng=np.random.default_rng(SEED),
    )
    pair = compare_chatbots(units, score="vera_mh", method="ppi", n_resamples=199, seed=SEED, min_clusters=2).pairs[0]
    assert (pair.low, pair.high) == pytest.approx((reference.confidence_interval.low, reference.confidence_interval.high))


@pytest.mark.parametrize("weighted", [False, True])
def test_point_estimates_equal_stats_ppi_for_every_method(weighted: bool) -> None:
    units = with_humans(amhart_units({"A": 0.5, "B": -0.2}, personas=4, repetitions=6, seed=7), every=3, seed=4,
                        score="amhart")
    rng = np.random.default_rng(0)
    if weighted:  # a plan that oversampled some conversations: π differs per conversation
        units = [Unit(u.chatbot, u.cluster, u.judge, u.human, float(rng.choice([0.2, 0.5, 0.9]))) for u in units]
    mine = [u for u in units if u.chatbot == "A"]
    rated = [u for u in mine if u.human is not None]
    unrated = [u for u in mine if u.human is None]
    kw = {}
    if weighted:
        kw = {"inclusion_prob": [u.inclusion_prob for u in rated], "unlabeled_inclusion_prob": [u.inclusion_prob for u in unrated]}
    args = ([u.human for u in rated], [u.judge for u in rated], [u.judge for u in unrated])
    classical = ppi_amhart_score(*args, **kw)
    tuned = ppi_amhart_score(*args, **kw, tuned=True)
    expected = {"ppi": classical.ppi.estimate, "human_only": classical.human_only.estimate,
                "ppi_tuned": tuned.ppi.estimate}
    for method, value in expected.items():
        comparison = compare_chatbots(units, score="amhart", method=method, lam={"A": tuned.lam, "B": 0.5}, n_resamples=10)
        assert comparison.scores[0].chatbot == "A"
        assert comparison.scores[0].estimate == pytest.approx(value, abs=1e-12), method


def test_vera_mh_ppi_point_estimate_equals_stats_ppi_with_weights() -> None:
    units = with_humans(vera_units({"A": 0.5}, personas=10, repetitions=4, seed=9), every=2, seed=3)
    rng = np.random.default_rng(1)
    units = [Unit(u.chatbot, u.cluster, u.judge, u.human, float(rng.choice([0.3, 0.6, 1.0 if u.human else 0.6])))
             for u in units]  # π = 1 for some rated ones: a stratum rated in full enters the judge term too
    rated = [u for u in units if u.human is not None]
    unrated = [u for u in units if u.human is None]
    expected = ppi_vera_mh_score([u.human for u in rated], [u.judge for u in rated], [u.judge for u in unrated],
                                 inclusion_prob=[u.inclusion_prob for u in rated],
                                 unlabeled_inclusion_prob=[u.inclusion_prob for u in unrated])
    got = compare_chatbots(units, score="vera_mh", method="ppi", n_resamples=10).scores[0]
    assert got.estimate == pytest.approx(expected.ppi.estimate, abs=1e-12)
    assert got.n_rated == len(rated)


def test_judges_only_equals_the_scorecard_per_chatbot() -> None:
    units = vera_units({"A": 0.5, "B": -0.3}, personas=8, seed=4)
    rows = [
        {"conversation": i, "chatbot": u.chatbot, "risk": "High", "dimension": f"d{d}", "label": label}
        for i, u in enumerate(units) for d, label in enumerate(u.judge)
    ]
    card = {r["chatbot"]: r["score"] for r in vera_mh_scorecard(rows)["by_chatbot"]}
    got = {s.chatbot: s.estimate for s in compare_chatbots(units, score="vera_mh", method="judge_only", n_resamples=10).scores}
    assert got == pytest.approx(card)
    amhart = amhart_units({"A": 0.3, "B": 0.0}, personas=3, repetitions=4, seed=1)
    rows = [
        {"conversation": i, "chatbot": u.chatbot, "persona": u.cluster[0], "diagnosis": "-", "severity": "-",
         "domain": "-", "item": f"q{j}", "label": label}
        for i, u in enumerate(amhart) for j, label in enumerate(u.judge)
    ]
    card = {r["chatbot"]: r["mean_score"] for r in amhart_scorecard(rows)["by_chatbot"]}
    got = {s.chatbot: s.estimate for s in compare_chatbots(amhart, score="amhart", method="judge_only", n_resamples=10).scores}
    assert got == pytest.approx(card)
