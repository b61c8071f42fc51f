"""Sampling plans for human review, with every conversation's inclusion probability.

A coordinator builds a validation study from a judge run: which judged conversations the
clinicians will rate. Every plan here is a stratified simple random sample without
replacement of fixed size (one stratum for a simple random sample): stratum h of N_h
conversations gets n_h of the n ratings, and each of its conversations is rated with
probability π = n_h / N_h exactly. The estimators of :mod:`stats.ppi` weight each rated
conversation by 1/π, so oversampling some conversations (judge disagreement) keeps the
scores unbiased. Every stratum gets at least one rating, so no conversation has π = 0 (which
no weighting could repair).

Allocation: stratum h's ideal share is n · s_h / Σ s, for a size s_h (N_h for proportional
allocation, 1 for equal, N_h × boost for a stratum of flagged conversations), kept within
[1, N_h] by water-filling (a stratum that would exceed its size is capped and the surplus
shared among the others), then rounded by largest remainder so the n_h sum to n (Cochran
1977, Sampling Techniques, ch. 5, on proportional allocation).

The expected interval width before assigning (:func:`expected_ppi_width`,
:func:`expected_plan_width`) uses the variance formulas of :mod:`stats.ppi.engine` (PPI as
Angelopoulos et al. 2023 and ppi_py; the two-phase estimator beside it) with planning values:
var(Y) (the spread of the score; from a pilot, or the judge scores' variance as a stand-in)
and the residual variance var(Y - Ŷ) (from a pilot study, a previous validation of the same
judge, or :func:`residual_variance_from_agreement` for a yes/no item).
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from .bootstrap import make_rng
from .data import StatsInputError
from .ppi.inputs import check_confidence, t_value, z_value

__all__ = [
    "ALLOCATIONS",
    "PlannedWidth",
    "SamplingPlan",
    "Stratum",
    "expected_plan_width",
    "expected_ppi_width",
    "plan_oversample",
    "plan_simple_random",
    "plan_stratified",
    "residual_variance_from_agreement",
]

Allocation = Literal["proportional", "equal"]
ALLOCATIONS: tuple[Allocation, ...] = ("proportional", "equal")
Seed = int | np.random.Generator | None


@dataclass(frozen=True)
class Stratum:
    """One stratum of a plan: its key, size N_h, sample size n_h and π = n_h / N_h."""

    key: Hashable
    population: int
    sample_size: int
    inclusion_prob: float


@dataclass(frozen=True)
class SamplingPlan:
    """The conversations to rate and every judged conversation's inclusion probability.

    ``selected`` keeps the order of the ``unit_ids`` given; ``inclusion_prob`` maps every
    unit id (selected or not) to its π; ``strata`` lists the allocation.
    """

    method: str
    n: int
    population: int
    selected: tuple[Hashable, ...]
    inclusion_prob: Mapping[Hashable, float]
    strata: tuple[Stratum, ...]

    def selected_inclusion_prob(self) -> tuple[float, ...]:
        """Return π of each selected unit, aligned with ``selected``."""
        return tuple(self.inclusion_prob[u] for u in self.selected)

    def as_dict(self) -> dict[str, object]:
        """Return a mapping for JSON (unit ids and stratum keys as given, so JSON-ready when
        they are strings or numbers)."""
        return {
            "method": self.method,
            "n": self.n,
            "population": self.population,
            "selected": list(self.selected),
            "inclusion_prob": dict(self.inclusion_prob),
            "strata": [
                {
                    "key": s.key,
                    "population": s.population,
                    "sample_size": s.sample_size,
                    "inclusion_prob": s.inclusion_prob,
                }
                for s in self.strata
            ],
        }


def _check_units(unit_ids: Sequence[Hashable], n: int) -> list[Hashable]:
    units = list(unit_ids)
    if not units:
        raise StatsInputError("no conversation to sample from")
    if len(set(units)) != len(units):
        raise StatsInputError("unit ids must be unique")
    if isinstance(n, bool) or not isinstance(n, int | np.integer):
        raise StatsInputError(f"n must be a whole number, not {n!r}")
    if not 1 <= n <= len(units):
        raise StatsInputError(f"n must be between 1 and the {len(units)} conversations, not {n}")
    return units


def allocate(sizes: Sequence[int], shares: Sequence[float], n: int) -> np.ndarray:
    """Split n into integers n_h ∝ shares within [1, sizes_h] that sum to n.

    Water-filling finds c with Σ clip(c · share_h, 1, size_h) = n (bisection); the
    fractional allocations are then rounded by largest remainder. Needs
    len(sizes) <= n <= sum(sizes) and positive shares.
    """
    size = np.asarray(sizes, dtype=float)
    share = np.asarray(shares, dtype=float)
    if (share <= 0).any() or not np.isfinite(share).all():
        raise StatsInputError("allocation shares must be positive")
    if n < size.size:
        raise StatsInputError(
            f"n = {n} is smaller than the {size.size} strata: every stratum needs at least one "
            "rated conversation so that no conversation has inclusion probability 0"
        )
    if n > size.sum():
        raise StatsInputError(f"n = {n} exceeds the {int(size.sum())} conversations")
    low, high = 0.0, float(size.max() / share.min())
    for _ in range(200):
        mid = (low + high) / 2
        if np.clip(mid * share, 1, size).sum() < n:
            low = mid
        else:
            high = mid
    ideal = np.clip(high * share, 1, size)
    counts = np.minimum(np.floor(ideal + 1e-9), size).astype(int)
    short = n - int(counts.sum())
    if short > 0:
        room = counts < size
        order = np.argsort(-(ideal - counts) * room, kind="stable")
        counts[order[:short]] += 1
    elif short < 0:
        spare = counts > 1
        order = np.argsort((ideal - counts) + ~spare * 2.0, kind="stable")
        counts[order[:-short]] -= 1
    return counts


def _stratified(
    method: str,
    units: list[Hashable],
    keys: Sequence[Hashable],
    share_of: Mapping[Hashable, float],
    n: int,
    rng: Seed,
) -> SamplingPlan:
    groups: dict[Hashable, list[int]] = {}
    for i, key in enumerate(keys):
        groups.setdefault(key, []).append(i)
    order = list(groups)
    sizes = [len(groups[k]) for k in order]
    counts = allocate(sizes, [share_of[k] for k in order], n)
    generator = make_rng(rng)
    chosen = np.zeros(len(units), dtype=bool)
    probs = np.empty(len(units))
    strata = []
    for key, size, count in zip(order, sizes, counts, strict=True):
        members = np.array(groups[key])
        chosen[generator.choice(members, size=int(count), replace=False)] = True
        probs[members] = count / size
        strata.append(Stratum(key, size, int(count), float(count / size)))
    return SamplingPlan(
        method=method,
        n=n,
        population=len(units),
        selected=tuple(u for u, c in zip(units, chosen, strict=True) if c),
        inclusion_prob=dict(zip(units, probs.tolist(), strict=True)),
        strata=tuple(strata),
    )


def plan_simple_random(unit_ids: Sequence[Hashable], n: int, rng: Seed) -> SamplingPlan:
    """Select n of the conversations by simple random sampling without replacement.

    Every conversation has π = n/N. ``rng`` is a seed or a numpy Generator; the same seed and
    the same ``unit_ids`` in the same order give the same plan. Raises StatsInputError for
    duplicate ids, no conversation, or n outside 1..N.
    """
    units = _check_units(unit_ids, n)
    return _stratified("simple_random", units, [None] * len(units), {None: 1.0}, n, rng)


def plan_stratified(
    unit_ids: Sequence[Hashable],
    strata: Sequence[Hashable],
    n: int,
    rng: Seed,
    allocation: Allocation = "proportional",
) -> SamplingPlan:
    """Select n conversations by stratified simple random sampling (e.g. chatbot x persona).

    ``strata`` gives each conversation's stratum key (any hashable, such as a (chatbot,
    persona) tuple), aligned with ``unit_ids``. Allocation "proportional" gives stratum h about
    n N_h / N ratings (π about n/N everywhere, up to rounding), "equal" about n / H each
    (small strata then have larger π); both keep 1 <= n_h <= N_h (module docstring). Each
    conversation's π = n_h / N_h. Raises StatsInputError when n is smaller than the number of
    strata, for an unknown allocation, or for mismatched lengths.
    """
    units = _check_units(unit_ids, n)
    keys = list(strata)
    if len(keys) != len(units):
        raise StatsInputError(f"strata has {len(keys)} entries for {len(units)} unit ids")
    if allocation not in ALLOCATIONS:
        raise StatsInputError(f"allocation must be one of {ALLOCATIONS}, not {allocation!r}")
    sizes: dict[Hashable, int] = {}
    for key in keys:
        sizes[key] = sizes.get(key, 0) + 1
    shares = {k: float(v) if allocation == "proportional" else 1.0 for k, v in sizes.items()}
    return _stratified(f"stratified_{allocation}", units, keys, shares, n, rng)


def plan_oversample(
    unit_ids: Sequence[Hashable],
    disagreement_flags: Sequence[bool],
    n: int,
    rng: Seed,
    *,
    boost: float = 3.0,
    strata: Sequence[Hashable] | None = None,
) -> SamplingPlan:
    """Select n conversations, oversampling those where the judges disagreed.

    ``disagreement_flags`` marks each conversation (True when the ensemble had no majority or a
    split vote on some item, as the caller decides). Flagged conversations are about
    ``boost`` times as likely to be rated as the others: the plan is a stratified sample over
    (stratum, flag) cells with cell sizes weighted by ``boost`` for flagged cells, so
    π_flagged / π_unflagged is about ``boost`` (exactly n_h / N_h per cell, up to rounding and
    the cap π <= 1). ``strata`` (optional, e.g. chatbot) adds proportional stratification.
    Weight the rated conversations by 1/π (:func:`stats.ppi.ppi_mean`'s ``inclusion_prob``)
    or the scores are biased towards the disagreements. ``boost`` must be >= 1.
    """
    units = _check_units(unit_ids, n)
    flags = [bool(f) for f in disagreement_flags]
    if len(flags) != len(units):
        raise StatsInputError(
            f"disagreement_flags has {len(flags)} entries for {len(units)} unit ids"
        )
    if not np.isfinite(boost) or boost < 1:
        raise StatsInputError(f"boost must be a finite number >= 1, not {boost!r}")
    outer = [None] * len(units) if strata is None else list(strata)
    if len(outer) != len(units):
        raise StatsInputError(f"strata has {len(outer)} entries for {len(units)} unit ids")
    keys = list(zip(outer, flags, strict=True))
    sizes: dict[Hashable, int] = {}
    for key in keys:
        sizes[key] = sizes.get(key, 0) + 1
    shares = {k: v * (boost if k[1] else 1.0) for k, v in sizes.items()}
    plan = _stratified("oversample_disagreement", units, keys, shares, n, rng)
    if strata is None:  # report cells by flag only
        cells = tuple(
            Stratum(s.key[1], s.population, s.sample_size, s.inclusion_prob) for s in plan.strata
        )
        plan = SamplingPlan(
            plan.method, plan.n, plan.population, plan.selected, plan.inclusion_prob, cells
        )
    return plan


# --- expected widths -----------------------------------------------------------------------


@dataclass(frozen=True)
class PlannedWidth:
    """Expected standard errors and interval widths for a planned number of human ratings.

    ``ppi_*`` is PPI (Angelopoulos et al. 2023, the default of :func:`stats.ppi.ppi_mean`:
    judge term over the unrated conversations); ``tuned_*`` PPI++ at the planning values'
    optimal λ (None without ``var_yhat``); ``human_only_*`` the human sample alone;
    ``two_phase_*`` the two-phase difference estimator (judge term over all N).
    ``effective_n`` = var(Y) / Var(ppi). Every variance is of the superpopulation kind the
    estimators use (no finite-population correction on the human sample).
    """

    n: float
    population: int
    confidence: float
    ppi_std_error: float
    ppi_width: float
    human_only_std_error: float
    human_only_width: float
    tuned_std_error: float | None
    tuned_width: float | None
    tuned_lam: float | None
    effective_n: float | None
    two_phase_std_error: float | None = None
    two_phase_width: float | None = None

    def as_dict(self) -> dict[str, object]:
        """Return a JSON-ready mapping."""
        return dict(self.__dict__)


def _check_var(name: str, value: float) -> float:
    value = float(value)
    if not np.isfinite(value) or value < 0:
        raise StatsInputError(f"{name} must be a finite number >= 0, not {value!r}")
    return value


def _planned(
    n: float,
    population: int,
    confidence: float,
    var_y: float,
    ppi_var: float,
    human_var: float,
    tuned_var: float | None,
    tuned_lam: float | None,
    two_phase_var: float,
) -> PlannedWidth:
    # The report draws small-sample t intervals (stats.ppi.engine, small_sample=True): t_{n-1}.
    z = t_value(confidence, n) if n >= 2 else z_value(confidence)
    ppi, human, two_phase = np.sqrt(ppi_var), np.sqrt(human_var), np.sqrt(two_phase_var)
    tuned = None if tuned_var is None else float(np.sqrt(tuned_var))
    return PlannedWidth(
        n=n,
        population=population,
        confidence=confidence,
        ppi_std_error=float(ppi),
        ppi_width=float(2 * z * ppi),
        human_only_std_error=float(human),
        human_only_width=float(2 * z * human),
        tuned_std_error=tuned,
        tuned_width=None if tuned is None else 2 * z * tuned,
        tuned_lam=tuned_lam,
        effective_n=float(var_y / ppi**2) if ppi > 0 and var_y > 0 else None,
        two_phase_std_error=float(two_phase),
        two_phase_width=float(2 * z * two_phase),
    )


def expected_ppi_width(
    *,
    var_y: float,
    var_residual: float,
    n: int,
    population: int,
    confidence: float = 0.95,
    var_yhat: float | None = None,
) -> PlannedWidth:
    """Return the expected interval widths for n simple-random human ratings out of N judged.

    Var(PPI) = var_yhat/(N - n) + var_residual/n (the paper's variance, :mod:`stats.ppi.engine`;
    ``var_yhat`` defaults to ``var_y``) and Var(human-only) = var_y/n, with planning values:
    ``var_y`` the variance of the human score, ``var_residual`` that of Y - Ŷ (module docstring
    says where they come from). The two-phase line is var_y/N + (1 - n/N) var_residual/n. With
    ``var_yhat`` given, cov(Y, Ŷ) = (var_y + var_yhat - var_residual)/2 gives PPI++'s
    λ* = cov / ((1 + n/(N - n)) var_yhat) (clipped to [0, 1]) and its variance
    λ*² var_yhat/(N - n) + (var_y - 2λ* cov + λ*² var_yhat)/n. When every conversation is
    rated (n = N) the judges add nothing and PPI's line is the human-only one. Width = 2 z SE;
    the realised width varies around it. Raises StatsInputError unless 1 <= n <= N and the
    variances are finite and >= 0.
    """
    confidence = check_confidence(confidence)
    var_y, var_residual = _check_var("var_y", var_y), _check_var("var_residual", var_residual)
    if not 1 <= n <= population:
        raise StatsInputError(f"n must be between 1 and population ({population}), not {n}")
    unrated = population - n
    spread = var_y if var_yhat is None else _check_var("var_yhat", var_yhat)
    ppi_var = spread / unrated + var_residual / n if unrated else var_y / n
    tuned_var = tuned_lam = None
    if var_yhat is not None:
        cov = (var_y + spread - var_residual) / 2
        tuned_lam = 1.0
        if unrated and spread > 0:
            tuned_lam = float(np.clip(cov / ((1 + n / unrated) * spread), 0, 1))
        residual = max(var_y - 2 * tuned_lam * cov + tuned_lam**2 * spread, 0.0)
        tuned_var = (tuned_lam**2 * spread / unrated if unrated else 0.0) + residual / n
    two_phase = var_y / population + (1 - n / population) * var_residual / n
    return _planned(n, population, confidence, var_y, ppi_var, var_y / n, tuned_var, tuned_lam, two_phase)


def expected_plan_width(
    plan: SamplingPlan | Mapping[Hashable, float],
    *,
    var_y: float,
    residual_var: float | Mapping[Hashable, float],
    confidence: float = 0.95,
) -> PlannedWidth:
    """Return the expected interval widths of a plan with unequal inclusion probabilities.

    Under Poisson sampling with the plan's π, the expected variances of the Hájek-weighted
    estimators of :mod:`stats.ppi.engine` are, over all N judged conversations,

        Var(PPI)        ≈ [Σ_{π<1} var_y/(1 - π_i) + Σ_{π=1} var_y + Σ r_i/π_i] / N²
        Var(human-only) ≈ Σ var_y/π_i / N²
        Var(two-phase)  ≈ var_y/N + Σ (1 - π_i)/π_i · r_i / N²

    where r_i is ``residual_var`` for conversation i: one number, or a mapping unit id ->
    expected (Y_i - Ŷ_i - bias)², e.g. larger for flagged disagreements, which is what makes
    oversampling them pay; var_y stands for the spread of both human and judge scores.
    With equal π = n/N these are the simple-random formulas of :func:`expected_ppi_width`.
    The tuned line (PPI++) takes var(Y - λŶ)_i = var_y (1 - λ)² + λ r_i and the λ that
    minimises the sum. PPI (λ = 1) can widen as more conversations are rated, because fewer
    are left unrated for its judge term; PPI++ then leans less on the judges. ``plan`` is a
    :class:`SamplingPlan` or a mapping unit id -> π.
    """
    confidence = check_confidence(confidence)
    var_y = _check_var("var_y", var_y)
    probs = plan.inclusion_prob if isinstance(plan, SamplingPlan) else plan
    units = list(probs)
    if not units:
        raise StatsInputError("the plan has no conversation")
    pi = np.array([probs[u] for u in units], dtype=float)
    if (pi <= 0).any() or (pi > 1).any() or np.isnan(pi).any():
        raise StatsInputError("inclusion probabilities must lie in (0, 1]")
    if isinstance(residual_var, Mapping):
        missing = [u for u in units if u not in residual_var]
        if missing:
            raise StatsInputError(f"residual_var lacks {len(missing)} unit(s), e.g. {missing[0]!r}")
        r = np.array([_check_var("residual_var", residual_var[u]) for u in units])
    else:
        r = np.full(len(units), _check_var("residual_var", residual_var))
    population = len(units)
    squared = population**2
    inverse = float((1 / pi).sum())
    human = var_y * inverse / squared
    if (pi >= 1).all():  # every conversation rated: nothing for the judges to add
        ppi = tuned = human
        lam = 0.0
    else:
        certain = pi >= 1
        judge = float((var_y / (1 - pi[~certain])).sum() + var_y * certain.sum())
        labelled = float((r / pi).sum())
        ppi = (judge + labelled) / squared
        # PPI++: var(Y - λŶ)_i = var_y (1 - λ)² + λ r_i when Y and Ŷ share the spread var_y, so
        # Var(λ) = [λ² J + var_y (1 - λ)² Σ 1/π + λ Σ r/π] / N², least at the λ below.
        total = judge + var_y * inverse
        lam = float(np.clip((2 * var_y * inverse - labelled) / (2 * total), 0, 1)) if total > 0 else 1.0
        tuned = (lam**2 * judge + var_y * (1 - lam) ** 2 * inverse + lam * labelled) / squared
    two_phase = var_y / population + float(((1 - pi) / pi) @ r) / squared
    return _planned(float(round(pi.sum(), 9)), population, confidence, var_y, ppi, human, tuned, lam, two_phase)


def residual_variance_from_agreement(disagreement_rate: float, bias: float = 0.0) -> float:
    """Return var(Y - Ŷ) for a yes/no item from the judge-human disagreement rate.

    Y - Ŷ is -1, 0 or 1, so var = P(Y != Ŷ) - bias², with bias = P(Y=1, Ŷ=0) - P(Y=0, Ŷ=1)
    (the judge's expected shortfall). Take both from a previous validation of the same judge,
    or assume bias 0 (the largest variance for a given disagreement rate). Raises
    StatsInputError unless 0 <= |bias| <= disagreement_rate <= 1.
    """
    if not 0 <= disagreement_rate <= 1:
        raise StatsInputError("disagreement_rate must lie in [0, 1]")
    if abs(bias) > disagreement_rate:
        raise StatsInputError("|bias| cannot exceed the disagreement rate")
    return float(disagreement_rate - bias**2)
