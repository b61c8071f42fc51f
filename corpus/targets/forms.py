from __future__ import annotations

from typing import Any

from django import forms

from core.call_budget_forms import budget_field, clean_budget
from core.parsers import BoundedJSONField
from core.secrets_policy import key_env_hint

DEFAULT_REQUEST_TEMPLATE = {"messages": "{{messages}}"}  # what the service uses when none is given
# Shown (and sent) only for HTTP chatbots; the page groups them under "HTTP chatbots only".
HTTP_FIELDS = ("http_headers", "request_template", "response_path")


def _json_area(rows: int) -> forms.Textarea:
    return forms.Textarea(attrs={"rows": rows, "spellcheck": "false", "class": "mono"})


class TargetForm(forms.Form):
    kind = forms.ChoiceField(
        label="Kind of chatbot",
        choices=[("litellm", "A model through litellm"), ("http", "A custom HTTP endpoint")],
        help_text="A model of a provider (OpenAI, Anthropic, a local OpenAI-compatible server), or your own service that answers over HTTP",
    )
    code = forms.CharField(
        required=False, max_length=40, label="Code (pseudonym)",
        help_text="What coordinators and reports call it; raters never see it. Blank: one is generated (T-…)",
    )
    name = forms.CharField(required=False, max_length=200, label="Name", help_text="For researchers, e.g. the product and version")
    model = forms.CharField(
        required=False, max_length=200, label="Model",
        help_text="The litellm model string, e.g. openai/gpt-4o or anthropic/claude-…; for an HTTP chatbot, an optional label recorded with each reply",
    )
    api_base = forms.URLField(
        required=False, assume_scheme="https", label="API base URL or endpoint",
        help_text="Blank: the provider's own endpoint. An OpenAI-compatible base URL, or the URL an HTTP chatbot answers at. "
        "Its host must be an allowed API host (an administrator approves new ones)",
    )
    api_key_env = forms.CharField(required=False, max_length=100, label="API key variable")  # help text in __init__
    params = BoundedJSONField(
        required=False, initial=dict, label="Parameters (JSON)", widget=_json_area(2),
        help_text='Generation parameters sent with every call, e.g. {"temperature": 1.0, "max_tokens": 500}: '
        "temperature, top_p, top_k, max_tokens, seed, stop, presence/frequency penalties, reasoning_effort and the like; "
        "never keys, endpoints, regions or identity settings. Empty {}: the provider\'s defaults",
    )
    system_prompt = forms.CharField(
        required=False, widget=forms.Textarea(attrs={"rows": 3}), label="System prompt",
        help_text="Optional: put in front of every conversation as the chatbot's system message",
    )
    max_concurrent = forms.IntegerField(min_value=0, initial=4, label="Calls at once", help_text="0: no cap")
    requests_per_minute = forms.IntegerField(min_value=0, initial=0, label="Requests per minute", help_text="0: no cap")
    timeout_seconds = budget_field("timeout_seconds")
    retry_attempts = budget_field("retry_attempts")
    retry_base_delay = budget_field("retry_base_delay")
    retry_max_delay = budget_field("retry_max_delay")
    http_headers = BoundedJSONField(required=False, initial=dict, label="Headers (JSON)", widget=_json_area(2))  # help in __init__
    request_template = BoundedJSONField(
        required=False, initial=DEFAULT_REQUEST_TEMPLATE, label="Request body (JSON template)", widget=_json_area(3),
        help_text="The JSON sent to the endpoint; {{messages}} becomes the conversation so far. Also {{history}}, "
        "{{last_message}}, {{system_prompt}}, {{conversation_id}}, {{model}}, {{params}}",
    )
    response_path = forms.CharField(
        required=False, max_length=200, label="Where the reply is in the response",
        help_text="A dotted path into the JSON answer, e.g. choices.0.message.content or reply (blank: reply)",
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        names = key_env_hint()
        self.fields["api_key_env"].help_text = (
            f"The NAME of the environment variable that holds the key, never the key itself. Allowed names: {names} "
            "(e.g. OPENAI_API_KEY). Blank: the provider's usual variable"
        )
        self.fields["http_headers"].help_text = (
            'Sent with every request, e.g. {"Authorization": "Bearer ${BOT_API_TOKEN}"}. A credential must come from '
            f"an environment variable written as ${{NAME}}, named like {names}"
        )

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        clean_budget(self, cleaned)
        return cleaned

    def general_fields(self) -> list[forms.BoundField]:
        return [self[name] for name in self.fields if name not in HTTP_FIELDS]

    def http_fields(self) -> list[forms.BoundField]:
        return [self[name] for name in HTTP_FIELDS]
