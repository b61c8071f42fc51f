"""Prediction-powered scores: hand calculations, edge cases, and simulated studies.

The simulated studies use a judge whose bias is known: humans say yes to an item with
probability 0.6; the judge says yes to 25% of the human no's and no to 5% of the human yes's,
so its yes-rate is 0.6 * 0.95 + 0.4 * 0.25 = 0.67 (bias +0.07). The estimand is the
chatbot's true yes-rate 0.6. Seeds are fixed, so every check is deterministic; bands are set
from the Monte Carlo error of a correct method, far from what a wrong method gives.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from stats.data import StatsInputError
from stats.ppi import PPIEstimate, ppi_item_rate, ppi_mean, ppi_ratio
from stats.ppi.inputs import z_value
from stats.sampling import plan_oversample

Z95 = 1.959963984540054
TRUTH = 0.6


# --- hand calculations --------------------------------------------------------------------


def test_two_phase_difference_estimator_by_hand_with_the_judge_term_over_all_judged() -> None:
    # Rated: Y = 1 0 1 1, judge 1 1 1 0; unrated judge: 1 1 0 1 1 0. N = 10 judged in all.
    # Judge mean over all 10 = 7/10 = 0.7. Rectifier R = Y - judge = 0 -1 0 1, mean 0.
    # PPI = 0.7 + 0 = 0.7.
    # s²_Y = var(1 0 1 1) = (3 * 0.0625 + 0.5625)/3 = 0.25; s²_R = (0 + 1 + 0 + 1)/3 = 2/3.
    # Var = s²_Y/N + (1 - n/N) s²_R/n = 0.25/10 + 0.6 * (2/3)/4 = 0.025 + 0.1 = 0.125.
    r = ppi_mean([1, 0, 1, 1], [1, 1, 1, 0], [1, 1, 0, 1, 1, 0], judge_term="all")
    assert r.method == "two_phase" and r.ppi.ddof == 1
    assert r.ppi.estimate == pytest.approx(0.7)
    assert r.ppi.std_error == pytest.approx(math.sqrt(0.125))
    assert r.ppi.low == pytest.approx(0.7 - Z95 * math.sqrt(0.125))
    assert r.ppi.high == pytest.approx(0.7 + Z95 * math.sqrt(0.125))
    assert (r.lam, r.n_labeled, r.n_unlabeled, r.n_total) == (1.0, 4, 6, 10)
    # Human-only (classical, ddof 0, as ppi_py's classical_mean_ci): mean 0.75,
    # var₀ = 0.1875, Var = 0.1875/4.
    assert r.human_only.estimate == pytest.approx(0.75)
    assert r.human_only.std_error**2 == pytest.approx(0.1875 / 4)
    assert r.human_only.ddof == 0
    # Judge-only: 7 ones and 3 zeros, var₀ = 0.21, Var = 0.021 (naive, uncorrected).
    assert r.judge_only.estimate == pytest.approx(0.7)
    assert r.judge_only.std_error == pytest.approx(math.sqrt(0.21 / 10))
    assert "ignores judge error" in (r.judge_only.note or "")
    # What the judges buy: σ²_Y / Var = 0.1875 / 0.125 = 1.5 human ratings' worth.
    assert r.effective_n == pytest.approx(1.5)
    assert r.correction == pytest.approx(0.0)


def test_classical_ppi_by_hand_in_the_papers_form() -> None:
    # The default, the paper's PPI: mean(unrated judge) + mean(R) = 4/6 + 0 = 0.6667.
    # Var = var₀(1 1 0 1 1 0)/6 + var₀(R)/4 = (2/9)/6 + (1/2)/4 (ddof 0, as ppi_py).
    r = ppi_mean([1, 0, 1, 1], [1, 1, 1, 0], [1, 1, 0, 1, 1, 0])
    assert r.method == "ppi" and r.judge_term == "unlabeled" and r.ppi.ddof == 0
    assert r.ppi.estimate == pytest.approx(4 / 6)
    assert r.ppi.std_error**2 == pytest.approx(2 / 54 + 1 / 8)
    assert r.human_only.std_error**2 == pytest.approx(0.1875 / 4)


def test_power_tuned_ppi_by_hand() -> None:
    # Y = 1 0 1 1 0 (mean 0.6), judge 1 0 1 0 0 (mean 0.4); unrated judge 1 1 0 1 0.
    # Deviations Y: .4 -.6 .4 .4 -.6; judge: .6 -.4 .6 -.4 -.4.
    # Sum of products = .24 + .24 + .24 - .16 + .24 = 0.8; sum of judge squares = 1.2.
    y, f_lab, f_unl = [1, 0, 1, 1, 0], [1, 0, 1, 0, 0], [1, 1, 0, 1, 0]
    # Two-phase (judge term over all): lambda = cov/var = 0.8/1.2 = 2/3.
    # Judge mean over all 10 = 5/10. R = Y - 2/3 judge = 1/3 0 1/3 1 0, mean 1/3.
    # PPI++ = 2/3 * 0.5 + 1/3 = 2/3. s²_Y = 0.3; s²_R = (0 + 1/9 + 0 + 4/9 + 1/9)/4 = 1/6.
    # Var = 0.3/10 + (1 - 5/10) (1/6)/5 = 0.03 + 1/60.
    r = ppi_mean(y, f_lab, f_unl, tuned=True, judge_term="all")
    assert r.lam == pytest.approx(2 / 3)
    assert r.ppi.method == "two_phase_tuned"
    assert r.ppi.estimate == pytest.approx(2 / 3)
    assert r.ppi.std_error**2 == pytest.approx(0.03 + 1 / 60)
    # The paper's form (PPI++, mean estimation; as ppi_py): lambda = cov₀ / ((1 + n/N') var₁),
    # cov₀ = 0.8/5 = 0.16 on the rated, var₁ over all 10 judge scores (5 ones) = 10 * .25/9.
    # lambda = 0.16 / (2 * 0.27778) = 0.288. PPI++ = 0.288 * 0.6 + (0.6 - 0.288 * 0.4) = 0.6576.
    # Var = 0.288² var₀(1 1 0 1 0)/5 + var₀(.712 0 .712 1 0)/5; var₀ of the second is
    # (2 * .712² + 1)/5 - .4848² = 0.167747.
    r = ppi_mean(y, f_lab, f_unl, tuned=True)
    assert r.method == "ppi++"
    assert r.lam == pytest.approx(0.288)
    assert r.ppi.estimate == pytest.approx(0.6576)
    second = (2 * 0.712**2 + 1) / 5 - 0.4848**2
    assert r.ppi.std_error**2 == pytest.approx(0.288**2 * 0.24 / 5 + second / 5)


def test_inverse_probability_weighted_ppi_by_hand() -> None:
    # Rated Y = 1 0 1, judge 1 1 0, pi = .5 .5 .25 (w = 2 2 4); unrated judge 1 0 1 1 0.
    # Judge mean over all 8 = 5/8. R = 0 -1 1, Hajek mean (0 - 2 + 4)/8 = 0.25. PPI = 0.875.
    # Phase 1: Hajek mean of Y = 6/8 = .75; sum w (Y - .75)² = 2(.0625) + 2(.5625) + 4(.0625)
    #   = 1.5; s²_Y = 1.5/8 * 3/2 = 0.28125; / N = 0.03515625.
    # Phase 2: e = R - .25 = -.25 -1.25 .75; a = (1 - pi) w² = 2 2 12;
    #   sum a e² = .125 + 3.125 + 6.75 = 10; * 3/2 / 8² = 0.234375.
    r = ppi_mean(
        [1, 0, 1], [1, 1, 0], [1, 0, 1, 1, 0], inclusion_prob=[0.5, 0.5, 0.25], judge_term="all"
    )
    assert r.weighted
    assert r.ppi.estimate == pytest.approx(0.875)
    assert r.ppi.std_error**2 == pytest.approx(0.03515625 + 0.234375)
    # Human-only: the Hajek mean 0.75 with its linearised variance Σ w̃² (Y - .75)², w̃ = w/8
    # = .25 .25 .5: .0625 * .0625 + .0625 * .5625 + .25 * .0625 = 0.0546875.
    assert r.human_only.estimate == pytest.approx(0.75)
    assert r.human_only.std_error**2 == pytest.approx(0.0546875)
    assert r.judge_only.estimate == pytest.approx(5 / 8)


def test_equal_inclusion_probabilities_give_the_unweighted_estimate() -> None:
    rng = np.random.default_rng(3)
    y, f = rng.random(40), rng.random(40)
    unl = rng.random(160)
    plain = ppi_mean(y, f, unl)
    weighted = ppi_mean(y, f, unl, inclusion_prob=np.full(40, 40 / 200))
    assert weighted.ppi.estimate == pytest.approx(plain.ppi.estimate)
    assert weighted.ppi.std_error == pytest.approx(plain.ppi.std_error)


def test_simple_random_variance_equals_the_papers_terms_plus_their_covariance() -> None:
    # s²_Y/N + (1 - n/N) s²_R/n against var(Ŷ_all)/N + var(R)/n + 2 cov(Ŷ, R)/N, which agree
    # in expectation; on a large sample they agree closely.
    rng = np.random.default_rng(11)
    n_total, n = 20_000, 2_000
    y = (rng.random(n_total) < 0.6).astype(float)
    f = np.where(rng.random(n_total) < 0.15, 1 - y, y)
    resid = y[:n] - f[:n]
    r = ppi_mean(y[:n], f[:n], f[n:], judge_term="all")
    paper = np.var(f, ddof=1) / n_total + np.var(resid, ddof=1) / n
    paper += 2 * np.cov(f[:n], resid)[0, 1] / n_total
    assert r.ppi.std_error**2 == pytest.approx(paper, rel=0.03)


def test_two_phase_power_tuning_never_widens_the_interval_over_lambda_one() -> None:
    rng = np.random.default_rng(5)
    for _ in range(50):
        n, m = int(rng.integers(5, 60)), int(rng.integers(0, 300))
        y = rng.random(n)
        f = np.clip(y * rng.uniform(-1, 2) + rng.normal(0, rng.uniform(0.01, 1), n), 0, 1)
        unl = rng.random(m)
        tuned = ppi_mean(y, f, unl, tuned=True, judge_term="all")
        classical = ppi_mean(y, f, unl, judge_term="all")
        assert 0 <= tuned.lam <= 1
        assert tuned.ppi.std_error <= classical.ppi.std_error + 1e-12


def test_confidence_level_sets_the_quantile() -> None:
    r = ppi_mean([1, 0, 1, 1], [1, 1, 1, 0], [1, 1, 0, 1, 1, 0], confidence=0.9)
    assert r.ppi.high - r.ppi.estimate == pytest.approx(1.6448536269514722 * r.ppi.std_error)
    assert z_value(0.95) == pytest.approx(Z95)


def test_result_is_json_ready() -> None:
    d = ppi_mean([1, 0, 1, 1], [1, 1, 1, 0], [1, 1, 0, 1, 1, 0]).as_dict()
    assert d["ppi"]["estimate"] == pytest.approx(4 / 6)
    assert set(d) >= {"judge_only", "human_only", "lam", "effective_n", "notes", "ddof", "weights"}
    assert d["estimator"] == "Prediction-powered inference (PPI)" and d["ddof"] == 0
    assert "Science" in d["reference"]


# --- edge cases ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "kwargs", "message"),
    [
        (([1, 0], [1], [0, 1]), {}, "same length"),
        (([1, 0], [1, 0], [0, 1]), {"inclusion_prob": [0.5]}, "1 entries for 2"),
        (([1, 0], [1, 0], [0, 1]), {"inclusion_prob": [0.5, 0]}, r"\(0, 1\]"),
        (([1, 0], [1, 0], [0, 1]), {"inclusion_prob": [0.5, 1.5]}, r"\(0, 1\]"),
        (([1, 0], [1, 0], [0, 1]), {"inclusion_prob": [0.5, None]}, "missing"),
        (([1, "yes"], [1, 0], [0, 1]), {}, "not a number"),
        (([1, math.inf], [1, 0], [0, 1]), {}, "infinite"),
        (([1, 0], [1, 0], [0, 1]), {"confidence": 1.0}, "confidence"),
        (([1, 0], [1, 0], [0, 1]), {"judge_term": "some"}, "judge_term"),
        (
            ([1, 0], [1, 0], [0, 1, 1]),
            {"inclusion_prob": [0.5, 0.25]},
            "unlabeled_inclusion_prob",
        ),
        (
            ([1, 0], [1, 0], [0, 1]),
            {"inclusion_prob": [0.5, 0.5], "unlabeled_inclusion_prob": [0.5, 1.0]},
            "probability 1",
        ),
    ],
)
def test_bad_input_is_rejected_with_a_clear_message(
    args: tuple, kwargs: dict, message: str
) -> None:
    with pytest.raises(StatsInputError, match=message):
        ppi_mean(*args, **kwargs)


def test_missing_scores_are_dropped_and_counted() -> None:
    r = ppi_mean([1, 0, None, 1, 1], [1, 1, 1, float("nan"), 0], [1, None, 1, 0, 1, 1, 0])
    clean = ppi_mean([1, 0, 1], [1, 1, 0], [1, 1, 0, 1, 1, 0])
    assert (r.n_dropped_labeled, r.n_dropped_unlabeled) == (2, 1)
    assert r.ppi.estimate == pytest.approx(clean.ppi.estimate)
    assert any("left out" in note for note in r.notes)


def test_too_few_rated_conversations_say_why_and_keep_the_judges_only_estimate() -> None:
    r = ppi_mean([1, None, None], [1, 0, 1], [0, 1])
    assert r.n_labeled == 1
    for est in (r.ppi, r.human_only):
        assert est.low is None and est.high is None and est.std_error is None
        assert "cannot be estimated: only 1 rated conversation" in (est.cannot_estimate or "")
    assert r.judge_only.estimate == pytest.approx(2 / 3)  # the kept rated one and 2 unrated
    assert r.judge_only.low is not None
    nobody = ppi_mean([], [], [0, 1, 1])
    assert nobody.ppi.estimate is None and nobody.human_only.estimate is None
    assert "no clinician rated" in (nobody.ppi.cannot_estimate or "")
    assert nobody.judge_only.estimate == pytest.approx(2 / 3)


def test_tuning_falls_back_to_classical_ppi_when_the_judge_never_varies() -> None:
    r = ppi_mean([1, 0, 1], [1, 1, 1], [1, 1, 1, 1], tuned=True)
    assert r.lam == 1.0
    assert any("power tuning undefined" in note for note in r.notes)
    assert r.ppi.estimate == pytest.approx(
        ppi_mean([1, 0, 1], [1, 1, 1], [1, 1, 1, 1]).ppi.estimate
    )


def test_census_of_rated_conversations_leaves_ppi_nothing_to_add() -> None:
    # Every judged conversation rated (no unrated one): the two-phase estimator is the human
    # mean whatever the judge; the paper's PPI has no unrated conversation and says so.
    r = ppi_mean([1, 0, 1, 1], [0, 0, 1, 0], [], tuned=True, judge_term="all")
    assert r.ppi.estimate == pytest.approx(0.75)
    assert r.ppi.std_error**2 == pytest.approx(0.25 / 4)
    paper = ppi_mean([1, 0, 1, 1], [0, 0, 1, 0], [], tuned=True)
    assert "nothing for the judges to add" in (paper.ppi.cannot_estimate or "")
    assert paper.human_only.estimate == pytest.approx(0.75)


def test_few_rated_conversations_are_flagged() -> None:
    r = ppi_mean([1, 0, 1, 1], [1, 1, 1, 0], [1, 1, 0])
    assert any("only 4 rated" in note for note in r.notes)


# --- ratios -------------------------------------------------------------------------------


def test_ratio_by_hand() -> None:
    # Yes-rate among applicable: A = yes, B = applicable.
    # Rated human A = 1 0 0 1, B = 1 1 0 1; judge A = 1 1 0 1, B = 1 1 0 1;
    # unrated judge A = 1 0 1 0, B = 1 1 1 0. N = 8.
    # Judge means over all 8: A 5/8, B 6/8. Rectifiers: A 0 -1 0 0 (mean -1/4), B 0 0 0 0.
    # PPI means: A = 5/8 - 1/4 = 3/8, B = 6/8; ratio = 0.5.
    # Delta method: gradient of A/B at (3/8, 6/8) is (1/B, -A/B²) = (4/3, -2/3), so the
    # linearised human score z = 4/3 A - 2/3 B = 2/3 -2/3 0 2/3 (mean 1/6) and the judge's
    # 2/3 2/3 0 2/3. s²_z = (1/4 + 25/36 + 1/36 + 1/4)/3 = 11/27; z - zhat = 0 -4/3 0 0,
    # s² = (1/9 + 1 + 1/9 + 1/9)/3 = 4/9. Var = (11/27)/8 + (1 - 4/8)(4/9)/4 = 23/216.
    r = ppi_ratio(
        [1, 0, 0, 1], [1, 1, 0, 1], [1, 1, 0, 1], [1, 1, 0, 1], [1, 0, 1, 0], [1, 1, 1, 0],
        judge_term="all",
    )
    assert r.ppi.estimate == pytest.approx(0.5)
    assert r.ppi.std_error**2 == pytest.approx(23 / 216)
    assert r.human_only.estimate == pytest.approx(2 / 3)
    assert r.judge_only.estimate == pytest.approx(5 / 6)


def test_ratio_with_nothing_applicable_is_undefined() -> None:
    r = ppi_ratio([0, 0], [0, 0], [0, 0], [0, 0], [0, 0], [0, 0])
    assert r.ppi.estimate is None
    assert "not positive" in (r.ppi.note or "")
    assert r.effective_n is None


# --- simulated studies ----------------------------------------------------------------------


def _biased_judge(rng: np.random.Generator, size: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    y = (rng.random(size) < TRUTH).astype(float)
    flip = np.where(y == 1, rng.random(size) < 0.05, rng.random(size) < 0.25)
    return y, np.where(flip, 1 - y, y)


def _simulate(
    n_studies: int, n: int, n_total: int, seed: int, **kwargs: object
) -> list[PPIEstimate]:
    rng = np.random.default_rng(seed)
    y, f = _biased_judge(rng, (n_studies, n_total))
    out = []
    for s in range(n_studies):
        rated = np.zeros(n_total, dtype=bool)
        rated[rng.choice(n_total, size=n, replace=False)] = True
        out.append(ppi_mean(y[s, rated], f[s, rated], f[s, ~rated], **kwargs))
    return out


def _coverage(estimates: list, truth: float = TRUTH) -> float:
    return float(np.mean([e.covers(truth) for e in estimates]))


@pytest.fixture(scope="module")
def classical_studies() -> list[PPIEstimate]:
    return _simulate(200, 100, 2000, seed=2024)


@pytest.fixture(scope="module")
def tuned_studies() -> list[PPIEstimate]:
    return _simulate(200, 100, 2000, seed=2024, tuned=True)


def _mean_and_mc_error(values: list[float]) -> tuple[float, float]:
    arr = np.asarray(values)
    return float(arr.mean()), float(arr.std(ddof=1) / math.sqrt(arr.size))


def test_ppi_is_unbiased_where_the_judge_only_estimate_is_not(
    classical_studies: list[PPIEstimate], tuned_studies: list[PPIEstimate]
) -> None:
    for studies in (classical_studies, tuned_studies):
        mean, mc = _mean_and_mc_error([r.ppi.estimate for r in studies])
        assert abs(mean - TRUTH) < 4 * mc  # mc is about 0.0025
        judge, _ = _mean_and_mc_error([r.judge_only.estimate for r in studies])
        assert judge - TRUTH == pytest.approx(0.07, abs=0.01)  # the judge's known bias


def test_ppi_intervals_cover_at_the_nominal_rate(
    classical_studies: list[PPIEstimate], tuned_studies: list[PPIEstimate]
) -> None:
    # 200 studies: a correct 95% interval covers 190 +- 3 (binomial sd); [0.90, 0.99] is
    # more than 3 sd either side. The full 1,000-study figures: bench/ppi_coverage.py.
    for r in (classical_studies, tuned_studies):
        assert 0.90 <= _coverage([s.ppi for s in r]) <= 0.99
        assert 0.90 <= _coverage([s.human_only for s in r]) <= 0.99


def test_intervals_that_ignore_judge_error_fail_the_coverage_band(
    classical_studies: list[PPIEstimate],
) -> None:
    assert _coverage([s.judge_only for s in classical_studies]) < 0.05
    # The PPI estimate with only the judge term's variance (the rectifier's forgotten) is far
    # too narrow: the band above would catch it.
    naive = [abs(s.ppi.estimate - TRUTH) <= Z95 * s.judge_only.std_error for s in classical_studies]
    assert np.mean(naive) < 0.8


def test_ppi_intervals_are_narrower_than_human_only_ones(
    classical_studies: list[PPIEstimate], tuned_studies: list[PPIEstimate]
) -> None:
    human = np.mean([s.human_only.width for s in classical_studies])
    classical = np.mean([s.ppi.width for s in classical_studies])
    tuned = np.mean([s.ppi.width for s in tuned_studies])
    assert tuned <= classical < human
    assert np.mean([s.effective_n for s in classical_studies]) > 150  # from 100 ratings


def test_papers_form_is_unbiased_and_covers_too() -> None:
    studies = _simulate(200, 100, 2000, seed=7, judge_term="unlabeled", tuned=True)
    mean, mc = _mean_and_mc_error([r.ppi.estimate for r in studies])
    assert abs(mean - TRUTH) < 4 * mc
    assert 0.90 <= _coverage([s.ppi for s in studies]) <= 0.99


def _oversampled_studies(n_studies: int, seed: int, paper: bool = True) -> tuple[list, list]:
    # The ensemble's disagreement flag is raised on 70% of the conversations the judge gets
    # wrong and 10% of the others; flagged conversations are 4 times as likely to be rated.
    n_total, n = 2000, 100
    rng = np.random.default_rng(seed)
    y, f = _biased_judge(rng, (n_studies, n_total))
    weighted, unweighted = [], []
    ids = list(range(n_total))
    for s in range(n_studies):
        wrong = y[s] != f[s]
        flags = np.where(wrong, rng.random(n_total) < 0.7, rng.random(n_total) < 0.1)
        plan = plan_oversample(ids, flags.tolist(), n, rng, boost=4.0)
        rated = np.zeros(n_total, dtype=bool)
        rated[list(plan.selected)] = True
        pi = np.array([plan.inclusion_prob[i] for i in ids])
        args = (y[s, rated], f[s, rated], f[s, ~rated])
        weights = {"inclusion_prob": pi[rated], "unlabeled_inclusion_prob": pi[~rated]}
        weighted.append(ppi_mean(*args, **(weights if paper else {"inclusion_prob": pi[rated]}),
                                 judge_term="unlabeled" if paper else "all"))
        unweighted.append(ppi_mean(*args, judge_term="unlabeled" if paper else "all"))
    return weighted, unweighted


@pytest.mark.parametrize("paper", [True, False], ids=["ppi", "two_phase"])
def test_oversampling_disagreements_stays_unbiased_only_when_weighted(paper: bool) -> None:
    weighted, unweighted = _oversampled_studies(200, seed=99, paper=paper)
    mean, mc = _mean_and_mc_error([r.ppi.estimate for r in weighted])
    assert abs(mean - TRUTH) < 4 * mc
    assert 0.90 <= _coverage([r.ppi for r in weighted]) <= 0.99
    assert 0.90 <= _coverage([r.human_only for r in weighted]) <= 0.99
    # Unweighted, the rated sample holds too many judge errors: the correction overshoots.
    off, _ = _mean_and_mc_error([r.ppi.estimate for r in unweighted])
    assert off - TRUTH < -0.04
    assert _coverage([r.ppi for r in unweighted]) < 0.85
    # Oversampling the informative conversations pays: narrower than simple random sampling.
    srs = _simulate(200, 100, 2000, seed=99, judge_term="unlabeled" if paper else "all")
    assert np.mean([r.ppi.width for r in weighted]) < np.mean([r.ppi.width for r in srs])


def test_item_rate_with_not_applicable_answers_covers_in_simulation() -> None:
    # Humans: N/A 30%, else yes 60%; the judge calls 10% of N/A's applicable (as no) and
    # turns 25% of no's into yes. True yes-rate among applicable: 0.6.
    rng = np.random.default_rng(8)
    n_total, n, studies = 1500, 120, 200
    covered, estimates = 0, []
    for _ in range(studies):
        na = rng.random(n_total) < 0.3
        yes = rng.random(n_total) < 0.6
        human = np.where(na, "N/A", np.where(yes, "yes", "no"))
        judge = human.copy()
        judge[na & (rng.random(n_total) < 0.1)] = "no"
        judge[(human == "no") & (rng.random(n_total) < 0.25)] = "yes"
        rated = rng.choice(n_total, size=n, replace=False)
        mask = np.zeros(n_total, dtype=bool)
        mask[rated] = True
        r = ppi_item_rate(human[mask].tolist(), judge[mask].tolist(), judge[~mask].tolist())
        covered += r.ppi.covers(0.6)
        estimates.append(r.ppi.estimate)
    assert 0.90 <= covered / studies <= 0.99
    mean, mc = _mean_and_mc_error(estimates)
    assert abs(mean - 0.6) < 4 * mc


def test_a_stratum_rated_in_full_enters_the_judge_term_as_a_certainty_stratum() -> None:
    # Few flagged conversations and a large boost: the plan rates every flagged one (π = 1),
    # so none is left among the unrated. Without them in the judge term, PPI would miss the
    # judge's errors there; with them (weight 1) it stays unbiased and covers.
    rng = np.random.default_rng(31)
    n_total, n, studies = 800, 120, 200
    ids = list(range(n_total))
    estimates = []
    for _ in range(studies):
        y, f = _biased_judge(rng, (n_total,))
        wrong = y != f
        flags = (f == 1) & (rng.random(n_total) < 0.15) & ~wrong  # judge yes and right: ~10%
        plan = plan_oversample(ids, flags.tolist(), n, rng, boost=50.0)
        pi = np.array([plan.inclusion_prob[i] for i in ids])
        assert (pi[flags] == 1).all()
        rated = np.zeros(n_total, dtype=bool)
        rated[list(plan.selected)] = True
        estimates.append(ppi_mean(y[rated], f[rated], f[~rated], inclusion_prob=pi[rated],
                                  unlabeled_inclusion_prob=pi[~rated]).ppi)
    mean, mc = _mean_and_mc_error([e.estimate for e in estimates])
    assert abs(mean - TRUTH) < 4 * mc
    assert 0.90 <= _coverage(estimates) <= 0.99
