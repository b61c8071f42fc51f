"""Item-level mixed-effects logistic regression with the AMHART specification.

Outcome: an item passed (1: label yes) or failed (0: label no); N/A items are left out.
Fixed effects: chatbot (reference level chosen by the caller), diagnosis, severity, sex.
Random intercepts: item (item difficulty) and conversation index (run index).

Estimator: statsmodels' ``BinomialBayesMixedGLM`` fitted by ``fit_map``: the posterior mode
of a logistic GLMM with independent Gaussian random intercepts and vague priors (fixed-effect
prior SD 10 on the log-odds scale, variance-component log-SD prior SD 1); standard errors come
from the Laplace approximation at the mode, and odds ratios, Wald 95% intervals and two-sided
p-values are computed from them. This approximates the maximum-likelihood fit of Stata's
``melogit`` that AMHART reports; AMHART additionally used robust (sandwich) standard errors,
which are not computed here. Pure: no Django import.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

ESTIMATOR = (
    "statsmodels BinomialBayesMixedGLM.fit_map (posterior mode of a logistic GLMM with Gaussian "
    "random intercepts; Laplace-approximation standard errors; Wald 95% CI and p-values)"
)


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
    estimator: str
    formula: str
    n_observations: int
    n_excluded_na: int
    reference_levels: dict[str, str]
    terms: tuple[OddsRatio, ...]
    random_effect_sd: dict[str, float]
    note: str | None = None

    def as_dict(self) -> dict[str, object]:
        return {
            "estimator": self.estimator,
            "formula": self.formula,
            "n_observations": self.n_observations,
            "n_excluded_na": self.n_excluded_na,
            "reference_levels": self.reference_levels,
            "terms": [t.__dict__ for t in self.terms],
            "random_effect_sd": self.random_effect_sd,
            "note": self.note,
        }


FIXED = ("chatbot", "diagnosis", "severity", "sex")


def item_regression(
    rows: pd.DataFrame | Sequence[dict],
    *,
    references: dict[str, str] | None = None,
    random: Sequence[str] = ("item", "run"),
) -> RegressionResult:
    """Fit the AMHART item-level model.

    ``rows`` has columns ``label`` (yes/no/N/A), ``chatbot``, ``diagnosis``, ``severity``,
    ``sex``, ``item`` and ``run`` (the conversation/run index). ``references`` names the
    reference level of each fixed factor (default: the first level in sorted order). A
    factor with a single level is dropped from the model and named in the note.
    """
    from statsmodels.genmod.bayes_mixed_glm import BinomialBayesMixedGLM

    frame = pd.DataFrame(rows).copy()
    missing = {"label", *FIXED, *random} - set(frame.columns)
    if missing:
        raise ValueError(f"missing columns: {', '.join(sorted(missing))}")
    labels = frame["label"].astype(str).str.strip().str.lower()
    keep = labels.isin(["yes", "no"])
    n_na = int((~keep).sum())
    frame = frame[keep].copy()
    frame["passed"] = (labels[keep] == "yes").astype(float)
    if frame.empty:
        return RegressionResult(ESTIMATOR, "", 0, n_na, {}, (), {}, "no yes/no labels to model")
    references = dict(references or {})
    terms, notes, used_refs = [], [], {}
    for factor in FIXED:
        levels = sorted(frame[factor].astype(str).unique())
        if len(levels) < 2:
            notes.append(f"{factor} has a single level ({levels[0] if levels else 'none'}) and is left out")
            continue
        ref = references.get(factor, levels[0])
        if ref not in levels:
            raise ValueError(f"reference level '{ref}' of {factor} not in the data ({', '.join(levels)})")
        frame[factor] = frame[factor].astype(str)
        used_refs[factor] = ref
        terms.append(f"C({factor}, Treatment(reference={ref!r}))")
    formula = "passed ~ " + (" + ".join(terms) if terms else "1")
    vc = {name: f"0 + C({name})" for name in random if frame[name].nunique() > 1}
    for name in random:
        frame[name] = frame[name].astype(str)
    model = BinomialBayesMixedGLM.from_formula(formula, vc, frame, vcp_p=1.0, fe_p=10.0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fit = model.fit_map()
    for warning in caught:
        if "converge" in str(warning.message).lower():
            notes.append(f"the fit did not fully converge ({warning.message}); read the estimates with care")
    names = model.exog_names
    z = stats.norm.ppf(0.975)
    odds = []
    for name, mean, sd in zip(names, fit.fe_mean, fit.fe_sd, strict=True):
        if name == "Intercept":
            continue
        p = 2 * (1 - stats.norm.cdf(abs(mean / sd))) if sd > 0 else float("nan")
        odds.append(OddsRatio(_pretty(name), float(mean), float(sd), math.exp(mean), math.exp(mean - z * sd), math.exp(mean + z * sd), float(p)))
    re_sd = {vn: float(np.exp(m)) for vn, m in zip(model.vcp_names, fit.vcp_mean, strict=True)}
    return RegressionResult(ESTIMATOR, formula, int(len(frame)), n_na, used_refs, tuple(odds), re_sd, "; ".join(notes) or None)


def _pretty(name: str) -> str:
    # "C(chatbot, Treatment(reference='A'))[T.B]" -> "chatbot: B (vs A)"
    if name.startswith("C(") and "[T." in name:
        factor = name[2:].split(",", 1)[0]
        level = name.split("[T.", 1)[1].rstrip("]")
        ref = name.split("reference=", 1)[1].split(")", 1)[0].strip("'\"") if "reference=" in name else ""
        return f"{factor}: {level} (vs {ref})" if ref else f"{factor}: {level}"
    return name
