"""The methods paragraph of the evidence agreement report (``reports.evidence``)."""

from __future__ import annotations

from typing import Any

from reports.methods.base import Methods, clause, count, number, seed_text, share, writes
from reports.methods.references import cite

TITLE = "Evidence agreement of judges and clinicians"


@writes("evidence_agreement")
def evidence_agreement(payload: dict[str, Any], params: dict[str, Any]) -> Methods:
    """Write the unit, the references, the empty-set rules, the baseline and the cluster bootstrap."""
    if payload.get("empty"):
        return Methods(TITLE, f"No evidence agreement was computed: {clause(payload['empty'])}.")
    judges = payload.get("judges") or []
    boot = payload.get("bootstrap") or {}
    instances = max((j["pooled"]["n_instances"] for j in judges), default=0)
    conversations = max((j["pooled"]["n_conversations"] for j in judges), default=0)
    raters = max((j["pooled"]["n_raters"] for j in judges), default=0)
    scope = " of the development set" if payload.get("holdout") else ""
    sentences = [
        f"For each of {count(len(judges), 'judge')}, the turns of the conversation it cited as evidence for an item "
        f"were compared with the turns cited by the clinicians for the same item ({cite('shankar2024')}), on up to "
        f"{count(instances, 'conversation item')} in {count(conversations, 'conversation')}{scope} answered by "
        f"{count(raters, 'clinician')} ({number(payload.get('n_rater_answers_citing', 0))} of "
        f"{number(payload.get('n_rater_answers', 0))} clinician answers cited at least one turn).",
        "A clinician's rating counted when it cited a turn for at least one item, its other answered items then "
        "citing none (an N/A answer citing no turn was not counted for its item)" + (
            f"; {count(left_out, 'rating')} citing no turn for any item (rated before turns were asked for, imported, "
            f"or citing turns for the whole form only) {'was' if left_out == 1 else 'were'} left out."
            if (left_out := payload.get("n_ratings_without_item_turns", 0)) else "."),
        "The unit is a (conversation, item) instance; turn numbers are 1-based. Two references were used: the union "
        "of the clinicians' cited turns, and the turns cited by strictly more than half of the clinicians who "
        "answered the instance (majority).",
        "Against each reference we report precision (the share of the judge's turns in the reference), recall (the "
        f"share of the reference's turns the judge cited) and the Jaccard index ({cite('jaccard1912')}), each the mean "
        "over instances (every instance weighs the same). Precision is undefined when the judge cited no turn and "
        "recall when the reference is empty; instances where neither side cited a turn were left out and counted.",
        "As a human baseline, each clinician in turn was compared in the same way with the union and the majority of "
        "the other clinicians of the same instance, averaged over clinicians within an instance and then over "
        "instances, on the same instances as the judge.",
        f"Intervals are {share(boot.get('confidence', 0.95))} percentile bootstrap intervals resampling whole "
        f"conversations with all their items (cluster bootstrap; {count(boot.get('resamples') or 0, 'resample')}; "
        f"{seed_text(boot.get('seed'))}; {cite('davison1997', 'efron1993')}), the judge's figures and the baseline's "
        "on the same resamples.",
    ]
    return Methods(TITLE, " ".join(sentences), references=("shankar2024", "jaccard1912", "davison1997", "efron1993"))
