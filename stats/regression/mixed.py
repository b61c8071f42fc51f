"""The mixed model: posterior mode of a logistic GLMM from fixed starting values (see the package)."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from scipy.optimize import minimize

from .common import (
    COLLAPSED_SHARE,
    FALLBACK,
    FE_PRIOR_SD,
    FIXED_ONLY_ESTIMATOR,
    GRADIENT_TOL,
    MIXED_ESTIMATOR,
    OPTIMIZER,
    RANDOM_NAMES,
    VCP_PRIOR_SD,
    CannotFit,
    RegressionResult,
    _fixed_words,
    _prepare,
    _Prepared,
    _separated,
    _wald,
)


def _collapsed(log_sd: float, n_levels: int) -> bool:
    """Tell whether a variance component sits in the joint posterior mode's funnel rather than at a data mode.

    With its k random effects near 0, the joint log posterior in s = log SD is about
    -k·s - s²/(2σ²) (σ: the log-SD prior SD), maximal at s = -kσ²: a mode set by the number of
    levels and the prior, not by the data. At a mode supported by the data the stationarity
    condition gives sum(u²)/(k·SD²) = 1 + s/(kσ²), close to 1; at the funnel point it is 0. A
    log-SD more than :data:`COLLAPSED_SHARE` of the way to the funnel point counts as collapsed.
    """
    return log_sd < -COLLAPSED_SHARE * n_levels * VCP_PRIOR_SD**2


def _posterior_mode(model: Any) -> tuple[Any, str]:
    """Return scipy's result at the posterior mode of a BinomialBayesMixedGLM, and the optimizer used.

    Deterministic: every parameter starts at 0 (statsmodels' ``fit_map`` draws the random
    effects' start at random). Newton-CG first; when it stops with a gradient that is not small
    (it can report success on a step criterion), BFGS from the same start; the converged result
    with the highest posterior wins, else the one with the smallest gradient.
    """

    def fun(params: np.ndarray) -> float:
        return -model.logposterior(params)

    def grad(params: np.ndarray) -> np.ndarray:
        return -model.logposterior_grad(params)

    start = np.zeros(model.k_fep + model.k_vcp + model.k_vc)
    tried = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # exp overflow on the optimizers' trial steps
        for method, options in ((OPTIMIZER["method"], {"xtol": OPTIMIZER["xtol"], "maxiter": OPTIMIZER["maxiter"]}),
                                (FALLBACK["method"], {"gtol": FALLBACK["gtol"], "maxiter": FALLBACK["maxiter"]})):
            found = minimize(fun, start, method=method, jac=grad, options=options)
            found.max_gradient = float(np.abs(grad(found.x)).max())
            tried.append((found, method))
            if found.max_gradient < GRADIENT_TOL:
                break
    good = [(f, m) for f, m in tried if f.max_gradient < GRADIENT_TOL]
    if good:
        return min(good, key=lambda fm: fm[0].fun)
    return min(tried, key=lambda fm: fm[0].max_gradient)


def _mixed(rows: pd.DataFrame | Sequence[dict], references: dict[str, str] | None, random: tuple[str, ...]) -> RegressionResult:
    from statsmodels.genmod.bayes_mixed_glm import BinomialBayesMixedGLM
    from statsmodels.tools.numdiff import approx_fprime

    prep = _prepare(rows, references, set(random))
    if prep.frame.empty:
        return RegressionResult(MIXED_ESTIMATOR, "", 0, prep.n_na, {}, (), {}, "no yes/no labels to model", method="mixed",
                                description="no model fitted: no yes/no labels")
    frame = prep.frame
    vc = {}
    for name in random:
        levels = sorted(frame[name].unique())
        if len(levels) > 1:
            vc[name] = f"0 + C({name})"
        else:
            words = RANDOM_NAMES.get(name, name)
            prep.dropped.append({"term": name, "kind": "random intercept", "reason": f"a single level ({levels[0]})"})
            prep.notes.append(f"the random intercept for {words} was left out: it has a single level ({levels[0]})")
    formula = "passed ~ " + (" + ".join(prep.terms) if prep.terms else "1")
    while True:
        if not vc:
            return _fixed_only(frame, prep, formula)
        model = BinomialBayesMixedGLM.from_formula(formula, vc, frame, vcp_p=VCP_PRIOR_SD, fe_p=FE_PRIOR_SD)
        found, used = _posterior_mode(model)
        log_sd = dict(zip(model.vcp_names, found.x[model.k_fep:model.k_fep + model.k_vcp], strict=True))
        sds = {name: float(np.exp(value)) for name, value in log_sd.items()}
        collapsed = [name for name, value in log_sd.items() if _collapsed(value, int(frame[name].nunique()))]
        if not collapsed:
            break
        # The joint posterior mode sends an SD the data cannot distinguish from 0 towards 0 (a "funnel"):
        # the estimate is then set by the prior, not the data, so the model is fitted without it.
        for name in collapsed:
            words = RANDOM_NAMES.get(name, name)
            prep.dropped.append({"term": name, "kind": "random intercept",
                                 "reason": "its SD collapsed to 0 at the posterior mode (too few labels to estimate it)"})
            prep.notes.append(f"the random intercept for {words} was left out: its SD collapsed to 0 at the posterior mode "
                              "(too few labels to estimate the variation between its levels)")
            del vc[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        hess = approx_fprime(found.x, lambda params: -model.logposterior_grad(params))
    try:
        cov = np.linalg.inv(hess)
    except np.linalg.LinAlgError:
        raise CannotFit("cannot fit the mixed model: the posterior curvature is singular at the mode, so no standard "
                        "error can be computed (too few labels for this many terms?)") from None
    converged = found.max_gradient < GRADIENT_TOL
    notes: list[str] = []
    if not converged:
        notes.append(f"the optimizer did not converge (largest gradient {found.max_gradient:.2g} after {used}): read the estimates with care")
    elif np.linalg.eigvalsh((hess + hess.T) / 2).min() <= 0:
        notes.append("the optimizer stopped where the posterior is not curved like a mode: the standard errors are not reliable")
    for words in _separated(frame, prep.fixed):
        notes.append(f"{words}: its odds ratio rests on the prior (SD {FE_PRIOR_SD:g} on the log-odds scale)")
    fe_mean = found.x[: model.k_fep]
    sd = np.sqrt(np.clip(np.diag(cov), 0, None))[: model.k_fep]
    odds = [_wald(name, mean, s) for name, mean, s in zip(model.exog_names, fe_mean, sd, strict=True) if name != "Intercept"]
    re_sd = dict(sds)
    random_words = " and ".join(RANDOM_NAMES.get(n, n) for n in vc)
    description = (
        f"mixed-effects logistic regression: outcome item passed (yes) vs failed (no); fixed effects "
        f"{_fixed_words(prep.fixed)}; random intercept{'s' if len(vc) > 1 else ''} for {random_words}; "
        "Laplace-approximation (model-based) standard errors"
    )
    return RegressionResult(
        MIXED_ESTIMATOR, formula, int(len(frame)), prep.n_na, prep.used_refs, tuple(odds), re_sd,
        "; ".join([*prep.notes, *notes]) or None, method="mixed", description=description, fixed_effects=tuple(prep.fixed),
        random_intercepts=tuple(vc), dropped=tuple(prep.dropped), covariance="Laplace approximation (inverse Hessian at the posterior mode)",
        optimizer={**OPTIMIZER, "used": used, "fallback": FALLBACK, "start": "all parameters 0", "fe_prior_sd": FE_PRIOR_SD,
                   "vcp_prior_sd": VCP_PRIOR_SD},
        converged=converged, gradient_norm=float(np.sqrt(np.sum(found.jac ** 2))) if found.jac is not None else None,
        warnings=tuple(notes),
    )


def _fixed_only(frame: pd.DataFrame, prep: _Prepared, formula: str) -> RegressionResult:
    """Fit the fixed effects alone (maximum likelihood) when no random intercept can be estimated."""
    import statsmodels.api as sm
    import statsmodels.formula.api as smf

    separated = _separated(frame, prep.fixed)
    if separated:
        raise CannotFit("cannot fit: no random intercept can be estimated and " + "; ".join(separated)
                        + ", so its maximum-likelihood odds ratio is infinite (perfect separation)")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = smf.glm(formula, frame, family=sm.families.Binomial()).fit()
    odds = [_wald(name, fit.params[name], fit.bse[name]) for name in fit.model.exog_names if name != "Intercept"]
    description = (
        f"logistic regression without random effects (none could be estimated): outcome item passed (yes) vs failed "
        f"(no); fixed effects {_fixed_words(prep.fixed)}; model-based (maximum-likelihood) standard errors"
    )
    return RegressionResult(
        FIXED_ONLY_ESTIMATOR, formula, int(len(frame)), prep.n_na, prep.used_refs, tuple(odds), {},
        "; ".join(prep.notes) or None, method="mixed", description=description, fixed_effects=tuple(prep.fixed),
        random_intercepts=(), dropped=tuple(prep.dropped), covariance="model-based (inverse information at the maximum)",
        optimizer={"method": "IRLS (statsmodels GLM default)"}, converged=bool(fit.converged),
    )
