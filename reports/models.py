"""Cached report figures: computed once per change of the underlying data, not per page view.

A row is one report (its ``key``: kind and parameters) at one ``data_version``. A cold report
is computed by a Celery task (``reports.tasks``) while the page shows ``progress`` and
``stage``; in eager mode (tests, one-off scripts) it is computed in place.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models


class ReportStatus(models.TextChoices):
    READY = "ready", "Ready"
    COMPUTING = "computing", "Computing"
    FAILED = "failed", "Failed"


class ReportCache(models.Model):
    key = models.CharField(max_length=200, unique=True)
    kind = models.CharField(max_length=40, blank=True)
    params = models.JSONField(default=dict, blank=True)
    data_version = models.CharField(max_length=64)
    payload = models.JSONField(default=dict, blank=True)
    status = models.CharField(max_length=20, choices=ReportStatus.choices, default=ReportStatus.READY)
    progress = models.FloatField(default=0.0, help_text="0..1 while computing")
    stage = models.CharField(max_length=200, blank=True, help_text="What the computation is doing now")
    error = models.TextField(blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    computed_at = models.DateTimeField(auto_now=True)
    seconds = models.FloatField(default=0.0, help_text="How long the computation took")
    # Crash recovery (core.recovery): when the job's message was last sent, and which worker
    # computes it now ("" while queued). A job queued long ago and never taken, or taken by a
    # worker that is gone, is sent again by the sweeper.
    queued_at = models.DateTimeField(null=True, blank=True)
    lease_owner = models.CharField(max_length=200, blank=True)
    # When a worker last took the job, and how many workers took it since it was asked for: a
    # job whose worker is known dead is sent again at once (taken since its last sending), and
    # one that every worker died on fails with the reason instead of being sent forever.
    taken_at = models.DateTimeField(null=True, blank=True)
    attempts = models.PositiveSmallIntegerField(default=0)

    def __str__(self) -> str:
        return self.key


# Judge development with a locked test set (issue 23): a study's conversations are split once into
# a development set and a held-out test set; judge versions are compared with clinicians freely on the
# development set, and the test set is evaluated only for versions declared final, each look recorded.


class HoldoutSplit(models.Model):
    """A study's conversations split into a development set and a held-out test set; never changed.

    A study may be split again only by a new, recorded decision (``reason``): the new split gets
    the next ``number`` and becomes the current one; the older splits and their looks stay.
    """

    study = models.ForeignKey("annotation.Study", on_delete=models.CASCADE, related_name="holdout_splits")
    number = models.PositiveSmallIntegerField(help_text="1 for the study's first split, 2 for the next…")
    seed = models.BigIntegerField()
    n_test = models.PositiveIntegerField()
    n_dev = models.PositiveIntegerField()
    method = models.TextField()
    # [{"key": [chatbot, persona], "population", "test", "dev", "quota"}]
    strata = models.JSONField(default=list, blank=True)
    # The size guidance shown when the split was made (what the coordinator chose from).
    guidance = models.JSONField(default=dict, blank=True)
    reason = models.TextField(blank=True, help_text="Why the study was split again (required from the second split)")
    created_at = models.DateTimeField(auto_now_add=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        ordering = ["study", "-number"]
        constraints = [
            models.UniqueConstraint(fields=["study", "number"], name="holdout_split_number_unique"),
            models.CheckConstraint(condition=models.Q(n_test__gte=1) & models.Q(n_dev__gte=1), name="holdout_split_both_sets"),
        ]

    def __str__(self) -> str:
        return f"split {self.number} of study {self.study_id}"

    def save(self, *args: object, **kwargs: object) -> None:
        # Looks at the test set cite the split: a stored split never changes.
        if not self._state.adding:
            raise ValueError("a split is immutable; make a new split (a recorded decision) instead")
        super().save(*args, **kwargs)  # type: ignore[arg-type]


class HoldoutPart(models.TextChoices):
    DEV = "dev", "Development set"
    TEST = "test", "Test set"


class HoldoutMember(models.Model):
    """One conversation of a split and the set it belongs to."""

    split = models.ForeignKey(HoldoutSplit, on_delete=models.CASCADE, related_name="members")
    conversation = models.ForeignKey("corpus.Conversation", on_delete=models.PROTECT, related_name="+")
    part = models.CharField(max_length=4, choices=HoldoutPart.choices)
    stratum = models.CharField(max_length=300, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["split", "conversation"], name="holdout_member_unique"),
            models.CheckConstraint(condition=models.Q(part__in=["dev", "test"]), name="holdout_member_part_valid"),
        ]
        indexes = [models.Index(fields=["split", "part"])]

    def __str__(self) -> str:
        return f"{self.conversation_id} in the {self.part} set of split {self.split_id}"

    def save(self, *args: object, **kwargs: object) -> None:
        if not self._state.adding:
            raise ValueError("a split is immutable; make a new split (a recorded decision) instead")
        super().save(*args, **kwargs)  # type: ignore[arg-type]


class FinalDeclaration(models.Model):
    """A researcher's recorded declaration that a judge version is final: only then may it see the test set.

    A version is a judge run's labels from one source: the ensemble, or one judge (``judge:<id>``).
    """

    study = models.ForeignKey("annotation.Study", on_delete=models.CASCADE, related_name="final_declarations")
    # RESTRICT, not PROTECT: a split outlives its declarations and looks, yet deleting the whole study deletes all three.
    split = models.ForeignKey(HoldoutSplit, on_delete=models.RESTRICT, related_name="declarations")
    run = models.ForeignKey("judging.JudgeRun", on_delete=models.PROTECT, related_name="final_declarations")
    source = models.CharField(max_length=40, help_text='"ensemble" or "judge:<id>"')
    # What the version was called when declared (the judge's name and version number, or the ensemble's panel).
    label = models.CharField(max_length=300)
    note = models.TextField(blank=True)
    declared_at = models.DateTimeField(auto_now_add=True)
    declared_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        ordering = ["split", "declared_at", "id"]
        constraints = [
            models.UniqueConstraint(fields=["split", "run", "source"], name="final_declaration_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.label} declared final (split {self.split_id})"

    def save(self, *args: object, **kwargs: object) -> None:
        if not self._state.adding:
            raise ValueError("a declaration is a record: it is never changed")
        super().save(*args, **kwargs)  # type: ignore[arg-type]


class HoldoutLook(models.Model):
    """One evaluation of a declared-final version on the test set: counted, stored, re-viewable.

    A look is the explicit "Evaluate on the test set" action; its result is computed once and
    kept here, so reading it again is not another look. Evaluating the same version again on
    unchanged data returns this look (``data_version``) and counts nothing.
    """

    study = models.ForeignKey("annotation.Study", on_delete=models.CASCADE, related_name="holdout_looks")
    split = models.ForeignKey(HoldoutSplit, on_delete=models.RESTRICT, related_name="looks")
    declaration = models.ForeignKey(FinalDeclaration, on_delete=models.RESTRICT, related_name="looks")
    number = models.PositiveSmallIntegerField(help_text="1 for the first look at this split's test set…")
    na_policy = models.CharField(max_length=10, default="category")
    # The test set's ratings, consensus and judge labels, the epsilon and N/A policy, when looked at.
    data_version = models.CharField(max_length=64)
    status = models.CharField(max_length=20, choices=ReportStatus.choices, default=ReportStatus.COMPUTING)
    progress = models.FloatField(default=0.0)
    stage = models.CharField(max_length=200, blank=True)
    error = models.TextField(blank=True)
    payload = models.JSONField(default=dict, blank=True)
    looked_at = models.DateTimeField(auto_now_add=True)
    looked_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["split", "number"]
        constraints = [
            models.UniqueConstraint(fields=["split", "number"], name="holdout_look_number_unique"),
            # One look per version per state of the test data: looking again at the same data is no new look.
            models.UniqueConstraint(fields=["declaration", "data_version"], name="holdout_look_once_per_data"),
        ]

    def __str__(self) -> str:
        return f"look {self.number} at the test set of split {self.split_id}"


# Failure modes (issue 27): open coding of disagreements on the review page (short free-text codes),
# then axial coding (codes grouped into a few named categories, which can be renamed and merged).


class FailureCategory(models.Model):
    """A named failure mode of a study: several codes grouped under one name (axial coding)."""

    study = models.ForeignKey("annotation.Study", on_delete=models.CASCADE, related_name="failure_categories")
    name = models.CharField(max_length=120)
    description = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        ordering = ["study", "name"]
        constraints = [models.UniqueConstraint(fields=["study", "name"], name="failure_category_name_unique")]

    def __str__(self) -> str:
        return self.name


class FailureCode(models.Model):
    """A researcher's short note of what went wrong on one item of one conversation (open coding).

    ``judge`` names whose label the code is about (a judge's name, "ensemble", or blank for
    the raters' disagreement); ``run`` the judge run it was read in.
    """

    study = models.ForeignKey("annotation.Study", on_delete=models.CASCADE, related_name="failure_codes")
    conversation = models.ForeignKey("corpus.Conversation", on_delete=models.PROTECT, related_name="+")
    item_key = models.CharField(max_length=200)
    run = models.ForeignKey("judging.JudgeRun", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    judge = models.CharField(max_length=120, blank=True)
    text = models.CharField(max_length=200)
    category = models.ForeignKey(FailureCategory, null=True, blank=True, on_delete=models.SET_NULL, related_name="codes")
    created_at = models.DateTimeField(auto_now_add=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        ordering = ["study", "conversation", "item_key", "created_at", "id"]
        indexes = [models.Index(fields=["study", "category"]), models.Index(fields=["study", "conversation"])]
        constraints = [
            models.UniqueConstraint(fields=["study", "conversation", "item_key", "judge", "text"], name="failure_code_once"),
            models.CheckConstraint(condition=~models.Q(text=""), name="failure_code_text_not_blank"),
        ]

    def __str__(self) -> str:
        return self.text
