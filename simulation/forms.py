from __future__ import annotations

from django import forms

from core.call_budget_forms import budget_field, clean_budget
from core.parsers import BoundedJSONField


class _PersonaChoice(forms.ModelMultipleChoiceField):
    def label_from_instance(self, obj):  # type: ignore[no-untyped-def]
        return f"{obj.persona_set.key} v{obj.persona_set.version} · {obj.name} ({obj.key})"


class _TargetChoice(forms.ModelMultipleChoiceField):
    def label_from_instance(self, obj):  # type: ignore[no-untyped-def]
        return f"{obj.code} · {obj.get_kind_display()} · {obj.model}{' · ' + obj.name if obj.name else ''}"


class _TemplateChoice(forms.ModelChoiceField):
    def label_from_instance(self, obj):  # type: ignore[no-untyped-def]
        return f"{obj.name} ({obj.key} v{obj.version})"


class SimulationBatchForm(forms.Form):
    """Everything a batch needs; ``to_spec`` hands it to the service unchanged."""

    name = forms.CharField(required=False, max_length=200)
    protocol = forms.ChoiceField(choices=[("amhart", "AMHART"), ("vera-mh", "VERA-MH")])
    persona_set = forms.ModelChoiceField(queryset=None)  # type: ignore[arg-type]
    personas = _PersonaChoice(
        queryset=None, required=False,  # type: ignore[arg-type]
        help_text="Leave empty to run every persona of the set",
        widget=forms.CheckboxSelectMultiple,
    )
    targets = _TargetChoice(queryset=None, widget=forms.CheckboxSelectMultiple, label="Chatbots")  # type: ignore[arg-type]
    repetitions = forms.IntegerField(min_value=1, max_value=1000, initial=1)
    user_model = forms.CharField(max_length=200, label="User-agent model", help_text="litellm model string, e.g. openai/gpt-4o")
    user_api_base = forms.URLField(
        required=False, label="User-agent API base", assume_scheme="https",
        help_text="Blank: the provider's own endpoint. Its host must be an allowed API host.",
    )
    user_api_key_env = forms.CharField(
        required=False, max_length=100, label="User-agent key variable",
        help_text="Name of the environment variable holding the key, ending in _API_KEY or _API_TOKEN by default "
        "(the key itself is never stored)",
    )
    user_params = BoundedJSONField(
        required=False, initial={"temperature": 1.0}, label="User-agent parameters",
        help_text='Generation parameters as JSON, e.g. {"temperature": 1.0} (temperature, top_p, max_tokens, seed, stop...)', widget=forms.Textarea(attrs={"rows": 2}),
    )
    user_max_concurrent = forms.IntegerField(min_value=0, initial=8, label="User-agent concurrent calls (0 = no cap)")
    user_requests_per_minute = forms.IntegerField(min_value=0, initial=0, label="User-agent requests per minute (0 = no limit)")
    user_timeout_seconds = budget_field("timeout_seconds", who="user-agent")
    user_retry_attempts = budget_field("retry_attempts", who="user-agent")
    user_retry_base_delay = budget_field("retry_base_delay", who="user-agent")
    user_retry_max_delay = budget_field("retry_max_delay", who="user-agent")
    exchanges = forms.IntegerField(required=False, min_value=1, max_value=200, help_text="AMHART: user/chatbot pairs (default 10)")
    turns = forms.IntegerField(required=False, min_value=1, max_value=400, help_text="VERA-MH: messages, the chatbot speaking last (default 20)")
    first_speaker = forms.ChoiceField(choices=[("user", "Persona"), ("chatbot", "Chatbot")], initial="user")
    word_cap = forms.IntegerField(required=False, min_value=1, help_text="Most words per user message")
    end_marker = forms.CharField(required=False, max_length=100, help_text="Text the user-agent may write to end early, e.g. <END OF CONVERSATION>")
    role_slide_check = forms.BooleanField(required=False, initial=True, label="Flag a user-agent that slides into the counsellor's role")
    persona_template = _TemplateChoice(queryset=None, required=False, help_text="Default: the persona set's own prompt (AMHART) or the team's default")  # type: ignore[arg-type]
    reminder_template = _TemplateChoice(queryset=None, required=False, help_text="Default for VERA-MH: the team's reminder")  # type: ignore[arg-type]
    kickoff_template = _TemplateChoice(queryset=None, required=False)  # type: ignore[arg-type]

    def __init__(self, *args, user, **kwargs):  # type: ignore[no-untyped-def]
        from core.visibility import visible
        from corpus.models import Persona, PersonaSet, Target
        from simulation.models import PromptTemplate

        super().__init__(*args, **kwargs)
        # Only the persona sets and chatbots the user may read (core.visibility).
        sets = visible(PersonaSet.objects.all(), user)
        self.fields["persona_set"].queryset = sets.order_by("key", "-version")
        self.fields["personas"].queryset = Persona.objects.filter(persona_set__in=sets).select_related("persona_set").order_by(
            "persona_set__key", "-persona_set__version", "position"
        )
        self.fields["targets"].queryset = visible(Target.objects.all(), user).exclude(kind=Target.Kind.DEMO).order_by("code")
        for name, kind in (
            ("persona_template", PromptTemplate.Kind.PERSONA_SYSTEM),
            ("reminder_template", PromptTemplate.Kind.REMINDER),
            ("kickoff_template", PromptTemplate.Kind.KICKOFF),
        ):
            self.fields[name].queryset = PromptTemplate.objects.filter(kind=kind).order_by("key", "-version")

    def clean(self):  # type: ignore[no-untyped-def]
        cleaned = super().clean()
        clean_budget(self, cleaned, prefix="user_")
        return cleaned

    def clean_user_params(self):  # type: ignore[no-untyped-def]
        value = self.cleaned_data.get("user_params") or {}
        if not isinstance(value, dict):
            raise forms.ValidationError("enter a JSON object")
        return value

    def to_spec(self):  # type: ignore[no-untyped-def]
        from simulation.batch_spec import BatchSpec, UserAgent

        data = self.cleaned_data

        def pk(name: str) -> int | None:
            return data[name].pk if data.get(name) else None

        return BatchSpec(
            name=data.get("name") or "",
            protocol=data["protocol"],
            persona_set_id=data["persona_set"].pk,
            persona_ids=tuple(p.pk for p in data.get("personas") or []),
            target_ids=tuple(t.pk for t in data["targets"]),
            repetitions=data["repetitions"],
            user_agent=UserAgent(
                model=data["user_model"],
                api_base=data.get("user_api_base") or "",
                api_key_env=data.get("user_api_key_env") or "",
                params=data.get("user_params") or {},
                max_concurrent=data["user_max_concurrent"],
                requests_per_minute=data["user_requests_per_minute"],
                timeout_seconds=data["user_timeout_seconds"],
                retry_attempts=data["user_retry_attempts"],
                retry_base_delay=data["user_retry_base_delay"],
                retry_max_delay=data["user_retry_max_delay"],
            ),
            exchanges=data.get("exchanges"),
            turns=data.get("turns"),
            first_speaker=data["first_speaker"],
            word_cap=data.get("word_cap"),
            end_marker=data.get("end_marker") or "",
            role_slide_check=bool(data.get("role_slide_check")),
            persona_template_id=pk("persona_template"),
            reminder_template_id=pk("reminder_template"),
            kickoff_template_id=pk("kickoff_template"),
        )


class PromptTemplateForm(forms.Form):
    kind = forms.ChoiceField(
        choices=[
            ("persona_system", "User-agent system prompt"),
            ("reminder", "Reminder prefixed to each chatbot message"),
            ("kickoff", "Instruction that opens the conversation"),
        ]
    )
    key = forms.SlugField(max_length=80, help_text="Same key as an existing template: stored as its next version")
    name = forms.CharField(max_length=200, required=False)
    description = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}))
    text = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 18, "class": "mono"}),
        help_text="{placeholders}: name, age, card, end_marker, word_cap, any persona field by its key or column header; "
        "{chatbot_message} in a reminder. A line whose placeholder is empty is left out.",
    )


