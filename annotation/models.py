"""Studies: conversations, members, assignments, ratings with their history, events, consensus."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class TiePolicy(models.TextChoices):
    SENIOR = "senior", "The designated senior rater's label decides (AMHART)"
    ADJUDICATION = "adjudication", "Ties go to the adjudication queue"


class EvidenceMode(models.TextChoices):
    OFF = "off", "Off: raters do not cite turns"
    PER_ITEM = "per_item", "Per item: raters cite the turns behind each answer"
    WHOLE_FORM = "whole_form", "Whole form: raters cite the turns behind the rating as a whole"


class Study(models.Model):
    name = models.CharField(max_length=200)
    # Raters never see ``name`` (it often names the chatbots under test): they see this title.
    rater_title = models.CharField(
        max_length=200, blank=True, help_text="Shown to raters instead of the internal name"
    )
    description = models.TextField(blank=True)
    raters_per_conversation = models.PositiveSmallIntegerField(default=2)
    # e.g. {"clinician": 2, "expert": 1}: how many raters of each label per conversation.
    composition = models.JSONField(default=dict, blank=True)
    assignment_seed = models.BigIntegerField(null=True, blank=True)
    sample_seed = models.BigIntegerField(null=True, blank=True)
    selection = models.JSONField(
        default=dict, blank=True, help_text="How the conversations were picked"
    )
    tie_policy = models.CharField(
        max_length=20, choices=TiePolicy.choices, default=TiePolicy.ADJUDICATION
    )
    reliability_threshold = models.FloatField(
        default=0.5, help_text="Items below this kappa are flagged"
    )
    # The alternative annotator test's cost-benefit margin epsilon (Calderon, Reichart & Dror,
    # ACL 2025): 0.2 for expert raters such as clinicians (the default), 0.15 for skilled
    # raters, 0.1 for crowd workers; smaller when the raters agree poorly with each other.
    alt_test_epsilon = models.FloatField(
        default=0.2,
        help_text="Alt-test margin epsilon: 0.2 expert raters, 0.15 skilled raters, 0.1 crowd workers",
    )
    # Below this many ratings of a conversation's item there is no consensus ("too few
    # ratings"): one rating agrees with nobody, so it can never be "unanimous".
    min_ratings_for_consensus = models.PositiveSmallIntegerField(
        default=2, help_text="Ratings an item needs before it has a consensus"
    )
    calibration_required = models.BooleanField(default=False)
    # Gold conversations (known answers) mixed into raters' queues: this share of each rater's
    # queue (0: none), and the accuracy below which a rater's recent gold ratings raise an alert.
    gold_rate = models.FloatField(default=0.0, help_text="Share of each rater's queue that is gold (0 to 0.5)")
    gold_alert_below = models.FloatField(default=0.8, help_text="Alert when a rater's recent gold accuracy is below this")
    # When the ratings are due (optional): raters see it in their queue and reminders; the
    # coordinators' dashboard marks the study at risk when the observed pace finishes after it.
    due_date = models.DateField(null=True, blank=True)
    blinding_lifted = models.BooleanField(
        default=False, help_text="Raters may see other answers once true"
    )
    instrument = models.ForeignKey("corpus.Instrument", on_delete=models.PROTECT, related_name="studies")
    section = models.ForeignKey(
        "corpus.Instrument",
        on_delete=models.PROTECT,
        related_name="section_studies",
        null=True,
        blank=True,
        help_text="The study rating section (realism, risk, disclosure, broke-role, comment)",
    )
    conversations = models.ManyToManyField(
        "corpus.Conversation", through="StudyConversation", related_name="studies"
    )
    is_demo = models.BooleanField(default=False)
    # Rater load: after this many conversations in one sitting the rating page suggests a break
    # (0: never). A pause of ``sitting_gap_minutes`` between two submissions starts a new sitting.
    sitting_limit = models.PositiveSmallIntegerField(
        default=10, help_text="Conversations per sitting before the rating page suggests a break (0: never)"
    )
    sitting_gap_minutes = models.PositiveSmallIntegerField(
        default=30, help_text="A pause this long between two submissions starts a new sitting"
    )
    # Shown on the content warning before hard conversations: where a rater can find support.
    rater_support = models.TextField(
        blank=True, help_text="Where raters can find support, shown before hard content (empty: the default text)"
    )
    # Adjudication is blind to the chatbot, its model and the persona design unless the study
    # says otherwise; a change is recorded in the audit trail.
    adjudication_unblinded = models.BooleanField(
        default=False, help_text="Adjudicators see the chatbot, its model and the persona design"
    )
    # The coordinator's day (issue 19): reminder emails to raters with work left, every this many
    # days (0: only when the coordinator presses "Send reminders"). Raters may opt out.
    reminder_every_days = models.PositiveSmallIntegerField(
        default=0, help_text="Email raters with work left who were neither active nor reminded for this many days (0: never)"
    )
    # Evidence from clinicians (issue 27): raters mark the transcript turns that support an answer
    # (per item) or the rating as a whole; stored in Rating.answers (annotation.rating.selectors
    # .rating_evidence_by_item documents the format). Optional unless ``evidence_required``.
    evidence_mode = models.CharField(
        max_length=20, choices=EvidenceMode.choices, default=EvidenceMode.OFF,
        help_text="Whether raters cite the transcript turns that support their answers",
    )
    evidence_required = models.BooleanField(
        default=False, help_text="A rating cannot be submitted until its answers (or the form) cite a turn"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        ordering = ["-created_at"]
        verbose_name_plural = "studies"
        constraints = [
            models.CheckConstraint(condition=models.Q(sitting_gap_minutes__gte=1), name="study_sitting_gap_positive"),
            models.CheckConstraint(
                condition=models.Q(alt_test_epsilon__gte=0) & models.Q(alt_test_epsilon__lte=0.5),
                name="study_alt_test_epsilon_range",
            ),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def rater_support_text(self) -> str:
        """Return the study's own support text, or the default one."""
        return self.rater_support.strip() or DEFAULT_RATER_SUPPORT


DEFAULT_RATER_SUPPORT = (
    "If a conversation stays with you, stop and take a break: your answers are saved. Talk to your "
    "study coordinator or your clinical supervisor; many employers also offer a confidential staff "
    "support line. If you are in crisis yourself, call your local emergency number or a crisis line "
    "(in the US, call or text 988; in the UK and Ireland, Samaritans on 116 123)."
)


class StudyConversation(models.Model):
    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="study_conversations")
    conversation = models.ForeignKey(
        "corpus.Conversation", on_delete=models.PROTECT, related_name="study_links"
    )
    is_calibration = models.BooleanField(default=False)
    # Reference answers for calibration feedback: {item_key: {"label": ..., "explanation": ...}}
    calibration_reference = models.JSONField(default=dict, blank=True)
    # A gold conversation: its known answers {item_key: label} (from calibration or the final
    # consensus), copied when a coordinator marked it; mixed into raters' queues, never scored.
    is_gold = models.BooleanField(default=False)
    gold_answers = models.JSONField(default=dict, blank=True)
    gold_source = models.CharField(max_length=20, blank=True)  # "calibration" or "consensus"
    # Studies built with a sampling plan: the chance this conversation had of being picked
    # (the judge-assisted estimators weight it by 1/π) and its stratum. None: no plan.
    inclusion_prob = models.FloatField(null=True, blank=True)
    stratum = models.CharField(max_length=300, blank=True)
    added_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["study", "conversation"], name="study_conversation_unique"
            ),
            models.CheckConstraint(
                condition=models.Q(inclusion_prob__isnull=True)
                | models.Q(inclusion_prob__gt=0, inclusion_prob__lte=1),
                name="study_conversation_inclusion_prob_range",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.study_id}:{self.conversation_id}"


class MemberRole(models.TextChoices):
    RATER = "rater", "Rater"
    COORDINATOR = "coordinator", "Coordinator"
    RESEARCHER = "researcher", "Researcher"


class StudyMembership(models.Model):
    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="study_memberships"
    )
    role = models.CharField(max_length=20, choices=MemberRole.choices)
    # Free label for raters: "clinician", "expert", "non-clinician" (composition rules use it).
    rater_label = models.CharField(max_length=60, blank=True)
    is_senior = models.BooleanField(default=False, help_text="Breaks ties in consensus (AMHART)")
    active = models.BooleanField(default=True)
    added_at = models.DateTimeField(auto_now_add=True)
    # Reminder emails (raters): when the rater turned them off for this study (None: on), and
    # when the last one was sent (a scheduled run claims a rater by moving this forward).
    reminders_opted_out_at = models.DateTimeField(null=True, blank=True)
    last_reminded_at = models.DateTimeField(null=True, blank=True)
    # Coordinators: an email when a rater flags a conversation of the study, unless turned off.
    flag_notices_off = models.BooleanField(default=False)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["study", "user", "role"], name="membership_unique")
        ]

    def __str__(self) -> str:
        return f"{self.user} as {self.role} in {self.study}"


class ExternalRater(models.Model):
    """A rater whose ratings were made outside the app: a pseudonymous label, no login account.

    Labels belong to one study (``clinician_a`` of one study is not ``clinician_a`` of another)
    and are written as the source names them. Reports treat them like in-app raters; they never
    sign in, so no rater page or rater API ever serves them.
    """

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="external_raters")
    label = models.CharField(max_length=60)
    # Like StudyMembership.rater_label: "clinician", "expert"... (composition and reports use it).
    rater_label = models.CharField(max_length=60, blank=True)
    source = models.CharField(max_length=200, blank=True, help_text="The file the ratings came from")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["study", "label"]
        constraints = [
            models.UniqueConstraint(fields=["study", "label"], name="external_rater_label_unique")
        ]

    def __str__(self) -> str:
        return f"{self.label} (external, study {self.study_id})"


class AssignmentStatus(models.TextChoices):
    NOT_STARTED = "not_started", "Not started"
    IN_PROGRESS = "in_progress", "In progress"
    SUBMITTED = "submitted", "Submitted"
    WITHDRAWN = "withdrawn", "Withdrawn (reassigned)"


class Assignment(models.Model):
    """One conversation for one rater in one study, in the rater's own randomised order."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="assignments")
    conversation = models.ForeignKey(
        "corpus.Conversation", on_delete=models.PROTECT, related_name="assignments"
    )
    # Exactly one of the two: an in-app rater (a user) or an external rater (a label, no account).
    rater = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="assignments", null=True, blank=True
    )
    external_rater = models.ForeignKey(
        ExternalRater, on_delete=models.PROTECT, related_name="assignments", null=True, blank=True
    )
    is_calibration = models.BooleanField(default=False)
    # A gold conversation mixed into the rater's queue: rated like any other (the rater cannot
    # tell), compared with its known answers, kept out of agreement, consensus and scores.
    is_gold = models.BooleanField(default=False)
    position = models.PositiveIntegerField(default=0, help_text="Order in the rater's queue")
    status = models.CharField(
        max_length=20, choices=AssignmentStatus.choices, default=AssignmentStatus.NOT_STARTED
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    submitted_at = models.DateTimeField(null=True, blank=True)
    last_activity_at = models.DateTimeField(null=True, blank=True)
    time_spent_seconds = models.PositiveIntegerField(default=0)
    # The rater was removed from the study and a coordinator decided they finish this one (moving
    # or discarding it withdraws it instead). Until someone decides, it is listed as awaiting.
    kept_after_removal = models.BooleanField(default=False)

    class Meta:
        ordering = ["study", "rater", "is_calibration", "position"]
        constraints = [
            models.UniqueConstraint(
                fields=["study", "conversation", "rater"],
                condition=~models.Q(status="withdrawn"),
                name="assignment_active_unique",
            ),
            models.UniqueConstraint(
                fields=["study", "conversation", "external_rater"],
                condition=~models.Q(status="withdrawn") & models.Q(external_rater__isnull=False),
                name="assignment_external_active_unique",
            ),
            models.CheckConstraint(
                condition=models.Q(rater__isnull=False, external_rater__isnull=True)
                | models.Q(rater__isnull=True, external_rater__isnull=False),
                name="assignment_one_kind_of_rater",
            ),
        ]
        indexes = [
            models.Index(fields=["rater", "status"]),
            models.Index(fields=["study", "conversation"]),
        ]

    def __str__(self) -> str:
        return f"{self.study_id}:{self.conversation_id}->{self.rater_id or f'x{self.external_rater_id}'}"

    @property
    def is_external(self) -> bool:
        return self.external_rater_id is not None

    @property
    def rater_name(self) -> str:
        """Return the name reports use: the username, or the external rater's label."""
        if self.external_rater_id is not None:
            return self.external_rater.label
        return self.rater.get_username()

    @property
    def rater_key(self) -> str:
        """Return a key unique across both kinds of rater ("u12", "x3")."""
        return f"x{self.external_rater_id}" if self.external_rater_id is not None else f"u{self.rater_id}"


class RatingStatus(models.TextChoices):
    DRAFT = "draft", "Draft"
    SUBMITTED = "submitted", "Submitted"


class Rating(models.Model):
    """A rater's answers for one assignment. ``revision`` detects concurrent edits."""

    assignment = models.OneToOneField(Assignment, on_delete=models.PROTECT, related_name="rating")
    status = models.CharField(
        max_length=20, choices=RatingStatus.choices, default=RatingStatus.DRAFT
    )
    # {item_key: {"value": "...", "note": "..."}} for the main instrument and the section.
    answers = models.JSONField(default=dict, blank=True)
    # Question flows: the derived path and dimension labels at submission.
    derived = models.JSONField(default=dict, blank=True)
    revision = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    submitted_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"rating of {self.assignment}"


class RatingRevision(models.Model):
    """An immutable snapshot: the first submission, and every later change with its reason."""

    rating = models.ForeignKey(Rating, on_delete=models.PROTECT, related_name="revisions")
    number = models.PositiveIntegerField()
    answers = models.JSONField()
    derived = models.JSONField(default=dict, blank=True)
    reason = models.TextField(blank=True)
    # Null for an external rater's imported rating when no importing user is known.
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+", null=True, blank=True
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["rating", "number"]
        constraints = [
            models.UniqueConstraint(fields=["rating", "number"], name="rating_revision_unique")
        ]

    def __str__(self) -> str:
        return f"revision {self.number} of {self.rating_id}"


class StudyEvent(models.Model):
    """Audit trail of a study: who changed what, when and why."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="events")
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    action = models.CharField(max_length=60)
    reason = models.TextField(blank=True)
    details = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.action} in study {self.study_id}"


class ConsensusProvenance(models.TextChoices):
    UNANIMOUS = "unanimous", "Unanimous"
    MAJORITY = "majority", "Majority"
    PLURALITY = "plurality", "Plurality (most frequent, no majority)"
    TIE_BREAK = "tie_break", "Tie broken by the senior rater"
    ADJUDICATED = "adjudicated", "Adjudicated"
    UNRESOLVED = "unresolved", "Unresolved (needs adjudication)"
    SINGLE = "single", "Single rating (the study asks for one)"
    TOO_FEW = "too_few", "Too few ratings (no consensus)"


class ConsensusLabel(models.Model):
    """The human reference label of one item of one conversation, with how it was reached."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="consensus")
    conversation = models.ForeignKey(
        "corpus.Conversation", on_delete=models.PROTECT, related_name="+"
    )
    item_key = models.CharField(max_length=80)
    label = models.CharField(max_length=200, blank=True)
    provenance = models.CharField(max_length=20, choices=ConsensusProvenance.choices)
    votes = models.JSONField(default=dict, blank=True)  # {label: count}
    n_ratings = models.PositiveSmallIntegerField(default=0)
    # Ratings expected for the conversation (its active assignments) when this was computed;
    # provisional while some of them are not submitted: the label may still change.
    n_expected = models.PositiveSmallIntegerField(default=0)
    provisional = models.BooleanField(default=False)
    disagreement = models.FloatField(default=0.0, help_text="1 - share of the modal label")
    adjudicated_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    reason = models.TextField(blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["study", "conversation", "item_key"], name="consensus_unique"
            )
        ]
        indexes = [models.Index(fields=["study", "provenance"])]

    def __str__(self) -> str:
        return f"{self.conversation_id}/{self.item_key}: {self.label or self.provenance}"


class ConsensusJobStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    COMPUTING = "computing", "Computing"
    READY = "ready", "Done"
    FAILED = "failed", "Failed"


class ConsensusJob(models.Model):
    """One computation of a study's consensus by a worker, with its progress and its result.

    At most one job per study waits or runs at a time; the latest finished job is the page's
    "last computed" marker, and ``input_version`` (a fingerprint of the submitted ratings, the
    assignments and the consensus rules when it started) tells whether the stored labels are
    still up to date.
    """

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="consensus_jobs")
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    status = models.CharField(max_length=12, choices=ConsensusJobStatus.choices, default=ConsensusJobStatus.QUEUED)
    progress = models.FloatField(default=0.0)
    stage = models.CharField(max_length=200, blank=True)
    error = models.TextField(blank=True)
    counts = models.JSONField(default=dict, blank=True)
    written = models.PositiveIntegerField(default=0)
    input_version = models.CharField(max_length=64, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    queued_at = models.DateTimeField(null=True, blank=True)
    taken_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    seconds = models.FloatField(null=True, blank=True)
    lease_owner = models.CharField(max_length=200, blank=True)
    attempts = models.PositiveSmallIntegerField(default=0)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["study"], condition=models.Q(status__in=["queued", "computing"]), name="consensus_job_one_active"
            )
        ]

    def __str__(self) -> str:
        return f"consensus of study {self.study_id}: {self.status}"


class SamplingMethod(models.TextChoices):
    SIMPLE_RANDOM = "simple_random", "Simple random sample"
    STRATIFIED = "stratified", "Stratified by chatbot and persona"
    OVERSAMPLE = "oversample", "Judge disagreement oversampled"


class SamplingPlan(models.Model):
    """How a validation study's conversations were drawn from a judge run's conversations.

    Every judged conversation of the run had a known chance π of being picked; the picked ones
    carry theirs on ``StudyConversation.inclusion_prob`` and the strata with their sizes are
    kept here, so a judge-assisted score can weight each rated conversation by 1/π.
    """

    study = models.OneToOneField(Study, on_delete=models.CASCADE, related_name="sampling_plan")
    judge_run = models.ForeignKey("judging.JudgeRun", on_delete=models.PROTECT, related_name="sampling_plans")
    # "ensemble" or "judge:<id>": whose labels flagged the disagreements and gave the planning values.
    source = models.CharField(max_length=40, default="ensemble")
    method = models.CharField(max_length=20, choices=SamplingMethod.choices)
    allocation = models.CharField(max_length=20, blank=True)
    boost = models.FloatField(null=True, blank=True)
    seed = models.BigIntegerField()
    n = models.PositiveIntegerField()
    population = models.PositiveIntegerField()
    # [{"key", "population", "sample_size", "inclusion_prob", "flagged"?}]
    strata = models.JSONField(default=list, blank=True)
    # The planning values and the expected interval widths shown before the study was created.
    planning = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"{self.get_method_display()} of {self.n}/{self.population} from run {self.judge_run_id}"


class FlagReason(models.TextChoices):
    BROKEN_TRANSCRIPT = "broken_transcript", "Broken transcript (missing, garbled or cut-off messages)"
    DISTRESSING = "distressing", "Distressing content I should not rate alone"
    OTHER = "other", "Something else"


class FlagStatus(models.TextChoices):
    OPEN = "open", "Open"
    RESOLVED = "resolved", "Resolved"


class ConversationFlag(models.Model):
    """A rater's "flag this conversation": lands in the coordinator's queue with its reason.

    It changes nothing about the assignment or its rating (the answers stay as they were); the
    coordinator resolves it, with a note, and may move or keep the assignment as usual.
    """

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="flags")
    assignment = models.ForeignKey(Assignment, on_delete=models.PROTECT, related_name="flags")
    conversation = models.ForeignKey("corpus.Conversation", on_delete=models.PROTECT, related_name="+")
    rater = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    reason = models.CharField(max_length=30, choices=FlagReason.choices)
    note = models.TextField(blank=True)
    status = models.CharField(max_length=20, choices=FlagStatus.choices, default=FlagStatus.OPEN)
    created_at = models.DateTimeField(auto_now_add=True)
    resolved_at = models.DateTimeField(null=True, blank=True)
    resolved_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    resolution = models.TextField(blank=True)

    class Meta:
        ordering = ["status", "-created_at", "-id"]
        indexes = [models.Index(fields=["study", "status"])]
        constraints = [
            models.CheckConstraint(
                condition=~models.Q(reason="other") | ~models.Q(note=""), name="flag_other_needs_a_note"
            ),
        ]

    def __str__(self) -> str:
        return f"flag of {self.conversation_id} in study {self.study_id}: {self.reason}"


class UncertaintyMeasure(models.TextChoices):
    DISAGREEMENT = "disagreement", "Ensemble disagreement: share of a conversation's labels where the judges split or found no majority"
    SPREAD = "spread", "Spread of the judges' scores: standard deviation of the conversation's score across the judges"


class ActiveStopRule(models.TextChoices):
    EACH_CHATBOT = "each_chatbot", "Every chatbot's interval is narrow enough"
    POOLED = "pooled", "The interval over all chatbots is narrow enough"


class ActivePlan(models.Model):
    """Active sampling (Zrnic & Candès, ICML 2024): a study that grows batch by batch from a judge run.

    The run's conversations are visited in a random order (``order``, from ``seed``), a batch
    at a time; each visited conversation is rated with a probability that grows with the
    judges' uncertainty about it, never below the floor. The batches, and every visited
    conversation's probability and draw, are ``ActiveBatch`` and ``ActiveUnit`` rows.
    """

    study = models.OneToOneField(Study, on_delete=models.CASCADE, related_name="active_plan")
    judge_run = models.ForeignKey("judging.JudgeRun", on_delete=models.PROTECT, related_name="active_plans")
    source = models.CharField(max_length=40, default="ensemble")  # whose labels give the judges' score
    uncertainty = models.CharField(max_length=20, choices=UncertaintyMeasure.choices)
    budget = models.PositiveIntegerField(help_text="Conversations to rate in all (expected)")
    batch_size = models.PositiveIntegerField(help_text="Conversations to rate per batch (expected)")
    floor = models.FloatField(help_text="Least share of uniform sampling (tau): every conversation's chance is at least floor x budget / N")
    target_width = models.FloatField(help_text="Stop asking once the interval is at most this wide (score units)")
    stop_on = models.CharField(max_length=20, choices=ActiveStopRule.choices, default=ActiveStopRule.EACH_CHATBOT)
    confidence = models.FloatField(default=0.95)
    seed = models.BigIntegerField()
    population = models.PositiveIntegerField()
    visit_size = models.PositiveIntegerField(help_text="Conversations visited per batch")
    order = models.JSONField(default=list)  # conversation ids in visit order
    # The score, the planning values and anything else a methods paragraph needs.
    planning = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.CheckConstraint(condition=models.Q(floor__gt=0, floor__lte=1), name="active_plan_floor_range"),
            models.CheckConstraint(condition=models.Q(target_width__gt=0), name="active_plan_target_positive"),
            models.CheckConstraint(condition=models.Q(batch_size__gte=1, budget__gte=1), name="active_plan_sizes_positive"),
        ]

    def __str__(self) -> str:
        return f"active sampling of run {self.judge_run_id} for study {self.study_id}"


class ActiveBatch(models.Model):
    """One batch of an active plan: which conversations it visited, its τ, and what it drew."""

    plan = models.ForeignKey(ActivePlan, on_delete=models.CASCADE, related_name="batches")
    number = models.PositiveSmallIntegerField()
    tau = models.FloatField()  # share of uniform sampling this batch used (>= the plan's floor)
    tuned_on = models.PositiveIntegerField(default=0)  # rated conversations tau was tuned on (0: not tuned)
    expected = models.FloatField()  # Σ π: ratings this batch was expected to add
    n_visited = models.PositiveIntegerField()
    visit_end = models.PositiveIntegerField(default=0)  # the visit order's position after this batch's last conversation
    n_selected = models.PositiveIntegerField()
    seed = models.BigIntegerField()  # the draws' seed
    assignment_seed = models.BigIntegerField(null=True, blank=True)
    width_before = models.FloatField(null=True, blank=True)  # the interval width shown when it was drawn
    expected_width = models.FloatField(null=True, blank=True)  # the width it was expected to give
    created_at = models.DateTimeField(auto_now_add=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")

    class Meta:
        ordering = ["plan", "number"]
        constraints = [models.UniqueConstraint(fields=["plan", "number"], name="active_batch_number_unique")]

    def __str__(self) -> str:
        return f"batch {self.number} of {self.plan}"


class ActiveUnit(models.Model):
    """A conversation a batch visited: its uncertainty, its chance of being rated, and the draw."""

    batch = models.ForeignKey(ActiveBatch, on_delete=models.CASCADE, related_name="units")
    conversation = models.ForeignKey("corpus.Conversation", on_delete=models.PROTECT, related_name="+")
    position = models.PositiveIntegerField()  # in the plan's visit order
    uncertainty = models.FloatField()
    inclusion_prob = models.FloatField()
    selected = models.BooleanField()

    class Meta:
        ordering = ["position"]
        constraints = [
            models.UniqueConstraint(fields=["batch", "conversation"], name="active_unit_unique"),
            models.CheckConstraint(condition=models.Q(inclusion_prob__gt=0, inclusion_prob__lte=1), name="active_unit_prob_range"),
        ]

    def __str__(self) -> str:
        return f"{self.conversation_id} in {self.batch}"
