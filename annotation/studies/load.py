"""Rater load and care: the break prompt (conversations per sitting), the support text, cited turns (evidence)."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from annotation.errors import AnnotationError
from annotation.models import EvidenceMode, Study
from annotation.studies.services import study_event

MAX_SITTING_LIMIT = 500
MAX_GAP_MINUTES = 24 * 60


@transaction.atomic
def study_set_sitting_limit(
    *, study: Study, limit: int, gap_minutes: int, actor: AbstractBaseUser | None
) -> Study:
    """Set after how many conversations per sitting raters are offered a break (0: never).

    ``gap_minutes``: a pause this long between two submissions starts a new sitting. The
    change is recorded in the audit trail.
    """
    if not 0 <= limit <= MAX_SITTING_LIMIT:
        raise AnnotationError(f"the limit must be between 0 (no prompt) and {MAX_SITTING_LIMIT} conversations")
    if not 1 <= gap_minutes <= MAX_GAP_MINUTES:
        raise AnnotationError(f"the pause that starts a new sitting must be between 1 and {MAX_GAP_MINUTES} minutes")
    study = Study.objects.select_for_update().get(pk=study.pk)
    before = {"limit": study.sitting_limit, "gap_minutes": study.sitting_gap_minutes}
    study.sitting_limit, study.sitting_gap_minutes = limit, gap_minutes
    study.save(update_fields=["sitting_limit", "sitting_gap_minutes"])
    summary = (f"break suggested after {limit} conversations per sitting" if limit else "no break prompt") + (
        f"; a {gap_minutes}-minute pause starts a new sitting"
    )
    study_event(study=study, actor=actor, action="sitting_limit_set", before=before,
                after={"limit": limit, "gap_minutes": gap_minutes}, summary=summary)
    return study


MAX_SUPPORT_CHARS = 2000


@transaction.atomic
def study_set_rater_support(*, study: Study, text: str, actor: AbstractBaseUser | None) -> Study:
    """Set where raters can find support (shown on the content warning); empty restores the default.

    The change is recorded in the audit trail.
    """
    text = text.strip()
    if len(text) > MAX_SUPPORT_CHARS:
        raise AnnotationError(f"the support text must be at most {MAX_SUPPORT_CHARS} characters (it has {len(text)})")
    study = Study.objects.select_for_update().get(pk=study.pk)
    before = study.rater_support
    study.rater_support = text
    study.save(update_fields=["rater_support"])
    study_event(study=study, actor=actor, action="rater_support_set", before={"text": before}, after={"text": text},
                summary="raters' support text set" if text else "raters' support text back to the default")
    return study


@transaction.atomic
def study_set_evidence(*, study: Study, mode: str, required: bool, actor: AbstractBaseUser | None) -> Study:
    """Set whether raters cite the transcript turns behind their answers, and whether they must.

    ``mode``: ``off``, ``per_item`` (turns per answer) or ``whole_form`` (turns for the rating
    as a whole). ``required`` only means something when the mode is not off: it is stored
    as false with the mode off. The change is recorded in the audit trail.
    """
    if mode not in EvidenceMode.values:
        raise AnnotationError(f"unknown evidence mode '{mode}'; expected one of: {', '.join(EvidenceMode.values)}")
    required = bool(required) and mode != EvidenceMode.OFF
    study = Study.objects.select_for_update().get(pk=study.pk)
    before = {"mode": study.evidence_mode, "required": study.evidence_required}
    study.evidence_mode, study.evidence_required = mode, required
    study.save(update_fields=["evidence_mode", "evidence_required"])
    summary = "raters do not cite turns" if mode == EvidenceMode.OFF else (
        ("raters cite turns for each answer" if mode == EvidenceMode.PER_ITEM else "raters cite turns for the whole form")
        + ("; required before submitting" if required else "; optional")
    )
    study_event(study=study, actor=actor, action="evidence_set", before=before,
                after={"mode": mode, "required": required}, summary=summary)
    return study
