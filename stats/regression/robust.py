"""Logistic regression with item fixed effects and standard errors cluster-robust by conversation."""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np
import pandas as pd

from .common import (
    ROBUST_ESTIMATOR,
    CannotFit,
    RegressionResult,
    _fixed_words,
    _prepare,
    _separated,
    _wald,
)


def _cluster_robust(rows: pd.DataFrame | Sequence[dict], references: dict[str, str] | None) -> RegressionResult:
    import statsmodels.api as sm
    import statsmodels.formula.api as smf

    prep = _prepare(rows, references, {"item", "conversation"})
    if prep.frame.empty:
        return RegressionResult(ROBUST_ESTIMATOR, "", 0, prep.n_na, {}, (), {}, "no yes/no labels to model",
                                method="cluster_robust", description="no model fitted: no yes/no labels")
    frame = prep.frame
    terms = list(prep.terms)
    item_levels = sorted(frame["item"].unique())
    if len(item_levels) > 1:
        terms.append("C(item)")
    else:
        prep.dropped.append({"term": "item", "kind": "fixed effect", "reason": f"a single level ({item_levels[0]})"})
        prep.notes.append(f"item has a single level ({item_levels[0]}) and is left out")
    n_clusters = int(frame["conversation"].nunique())
    if n_clusters < 2:
        raise CannotFit(f"cannot compute cluster-robust standard errors: the labels come from {n_clusters} conversation(s); "
                        "clustering needs at least 2 (in practice many more)")
    separated = _separated(frame, [*prep.fixed, *(["item"] if len(item_levels) > 1 else [])])
    if separated:
        raise CannotFit(
            "cannot fit the cluster-robust model: " + "; ".join(separated)
            + ", so its maximum-likelihood odds ratio is infinite (perfect separation). The mixed model keeps it "
            "finite with a prior, or leave that level out"
        )
    formula = "passed ~ " + (" + ".join(terms) if terms else "1")
    codes = pd.factorize(frame["conversation"], sort=True)[0]
    model = smf.glm(formula, frame, family=sm.families.Binomial())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            fit = model.fit(cov_type="cluster", cov_kwds={"groups": codes})
        except (np.linalg.LinAlgError, ValueError) as exc:
            raise CannotFit(f"cannot fit the cluster-robust model: the design is singular ({exc})") from None
    notes: list[str] = []
    if n_clusters < 30:
        notes.append(f"only {n_clusters} conversations: cluster-robust standard errors are unreliable below about 30 clusters")
    odds = [
        _wald(name, fit.params[name], fit.bse[name])
        for name in model.exog_names
        if name != "Intercept" and not name.startswith("C(item)")
    ]
    description = (
        f"logistic regression: outcome item passed (yes) vs failed (no); fixed effects {_fixed_words(prep.fixed)}"
        f"{' and item' if len(item_levels) > 1 else ''}; no random effects; standard errors cluster-robust by "
        f"conversation ({n_clusters} clusters)"
    )
    return RegressionResult(
        ROBUST_ESTIMATOR, formula, int(len(frame)), prep.n_na, prep.used_refs, tuple(odds), {},
        "; ".join([*prep.notes, *notes]) or None, method="cluster_robust", description=description, fixed_effects=tuple(prep.fixed),
        random_intercepts=(), dropped=tuple(prep.dropped),
        covariance="cluster-robust by conversation (sandwich, CR1: G/(G-1)·(N-1)/(N-K))", n_clusters=n_clusters,
        optimizer={"method": "IRLS (statsmodels GLM default)"}, converged=bool(fit.converged), warnings=tuple(notes),
    )
