"""What both regression variants share: settings, the result, input checks and Wald odds ratios."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import pandas as pd
from scipy import stats

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


def _wald(name: str, estimate: float, se: float) -> OddsRatio:
    z = stats.norm.ppf(0.975)
    p = 2 * stats.norm.sf(abs(estimate / se)) if se > 0 else float("nan")
    return OddsRatio(_pretty(name), float(estimate), float(se), math.exp(estimate), math.exp(estimate - z * se),
                     math.exp(estimate + z * se), float(p))


def _fixed_words(fixed: Sequence[str]) -> str:
    return ", ".join(fixed) if fixed else "none (intercept only)"


def _pretty(name: str) -> str:
    # "C(chatbot, Treatment(reference='A'))[T.B]" -> "chatbot: B (vs A)"
    if name.startswith("C(") and "[T." in name:
        factor = name[2:].split(",", 1)[0].rstrip(")")
        level = name.split("[T.", 1)[1].rstrip("]")
        ref = name.split("reference=", 1)[1].split(")", 1)[0].strip("'\"") if "reference=" in name else ""
        return f"{factor}: {level} (vs {ref})" if ref else f"{factor}: {level}"
    return name
