"""Facts of a study or a judge run that a methods paragraph states, read when a report is computed.

Report computations put these into their payloads (``instrument``, ``consensus_rule``,
``ensemble``), so the paragraph is written from the payload alone. None of them names a
chatbot, a model, a provider, a judge or a rater: they are counts and rules.
"""

from __future__ import annotations

from typing import Any

TIE_RULES = {
    "senior": "ties were decided by the study's designated senior rater (AMHART's rule)",
    "adjudication": "ties went to the adjudication queue and take the coordinator's adjudicated label",
}


def instrument_facts(instrument: Any) -> dict[str, Any]:
    """Return the instrument's name, version and kind (checklist or question flow)."""
    if instrument is None:
        return {}
    return {"name": instrument.name, "version": instrument.version, "kind": instrument.kind}


def consensus_facts(study: Any) -> dict[str, Any]:
    """Return how the study's human reference label (consensus) of an item is reached."""
    return {
        "rule": "modal label",
        "min_ratings": study.min_ratings_for_consensus,
        "tie_policy": study.tie_policy,
        "ties": TIE_RULES.get(study.tie_policy, f"ties: {study.tie_policy}"),
    }


def ensemble_facts(run: Any) -> dict[str, Any]:
    """Return the size of a judge run's panel and its ensemble rule (no judge named)."""
    from judging.ensemble import ensemble_rule

    n_judges = len((run.config or {}).get("judges") or {})
    rule = ensemble_rule(1) if n_judges == 1 else (run.ensemble_rule or ensemble_rule(n_judges))
    return {"run": run.pk, "n_judges": n_judges, "rule": rule}
