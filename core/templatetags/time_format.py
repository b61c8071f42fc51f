"""Times as readers read them: "about 6 minutes left", and dates in the reader's own locale.

``local_time`` renders a ``<time datetime="ISO">`` element whose text is a readable server-side
fallback (UTC unless the site's zone says otherwise); ``static/evalsite/local-time.js``
rewrites it with ``Intl.DateTimeFormat`` in the browser's language and time zone.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django import template
from django.utils import timezone
from django.utils.html import format_html

register = template.Library()


def time_left_text(seconds: float | None) -> str:
    """Return an estimate of time left in words ("about 6 minutes left"); "" when unknown.

    Estimates are rough, so they are said roughly: whole minutes, hours and minutes past an hour.
    """
    if seconds is None or seconds != seconds or seconds < 0:
        return ""
    minutes = int(round(seconds / 60))
    if seconds < 45:
        return "less than a minute left"
    if minutes < 60:
        minutes = max(minutes, 1)
        return f"about {minutes} minute{'s' if minutes != 1 else ''} left"
    hours, rest = divmod(minutes, 60)
    return f"about {hours} h {rest:02d} min left" if rest else f"about {hours} h left"


@register.filter
def time_left(seconds: Any) -> str:
    try:
        return time_left_text(float(seconds)) if seconds is not None else ""
    except (TypeError, ValueError):
        return ""


FORMATS = {
    # name: (server fallback strftime, what the browser shows: Intl.DateTimeFormat options by name)
    "datetime": "%Y-%m-%d %H:%M",
    "date": "%Y-%m-%d",
    "time": "%H:%M:%S",
    "seconds": "%Y-%m-%d %H:%M:%S",
}


@register.simple_tag
def local_time(value: datetime | str | None, style: str = "datetime", empty: str = "—") -> str:
    """Render a timestamp as ``<time datetime="ISO" data-local="style">fallback</time>``.

    ``style`` is datetime, date, time (hours to seconds) or seconds (date and time to the second).
    The fallback is in the server's zone with the zone named, so it is never ambiguous without
    JavaScript.
    """
    if value in (None, ""):
        return empty
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value)
        except ValueError:
            return value
    if timezone.is_naive(value):
        value = timezone.make_aware(value, timezone.get_default_timezone())
    shown = timezone.localtime(value)
    fallback = shown.strftime(FORMATS.get(style, FORMATS["datetime"]))
    if style != "date":
        fallback += f" {shown.tzname() or ''}".rstrip()
    return format_html('<time datetime="{}" data-local="{}">{}</time>', value.isoformat(), style, fallback)
