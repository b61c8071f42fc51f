"""Issue 31, defect 3: where a constant judge would pass the alt-test, the verdict says the test
cannot tell it from a good judge (pooled and per item)."""

from __future__ import annotations

import numpy as np

from stats.alt_test import alt_test_long, constant_judge_baseline


def _ratings(seed: int = 3, n: int = 120):
    """Four raters, 92% accurate; "risk" is Best Practice on 84% of conversations, "validate" on half."""
    rng = np.random.default_rng(seed)
    truth = {}
    for c in range(n):
        truth[(f"c{c}", "risk")] = "Best Practice" if rng.random() < 0.84 else "Suboptimal"
        truth[(f"c{c}", "validate")] = "Best Practice" if rng.random() < 0.5 else "Suboptimal"
    rows = []
    for (unit, item), label in truth.items():
        for rater in ("ana", "ben", "cy", "dee"):
            other = "Suboptimal" if label == "Best Practice" else "Best Practice"
            rows.append((unit, rater, item, label if rng.random() < 0.92 else other))
    return rows


def test_the_constant_judge_passes_where_one_label_dominates_and_fails_where_labels_are_balanced():
    rows = _ratings()
    baseline = constant_judge_baseline(rows, epsilon=0.2)
    risk, validate = baseline["items"]["risk"], baseline["items"]["validate"]
    assert risk["label"] == "Best Practice" and risk["majority_share"] > 0.75
    assert risk["passed"] is True  # the test cannot tell it from a good judge on this item
    assert validate["passed"] is False and 0.4 < validate["majority_share"] < 0.6
    assert baseline["method"].startswith("a constant judge that answers every instance of an item")


def test_the_baseline_is_the_alt_test_of_the_explicit_constant_judge():
    rows = _ratings(5)
    baseline = constant_judge_baseline(rows, epsilon=0.15)
    counts: dict = {}
    for _, _, item, label in rows:
        counts.setdefault(item, {}).setdefault(label, 0)
        counts[item][label] += 1
    majority = {item: max(sorted(c), key=lambda lab: c[lab]) for item, c in counts.items()}
    explicit = alt_test_long(rows, [(u, i, majority[i]) for u, i in dict.fromkeys((u, i) for u, _, i, _ in rows)],
                             judge="constant", epsilon=0.15)
    assert baseline["pooled"]["winning_rate"] == explicit.pooled.winning_rate
    assert baseline["pooled"]["advantage_probability"] == explicit.pooled.advantage_probability
    for item, test in explicit.items.items():
        assert baseline["items"][item]["passed"] == test.passed
        assert baseline["items"][item]["winning_rate"] == test.winning_rate


def test_below_the_minimums_the_baseline_cannot_decide_either():
    rows = [r for r in _ratings() if int(r[0][1:]) < 10]  # 10 conversations: under 30 instances per rater per item
    baseline = constant_judge_baseline(rows, epsilon=0.2)
    assert baseline["items"]["risk"]["passed"] is None
    assert baseline["items"]["risk"]["verdict"].startswith("cannot decide yet")
