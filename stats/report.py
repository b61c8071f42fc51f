"""The agreement report: every coefficient per item and pooled over items, with bootstrap CIs."""

from __future__ import annotations

import secrets
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from .agreement import (
    CohenSummary,
    FleissKappa,
    GwetAC1,
    cohen_mean_batched,
    fleiss_batched,
    fleiss_kappa,
    gwet_ac1,
    gwet_batched,
    pairwise_cohen,
    percent_agreement,
    percent_agreement_batched,
)
from .alpha import KrippendorffAlpha, alpha_batched, krippendorff_alpha
from .bootstrap import Batched, ConfidenceInterval, bootstrap_intervals
from .data import (
    DEFAULT_NA_LABELS,
    NA_CATEGORY,
    Label,
    Level,
    NaPolicy,
    RatingTable,
    all_na_labels,
    build_scale,
    build_tables,
    is_na_label,
    normalise_ratings,
)
from .labels import Canonical, NaLabels, na_labels_for
from .precision import DEFAULT_TARGET_WIDTH, PrecisionPlan, precision_plan

STATISTICS: tuple[str, ...] = (
    "percent_agreement",
    "fleiss_kappa",
    "cohen_kappa_mean",
    "krippendorff_alpha",
    "krippendorff_alpha_nominal",
    "gwet_ac1",
)


@dataclass(frozen=True)
class ItemAgreement:
    """Agreement among raters on one item (or pooled: each (unit, item) pair is a unit).

    ``n_units`` counts units with at least one rating, ``n_units_pairable`` those with two or
    more (the ones agreement is measured on). ``base_rates`` are shares of all non-missing
    ratings. ``cis`` holds percentile bootstrap intervals keyed by the names in
    :data:`STATISTICS` (empty without bootstrap); each interval carries ``n_undefined`` and
    ``percent_undefined`` (resamples where the coefficient was undefined, left out).
    ``notes`` explain every None.

    ``resampling`` says what the bootstrap drew: ``"units"`` (the table's units: conversations
    for an item; (conversation, item) pairs for a pooled table under ``pooled_resampling=
    "pairs"``), ``"clusters"`` (whole conversations with all their items), or None without
    bootstrap. ``n_clusters`` is the number of clusters drawn from (None unless clustered).

    ``undefined_reasons`` maps each coefficient name of :data:`STATISTICS` whose value is None
    to the reason in words (e.g. "1 rating so far: reliability needs at least 2 raters on a
    conversation"). ``precision`` maps each coefficient with an interval to a
    :class:`stats.precision.PrecisionPlan`: the width now and the estimated number of more
    doubly-rated units (conversations) for the report's target width (empty without
    bootstrap or without a target).
    """

    item: Hashable | None
    level: Level
    na_policy: NaPolicy
    categories: tuple[Label, ...]
    n_units: int
    n_units_pairable: int
    n_raters: int
    n_ratings: int
    n_missing: int
    n_na_excluded: int
    label_counts: dict[Label, int]
    base_rates: dict[Label, float]
    percent_agreement: float | None
    fleiss: FleissKappa
    cohen: CohenSummary
    krippendorff: KrippendorffAlpha
    krippendorff_nominal: KrippendorffAlpha
    gwet: GwetAC1
    cis: dict[str, ConfidenceInterval]
    notes: tuple[str, ...]
    resampling: str | None = None
    n_clusters: int | None = None
    undefined_reasons: dict[str, str] = field(default_factory=dict)
    precision: dict[str, PrecisionPlan] = field(default_factory=dict)

    @property
    def fleiss_kappa(self) -> float | None:
        """Return Fleiss' kappa."""
        return self.fleiss.kappa

    @property
    def fleiss_p0(self) -> float | None:
        """Return Fleiss' observed agreement P0."""
        return self.fleiss.p0

    @property
    def fleiss_pe(self) -> float | None:
        """Return Fleiss' chance agreement Pe."""
        return self.fleiss.pe

    @property
    def cohen_kappa_mean(self) -> float | None:
        """Return the mean pairwise Cohen's kappa."""
        return self.cohen.mean

    @property
    def krippendorff_alpha(self) -> float | None:
        """Return Krippendorff's alpha at the report's level."""
        return self.krippendorff.alpha

    @property
    def krippendorff_alpha_nominal(self) -> float | None:
        """Return Krippendorff's nominal alpha."""
        return self.krippendorff_nominal.alpha

    @property
    def gwet_ac1(self) -> float | None:
        """Return Gwet's AC1."""
        return self.gwet.ac1

    def as_dict(self) -> dict[str, Any]:
        """Return a JSON-ready mapping; None stays None (null) and ``notes`` say why."""
        out: dict[str, Any] = {
            "item": None if self.item is None else str(self.item),
            "level": self.level,
            "na_policy": self.na_policy,
            "categories": [str(c) for c in self.categories],
            "n_units": self.n_units,
            "n_units_pairable": self.n_units_pairable,
            "n_raters": self.n_raters,
            "n_ratings": self.n_ratings,
            "n_missing": self.n_missing,
            "n_na_excluded": self.n_na_excluded,
            "label_counts": {str(k): v for k, v in self.label_counts.items()},
            "base_rates": {str(k): v for k, v in self.base_rates.items()},
            "percent_agreement": self.percent_agreement,
            "fleiss_kappa": self.fleiss_kappa,
            "fleiss_p0": self.fleiss_p0,
            "fleiss_pe": self.fleiss_pe,
            "fleiss_variant": self.fleiss.variant,
            "fleiss_variant_label": self.fleiss.variant_label,
            "cohen_kappa_mean": self.cohen_kappa_mean,
            "cohen_pairs": [
                {
                    "rater_a": str(p.rater_a),
                    "rater_b": str(p.rater_b),
                    "kappa": p.kappa,
                    "po": p.po,
                    "pe": p.pe,
                    "n": p.n,
                    "note": p.note,
                }
                for p in self.cohen.pairs
            ],
            "krippendorff_level": self.level,
            "krippendorff_alpha": self.krippendorff_alpha,
            "krippendorff_alpha_nominal": self.krippendorff_alpha_nominal,
            "krippendorff_observed_disagreement": self.krippendorff.observed_disagreement,
            "krippendorff_expected_disagreement": self.krippendorff.expected_disagreement,
            "gwet_ac1": self.gwet_ac1,
            "gwet_pa": self.gwet.pa,
            "gwet_pe": self.gwet.pe,
            "gwet_q": self.gwet.n_categories,
        }
        for name, ci in self.cis.items():
            out[f"{name}_ci"] = None if ci.low is None else [ci.low, ci.high]
        if self.cis:
            out["bootstrap"] = {name: ci.as_dict() for name, ci in self.cis.items()}
            out["ci_percent_undefined"] = {
                name: ci.percent_undefined for name, ci in self.cis.items()
            }
        out["resampling"] = self.resampling
        out["n_clusters"] = self.n_clusters
        out["undefined_reasons"] = dict(self.undefined_reasons)
        out["precision"] = {name: plan.as_dict() for name, plan in self.precision.items()}
        out["notes"] = list(self.notes)
        return out


PooledResampling = Literal["cluster", "pairs"]
POOLED_RESAMPLING: tuple[PooledResampling, ...] = ("cluster", "pairs")

# The one default of every reliability interval: the study page, its API, the study zip and
# ``python -m stats agreement`` all draw this many resamples from this seed, and resample
# whole conversations for the pooled figure (cluster), so they print the same intervals.
DEFAULT_RESAMPLES = 1000
DEFAULT_SEED = 20260101
DEFAULT_POOLED_RESAMPLING: PooledResampling = "cluster"


def describe_intervals(
    n_resamples: int, pooled_resampling: PooledResampling, confidence: float = 0.95
) -> tuple[str, str]:
    """Return the machine name and a sentence for the report's interval method.

    Machine names: ``"percentile_bootstrap_cluster"``, ``"percentile_bootstrap_pairs"``, or
    ``"none"`` without bootstrap.
    """
    if not n_resamples:
        return "none", "no confidence intervals (no bootstrap)"
    if pooled_resampling == "cluster":
        pooled = "whole conversations (clusters: all items of a drawn conversation together)"
    else:
        pooled = "(conversation, item) pairs, as if independent"
    sentence = (
        f"{confidence:.0%} percentile bootstrap, {n_resamples} resamples; pooled: resamples of "
        f"{pooled}; per item: resamples of conversations"
    )
    return f"percentile_bootstrap_{pooled_resampling}", sentence


@dataclass(frozen=True)
class AgreementReport:
    """Agreement pooled over items and per item (keyed by item, in order of appearance).

    ``pooled_resampling``: how the pooled bootstrap drew, ``"cluster"`` (whole conversations)
    or ``"pairs"`` ((conversation, item) pairs). ``interval_method``: a machine name,
    ``"percentile_bootstrap_cluster"``, ``"percentile_bootstrap_pairs"`` or ``"none"``;
    ``interval_method_label``: the same as a sentence for the page. ``na_labels``: the labels
    treated as N/A (a tuple, or a mapping item -> tuple when declared per item).
    ``target_width``: the CI width the precision plans aim at (None: no plans).
    """

    pooled: ItemAgreement
    items: dict[Hashable, ItemAgreement]
    level: Level
    na_policy: NaPolicy
    order: tuple[Label, ...] | None
    n_resamples: int
    seed: int | None
    confidence: float
    pooled_resampling: PooledResampling = "cluster"
    interval_method: str = "none"
    interval_method_label: str = "no confidence intervals (no bootstrap)"
    na_labels: tuple[str, ...] | dict[Hashable, tuple[str, ...]] = DEFAULT_NA_LABELS
    target_width: float | None = None

    def as_dict(self) -> dict[str, Any]:
        """Return a JSON-ready mapping with ``pooled`` and ``items`` (keyed by ``str(item)``).

        Top level: ``level``, ``na_policy``, ``na_labels`` (list, or item -> list), ``order``,
        ``interval_method``, ``interval_method_label``, ``pooled_resampling`` and
        ``bootstrap`` (None without resamples).
        """
        na_labels = (
            {str(k): list(v) for k, v in self.na_labels.items()}
            if isinstance(self.na_labels, Mapping)
            else list(self.na_labels)
        )
        return {
            "level": self.level,
            "na_policy": self.na_policy,
            "na_labels": na_labels,
            "order": None if self.order is None else [str(x) for x in self.order],
            "interval_method": self.interval_method,
            "interval_method_label": self.interval_method_label,
            "pooled_resampling": self.pooled_resampling,
            "target_width": self.target_width,
            "bootstrap": (
                {
                    "n_resamples": self.n_resamples,
                    "seed": self.seed,
                    "confidence": self.confidence,
                    "method": self.interval_method_label,
                    "pooled_resampling": self.pooled_resampling,
                }
                if self.n_resamples
                else None
            ),
            "pooled": self.pooled.as_dict(),
            "items": {str(k): v.as_dict() for k, v in self.items.items()},
        }


def _batched(table: RatingTable, level: Level) -> dict[str, Batched]:
    stats = {
        "percent_agreement": percent_agreement_batched(table),
        "fleiss_kappa": fleiss_batched(table),
        "cohen_kappa_mean": cohen_mean_batched(table),
        "krippendorff_alpha": alpha_batched(table, level),
        "gwet_ac1": gwet_batched(table),
    }
    if level != "nominal":
        stats["krippendorff_alpha_nominal"] = alpha_batched(table, "nominal")
    return stats


def item_agreement(
    table: RatingTable,
    *,
    item: Hashable | None = None,
    level: Level = "nominal",
    na_policy: NaPolicy = "category",
    n_missing: int = 0,
    n_na_excluded: int = 0,
    n_resamples: int = 0,
    seed: int | np.random.Generator | np.random.SeedSequence | None = None,
    confidence: float = 0.95,
    clusters: Sequence[Hashable] | None = None,
    target_width: float | None = None,
    unit_name: str = "units",
) -> ItemAgreement:
    """Compute every agreement coefficient of one rating table, with optional bootstrap CIs.

    Degenerate tables (no rating, one rater, no unit rated twice, one category) give None
    coefficients and explanatory ``notes``, never NaN. The bootstrap resamples the table's
    units, or with ``clusters`` (one cluster label per row of ``table.units``, e.g. the
    conversation of each (conversation, item) unit) whole clusters (see
    :func:`stats.bootstrap.bootstrap_intervals`). With ``target_width`` each interval gets a
    :func:`stats.precision.precision_plan` over the units rated at least twice (with
    ``clusters``: the clusters holding such a unit), counted in ``unit_name`` (what a unit, or
    a cluster, of this table is: e.g. "conversations"). Reference: Efron & Tibshirani (1993),
    ch. 13.
    """
    if clusters is not None and len(clusters) != table.n_units:
        raise ValueError("clusters must give one cluster per unit of the table")
    counts = table.counts
    n_ratings = table.n_ratings
    label_counts = {c: int(k) for c, k in zip(table.categories, counts.sum(axis=0), strict=True)}
    base_rates = {c: k / n_ratings for c, k in label_counts.items()} if n_ratings else {}
    pairable = int((counts.sum(axis=1) >= 2).sum())
    alpha = krippendorff_alpha(table, level)
    nominal = alpha if level == "nominal" else krippendorff_alpha(table, "nominal")
    results = {
        "pa": percent_agreement(table),
        "fleiss": fleiss_kappa(table),
        "cohen": pairwise_cohen(table),
        "alpha": alpha,
        "nominal": nominal,
        "gwet": gwet_ac1(table),
    }
    notes: list[str] = []
    headline = _why_nothing_is_measured(table, pairable)
    if headline:
        notes.append(headline)
    elif pairable == 1:
        notes.append("only one unit has two or more ratings: estimates rest on a single unit")
    if n_na_excluded:
        notes.append(f"{n_na_excluded} N/A rating(s) excluded (N/A policy: exclude)")
    if n_missing:
        notes.append(f"{n_missing} missing rating(s) ignored")
    for result in results.values():
        if result.note and not headline:
            notes.append(result.note)
    values = {
        "percent_agreement": results["pa"].value,
        "fleiss_kappa": results["fleiss"].kappa,
        "cohen_kappa_mean": results["cohen"].mean,
        "krippendorff_alpha": alpha.alpha,
        "krippendorff_alpha_nominal": nominal.alpha,
        "gwet_ac1": results["gwet"].ac1,
    }
    sources = {
        "percent_agreement": results["pa"],
        "fleiss_kappa": results["fleiss"],
        "cohen_kappa_mean": results["cohen"],
        "krippendorff_alpha": alpha,
        "krippendorff_alpha_nominal": nominal,
        "gwet_ac1": results["gwet"],
    }
    undefined_reasons = {
        name: headline or sources[name].note or f"{name} undefined"
        for name, value in values.items()
        if value is None
    }
    cis: dict[str, ConfidenceInterval] = {}
    resampling = n_clusters = None
    precision: dict[str, PrecisionPlan] = {}
    if n_resamples and table.n_units:
        rng = np.random.default_rng(seed) if not isinstance(seed, np.random.Generator) else seed
        cis = bootstrap_intervals(
            _batched(table, level),
            n_resamples=n_resamples,
            seed=rng,
            confidence=confidence,
            clusters=clusters,
        )
        resampling = "units" if clusters is None else "clusters"
        n_clusters = None if clusters is None else len(set(clusters))
        cis = {name: cis[name] for name in STATISTICS if name in cis}
        notes.extend(f"{name} CI: {ci.note}" for name, ci in cis.items() if ci.note)
        if level == "nominal":
            cis["krippendorff_alpha_nominal"] = cis["krippendorff_alpha"]
        if target_width is not None:
            precision = _precision(cis, table, clusters, target_width, unit_name)
    elif n_resamples:
        notes.append("no units: bootstrap skipped")
    return ItemAgreement(
        item=item,
        level=level,
        na_policy=na_policy,
        categories=table.categories,
        n_units=table.n_units,
        n_units_pairable=pairable,
        n_raters=table.n_raters,
        n_ratings=n_ratings,
        n_missing=n_missing,
        n_na_excluded=n_na_excluded,
        label_counts=label_counts,
        base_rates=base_rates,
        percent_agreement=results["pa"].value,
        fleiss=results["fleiss"],
        cohen=results["cohen"],
        krippendorff=alpha,
        krippendorff_nominal=nominal,
        gwet=results["gwet"],
        cis=cis,
        notes=tuple(dict.fromkeys(notes)),
        resampling=resampling,
        n_clusters=n_clusters,
        undefined_reasons=undefined_reasons,
        precision=precision,
    )


def _why_nothing_is_measured(table: RatingTable, pairable: int) -> str | None:
    """Return the one reason every coefficient is undefined, if there is one."""
    n = table.n_ratings
    need = "reliability needs at least 2 raters on a conversation"
    if n == 0:
        return "no ratings: every label is missing"
    if n == 1:
        return f"1 rating so far: {need}"
    if table.n_raters == 1:
        return f"only one rater ({table.raters[0]!r}) so far, {n} ratings: {need}"
    if pairable == 0:
        return (
            f"{n} ratings from {table.n_raters} raters so far, but no conversation has two "
            f"of them: {need}"
        )
    return None


def _precision(
    cis: dict[str, ConfidenceInterval],
    table: RatingTable,
    clusters: Sequence[Hashable] | None,
    target_width: float,
    unit: str,
) -> dict[str, PrecisionPlan]:
    """Plan each interval: the width scales with the number of drawn, doubly-rated units."""
    rated_twice = table.counts.sum(axis=1) >= 2
    if clusters is None:
        n = int(rated_twice.sum())
    else:
        n = len({c for c, ok in zip(clusters, rated_twice, strict=True) if ok})
    return {name: precision_plan(ci.width, n, target_width, unit=unit) for name, ci in cis.items()}


def _order_for_policy(
    order: Sequence[Label] | None, na: NaPolicy, na_labels: NaLabels
) -> tuple[Label, ...] | None:
    if order is None:
        return None
    every_na = all_na_labels(na_labels)
    out: list[Label] = []
    for label in order:
        if is_na_label(label, every_na):
            if na == "exclude":
                continue
            label = NA_CATEGORY
        out.append(" ".join(label.split()) if isinstance(label, str) else label)
    return tuple(dict.fromkeys(out))


def agreement_report(
    ratings: Any,
    *,
    level: Level = "nominal",
    na: NaPolicy = "category",
    na_labels: NaLabels = DEFAULT_NA_LABELS,
    bootstrap: int = 0,
    seed: int | None = None,
    order: Sequence[Label] | None = None,
    confidence: float = 0.95,
    canonical: Canonical | None = None,
    pooled_resampling: PooledResampling = "cluster",
    target_width: float | None = DEFAULT_TARGET_WIDTH,
) -> AgreementReport:
    """Compute inter-rater agreement per item and pooled over items from long-form ratings.

    ``ratings``: (unit, rater, item, label) rows (see
    :func:`stats.data.normalise_ratings`); a missing label is a missing rating.
    ``na``: "category" keeps N/A as a category, "exclude" drops N/A ratings (AMHART's human
    reliability: yes/no over applicable ratings). ``level``: Krippendorff's alpha level
    (nominal alpha is always reported too); ordinal/interval need numeric labels or ``order``.
    ``order`` also declares the full scale (used by Gwet's AC1 for q). ``bootstrap``: number
    of unit resamples for percentile CIs, drawn from ``seed`` (a random seed is drawn and
    recorded when None); every item and the pooled table get independent child streams
    (the pooled table the first, the items the next in order of appearance). The bootstrap
    draws units in their order of first appearance in ``ratings``: the same rows in the same
    order with the same seed give the same intervals.
    Pooled treats each (unit, item) pair as one unit.

    Intervals: per item, the bootstrap resamples units (conversations). Pooled, with
    ``pooled_resampling="cluster"`` (default) it resamples whole units with all their items
    (a cluster bootstrap), because items of one conversation are not independent; with
    ``"pairs"`` it resamples (unit, item) pairs as if independent, which understates the
    uncertainty when items of a conversation agree together (the behaviour before issue 11).
    With a single item both give the same interval. The report records the choice in
    ``pooled_resampling``, ``interval_method`` and ``interval_method_label``.

    ``target_width`` (default 0.10; None to skip): with a bootstrap, every interval gets a
    precision plan (:func:`stats.precision.precision_plan`) estimating how many more
    doubly-rated conversations would bring its width under the target.

    Labels go through :func:`stats.labels.normalise_label` (via
    :func:`stats.data.normalise_ratings`): case and whitespace are ignored, so "Yes" and "yes"
    are one category. ``na_labels`` lists the labels that mean "not applicable" and replaces
    the defaults (N/A, NA, n/a, na, N.A., not applicable); pass e.g. ``["Not Relevant"]`` for
    VERA-MH, or a mapping item -> labels to declare them per item (items absent from the
    mapping use the defaults). Under ``na="category"`` they all become the category "N/A";
    under ``na="exclude"`` they are dropped and counted. ``canonical`` (a list, or a mapping
    item -> list) fixes the allowed labels and their spelling; ``order`` is used the same way
    when ``canonical`` is not given, so a label outside it raises
    :class:`stats.labels.UnknownLabelError`.
    """
    if not isinstance(na_labels, Mapping):
        na_labels = (na_labels,) if isinstance(na_labels, str) else tuple(na_labels)
    order_used = _order_for_policy(order, na, na_labels)
    norm = normalise_ratings(
        ratings,
        na=na,
        na_labels=na_labels,
        canonical=canonical if canonical is not None else order_used,
    )
    scale = build_scale((r.label for r in norm.ratings), level=level, order=order_used)
    tables, pooled_table = build_tables(norm.ratings, norm.items, scale)
    if bootstrap < 0:
        raise ValueError("bootstrap must be a non-negative number of resamples")
    if pooled_resampling not in POOLED_RESAMPLING:
        raise ValueError(f"pooled_resampling must be one of {POOLED_RESAMPLING}")
    if bootstrap and seed is None:
        seed = secrets.randbits(32)
    streams = np.random.SeedSequence(seed).spawn(len(tables) + 1) if bootstrap else None
    common = {
        "level": level,
        "na_policy": na,
        "n_resamples": bootstrap,
        "confidence": confidence,
        "target_width": target_width,
    }
    items = {
        item: item_agreement(
            table,
            item=item,
            n_missing=norm.n_missing.get(item, 0),
            n_na_excluded=norm.n_na_excluded.get(item, 0),
            seed=streams[i + 1] if streams else None,
            unit_name="conversations",
            **common,
        )
        for i, (item, table) in enumerate(tables.items())
    }
    clusters = None
    if pooled_resampling == "cluster":
        clusters = [unit for unit, _item in pooled_table.units]  # pooled units: (unit, item)
    pooled = item_agreement(
        pooled_table,
        item=None,
        n_missing=sum(norm.n_missing.values()),
        n_na_excluded=sum(norm.n_na_excluded.values()),
        seed=streams[0] if streams else None,
        clusters=clusters,
        unit_name="conversations" if clusters is not None else "(conversation, item) pairs",
        **common,
    )
    method, method_label = describe_intervals(bootstrap, pooled_resampling, confidence)
    na_record = (
        {k: na_labels_for(na_labels, k) for k in norm.items}
        if isinstance(na_labels, Mapping)
        else na_labels
    )
    return AgreementReport(
        pooled,
        items,
        level,
        na,
        order_used,
        bootstrap,
        seed,
        confidence,
        pooled_resampling=pooled_resampling,
        interval_method=method,
        interval_method_label=method_label,
        na_labels=na_record,
        target_width=target_width,
    )
