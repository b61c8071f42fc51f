"""The alt-test procedure on one set of instances: per-rater tests, Benjamini-Yekutieli, omega, rho.

See the package docstring (``stats.alt_test``) for the paper's procedure and numbers.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
from scipy import stats as scipy_stats

from ..data import StatsInputError

Scoring = Literal["accuracy", "neg_rmse"]
SCORINGS: tuple[Scoring, ...] = ("accuracy", "neg_rmse")

DEFAULT_Q = 0.05  # the paper's false discovery rate for Benjamini-Yekutieli
PASS_WINNING_RATE = 0.5  # the paper passes a judge that wins against at least half the raters
MIN_RATERS_PER_INSTANCE = 2  # leaving one out must leave someone to compare with
MIN_INSTANCES_PER_RATER = 30  # the paper: at least 30 instances for the t-test's normality
MIN_RATERS = 3  # the paper recommends at least three annotators
SUGGESTED_INSTANCES = 50  # the paper: 50-100 annotated instances suffice in most cases
EPSILON_GUIDANCE: tuple[tuple[float, str], ...] = (
    (0.2, "expert raters (reliable but expensive, e.g. clinicians)"),
    (0.15, "skilled raters (trained students or research staff)"),
    (0.1, "crowd workers"),
)
EPSILON_ADVICE = (
    "Calderon, Reichart & Dror (ACL 2025): epsilon 0.2 for experts, 0.15 for skilled raters, "
    "0.1 for crowd workers; a smaller epsilon when the raters agree poorly with each other."
)


@dataclass(frozen=True)
class AltTestRater:
    """One left-out rater: the judge's and the rater's advantage probabilities and the test."""

    rater: Hashable
    n_instances: int
    rho_judge: float  # rho_f_j: share of instances where the judge aligns at least as well
    rho_rater: float  # rho_h_j: share where the left-out rater aligns at least as well
    t_statistic: float | None  # None when the differences have no variance
    p_value: float
    p_adjusted: float  # Benjamini-Yekutieli adjusted p-value
    judge_wins: bool  # H0 rejected by BY at q

    def as_dict(self) -> dict[str, Any]:
        """Return a JSON-ready mapping (``rho`` is the judge's advantage probability)."""
        return {
            "rater": str(self.rater),
            "n_instances": self.n_instances,
            "rho": self.rho_judge,
            "rho_rater": self.rho_rater,
            "difference": self.rho_rater - self.rho_judge,
            "t_statistic": self.t_statistic,
            "p_value": self.p_value,
            "p_adjusted": self.p_adjusted,
            "judge_wins": self.judge_wins,
            "decision": "judge wins" if self.judge_wins else "not rejected",
        }


@dataclass(frozen=True)
class ExcludedRater:
    """A rater left out of the test, with the number of instances and the reason."""

    rater: Hashable
    n_instances: int
    reason: str

    def as_dict(self) -> dict[str, Any]:
        """Return a JSON-ready mapping."""
        return {"rater": str(self.rater), "n_instances": self.n_instances, "reason": self.reason}


@dataclass(frozen=True)
class AltTest:
    """The alt-test of one judge: the verdict, omega, rho and the per-rater table.

    ``passed`` is True/False only when every minimum is met; otherwise None, and ``verdict``
    reads "cannot decide yet: <reason>" (``winning_rate`` None too: no decision statistic is
    shown below the minimums). ``advantage_probability`` is descriptive and given whenever a
    rater was tested.
    """

    epsilon: float
    q: float
    scoring: Scoring
    winning_rate: float | None
    advantage_probability: float | None
    passed: bool | None
    verdict: str
    reason: str | None
    per_rater: tuple[AltTestRater, ...]
    excluded_raters: tuple[ExcludedRater, ...]
    n_instances: int
    n_instances_dropped: dict[str, int]
    n_raters_per_instance: dict[int, int]
    minimums: dict[str, int]
    notes: tuple[str, ...] = field(default=())

    def as_dict(self) -> dict[str, Any]:
        """Return a JSON-ready mapping."""
        return {
            "method": "alt-test (Calderon, Reichart & Dror, ACL 2025)",
            "epsilon": self.epsilon,
            "q": self.q,
            "fdr_procedure": "Benjamini-Yekutieli",
            "scoring": self.scoring,
            "winning_rate": self.winning_rate,
            "advantage_probability": self.advantage_probability,
            "passed": self.passed,
            "verdict": self.verdict,
            "reason": self.reason,
            "per_rater": [r.as_dict() for r in self.per_rater],
            "excluded_raters": [r.as_dict() for r in self.excluded_raters],
            "n_instances": self.n_instances,
            "n_instances_dropped": dict(self.n_instances_dropped),
            "n_raters_per_instance": {str(k): v for k, v in sorted(self.n_raters_per_instance.items())},
            "minimums": dict(self.minimums),
            "notes": list(self.notes),
        }


def benjamini_yekutieli(p_values: Sequence[float], q: float = DEFAULT_Q) -> tuple[np.ndarray, np.ndarray]:
    """Return (rejected, adjusted p-values) of the Benjamini-Yekutieli step-up procedure.

    Benjamini & Yekutieli (2001), Ann. Statist. 29, 1165-1188, theorem 1.3: with the m
    p-values sorted, reject the k smallest for the largest k with
    ``p_(k) <= k q / (m c(m))``, ``c(m) = sum_{i<=m} 1/i``; this controls the false discovery
    rate at q under any dependence. Adjusted p-values are ``min_{l>=k} m c(m) p_(l) / l``,
    capped at 1 (as statsmodels' ``fdr_by``), so ``rejected == adjusted <= q``.
    """
    p = np.asarray(p_values, dtype=float)
    m = p.size
    if m == 0:
        return np.zeros(0, dtype=bool), np.zeros(0)
    c_m = float(np.sum(1.0 / np.arange(1, m + 1)))
    order = np.argsort(p, kind="mergesort")
    scaled = p[order] * m * c_m / np.arange(1, m + 1)
    monotone = np.minimum.accumulate(scaled[::-1])[::-1]
    adjusted = np.empty(m)
    adjusted[order] = np.minimum(monotone, 1.0)
    return adjusted <= q, adjusted


def _one_sided_paired_t(differences: np.ndarray, epsilon: float) -> tuple[float | None, float]:
    """Return (t, p) of the one-sided test of mean(differences) >= epsilon vs < epsilon.

    Student's t with n - 1 degrees of freedom (the paper's paired t-test on W_h - W_f). With
    no variance the statistic is infinite: p is 0 when the mean lies below epsilon, else 1.
    """
    n = differences.size
    mean = float(differences.mean())
    sd = float(differences.std(ddof=1)) if n > 1 else 0.0
    if sd == 0.0:
        return None, 0.0 if mean < epsilon else 1.0
    t = (mean - epsilon) / (sd / np.sqrt(n))
    return float(t), float(scipy_stats.t.cdf(t, df=n - 1))


def _encode(
    humans: Mapping[Hashable, Mapping[Hashable, Any]],
    judge: Mapping[Hashable, Any],
    scoring: Scoring,
) -> tuple[list[Hashable], list[Hashable], np.ndarray, np.ndarray]:
    """Return instances, raters, the instances x raters value matrix and the judge vector.

    Missing values are NaN. For ACC labels become category codes (equality is all that
    matters); for -RMSE they must be numbers.
    """
    raters = list(humans)
    instances = list(dict.fromkeys(i for r in raters for i, v in humans[r].items() if v is not None))
    index = {i: k for k, i in enumerate(instances)}
    codes: dict[Any, float] = {}

    def value(x: Any, who: str) -> float:
        if scoring == "neg_rmse":
            try:
                return float(x)
            except (TypeError, ValueError):
                raise StatsInputError(f"-RMSE scoring needs numbers; {who} gave {x!r}") from None
        return float(codes.setdefault(x, len(codes)))

    matrix = np.full((len(instances), len(raters)), np.nan)
    for col, rater in enumerate(raters):
        for instance, label in humans[rater].items():
            if label is not None:
                matrix[index[instance], col] = value(label, f"rater {rater!r}")
    judged = np.full(len(instances), np.nan)
    for instance, label in judge.items():
        if label is not None and instance in index:
            judged[index[instance]] = value(label, "the judge")
    return instances, raters, matrix, judged


def _indicators(matrix: np.ndarray, judged: np.ndarray, scoring: Scoring) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Return (usable, W_f, W_h), each instances x raters.

    ``usable[i, j]``: rater j labelled instance i, the judge did, and at least one other rater
    did. Scores are compared on exact numerators over the same number of other raters (matches
    for ACC, minus the sum of squared differences for -RMSE), so ties are exact.
    """
    present = ~np.isnan(matrix)
    n_present = present.sum(axis=1, keepdims=True)
    usable = present & ~np.isnan(judged)[:, None] & (n_present >= MIN_RATERS_PER_INSTANCE)
    filled = np.where(present, matrix, 0.0)
    judge_col = np.where(np.isnan(judged), 0.0, judged)[:, None]
    if scoring == "accuracy":
        # matches of the judge with all raters, minus the left-out rater's own match
        judge_all = (present & (filled == judge_col)).sum(axis=1, keepdims=True)
        same = present & (filled == judge_col)
        score_judge = judge_all - same
        # each rater's matches with the others: raters of i with the same label, minus itself
        score_rater = np.zeros_like(filled)
        for col in range(matrix.shape[1]):
            score_rater[:, col] = (present & (filled == filled[:, [col]])).sum(axis=1) - 1
    else:
        s1 = filled.sum(axis=1, keepdims=True)
        s2 = (filled**2).sum(axis=1, keepdims=True)
        n_others = n_present - 1
        # sum over the other raters k of (x - h_k)^2 = n x^2 - 2 x sum h + sum h^2 (own term removed)
        others_s1, others_s2 = s1 - filled, s2 - filled**2
        score_judge = -(n_others * judge_col**2 - 2 * judge_col * others_s1 + others_s2)
        score_rater = -(n_others * filled**2 - 2 * filled * others_s1 + others_s2)
    w_f = usable & (score_judge >= score_rater)
    w_h = usable & (score_rater >= score_judge)
    return usable, w_f, w_h


@dataclass(frozen=True)
class _Tested:
    rater: Hashable
    n: int
    rho_judge: float
    rho_rater: float
    t: float | None
    p: float


def _prepare(
    humans: Mapping[Hashable, Mapping[Hashable, Any]],
    judge: Mapping[Hashable, Any],
    *,
    epsilon: float,
    scoring: Scoring,
    min_instances_per_rater: int,
) -> tuple[list[_Tested], list[ExcludedRater], dict[str, Any]]:
    """Run the per-rater tests (before the FDR step); return tested, excluded and counts."""
    instances, raters, matrix, judged = _encode(humans, judge, scoring)
    usable, w_f, w_h = _indicators(matrix, judged, scoring)
    present = ~np.isnan(matrix)
    n_present = present.sum(axis=1)
    kept = (n_present >= MIN_RATERS_PER_INSTANCE) & ~np.isnan(judged)
    dropped = {
        "fewer_than_2_raters": int((n_present < MIN_RATERS_PER_INSTANCE).sum()),
        "judge_missing": int(((n_present >= MIN_RATERS_PER_INSTANCE) & np.isnan(judged)).sum()),
    }
    per_instance: dict[int, int] = {}
    for n in n_present[kept]:
        per_instance[int(n)] = per_instance.get(int(n), 0) + 1
    tested: list[_Tested] = []
    excluded: list[ExcludedRater] = []
    for col, rater in enumerate(raters):
        rows = usable[:, col]
        n = int(rows.sum())
        if n < min_instances_per_rater:
            excluded.append(ExcludedRater(
                rater, n, f"{n} instance{'s' if n != 1 else ''} shared with the judge and another rater; "
                f"the test needs at least {min_instances_per_rater}",
            ))
            continue
        wf = w_f[rows, col].astype(float)
        wh = w_h[rows, col].astype(float)
        t, p = _one_sided_paired_t(wh - wf, epsilon)
        tested.append(_Tested(rater, n, float(wf.mean()), float(wh.mean()), t, p))
    counts = {"n_instances": int(kept.sum()), "dropped": dropped, "per_instance": per_instance}
    return tested, excluded, counts


def _check(epsilon: float, q: float, scoring: str) -> None:
    if not 0 <= epsilon < 1:
        raise StatsInputError(f"epsilon must lie in [0, 1), got {epsilon!r}")
    if not 0 < q < 1:
        raise StatsInputError(f"q must lie strictly between 0 and 1, got {q!r}")
    if scoring not in SCORINGS:
        raise StatsInputError(f"scoring must be one of {', '.join(SCORINGS)}, got {scoring!r}")


def _conclude(
    tested: list[_Tested],
    excluded: list[ExcludedRater],
    counts: dict[str, Any],
    rejected: Sequence[bool],
    adjusted: Sequence[float],
    *,
    epsilon: float,
    q: float,
    scoring: Scoring,
    min_raters: int,
    min_instances_per_rater: int,
) -> AltTest:
    per_rater = tuple(
        AltTestRater(t.rater, t.n, t.rho_judge, t.rho_rater, t.t, t.p, float(a), bool(r))
        for t, r, a in zip(tested, rejected, adjusted, strict=True)
    )
    minimums = {
        "raters_per_instance": MIN_RATERS_PER_INSTANCE,
        "instances_per_rater": min_instances_per_rater,
        "raters": min_raters,
    }
    rho = float(np.mean([r.rho_judge for r in per_rater])) if per_rater else None
    reason = None
    if counts["n_instances"] == 0:
        reason = "no instance has a judge label and at least two raters"
    elif len(per_rater) < min_raters:
        short = len(excluded)
        reason = (
            f"{len(per_rater)} rater{'s' if len(per_rater) != 1 else ''} with at least "
            f"{min_instances_per_rater} instances; the test needs at least {min_raters}"
            + (f" ({short} other rater{'s' if short != 1 else ''} had too few)" if short else "")
        )
    notes: list[str] = []
    per_instance = counts["per_instance"]
    if per_instance and min(per_instance) < 3:
        two = sum(n for k, n in per_instance.items() if k < 3)
        notes.append(
            f"{two} of {counts['n_instances']} instances have only two raters: leaving one out "
            "compares the judge with a single other rater (the paper recommends three or more)"
        )
    few = [r for r in per_rater if r.n_instances < SUGGESTED_INSTANCES]
    if few:
        notes.append(
            f"{len(few)} tested rater{'s have' if len(few) != 1 else ' has'} fewer than {SUGGESTED_INSTANCES} instances "
            f"(the paper suggests {SUGGESTED_INSTANCES}-100 for the t-test's power)"
        )
    if reason is not None:
        return AltTest(epsilon, q, scoring, None, rho, None, f"cannot decide yet: {reason}", reason, per_rater,
                       tuple(excluded), counts["n_instances"], counts["dropped"], per_instance, minimums, tuple(notes))
    omega = sum(r.judge_wins for r in per_rater) / len(per_rater)
    passed = omega >= PASS_WINNING_RATE
    return AltTest(epsilon, q, scoring, omega, rho, passed, "passed" if passed else "failed", None, per_rater,
                   tuple(excluded), counts["n_instances"], counts["dropped"], per_instance, minimums, tuple(notes))


def alt_test(
    humans: Mapping[Hashable, Mapping[Hashable, Any]],
    judge: Mapping[Hashable, Any],
    *,
    epsilon: float,
    q: float = DEFAULT_Q,
    scoring: Scoring = "accuracy",
    min_raters: int = MIN_RATERS,
    min_instances_per_rater: int = MIN_INSTANCES_PER_RATER,
) -> AltTest:
    """Run the alternative annotator test of one judge against human raters.

    ``humans`` maps rater -> {instance: label}; ``judge`` maps instance -> label (None is
    missing). Instances with fewer than two raters, or without a judge label, are dropped and
    counted. Raters with fewer than ``min_instances_per_rater`` usable instances are left out
    of the test and listed in ``excluded_raters``. See the module docstring for the procedure
    (Calderon, Reichart & Dror, ACL 2025) and its minimums.
    """
    _check(epsilon, q, scoring)
    tested, excluded, counts = _prepare(humans, judge, epsilon=epsilon, scoring=scoring,
                                        min_instances_per_rater=min_instances_per_rater)
    rejected, adjusted = benjamini_yekutieli([t.p for t in tested], q)
    return _conclude(tested, excluded, counts, rejected, adjusted, epsilon=epsilon, q=q, scoring=scoring,
                     min_raters=min_raters, min_instances_per_rater=min_instances_per_rater)
