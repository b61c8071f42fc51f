"""Can a judge replace the clinicians? The verdict and the figures behind it, per label set.

The headline of the judges-vs-humans report is the alternative annotator test (Calderon,
Reichart & Dror, ACL 2025; ``stats.alt_test``) of every judge and of the ensemble, pooled over
the group's (conversation, item) instances and per item, at the study's epsilon. Beside it:
agreement and kappa of each judge against the consensus and each rater with cluster-bootstrap
intervals, the human range over rater pairs that share enough conversations, and the
leave-one-out comparison (``stats.judge_figures``). Every parameter used is returned in
``parameters`` so a methods paragraph can be written from the payload.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from reports.reliability import BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED
from stats.alt_test import (
    DEFAULT_Q,
    EPSILON_ADVICE,
    EPSILON_GUIDANCE,
    MIN_INSTANCES_PER_RATER,
    MIN_RATERS,
    MIN_RATERS_PER_INSTANCE,
    PASS_WINNING_RATE,
    alt_test_long,
    constant_judge_baseline,
)
from stats.judge_figures import MIN_SHARED_CONVERSATIONS, judge_human_figures

Row = tuple[str, str, str, str | None]
CONFIDENCE = 0.95


def parameters(epsilon: float) -> dict[str, Any]:
    """Return every setting the verdict and the intervals use (for the page, API and methods)."""
    return {
        "alt_test": {
            "epsilon": epsilon,
            "q": DEFAULT_Q,
            "fdr_procedure": "Benjamini-Yekutieli",
            "pass_winning_rate": PASS_WINNING_RATE,
            "scoring": "accuracy",
            "instances": "(conversation, item) pairs; pooled over a label set's items, and per item",
            "per_item_fdr": "one Benjamini-Yekutieli step over all of a judge's (item, rater) tests",
            "min_raters_per_instance": MIN_RATERS_PER_INSTANCE,
            "min_instances_per_rater": MIN_INSTANCES_PER_RATER,
            "min_raters": MIN_RATERS,
            "epsilon_guidance": [{"epsilon": e, "raters": who} for e, who in EPSILON_GUIDANCE],
            "epsilon_advice": EPSILON_ADVICE,
            "reference": "Calderon, Reichart & Dror (2025), The Alternative Annotator Test for LLM-as-a-Judge, ACL 2025",
        },
        "bootstrap": {
            "resamples": BOOTSTRAP_RESAMPLES,
            "seed": BOOTSTRAP_SEED,
            "confidence": CONFIDENCE,
            "cluster": "conversation",
        },
        "min_shared_conversations": MIN_SHARED_CONVERSATIONS,
    }


def _respell(rows: Sequence[Row], order: Sequence[str]) -> list[Row]:
    """Return rows with labels in the group's spelling (items of a group may differ in case)."""
    spelling = {x.casefold(): x for x in order}
    return [(u, r, i, spelling.get(label.casefold()) if label is not None else None) for u, r, i, label in rows]


def group_verdict(
    *,
    machine: Sequence[Row],
    people: Sequence[Row],
    reference: dict[tuple[str, str], str],
    order: Sequence[str],
    epsilon: float,
) -> dict[str, Any]:
    """Return the alt-test of each judge (ensemble last) and the judge-vs-human figures."""
    machine, people = _respell(machine, order), _respell(people, order)
    spelling = {x.casefold(): x for x in order}
    reference = {k: spelling[v.casefold()] for k, v in reference.items() if v.casefold() in spelling}
    names = list(dict.fromkeys(r[1] for r in machine))
    names = [n for n in names if n != "ensemble"] + (["ensemble"] if "ensemble" in names else [])
    # The same test on a constant judge (each item's most frequent human label): where it would
    # pass, the verdict cannot tell a constant judge from a good one (stats.alt_test.baseline).
    baseline = constant_judge_baseline(people, epsilon=epsilon)
    verdicts = {}
    for name in names:
        rows = [(u, i, label) for u, j, i, label in machine if j == name]
        verdicts[name] = alt_test_long(people, rows, judge=name, epsilon=epsilon).as_dict()
        verdicts[name]["constant_judge_passes"] = baseline["pooled"]["passed"] is True
        for item, test in verdicts[name]["items"].items():
            test["constant_judge_passes"] = (baseline["items"].get(item) or {}).get("passed") is True
    figures = judge_human_figures(
        people, machine, reference, labels=order, n_resamples=BOOTSTRAP_RESAMPLES, seed=BOOTSTRAP_SEED,
        confidence=CONFIDENCE,
    ).as_dict()
    return {"alt_test": verdicts, "figures": figures, "baseline": baseline}


def headline(verdicts: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Return one line per judge for the top of the page: verdict, omega, rho, items passed."""
    out = []
    for name, test in verdicts.items():
        out.append({
            "judge": name,
            "verdict": test["verdict"],
            "passed": test["passed"],
            "winning_rate": test["winning_rate"],
            "advantage_probability": test["advantage_probability"],
            "n_raters_tested": len(test["per_rater"]),
            "n_raters_won": sum(1 for r in test["per_rater"] if r["judge_wins"]),
            "items_passed": test["items_passed"],
            "items_decided": test["items_decided"],
            "n_items": len(test["items"]),
            "n_instances": test["n_instances"],
            "notes": test["notes"],
            "constant_judge_passes": test.get("constant_judge_passes", False),
            "items_passed_also_by_constant": sum(
                1 for t in test["items"].values() if t.get("passed") and t.get("constant_judge_passes")
            ),
        })
    return out
