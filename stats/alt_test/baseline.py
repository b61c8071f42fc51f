"""What a constant judge would score: where the alt-test cannot tell it from a good judge.

When most human labels of an item are one label (84% "Best Practice" on a VERA-MH dimension),
a judge that never reads the conversation and always answers that label agrees with the other
raters about as often as a rater does, and can pass the alternative annotator test. The test
is right (it answers "does this judge align with the raters as well as a rater"); what it
cannot do there is tell a constant judge from a good one. This module runs the same test on
that constant judge: per item, every instance gets the item's most frequent human label;
pooled, each instance gets its own item's most frequent label (the constant judge of each
item). It reports, beside each verdict, the majority label's share among the human labels
and the constant judge's winning rate, advantage probability and verdict.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Iterable
from typing import Any

from .long import AltTestReport, alt_test_long
from .procedure import DEFAULT_Q, MIN_INSTANCES_PER_RATER, MIN_RATERS, AltTest, Scoring

CONSTANT_JUDGE = (
    "a constant judge that answers every instance of an item with that item's most frequent human label "
    "(ties: the label first in text order)"
)
CANNOT_TELL = "the test cannot tell a constant judge from a good one here"

Row = tuple[Hashable, Hashable, Hashable, Any]


def _majorities(ratings: list[Row]) -> dict[Hashable, tuple[Any, int, int]]:
    """Return, per item, its most frequent human label, that label's count and all labels' count."""
    by_item: dict[Hashable, Counter[Any]] = {}
    for _, _, item, label in ratings:
        if label is not None:
            by_item.setdefault(item, Counter())[label] += 1
    out = {}
    for item, counts in by_item.items():
        label, n = min(counts.items(), key=lambda kv: (-kv[1], str(kv[0])))
        out[item] = (label, n, sum(counts.values()))
    return out


def _summary(test: AltTest) -> dict[str, Any]:
    return {
        "passed": test.passed,
        "verdict": test.verdict,
        "winning_rate": test.winning_rate,
        "advantage_probability": test.advantage_probability,
    }


def constant_judge_baseline(
    ratings: Iterable[Row],
    *,
    epsilon: float,
    q: float = DEFAULT_Q,
    scoring: Scoring = "accuracy",
    min_raters: int = MIN_RATERS,
    min_instances_per_rater: int = MIN_INSTANCES_PER_RATER,
) -> dict[str, Any]:
    """Run the alt-test of the constant judge on the raters' own instances (long rows).

    ``ratings``: (unit, rater, item, label). The constant judge labels every (unit, item) a
    rater labelled, so it is tested on every instance with at least two raters, with the same
    epsilon, q, scoring, minimums and per-item Benjamini-Yekutieli step as the judges.
    Returns a JSON-ready mapping: ``pooled`` and ``items`` (label, majority share, verdict).
    """
    rows = [r for r in ratings if r[3] is not None]
    majorities = _majorities(rows)
    instances = dict.fromkeys((unit, item) for unit, _, item, _ in rows)
    constant = [(unit, item, majorities[item][0]) for unit, item in instances]
    report: AltTestReport = alt_test_long(
        rows, constant, judge="constant", epsilon=epsilon, q=q, scoring=scoring, min_raters=min_raters,
        min_instances_per_rater=min_instances_per_rater,
    )
    total = sum(n for _, _, n in majorities.values())
    top = sum(n for _, n, _ in majorities.values())
    return {
        "method": CONSTANT_JUDGE,
        "pooled": {**_summary(report.pooled), "majority_share": top / total if total else None},
        "items": {
            str(item): {
                **_summary(report.items[item]),
                "label": str(majorities[item][0]),
                "majority_share": majorities[item][1] / majorities[item][2],
            }
            for item in report.items
            if item in majorities
        },
    }
