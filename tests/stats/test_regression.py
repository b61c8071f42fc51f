"""The AMHART item-level mixed-effects regression recovers known effects from simulated data."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from stats.regression import ESTIMATOR, item_regression

TRUE = {"chatbot: B (vs A)": -1.0, "chatbot: C (vs A)": 0.5, "diagnosis: depression (vs anxiety)": -1.4,
        "severity: severe (vs moderate)": -0.7, "sex: male (vs female)": 0.0}


def simulate(seed: int = 3) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    item_effect = rng.normal(0, 1.0, 14)
    run_effect = rng.normal(0, 0.3, 20)
    rows = []
    for chatbot, cb in (("A", 0.0), ("B", -1.0), ("C", 0.5)):
        for diagnosis, dx in (("anxiety", 0.0), ("depression", -1.4)):
            for severity, sv in (("moderate", 0.0), ("severe", -0.7)):
                for sex in ("female", "male"):
                    for run in range(20):
                        for item in range(14):
                            eta = 1.2 + cb + dx + sv + item_effect[item] + run_effect[run]
                            passed = rng.random() < 1 / (1 + math.exp(-eta))
                            label = "yes" if passed else "no"
                            if item == 13 and rng.random() < 0.5:
                                label = "N/A"
                            rows.append({"label": label, "chatbot": chatbot, "diagnosis": diagnosis, "severity": severity,
                                         "sex": sex, "item": f"i{item}", "run": run})
    return pd.DataFrame(rows)


def test_regression_recovers_the_simulated_odds_ratios():
    result = item_regression(simulate(), references={"chatbot": "A", "diagnosis": "anxiety", "severity": "moderate", "sex": "female"})
    assert result.estimator == ESTIMATOR
    assert result.n_excluded_na > 0
    estimates = {t.term: t for t in result.terms}
    assert set(estimates) == set(TRUE)
    for term, truth in TRUE.items():
        est = estimates[term]
        assert abs(est.log_odds - truth) < 0.2, (term, est.log_odds, truth)
        assert est.ci_low < math.exp(truth) < est.ci_high, term
        assert est.ci_low < est.odds_ratio < est.ci_high
    assert estimates["diagnosis: depression (vs anxiety)"].p_value < 1e-6
    assert estimates["sex: male (vs female)"].p_value > 0.01
    assert 0.6 < result.random_effect_sd["item"] < 1.6


def test_a_single_level_factor_is_left_out_and_said_so():
    frame = simulate()
    frame = frame[frame["sex"] == "female"]
    result = item_regression(frame)
    assert "sex has a single level" in (result.note or "")
    assert not any(t.term.startswith("sex") for t in result.terms)


def test_bad_inputs_say_what_is_wrong():
    with pytest.raises(ValueError, match="missing columns"):
        item_regression([{"label": "yes"}])
    with pytest.raises(ValueError, match="reference level"):
        item_regression(simulate(), references={"chatbot": "Z"})
    empty = item_regression(pd.DataFrame([{"label": "N/A", "chatbot": "A", "diagnosis": "d", "severity": "s", "sex": "f", "item": "1", "run": 1}]))
    assert empty.n_observations == 0 and empty.note
