"""Study settings a coordinator changes from the study's pages, each recorded in the audit trail.

Where raters find support (shown on the content warning), whether raters cite the transcript
turns behind their answers (evidence), and whether adjudication is blind to the chatbot, its
model and the persona design. POST only; errors come back as messages.
"""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.http import require_POST

from annotation.consensus.adjudication import study_set_adjudication_blinding
from annotation.errors import AnnotationError
from annotation.studies import selectors as reads
from annotation.studies.load import study_set_evidence, study_set_rater_support


@require_POST
def study_rater_support(request: HttpRequest, pk: int) -> HttpResponse:
    """Set the text that tells raters where to find support."""
    study = reads.study_get_for_coordinator(request.user, pk=pk)
    try:
        study = study_set_rater_support(study=study, text=request.POST.get("rater_support", ""), actor=request.user)
    except AnnotationError as exc:
        messages.error(request, f"The support text was not changed: {exc}.")
    else:
        messages.success(request, "Raters see the new support text before hard content." if study.rater_support
                         else "Raters see the default support text before hard content.")
    return redirect(reverse("annotation:study-detail", args=[pk]) + "#rater-support")


@require_POST
def study_evidence(request: HttpRequest, pk: int) -> HttpResponse:
    """Set whether raters cite the turns behind their answers (per item or for the form), and if they must."""
    study = reads.study_get_for_coordinator(request.user, pk=pk)
    try:
        study = study_set_evidence(
            study=study, mode=request.POST.get("evidence_mode", ""),
            required=request.POST.get("evidence_required") == "1", actor=request.user,
        )
    except AnnotationError as exc:
        messages.error(request, f"Evidence setting not changed: {exc}.")
    else:
        messages.success(request, "Raters do not cite turns." if study.evidence_mode == "off" else (
            f"Raters cite turns {'for each answer' if study.evidence_mode == 'per_item' else 'for the whole form'}"
            f" ({'required before submitting' if study.evidence_required else 'optional'})."
        ))
    return redirect(reverse("annotation:study-detail", args=[pk]) + "#evidence")


@require_POST
def study_adjudication_blinding(request: HttpRequest, pk: int) -> HttpResponse:
    """Reveal the chatbot, model and persona design to adjudicators, or hide them again."""
    study = reads.study_get_for_coordinator(request.user, pk=pk)
    unblinded = request.POST.get("unblinded") == "1"
    try:
        study_set_adjudication_blinding(study=study, unblinded=unblinded, reason=request.POST.get("reason", ""), actor=request.user)
    except AnnotationError as exc:
        messages.error(request, f"Blinding not changed: {exc}.")
    else:
        messages.success(request, "Adjudicators now see the chatbot, its model and the persona design." if unblinded
                         else "Adjudication is blind again: chatbot, model and persona design are hidden.")
    back = reverse("annotation:study-adjudication", args=[pk])
    conversation = request.POST.get("conversation", "")
    return redirect(back + (f"?conversation={conversation}" if conversation.isdigit() else ""))
