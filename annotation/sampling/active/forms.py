"""Forms of the active sampling pages: the design (run, uncertainty, budget, batches, floor, target) and the study."""

from __future__ import annotations

from typing import Any

from django import forms
from django.db.models import Count

from annotation.models import ActiveStopRule, UncertaintyMeasure
from annotation.sampling.active.services import (
    DEFAULT_D_AGREE,
    DEFAULT_D_SPLIT,
    DEFAULT_FLOOR,
    ActiveOptions,
)
from annotation.sampling.forms import RunChoiceField, source_choices
from annotation.studies.forms import StudyCreateForm
from core.visibility import visible
from judging.errors import JudgingError
from judging.models import FINISHED_RUN_STATUSES, JudgeRun
from judging.sources import label_source_get

UNCERTAINTY_HELP = {
    UncertaintyMeasure.DISAGREEMENT: "How many of the conversation's labels the judges split on (a dissenting vote) or "
    "found no majority for. Usual with three judges.",
    UncertaintyMeasure.SPREAD: "How far apart the judges' scores of the conversation are (their standard deviation). "
    "Useful when judges rarely split on single labels but add them up differently.",
}


def active_run_queryset(user: Any = None):  # type: ignore[no-untyped-def]
    """Return the runs active sampling may draw from: finished, with judgements, two judges or more,
    that ``user`` may read (core.visibility; None: an operator, every run)."""
    runs = JudgeRun.objects.all() if user is None else visible(JudgeRun.objects.all(), user)
    return (
        runs.filter(status__in=FINISHED_RUN_STATUSES, n_done__gt=0)
        .annotate(n_judges=Count("judges", distinct=True)).filter(n_judges__gte=2)
        .select_related("instrument").order_by("-created_at", "-id")
    )


class ActiveDesignForm(forms.Form):
    """The active sampling design: whose labels, how uncertainty is measured, budget, batches, floor, target."""

    run = RunChoiceField(queryset=JudgeRun.objects.none(), label="Judge run",
                         help_text="A finished run with two or more judges: the conversations the batches draw from")
    source = forms.ChoiceField(required=False, label="Judge labels",
                               help_text="Whose score each conversation starts from: the run's ensemble, or one judge")
    uncertainty = forms.ChoiceField(choices=UncertaintyMeasure.choices, initial=UncertaintyMeasure.DISAGREEMENT,
                                    widget=forms.RadioSelect, label="Judges' uncertainty")
    budget = forms.IntegerField(min_value=1, initial=200, label="Conversations to rate in all",
                                help_text="The budget: the batches together rate about this many (each by k raters)")
    batch_size = forms.IntegerField(min_value=1, initial=40, label="Conversations per batch",
                                    help_text="About this many are drawn each time you ask for the next batch")
    floor = forms.FloatField(min_value=1, max_value=100, initial=round(DEFAULT_FLOOR * 100), label="Floor (%)",
                             help_text="The least share of the budget spread evenly: every conversation keeps a chance of at "
                             "least floor × budget / conversations. 100 is uniform sampling")
    target_width = forms.FloatField(min_value=0.0001, initial=0.10, label="Target interval width",
                                    help_text="Stop asking once the 95% interval is this narrow, in the score's units "
                                    "(AMHART: 0.10 = ten percentage points; VERA-MH: points of 100)")
    stop_on = forms.ChoiceField(choices=ActiveStopRule.choices, initial=ActiveStopRule.EACH_CHATBOT, label="Stop when")
    plan_seed = forms.IntegerField(min_value=0, required=False, label="Seed",
                                   help_text="Fixes the visit order and every draw. Empty: a new seed is drawn and recorded")
    d_agree = forms.FloatField(min_value=0, max_value=100, initial=round(DEFAULT_D_AGREE * 100),
                               label="Expected disagreement where the judges agreed (%)",
                               help_text="Planning value for the expected widths before any rating")
    d_split = forms.FloatField(min_value=0, max_value=100, initial=round(DEFAULT_D_SPLIT * 100),
                               label="Expected disagreement where the judges split (%)",
                               help_text="Planning value for labels with a dissenting judge or no majority")

    def __init__(self, *args: Any, **kwargs: Any):
        # ``user``: only the runs they may read are offered and accepted (core.visibility).
        user = kwargs.pop("user", None)
        if user is not None:
            self.user = user
        super().__init__(*args, **kwargs)
        self.fields["run"].queryset = active_run_queryset(getattr(self, "user", None))
        raw = self.data.get("run") if self.is_bound else self.initial.get("run")
        run = self.fields["run"].queryset.filter(pk=int(raw)).first() if str(raw or "").isdigit() else None
        self.fields["source"].choices = source_choices(run)

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        run = data.get("run")
        if run is not None and data.get("source"):
            try:
                label_source_get(run, data["source"])
            except JudgingError as exc:
                self.add_error("source", str(exc))
        if data.get("budget") and data.get("batch_size") and data["batch_size"] > data["budget"]:
            self.add_error("batch_size", "A batch cannot ask for more than the whole budget.")
        return data

    def options(self) -> ActiveOptions:
        data = self.cleaned_data
        return ActiveOptions(
            budget=data["budget"], batch_size=data["batch_size"], target_width=data["target_width"],
            uncertainty=data["uncertainty"], floor=data["floor"] / 100, stop_on=data["stop_on"],
            seed=data.get("plan_seed"), d_agree=data["d_agree"] / 100, d_split=data["d_split"] / 100,
        )


class ActiveStudyForm(StudyCreateForm, ActiveDesignForm):
    """A new study that grows by active sampling from a judge run (no calibration: batches are assigned as drawn)."""

    personas = targets = batches = codes = exclude_flagged = sample_size = sample_seed = instrument = calibration = None  # type: ignore[assignment]

    field_order = ["name", "rater_title", "description", "section"]

    def clean(self) -> dict[str, Any]:
        run = self.cleaned_data.get("run")
        if run is not None:
            self.cleaned_data["instrument"] = run.instrument
        return super().clean()
