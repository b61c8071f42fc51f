"""Simulation batches, their runs (one per planned conversation) and the user-agent prompt templates."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from core import call_budget
from corpus.models import Conversation, Persona, PersonaSet, Target


class PromptTemplate(models.Model):
    """A versioned, immutable prompt text with ``{placeholder}`` fields (see ``prompts``).

    A changed text is a new version: conversations keep pointing at the exact text they used.
    """

    class Kind(models.TextChoices):
        PERSONA_SYSTEM = "persona_system", "User-agent system prompt"
        REMINDER = "reminder", "Reminder prefixed to each chatbot message"
        KICKOFF = "kickoff", "Instruction that opens the conversation for the user-agent"

    kind = models.CharField(max_length=30, choices=Kind.choices)
    key = models.SlugField(max_length=80)
    version = models.PositiveIntegerField(default=1)
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    text = models.TextField()
    content_hash = models.CharField(max_length=64, help_text="sha256 of kind and text")
    placeholders = models.JSONField(default=list, blank=True)
    is_builtin = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        ordering = ["kind", "key", "-version"]
        constraints = [
            models.UniqueConstraint(fields=["key", "version"], name="prompttemplate_key_version_unique")
        ]

    def __str__(self) -> str:
        return f"{self.key} v{self.version}"

    def save(self, *args: object, **kwargs: object) -> None:
        if not self._state.adding:
            raise ValueError("prompt templates are immutable; store a new version instead")
        super().save(*args, **kwargs)  # type: ignore[arg-type]

    def reference(self) -> dict[str, object]:
        """Return what a conversation records about the template it used."""
        return {"id": self.pk, "key": self.key, "version": self.version, "content_hash": self.content_hash}


class SimulationBatch(models.Model):
    """Personas x targets x repetitions, run against one user-agent model under one protocol."""

    class Protocol(models.TextChoices):
        AMHART = "amhart", "AMHART (fixed opening card, exchange pairs)"
        VERA_MH = "vera-mh", "VERA-MH (turns in messages, reminder, chatbot last)"

    class Speaker(models.TextChoices):
        USER = "user", "Persona (user-agent)"
        CHATBOT = "chatbot", "Chatbot"

    class Status(models.TextChoices):
        RUNNING = "running", "Running"
        CANCELLED = "cancelled", "Cancelled"
        FINISHED = "finished", "Finished"

    code = models.CharField(max_length=20, unique=True)
    name = models.CharField(max_length=200, blank=True)
    protocol = models.CharField(max_length=20, choices=Protocol.choices)
    persona_set = models.ForeignKey(PersonaSet, on_delete=models.PROTECT, related_name="batches")
    personas = models.ManyToManyField(Persona, related_name="batches")
    targets = models.ManyToManyField(Target, related_name="batches")
    repetitions = models.PositiveIntegerField(default=1)
    user_model = models.CharField(max_length=200, help_text="litellm model string of the user-agent")
    user_api_base = models.URLField(blank=True)
    # Name of the environment variable holding the user-agent's key; never the key itself.
    user_api_key_env = models.CharField(max_length=100, blank=True)
    user_params = models.JSONField(default=dict, blank=True)
    user_max_concurrent = models.PositiveIntegerField(default=8, help_text="0 = no cap")
    user_requests_per_minute = models.PositiveIntegerField(default=0, help_text="0 = no limit")
    # The user-agent's timeout and retry budget per call (core.call_budget).
    user_timeout_seconds = models.FloatField(default=60.0)
    user_retry_attempts = models.PositiveSmallIntegerField(default=call_budget.DEFAULT_ATTEMPTS)
    user_retry_base_delay = models.FloatField(default=call_budget.DEFAULT_BASE_DELAY)
    user_retry_max_delay = models.FloatField(default=call_budget.DEFAULT_MAX_DELAY)
    exchanges = models.PositiveIntegerField(null=True, blank=True, help_text="AMHART: user/chatbot pairs")
    turns = models.PositiveIntegerField(help_text="Messages per conversation when none ends early")
    first_speaker = models.CharField(max_length=10, choices=Speaker.choices, default=Speaker.USER)
    word_cap = models.PositiveIntegerField(null=True, blank=True, help_text="Most words per user message")
    end_marker = models.CharField(max_length=100, blank=True)
    role_slide_check = models.BooleanField(default=True)
    persona_template = models.ForeignKey(
        PromptTemplate, on_delete=models.PROTECT, related_name="+"
    )
    reminder_template = models.ForeignKey(
        PromptTemplate, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    kickoff_template = models.ForeignKey(
        PromptTemplate, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.RUNNING)
    config = models.JSONField(default=dict, blank=True, help_text="Everything the batch was run with")
    created_at = models.DateTimeField(auto_now_add=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    cancelled_at = models.DateTimeField(null=True, blank=True)
    # Least privilege (issue 30): visible to its creator, the members of the studies that use it
    # and administrators; ``shared`` (set by its creator or an administrator) adds every
    # coordinator and researcher (core.visibility).
    shared = models.BooleanField(default=False, help_text="Every coordinator and researcher may read it (the shared library)")

    class Meta:
        ordering = ["-id"]
        verbose_name_plural = "simulation batches"

    def __str__(self) -> str:
        return self.code


class SimulationRun(models.Model):
    """One planned conversation of a batch (cell x repetition) and the state of its task.

    ``lease_owner`` / ``lease_expires_at`` are the claim: one executor at a time writes the
    conversation, every write checks it still holds the lease, and an expired lease may be
    taken over (the conversation resumes after its last saved message).
    """

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"
        CANCELLED = "cancelled", "Cancelled"

    batch = models.ForeignKey(SimulationBatch, on_delete=models.CASCADE, related_name="runs")
    persona = models.ForeignKey(Persona, on_delete=models.PROTECT, related_name="+")
    target = models.ForeignKey(Target, on_delete=models.PROTECT, related_name="+")
    repetition = models.PositiveIntegerField(help_text="1-based")
    conversation = models.OneToOneField(
        Conversation, null=True, blank=True, on_delete=models.SET_NULL, related_name="simulation_run"
    )
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.QUEUED)
    attempts = models.PositiveIntegerField(default=0, help_text="Times a worker claimed the run")
    lease_owner = models.CharField(max_length=200, blank=True)
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    error = models.TextField(blank=True)
    error_kind = models.CharField(max_length=30, blank=True)
    messages_done = models.PositiveIntegerField(default=0)
    # Every HTTP request made to a model (user-agent and chatbot), failed attempts included.
    calls = models.PositiveIntegerField(default=0)
    failed_calls = models.PositiveIntegerField(
        default=0, help_text="Of the calls, the attempts that failed (an error or an empty reply), retried or not"
    )
    prompt_tokens = models.PositiveIntegerField(default=0)
    completion_tokens = models.PositiveIntegerField(default=0)
    cost_usd = models.FloatField(default=0.0)
    # Calls litellm could not price (unknown model): the cost above leaves them out.
    cost_unknown_calls = models.PositiveIntegerField(default=0)
    ended_early = models.BooleanField(default=False)
    # Times it was sent again by itself after its provider stopped answering (core.outages).
    auto_retries = models.PositiveSmallIntegerField(default=0)
    queued_at = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    ACTIVE = (Status.QUEUED, Status.RUNNING)
    TERMINAL = (Status.DONE, Status.FAILED, Status.CANCELLED)

    class Meta:
        ordering = ["batch", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["batch", "persona", "target", "repetition"], name="simulationrun_cell_unique"
            )
        ]
        indexes = [models.Index(fields=["batch", "status"])]

    def __str__(self) -> str:
        return f"{self.batch.code}/{self.pk}"
