"""Sampling plans, the write: create a validation study drawn by a plan from a judge run.

The plan is drawn by :mod:`annotation.sampling.selectors` (reads); here it becomes a study whose
conversations keep their inclusion probability and stratum, with the plan stored as a
``SamplingPlan`` and recorded in the audit trail.
"""

from __future__ import annotations

import secrets
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from annotation.models import SamplingMethod, SamplingPlan, Study, StudyConversation
from annotation.sampling.selectors import PlanOptions, plan_preview, unit_strata
from annotation.studies.services import study_create, study_event
from judging.models import JudgeRun


@transaction.atomic
def study_create_from_plan(
    *,
    run: JudgeRun,
    source_key: str | None,
    options: PlanOptions,
    created_by: AbstractBaseUser | None,
    **study_fields: Any,
) -> Study:
    """Create a validation study whose conversations a sampling plan drew from a judge run.

    ``study_fields`` are :func:`study_create`'s (name, raters, k, tie policy, ...); the
    instrument is the run's. The seed is drawn and recorded when not given. Each picked
    conversation keeps its inclusion probability and stratum, the plan is stored with the
    planning values shown, and the audit trail records it.
    """
    seed = options.seed if options.seed is not None else secrets.randbelow(2**31)
    options = PlanOptions(**{**options.__dict__, "seed": seed})
    preview = plan_preview(run, source_key, options)
    plan = preview.plan
    record = {"method": "sampling_plan", "judge_run": run.pk, "plan": options.method, "source": preview.population.source.key,
              "population": plan.population, "sample_size": plan.n, "seed": seed}
    study = study_create(
        instrument=run.instrument, conversation_ids=list(plan.selected), created_by=created_by,
        selection=record, **study_fields,
    )
    strata = unit_strata(plan, preview.population)
    selected = set(plan.selected)
    links = [link for link in StudyConversation.objects.filter(study=study, is_calibration=False) if link.conversation_id in selected]
    for link in links:
        link.inclusion_prob = plan.inclusion_prob[link.conversation_id]
        link.stratum = strata[link.conversation_id][:300]
    StudyConversation.objects.bulk_update(links, ["inclusion_prob", "stratum"])
    payload = preview.as_dict()
    SamplingPlan.objects.create(
        study=study, judge_run=run, source=preview.population.source.key, method=options.method,
        allocation=options.allocation if options.method == SamplingMethod.STRATIFIED else "",
        boost=options.boost if options.method == SamplingMethod.OVERSAMPLE else None,
        seed=seed, n=plan.n, population=plan.population, strata=preview.strata,
        planning={
            **{k: payload[k] for k in ("planning", "expected_width", "expected_width_by_chatbot", "width_by_n", "n_flagged",
                                       "disagreement_threshold", "split_histogram")},
            # Every judged conversation's π, the unpicked ones' too: judge-assisted estimates weight them 1/(1 - π).
            "unit_inclusion_prob": {str(k): v for k, v in plan.inclusion_prob.items()},
        },
    )
    study_event(
        study=study, actor=created_by, action="sampling_plan", method=options.method, judge_run=run.pk,
        n=plan.n, population=plan.population, seed=seed,
        summary=f"{SamplingMethod(options.method).label.lower()}: {plan.n} of {plan.population} conversations of judge run {run.pk}",
    )
    return study


def plan_inclusion_rows(study: Study) -> tuple[list[str], list[list[Any]]]:
    """Return the study's picked conversations with their stratum and inclusion probability (CSV)."""
    header = ["conversation", "chatbot", "persona", "stratum", "inclusion_prob", "weight", "calibration"]
    rows = []
    links = study.study_conversations.select_related("conversation__target", "conversation__persona").order_by("conversation__code")
    for link in links:
        c = link.conversation
        rows.append([
            c.code, f"{c.target.code} · {c.target.model}" if c.target else "", c.persona.name if c.persona else "",
            link.stratum, link.inclusion_prob, (1 / link.inclusion_prob) if link.inclusion_prob else None, link.is_calibration,
        ])
    return header, rows
