"""Rebuild a study's active sampling from its publication bundle (``reports.bundle``): the plan, its batches, their draws.

The study's conversations (with the inclusion probability and the batch each was drawn in) and
its assignments come back through ``annotation.studies.restore``; this restores what only an
active study has: the plan (design, seed, visit order, planning values) and every batch with
every visited conversation's uncertainty, probability and draw, exactly as recorded, so the
study's estimate, its next batch and its methods paragraph are the same as where the bundle
was made. Nothing is drawn again. Called inside the bundle import's transaction.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import NON_FIELD_ERRORS, ValidationError
from django.db import transaction

from annotation.errors import AnnotationError
from annotation.models import ActiveBatch, ActivePlan, ActiveUnit, Study
from annotation.studies.services import study_event

# The recorded fields of a plan and of a batch, in the order a bundle writes them.
PLAN_FIELDS = ("source", "uncertainty", "budget", "batch_size", "floor", "target_width", "stop_on", "confidence", "seed",
               "population", "visit_size", "order", "planning")
BATCH_FIELDS = ("number", "tau", "tuned_on", "expected", "n_visited", "visit_end", "n_selected", "seed", "assignment_seed",
                "width_before", "expected_width")


@dataclass(frozen=True)
class RestoredUnit:
    """A conversation a batch visited, as recorded: its place in the visit order, uncertainty, probability and draw."""

    conversation_id: int
    position: int
    uncertainty: float
    inclusion_prob: float
    selected: bool


@dataclass(frozen=True)
class RestoredBatch:
    """One batch as recorded (``BATCH_FIELDS``), when it was drawn, and the conversations it visited."""

    fields: dict[str, Any]
    created_at: datetime | None = None
    units: list[RestoredUnit] = field(default_factory=list)


def _clean(row: Any, what: str) -> None:
    """Check a row against its model's fields and constraints; a wrong value becomes an ``AnnotationError``."""
    try:
        row.full_clean(exclude=["study", "judge_run", "plan", "batch", "conversation", "created_by"], validate_unique=False)
    except ValidationError as exc:
        messages = "; ".join(" ".join(errors) if key == NON_FIELD_ERRORS else f"{key}: {' '.join(errors)}"
                             for key, errors in exc.message_dict.items())
        raise AnnotationError(f"{what}: {messages}") from exc


@transaction.atomic
def active_plan_restore(*, study: Study, judge_run: Any, fields: dict[str, Any], batches: list[RestoredBatch],
                        actor: AbstractBaseUser | None = None) -> ActivePlan:
    """Record the study's active plan and its batches as exported; return the plan.

    ``fields``: the plan's (``PLAN_FIELDS``; ``order`` as conversation ids, ``source`` as a key of
    this database's run). Raises ``AnnotationError`` on an unknown field, a value the plan's
    constraints refuse, a batch number given twice, or a drawn conversation that is not in the study.
    """
    unknown = sorted(set(fields) - set(PLAN_FIELDS))
    if unknown:
        raise AnnotationError(f"unknown active plan field(s): {', '.join(unknown)}")
    plan = ActivePlan(study=study, judge_run=judge_run, **fields)
    _clean(plan, "the active plan")
    plan.save()
    in_study = set(study.study_conversations.values_list("conversation_id", flat=True))
    order = set(plan.order)
    seen: set[int] = set()
    for batch in batches:
        unknown = sorted(set(batch.fields) - set(BATCH_FIELDS))
        if unknown:
            raise AnnotationError(f"unknown active batch field(s): {', '.join(unknown)}")
        number = batch.fields.get("number")
        if number in seen:
            raise AnnotationError(f"active batch {number} is given twice")
        seen.add(number)  # type: ignore[arg-type]
        row = ActiveBatch(plan=plan, **batch.fields)
        _clean(row, f"active batch {number}")
        row.save()
        if batch.created_at is not None:
            ActiveBatch.objects.filter(pk=row.pk).update(created_at=batch.created_at)
        units = []
        for unit in batch.units:
            if unit.conversation_id not in order:
                raise AnnotationError(f"active batch {number} visited a conversation that is not in the plan's visit order")
            if not 0 < unit.inclusion_prob <= 1:
                raise AnnotationError(f"active batch {number}: inclusion probability {unit.inclusion_prob:g} of a visited "
                                      "conversation is not above 0 and at most 1")
            if unit.selected and unit.conversation_id not in in_study:
                raise AnnotationError(f"active batch {number} drew a conversation that is not in the study")
            units.append(ActiveUnit(batch=row, conversation_id=unit.conversation_id, position=unit.position,
                                    uncertainty=unit.uncertainty, inclusion_prob=unit.inclusion_prob, selected=unit.selected))
            _clean(units[-1], f"a conversation of active batch {number}")
        ActiveUnit.objects.bulk_create(units)
    study_event(study=study, actor=actor, action="active_sampling_restored", batches=len(batches),
                summary=f"active sampling restored from a publication bundle: {len(batches)} batch(es), nothing drawn again")
    return plan
