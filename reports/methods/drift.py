"""The methods paragraph of the judge drift report (``reports.drift``): two versions of a judge's labels."""

from __future__ import annotations

from typing import Any

from reports.methods.base import Methods, clause, count, number, seed_text, share, writes
from reports.methods.references import cite

TITLE = "Judge drift between two versions"


def _version(v: dict[str, Any]) -> str:
    """Return "the ensemble of judge run #2" or "one judge of judge run #2": no judge is named (names may be models)."""
    if v.get("source") == "ensemble":
        return f"the majority-vote ensemble of judge run #{v.get('run')}"
    return f"one judge of judge run #{v.get('run')} (source {v.get('source')})"


@writes("judge_drift")
def judge_drift(payload: dict[str, Any], params: dict[str, Any]) -> Methods:
    """Write which versions were compared, on what, how, and against which human reference."""
    a, b = payload.get("a") or {}, payload.get("b") or {}
    versions = f"version A, {_version(a)}, and version B, {_version(b)}"
    if payload.get("empty"):
        return Methods(TITLE, f"No drift was computed between {versions}: {clause(payload['empty'])}.")
    pooled = payload.get("pooled") or {}
    sentences = [
        f"Two versions of a judge's labels, {versions}, were compared on the "
        f"{count(payload.get('n_shared_conversations', 0), 'conversation')} both judged "
        f"({count(pooled.get('n_compared', 0), 'item label')} on {count(len(payload.get('items') or []), 'item')}"
        + (f"; {number(payload.get('n_only_a', 0))} conversations judged by A only and {number(payload.get('n_only_b', 0))} by B "
           "only were left out" if payload.get("n_only_a") or payload.get("n_only_b") else "")
        + "). Per item and pooled, we report percent agreement and Cohen's kappa between the versions "
        f"({cite('cohen1960')}) and list every flipped label with both versions' rationales.",
    ]
    refs: tuple[str, ...] = ("cohen1960",)
    holdout = payload.get("holdout") or {}
    if holdout:
        sentences.append(
            f"The study was split for judge development: the comparison is on the development set of split {holdout.get('split')} "
            f"({count(holdout.get('n_conversations') or 0, 'conversation')}) only; its test-set conversations"
            + (f" ({number(payload['n_test_left_out'])} judged by a version)" if payload.get("n_test_left_out") else "")
            + " were left out."
        )
    boot = payload.get("bootstrap") or {}
    if payload.get("study") and payload.get("n_reference"):
        sentences.append(
            f"Against the human consensus of study #{payload['study']} ({count(payload['n_reference'], 'label')}), each "
            "version's percent agreement and Cohen's kappa are given, with the differences B − A in agreement and in kappa "
            f"and their {share(boot.get('confidence', 0.95))} confidence intervals by the {boot.get('method', 'paired percentile bootstrap')} "
            f"({count(boot.get('resamples') or 0, 'resample')}, {seed_text(boot.get('seed'))}; {cite('efron1993')}): both "
            "versions are read on the same resampled conversations. Each flipped label is counted as moving towards the "
            "consensus (B's label equals it, A's did not), away from it (the reverse) or neither."
        )
        refs += ("efron1993",)
    elif payload.get("study"):
        sentences.append(f"Study #{payload['study']} has no human consensus on these conversations yet, so neither version "
                         "was compared with clinicians.")
    else:
        sentences.append("No human reference was chosen, so neither version was compared with clinicians.")
    return Methods(TITLE, " ".join(sentences), references=refs)
