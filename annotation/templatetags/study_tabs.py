"""Tags of the study's header: the open-flag count on the Flags tab."""

from __future__ import annotations

from django import template

from annotation.flags.selectors import open_flag_count
from annotation.models import Study

register = template.Library()


@register.simple_tag
def open_flags(study: Study) -> int:
    """Return the study's open flags: an annotated ``n_open_flags`` when the view has one, else one COUNT."""
    known = getattr(study, "n_open_flags", None)
    return int(known) if known is not None else open_flag_count(study)
