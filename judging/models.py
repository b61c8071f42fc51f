"""Judges, their prompt templates, judge runs, per-call results, item labels and ensembles.

A judge run is judges x conversations x instances. Every (run, judge, conversation, instance)
is one ``JudgeResult`` row, created up front as pending and filled by one Celery task, so a
task run twice finds its row already done. Item-level output lives in ``JudgeLabel`` rows
(checklist items; question-flow answers and dimension labels), the ensemble vote in
``EnsembleLabel`` rows, and every successful LLM reply in ``LLMCacheEntry``.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models

from core import call_budget


class JudgeMode(models.TextChoices):
    CHECKLIST = "checklist", "Checklist (one call per conversation, JSON schema)"
    FLOW = "flow", "Question flow (one stateless call per question)"


class PromptTemplate(models.Model):
    """A versioned, immutable prompt. Changed text under the same key is a new version."""

    key = models.SlugField(max_length=80)
    version = models.PositiveIntegerField(default=1)
    name = models.CharField(max_length=200)
    mode = models.CharField(max_length=20, choices=JudgeMode.choices)
    description = models.TextField(blank=True)
    system_template = models.TextField()
    user_template = models.TextField()
    retry_template = models.TextField(help_text="Follow-up after an invalid reply; holds {error}")
    content_hash = models.CharField(max_length=64)
    is_builtin = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        ordering = ["key", "-version"]
        constraints = [
            models.UniqueConstraint(fields=["key", "version"], name="prompt_key_version_unique"),
            models.UniqueConstraint(fields=["key", "content_hash"], name="prompt_key_hash_unique"),
            models.CheckConstraint(
                condition=models.Q(mode__in=["checklist", "flow"]), name="prompt_mode_valid"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.key} v{self.version}"

    def save(self, *args: object, **kwargs: object) -> None:
        # Labels cite the prompt that produced them: a stored version never changes.
        if not self._state.adding:
            raise ValueError("prompt templates are immutable; create a new version instead")
        super().save(*args, **kwargs)  # type: ignore[arg-type]


class ReasoningEffort(models.TextChoices):
    NONE = "", "Not sent"
    MINIMAL = "minimal", "Minimal"
    LOW = "low", "Low"
    MEDIUM = "medium", "Medium"
    HIGH = "high", "High"


class Judge(models.Model):
    """An LLM judge: which model, how it is called, with which prompt, for which instrument."""

    name = models.CharField(max_length=120, unique=True)
    mode = models.CharField(max_length=20, choices=JudgeMode.choices)
    instrument = models.ForeignKey(
        "corpus.Instrument", on_delete=models.PROTECT, related_name="judges"
    )
    model = models.CharField(max_length=200, help_text="litellm model string, e.g. openai/gpt-4o")
    provider = models.CharField(
        max_length=60, help_text="Derived from the model string prefix unless given"
    )
    api_base = models.URLField(blank=True)
    # The NAME of the environment variable holding the key; the key is never stored.
    api_key_env = models.CharField(max_length=100, blank=True)
    # None: not sent, the provider's default applies (some models refuse any temperature).
    temperature = models.FloatField(null=True, blank=True, default=None, help_text="Blank: not sent")
    reasoning_effort = models.CharField(
        max_length=10, choices=ReasoningEffort.choices, blank=True, default=""
    )
    params = models.JSONField(default=dict, blank=True, help_text="Other litellm parameters")
    prompt = models.ForeignKey(PromptTemplate, on_delete=models.PROTECT, related_name="judges")
    structured_output = models.BooleanField(
        default=True, help_text="Send a JSON schema as response_format (checklist: always)"
    )
    format_retries = models.PositiveSmallIntegerField(
        default=2, help_text="How often an invalid reply is sent back with the error"
    )
    timeout_seconds = models.PositiveIntegerField(default=120)
    # How often and how patiently a call is tried (core.call_budget: about a minute of outage).
    retry_attempts = models.PositiveSmallIntegerField(default=call_budget.DEFAULT_ATTEMPTS)
    retry_base_delay = models.FloatField(default=call_budget.DEFAULT_BASE_DELAY)
    retry_max_delay = models.FloatField(default=call_budget.DEFAULT_MAX_DELAY)
    max_concurrent = models.PositiveIntegerField(default=8, help_text="0: no cap")
    requests_per_minute = models.PositiveIntegerField(default=0, help_text="0: no cap")
    notes = models.TextField(blank=True)
    # {item key: instruction}: replaces the item's definition in this version's prompt (a checklist
    # item, a flow question), or is added to every question of a flow dimension (judging.guidance).
    item_guidance = models.JSONField(
        default=dict, blank=True, help_text="Edited item instructions of this version: {item key: text}"
    )
    # A judge is never edited (runs cite it): a changed setting is a clone, a new version.
    cloned_from = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="clones"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        ordering = ["name"]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(mode__in=["checklist", "flow"]), name="judge_mode_valid"
            ),
        ]

    def __str__(self) -> str:
        return self.name

    def call_params(self) -> dict:
        """Return the parameters sent with every call (temperature, reasoning effort, extras)."""
        params = dict(self.params or {})
        if self.temperature is not None:
            params["temperature"] = self.temperature
        if self.reasoning_effort:
            params["reasoning_effort"] = self.reasoning_effort
        return params


class RunStatus(models.TextChoices):
    PENDING = "pending", "Pending"
    RUNNING = "running", "Running"
    COMPLETED = "completed", "Completed"
    PARTIAL = "partial", "Completed with failures"
    FAILED = "failed", "Failed"
    CANCELLED = "cancelled", "Cancelled"


FINISHED_RUN_STATUSES = (RunStatus.COMPLETED, RunStatus.PARTIAL, RunStatus.FAILED, RunStatus.CANCELLED)


class JudgeRun(models.Model):
    """Judges x conversations x instances, with progress and cost accounting."""

    name = models.CharField(max_length=200, blank=True)
    instrument = models.ForeignKey(
        "corpus.Instrument", on_delete=models.PROTECT, related_name="judge_runs"
    )
    mode = models.CharField(max_length=20, choices=JudgeMode.choices)
    judges = models.ManyToManyField(Judge, related_name="runs")
    # How the conversations were picked (batch ids, persona sets, study, codes) and how many.
    selection = models.JSONField(default=dict, blank=True)
    # Each judge's configuration when the run was created: the judge row may change later.
    config = models.JSONField(default=dict, blank=True)
    instances = models.PositiveSmallIntegerField(default=1)
    independent_instances = models.BooleanField(
        default=False, help_text="Give every instance its own cache key (fresh calls)"
    )
    use_cache = models.BooleanField(default=True)
    warnings = models.JSONField(default=list, blank=True)
    ensemble_rule = models.TextField(blank=True)
    status = models.CharField(max_length=20, choices=RunStatus.choices, default=RunStatus.PENDING)
    error = models.TextField(blank=True)
    n_total = models.PositiveIntegerField(default=0)
    n_done = models.PositiveIntegerField(default=0)
    n_failed = models.PositiveIntegerField(default=0)
    # Calls: every HTTP request made to a judge (failed attempts included) and every reply the
    # cache answered; of them, the failed attempts and the cached replies.
    n_calls = models.PositiveIntegerField(default=0)
    n_failed_calls = models.PositiveIntegerField(default=0, help_text="Of the calls, the attempts that failed")
    n_cached = models.PositiveIntegerField(default=0, help_text="Calls answered from the cache")
    prompt_tokens = models.PositiveBigIntegerField(default=0)
    completion_tokens = models.PositiveBigIntegerField(default=0)
    cost_usd = models.DecimalField(max_digits=12, decimal_places=6, default=0)
    cost_unknown_calls = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    # Least privilege (issue 30): visible to its creator, the members of the studies that use it
    # and administrators; ``shared`` (set by its creator or an administrator) adds every
    # coordinator and researcher (core.visibility).
    shared = models.BooleanField(default=False, help_text="Every coordinator and researcher may read it (the shared library)")

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return self.name or f"judge run {self.pk}"

    @property
    def progress(self) -> float:
        """Return the finished share of results, 0..1."""
        return (self.n_done + self.n_failed) / self.n_total if self.n_total else 0.0

    @property
    def is_finished(self) -> bool:
        return self.status in FINISHED_RUN_STATUSES

    @property
    def n_answered_calls(self) -> int:
        """Return the calls a provider answered with an accepted reply (not cached, not failed): the ones with a price."""
        return max(self.n_calls - self.n_failed_calls - self.n_cached, 0)


class ResultStatus(models.TextChoices):
    PENDING = "pending", "Pending"
    RUNNING = "running", "Running"
    DONE = "done", "Done"
    FAILED = "failed", "Failed"
    SKIPPED = "skipped", "Skipped (run cancelled)"


class JudgeResult(models.Model):
    """One judge's reading of one conversation (instance ``instance``) in one run."""

    run = models.ForeignKey(JudgeRun, on_delete=models.CASCADE, related_name="results")
    judge = models.ForeignKey(Judge, on_delete=models.PROTECT, related_name="results")
    conversation = models.ForeignKey(
        "corpus.Conversation", on_delete=models.PROTECT, related_name="judge_results"
    )
    instance = models.PositiveSmallIntegerField(default=0)
    status = models.CharField(max_length=20, choices=ResultStatus.choices, default=ResultStatus.PENDING)
    # "invalid_output", "unparseable_answer" or an LLMError kind; blank when done.
    error_kind = models.CharField(max_length=40, blank=True)
    error = models.TextField(blank=True)
    # Question flows: [{"question_id", "answer", "explanation"}] in walk order, and how it ended.
    path = models.JSONField(default=list, blank=True)
    ended_by = models.CharField(max_length=20, blank=True)
    # One record per LLM call: request hash, tokens, cost, cached, attempts, format retry.
    calls = models.JSONField(default=list, blank=True)
    n_calls = models.PositiveIntegerField(default=0)
    n_failed_calls = models.PositiveIntegerField(default=0)
    n_cached = models.PositiveIntegerField(default=0)
    prompt_tokens = models.PositiveIntegerField(default=0)
    completion_tokens = models.PositiveIntegerField(default=0)
    cost_usd = models.DecimalField(max_digits=12, decimal_places=6, default=0)
    cost_unknown_calls = models.PositiveIntegerField(default=0)
    attempts = models.PositiveIntegerField(default=0, help_text="Times a task worked on this row")
    # Times it was sent again by itself after its judge's provider stopped answering (core.outages).
    auto_retries = models.PositiveSmallIntegerField(default=0)
    # The claim of a running result: who holds it and until when (renewed while it works).
    # A result whose lease ran out lost its worker: it is "stalled" and another may take it.
    lease_owner = models.CharField(max_length=200, blank=True)
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    # When its task was last sent to the broker: pending past the recovery threshold, or held
    # by a worker that is gone, the sweeper (core.recovery) sends it again.
    queued_at = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["run", "conversation", "judge", "instance"]
        constraints = [
            models.UniqueConstraint(
                fields=["run", "judge", "conversation", "instance"], name="judge_result_unique"
            )
        ]
        indexes = [models.Index(fields=["run", "status"]), models.Index(fields=["run", "conversation"])]

    def __str__(self) -> str:
        return f"run {self.run_id}: {self.judge_id} on {self.conversation_id} #{self.instance}"


class LabelKind(models.TextChoices):
    ITEM = "item", "Checklist item"
    QUESTION = "question", "Flow question answer"
    DIMENSION = "dimension", "Flow dimension label"


class LabelStatus(models.TextChoices):
    OK = "ok", "Labelled"
    MISSING = "missing", "Missing"


class JudgeLabel(models.Model):
    """One label of one result. A missing label has an empty ``label`` and says why."""

    result = models.ForeignKey(JudgeResult, on_delete=models.CASCADE, related_name="labels")
    kind = models.CharField(max_length=20, choices=LabelKind.choices)
    item_key = models.CharField(max_length=200)
    position = models.PositiveIntegerField(default=0)
    label = models.CharField(max_length=200, blank=True)
    status = models.CharField(max_length=10, choices=LabelStatus.choices, default=LabelStatus.OK)
    rationale = models.TextField(blank=True)
    # [{"turn": 3, "quote": "...", "verified": true}] with 1-based turn numbers.
    evidence = models.JSONField(default=list, blank=True)
    missing_reason = models.TextField(blank=True)

    class Meta:
        ordering = ["result", "kind", "position"]
        constraints = [
            models.UniqueConstraint(fields=["result", "kind", "item_key"], name="judge_label_unique"),
            models.CheckConstraint(
                condition=models.Q(status="ok", label__gt="") | models.Q(status="missing", label=""),
                name="judge_label_missing_is_blank",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.item_key}={self.label or 'MISSING'}"


class EnsembleLabel(models.Model):
    """The judges' majority label of one item of one conversation, with how it was reached."""

    run = models.ForeignKey(JudgeRun, on_delete=models.CASCADE, related_name="ensemble")
    conversation = models.ForeignKey(
        "corpus.Conversation", on_delete=models.PROTECT, related_name="+"
    )
    item_key = models.CharField(max_length=200)
    position = models.PositiveIntegerField(default=0)
    label = models.CharField(max_length=200, blank=True, help_text="Blank: no majority")
    # stats provenance: unanimous, majority, tie, no_majority, no_ratings; single_judge (a run of one judge).
    provenance = models.CharField(max_length=20)
    votes = models.JSONField(default=dict, blank=True)  # {judge name: label or null}
    rule = models.TextField()

    class Meta:
        ordering = ["run", "conversation", "position"]
        constraints = [
            models.UniqueConstraint(
                fields=["run", "conversation", "item_key"], name="ensemble_label_unique"
            )
        ]
        indexes = [models.Index(fields=["run", "provenance"])]

    def __str__(self) -> str:
        return f"{self.item_key}={self.label or self.provenance}"


class LLMCacheEntry(models.Model):
    """A successful LLM reply, keyed by the hash of model, parameters and the exact prompt."""

    key = models.CharField(max_length=64, primary_key=True)
    request_hash = models.CharField(max_length=64, db_index=True)
    model = models.CharField(max_length=200)
    result = models.JSONField()  # LLMResult fields, content included; never a key
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name_plural = "LLM cache entries"

    def __str__(self) -> str:
        return f"{self.model} {self.key[:12]}"
