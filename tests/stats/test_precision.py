"""Precision planning: the width now and the conversations needed for a target width."""

from __future__ import annotations

import math

import numpy as np
import pytest

from stats import agreement_report, precision_plan


def test_hand_computed_plans() -> None:
    # n_needed = ceil(n * (width / target)^2)
    plan = precision_plan(0.20, 50, 0.10)
    assert (plan.n_needed, plan.n_more_needed) == (200, 150)
    assert "150 more" in plan.note and "1/sqrt(n)" in plan.note
    # 100 * 1.5^2 = 225 exactly; floating point must not round it up to 226.
    assert precision_plan(0.15, 100).n_needed == 225
    # ceil(40 * 0.8^2) = ceil(25.6) = 26 <= 40: already within the target.
    within = precision_plan(0.08, 40)
    assert (within.n_needed, within.n_more_needed) == (26, 0)
    assert "within the target" in within.note
    assert precision_plan(0.0, 10).n_more_needed == 0


def test_the_default_target_is_a_width_of_one_tenth() -> None:
    assert precision_plan(0.30, 10).target == 0.10
    assert precision_plan(0.30, 10).n_needed == 90


@pytest.mark.parametrize("width", [None, math.nan])
def test_an_undefined_width_gives_no_plan_and_says_why(width: float | None) -> None:
    plan = precision_plan(width, 30)
    assert plan.n_needed is None and plan.n_more_needed is None
    assert "undefined" in plan.note


def test_fewer_than_two_units_give_no_plan() -> None:
    plan = precision_plan(0.4, 1)
    assert plan.n_more_needed is None and "too few" in plan.note


def test_a_non_positive_target_is_rejected() -> None:
    with pytest.raises(ValueError, match="target_width"):
        precision_plan(0.2, 10, 0.0)


def _rows(n_conversations: int, seed: int, copies: int = 1) -> list[tuple]:
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, 3, n_conversations)
    noise = rng.integers(0, 3, (n_conversations, 3))
    labels = np.where(rng.random((n_conversations, 3)) < 0.7, truth[:, None], noise)
    return [
        (f"c{c}-copy{k}", f"r{r}", "q1", ["yes", "no", "N/A"][labels[c, r]])
        for k in range(copies)
        for c in range(n_conversations)
        for r in range(3)
    ]


def test_doubling_the_conversations_shrinks_the_width_by_about_root_two() -> None:
    n = 150
    once = agreement_report(_rows(n, 1), bootstrap=4000, seed=1).items["q1"]
    twice = agreement_report(_rows(n, 1, copies=2), bootstrap=4000, seed=1).items["q1"]
    for name in ("krippendorff_alpha", "fleiss_kappa", "gwet_ac1"):
        w1, w2 = once.cis[name].width, twice.cis[name].width
        assert w1 is not None and w2 is not None
        assert w2 / w1 == pytest.approx(1 / math.sqrt(2), abs=0.06), name
        # Planning for the doubled data's width asks for about n more conversations.
        plan = once.precision[name]
        assert plan.n_units == n and plan.width == w1
        more = precision_plan(w1, n, target_width=w2).n_more_needed
        assert more == pytest.approx(n, rel=0.2), name


def test_the_report_attaches_a_plan_to_every_interval() -> None:
    rows = _rows(40, 2) + [
        (f"c{c}-copy0", f"r{r}", "q2", "yes" if (c + r) % 4 else "no")
        for c in range(30)
        for r in range(2)
    ]
    report = agreement_report(rows, bootstrap=300, seed=4, target_width=0.05)
    q1 = report.items["q1"]
    assert set(q1.precision) == set(q1.cis)
    assert q1.precision["krippendorff_alpha"].n_units == q1.n_units_pairable == 40
    assert q1.precision["krippendorff_alpha"].unit == "conversations"
    assert q1.precision["krippendorff_alpha"].target == 0.05
    # Pooled under the cluster bootstrap: counted in conversations, not (conversation, item).
    assert report.pooled.precision["krippendorff_alpha"].n_units == 40
    data = report.as_dict()
    assert data["target_width"] == 0.05
    assert data["items"]["q2"]["precision"]["gwet_ac1"]["n_units"] == 30
    pairs = agreement_report(rows, bootstrap=300, seed=4, pooled_resampling="pairs")
    assert pairs.pooled.precision["krippendorff_alpha"].n_units == 70
    assert pairs.pooled.precision["krippendorff_alpha"].unit == "(conversation, item) pairs"


def test_no_bootstrap_or_no_target_gives_no_plan() -> None:
    rows = _rows(20, 3)
    assert agreement_report(rows).items["q1"].precision == {}
    assert (
        agreement_report(rows, bootstrap=50, seed=1, target_width=None).items["q1"].precision == {}
    )
