"""A held-out test set for judge development: split conversations once into development and test.

Judges are tuned (prompts, models, ensembles) by comparing them with clinicians; agreement
measured on the labels that guided the tuning is optimistic. The remedy is the one of
machine learning (Hastie, Tibshirani & Friedman, *The Elements of Statistical Learning*,
2nd ed., sec. 7.2; Cawley & Talbot, JMLR 11, 2010, on selection bias from reusing the test
data): split the rated conversations once, iterate freely on the development set, and
evaluate on the test set only the version declared final.

The split is a stratified simple random sample of the test set without replacement, the
strata nested levels (chatbot, then persona within chatbot). Allocation is proportional and
nested: the test size is shared among the first level's groups by largest remainder (each
group gets the floor or the ceiling of its quota ``n · N_g / N``), then each group's share
among its second-level groups the same way, and so on. So every chatbot's test share is
within one conversation of the overall fraction, and every (chatbot, persona) cell within
one conversation of its chatbot's share. Ties between equal remainders are broken by the
seeded generator (never by the order of the keys, which would favour the first chatbot
every time). Inside a cell the test conversations are drawn uniformly with the same
generator. The same unit ids in the same order, the same strata and the same seed give the
same split.

:func:`holdout_size_guidance` says how large the test set must be for the alternative
annotator test (:mod:`stats.alt_test`: at least 30 instances per rater, three raters) to
reach a verdict on the test set alone.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .alt_test import MIN_INSTANCES_PER_RATER, MIN_RATERS, SUGGESTED_INSTANCES
from .data import StatsInputError

__all__ = [
    "HoldoutSplit",
    "HoldoutStratum",
    "SizeGuidance",
    "holdout_split",
    "largest_remainder",
    "holdout_size_guidance",
]

METHOD = (
    "stratified simple random sample without replacement; proportional nested allocation "
    "(chatbot, then persona within chatbot) by largest remainder, ties broken by the seed"
)


@dataclass(frozen=True)
class HoldoutStratum:
    """One cell of the split: its key (a tuple of levels), size, test and development counts."""

    key: tuple[Hashable, ...]
    population: int
    test: int
    quota: float  # the cell's proportional share of the test set, n · N_h / N

    @property
    def dev(self) -> int:
        return self.population - self.test


@dataclass(frozen=True)
class HoldoutSplit:
    """The development and test sets, in the order the unit ids were given."""

    seed: int
    n_test: int
    population: int
    test: tuple[Hashable, ...]
    dev: tuple[Hashable, ...]
    strata: tuple[HoldoutStratum, ...]
    method: str = METHOD

    @property
    def n_dev(self) -> int:
        return self.population - self.n_test

    def part_of(self, unit: Hashable) -> str:
        """Return "test" or "dev" for a unit of the split."""
        return "test" if unit in set(self.test) else "dev"

    def as_dict(self) -> dict[str, Any]:
        """Return a JSON-ready mapping (unit ids and keys as given)."""
        return {
            "seed": self.seed,
            "n_test": self.n_test,
            "n_dev": self.n_dev,
            "population": self.population,
            "method": self.method,
            "test": list(self.test),
            "dev": list(self.dev),
            "strata": [
                {"key": list(s.key), "population": s.population, "test": s.test, "dev": s.dev, "quota": s.quota}
                for s in self.strata
            ],
        }


def largest_remainder(sizes: Sequence[int], n: int, rng: np.random.Generator) -> list[int]:
    """Share ``n`` among groups in proportion to ``sizes``: each gets floor or ceiling of its quota.

    Quota of group g: ``n · size_g / Σ size``. Floors first; the units left go to the largest
    remainders, ties in random order (``rng``). Needs 0 <= n <= Σ size.
    """
    total = sum(sizes)
    if not 0 <= n <= total:
        raise StatsInputError(f"cannot share {n} among groups of {total}")
    if total == 0:
        return [0] * len(sizes)
    quotas = [n * s / total for s in sizes]
    counts = [math.floor(q + 1e-9) for q in quotas]
    left = n - sum(counts)
    if left:
        tiebreak = rng.permutation(len(sizes))
        # Largest remainder first; among equal remainders the random permutation decides.
        order = sorted(range(len(sizes)), key=lambda g: (-round(quotas[g] - counts[g], 9), tiebreak[g]))
        for g in order[:left]:
            counts[g] += 1
    return counts


def _nested(keys: list[tuple[Hashable, ...]], members: list[int], n: int, depth: int, rng: np.random.Generator,
            out: dict[tuple[Hashable, ...], int]) -> None:
    """Allocate ``n`` test units among ``members`` level by level from ``depth``; fill ``out``."""
    if depth == len(keys[members[0]]):
        out[keys[members[0]]] = n
        return
    groups: dict[Hashable, list[int]] = {}
    for i in members:
        groups.setdefault(keys[i][depth], []).append(i)
    names = list(groups)
    counts = largest_remainder([len(groups[g]) for g in names], n, rng)
    for name, count in zip(names, counts, strict=True):
        _nested(keys, groups[name], count, depth + 1, rng, out)


def holdout_split(unit_ids: Sequence[Hashable], strata: Sequence[Sequence[Hashable]], n_test: int, seed: int) -> HoldoutSplit:
    """Split units into a test set of ``n_test`` and a development set, stratified by nested levels.

    ``strata`` gives each unit's levels, e.g. (chatbot, persona), aligned with ``unit_ids``;
    every unit needs the same number of levels (zero levels: a simple random split). See the
    module docstring for the allocation. Raises StatsInputError for no or duplicate units,
    mismatched lengths, or ``n_test`` outside 1..N-1 (both sets need a conversation).
    """
    units = list(unit_ids)
    if not units:
        raise StatsInputError("no conversation to split")
    if len(set(units)) != len(units):
        raise StatsInputError("unit ids must be unique")
    keys = [tuple(s) for s in strata]
    if len(keys) != len(units):
        raise StatsInputError(f"strata has {len(keys)} entries for {len(units)} unit ids")
    if len({len(k) for k in keys}) != 1:
        raise StatsInputError("every unit needs the same number of stratification levels")
    if isinstance(n_test, bool) or not isinstance(n_test, int | np.integer):
        raise StatsInputError(f"the test size must be a whole number, not {n_test!r}")
    if not 1 <= n_test <= len(units) - 1:
        raise StatsInputError(
            f"the test size must be between 1 and {len(units) - 1} (both sets need a conversation), not {n_test}"
        )
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
        raise StatsInputError(f"the seed must be a whole number of 0 or more, not {seed!r}")
    rng = np.random.default_rng(int(seed))
    counts: dict[tuple[Hashable, ...], int] = {}
    _nested(keys, list(range(len(units))), int(n_test), 0, rng, counts)
    cells: dict[tuple[Hashable, ...], list[int]] = {}
    for i, key in enumerate(keys):
        cells.setdefault(key, []).append(i)
    chosen = np.zeros(len(units), dtype=bool)
    strata_out = []
    for key, members in cells.items():
        count = counts[key]
        if count:
            chosen[rng.choice(np.array(members), size=count, replace=False)] = True
        strata_out.append(HoldoutStratum(key, len(members), count, n_test * len(members) / len(units)))
    return HoldoutSplit(
        seed=int(seed),
        n_test=int(n_test),
        population=len(units),
        test=tuple(u for u, c in zip(units, chosen, strict=True) if c),
        dev=tuple(u for u, c in zip(units, chosen, strict=True) if not c),
        strata=tuple(strata_out),
    )


@dataclass(frozen=True)
class SizeGuidance:
    """How large a test set the alternative annotator test needs, for one study design.

    ``per_item`` and ``pooled``: the smallest test size at which the third best-covered rater
    (the test needs three) is expected to have 30 instances, per item (one instance per test
    conversation) and pooled over ``items`` items; None when no size is enough (fewer than
    three raters). ``suggested``: the same for the 50 instances the paper suggests per rater.
    ``default``: the proposed size (module docstring of :func:`holdout_size_guidance`).
    """

    population: int
    items: int
    conversations_per_rater: tuple[int, ...]
    per_item: int | None
    pooled: int | None
    suggested_per_item: int | None
    default: int
    notes: tuple[str, ...]

    def expected_per_rater(self, n_test: int) -> list[float]:
        """Return each rater's expected number of test conversations at a test size."""
        return [c * n_test / self.population for c in self.conversations_per_rater] if self.population else []

    def as_dict(self) -> dict[str, Any]:
        return {
            "population": self.population,
            "items": self.items,
            "conversations_per_rater": list(self.conversations_per_rater),
            "per_item": self.per_item,
            "pooled": self.pooled,
            "suggested_per_item": self.suggested_per_item,
            "default": self.default,
            "notes": list(self.notes),
            "min_instances_per_rater": MIN_INSTANCES_PER_RATER,
            "min_raters": MIN_RATERS,
            "suggested_instances": SUGGESTED_INSTANCES,
        }


def _needed(third: int, population: int, per_conversation: int, instances: int) -> int | None:
    """Return the smallest n with ``third · n / N · per_conversation >= instances`` (None: unreachable)."""
    if third <= 0 or per_conversation <= 0:
        return None
    n = math.ceil(instances * population / (third * per_conversation) - 1e-9)
    return n if n <= population - 1 else None


def holdout_size_guidance(conversations_per_rater: Sequence[int], population: int, items: int) -> SizeGuidance:
    """Return the test sizes the alternative annotator test needs, and a default size.

    ``conversations_per_rater``: how many of the ``population`` conversations each rater rates
    (from the study's assignments, or planned as N · k / R); ``items``: the items a judge is
    compared on (instances per conversation when pooled). A rater is expected to have
    ``c_r · n / N`` test conversations. The default is the per-item size when it leaves at least
    half of the conversations for development, else the pooled size, kept between 20% and 50%
    of the conversations (both sets stay useful); at least 1 and at most N - 1.
    """
    if population < 2:
        raise StatsInputError("a split needs at least two conversations")
    counts = tuple(sorted((int(c) for c in conversations_per_rater if c > 0), reverse=True))
    third = counts[MIN_RATERS - 1] if len(counts) >= MIN_RATERS else 0
    per_item = _needed(third, population, 1, MIN_INSTANCES_PER_RATER)
    pooled = _needed(third, population, max(items, 1), MIN_INSTANCES_PER_RATER)
    suggested = _needed(third, population, 1, SUGGESTED_INSTANCES)
    low, high = max(1, math.ceil(0.2 * population)), max(1, population // 2)
    notes = []
    if len(counts) < MIN_RATERS:
        notes.append(
            f"The alternative annotator test needs {MIN_RATERS} raters; this study has {len(counts)} with "
            "conversations, so no test size gives it a verdict (agreement and kappa are still reported)."
        )
        wanted = low
    elif per_item is not None and per_item <= high:
        wanted = per_item
    else:
        if per_item is None or per_item > high:
            notes.append(
                f"A verdict per item needs {MIN_INSTANCES_PER_RATER} test conversations for each of {MIN_RATERS} raters: "
                + (f"{per_item} conversations, more than half of the {population}." if per_item else
                   f"more than the {population} conversations hold.")
            )
        wanted = pooled if pooled is not None else high
    default = min(max(wanted, low), high)
    default = max(1, min(default, population - 1))
    return SizeGuidance(population, items, counts, per_item, pooled, suggested, default, tuple(notes))
