from __future__ import annotations

from django import forms


class TargetForm(forms.Form):
    kind = forms.ChoiceField(choices=[("litellm", "A model through litellm"), ("http", "A custom HTTP endpoint")])
    code = forms.CharField(required=False, max_length=40, help_text="Pseudonym shown wherever blinding applies; blank: generated")
    name = forms.CharField(required=False, max_length=200)
    model = forms.CharField(required=False, max_length=200, help_text="litellm model string, e.g. openai/gpt-4o or anthropic/claude-…")
    api_base = forms.URLField(required=False, assume_scheme="https", help_text="OpenAI-compatible base URL, or the HTTP endpoint URL")
    api_key_env = forms.CharField(required=False, max_length=100, help_text="NAME of the environment variable holding the key (never the key)")
    params = forms.JSONField(required=False, initial=dict, help_text='Sampling parameters, e.g. {"temperature": 1.0}')
    system_prompt = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 3}))
    http_headers = forms.JSONField(required=False, initial=dict, help_text='HTTP only, e.g. {"Authorization": "Bearer ${BOT_TOKEN}"}')
    request_template = forms.JSONField(required=False, help_text='HTTP only, e.g. {"messages": "{{messages}}"}')
    response_path = forms.CharField(required=False, max_length=200, help_text="HTTP only, e.g. choices.0.message.content or reply")
    max_concurrent = forms.IntegerField(min_value=0, initial=4)
    requests_per_minute = forms.IntegerField(min_value=0, initial=0)
