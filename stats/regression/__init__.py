"""Item-level logistic regression with the AMHART specification, in two named variants.

Outcome: an item passed (1: label yes) or failed (0: label no); N/A items are left out.
Fixed effects: chatbot (reference level chosen by the caller), diagnosis, severity, sex. A
factor with a single level cannot be estimated: it is left out and the result says so.

``method="mixed"`` (default; AMHART's model): random intercepts for item (item difficulty) and
conversation index (run index). Estimator: statsmodels' ``BinomialBayesMixedGLM``, posterior
mode of a logistic GLMM with independent Gaussian random intercepts and vague priors
(fixed-effect prior SD 10 on the log-odds scale, variance-component log-SD prior SD 1),
found by Newton-CG (BFGS when Newton-CG stops short) from fixed starting values (every fixed
effect, log-SD and random effect 0): two fits of the same rows give identical results,
whatever their order. A random intercept whose SD collapses to 0 at the mode (the joint mode's
"funnel": the data show no variation between its levels, and the SD is then set by the prior)
is left out and the model refitted; with none left, the fixed effects are fitted alone by
maximum likelihood. Standard errors
come from the Laplace approximation at the mode (the inverse Hessian, as ``fit_map``); odds
ratios, Wald 95% intervals and two-sided p-values follow. This approximates the maximum
likelihood of Stata's ``melogit`` that AMHART reports. A random intercept whose grouping has a
single level is left out: the result names the model actually fitted.

``method="cluster_robust"``: the robust standard errors AMHART specified ("we specified robust
standard errors"; the paper does not name the clustering variable). A logistic regression
(statsmodels ``GLM``, binomial, logit link, maximum likelihood) with the same fixed effects
and item as fixed effects (item difficulty), standard errors cluster-robust by conversation
(sandwich, statsmodels' CR1 factor G/(G-1)·(N-1)/(N-K)): valid however the items of a
conversation are correlated. Odds ratios are then population-averaged over conversations
(conditional on item), not conditional on a conversation's random intercept as in the mixed
model, so they are typically a little closer to 1.

Data that cannot support a fit (one outcome throughout, no yes/no label, a level that always
passes or always fails under maximum likelihood, fewer than 2 conversations for clustering)
raise :class:`CannotFit` with the reason in words. Pure: no Django import.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from .common import (
    ESTIMATOR,
    FIXED,
    METHODS,
    MIXED_ESTIMATOR,
    ROBUST_ESTIMATOR,
    CannotFit,
    Method,
    OddsRatio,
    RegressionResult,
)
from .mixed import _mixed
from .robust import _cluster_robust

__all__ = [
    "ESTIMATOR",
    "FIXED",
    "METHODS",
    "MIXED_ESTIMATOR",
    "ROBUST_ESTIMATOR",
    "CannotFit",
    "Method",
    "OddsRatio",
    "RegressionResult",
    "item_regression",
]


def item_regression(
    rows: pd.DataFrame | Sequence[dict],
    *,
    references: dict[str, str] | None = None,
    random: Sequence[str] = ("item", "run"),
    method: Method = "mixed",
) -> RegressionResult:
    """Fit the AMHART item-level model (``method``: "mixed" or "cluster_robust"; see the module).

    ``rows`` has columns ``label`` (yes/no/N/A), ``chatbot``, ``diagnosis``, ``severity``,
    ``sex``, ``item``, ``run`` (the conversation/run index) and, for "cluster_robust",
    ``conversation`` (the cluster). ``references`` names the reference level of each fixed
    factor (default: the first level in sorted order). Raises :class:`CannotFit` when the data
    cannot support the model, ValueError for a missing column or an unknown reference level.
    """
    if method not in METHODS:
        raise ValueError(f"method must be one of {', '.join(METHODS)}")
    if method == "cluster_robust":
        return _cluster_robust(rows, references)
    return _mixed(rows, references, tuple(random))
