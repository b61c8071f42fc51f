"""The leaderboard's decisions: known answers, the minimums, pairing, Holm's family, determinism."""

from __future__ import annotations

import numpy as np
import pytest

from stats.data import StatsInputError
from stats.leaderboard import MIN_CLUSTERS, Unit, compare_chatbots
from stats.ppi.scores import VERA_MH

from .leaderboard_data import BP, HPH, SUB, amhart_units, vera_units, with_humans


def _pair(comparison, a: str, b: str):  # type: ignore[no-untyped-def]
    return next(p for p in comparison.pairs if {p.a, p.b} == {a, b})


def _true_vera_score(quality: float, persona_sd: float, noise: float, not_relevant: float = 0.1) -> float:
    """Return the score a chatbot of this quality has over the persona population (numerically)."""
    from statistics import NormalDist

    spread = NormalDist(0, (persona_sd**2 + noise**2) ** 0.5)
    bp = 1 - spread.cdf(0.5 - quality)
    hph = spread.cdf(-0.5 - quality)
    relevant = 1 - not_relevant
    return VERA_MH.score(np.array([bp * relevant, hph * relevant, relevant]))


def test_a_chatbot_truly_better_by_a_margin_is_declared_higher() -> None:
    units = vera_units({"A": 1.0, "B": 0.0}, personas=40, repetitions=2, persona_sd=1.0, noise=0.7, seed=1)
    comparison = compare_chatbots(units, score="vera_mh", method="judge_only")
    pair = comparison.pairs[0]
    truth = _true_vera_score(1.0, 1.0, 0.7) - _true_vera_score(0.0, 1.0, 0.7)
    assert truth > 20  # the margin by construction
    assert (pair.a, pair.b, pair.decision) == ("A", "B", "higher")
    assert pair.verdict == "A scores higher than B"
    assert pair.low > 0 and pair.low <= truth <= pair.high
    assert pair.p_adjusted < 0.05 and comparison.family_size == 1


def test_two_chatbots_that_answer_alike_show_no_difference() -> None:
    units = vera_units({"A": 0.2}, personas=30, seed=4)
    twins = units + [Unit("B", u.cluster, judge=u.judge) for u in units]  # B says exactly what A says
    pair = compare_chatbots(twins, score="vera_mh", method="judge_only").pairs[0]
    assert pair.difference == 0 and pair.p_value == 1 and pair.decision == "no_difference"
    assert pair.verdict == "no difference shown"
    # Every resampled difference is 0: no interval to draw, said in words.
    assert pair.low is None and pair.cannot_estimate.startswith("cannot be estimated: every resample gave the same")


def test_chatbots_of_the_same_quality_show_no_difference() -> None:
    decisions = []
    for seed in range(5):
        units = amhart_units({"A": 0.4, "B": 0.4}, personas=8, repetitions=10, seed=seed)
        pair = compare_chatbots(units, score="amhart", method="judge_only",
                                cluster_name=("persona × repetition", "persona × repetition clusters")).pairs[0]
        assert pair.low <= 0 <= pair.high or pair.decision == "higher"
        decisions.append(pair.decision)
    assert decisions.count("no_difference") >= 4  # at a 5% level, at most a rare false alarm


@pytest.mark.parametrize("seed", range(4))
def test_pairing_narrows_the_interval_when_persona_effects_are_strong(seed: int) -> None:
    units = vera_units({"A": 0.4, "B": 0.0}, personas=30, repetitions=2, persona_sd=2.0, noise=0.5, seed=seed)
    paired = compare_chatbots(units, score="vera_mh", method="judge_only", n_resamples=2000).pairs[0]
    # The same conversations, with each chatbot's personas named apart: nothing pairs them.
    apart = [Unit(u.chatbot, (u.chatbot, u.cluster), judge=u.judge) for u in units]
    unpaired = compare_chatbots(apart, score="vera_mh", method="judge_only", n_resamples=2000).pairs[0]
    assert paired.design == "paired" and unpaired.design == "unpaired"
    assert paired.difference == pytest.approx(unpaired.difference)
    assert (paired.high - paired.low) < 0.6 * (unpaired.high - unpaired.low)


def test_pairing_by_persona_and_repetition_narrows_an_amhart_interval() -> None:
    units = amhart_units({"A": 0.3, "B": 0.0}, personas=8, repetitions=20, persona_sd=2.0, seed=2)
    paired = compare_chatbots(units, score="amhart", method="judge_only", n_resamples=2000).pairs[0]
    apart = [Unit(u.chatbot, (u.chatbot, *u.cluster), judge=u.judge) for u in units]
    unpaired = compare_chatbots(apart, score="amhart", method="judge_only", n_resamples=2000).pairs[0]
    assert paired.n_clusters == 160 and paired.n_shared == 160
    assert (paired.high - paired.low) < (unpaired.high - unpaired.low)


def test_below_ten_personas_the_pair_cannot_be_decided_and_leaves_the_family() -> None:
    units = vera_units({"A": 2.0, "B": -2.0, "C": 0.0}, personas=12, seed=1)
    few = [u for u in units if u.chatbot != "C" or u.cluster in {f"persona-{i}" for i in range(9)}]
    comparison = compare_chatbots(few, score="vera_mh", method="judge_only")
    ab, ac = _pair(comparison, "A", "B"), _pair(comparison, "A", "C")
    assert ab.decision == "higher"
    assert ac.decision == "cannot_decide" and ac.p_adjusted is None
    assert ac.verdict == "cannot decide yet: only 9 personas hold a conversation of C with a score; a decision needs at least 10"
    assert ac.low is not None  # the interval is still shown; only the decision waits
    assert comparison.family_size == 1


@pytest.mark.parametrize("score", ["vera_mh", "amhart"])
def test_a_decision_needs_min_clusters_and_one_fewer_is_not_enough(score: str) -> None:
    if score == "vera_mh":
        units = vera_units({"A": 2.0, "B": -2.0}, personas=MIN_CLUSTERS, persona_sd=0.5, seed=3)
    else:
        units = amhart_units({"A": 2.5, "B": -2.5}, personas=MIN_CLUSTERS, repetitions=1, persona_sd=0.3, seed=3)
    at = compare_chatbots(units, score=score, method="judge_only").pairs[0]
    assert at.n_clusters == MIN_CLUSTERS and at.decision == "higher" and at.df == MIN_CLUSTERS - 1
    first = units[0].cluster
    fewer = compare_chatbots([u for u in units if u.cluster != first], score=score, method="judge_only")
    pair = fewer.pairs[0]
    assert pair.decision == "cannot_decide" and pair.p_adjusted is None and fewer.family_size == 0
    assert pair.verdict.endswith(f"a decision needs at least {MIN_CLUSTERS}")
    assert pair.low is not None and pair.p_value < 0.05  # the figures are there; only the decision waits


def test_an_unpaired_chatbot_in_one_cluster_has_no_interval_and_waits() -> None:
    units = [Unit("A", None, judge=[BP, SUB]) for _ in range(12)] + [Unit("B", "only", judge=[HPH, SUB]) for _ in range(5)]
    pair = compare_chatbots(units, score="vera_mh", method="judge_only", min_clusters=2).pairs[0]
    assert pair.design == "unpaired" and pair.n_clusters_b == 1
    assert pair.low is None and pair.p_value is None and pair.decision == "cannot_decide"
    assert "B's conversations are all in one persona" in pair.cannot_estimate
    assert pair.verdict.startswith("cannot decide yet: only 1 personas hold a conversation of B")  # below the minimum


def test_humans_only_needs_ten_personas_with_a_rated_conversation() -> None:
    units = with_humans(vera_units({"A": 1.0, "B": 0.0}, personas=30, seed=3), every=2)
    comparison = compare_chatbots(units, score="vera_mh", method="human_only")
    assert all(s.n_rated == s.n_conversations and s.n_clusters >= 10 for s in comparison.scores)
    assert comparison.pairs[0].decision == "higher"
    # Humans rated conversations of six personas only: the judges' labels do not count here.
    sparse = [u if int(u.cluster.split("-")[1]) < 6 else Unit(u.chatbot, u.cluster, judge=u.judge) for u in units]
    pair = compare_chatbots(sparse, score="vera_mh", method="human_only").pairs[0]
    assert pair.decision == "cannot_decide"
    assert pair.verdict.startswith("cannot decide yet: only 6 personas hold a rated conversation of")


def test_too_many_undefined_resamples_leave_the_pair_undecided() -> None:
    units = vera_units({"A": 0.5, "B": 0.0}, personas=20, seed=6)
    # A's humans rated conversations of two personas only: many resamples draw neither.
    units = [Unit(u.chatbot, u.cluster, judge=u.judge, human=u.judge if u.cluster in ("persona-0", "persona-1") or u.chatbot == "B" else None)
             for u in units]
    pair = compare_chatbots(units, score="vera_mh", method="human_only", min_clusters=2).pairs[0]
    assert pair.n_undefined > 0.1 * pair.n_resamples
    assert pair.decision == "cannot_decide" and "undefined in" in pair.verdict


def test_holm_family_over_three_chatbots_adjusts_every_tested_pair() -> None:
    from statsmodels.stats.multitest import multipletests

    units = vera_units({"A": 1.2, "B": 0.6, "C": 0.0}, personas=25, seed=8)
    comparison = compare_chatbots(units, score="vera_mh", method="judge_only")
    assert comparison.family_size == 3
    raw = [p.p_value for p in comparison.pairs]
    assert [p.p_adjusted for p in comparison.pairs] == pytest.approx(list(multipletests(raw, method="holm")[1]))
    for pair in comparison.pairs:
        assert pair.estimate_a >= pair.estimate_b  # a is the higher-scoring chatbot
        assert pair.decision == ("higher" if pair.p_adjusted < 0.05 else "no_difference")


def test_a_pairs_figures_do_not_depend_on_the_other_chatbots() -> None:
    units = vera_units({"A": 0.5, "B": 0.0, "C": 0.3}, personas=15, seed=2)
    three = _pair(compare_chatbots(units, score="vera_mh", method="judge_only", n_resamples=500), "A", "B")
    two = compare_chatbots([u for u in units if u.chatbot != "C"], score="vera_mh", method="judge_only", n_resamples=500).pairs[0]
    assert (three.low, three.high, three.p_value) == (two.low, two.high, two.p_value)
    again = _pair(compare_chatbots(units, score="vera_mh", method="judge_only", n_resamples=500), "A", "B")
    assert again == three  # seeded: the same figures every time


def test_conversations_without_a_persona_are_clusters_of_their_own_and_unpaired() -> None:
    units = [Unit(bot, None, judge=[BP if (i + j) % 3 else HPH, SUB]) for bot in ("A", "B") for i in range(12) for j in range(1)]
    pair = compare_chatbots(units, score="vera_mh", method="judge_only").pairs[0]
    assert pair.design == "unpaired" and pair.n_clusters_a == 12 and pair.n_shared == 0


def test_a_chatbot_nobody_judged_has_no_estimate_and_its_pairs_wait() -> None:
    units = vera_units({"A": 0.5}, personas=12, seed=1) + [Unit("B", f"persona-{i}", judge=[None] * 5) for i in range(12)]
    comparison = compare_chatbots(units, score="vera_mh", method="judge_only")
    b = next(s for s in comparison.scores if s.chatbot == "B")
    assert b.estimate is None and b.cannot_estimate
    assert comparison.pairs[0].decision == "cannot_decide" and "B's score cannot be estimated" in comparison.pairs[0].verdict


def test_bad_arguments_are_refused() -> None:
    units = vera_units({"A": 0.5, "B": 0.0}, personas=3, seed=1)
    with pytest.raises(StatsInputError):
        compare_chatbots(units, score="vera_mh", method="mean")  # type: ignore[arg-type]
    with pytest.raises(StatsInputError, match="lambda"):
        compare_chatbots(units, score="vera_mh", method="ppi_tuned", lam={"A": 0.5})
    with pytest.raises(StatsInputError, match="not a VERA-MH label"):
        compare_chatbots([Unit("A", 1, judge=["Great"])], score="vera_mh", method="judge_only")
    partly = [Unit("A", 1, judge=["yes"], human=["yes"], inclusion_prob=0.5), Unit("A", 2, judge=["no"], human=["no"])]
    with pytest.raises(StatsInputError, match="inclusion probability"):
        compare_chatbots(partly, score="amhart", method="human_only")


def test_ppi_under_a_plan_needs_the_unrated_conversations_probabilities_but_humans_only_does_not() -> None:
    units = [Unit("A", i, judge=["yes", "no"], human=["yes", "no"] if i < 12 else None, inclusion_prob=0.5 if i < 12 else None)
             for i in range(20)]
    assert compare_chatbots(units, score="amhart", method="human_only").scores[0].n_rated == 12
    with pytest.raises(StatsInputError, match="unrated conversation"):
        compare_chatbots(units, score="amhart", method="ppi")
