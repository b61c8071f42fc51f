"""The development/test split: stratified by chatbot then persona, reproducible from its seed,
and the test size the alternative annotator test needs."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest

from stats.data import StatsInputError
from stats.holdout import holdout_size_guidance, holdout_split, largest_remainder


def _design(chatbots: int = 3, personas: int = 5, reps: tuple[int, ...] = (2, 3, 1, 4, 2)) -> tuple[list[str], list[tuple[str, str]]]:
    units, strata = [], []
    for c in range(chatbots):
        for p in range(personas):
            for r in range(reps[p % len(reps)] + (c == 1)):  # chatbot 1 has one more of each: unequal cells
                units.append(f"c{c}-p{p}-r{r}")
                strata.append((f"bot{c}", f"persona{p}"))
    return units, strata


def test_the_same_seed_gives_the_same_split_and_another_seed_another():
    units, strata = _design()
    a = holdout_split(units, strata, 12, seed=2024)
    b = holdout_split(units, strata, 12, seed=2024)
    c = holdout_split(units, strata, 12, seed=2025)
    assert a.test == b.test and a.dev == b.dev and a.strata == b.strata
    assert a.test != c.test
    assert a.seed == 2024 and a.as_dict()["seed"] == 2024


def test_every_unit_is_in_exactly_one_set_and_the_sizes_are_as_asked():
    units, strata = _design()
    for n in (1, 7, 20, len(units) - 1):
        split = holdout_split(units, strata, n, seed=n)
        assert len(split.test) == n and len(split.dev) == len(units) - n
        assert set(split.test) | set(split.dev) == set(units) and not set(split.test) & set(split.dev)
        assert split.n_dev == len(units) - n


def test_each_chatbot_gets_its_share_and_each_cell_its_chatbots_share_within_one():
    """Nested largest remainder: chatbots within one conversation of n · N_c / N; cells within
    one of their chatbot's count shared in proportion."""
    units, strata = _design()
    of = dict(zip(units, strata, strict=True))
    total = len(units)
    for seed in range(30):
        for n in (5, 13, 21):
            split = holdout_split(units, strata, n, seed=seed)
            test = set(split.test)
            bots = Counter(s[0] for s in strata)
            bot_test = Counter(of[u][0] for u in test)
            for bot, size in bots.items():
                assert math.floor(n * size / total) <= bot_test[bot] <= math.ceil(n * size / total)
            cells = Counter(strata)
            cell_test = Counter(of[u] for u in test)
            for cell, size in cells.items():
                quota = bot_test[cell[0]] * size / bots[cell[0]]
                assert math.floor(quota) <= cell_test[cell] <= math.ceil(quota)
            assert sum(s.test for s in split.strata) == n
            assert {s.key: s.test for s in split.strata} == {k: cell_test[k] for k in cells}


def test_ties_between_equal_cells_are_not_always_won_by_the_first_chatbot():
    """Six chatbots with 2 conversations each and 3 test places: who gets one is the seed's choice."""
    units = [f"u{i}" for i in range(12)]
    strata = [(f"bot{i // 2}",) for i in range(12)]
    winners = Counter()
    for seed in range(60):
        split = holdout_split(units, strata, 3, seed=seed)
        winners.update(s.key[0] for s in split.strata if s.test)
    assert set(winners) == {f"bot{i}" for i in range(6)}


def test_within_a_cell_every_conversation_is_equally_likely_to_be_held_out():
    units = [f"u{i}" for i in range(6)]
    strata = [("a", "x")] * 6
    held = Counter()
    for seed in range(3000):
        held.update(holdout_split(units, strata, 2, seed=seed).test)
    shares = np.array([held[u] / 3000 for u in units])
    assert np.allclose(shares, 2 / 6, atol=0.04)


def test_largest_remainder_gives_floor_or_ceiling_and_sums_to_n():
    rng = np.random.default_rng(1)
    counts = largest_remainder([5, 3, 2], 4, rng)
    assert sum(counts) == 4 and counts[0] == 2  # quotas 2.0, 1.2, 0.8
    assert sorted(counts[1:]) == [1, 1]


@pytest.mark.parametrize(
    ("n_test", "message"),
    [(0, "between 1 and"), (10, "between 1 and"), (2.5, "whole number")],
)
def test_a_test_size_that_leaves_a_set_empty_is_refused(n_test, message):
    units = [f"u{i}" for i in range(10)]
    with pytest.raises(StatsInputError, match=message):
        holdout_split(units, [()] * 10, n_test, seed=1)


def test_bad_inputs_are_refused_with_the_reason():
    with pytest.raises(StatsInputError, match="unique"):
        holdout_split(["a", "a", "b"], [()] * 3, 1, seed=1)
    with pytest.raises(StatsInputError, match="entries"):
        holdout_split(["a", "b"], [()], 1, seed=1)
    with pytest.raises(StatsInputError, match="seed"):
        holdout_split(["a", "b"], [(), ()], 1, seed=-1)


def test_the_guidance_gives_the_size_at_which_three_raters_reach_thirty_instances():
    """90 conversations, three raters who rate all of them (VERA-MH's clinician study): a third
    of the conversations gives each rater 30 test conversations, the per-item minimum."""
    guidance = holdout_size_guidance([90, 90, 90], 90, items=5)
    assert guidance.per_item == 30
    assert guidance.pooled == 6  # 6 conversations x 5 dimensions = 30 instances per rater
    assert guidance.default == 30
    assert guidance.expected_per_rater(30) == [30.0, 30.0, 30.0]
    assert guidance.suggested_per_item == 50


def test_the_guidance_falls_back_to_pooled_when_per_item_needs_more_than_half():
    """40 conversations, 4 raters rating 30 each: per item would need 40 (all), so the default is
    the pooled size kept at 20% or more, and a note says why."""
    guidance = holdout_size_guidance([30, 30, 30, 30], 40, items=14)
    assert guidance.per_item is None  # 30 * 40 / 30 = 40 > 39
    assert guidance.pooled == 3
    assert guidance.default == 8  # 20% of 40
    assert guidance.notes and "per item" in guidance.notes[0]


def test_the_guidance_says_when_no_size_gives_a_verdict():
    guidance = holdout_size_guidance([50, 50], 50, items=14)
    assert guidance.per_item is None and guidance.pooled is None
    assert "needs 3 raters" in guidance.notes[0]
    assert 1 <= guidance.default <= 49
