"""The methods paragraph of the judges-vs-humans report with its verdict (``reports.comparison``, ``reports.verdict``)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from reports.methods.base import (
    PARAGRAPH,
    Methods,
    clause,
    count,
    listing,
    number,
    prose,
    quoted,
    seed_text,
    share,
    writes,
)
from reports.methods.references import cite
from reports.methods.reliability import in_words_of, instrument_phrase

TITLE = "LLM judges against human raters"
EQUALS = (
    "Cohen's kappa equals scikit-learn's cohen_kappa_score, and the alternative annotator test an independent "
    "implementation with SciPy's one-sample t-test and statsmodels' Benjamini–Yekutieli adjustment, in evalsite's tests "
    f"({cite('pedregosa2011', 'virtanen2020', 'seabold2010')})."
)
PROVENANCE_WORDS = {
    "unanimous": "unanimous", "majority": "by majority", "plurality": "by plurality", "tie_break": "by the tie rule",
    "adjudicated": "adjudicated", "single": "from a single rating",
}


def consensus_sentence(rule: dict[str, Any], status: dict[str, int] | None = None, n_labels: int | None = None) -> str:
    """Return how the human reference label was reached, with its provenance counts when known."""
    if not rule:
        return "The human reference label of an item is the study's consensus."
    how = [f"{number(n)} {PROVENANCE_WORDS[k]}" for k, n in (status or {}).items() if k in PROVENANCE_WORDS and n]
    if n_labels is not None and sum(n for k, n in (status or {}).items() if k in PROVENANCE_WORDS) != n_labels:
        how = []  # the counts cover other labels than the ones compared (N/A excluded, conversations not judged)
    return (
        f"The human reference label (consensus) of a conversation's item is its modal rating once it has at least "
        f"{count(rule.get('min_ratings', 2), 'rating')}; {rule.get('ties', 'ties follow the study rule')}"
        + (f" ({listing(how)})" if how else "") + "."
    )


def ensemble_sentence(ensemble: dict[str, Any]) -> str:
    """Return the judge panel and its stored majority-vote rule, naming no judge or model."""
    n = ensemble.get("n_judges")
    if not n:
        return ""
    if n == 1:
        return "The run has a single judge: its labels are that judge's labels, with no vote (a failed or missing label stays missing)."
    rule = str(ensemble.get("rule") or "").strip().rstrip(".")
    return f"The ensemble label is the majority vote of the run's {count(n, 'judge')}" + (f" (the run's rule: “{rule}”)." if rule else ".")


def _outcomes(groups: list[dict[str, Any]]) -> str:
    """Return the pooled verdicts counted by outcome, per label set."""
    parts = []
    for group in groups:
        tests = group.get("alt_test") or {}
        if not tests:
            continue
        outcome = Counter("passed" if t.get("passed") is True else "failed" if t.get("passed") is False else "undecided"
                          for t in tests.values())
        words = [f"{number(outcome[k])} {k if k != 'undecided' else 'could not be decided (below the minimums)'}"
                 for k in ("passed", "failed", "undecided") if outcome[k]]
        excluded = {e["rater"] for t in tests.values() for e in t.get("excluded_raters", [])}
        label_set = f" on the label set {quoted(group.get('labels', []))}" if len(groups) > 1 else ""
        parts.append(
            f"Pooled{label_set}, of the {count(len(tests), 'judge')} tested{' (ensemble included)' if 'ensemble' in tests else ''}, {listing(words)}"
            + (f"; {count(len(excluded), 'rater')} had fewer instances than the minimum and {'was' if len(excluded) == 1 else 'were'} "
               "left out of the test" if excluded else "")
            + "."
        )
    return " ".join(parts)


def _baseline(groups: list[dict[str, Any]]) -> str:
    """Say where a constant judge (each item's most frequent label) would pass the same test."""
    parts = []
    for group in groups:
        baseline = group.get("baseline")
        if not baseline or not group.get("alt_test"):
            continue
        pooled = (baseline.get("pooled") or {}).get("passed")
        items = baseline.get("items") or {}
        decided = [k for k, b in items.items() if b.get("passed") is not None]
        passing = [k for k in decided if items[k].get("passed")]
        label_set = f" on the label set {quoted(group.get('labels', []))}" if len(groups) > 1 else ""
        pooled_words = ("would pass pooled" if pooled else "would not pass pooled" if pooled is False
                        else "could not be decided pooled")
        item_words = (f"and would pass on {number(len(passing))} of the {count(len(decided), 'decided item')} "
                      f"({', '.join(passing)})" if passing else f"and would pass on none of the {count(len(decided), 'decided item')}")
        parts.append(
            f"As a check{label_set}, the same test run on {baseline.get('method', 'a constant judge')} {pooled_words} {item_words}"
            + ("; where it would pass, the test cannot tell a constant judge from a good one, and a judge's pass there "
               "is reported as such." if pooled or passing else ".")
        )
    return " ".join(parts)


@writes("judges")
def judges(payload: dict[str, Any], params: dict[str, Any]) -> Methods:
    """Write what the judges-vs-humans report computed: who, on what, the verdict's procedure and outcome."""
    items = payload.get("items_compared") or []
    run = payload.get("run")
    if payload.get("empty"):
        return Methods(TITLE, f"No comparison was computed for judge run #{run}: {clause(payload['empty'])}.")
    groups = payload.get("groups") or []
    parameters = payload.get("parameters") or {}
    alt = parameters.get("alt_test") or {}
    boot = parameters.get("bootstrap") or {}
    ensemble = payload.get("ensemble") or {}
    n_judges = ensemble.get("n_judges") or len({j for g in groups for j in (g.get("alt_test") or {}) if j != "ensemble"})
    has_ensemble = any("ensemble" in (g.get("alt_test") or {}) for g in groups)
    na = payload.get("na_policy", "category")
    who = count(n_judges, "LLM judge") + (" and their majority-vote ensemble" if has_ensemble else "")
    sentences = [
        f"The labels of {who} (judge run #{run}) were compared with the human raters on {instrument_phrase(payload, len(items))}, "
        "the items both labelled"
        + (f": {count(payload['n_conversations'], 'conversation')} rated by {count(payload.get('n_raters', 0), 'rater')} "
           "and judged by the run (the conversations the alternative annotator test and the per-rater comparisons "
           f"draw on), {count(payload.get('n_consensus', 0), 'conversation–item pair')} of them with a human consensus"
           if payload.get("n_conversations") is not None else "")
        + ".",
        consensus_sentence(payload.get("consensus_rule") or {}, payload.get("consensus_status"), payload.get("n_consensus")),
    ]
    if has_ensemble and ensemble:
        sentences.append(ensemble_sentence(ensemble))
    sentences.append(
        "Not-applicable answers were kept as a category of their own on both sides (as AMHART compares judges with the "
        "human reference)." if na == "category" else "Not-applicable answers were excluded on both sides."
    )
    sentences.append(PARAGRAPH)
    resamples = boot.get("resamples")
    minimum = parameters.get("min_shared_conversations")
    sentences.append(
        f"For each judge and the ensemble we computed percent agreement and Cohen's kappa ({cite('cohen1960')}) against the "
        "consensus, pooled over the items that share a label set and per item, and against each single rater, with "
        f"{share(boot.get('confidence', 0.95))} percentile cluster-bootstrap intervals (whole conversations resampled with all "
        f"their items; {count(resamples or 0, 'resample')}, {seed_text(boot.get('seed'))}; {cite('davison1997', 'efron1993')})."
        + (f" The range of agreement between human raters uses only rater pairs that share at least "
           f"{count(minimum, 'conversation')}; pairs below that were left out of it and listed." if minimum else "")
        + " A leave-one-rater-out comparison gives, for each rater, the judge's agreement with the other raters minus "
        "that rater's agreement with the same other raters, with the same bootstrap."
    )
    if alt:
        sentences.append(PARAGRAPH)
        sentences.append(
            f"Whether a judge could replace the raters was decided by the alternative annotator test ({cite('calderon2025')}), "
            f"on (conversation, item) instances pooled over each label set's items and per item. Leaving out one rater at a "
            "time, the judge and the left-out rater were each scored against the remaining raters of the instance "
            f"({alt.get('scoring', 'accuracy')}: the share of them who gave the same label); for each rater, a one-sided paired t-test asked whether the rater's advantage "
            f"probability exceeds the judge's by less than the cost–benefit margin ε = {alt.get('epsilon'):g}; the p-values "
            f"were adjusted by the {alt.get('fdr_procedure', 'Benjamini-Yekutieli').replace('-', '–')} procedure "
            f"({cite('benjamini2001')}) at q = {alt.get('q'):g} (per item, one adjustment over all of a judge's item × rater "
            f"tests). A judge passes when its winning rate ω, the share of raters it beats, is at least "
            f"{alt.get('pass_winning_rate', 0.5):g}; the average advantage probability ρ is reported beside it. The paper's "
            f"minimums were enforced: {count(alt.get('min_raters_per_instance', 2), 'rater')} per instance, "
            f"{count(alt.get('min_instances_per_rater', 30), 'instance')} per rater and {count(alt.get('min_raters', 3), 'rater')} "
            "in all; below them the report says “cannot decide yet” instead of a verdict."
        )
        outcome = _outcomes(groups)
        if outcome:
            sentences.append(outcome)
        check = _baseline(groups)
        if check:
            sentences.append(check)
    return Methods(
        TITLE, prose(in_words_of(payload, sentences)),
        references=("cohen1960", "davison1997", "efron1993", "calderon2025", "benjamini2001", "pedregosa2011",
                    "virtanen2020", "seabold2010"),
        equals=EQUALS,
    )
