"""The balanced assignment design (pure): k raters each, even loads, shared pairs, a seed."""

from __future__ import annotations

import itertools
from collections import Counter

import pytest

from annotation.studies.assignment import (
    AssignmentDesignError,
    RaterSlot,
    pair_overlap,
    plan_assignments,
    rater_orders,
    slots_needed,
)

RATERS = [RaterSlot(f"r{i}") for i in range(6)]


def raters_of(plan) -> dict:  # type: ignore[no-untyped-def]
    result: dict = {}
    for conversation, rater in plan.pairs:
        result.setdefault(conversation, []).append(rater)
    return result


def test_every_conversation_gets_k_different_raters():
    plan = plan_assignments(range(40), RATERS, k=3, seed=1)
    by_conversation = raters_of(plan)
    assert set(by_conversation) == set(range(40))
    assert all(len(r) == 3 and len(set(r)) == 3 for r in by_conversation.values())


def test_loads_differ_by_at_most_one():
    plan = plan_assignments(range(41), RATERS, k=2, seed=7)
    loads = Counter(rater for _, rater in plan.pairs)
    assert max(loads.values()) - min(loads.values()) <= 1
    assert plan.load == dict(loads)


def test_every_pair_of_raters_shares_conversations_evenly():
    plan = plan_assignments(range(90), RATERS, k=3, seed=3)
    overlap = pair_overlap(plan.pairs)
    assert len(overlap) == 15  # all 6*5/2 pairs
    # A balanced design gives each pair 90*3*2/(6*5) = 18 shared conversations.
    assert min(overlap.values()) >= 14 and max(overlap.values()) <= 22


def test_the_same_seed_gives_the_same_plan_and_another_seed_another():
    a = plan_assignments(range(30), RATERS, k=2, seed=11)
    b = plan_assignments(range(30), RATERS, k=2, seed=11)
    c = plan_assignments(range(30), RATERS, k=2, seed=12)
    assert a.pairs == b.pairs and a.orders == b.orders
    assert a.pairs != c.pairs


def test_composition_gives_each_conversation_the_asked_mix_of_labels():
    raters = [RaterSlot("c1", "clinician"), RaterSlot("c2", "clinician"), RaterSlot("c3", "clinician"),
              RaterSlot("e1", "expert"), RaterSlot("e2", "expert")]
    label = {r.rater: r.label for r in raters}
    plan = plan_assignments(range(20), raters, k=3, composition={"clinician": 2, "expert": 1}, seed=5)
    for chosen in raters_of(plan).values():
        assert Counter(label[r] for r in chosen) == {"clinician": 2, "expert": 1}


def test_too_few_raters_for_k_is_refused():
    with pytest.raises(AssignmentDesignError, match="3 raters needed"):
        plan_assignments(range(5), RATERS[:2], k=3, seed=1)


def test_too_few_raters_of_a_label_is_refused():
    raters = [RaterSlot("c1", "clinician"), RaterSlot("e1", "expert")]
    with pytest.raises(AssignmentDesignError, match="labelled 'clinician'"):
        plan_assignments(range(5), raters, k=3, composition={"clinician": 2, "expert": 1}, seed=1)


def test_a_composition_that_does_not_add_up_to_k_is_refused():
    with pytest.raises(AssignmentDesignError, match="k is 2"):
        slots_needed(2, {"clinician": 2, "expert": 1})


def test_k_below_one_is_refused():
    with pytest.raises(AssignmentDesignError):
        slots_needed(0, None)


def test_a_rater_listed_twice_is_refused():
    with pytest.raises(AssignmentDesignError, match="twice"):
        plan_assignments(range(3), [RaterSlot("a"), RaterSlot("a"), RaterSlot("b")], k=2, seed=1)


def test_pair_overlap_counts_shared_conversations():
    pairs = [(1, "a"), (1, "b"), (2, "a"), (2, "b"), (2, "c"), (3, "c")]
    assert pair_overlap(pairs) == {("a", "b"): 2, ("a", "c"): 1, ("b", "c"): 1}


def test_each_rater_gets_their_own_conversations_in_a_shuffled_order():
    pairs = [(c, r) for c in range(30) for r in ("a", "b")]
    orders = rater_orders(pairs, seed=4)
    assert sorted(orders["a"]) == list(range(30)) and sorted(orders["b"]) == list(range(30))
    assert orders["a"] != orders["b"]


def test_no_conversation_goes_to_the_same_rater_twice_in_many_random_designs():
    for seed, k in itertools.product(range(5), (2, 3)):
        plan = plan_assignments(range(17), RATERS[:4], k=k, seed=seed)
        assert len(plan.pairs) == len(set(plan.pairs)) == 17 * k
