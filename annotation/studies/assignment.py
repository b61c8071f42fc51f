"""Balanced assignment of raters to conversations. Pure Python plus numpy's seeded generator.

The design: every conversation gets ``k`` raters (or the study's composition, e.g. two
clinicians and one expert); every rater carries about the same load; and every pair of raters
shares as many conversations as the design allows, so pairwise agreement can be estimated.
A greedy pass over the conversations in a seeded random order picks, for each slot, the
eligible rater with the lowest (load, overlap with raters already chosen for this conversation,
random tie-break). With R raters and N*k slots the loads differ by at most one.
"""

from __future__ import annotations

import itertools
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np


class AssignmentDesignError(ValueError):
    """The requested design cannot be built (too few raters, bad composition...)."""


@dataclass(frozen=True)
class RaterSlot:
    rater: Hashable
    label: str = ""


@dataclass
class Plan:
    pairs: list[tuple[Hashable, Hashable]]  # (conversation, rater)
    orders: dict[Hashable, list[Hashable]]  # rater -> conversations in their randomised order
    load: dict[Hashable, int] = field(default_factory=dict)
    overlap: dict[tuple[Hashable, Hashable], int] = field(default_factory=dict)


def slots_needed(k: int, composition: Mapping[str, int] | None) -> dict[str, int]:
    """Return the raters needed per conversation by label ('' = any label)."""
    if composition:
        if any(int(n) < 0 for n in composition.values()):
            raise AssignmentDesignError("composition counts must be positive")
        total = sum(int(n) for n in composition.values())
        if k and total != k:
            raise AssignmentDesignError(f"the composition asks for {total} raters per conversation but k is {k}")
        return {str(label): int(n) for label, n in composition.items() if int(n) > 0}
    if k < 1:
        raise AssignmentDesignError("k (raters per conversation) must be at least 1")
    return {"": k}


def _eligible(raters: Sequence[RaterSlot], label: str) -> list[Hashable]:
    return [r.rater for r in raters if not label or r.label == label]


def plan_assignments(
    conversations: Sequence[Hashable],
    raters: Sequence[RaterSlot],
    *,
    k: int,
    composition: Mapping[str, int] | None = None,
    seed: int,
    initial_load: Mapping[Hashable, int] | None = None,
) -> Plan:
    """Assign ``k`` raters to each conversation, balanced in load and pair overlap.

    ``initial_load``: conversations each rater already holds (a study that grows), so the
    new work goes first to the least loaded.
    """
    needed = slots_needed(k, composition)
    ids = [r.rater for r in raters]
    if len(set(ids)) != len(ids):
        raise AssignmentDesignError("a rater is listed twice")
    for label, count in needed.items():
        pool = _eligible(raters, label)
        if len(pool) < count:
            what = f"raters labelled '{label}'" if label else "raters"
            raise AssignmentDesignError(f"{count} {what} needed per conversation but only {len(pool)} available")
    rng = np.random.default_rng(seed)
    load = {r: int((initial_load or {}).get(r, 0)) for r in ids}
    overlap: dict[tuple[Hashable, Hashable], int] = {}
    tiebreak = {r: float(x) for r, x in zip(ids, rng.random(len(ids)), strict=True)}
    pairs: list[tuple[Hashable, Hashable]] = []
    order = list(conversations)
    rng.shuffle(order)
    for conversation in order:
        chosen: list[Hashable] = []
        for label, count in needed.items():
            for _ in range(count):
                pick = pick_rater(_eligible(raters, label), chosen, load, overlap, tiebreak)
                chosen.append(pick)
                load[pick] += 1
        for a, b in itertools.combinations(chosen, 2):
            key = _pair(a, b)
            overlap[key] = overlap.get(key, 0) + 1
        pairs.extend((conversation, r) for r in chosen)
        # Re-draw tie-breaks so equal raters do not always win in the same order.
        tiebreak = {r: float(x) for r, x in zip(ids, rng.random(len(ids)), strict=True)}
    return Plan(pairs=pairs, orders=rater_orders(pairs, seed=seed), load=load, overlap=overlap)


def pick_rater(
    pool: Sequence[Hashable],
    chosen: Sequence[Hashable],
    load: Mapping[Hashable, int],
    overlap: Mapping[tuple[Hashable, Hashable], int],
    tiebreak: Mapping[Hashable, float] | None = None,
) -> Hashable:
    """Return the eligible rater with the least load, then least overlap with ``chosen``."""
    candidates = [r for r in pool if r not in chosen]
    if not candidates:
        raise AssignmentDesignError("no eligible rater left for this conversation")
    tiebreak = tiebreak or {}

    def cost(r: Hashable) -> tuple[int, int, float]:
        return (load.get(r, 0), sum(overlap.get(_pair(r, c), 0) for c in chosen), tiebreak.get(r, 0.0))

    return min(candidates, key=cost)


def rater_orders(pairs: Sequence[tuple[Hashable, Hashable]], *, seed: int) -> dict[Hashable, list[Hashable]]:
    """Return each rater's conversations in an order randomised per rater from the seed."""
    by_rater: dict[Hashable, list[Hashable]] = {}
    for conversation, rater in pairs:
        by_rater.setdefault(rater, []).append(conversation)
    orders = {}
    for index, rater in enumerate(sorted(by_rater, key=str)):
        items = sorted(by_rater[rater], key=str)
        rng = np.random.default_rng([seed, index])
        orders[rater] = [items[i] for i in rng.permutation(len(items))]
    return orders


def pair_overlap(pairs: Sequence[tuple[Hashable, Hashable]]) -> dict[tuple[Hashable, Hashable], int]:
    """Return, for every pair of raters, how many conversations they both rate."""
    raters_of: dict[Hashable, list[Hashable]] = {}
    for conversation, rater in pairs:
        raters_of.setdefault(conversation, []).append(rater)
    result: dict[tuple[Hashable, Hashable], int] = {}
    for raters in raters_of.values():
        for a, b in itertools.combinations(sorted(set(raters), key=str), 2):
            result[(a, b)] = result.get((a, b), 0) + 1
    return result


def _pair(a: Hashable, b: Hashable) -> tuple[Hashable, Hashable]:
    return (a, b) if str(a) <= str(b) else (b, a)
