"""Evidence agreement (stats.evidence) against a small case computed by hand, and its edge cases."""

from __future__ import annotations

from fractions import Fraction as F

import pytest

from stats.evidence import (
    baseline_agreement,
    evidence_agreement,
    majority_of,
    set_agreement,
    union_of,
)

# Three conversations x two items, three raters, one judge "J". Turn sets:
#
#   instance  r1     r2     r3     judge   union    majority (cited by >= 2 of 3)
#   c1/a      {2,4}  {2}    {2,5}  {2,3}   {2,4,5}  {2}
#   c1/b      {}     {}     {}     {}      {}       {}        neither side cited: left out
#   c2/a      {1}    {1,3}  {3}    {1,3}   {1,3}    {1,3}
#   c2/b      {4}    {}     {}     {}      {4}      {}
#   c3/a      {5}    {5}    {6}    {6}     {5,6}    {5}
#   c3/b      {2}    {2}    {2}    {2,7}   {2}      {2}
RATERS = {
    ("c1", "a"): ({2, 4}, {2}, {2, 5}), ("c1", "b"): (set(), set(), set()),
    ("c2", "a"): ({1}, {1, 3}, {3}), ("c2", "b"): ({4}, set(), set()),
    ("c3", "a"): ({5}, {5}, {6}), ("c3", "b"): ({2}, {2}, {2}),
}
JUDGE = {("c1", "a"): {2, 3}, ("c1", "b"): set(), ("c2", "a"): {1, 3}, ("c2", "b"): set(),
         ("c3", "a"): {6}, ("c3", "b"): {2, 7}}


def _rows() -> tuple[list, list]:
    judge = [(c, "J", item, sorted(turns)) for (c, item), turns in JUDGE.items()]
    raters = [(c, f"r{n + 1}", item, sorted(turns)) for (c, item), sets in RATERS.items() for n, turns in enumerate(sets)]
    return judge, raters


@pytest.fixture(scope="module")
def result():
    return evidence_agreement(*_rows(), n_resamples=200, seed=20260101)


def _est(figures, ref: str, measure: str) -> float | None:
    return getattr(figures[ref], measure).estimate


def test_judge_figures_pooled_over_items_equal_the_hand_computation(result):
    pooled = result.judges[0].pooled
    # Against the union (per instance P, R, Jaccard; "-" undefined):
    #   c1/a 1/2 1/3 1/4 | c2/a 1 1 1 | c2/b - 0 0 | c3/a 1 1/2 1/2 | c3/b 1/2 1 1/2   (c1/b left out)
    assert _est(pooled.judge, "union", "precision") == pytest.approx(float(F(3, 4)))  # (1/2+1+1+1/2)/4
    assert _est(pooled.judge, "union", "recall") == pytest.approx(float(F(17, 30)))  # (1/3+1+0+1/2+1)/5
    assert _est(pooled.judge, "union", "jaccard") == pytest.approx(0.45)  # (1/4+1+0+1/2+1/2)/5
    assert pooled.judge["union"].precision.n_instances == 4 and pooled.judge["union"].recall.n_instances == 5
    assert pooled.judge["union"].n_both_empty == 1
    # Against the majority:
    #   c1/a 1/2 1 1/2 | c2/a 1 1 1 | c3/a 0 0 0 | c3/b 1/2 1 1/2   (c1/b and c2/b: both empty, left out)
    assert _est(pooled.judge, "majority", "precision") == pytest.approx(0.5)
    assert _est(pooled.judge, "majority", "recall") == pytest.approx(0.75)
    assert _est(pooled.judge, "majority", "jaccard") == pytest.approx(0.5)
    assert pooled.judge["majority"].n_both_empty == 2
    assert pooled.judge["majority"].jaccard.n_conversations == 3
    assert (pooled.n_instances, pooled.n_conversations, pooled.n_raters) == (6, 3, 3)


def test_judge_figures_per_item_equal_the_hand_computation(result):
    a, b = result.judges[0].items
    assert (a.scope, b.scope) == ("a", "b")
    assert _est(a.judge, "union", "precision") == pytest.approx(5 / 6)  # (1/2+1+1)/3
    assert _est(a.judge, "union", "recall") == pytest.approx(11 / 18)  # (1/3+1+1/2)/3
    assert _est(a.judge, "union", "jaccard") == pytest.approx(7 / 12)  # (1/4+1+1/2)/3
    assert _est(b.judge, "union", "precision") == pytest.approx(0.5)  # c3/b only
    assert b.judge["union"].precision.n_instances == 1 and b.judge["union"].precision.n_conversations == 1
    assert _est(b.judge, "union", "recall") == pytest.approx(0.5)  # (0+1)/2
    assert _est(b.judge, "union", "jaccard") == pytest.approx(0.25)  # (0+1/2)/2


def test_human_baseline_equals_the_hand_computation(result):
    pooled = result.judges[0].pooled
    # Each rater against the union of the other two; an instance's value is the mean over its raters:
    #   c1/a r1 {2,4} v {2,5}: 1/2 1/2 1/3; r2 {2} v {2,4,5}: 1 1/3 1/3; r3 {2,5} v {2,4}: 1/2 1/2 1/3
    #        -> 2/3 4/9 1/3
    #   c2/a r1 {1} v {1,3}: 1 1/2 1/2; r2: 1 1 1; r3 {3} v {1,3}: 1 1/2 1/2 -> 1 2/3 2/3
    #   c2/b r1 {4} v {}: 0 - 0; r2 {} v {4}: - 0 0; r3 likewise -> 0 0 0
    #   c3/a r1 {5} v {5,6}: 1 1/2 1/2; r2 likewise; r3 {6} v {5}: 0 0 0 -> 2/3 1/3 1/3
    #   c3/b all {2} v {2}: 1 1 1;  c1/b: nobody cited, left out
    assert _est(pooled.baseline, "union", "precision") == pytest.approx(2 / 3)  # (2/3+1+0+2/3+1)/5
    assert _est(pooled.baseline, "union", "recall") == pytest.approx(22 / 45)  # (4/9+2/3+0+1/3+1)/5
    assert _est(pooled.baseline, "union", "jaccard") == pytest.approx(7 / 15)  # (1/3+2/3+0+1/3+1)/5
    # Against the majority of the two others (turns both others cited):
    #   c1/a r1 v {2}: 1/2 1 1/2; r2 v {2}: 1 1 1; r3 v {2}: 1/2 1 1/2 -> 2/3 1 2/3
    #   c2/a r1 {1} v {3}: 0 0 0; r2 {1,3} v {}: 0 - 0; r3 {3} v {1}: 0 0 0 -> 0 0 0
    #   c2/b r1 {4} v {}: 0 - 0; r2, r3: {} v {}: left out -> 0 - 0
    #   c3/a r1 {5} v {}: 0 - 0; r2 likewise; r3 {6} v {5}: 0 0 0 -> 0 0 0
    #   c3/b -> 1 1 1
    assert _est(pooled.baseline, "majority", "precision") == pytest.approx(1 / 3)  # (2/3+0+0+0+1)/5
    assert _est(pooled.baseline, "majority", "recall") == pytest.approx(0.5)  # (1+0+0+1)/4
    assert _est(pooled.baseline, "majority", "jaccard") == pytest.approx(1 / 3)
    assert pooled.baseline["majority"].recall.n_instances == 4


def test_union_and_majority_references():
    sets = [{2, 4}, {2}, {2, 5}]
    assert union_of(sets) == {2, 4, 5}
    assert majority_of(sets) == {2}
    assert majority_of([{1, 2}, {2}]) == {2}  # two raters: strictly more than half is both
    assert majority_of([{3}]) == {3}  # one rater: its own turns
    assert majority_of([]) == frozenset()


def test_empty_sets_leave_the_undefined_measures_out():
    none_cited = set_agreement(set(), set())
    assert (none_cited.precision, none_cited.recall, none_cited.jaccard) == (None, None, None)
    only_judge = set_agreement({3}, set())
    assert (only_judge.precision, only_judge.recall, only_judge.jaccard) == (0.0, None, 0.0)
    only_ref = set_agreement(set(), {1})
    assert (only_ref.precision, only_ref.recall, only_ref.jaccard) == (None, 0.0, 0.0)


def test_one_rater_gives_judge_figures_and_no_baseline():
    out = evidence_agreement([("c1", "J", "a", [1, 2])], [("c1", "r1", "a", [2])], n_resamples=50)
    row = out.judges[0].pooled
    assert _est(row.judge, "majority", "precision") == 0.5 and _est(row.judge, "majority", "recall") == 1.0
    assert _est(row.baseline, "union", "precision") is None and row.baseline["union"].jaccard.n_instances == 0
    assert baseline_agreement([{1}], "union").precision is None
    ci = row.judge["union"].precision.interval
    assert ci is not None and ci.low == ci.high == 0.5  # one conversation: a point interval


def test_no_instances_gives_no_figures():
    assert evidence_agreement([], []).judges == ()
    out = evidence_agreement([("c1", "J", "a", [1])], [("c2", "r1", "a", [1])])  # nothing rated by both
    row = out.judges[0].pooled
    assert row.n_instances == 0 and _est(row.judge, "union", "jaccard") is None
    assert row.judge["union"].jaccard.interval is None and out.judges[0].items == ()


def test_a_judge_citing_exactly_the_majoritys_turns_scores_one():
    judge, raters = _rows()
    majority = {(c, item): sorted(majority_of(sets)) for (c, item), sets in RATERS.items()}
    out = evidence_agreement([(c, "M", item, majority[(c, item)]) for c, _, item, _ in judge], raters, n_resamples=100)
    row = out.judges[0].pooled
    for measure in ("precision", "recall", "jaccard"):
        figure = getattr(row.judge["majority"], measure)
        assert figure.estimate == 1.0 and figure.interval.low == figure.interval.high == 1.0
    assert row.judge["majority"].jaccard.n_instances == 4  # c1/b and c2/b: no majority turn, nothing cited


def test_bootstrap_is_deterministic_with_a_seed_and_contains_the_estimate():
    judge, raters = _rows()
    one = evidence_agreement(judge, raters, n_resamples=300, seed=7).as_dict()
    two = evidence_agreement(judge, raters, n_resamples=300, seed=7).as_dict()
    assert one == two
    other = evidence_agreement(judge, raters, n_resamples=300, seed=8).as_dict()
    assert other != one
    pooled = evidence_agreement(judge, raters, n_resamples=300, seed=7).judges[0].pooled
    for who in (pooled.judge, pooled.baseline):
        for ref in ("union", "majority"):
            for measure in ("precision", "recall", "jaccard"):
                f = getattr(who[ref], measure)
                assert f.interval.low <= f.estimate <= f.interval.high, (ref, measure)
                assert f.interval.n_resamples == 300
    assert "cluster" in pooled.judge["union"].jaccard.interval.method


def test_judges_are_reported_separately():
    judge, raters = _rows()
    perfect = [(c, "K", item, sorted(union_of(RATERS[(c, item)]))) for c, _, item, _ in judge]
    out = evidence_agreement(judge + perfect, raters, n_resamples=50)
    assert [j.judge for j in out.judges] == ["J", "K"]
    k = out.judges[1].pooled
    assert _est(k.judge, "union", "recall") == 1.0 and _est(k.judge, "union", "precision") == 1.0
    assert _est(out.judges[0].pooled.judge, "union", "precision") == pytest.approx(0.75)
