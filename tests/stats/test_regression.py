"""The AMHART item-level mixed-effects regression recovers known effects from simulated data."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from stats.regression import ESTIMATOR, CannotFit, item_regression

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


# --- issue 18, defect 7: the model fitted is the model described; deterministic; robust SEs ----------

REFS = {"chatbot": "A", "diagnosis": "anxiety", "severity": "moderate", "sex": "female"}


def small(seed: int = 5, runs: int = 6) -> pd.DataFrame:
    """Return simulate()'s design with fewer runs, and each row's conversation (the cluster)."""
    frame = simulate(seed)
    frame = frame[frame["run"] < runs].copy()
    frame["conversation"] = frame[["chatbot", "diagnosis", "severity", "sex", "run"]].astype(str).agg("-".join, axis=1)
    return frame


def test_two_fits_of_the_same_rows_in_any_order_give_identical_results():
    frame = small()
    first = item_regression(frame, references=REFS)
    again = item_regression(frame.sample(frac=1.0, random_state=7), references=REFS)
    assert first.as_dict() == again.as_dict()  # every digit, the optimizer's end state included
    assert first.converged is True and first.note is None
    assert first.optimizer["start"] == "all parameters 0" and first.optimizer["method"] == "Newton-CG"


def test_a_random_intercept_with_a_single_level_is_left_out_and_the_fitted_model_says_so():
    frame = small()
    frame["run"] = 0  # every conversation the first of its cell
    result = item_regression(frame, references=REFS)
    assert result.random_intercepts == ("item",)
    assert "random intercept for item;" in result.description and "run index" not in result.description
    assert "conversation index (run index) was left out: it has a single level (0)" in (result.note or "")
    assert {"term": "run", "kind": "random intercept", "reason": "a single level (0)"} in result.dropped
    assert set(result.random_effect_sd) == {"item"}


def test_labels_that_are_all_the_same_give_a_plain_message_not_a_statsmodels_error():
    frame = small()
    frame.loc[frame["label"] == "no", "label"] = "yes"
    for method in ("mixed", "cluster_robust"):
        with pytest.raises(CannotFit, match="every one of the .* yes/no labels is yes"):
            item_regression(frame, references=REFS, method=method)


def test_the_mixed_fit_is_statsmodels_posterior_mode_reached_from_any_start():
    """Reference: statsmodels' own fit_map (Newton-CG) from random starting values."""
    from statsmodels.genmod.bayes_mixed_glm import BinomialBayesMixedGLM

    frame = small()
    result = item_regression(frame, references=REFS)
    data = frame[frame["label"].isin(["yes", "no"])].copy()
    data["passed"] = (data["label"] == "yes").astype(float)
    data[["item", "run"]] = data[["item", "run"]].astype(str)
    model = BinomialBayesMixedGLM.from_formula(result.formula, {"item": "0 + C(item)", "run": "0 + C(run)"}, data,
                                               vcp_p=1.0, fe_p=10.0)
    ours = {t.term: t for t in result.terms}
    for seed in (1, 2):
        reference = model.fit_map(method="Newton-CG", rng=seed)
        names = model.exog_names
        for name, mean, sd in zip(names, reference.fe_mean, reference.fe_sd, strict=True):
            if name == "Intercept":
                continue
            term = ours[name.split("(", 1)[1].split(",", 1)[0] + ": " + name.split("[T.", 1)[1].rstrip("]") + " (vs "
                        + REFS[name.split("(", 1)[1].split(",", 1)[0]] + ")"]
            assert term.log_odds == pytest.approx(mean, abs=1e-4)
            assert term.se == pytest.approx(sd, rel=1e-3)
        for vn, m in zip(model.vcp_names, reference.vcp_mean, strict=True):
            assert result.random_effect_sd[vn] == pytest.approx(math.exp(m), rel=1e-3)


def test_cluster_robust_errors_equal_statsmodels_logit_and_the_sandwich_by_hand():
    import statsmodels.formula.api as smf

    frame = small()
    result = item_regression(frame, references=REFS, method="cluster_robust")
    assert result.method == "cluster_robust" and result.n_clusters == frame["conversation"].nunique()
    assert "cluster-robust by conversation" in result.covariance and "random" not in result.covariance
    data = frame[frame["label"].isin(["yes", "no"])].copy()
    data["passed"] = (data["label"] == "yes").astype(float)
    groups = pd.factorize(data["conversation"])[0]
    logit = smf.logit(result.formula, data).fit(disp=0, cov_type="cluster", cov_kwds={"groups": groups})
    ours = {t.term: t for t in result.terms}
    for factor, level in (("chatbot", "B"), ("chatbot", "C"), ("diagnosis", "depression"), ("severity", "severe"), ("sex", "male")):
        name = f"C({factor}, Treatment(reference={REFS[factor]!r}))[T.{level}]"
        term = ours[f"{factor}: {level} (vs {REFS[factor]})"]
        assert term.log_odds == pytest.approx(logit.params[name], abs=1e-6)
        assert term.se == pytest.approx(logit.bse[name], rel=1e-6)
    # The sandwich by hand: bread (X'WX)^-1, meat = sum over conversations of (sum of x_i (y_i - p_i))^2,
    # CR1 factor G/(G-1)·(N-1)/(N-K).
    x = logit.model.exog
    p = logit.predict()
    score = x * (data["passed"].to_numpy() - p)[:, None]
    per_cluster = np.zeros((groups.max() + 1, x.shape[1]))
    np.add.at(per_cluster, groups, score)
    bread = np.linalg.inv((x * (p * (1 - p))[:, None]).T @ x)
    n, k, g = x.shape[0], x.shape[1], per_cluster.shape[0]
    cov = bread @ (per_cluster.T @ per_cluster) @ bread * g / (g - 1) * (n - 1) / (n - k)
    i = logit.model.exog_names.index("C(diagnosis, Treatment(reference='anxiety'))[T.depression]")
    assert ours["diagnosis: depression (vs anxiety)"].se == pytest.approx(math.sqrt(cov[i, i]), rel=1e-6)


def test_the_cluster_robust_model_recovers_the_simulated_effects():
    result = item_regression(simulate().assign(conversation=lambda f: f[["chatbot", "diagnosis", "severity", "sex", "run"]]
                                               .astype(str).agg("-".join, axis=1)), references=REFS, method="cluster_robust")
    estimates = {t.term: t for t in result.terms}
    for term, truth in TRUE.items():
        assert abs(estimates[term].log_odds - truth) < 0.25, term


def test_a_level_that_always_passes_cannot_be_fitted_by_maximum_likelihood_and_says_why():
    frame = small()
    frame.loc[frame["chatbot"] == "C", "label"] = "yes"
    with pytest.raises(CannotFit, match="chatbot C passes every item.*perfect separation"):
        item_regression(frame, references=REFS, method="cluster_robust")
    mixed = item_regression(frame, references=REFS)  # the prior keeps it finite, and the note says so
    assert "chatbot C passes every item: its odds ratio rests on the prior" in (mixed.note or "")


def test_a_variance_the_labels_cannot_estimate_collapses_and_the_model_is_refitted_without_it():
    """96 labels of 12 items: the joint posterior mode puts both SDs at its funnel point; said, and refitted."""
    rng = np.random.default_rng(1)
    rows = [{"label": "yes" if rng.random() < (0.7 if chatbot == "A" else 0.35) else "no", "chatbot": chatbot,
             "diagnosis": "anxiety", "severity": "moderate", "sex": "female", "item": f"i{item}", "run": run}
            for chatbot in ("A", "B") for run in range(4) for item in range(12)]
    result = item_regression(rows)
    assert result.random_intercepts == () and result.random_effect_sd == {}
    assert result.description.startswith("logistic regression without random effects (none could be estimated)")
    reasons = {d["term"]: d["reason"] for d in result.dropped if d["kind"] == "random intercept"}
    assert set(reasons) == {"item", "run"} and all("collapsed to 0" in r for r in reasons.values())
    # The fixed effects are then the maximum-likelihood logistic regression's.
    import statsmodels.formula.api as smf

    frame = pd.DataFrame(rows).assign(passed=lambda f: (f["label"] == "yes").astype(float))
    reference = smf.logit("passed ~ C(chatbot, Treatment(reference='A'))", frame).fit(disp=0)
    assert result.terms[0].log_odds == pytest.approx(reference.params.iloc[1], abs=1e-6)
    assert result.terms[0].se == pytest.approx(reference.bse.iloc[1], rel=1e-5)
