"""JSON request bodies and form fields parsed within the bounds of ``core.bounded``.

Python's ``json`` module recurses once per nesting level: a body of 100,000 ``[`` raised
RecursionError, which DRF's parser and Django's ``forms.JSONField`` do not catch (a 500). Here
it is a 400 that says the body is nested too deeply, like any other malformed JSON.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.conf import settings
from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser

from core.bounded import TooComplex, json_loads


class BoundedJSONParser(JSONParser):
    """DRF's JSON parser, with nesting depth and NaN refused (``core.bounded``)."""

    def parse(self, stream: Any, media_type: str | None = None, parser_context: dict | None = None) -> Any:
        encoding = (parser_context or {}).get("encoding", settings.DEFAULT_CHARSET)
        try:
            return json_loads(stream.read().decode(encoding))
        except TooComplex as exc:
            raise ParseError(f"JSON parse error - {exc}") from exc
        except (ValueError, UnicodeDecodeError) as exc:
            raise ParseError(f"JSON parse error - {exc}") from exc


def _too_complex(value: Any) -> TooComplex | None:
    """Return why text parses to JSON beyond the bounds (None when within them, or not JSON at all)."""
    if not isinstance(value, str):
        return None
    try:
        json_loads(value)
    except TooComplex as exc:
        return exc
    except (ValueError, TypeError):
        return None  # not JSON: the parent field says so in its own words
    return None


class BoundedJSONField(forms.JSONField):
    """``forms.JSONField`` whose too deeply nested input is a validation error, not a crash."""

    def to_python(self, value: Any) -> Any:
        if not self.disabled and (problem := _too_complex(value)):
            raise forms.ValidationError(str(problem), code="invalid")
        return super().to_python(value)

    def bound_data(self, data: Any, initial: Any) -> Any:
        if not self.disabled and _too_complex(data):
            return forms.fields.InvalidJSONInput(data)
        return super().bound_data(data, initial)
