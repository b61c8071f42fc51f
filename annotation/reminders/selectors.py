"""Read the study's reminder log: the last reminder emails with what became of each."""

from __future__ import annotations

from annotation.models import Study
from core.models import EmailPurpose, EmailRecord

LOG_LENGTH = 20


def reminder_log(study: Study, *, limit: int = LOG_LENGTH) -> list[EmailRecord]:
    """Return the study's latest reminder emails, newest first, with their recipients (one query)."""
    return list(EmailRecord.objects.filter(study_id=study.pk, purpose=EmailPurpose.REMINDER)
                .select_related("recipient").order_by("-created_at", "-id")[:limit])
