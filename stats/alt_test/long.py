"""The alt-test from long rows: instances are (unit, item) pairs, pooled and per item."""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from dataclasses import dataclass
from typing import Any

from .procedure import (
    DEFAULT_Q,
    MIN_INSTANCES_PER_RATER,
    MIN_RATERS,
    AltTest,
    Scoring,
    _check,
    _conclude,
    _prepare,
    alt_test,
    benjamini_yekutieli,
)


@dataclass(frozen=True)
class AltTestReport:
    """A judge's alt-test pooled over items and per item.

    Per item, the Benjamini-Yekutieli step runs once over every (item, rater) p-value of the
    judge, as the paper's FAQ asks when one judge is tested in several settings; then each
    item's winning rate is computed on its own ("passes on X of Y items").
    """

    judge: Hashable
    pooled: AltTest
    items: dict[Hashable, AltTest]

    @property
    def items_passed(self) -> int:
        """Return the number of items on which the judge passes."""
        return sum(1 for t in self.items.values() if t.passed)

    @property
    def items_decided(self) -> int:
        """Return the number of items with a verdict (minimums met)."""
        return sum(1 for t in self.items.values() if t.passed is not None)

    def as_dict(self) -> dict[str, Any]:
        """Return a JSON-ready mapping: the pooled test's fields, plus ``items``."""
        return {
            **self.pooled.as_dict(),
            "judge": str(self.judge),
            "items": {str(k): v.as_dict() for k, v in self.items.items()},
            "items_passed": self.items_passed,
            "items_decided": self.items_decided,
        }


Row = tuple[Hashable, Hashable, Hashable, Any]


def alt_test_long(
    ratings: Iterable[Row],
    judge_rows: Iterable[tuple[Hashable, Hashable, Any]],
    *,
    judge: Hashable = "judge",
    epsilon: float,
    q: float = DEFAULT_Q,
    scoring: Scoring = "accuracy",
    min_raters: int = MIN_RATERS,
    min_instances_per_rater: int = MIN_INSTANCES_PER_RATER,
) -> AltTestReport:
    """Run the alt-test from long rows, instances being (unit, item) pairs.

    ``ratings``: (unit, rater, item, label); ``judge_rows``: (unit, item, label) of one judge.
    Pooled: every (unit, item) pair is an instance. Per item: the units are the instances,
    with one Benjamini-Yekutieli step over all the judge's (item, rater) tests.
    """
    _check(epsilon, q, scoring)
    humans: dict[Hashable, dict[tuple[Hashable, Hashable], Any]] = {}
    items: list[Hashable] = []
    for unit, rater, item, label in ratings:
        if label is None:
            continue
        humans.setdefault(rater, {})[(unit, item)] = label
        items.append(item)
    humans = dict(sorted(humans.items(), key=lambda kv: str(kv[0])))  # raters in name order on every output
    machine = {(unit, item): label for unit, item, label in judge_rows if label is not None}
    items = list(dict.fromkeys([*items, *(k[1] for k in machine)]))
    pooled = alt_test(humans, machine, epsilon=epsilon, q=q, scoring=scoring, min_raters=min_raters,
                      min_instances_per_rater=min_instances_per_rater)
    prepared = {}
    for item in items:
        item_humans = {r: {k: v for k, v in m.items() if k[1] == item} for r, m in humans.items()}
        item_humans = {r: m for r, m in item_humans.items() if m}
        item_judge = {k: v for k, v in machine.items() if k[1] == item}
        prepared[item] = _prepare(item_humans, item_judge, epsilon=epsilon, scoring=scoring,
                                  min_instances_per_rater=min_instances_per_rater)
    flat = [t.p for tested, _, _ in prepared.values() for t in tested]
    rejected, adjusted = benjamini_yekutieli(flat, q)
    per_item: dict[Hashable, AltTest] = {}
    start = 0
    for item, (tested, excluded, counts) in prepared.items():
        stop = start + len(tested)
        per_item[item] = _conclude(
            tested, excluded, counts, rejected[start:stop], adjusted[start:stop], epsilon=epsilon, q=q,
            scoring=scoring, min_raters=min_raters, min_instances_per_rater=min_instances_per_rater,
        )
        start = stop
    return AltTestReport(judge, pooled, per_item)
