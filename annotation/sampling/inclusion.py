"""Every judged conversation's inclusion probability under a stored sampling plan (a read).

The plan records π on each picked conversation; judge-assisted estimates also need the π of
the conversations it did not pick (:func:`plan_unit_inclusion`).
"""

from __future__ import annotations

from annotation.models import SamplingMethod
from annotation.models import SamplingPlan as StoredPlan
from annotation.sampling.selectors import PlanUnit, _stratum_label, plan_population
from judging.errors import JudgingError
from judging.sources import label_source_get


def _unit_key(method: str, unit: PlanUnit) -> str:
    """Return the stratum label a stored plan gave this unit (as ``strata_rows`` wrote it)."""
    if method == SamplingMethod.SIMPLE_RANDOM:
        return _stratum_label(None)
    if method == SamplingMethod.STRATIFIED:
        return unit.stratum
    return _stratum_label((unit.chatbot, unit.flagged))


def plan_unit_inclusion(plan: StoredPlan) -> tuple[dict[int, float] | None, str]:
    """Return every judged conversation's inclusion probability under a stored plan, or why not.

    The plan records π on each picked conversation; the judge-assisted estimators also need
    the π of the conversations it did not pick (an unrated conversation stands for
    1/(1 - π) of the run's). Plans store the full map since it was needed; older ones are
    rebuilt from their strata (each conversation's stratum from the run's labels, as the plan
    drew it). The rebuild is refused, with the reason, when the π it gives a picked
    conversation differs from the one recorded (the run's labels changed since).
    """
    stored = (plan.planning or {}).get("unit_inclusion_prob")
    if stored:
        return {int(k): float(v) for k, v in stored.items()}, ""
    by_key = {str(s["key"]): float(s["inclusion_prob"]) for s in plan.strata or []}
    if plan.method == SamplingMethod.SIMPLE_RANDOM and plan.population:
        by_key.setdefault(_stratum_label(None), plan.n / plan.population)
    try:
        source = label_source_get(plan.judge_run, plan.source or None)
    except JudgingError as exc:
        return None, f"the plan's label source is gone ({exc})"
    threshold = int((plan.planning or {}).get("disagreement_threshold") or 1)
    population = plan_population(plan.judge_run, source, threshold)
    probs: dict[int, float] = {}
    for unit in population.units:
        key = _unit_key(plan.method, unit)
        if key not in by_key:
            return None, f"conversation {unit.code} falls in a stratum the plan does not list ({key})"
        probs[unit.id] = by_key[key]
    recorded = dict(
        plan.study.study_conversations.filter(is_calibration=False, inclusion_prob__isnull=False)
        .values_list("conversation_id", "inclusion_prob")
    )
    off = [cid for cid, pi in recorded.items() if cid not in probs or abs(probs[cid] - pi) > 1e-9]
    if off:
        return None, (
            f"the run's labels changed since the plan was drawn ({len(off)} picked conversation(s) now fall in "
            "another stratum), so the chances of the conversations it did not pick cannot be rebuilt"
        )
    return probs, ""
