"""PPI++ with a cross-fitted λ (stats.ppi.engine, ``tuning="cross-fit"``): what the judge-assisted report draws."""

from __future__ import annotations

import numpy as np
import pytest
from ppi_py import ppi_mean_pointestimate
from scipy import stats as scipy_stats

from stats.data import StatsInputError
from stats.ppi import engine, ppi_mean, ppi_vera_mh_score
from stats.ppi.inputs import make_sample


def _data(seed: int, n: int = 40, m: int = 300) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.6).astype(float)
    f = np.where(rng.random(n) < 0.2, 1 - y, y)
    fu = (rng.random(m) < 0.65).astype(float)
    return y, f, fu


def _ppi_py_lambda(y: np.ndarray, f: np.ndarray, fu: np.ndarray) -> float:
    """ppi_py's tuned λ, read back from its point estimate θ = λ·mean(fu) + mean(y - λf)."""
    theta = float(np.ravel(ppi_mean_pointestimate(y, f, fu, lam=None))[0])
    return (theta - y.mean()) / (fu.mean() - f.mean())


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_each_conversations_lambda_is_ppi_pys_lambda_computed_without_it(seed: int) -> None:
    y, f, fu = _data(seed)
    d = make_sample(y[:, None], f[:, None], fu[:, None], None, None)
    lams = engine._loo_lambdas(d, np.ones(1))
    keep = np.ones(y.size, dtype=bool)
    for i in range(y.size):
        keep[i] = False
        assert lams[i] == pytest.approx(np.clip(_ppi_py_lambda(y[keep], f[keep], fu), 0, 1), abs=1e-10)
        keep[i] = True


def test_the_vectorised_lambdas_equal_the_formula_on_each_smaller_sample_under_a_plan() -> None:
    rng = np.random.default_rng(5)
    y, f, fu = _data(5)
    pi, pi_u = rng.uniform(0.05, 0.5, y.size), rng.uniform(0.05, 0.5, fu.size)
    d = make_sample(y[:, None], f[:, None], fu[:, None], pi, pi_u)
    lams = engine._loo_lambdas(d, np.ones(1))
    keep = np.ones(y.size, dtype=bool)
    for i in range(y.size):
        keep[i] = False
        assert lams[i] == pytest.approx(engine._tuned_lambda(engine._without(d, keep), np.ones(1), "unlabeled"))
        keep[i] = True


def test_the_estimate_and_its_t_interval_follow_the_formula() -> None:
    y, f, fu = _data(7)
    n = y.size
    d = make_sample(y[:, None], f[:, None], fu[:, None], None, None)
    lams = engine._loo_lambdas(d, np.ones(1))
    lam_bar = lams.mean()
    value = lam_bar * fu.mean() + np.mean(y - lams * f)
    var = lam_bar**2 * np.var(fu) / fu.size + np.var(y - lams * f, ddof=1) / n
    half = scipy_stats.t.ppf(0.975, n - 1) * np.sqrt(var)
    result = ppi_mean(y, f, fu, tuned=True, tuning="cross-fit")
    assert result.method == "ppi++_cf" and result.tuning == "cross-fit" and result.ppi.ddof == 1
    assert result.lam == pytest.approx(lam_bar)
    assert result.ppi.estimate == pytest.approx(value)
    assert (result.ppi.low, result.ppi.high) == pytest.approx((value - half, value + half))
    assert "Student t" in result.interval
    # Same-sample tuning stays ppi_py's (the reference tests hold it); the two differ here.
    same = ppi_mean(y, f, fu, tuned=True)
    assert same.method == "ppi++" and same.ppi.estimate != pytest.approx(value)


def test_the_result_does_not_depend_on_the_order_of_the_rows() -> None:
    human = ["Best Practice", "High Potential for Harm", "Suboptimal but Low Potential for Harm", "Not Relevant"] * 10
    rng = np.random.default_rng(3)
    judge = [h if rng.random() < 0.8 else "Best Practice" for h in human]
    unrated = list(rng.choice(human, 200))
    a = ppi_vera_mh_score(human, judge, unrated, tuned=True, tuning="cross-fit")
    order = rng.permutation(len(human))
    b = ppi_vera_mh_score([human[i] for i in order], [judge[i] for i in order], unrated, tuned=True,
                          tuning="cross-fit")
    assert (a.ppi.estimate, a.ppi.low, a.ppi.high) == pytest.approx((b.ppi.estimate, b.ppi.low, b.ppi.high))


def test_two_rated_conversations_use_lambda_one_and_say_so() -> None:
    result = ppi_mean([1.0, 0.0], [1.0, 1.0], [1.0, 0.0, 1.0], tuned=True, tuning="cross-fit")
    assert result.lam == 1.0 and any("at least 3 rated" in n for n in result.notes)


def test_bad_tuning_requests_are_refused() -> None:
    y, f, fu = _data(1)
    with pytest.raises(StatsInputError, match="tuning must be one of"):
        ppi_mean(y, f, fu, tuned=True, tuning="folds")  # type: ignore[arg-type]
    with pytest.raises(StatsInputError, match="judge_term='unlabeled'"):
        ppi_mean(y, f, fu, tuned=True, tuning="cross-fit", judge_term="all")
