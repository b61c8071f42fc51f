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

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pandas as pd
from scipy import stats
from scipy.optimize import minimize

Method = Literal["mixed", "cluster_robust"]
METHODS: tuple[Method, ...] = ("mixed", "cluster_robust")
FIXED = ("chatbot", "diagnosis", "severity", "sex")
RANDOM_NAMES = {"item": "item", "run": "conversation index (run index)"}
FE_PRIOR_SD = 10.0
VCP_PRIOR_SD = 1.0
OPTIMIZER = {"method": "Newton-CG", "xtol": 1e-5, "maxiter": 200}
FALLBACK = {"method": "BFGS", "gtol": 1e-6, "maxiter": 2000}
GRADIENT_TOL = 1e-3  # the largest gradient component accepted at a mode (log-posterior units)
COLLAPSED_SHARE = 0.75  # how far towards the funnel point a log-SD may sit before it counts as collapsed
MIXED_ESTIMATOR = (
    "statsmodels BinomialBayesMixedGLM posterior mode (Newton-CG from fixed starting values 0; "
    f"fixed-effect prior SD {FE_PRIOR_SD:g}, log-SD prior SD {VCP_PRIOR_SD:g}); Laplace-approximation "
    "standard errors; Wald 95% CI and p-values"
)
ROBUST_ESTIMATOR = (
    "statsmodels GLM (binomial, logit link, maximum likelihood) with item fixed effects; standard errors "
    "cluster-robust by conversation (sandwich, CR1 factor G/(G-1)·(N-1)/(N-K)); Wald 95% CI and p-values"
)
FIXED_ONLY_ESTIMATOR = "statsmodels GLM (binomial, logit link, maximum likelihood); model-based standard errors; Wald 95% CI and p-values"
ESTIMATOR = MIXED_ESTIMATOR  # the default method's estimator


class CannotFit(ValueError):  # noqa: N818 - reads as the message a user sees: "cannot fit: ..."
    """The data cannot support the model; the message says why in words."""


@dataclass(frozen=True)
class OddsRatio:
    term: str
    log_odds: float
    se: float
    odds_ratio: float
    ci_low: float
    ci_high: float
    p_value: float


@dataclass(frozen=True)
class RegressionResult:
    """A fitted model: its terms, what was fitted and how, and notes in words.

    ``description`` names the model actually fitted (fixed effects, random intercepts,
    covariance) in one sentence; ``dropped`` lists each term left out with the reason;
    ``covariance`` names the standard errors; ``optimizer`` the optimizer, its settings and
    starting values; ``converged`` and ``gradient_norm`` how the optimizer ended (mixed only).
    """

    estimator: str
    formula: str
    n_observations: int
    n_excluded_na: int
    reference_levels: dict[str, str]
    terms: tuple[OddsRatio, ...]
    random_effect_sd: dict[str, float]
    note: str | None = None  # every note, the terms left out included
    method: Method = "mixed"
    description: str = ""
    fixed_effects: tuple[str, ...] = ()
    random_intercepts: tuple[str, ...] = ()
    dropped: tuple[dict[str, str], ...] = ()
    covariance: str = ""
    n_clusters: int | None = None
    optimizer: dict[str, Any] = field(default_factory=dict)
    converged: bool | None = None
    gradient_norm: float | None = None
    warnings: tuple[str, ...] = ()  # the notes other than the terms left out (those are in ``dropped``)

    def as_dict(self) -> dict[str, object]:
        """Return a JSON-ready mapping (every parameter of the fit included)."""
        return {
            "method": self.method,
            "estimator": self.estimator,
            "description": self.description,
            "formula": self.formula,
            "fixed_effects": list(self.fixed_effects),
            "random_intercepts": list(self.random_intercepts),
            "dropped": [dict(d) for d in self.dropped],
            "covariance": self.covariance,
            "n_clusters": self.n_clusters,
            "optimizer": dict(self.optimizer),
            "converged": self.converged,
            "gradient_norm": self.gradient_norm,
            "n_observations": self.n_observations,
            "n_excluded_na": self.n_excluded_na,
            "reference_levels": self.reference_levels,
            "terms": [t.__dict__ for t in self.terms],
            "random_effect_sd": self.random_effect_sd,
            "note": self.note,
            "warnings": list(self.warnings),
        }


@dataclass
class _Prepared:
    frame: pd.DataFrame
    n_na: int
    terms: list[str]
    used_refs: dict[str, str]
    fixed: list[str]
    dropped: list[dict[str, str]]
    notes: list[str]


def _prepare(rows: pd.DataFrame | Sequence[dict], references: dict[str, str] | None, needed: set[str]) -> _Prepared:
    frame = pd.DataFrame(rows).copy()
    missing = {"label", *FIXED, *needed} - set(frame.columns)
    if missing:
        raise ValueError(f"missing columns: {', '.join(sorted(missing))}")
    labels = frame["label"].astype(str).str.strip().str.lower()
    keep = labels.isin(["yes", "no"])
    n_na = int((~keep).sum())
    frame = frame[keep].copy()
    frame["passed"] = (labels[keep] == "yes").astype(float)
    for name in (*FIXED, *needed):
        frame[name] = frame[name].astype(str)
    # One row order whatever order the rows came in (a database query has none): the fit's
    # floating-point sums, and so its last digits, depend on it.
    frame = frame.sort_values([*FIXED, *sorted(needed), "passed"], kind="mergesort").reset_index(drop=True)
    prepared = _Prepared(frame, n_na, [], {}, [], [], [])
    if frame.empty:
        return prepared
    outcomes = frame["passed"].unique()
    if len(outcomes) == 1:
        word = "yes (passed)" if outcomes[0] == 1 else "no (failed)"
        raise CannotFit(
            f"cannot fit: every one of the {len(frame)} yes/no labels is {word}, so there is no variation for a "
            "logistic regression to explain (odds ratios need both passes and fails)"
        )
    references = dict(references or {})
    for factor in FIXED:
        levels = sorted(frame[factor].unique())
        if len(levels) < 2:
            level = levels[0] if levels else "none"
            prepared.dropped.append({"term": factor, "kind": "fixed effect", "reason": f"a single level ({level})"})
            prepared.notes.append(f"{factor} has a single level ({level}) and is left out")
            continue
        ref = references.get(factor, levels[0])
        if ref not in levels:
            raise ValueError(f"reference level '{ref}' of {factor} not in the data ({', '.join(levels)})")
        prepared.used_refs[factor] = ref
        prepared.fixed.append(factor)
        prepared.terms.append(f"C({factor}, Treatment(reference={ref!r}))")
    return prepared


def _separated(frame: pd.DataFrame, factors: Sequence[str]) -> list[str]:
    """Return the factor levels whose items all pass or all fail (their odds ratio is infinite under ML)."""
    out = []
    for factor in factors:
        rates = frame.groupby(factor)["passed"].mean()
        for level, rate in rates.items():
            if rate in (0.0, 1.0):
                out.append(f"{factor} {level} {'passes' if rate == 1.0 else 'fails'} every item")
    return out


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


def _wald(name: str, estimate: float, se: float) -> OddsRatio:
    z = stats.norm.ppf(0.975)
    p = 2 * stats.norm.sf(abs(estimate / se)) if se > 0 else float("nan")
    return OddsRatio(_pretty(name), float(estimate), float(se), math.exp(estimate), math.exp(estimate - z * se),
                     math.exp(estimate + z * se), float(p))


def _fixed_words(fixed: Sequence[str]) -> str:
    return ", ".join(fixed) if fixed else "none (intercept only)"


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


def _pretty(name: str) -> str:
    # "C(chatbot, Treatment(reference='A'))[T.B]" -> "chatbot: B (vs A)"
    if name.startswith("C(") and "[T." in name:
        factor = name[2:].split(",", 1)[0].rstrip(")")
        level = name.split("[T.", 1)[1].rstrip("]")
        ref = name.split("reference=", 1)[1].split(")", 1)[0].strip("'\"") if "reference=" in name else ""
        return f"{factor}: {level} (vs {ref})" if ref else f"{factor}: {level}"
    return name
