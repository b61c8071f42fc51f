"""Judge-vs-human figures: point estimates against scikit-learn, intervals against a loop over
drawn conversations, rater pairs below the shared minimum left out, and the leave-one-out
comparison reading a constant judge as below the raters and a majority judge as not below."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score

from stats.bootstrap import make_rng, resample_weights
from stats.judge_figures import judge_human_figures

ITEMS = ("i1", "i2", "i3")


def _study(seed: int = 0, n: int = 30, raters: int = 4, k: int = 3):
    """n conversations x 3 items; rater r skips conversations c with c % raters == r (k = 3 of 4)."""
    rng = np.random.default_rng(seed)
    humans, truth = [], {}
    for c in range(n):
        for item in ITEMS:
            truth[(f"c{c:02d}", item)] = "yes" if rng.random() < 0.5 else "no"
    for c in range(n):
        for r in range(raters):
            if raters > k and c % raters == r:
                continue
            for item in ITEMS:
                t = truth[(f"c{c:02d}", item)]
                label = t if rng.random() < 0.85 else ("no" if t == "yes" else "yes")
                humans.append((f"c{c:02d}", f"r{r}", item, label))
    return humans, truth


def _majority(humans):
    votes: dict = {}
    for unit, _, item, label in humans:
        votes.setdefault((unit, item), []).append(label)
    return {k: max(("yes", "no"), key=v.count) for k, v in votes.items()}


def _figures(humans, judges, consensus, **kw):
    return judge_human_figures(humans, judges, consensus, labels=("yes", "no"), n_resamples=kw.pop("n_resamples", 400), seed=7, **kw)


def test_point_estimates_equal_scikit_learn():
    humans, truth = _study()
    majority = _majority(humans)
    judges = [(u, "good", i, truth[(u, i)]) for (u, i) in truth] + [(u, "yes-man", i, "yes") for (u, i) in truth]
    result = _figures(humans, judges, majority)
    good = next(f for f in result.vs_consensus if f.rater == "good")
    keys = sorted(majority)
    assert good.n == len(keys) and good.n_conversations == 30
    assert good.cohen_kappa == pytest.approx(cohen_kappa_score([majority[k] for k in keys], [truth[k] for k in keys]))
    assert good.percent_agreement == pytest.approx(np.mean([majority[k] == truth[k] for k in keys]))
    yes_man = next(f for f in result.vs_consensus if f.rater == "yes-man")
    assert yes_man.cohen_kappa == pytest.approx(0.0)
    r1 = {(u, i): label for u, r, i, label in humans if r == "r1"}
    vs_r1 = next(f for f in result.vs_raters if f.rater == "good" and f.reference == "r1")
    shared = sorted(r1)
    assert vs_r1.cohen_kappa == pytest.approx(cohen_kappa_score([r1[k] for k in shared], [truth[k] for k in shared]))
    item = next(f for f in result.vs_consensus_items["i2"] if f.rater == "good")
    item_keys = [k for k in keys if k[1] == "i2"]
    assert item.cohen_kappa == pytest.approx(cohen_kappa_score([majority[k] for k in item_keys], [truth[k] for k in item_keys]))


def test_intervals_equal_a_loop_over_drawn_conversations():
    humans, truth = _study(1, n=20)
    majority = _majority(humans)
    judges = [(u, "good", i, truth[(u, i)]) for (u, i) in truth]
    result = _figures(humans, judges, majority, n_resamples=200)
    good = result.vs_consensus[0]
    units = sorted({u for u, _ in majority})  # instances are sorted by unit: clusters in this order
    weights = np.vstack(list(resample_weights(len(units), 200, make_rng(7))))
    kappas = []
    for w in weights.astype(int):
        ref, mine = [], []
        for unit, times in zip(units, w, strict=True):
            for item in ITEMS:
                ref += [majority[(unit, item)]] * times
                mine += [truth[(unit, item)]] * times
        kappas.append(cohen_kappa_score(ref, mine))
    low, high = np.quantile(kappas, [0.025, 0.975])
    assert good.kappa_ci.low == pytest.approx(low) and good.kappa_ci.high == pytest.approx(high)
    assert "clusters" in good.kappa_ci.method


def test_rater_pairs_sharing_few_conversations_are_left_out_of_the_human_range_and_listed():
    humans, truth = _study(2)
    # r9 shares one conversation with the others and says "yes" to all of it: kappa 0 with each.
    humans += [("c00", "r9", item, "yes") for item in ITEMS]
    result = _figures(humans, [(u, "yes-man", i, "yes") for (u, i) in truth], _majority(humans))
    excluded = {(e["rater"], e["reference"]) for e in result.human_range["excluded"]}
    assert {p for p in excluded if "r9" in p} and all("r9" in p for p in excluded)
    assert result.human_range["n_pairs"] == 6  # the four regular raters' pairs
    assert result.human_range["kappa_min"] > 0.2  # not the 0.00 of the one-conversation pairs
    assert all(e["n_conversations"] == 1 for e in result.human_range["excluded"])


def _loo_by_hand(humans, judge: dict, rater: str) -> tuple[float, float]:
    by = {}
    for u, r, i, label in humans:
        by.setdefault((u, i), {})[r] = label
    judge_hits = rater_hits = pairs = 0
    for key, labels in by.items():
        if rater not in labels or key not in judge:
            continue
        for other, label in labels.items():
            if other == rater:
                continue
            pairs += 1
            judge_hits += judge[key] == label
            rater_hits += labels[rater] == label
    return judge_hits / pairs, rater_hits / pairs


def test_leave_one_out_reads_a_constant_judge_below_and_a_majority_judge_not_below():
    humans, truth = _study(3, n=40)
    majority = _majority(humans)
    judges = [(u, "yes-man", i, "yes") for (u, i) in truth] + [(u, "majority", i, majority[(u, i)]) for (u, i) in majority]
    result = _figures(humans, judges, majority)
    constant = result.leave_one_out["yes-man"]
    assert constant["mean"]["agreement"]["reading"] == "judge below the raters"
    assert constant["mean"]["kappa"]["ci"]["high"] < 0
    assert all(r["agreement"]["reading"] == "judge below the raters" for r in constant["per_rater"])
    best = result.leave_one_out["majority"]
    assert best["mean"]["agreement"]["ci"]["low"] > 0  # the majority of all raters beats any single one
    row = next(r for r in best["per_rater"] if r["rater"] == "r2")
    judge_share, rater_share = _loo_by_hand(humans, majority, "r2")
    assert row["agreement"]["judge"] == pytest.approx(judge_share) and row["agreement"]["rater"] == pytest.approx(rater_share)
    assert row["agreement"]["difference"] == pytest.approx(judge_share - rater_share)
    assert result.parameters["resamples"] == 400 and result.parameters["seed"] == 7


def test_a_rater_with_one_conversation_is_shown_but_left_out_of_the_mean():
    humans, truth = _study(4)
    humans += [("c00", "r9", item, "yes") for item in ITEMS]
    result = _figures(humans, [(u, "good", i, truth[(u, i)]) for (u, i) in truth], _majority(humans))
    rows = {r["rater"]: r for r in result.leave_one_out["good"]["per_rater"]}
    assert rows["r9"]["in_mean"] is False and rows["r9"]["n_conversations"] == 1
    assert rows["r9"]["agreement"]["reading"] == "undefined"  # one conversation: a collapsed interval
    assert result.leave_one_out["good"]["mean"]["n_raters"] == 4


def test_the_shared_product_gives_exactly_the_intervals_of_stats_bootstrap():
    from stats.bootstrap import bootstrap_intervals
    from stats.judge_figures import _Builder, _cluster_intervals

    humans, truth = _study(5, n=25)
    instances = sorted(truth)
    build = _Builder(instances, 2)
    code = {"yes": 0, "no": 1}
    for rater in ("r0", "r1", "r2"):
        mine = {(u, i): code[lab] for u, r, i, lab in humans if r == rater}
        build.add_pair(f"truth|{rater}", build.table({k: code[v] for k, v in truth.items()}, mine))
    clusters = [k[0] for k in instances]
    ours = _cluster_intervals(build.statistics, n_resamples=300, seed=11, confidence=0.9, clusters=clusters)
    reference = bootstrap_intervals(build.statistics, n_resamples=300, seed=11, confidence=0.9, clusters=clusters)
    assert ours == reference
