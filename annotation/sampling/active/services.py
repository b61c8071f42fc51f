"""Active sampling, the writes: create a study that grows batch by batch, and draw its next batch.

Creating the study fixes the design (the run, whose labels, the uncertainty measure, the
budget, the batch size, the floor, the target width and the seed), the random order in which
the run's conversations are visited, and draws the first batch. Each later batch is drawn on
the coordinator's request, from the state :func:`annotation.sampling.active.selectors.active_state`
computes, refused (409) once the target width is reached, the budget spent or every
conversation visited. A batch records every visited conversation's uncertainty, probability
and draw (``ActiveUnit``); the drawn ones join the study with their probability and are
assigned to the raters by the study's balanced design; the audit trail records each step.
"""

from __future__ import annotations

import math
import secrets
from dataclasses import dataclass
from typing import Any

import numpy as np
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from annotation.errors import AnnotationError
from annotation.models import (
    ActiveBatch,
    ActivePlan,
    ActiveStopRule,
    ActiveUnit,
    Study,
    StudyConversation,
    UncertaintyMeasure,
)
from annotation.sampling.active.population import active_population
from annotation.sampling.active.selectors import POOLED, ActiveState, active_state
from annotation.studies.services import study_assign_conversations, study_create, study_event
from judging.models import JudgeRun
from stats.active import TAU_START, draw_batch, visit_order

DEFAULT_FLOOR = 0.2
DEFAULT_D_AGREE = 0.15
DEFAULT_D_SPLIT = 0.40
SCALE_TOP = {"amhart": 1.0, "vera_mh": 100.0}  # the score's range: a target width must be below it


@dataclass(frozen=True)
class ActiveOptions:
    """What the coordinator chose for an active plan."""

    budget: int
    batch_size: int
    target_width: float
    uncertainty: str = UncertaintyMeasure.DISAGREEMENT
    floor: float = DEFAULT_FLOOR
    stop_on: str = ActiveStopRule.EACH_CHATBOT
    seed: int | None = None
    d_agree: float = DEFAULT_D_AGREE
    d_split: float = DEFAULT_D_SPLIT


def _check(options: ActiveOptions, population_size: int, instrument: str) -> None:
    if not 1 <= options.budget <= population_size:
        raise AnnotationError(f"the budget must be between 1 and the run's {population_size} conversations, not {options.budget}")
    if not 1 <= options.batch_size <= options.budget:
        raise AnnotationError(f"a batch must ask for between 1 and the budget's {options.budget} ratings, not {options.batch_size}")
    if not 0 < options.floor <= 1:
        raise AnnotationError("the floor must be a share above 0 and at most 1 (1: uniform sampling)")
    top = SCALE_TOP[instrument]
    if not 0 < options.target_width < top:
        scale = "0-1 (0.10 is ten percentage points)" if instrument == "amhart" else "0-100 points"
        raise AnnotationError(f"the target width must lie between 0 and {top:g}: the score runs {scale}")
    if options.stop_on not in ActiveStopRule.values:
        raise AnnotationError(f"unknown stop rule '{options.stop_on}'")


def _watched(state: ActiveState, which: str) -> float | None:
    """Return the width the stop rule watches: pooled, or the widest chatbot's (None if one has none)."""
    if state.plan.stop_on == ActiveStopRule.POOLED:
        return state.pooled.estimate.width if which == "now" else state.pooled.expected_next
    values = [g.estimate.width if which == "now" else g.expected_next for g in state.groups]
    return None if not values or any(v is None for v in values) else max(values)  # type: ignore[type-var]


def _batch_seed(plan: ActivePlan, number: int) -> int:
    return int(np.random.SeedSequence([int(plan.seed), number]).generate_state(1)[0])


def _draw(plan: ActivePlan, state: ActiveState, actor: AbstractBaseUser | None) -> ActiveBatch:
    proposal = state.next_batch
    if proposal is None:
        raise AnnotationError(state.status_text, status=409)
    seed = _batch_seed(plan, proposal.number)
    chosen = draw_batch(proposal.probs, seed)
    batch = ActiveBatch.objects.create(
        plan=plan, number=proposal.number, tau=proposal.tau, tuned_on=proposal.tuned_on, expected=proposal.expected,
        n_visited=len(proposal.ids), visit_end=proposal.visit_end, n_selected=int(chosen.sum()), seed=seed,
        width_before=_watched(state, "now"), expected_width=_watched(state, "next"),
        created_by=actor if getattr(actor, "pk", None) else None,
    )
    ActiveUnit.objects.bulk_create(
        ActiveUnit(batch=batch, conversation_id=cid, position=position, uncertainty=float(u), inclusion_prob=float(pi),
                   selected=bool(sel))
        for cid, position, u, pi, sel in zip(proposal.ids, proposal.positions, proposal.uncertainty, proposal.probs, chosen,
                                            strict=True)
    )
    selected = [cid for cid, sel in zip(proposal.ids, chosen, strict=True) if sel]
    probs = {cid: float(pi) for cid, pi in zip(proposal.ids, proposal.probs, strict=True)}
    StudyConversation.objects.bulk_create(
        StudyConversation(study=plan.study, conversation_id=cid, inclusion_prob=probs[cid], stratum=f"active batch {batch.number}")
        for cid in selected
    )
    if selected:
        assigned = study_assign_conversations(
            study=plan.study, conversation_ids=selected, actor=actor, seed=_batch_seed(plan, 10_000 + proposal.number),
            summary=f"active sampling batch {batch.number}: {len(selected)} conversations",
        )
        batch.assignment_seed = assigned["seed"]
        batch.save(update_fields=["assignment_seed"])
    study_event(
        study=plan.study, actor=actor, action="active_batch", batch=batch.number, n_visited=batch.n_visited,
        n_selected=batch.n_selected, expected=round(batch.expected, 3), tau=round(batch.tau, 4), seed=seed,
        summary=(f"batch {batch.number}: visited {batch.n_visited} conversations, drew {batch.n_selected} for rating "
                 f"(expected {batch.expected:.1f}, τ {batch.tau:.2f})"),
    )
    return batch


@transaction.atomic
def active_study_create(
    *,
    run: JudgeRun,
    source_key: str | None,
    options: ActiveOptions,
    created_by: AbstractBaseUser | None,
    **study_fields: Any,
) -> Study:
    """Create a study that grows by active sampling from a judge run, and draw its first batch.

    ``study_fields`` are :func:`study_create`'s (name, raters, k, tie policy, ...); the
    instrument is the run's. The seed is drawn and recorded when not given; it fixes the visit
    order and every batch's draws. Raises AnnotationError for a run that is not finished, has
    one judge, or for options that do not fit the run.
    """
    population = active_population(run, source_key, options.uncertainty, d_agree=options.d_agree, d_split=options.d_split)
    size = len(population.ids)
    _check(options, size, population.instrument)
    if not study_fields.get("raters"):
        raise AnnotationError("pick at least one rater: each batch is assigned as soon as it is drawn")
    seed = options.seed if options.seed is not None else secrets.randbelow(2**31)
    order = [population.ids[i] for i in visit_order(size, seed)]
    visit_size = min(size, math.ceil(size * options.batch_size / options.budget))
    record = {"method": "active_sampling", "judge_run": run.pk, "source": population.source_key,
              "uncertainty": options.uncertainty, "budget": options.budget, "batch_size": options.batch_size,
              "population": size, "seed": seed}
    study = study_create(instrument=run.instrument, conversation_ids=[], allow_empty=True, created_by=created_by,
                         selection=record, **study_fields)
    plan = ActivePlan.objects.create(
        study=study, judge_run=run, source=population.source_key, uncertainty=options.uncertainty, budget=options.budget,
        batch_size=options.batch_size, floor=options.floor, target_width=options.target_width, stop_on=options.stop_on,
        seed=seed, population=size, visit_size=visit_size, order=order,
        planning={"d_agree": options.d_agree, "d_split": options.d_split, "tau_start": max(TAU_START, options.floor),
                  "score": "vera_mh_score" if population.instrument == "vera_mh" else "amhart_score",
                  "instrument": population.instrument, "pooled_group": POOLED},
    )
    study_event(
        study=study, actor=created_by, action="active_sampling", judge_run=run.pk, budget=options.budget,
        batch_size=options.batch_size, floor=options.floor, target_width=options.target_width, seed=seed,
        summary=(f"active sampling from judge run {run.pk}: {options.budget} ratings in batches of about "
                 f"{options.batch_size}, {size} conversations visited {visit_size} at a time, floor {options.floor:g}"),
    )
    _draw(plan, active_state(plan), created_by)
    return study


@transaction.atomic
def active_batch_draw(*, study: Study, actor: AbstractBaseUser | None) -> ActiveBatch:
    """Draw the study's next batch, or raise AnnotationError (409) saying why there is none."""
    plan = ActivePlan.objects.select_for_update(of=("self",)).filter(study=study).select_related("judge_run", "study").first()
    if plan is None:
        raise AnnotationError("this study was not built by active sampling", status=404)
    return _draw(plan, active_state(plan), actor)
