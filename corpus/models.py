"""The corpus: personas, chatbots under test (targets), conversations and their messages, and
the instruments (checklists, question flows, rating sections) they are rated and judged with.

Every other app reads these through the corpus selectors and writes them only through the corpus
services. The tables keep the names of the apps that first owned them (``simulation_*``,
``annotation_*``): the models moved here without a data migration.

An instrument version is immutable once created: importing changed content under the same key
creates the next version; the identical content returns the existing version.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models

from core import call_budget


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
    # Least privilege (issue 30): visible to its creator, the members of the studies that use it
    # and administrators; ``shared`` (set by its creator or an administrator) adds every
    # coordinator and researcher (core.visibility).
    shared = models.BooleanField(default=False, help_text="Every coordinator and researcher may read it (the shared library)")

    class Meta:
        db_table = "simulation_personaset"  # kept from the app that first owned it: no data move
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
        db_table = "simulation_persona"  # kept from the app that first owned it: no data move
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
    # HTTP targets: api_base is the endpoint URL; header values name environment variables as
    # ${NAME}; request_template is JSON with {{messages}}-style fields; response_path picks the
    # reply out of the JSON answer ("choices.0.message.content", "reply").
    http_headers = models.JSONField(default=dict, blank=True)
    request_template = models.JSONField(default=dict, blank=True)
    response_path = models.CharField(max_length=200, blank=True)
    # Limits shared by every worker (Redis when REDIS_URL is set): 0 means none.
    max_concurrent = models.PositiveIntegerField(default=4)
    requests_per_minute = models.PositiveIntegerField(default=0)
    # Each call: how long one attempt may wait, how often and how patiently it is tried
    # (core.call_budget: the defaults ride out about a minute of provider outage).
    timeout_seconds = models.FloatField(default=60.0)
    retry_attempts = models.PositiveSmallIntegerField(default=call_budget.DEFAULT_ATTEMPTS)
    retry_base_delay = models.FloatField(default=call_budget.DEFAULT_BASE_DELAY)
    retry_max_delay = models.FloatField(default=call_budget.DEFAULT_MAX_DELAY)
    created_at = models.DateTimeField(auto_now_add=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    # Least privilege (issue 30): visible to its creator, the members of the studies that use it
    # and administrators; ``shared`` (set by its creator or an administrator) adds every
    # coordinator and researcher (core.visibility).
    shared = models.BooleanField(default=False, help_text="Every coordinator and researcher may read it (the shared library)")

    class Meta:
        db_table = "simulation_target"  # kept from the app that first owned it: no data move
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
    # Content warning for raters: the transcript screen matched, or a person marked it
    # (corpus.conversations.content_screen). Never derived from the persona's design.
    sensitive = models.BooleanField(default=False)
    content_warning_marked = models.BooleanField(default=False, help_text="A coordinator (or the import file) marked it as hard content")
    content_warning_marked_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    content_warning_marked_at = models.DateTimeField(null=True, blank=True)
    content_warning_reason = models.CharField(max_length=300, blank=True)
    is_demo = models.BooleanField(default=False)
    # sha256 of persona key, target model and the ordered (role, content) pairs.
    content_hash = models.CharField(max_length=64, unique=True)
    message_count = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    # Least privilege (issue 30): visible to its creator, the members of the studies that use it
    # and administrators; ``shared`` (set by its creator or an administrator) adds every
    # coordinator and researcher (core.visibility).
    shared = models.BooleanField(default=False, help_text="Every coordinator and researcher may read it (the shared library)")

    class Meta:
        db_table = "simulation_conversation"  # kept from the app that first owned it: no data move
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
        db_table = "simulation_message"  # kept from the app that first owned it: no data move
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


class InstrumentKind(models.TextChoices):
    CHECKLIST = "checklist", "Item checklist"
    FLOW = "flow", "Question flow"
    SECTION = "section", "Rating section"


class Scale(models.TextChoices):
    YES_NO_NA = "yes_no_na", "Yes / No / N/A"
    YES_NO = "yes_no", "Yes / No"
    ORDINAL_1_5 = "ordinal_1_5", "Ordinal 1-5"
    CATEGORIES = "categories", "Named categories"
    BOOLEAN = "boolean", "Yes/No flag"
    TEXT = "text", "Free text"
    FLOW_QUESTION = "flow_question", "Question-flow question"


class Instrument(models.Model):
    key = models.SlugField(max_length=80)
    version = models.PositiveIntegerField(default=1)
    name = models.CharField(max_length=200)
    kind = models.CharField(max_length=20, choices=InstrumentKind.choices)
    description = models.TextField(blank=True)
    source = models.TextField(blank=True)
    # For question flows: the full flow (corpus.instruments.flow.Flow.to_dict()) so a walk needs no joins.
    flow = models.JSONField(null=True, blank=True)
    # Answers that mean "not applicable" for every item without its own declaration; for a
    # question flow, the dimension labels that do (VERA-MH: ["Not Relevant"]). Reports exclude
    # them or keep them as a category, as the reader chooses.
    na_labels = models.JSONField(default=list, blank=True)
    content_hash = models.CharField(max_length=64)
    is_builtin = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        db_table = "annotation_instrument"  # kept from the app that first owned it: no data move
        ordering = ["key", "-version"]
        constraints = [
            models.UniqueConstraint(
                fields=["key", "version"], name="instrument_key_version_unique"
            ),
            models.CheckConstraint(
                condition=models.Q(kind__in=["checklist", "flow", "section"]),
                name="instrument_kind_valid",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name} (v{self.version})"


class Item(models.Model):
    instrument = models.ForeignKey(Instrument, on_delete=models.CASCADE, related_name="items")
    key = models.CharField(max_length=80)
    position = models.PositiveIntegerField()
    number = models.CharField(max_length=20, blank=True)
    domain = models.CharField(max_length=200, blank=True, help_text="Domain or dimension")
    text = models.TextField()
    scale = models.CharField(max_length=20, choices=Scale.choices)
    categories = models.JSONField(default=list, blank=True)
    scale_labels = models.JSONField(default=dict, blank=True)
    na_allowed = models.BooleanField(default=False)
    # This item's answers that mean "not applicable" (empty: see not_applicable_labels()).
    na_labels = models.JSONField(default=list, blank=True)
    required = models.BooleanField(default=True)
    applicability = models.TextField(blank=True)
    # counts, counts_rationale, does_not_count, does_not_count_rationale, guidance, source
    help = models.JSONField(default=dict, blank=True)
    # Question flows only.
    severity = models.CharField(max_length=10, blank=True)
    risk_type = models.CharField(max_length=200, blank=True)
    examples = models.TextField(blank=True)
    options = models.JSONField(default=list, blank=True)  # [{"label": "Yes", "goto": "5"}]

    class Meta:
        db_table = "annotation_item"  # kept from the app that first owned it: no data move
        ordering = ["instrument", "position"]
        constraints = [
            models.UniqueConstraint(fields=["instrument", "key"], name="item_key_unique"),
            models.UniqueConstraint(fields=["instrument", "position"], name="item_position_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.instrument.key} {self.key}"

    def allowed_labels(self) -> list[str]:
        """Return the labels a rating may take for this item (empty for free text)."""
        if self.scale == Scale.YES_NO_NA:
            return ["yes", "no", "N/A"] if self.na_allowed else ["yes", "no"]
        if self.scale in (Scale.YES_NO, Scale.BOOLEAN):
            return ["yes", "no"]
        if self.scale == Scale.ORDINAL_1_5:
            return ["1", "2", "3", "4", "5"]
        if self.scale == Scale.CATEGORIES:
            return [str(c) for c in self.categories]
        if self.scale == Scale.FLOW_QUESTION:
            # A question without declared options is the flow's implicit Yes/No question.
            return [str(o["label"]) for o in self.options] or ["Yes", "No"]
        return []

    def not_applicable_labels(self) -> list[str]:
        """Return the answers of this item that mean "not applicable", in its own spelling.

        The item's declaration wins, then the instrument's (only the labels this item has);
        undeclared, a yes/no/N/A item that allows N/A has "N/A" and a category item the
        categories spelled as N/A ("N/A", "n/a", "not applicable", ...). Other items have none.
        """
        from stats.labels import DEFAULT_NA_LABELS, fold_label

        allowed = self.allowed_labels()
        if self.na_labels:
            return [str(x) for x in self.na_labels]
        folded = {fold_label(a): a for a in allowed}
        declared = [folded[fold_label(str(x))] for x in (self.instrument.na_labels or []) if fold_label(str(x)) in folded]
        if declared:
            return declared
        defaults = {fold_label(x) for x in DEFAULT_NA_LABELS}
        return [a for a in allowed if fold_label(a) in defaults]
