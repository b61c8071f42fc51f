"""Adjudicate a whole conversation at once (one final label per disputed item, one reason); blinding."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from annotation.consensus.services import consensus_adjudicate
from annotation.errors import AnnotationError
from annotation.models import ConsensusLabel, Study
from annotation.studies.services import study_event


@transaction.atomic
def consensus_adjudicate_conversation(
    *, study: Study, conversation_id: int, labels: dict[int, str], reason: str, actor: AbstractBaseUser
) -> list[ConsensusLabel]:
    """Record the adjudicator's final labels for items of one conversation, with one shared reason.

    ``labels`` maps consensus label ids to the chosen label; every id must belong to this
    conversation of this study. All or nothing: one refused label stores none. Each item gets
    its own audit-trail entry carrying the shared reason.
    """
    if not reason.strip():
        raise AnnotationError("an adjudication needs a reason")
    chosen = {pk: label for pk, label in labels.items() if label.strip()}
    if not chosen:
        raise AnnotationError("choose a final label for at least one item")
    known = set(
        ConsensusLabel.objects.filter(study=study, conversation_id=conversation_id, pk__in=chosen).values_list("pk", flat=True)
    )
    if known != set(chosen):
        raise AnnotationError("some labels are not items of this conversation in this study", status=404)
    return [
        consensus_adjudicate(consensus_id=pk, study=study, label=label, reason=reason, actor=actor)
        for pk, label in sorted(chosen.items())
    ]


@transaction.atomic
def study_set_adjudication_blinding(*, study: Study, unblinded: bool, reason: str, actor: AbstractBaseUser | None) -> Study:
    """Show or hide the chatbot, its model and the persona design on the adjudication page.

    Blind is the default. Revealing them is a decision about the study's method, so it needs a
    reason; either change is recorded in the audit trail.
    """
    if unblinded and not reason.strip():
        raise AnnotationError("say why adjudicators should see the chatbot, model and persona design")
    study = Study.objects.select_for_update().get(pk=study.pk)
    if study.adjudication_unblinded == unblinded:
        return study
    study.adjudication_unblinded = unblinded
    study.save(update_fields=["adjudication_unblinded"])
    summary = ("adjudicators see the chatbot, its model and the persona design" if unblinded
               else "adjudication is blind to the chatbot, its model and the persona design")
    study_event(study=study, actor=actor, action="adjudication_blinding_set", reason=reason.strip(),
                before={"unblinded": not unblinded}, after={"unblinded": unblinded}, summary=summary)
    return study
