"""The leaderboard's procedures equal their reference implementations.

Holm equals statsmodels' multipletests. The paired and unpaired cluster bootstraps draw what
scipy.stats.bootstrap draws given the same generator, with a statistic written here from the
published score formulas (stats.vera_mh_score, stats.amhart_score, stats.ppi) on the drawn
conversations; the small-sample t interval and its p-value are computed here from scipy's
bootstrap distribution and standard error by the formulas of Hesterberg (2015) and Cameron &
Miller (2015) (estimate ± t_{G-1} sqrt(G/(G - 1)) SE*; Welch's degrees of freedom for two
samples), and on unclustered means they converge to Student's one-sample, paired and Welch t
intervals (scipy.stats.ttest_1samp, ttest_rel, ttest_ind), which the percentile interval does
not. Point estimates equal stats.ppi's and the scorecard's.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as scipy_stats
from statsmodels.stats.multitest import multipletests

from stats import amhart_score, vera_mh_score
from stats.leaderboard import Unit, compare_chatbots, holm
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


def _t_interval(estimate: float, parts: list[tuple[float, int]], confidence: float = 0.95) -> tuple[float, float, float]:
    """Return (low, high, p) of the small-sample t interval from (bootstrap SE, clusters) per independent sample.

    SE² = sum of G/(G - 1) SE*²; df = G - 1 for one sample, Welch-Satterthwaite for two.
    """
    v = [g / (g - 1) * se**2 for se, g in parts]
    df = parts[0][1] - 1 if len(parts) == 1 else sum(v) ** 2 / sum(x**2 / (g - 1) for x, (_, g) in zip(v, parts, strict=True))
    se = sum(v) ** 0.5
    half = scipy_stats.t.ppf((1 + confidence) / 2, df) * se
    return estimate - half, estimate + half, 2 * scipy_stats.t.sf(abs(estimate) / se, df)


def test_paired_interval_is_the_t_interval_of_scipys_bootstrap_with_the_same_generator() -> None:
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
    estimate = difference(np.arange(len(clusters)))
    low, high, p = _t_interval(estimate, [(reference.standard_error, len(clusters))])
    pair = compare_chatbots(units, score="vera_mh", method="judge_only", n_resamples=B, seed=SEED).pairs[0]
    assert (pair.a, pair.b, pair.design, pair.n_clusters) == ("A", "B", "paired", 25)
    assert pair.difference == pytest.approx(estimate)
    assert pair.std_error == pytest.approx(reference.standard_error * (25 / 24) ** 0.5, rel=1e-9)
    assert pair.df == 24
    assert (pair.low, pair.high) == pytest.approx((low, high), abs=1e-9)
    assert pair.p_value == pytest.approx(p, rel=1e-9, abs=1e-15)
    # Wider than scipy's percentile interval of the same resamples, which was too narrow with 25 personas.
    assert pair.high - pair.low > reference.confidence_interval.high - reference.confidence_interval.low


def test_unpaired_interval_is_welchs_t_interval_of_scipys_two_independent_bootstraps() -> None:
    units = amhart_units({"A": 0.8, "B": 0.0}, personas=6, repetitions=5, seed=8)
    # Different persona cards for each chatbot: the design does not pair them.
    units = [Unit(u.chatbot, (u.chatbot, *u.cluster), judge=u.judge) for u in units]
    clusters_a, clusters_b = _clusters(units, ("A",)), _clusters(units, ("B",))

    def per_cluster(chatbot: str, clusters: list) -> list[list[float]]:  # each conversation's AMHART score, per cluster
        return [[amhart_score(e).score for e in _labels_of(units, chatbot, clusters, np.array([i]))]
                for i in range(len(clusters))]

    scores_a, scores_b = per_cluster("A", clusters_a), per_cluster("B", clusters_b)

    def score_a(drawn: np.ndarray) -> float:
        return float(np.mean([x for i in drawn for x in scores_a[int(i)]]))

    def score_b(drawn: np.ndarray) -> float:
        return float(np.mean([x for i in drawn for x in scores_b[int(i)]]))

    rng = np.random.default_rng(SEED)  # A's clusters drawn first, then B's, from one generator
    boot_a = scipy_stats.bootstrap((np.arange(len(clusters_a)),), score_a, n_resamples=B, method="percentile",
                                   vectorized=False, rng=rng)
    boot_b = scipy_stats.bootstrap((np.arange(len(clusters_b)),), score_b, n_resamples=B, method="percentile",
                                   vectorized=False, rng=rng)
    together = scipy_stats.bootstrap(
        (np.arange(len(clusters_a)), np.arange(len(clusters_b))), lambda x, y: score_a(x) - score_b(y), n_resamples=B,
        method="percentile", vectorized=False, rng=np.random.default_rng(SEED),
    )
    assert together.bootstrap_distribution == pytest.approx(boot_a.bootstrap_distribution - boot_b.bootstrap_distribution)
    estimate = score_a(np.arange(len(clusters_a))) - score_b(np.arange(len(clusters_b)))
    low, high, p = _t_interval(estimate, [(boot_a.standard_error, len(clusters_a)), (boot_b.standard_error, len(clusters_b))])
    pair = compare_chatbots(units, score="amhart", method="judge_only", n_resamples=B, seed=SEED,
                            cluster_name=("persona × repetition", "persona × repetition clusters")).pairs[0]
    assert pair.design == "unpaired" and pair.n_shared == 0
    assert "does not pair them" in pair.design_note
    assert (pair.low, pair.high) == pytest.approx((low, high), abs=1e-12)
    assert pair.p_value == pytest.approx(p, rel=1e-9, abs=1e-15)


def test_a_chatbots_own_interval_is_the_t_interval_of_scipys_one_sample_cluster_bootstrap() -> None:
    units = vera_units({"A": 0.3, "B": 0.0}, personas=20, seed=5)
    clusters = _clusters(units, ("A",))

    def score(drawn: np.ndarray) -> float:
        return vera_mh_score([label for entry in _labels_of(units, "A", clusters, drawn) for label in entry]).score

    reference = scipy_stats.bootstrap((np.arange(len(clusters)),), score, n_resamples=B, method="percentile",
                                      vectorized=False, rng=np.random.default_rng(SEED))
    low, high, _ = _t_interval(score(np.arange(len(clusters))), [(reference.standard_error, len(clusters))])
    own = compare_chatbots(units, score="vera_mh", method="judge_only", n_resamples=B, seed=SEED).scores[0]
    assert own.chatbot == "A"
    assert (own.low, own.high) == pytest.approx((low, high))


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
    everything = np.arange(len(clusters))
    low, high, _ = _t_interval(ppi("A", everything) - ppi("B", everything), [(reference.standard_error, len(clusters))])
    pair = compare_chatbots(units, score="vera_mh", method="ppi", n_resamples=199, seed=SEED, min_clusters=2).pairs[0]
    assert (pair.low, pair.high) == pytest.approx((low, high))


# --- known answers: on unclustered means the interval is Student's (the percentile one is narrower) ---------------

N_MEANS = 12
LONG = 40_000  # resamples: the bootstrap SE within about 0.4% of its limit


def _amhart_entries(rng: np.random.Generator, chance: float) -> list[list[str]]:
    return [["yes" if x else "no" for x in rng.random(int(rng.integers(1, 9))) < chance] for _ in range(N_MEANS)]


def _scores(entries: list[list[str]]) -> np.ndarray:
    return np.array([amhart_score(e).score for e in entries])


def _half(low: float, high: float) -> float:
    return (high - low) / 2


def test_a_chatbots_own_interval_of_a_mean_is_the_one_sample_t_interval() -> None:
    rng = np.random.default_rng(11)
    entries = _amhart_entries(rng, 0.6)
    units = [Unit("A", i, judge=e) for i, e in enumerate(entries)]  # every conversation a cluster of its own
    own = compare_chatbots(units, score="amhart", method="judge_only", n_resamples=LONG, seed=SEED, min_clusters=2).scores[0]
    student = scipy_stats.ttest_1samp(_scores(entries), 0.0).confidence_interval(0.95)
    assert own.estimate == pytest.approx(_scores(entries).mean())
    assert _half(own.low, own.high) == pytest.approx(_half(student.low, student.high), rel=0.02)
    # The percentile interval (the leaderboard's before) is about z / t_11 sqrt(11/12) = 0.85 of it: it fails the check.
    percentile = scipy_stats.bootstrap((_scores(entries),), np.mean, n_resamples=LONG, method="percentile",
                                       rng=np.random.default_rng(SEED)).confidence_interval
    assert _half(percentile.low, percentile.high) < 0.9 * _half(student.low, student.high)


def test_a_paired_difference_of_means_is_the_paired_t_interval() -> None:
    rng = np.random.default_rng(12)
    a, b = _amhart_entries(rng, 0.7), _amhart_entries(rng, 0.5)
    units = [Unit("A", i, judge=e) for i, e in enumerate(a)] + [Unit("B", i, judge=e) for i, e in enumerate(b)]
    pair = compare_chatbots(units, score="amhart", method="judge_only", n_resamples=LONG, seed=SEED, min_clusters=2).pairs[0]
    first, second = (_scores(a), _scores(b)) if pair.a == "A" else (_scores(b), _scores(a))
    test = scipy_stats.ttest_rel(first, second)
    student = test.confidence_interval(0.95)
    assert pair.design == "paired" and pair.df == N_MEANS - 1
    assert pair.difference == pytest.approx((first - second).mean())
    assert _half(pair.low, pair.high) == pytest.approx(_half(student.low, student.high), rel=0.02)
    assert pair.p_value == pytest.approx(test.pvalue, rel=0.1)


def test_an_unpaired_difference_of_means_is_welchs_t_interval() -> None:
    rng = np.random.default_rng(13)
    a, b = _amhart_entries(rng, 0.8), _amhart_entries(rng, 0.4)[:8]  # unequal sizes and spreads
    units = [Unit("A", None, judge=e) for e in a] + [Unit("B", None, judge=e) for e in b]  # nothing pairs them
    pair = compare_chatbots(units, score="amhart", method="judge_only", n_resamples=LONG, seed=SEED, min_clusters=2).pairs[0]
    first, second = (_scores(a), _scores(b)) if pair.a == "A" else (_scores(b), _scores(a))
    welch = scipy_stats.ttest_ind(first, second, equal_var=False)
    student = welch.confidence_interval(0.95)
    assert pair.design == "unpaired"
    assert pair.df == pytest.approx(welch.df, rel=0.02)
    assert _half(pair.low, pair.high) == pytest.approx(_half(student.low, student.high), rel=0.02)
    assert pair.p_value == pytest.approx(welch.pvalue, rel=0.1)


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
