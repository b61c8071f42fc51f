"""Forms of the sampling-plan pages: which run, which plan, how many, and the planning values."""

from __future__ import annotations

from typing import Any

from django import forms

from annotation.models import SamplingMethod
from annotation.sampling.selectors import (
    DEFAULT_AGREE_DISAGREEMENT,
    DEFAULT_BOOST,
    DEFAULT_SPLIT_DISAGREEMENT,
    PlanOptions,
)
from annotation.studies.forms import StudyCreateForm
from core.visibility import visible
from judging.errors import JudgingError
from judging.models import JudgeRun
from judging.sources import label_source_get, run_label_sources

METHOD_HELP = {
    SamplingMethod.SIMPLE_RANDOM: "Every judged conversation is equally likely to be rated (π = n / N).",
    SamplingMethod.STRATIFIED: "Each chatbot × persona cell gets its share of the ratings, so no cell is left out by chance.",
    SamplingMethod.OVERSAMPLE: "Conversations where the judges disagreed (no majority or a split vote) are rated more often, "
    "within each chatbot; the estimators weight them down again, so the scores stay unbiased.",
}

ALLOCATIONS = [
    ("proportional", "Proportional: each chatbot × persona cell in proportion to its size"),
    ("equal", "Equal: the same number from every cell (small cells get larger π)"),
]


def run_choices_queryset(user: Any = None):  # type: ignore[no-untyped-def]
    """Return the judge runs a plan may draw from: those with at least one finished judgement that
    ``user`` may read (core.visibility; None: an operator, every run)."""
    qs = JudgeRun.objects.filter(n_done__gt=0).select_related("instrument").order_by("-created_at", "-id")
    return qs if user is None else visible(qs, user)


DEFAULT_SOURCE = ("", "the run's ensemble (or its only judge)")


def source_choices(run: JudgeRun | None) -> list[tuple[str, str]]:
    """Return whose labels a plan may use: the run's default, then each judge of this run."""
    judges = [s for s in run_label_sources(run) if not s.is_ensemble] if run is not None else []
    return [DEFAULT_SOURCE] + [(s.key, f"judge {s.name} only") for s in judges]


def run_source_choices(user: Any, limit: int = 200) -> dict[str, list[tuple[str, str]]]:
    """Return the source choices of every run a plan may draw from (the page switches lists with it)."""
    return {str(run.pk): source_choices(run) for run in run_choices_queryset(user)[:limit]}


class RunChoiceField(forms.ModelChoiceField):
    def label_from_instance(self, obj: JudgeRun) -> str:  # type: ignore[override]
        name = f" {obj.name}" if obj.name else ""
        return f"#{obj.pk}{name} · {obj.instrument} · {obj.get_status_display().lower()}, {obj.n_done} judgements"


class PlanForm(forms.Form):
    """The plan: a judge run, whose labels, the method, the number of conversations, planning values."""

    run = RunChoiceField(queryset=JudgeRun.objects.none(), label="Judge run", help_text="The conversations the plan draws from: every conversation this run judged (integrity-flagged ones left out)")
    source = forms.ChoiceField(
        required=False, label="Judge labels",
        help_text="Whose labels flag disagreements and give the planning values: the run's ensemble, or one of its judges",
    )
    method = forms.ChoiceField(choices=SamplingMethod.choices, initial=SamplingMethod.STRATIFIED, widget=forms.RadioSelect, label="Sampling plan")
    plan_size = forms.IntegerField(min_value=1, initial=100, label="Conversations to rate",
                                   help_text="How many conversations the clinicians rate (each by k raters)")
    allocation = forms.ChoiceField(choices=ALLOCATIONS, initial="proportional", required=False, label="Allocation (stratified plan)")
    boost = forms.FloatField(min_value=1, max_value=50, initial=DEFAULT_BOOST, required=False, label="Oversampling factor",
                             help_text="How many times likelier a conversation with judge disagreement is to be rated")
    min_split = forms.IntegerField(min_value=1, max_value=100, initial=1, required=False, label="Disagreement threshold",
                                   help_text="Oversampling: a conversation counts as disputed from this many labels with a split vote or no majority")
    plan_seed = forms.IntegerField(min_value=0, required=False, label="Plan seed", help_text="Empty: a new seed is drawn and recorded")
    d_agree = forms.FloatField(min_value=0, max_value=100, initial=round(DEFAULT_AGREE_DISAGREEMENT * 100), label="Expected disagreement where the judges agreed (%)",
                               help_text="Planning value: how often clinicians would give another label than a unanimous judge label")
    d_split = forms.FloatField(min_value=0, max_value=100, initial=round(DEFAULT_SPLIT_DISAGREEMENT * 100), label="Expected disagreement where the judges split (%)",
                               help_text="Planning value for labels with a dissenting judge or no majority")

    def __init__(self, *args: Any, **kwargs: Any):
        # ``user``: only the runs they may read are offered and accepted (core.visibility).
        user = kwargs.pop("user", None)
        if user is not None:
            self.user = user
        super().__init__(*args, **kwargs)
        self.fields["run"].queryset = run_choices_queryset(getattr(self, "user", None))
        # Only the judges of the chosen run: any other judge's labels do not exist in it.
        # (The page swaps the list when another run is chosen: ``run_source_choices``.)
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
        if data.get("method") == SamplingMethod.OVERSAMPLE and data.get("boost") is None:
            data["boost"] = DEFAULT_BOOST
        return data

    def plan_options(self) -> PlanOptions:
        data = self.cleaned_data
        return PlanOptions(
            method=data["method"],
            n=data["plan_size"],
            seed=data.get("plan_seed"),
            boost=data.get("boost") or DEFAULT_BOOST,
            allocation=data.get("allocation") or "proportional",
            d_agree=data["d_agree"] / 100,
            d_split=data["d_split"] / 100,
            min_split=data.get("min_split") or 1,
        )


class PlannedStudyForm(StudyCreateForm, PlanForm):
    """A new study whose conversations a sampling plan draws from a judge run."""

    # The plan picks the conversations and the run gives the instrument.
    personas = targets = batches = codes = exclude_flagged = sample_size = sample_seed = instrument = None  # type: ignore[assignment]

    field_order = ["name", "rater_title", "description", "section"]

    def clean(self) -> dict[str, Any]:
        run = self.cleaned_data.get("run")
        if run is not None:
            self.cleaned_data["instrument"] = run.instrument
        return super().clean()
