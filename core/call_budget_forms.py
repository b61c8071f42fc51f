"""The timeout and retry budget fields of the chatbot, judge and batch forms (``core.call_budget``)."""

from __future__ import annotations

from typing import Any

from django import forms

from core import call_budget


def budget_field(name: str, *, who: str = "", timeout: float = 60.0) -> forms.Field:
    """Return the form field of budget setting ``name`` (one of ``call_budget.FIELDS``), defaults as initial values.

    Optional: left blank, ``clean_budget`` puts the default in its place.
    """
    label = f"{who} " if who else ""
    if name == "timeout_seconds":
        return forms.FloatField(
            required=False, min_value=call_budget.MIN_TIMEOUT, max_value=call_budget.MAX_TIMEOUT, initial=timeout,
            label=f"{label}timeout (seconds)".capitalize(), help_text=call_budget.HELP[name],
        )
    if name == "retry_attempts":
        default = call_budget.rides_out(
            call_budget.DEFAULT_ATTEMPTS, call_budget.DEFAULT_BASE_DELAY, call_budget.DEFAULT_MAX_DELAY
        )
        return forms.IntegerField(
            required=False, min_value=1, max_value=call_budget.MAX_ATTEMPTS, initial=call_budget.DEFAULT_ATTEMPTS,
            label=f"{label}attempts per call".capitalize(),
            help_text=call_budget.HELP[name] + f". The defaults wait {default} in all before a call fails",
        )
    if name == "retry_base_delay":
        return forms.FloatField(
            required=False, min_value=0, max_value=call_budget.MAX_BASE_DELAY, initial=call_budget.DEFAULT_BASE_DELAY,
            label=f"{label}first wait between attempts (seconds)".capitalize(), help_text=call_budget.HELP[name],
        )
    if name == "retry_max_delay":
        return forms.FloatField(
            required=False, min_value=0, max_value=call_budget.MAX_MAX_DELAY, initial=call_budget.DEFAULT_MAX_DELAY,
            label=f"{label}longest wait between attempts (seconds)".capitalize(), help_text=call_budget.HELP[name],
        )
    raise ValueError(f"unknown budget setting {name!r}")


def clean_budget(form: forms.Form, cleaned: dict[str, Any], *, prefix: str = "") -> None:
    """Put the default in each blank budget field; add cross-field problems (the longest wait shorter than the first)."""
    for name in call_budget.FIELDS:
        field = form.fields.get(prefix + name)
        if field is not None and cleaned.get(prefix + name) is None and prefix + name not in form.errors:
            cleaned[prefix + name] = field.initial
    found = call_budget.budget_problems(
        retry_base_delay=cleaned.get(prefix + "retry_base_delay"),
        retry_max_delay=cleaned.get(prefix + "retry_max_delay"),
        prefix=prefix,
    )
    for field, problems in found.items():
        for problem in problems:
            form.add_error(field, problem)
