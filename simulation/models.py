"""Personas, targets (chatbots under test) and conversations with their messages.

Conversations are owned here; other apps read them through ``simulation.selectors`` and write
them only through ``simulation.services``.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models


class PersonaSet(models.Model):
    """A versioned set of persona cards (e.g. the eight AMHART adolescents, VERA-MH v1.1)."""

    class Format(models.TextChoices):
        AMHART = "amhart", "AMHART card"
        VERA_MH = "vera-mh", "VERA-MH persona"
        CUSTOM = "custom", "Custom"

    key = models.SlugField(max_length=80)
    version = models.PositiveIntegerField(default=1)
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    format = models.CharField(max_length=20, choices=Format.choices, default=Format.CUSTOM)
    system_prompt = models.TextField(blank=True, help_text="Persona-agent instructions template")
    content_hash = models.CharField(max_length=64)
    is_builtin = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        ordering = ["key", "-version"]
        constraints = [
            models.UniqueConstraint(fields=["key", "version"], name="personaset_key_version_unique")
        ]

    def __str__(self) -> str:
        return f"{self.name} (v{self.version})"


class Persona(models.Model):
    persona_set = models.ForeignKey(PersonaSet, on_delete=models.CASCADE, related_name="personas")
    key = models.CharField(max_length=120)
    name = models.CharField(max_length=120)
    # Design labels (intended risk, disclosure, severity, concern, sex...): never shown to raters.
    design = models.JSONField(default=dict, blank=True)
    # Everything else on the card (age, symptoms, background, seed phrase...).
    profile = models.JSONField(default=dict, blank=True)
    opening_message = models.TextField(blank=True)
    position = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["persona_set", "position", "key"]
        constraints = [
            models.UniqueConstraint(fields=["persona_set", "key"], name="persona_key_unique")
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.key})"


class Target(models.Model):
    """A chatbot under test. ``code`` is the pseudonym shown wherever blinding applies."""

    class Kind(models.TextChoices):
        LITELLM = "litellm", "Model through litellm"
        HTTP = "http", "Custom HTTP endpoint"
        DEMO = "demo", "Demo (no live model)"

    code = models.CharField(max_length=40, unique=True)
    name = models.CharField(max_length=200, blank=True)
    kind = models.CharField(max_length=20, choices=Kind.choices, default=Kind.LITELLM)
    model = models.CharField(max_length=200, help_text="litellm model string, e.g. openai/gpt-4o")
    api_base = models.URLField(blank=True)
    # Name of the environment variable holding the key; the key itself is never stored.
    api_key_env = models.CharField(max_length=100, blank=True)
    params = models.JSONField(default=dict, blank=True)
    system_prompt = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["code"]

    def __str__(self) -> str:
        return self.code


class Conversation(models.Model):
    class Source(models.TextChoices):
        SIMULATED = "simulated", "Simulated"
        IMPORTED = "imported", "Imported"

    code = models.CharField(max_length=20, unique=True, help_text="Pseudonymous, shown to raters")
    external_id = models.CharField(max_length=200, blank=True)
    persona = models.ForeignKey(
        Persona, null=True, blank=True, on_delete=models.PROTECT, related_name="conversations"
    )
    target = models.ForeignKey(
        Target, null=True, blank=True, on_delete=models.PROTECT, related_name="conversations"
    )
    source = models.CharField(max_length=20, choices=Source.choices)
    run_index = models.PositiveIntegerField(null=True, blank=True)
    metadata = models.JSONField(default=dict, blank=True)
    integrity_ok = models.BooleanField(null=True, help_text="None until checked")
    integrity_flags = models.JSONField(default=list, blank=True)
    # Content warning for raters: suicide or self-harm content (set by importer or coordinator).
    sensitive = models.BooleanField(default=False)
    is_demo = models.BooleanField(default=False)
    # sha256 of persona key, target model and the ordered (role, content) pairs.
    content_hash = models.CharField(max_length=64, unique=True)
    message_count = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        ordering = ["id"]
        indexes = [models.Index(fields=["persona", "target"])]

    def __str__(self) -> str:
        return self.code


class Message(models.Model):
    class Role(models.TextChoices):
        USER = "user", "User (persona)"
        ASSISTANT = "assistant", "Chatbot"
        SYSTEM = "system", "System"

    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="messages")
    turn_index = models.PositiveIntegerField(help_text="0-based position in the conversation")
    role = models.CharField(max_length=20, choices=Role.choices)
    content = models.TextField()
    # Call record for simulated messages: model, params, latency_ms, tokens, cost.
    meta = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["conversation", "turn_index"]
        constraints = [
            models.UniqueConstraint(
                fields=["conversation", "turn_index"], name="message_turn_unique"
            ),
            models.CheckConstraint(
                condition=models.Q(role__in=["user", "assistant", "system"]),
                name="message_role_valid",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.conversation.code}#{self.turn_index} {self.role}"
