from __future__ import annotations

from typing import Any

from django import forms

from core.secrets_policy import key_env_hint


class TargetForm(forms.Form):
    kind = forms.ChoiceField(choices=[("litellm", "A model through litellm"), ("http", "A custom HTTP endpoint")])
    code = forms.CharField(required=False, max_length=40, help_text="Pseudonym shown wherever blinding applies; blank: generated")
    name = forms.CharField(required=False, max_length=200)
    model = forms.CharField(required=False, max_length=200, help_text="litellm model string, e.g. openai/gpt-4o or anthropic/claude-…")
    api_base = forms.URLField(required=False, assume_scheme="https", help_text="OpenAI-compatible base URL, or the HTTP endpoint URL; its host must be an allowed API host (an administrator approves new ones)")
    api_key_env = forms.CharField(required=False, max_length=100, help_text="NAME of the environment variable holding the key (never the key)")  # completed in __init__
    params = forms.JSONField(required=False, initial=dict, help_text='Sampling parameters, e.g. {"temperature": 1.0}')
    system_prompt = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 3}))
    http_headers = forms.JSONField(required=False, initial=dict, help_text='HTTP only, e.g. {"Authorization": "Bearer ${BOT_API_TOKEN}"}')
    request_template = forms.JSONField(required=False, help_text='HTTP only, e.g. {"messages": "{{messages}}"}')
    response_path = forms.CharField(required=False, max_length=200, help_text="HTTP only, e.g. choices.0.message.content or reply")
    max_concurrent = forms.IntegerField(min_value=0, initial=4)
    requests_per_minute = forms.IntegerField(min_value=0, initial=0)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        names = f"named like {key_env_hint()}"
        self.fields["api_key_env"].help_text = f"NAME of the environment variable holding the key, {names} (never the key)"
        self.fields["http_headers"].help_text += f"; variables {names}"
