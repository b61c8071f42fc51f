"""PPI and PPI++ equal the authors' reference implementation, ppi_py (pip ppi-python).

Data are written for the test (seeded draws and small hand-written label sets). "PPI" is the
estimator of Angelopoulos et al. (Science 2023): ``ppi_mean_pointestimate`` /
``ppi_mean_ci`` with ``lam=1``; "PPI++" is ``lam=None`` (ppi_py's power tuning); humans
only is ``classical_mean_ci``. All of them use ddof 0, and so do we. Scores that are
functions of means (an item's yes-rate, a VERA-MH score) plug ppi_py's PPI estimates of the
means into the formula; their interval is ppi_py's interval of the linearised score (the
delta method).
"""

from __future__ import annotations

import numpy as np
import pytest
from ppi_py import ppi_mean_ci, ppi_mean_pointestimate
from ppi_py.baselines import classical_mean_ci
from ppi_py.ppi import _calc_lam_glm

from stats.ppi import ppi_item_rate, ppi_mean, ppi_vera_mh_score
from stats.ppi.scores import VERA_MH, item_indicators, vera_mh_counts

EXACT = 1e-10  # far inside the 4 decimals the issue asks for

BP, SUB, HPH, NR = (
    "Best Practice",
    "Suboptimal but Low Potential for Harm",
    "High Potential for Harm",
    "Not Relevant",
)


def _data(seed: int, n: int = 60, m: int = 400) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    y = (rng.random(n + m) < 0.55).astype(float)
    judge = np.where(rng.random(n + m) < 0.2, 1 - y, y)
    return y[:n], judge[:n], judge[n:]


def _ci(estimate) -> tuple[float, float]:
    return estimate.low, estimate.high


def _reference_lambda(y: np.ndarray, yhat: np.ndarray, yhat_unl: np.ndarray) -> float:
    """Return λ as ppi_mean_ci(lam=None) computes it (gradients at the λ = 1 estimate)."""
    theta = ppi_mean_pointestimate(y, yhat, yhat_unl, lam=1)
    y2, f2, u2 = y.reshape(-1, 1), yhat.reshape(-1, 1), yhat_unl.reshape(-1, 1)
    return float(_calc_lam_glm(y2 - theta, f2 - theta, u2 - theta, np.eye(1), clip=True))


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("confidence", [0.9, 0.95])
def test_ppi_equals_ppi_py_with_lambda_one(seed: int, confidence: float) -> None:
    y, f, u = _data(seed)
    r = ppi_mean(y, f, u, confidence=confidence)
    assert r.method == "ppi" and r.lam == 1.0 and r.ppi.ddof == 0
    assert r.ppi.estimate == pytest.approx(float(ppi_mean_pointestimate(y, f, u, lam=1)[0]), abs=EXACT)
    low, high = ppi_mean_ci(y, f, u, alpha=1 - confidence, lam=1)
    assert _ci(r.ppi) == pytest.approx((float(low[0]), float(high[0])), abs=EXACT)


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_ppi_plus_plus_equals_ppi_py_power_tuning(seed: int) -> None:
    y, f, u = _data(seed, n=40, m=250)
    r = ppi_mean(y, f, u, tuned=True)
    assert r.method == "ppi++"
    assert r.lam == pytest.approx(_reference_lambda(y, f, u), abs=EXACT)
    assert 0 < r.lam < 1
    assert r.ppi.estimate == pytest.approx(float(ppi_mean_pointestimate(y, f, u, lam=None)[0]), abs=EXACT)
    low, high = ppi_mean_ci(y, f, u, alpha=0.05, lam=None)
    assert _ci(r.ppi) == pytest.approx((float(low[0]), float(high[0])), abs=EXACT)


def test_continuous_scores_match_too() -> None:
    rng = np.random.default_rng(17)
    y = rng.beta(2, 3, 80)
    f = np.clip(y + rng.normal(0.05, 0.15, 80), 0, 1)
    u = np.clip(rng.beta(2, 3, 500) + rng.normal(0.05, 0.15, 500), 0, 1)
    for tuned, lam in ((False, 1), (True, None)):
        r = ppi_mean(y, f, u, tuned=tuned)
        low, high = ppi_mean_ci(y, f, u, alpha=0.05, lam=lam)
        assert _ci(r.ppi) == pytest.approx((float(low[0]), float(high[0])), abs=EXACT)


def test_humans_only_is_the_classical_interval_with_ddof_zero() -> None:
    y, f, u = _data(5)
    r = ppi_mean(y, f, u)
    assert r.human_only.ddof == 0
    assert r.human_only.estimate == pytest.approx(y.mean(), abs=EXACT)
    assert _ci(r.human_only) == pytest.approx(classical_mean_ci(y, alpha=0.05), abs=EXACT)
    # ... which is PPI with λ = 0.
    low, high = ppi_mean_ci(y, f, u, alpha=0.05, lam=0)
    assert _ci(r.human_only) == pytest.approx((float(low[0]), float(high[0])), abs=EXACT)


def test_hand_written_yes_no_labels() -> None:
    # 12 rated (humans, judge) and 20 unrated judge answers, 1 = yes.
    y = np.array([1, 1, 0, 1, 0, 1, 1, 0, 1, 1, 0, 1], dtype=float)
    f = np.array([1, 1, 1, 1, 0, 1, 1, 0, 1, 1, 1, 1], dtype=float)
    u = np.array([1, 1, 1, 0, 1, 1, 1, 1, 0, 1, 1, 1, 0, 1, 1, 1, 1, 0, 1, 1], dtype=float)
    classical, tuned = ppi_mean(y, f, u), ppi_mean(y, f, u, tuned=True)
    for r, lam in ((classical, 1), (tuned, None)):
        assert r.ppi.estimate == pytest.approx(float(ppi_mean_pointestimate(y, f, u, lam=lam)[0]), abs=EXACT)
        low, high = ppi_mean_ci(y, f, u, alpha=0.05, lam=lam)
        assert _ci(r.ppi) == pytest.approx((float(low[0]), float(high[0])), abs=EXACT)
    # By hand: mean of the 20 unrated = 16/20; rectifier mean = (8 - 10)/12 = -1/6.
    assert classical.ppi.estimate == pytest.approx(0.8 - 1 / 6)


def test_weighted_point_estimate_equals_ppi_py_with_its_sample_weights() -> None:
    # Under a sampling plan a rated conversation counts 1/π, an unrated one 1/(1 - π):
    # ppi_py's w and w_unlabeled. Its point estimate is the Hajek mean, as ours.
    y, f, u = _data(8, n=50, m=300)
    rng = np.random.default_rng(8)
    pi, pi_u = rng.uniform(0.05, 0.6, y.size), rng.uniform(0.05, 0.6, u.size)
    r = ppi_mean(y, f, u, inclusion_prob=pi, unlabeled_inclusion_prob=pi_u)
    reference = ppi_mean_pointestimate(y, f, u, lam=1, w=1 / pi, w_unlabeled=1 / (1 - pi_u))
    assert r.ppi.estimate == pytest.approx(float(reference[0]), abs=EXACT)
    assert r.weights.startswith("Hajek")
    # Equal probabilities are no weighting at all: ppi_py's unweighted interval exactly.
    same = ppi_mean(y, f, u, inclusion_prob=np.full(y.size, 0.2), unlabeled_inclusion_prob=np.full(u.size, 0.2))
    low, high = ppi_mean_ci(y, f, u, alpha=0.05, lam=1)
    assert _ci(same.ppi) == pytest.approx((float(low[0]), float(high[0])), abs=EXACT)


def _linearised(grad: np.ndarray, *arrays: np.ndarray) -> list[np.ndarray]:
    return [a @ grad for a in arrays]


def test_item_yes_rate_plugs_ppi_py_means_into_the_ratio_with_a_delta_method_interval() -> None:
    rng = np.random.default_rng(4)
    labels = np.array(["yes", "no", "N/A"])
    human = labels[rng.choice(3, size=300, p=[0.5, 0.3, 0.2])]
    judge = human.copy()
    judge[(human == "no") & (rng.random(300) < 0.3)] = "yes"
    judge[(human == "N/A") & (rng.random(300) < 0.2)] = "no"
    n = 50
    r = ppi_item_rate(list(human[:n]), list(judge[:n]), list(judge[n:]))
    y, f, u = (item_indicators(x, "x") for x in (human[:n], judge[:n], judge[n:]))
    mu = ppi_mean_pointestimate(y, f, u, lam=1)
    assert r.ppi.estimate == pytest.approx(mu[0] / mu[1], abs=EXACT)
    grad = np.array([1 / mu[1], -mu[0] / mu[1] ** 2])
    low, high = ppi_mean_ci(*_linearised(grad, y, f, u), alpha=0.05, lam=1)
    assert r.ppi.width == pytest.approx(float(high[0] - low[0]), abs=EXACT)
    assert r.interval == "normal (Wald), delta method"


@pytest.mark.parametrize("tuned", [False, True])
def test_vera_mh_dimension_score_plugs_ppi_py_means_into_the_score_formula(tuned: bool) -> None:
    # One dimension: a label per conversation. The judge upgrades 40% of Suboptimal to Best
    # Practice and 30% of High Potential for Harm to Suboptimal.
    rng = np.random.default_rng(21)
    labels = np.array([BP, SUB, HPH, NR])
    human = labels[rng.choice(4, size=600, p=[0.4, 0.3, 0.2, 0.1])]
    judge = human.copy()
    judge[(human == SUB) & (rng.random(600) < 0.4)] = BP
    judge[(human == HPH) & (rng.random(600) < 0.3)] = SUB
    n = 80
    r = ppi_vera_mh_score(list(human[:n]), list(judge[:n]), list(judge[n:]), tuned=tuned)
    y, f, u = (vera_mh_counts(list(x), "x") for x in (human[:n], judge[:n], judge[n:]))
    if tuned:  # PPI++'s λ for the linearised score, gradient at the λ = 1 estimate
        grad1 = VERA_MH.gradient(ppi_mean_pointestimate(y, f, u, lam=1))
        lam = _reference_lambda(*_linearised(grad1, y, f, u))
        assert r.lam == pytest.approx(lam, abs=EXACT)
    else:
        lam = 1.0
    mu = ppi_mean_pointestimate(y, f, u, lam=lam)
    assert r.ppi.estimate == pytest.approx(VERA_MH.score(mu), abs=1e-8)
    low, high = ppi_mean_ci(*_linearised(VERA_MH.gradient(mu), y, f, u), alpha=0.05, lam=lam)
    assert r.ppi.width == pytest.approx(float(high[0] - low[0]), abs=1e-8)


def test_the_two_phase_form_is_a_different_estimator_under_its_own_name() -> None:
    # The old default (judge term over every judged conversation) is not the paper's PPI:
    # with simple random sampling it is PPI with λ = (N - n)/N ... on the point estimate.
    y, f, u = _data(9, n=50, m=150)
    r = ppi_mean(y, f, u, judge_term="all")
    assert r.method == "two_phase" and "Two-phase" in r.as_dict()["estimator"]
    lam = u.size / (y.size + u.size)
    assert r.ppi.estimate == pytest.approx(float(ppi_mean_pointestimate(y, f, u, lam=lam)[0]), abs=EXACT)
    assert r.ppi.estimate != pytest.approx(float(ppi_mean_pointestimate(y, f, u, lam=1)[0]), abs=1e-4)
