"""HTML forms of the judging pages: parse and check input; the services decide the rest."""

from __future__ import annotations

import json
import re
from typing import Any

from django import forms

from core import call_budget
from core.bounded import TooComplex, json_loads
from core.call_budget_forms import budget_field, clean_budget
from core.secrets_policy import key_env_hint
from core.visibility import visible
from corpus.conversations.collections import collection_get
from corpus.models import Instrument, InstrumentKind, PersonaSet
from judging.models import Judge, JudgeMode, PromptTemplate, ReasoningEffort
from judging.prompts import DEFAULTS
from simulation.models import SimulationBatch


def _split(text: str) -> list[str]:
    return [part for part in re.split(r"[\s,;]+", text or "") if part]


class JudgeForm(forms.Form):
    name = forms.CharField(max_length=120)
    instrument = forms.ModelChoiceField(
        queryset=Instrument.objects.filter(kind__in=[InstrumentKind.CHECKLIST, InstrumentKind.FLOW]),
        help_text="Checklist instruments get a checklist judge, question flows a question-flow judge.",
    )
    model = forms.CharField(max_length=200, help_text="litellm model string, e.g. openai/gpt-4o or anthropic/claude-sonnet-4-5")
    provider = forms.CharField(max_length=60, required=False, help_text="Blank: taken from the model string prefix")
    api_base = forms.URLField(required=False, label="API base URL", assume_scheme="https")
    api_key_env = forms.CharField(
        max_length=100, required=False, label="API key variable",
        help_text="The NAME of the environment variable holding the key (never the key itself)",
    )  # help text completed in __init__ with the allowed names
    temperature = forms.FloatField(
        required=False, min_value=0.0, max_value=2.0,
        help_text="Blank (the default): not sent, the provider's default applies. Some models refuse any temperature.",
    )
    reasoning_effort = forms.ChoiceField(choices=ReasoningEffort.choices, required=False)
    params = forms.CharField(widget=forms.Textarea(attrs={"rows": 3}), required=False, initial="{}", label="Other parameters (JSON)")
    prompt = forms.ModelChoiceField(queryset=PromptTemplate.objects.all(), required=False, help_text="Blank: the team-written default for the mode")
    structured_output = forms.BooleanField(required=False, initial=True, help_text="Question flows: send the answer options as a JSON schema (checklists always do)")
    format_retries = forms.IntegerField(min_value=0, max_value=5, initial=2)
    timeout_seconds = forms.IntegerField(
        min_value=5, max_value=1800, initial=120, label="Timeout (seconds)", help_text=call_budget.HELP["timeout_seconds"]
    )
    retry_attempts = budget_field("retry_attempts")
    retry_base_delay = budget_field("retry_base_delay")
    retry_max_delay = budget_field("retry_max_delay")
    max_concurrent = forms.IntegerField(min_value=0, initial=8, help_text="Calls in flight to this model at once (0: no cap)")
    requests_per_minute = forms.IntegerField(min_value=0, initial=0, help_text="0: no cap")
    notes = forms.CharField(widget=forms.Textarea(attrs={"rows": 2}), required=False)
    item_guidance = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 3}), required=False, initial="{}", label="Edited item instructions (JSON)",
        help_text='{"item key": "instruction"}: replaces the item\'s definition in this version\'s prompt. Blank or {}: the instrument\'s own wording.',
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["api_key_env"].help_text = (
            f"The NAME of the environment variable holding the key, named like {key_env_hint()} (never the key itself)"
        )
        self.fields["api_base"].help_text = "Blank: the provider's own endpoint. Its host must be an allowed API host."

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        clean_budget(self, cleaned)
        return cleaned

    def clean_params(self) -> dict[str, Any]:
        return self._json_object("params")

    def clean_item_guidance(self) -> dict[str, Any]:
        return self._json_object("item_guidance")

    def _json_object(self, name: str) -> dict[str, Any]:
        text = self.cleaned_data.get(name) or "{}"
        try:
            value = json_loads(text)
        except json.JSONDecodeError as exc:
            raise forms.ValidationError(f"not valid JSON: {exc.msg}") from exc
        except TooComplex as exc:
            raise forms.ValidationError(str(exc)) from exc
        if not isinstance(value, dict):
            raise forms.ValidationError("must be a JSON object")
        return value


class PromptForm(forms.Form):
    key = forms.SlugField(max_length=80, help_text="Same key as an existing prompt: stored as its next version")
    name = forms.CharField(max_length=200)
    mode = forms.ChoiceField(choices=JudgeMode.choices)
    description = forms.CharField(widget=forms.Textarea(attrs={"rows": 2}), required=False)
    system_template = forms.CharField(widget=forms.Textarea(attrs={"rows": 14}))
    user_template = forms.CharField(widget=forms.Textarea(attrs={"rows": 10}))
    retry_template = forms.CharField(widget=forms.Textarea(attrs={"rows": 4}))

    @classmethod
    def initial_for(cls, mode: str) -> dict[str, str]:
        spec = DEFAULTS.get(mode, DEFAULTS[JudgeMode.CHECKLIST])
        return {
            "mode": mode,
            "system_template": spec["system_template"],
            "user_template": spec["user_template"],
            "retry_template": spec["retry_template"],
        }


class JudgeChoiceField(forms.ModelMultipleChoiceField):
    def label_from_instance(self, obj: Judge) -> str:
        return f"{obj.name} ({obj.provider}, {obj.model}; {obj.instrument})"


class BatchChoiceField(forms.ModelMultipleChoiceField):
    def label_from_instance(self, obj: SimulationBatch) -> str:
        return f"{obj.code}{f' · {obj.name}' if obj.name else ''} ({obj.created_at:%Y-%m-%d})"


class JudgeRunForm(forms.Form):
    name = forms.CharField(max_length=200, required=False)
    judges = JudgeChoiceField(
        queryset=Judge.objects.select_related("instrument").order_by("name"),
        widget=forms.CheckboxSelectMultiple,
        help_text="All must judge the same instrument. An ensemble wants one judge per provider.",
    )
    batches = BatchChoiceField(
        queryset=SimulationBatch.objects.order_by("-id"), required=False, label="Simulation batches",
        widget=forms.CheckboxSelectMultiple,
    )
    persona_sets = forms.ModelMultipleChoiceField(
        queryset=PersonaSet.objects.order_by("key", "-version"), required=False, widget=forms.CheckboxSelectMultiple
    )
    study = forms.ModelChoiceField(queryset=None, required=False)  # type: ignore[arg-type]  # set in __init__
    codes = forms.CharField(widget=forms.Textarea(attrs={"rows": 2}), required=False, label="Conversation codes")
    include_flagged = forms.BooleanField(required=False, help_text="Also judge conversations that failed the integrity checks")
    instances = forms.IntegerField(min_value=1, max_value=10, initial=1, help_text="Instances per judge, to measure self-consistency")
    independent_instances = forms.BooleanField(
        required=False,
        help_text="Give each instance its own cache key so it is a fresh call. Without this, "
        "instances 2..n of an identical request are answered from the cache (temperature 0).",
    )
    use_cache = forms.BooleanField(required=False, initial=True, help_text="Answer identical earlier calls from the cache, free")

    def __init__(self, *args: Any, user: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        studies = collection_get("study")
        if studies is None:
            del self.fields["study"]
        else:
            self.fields["study"].queryset = studies.choices(user)  # only the studies this user may read
        # Only the batches and persona sets the user may read (core.visibility).
        self.fields["batches"].queryset = visible(SimulationBatch.objects.all(), user).order_by("-id")
        self.fields["persona_sets"].queryset = visible(PersonaSet.objects.all(), user).order_by("key", "-version")

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        # The selector takes batch ids or codes (as the API and the command give them); codes read
        # better in the run's recorded selection, and every simulated conversation carries its batch's.
        data["batch_ids"] = [b.code for b in data.get("batches") or []]
        data["codes"] = _split(data.get("codes", ""))
        if not (data["batch_ids"] or data.get("persona_sets") or data.get("study") or data["codes"]):
            raise forms.ValidationError("Choose conversations: a batch, a persona set, a study or codes.")
        return data
