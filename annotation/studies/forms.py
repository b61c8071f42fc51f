"""Forms of the coordinators' pages: parse and validate input; the services do the writing."""

from __future__ import annotations

import csv
import io
import json
import re
from typing import Any

from django import forms

from annotation.errors import AnnotationError
from annotation.models import TiePolicy
from annotation.rating.services import normalise_value
from annotation.studies.selectors import conversations_by_codes
from annotation.studies.services import DISCARD, KEEP, MOVE, RemovedWorkDecision
from core.bounded import TooComplex, csv_error_message, json_loads
from core.visibility import visible
from corpus.conversations.selectors import conversation_ids_for_codes
from corpus.errors import CorpusError
from corpus.instruments.flow import LABELS as FLOW_LABELS
from corpus.models import Instrument, InstrumentKind, Persona, PersonaSet, Target
from simulation.models import SimulationBatch

DEFAULT_LABEL = "clinician"


def parse_composition(text: str) -> dict[str, int]:
    """Parse "clinician=2, expert=1" (or ':' or JSON) into ``{"clinician": 2, "expert": 1}``."""
    text = text.strip()
    if not text:
        return {}
    if text.startswith("{"):
        try:
            data = json_loads(text)
        except json.JSONDecodeError as exc:
            raise forms.ValidationError(f"not valid JSON: {exc.msg}") from exc
        except TooComplex as exc:
            raise forms.ValidationError(str(exc)) from exc
        pairs = list(data.items()) if isinstance(data, dict) else []
    else:
        pairs = [re.split(r"\s*[=:]\s*", part.strip(), maxsplit=1) for part in re.split(r"[,;\n]", text) if part.strip()]
    result: dict[str, int] = {}
    for pair in pairs:
        if len(pair) != 2 or not str(pair[0]).strip() or not re.fullmatch(r"\d+", str(pair[1]).strip()):
            raise forms.ValidationError("write it as label=count, e.g. clinician=2, expert=1")
        result[str(pair[0]).strip()] = int(str(pair[1]).strip())
    return result


def parse_codes(text: str) -> list[str]:
    return [p for p in re.split(r"[\s,;]+", text.strip()) if p]


MAX_IDS_FILE_BYTES = 1_000_000
_ID_HEADERS = {"code", "codes", "id", "unit", "conversation", "conversation_id", "conversation_code", "external_id"}


def ids_from_file(text: str) -> list[str]:
    """Return the first column of every non-blank line; a header line naming the column is skipped."""
    out = []
    for n, line in enumerate(text.splitlines()):
        first = re.split(r"[,;\t]", line, maxsplit=1)[0].strip().strip('"')
        if not first or (n == 0 and first.lower() in _ID_HEADERS):
            continue
        out.append(first)
    return list(dict.fromkeys(out))


def _checked_ids(ids: list[str], user: Any = None) -> list[str]:
    """Return the ids if every one names a conversation (``user`` may read); otherwise a form error naming those that do not."""
    if ids:
        try:
            conversation_ids_for_codes(ids, user=user)
        except CorpusError as exc:
            raise forms.ValidationError(str(exc)) from exc
    return ids


def calibration_labels(instrument: Instrument) -> dict[str, Any]:
    """Return what a calibration reference may name: item key -> Item, or dimension -> labels."""
    items: dict[str, Any] = {i.key: i for i in instrument.items.all()}
    if instrument.kind == InstrumentKind.FLOW:
        items.update({i.domain: FLOW_LABELS for i in items.values() if i.domain})
    return items


def reference_label(items: dict[str, Any], key: str, label: str) -> str:
    """Return the stored form of a calibration reference label; raise ValueError saying why not."""
    target = items.get(key)
    if target is None:
        raise ValueError(f"'{key}' is not an item of the instrument")
    if isinstance(target, tuple):
        match = next((x for x in target if x.casefold() == label.strip().casefold()), None)
        if match is None:
            raise ValueError(f"'{label}' is not a label of {key}; allowed: {', '.join(target)}")
        return match
    try:
        return normalise_value(target, label)
    except AnnotationError as exc:
        raise ValueError(str(exc)) from exc


def parse_calibration(text: str, instrument: Instrument, codes: dict[str, int]) -> dict[int, dict]:
    """Parse lines "code,item,label[,explanation]" into ``{conversation id: {item: {label, explanation}}}``."""
    items = calibration_labels(instrument)
    result: dict[int, dict] = {}
    errors = []
    try:
        rows = list(csv.reader(io.StringIO(text.strip())))
    except csv.Error as exc:
        raise forms.ValidationError(csv_error_message(exc)) from exc
    for n, row in enumerate(rows, start=1):
        if not any(cell.strip() for cell in row):
            continue
        if len(row) < 3:
            errors.append(f"line {n}: write code,item,label[,explanation]")
            continue
        code, key, label = (cell.strip() for cell in row[:3])
        if code not in codes:
            errors.append(f"line {n}: unknown conversation code '{code}'")
            continue
        try:
            label = reference_label(items, key, label)
        except ValueError as exc:
            errors.append(f"line {n}: {exc}")
            continue
        result.setdefault(codes[code], {})[key] = {"label": label, "explanation": ",".join(row[3:]).strip()}
    if errors:
        raise forms.ValidationError(errors)
    return result


class SelectionForm(forms.Form):
    """Which conversations: by persona, chatbot, batch or code, then an optional random sample."""

    personas = forms.ModelMultipleChoiceField(
        queryset=Persona.objects.select_related("persona_set").order_by("persona_set__key", "position"),
        required=False, widget=forms.CheckboxSelectMultiple,
    )
    targets = forms.ModelMultipleChoiceField(
        queryset=Target.objects.order_by("code"), required=False, label="Chatbots",
        widget=forms.CheckboxSelectMultiple,
    )
    batches = forms.ModelMultipleChoiceField(
        queryset=SimulationBatch.objects.order_by("-id"), required=False, label="Simulation batches",
        widget=forms.CheckboxSelectMultiple,
    )
    codes = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}), label="Conversation codes or source ids",
                            help_text="App codes (C-…) or the ids of imported conversations (e.g. VERA-MH's 0e6474), separated by spaces, commas or new lines. An id that matches nothing is an error.")
    codes_file = forms.FileField(required=False, label="…or a file of ids",
                                 help_text="A text or CSV file: the first column of each line is a code or source id (a header line is skipped)")
    # The ids of a file chosen before the page came back with an error (a browser cannot keep the file).
    codes_file_kept = forms.CharField(required=False, widget=forms.HiddenInput)
    keep_codes = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 1}), label="Keep these flagged conversations",
                                 help_text="Codes or source ids of flagged conversations (e.g. a simulated user who broke role) to keep on purpose")
    exclude_flagged = forms.BooleanField(required=False, initial=True, label="Leave out conversations flagged by the integrity checks")
    sample_size = forms.IntegerField(required=False, min_value=1, help_text="Draw this many at random from the matches")
    sample_seed = forms.IntegerField(required=False, min_value=0, help_text="Empty: a new seed is drawn and recorded")

    def __init__(self, *args: Any, **kwargs: Any):
        # ``user``: only what they may read is offered and accepted (core.visibility); None: an operator.
        user = kwargs.pop("user", None)
        if user is not None:
            self.user = user
        super().__init__(*args, **kwargs)
        user = getattr(self, "user", None)
        if user is not None:  # (a planned study has none of these pickers: its plan chooses)
            if "personas" in self.fields:
                self.fields["personas"].queryset = self.fields["personas"].queryset.filter(
                    persona_set__in=visible(PersonaSet.objects.all(), user))
            for name in ("targets", "batches"):
                if name in self.fields:
                    self.fields[name].queryset = visible(self.fields[name].queryset, user)

    def _checked(self, ids: list[str]) -> list[str]:
        return _checked_ids(ids, getattr(self, "user", None))

    def clean_codes(self) -> list[str]:
        return self._checked(parse_codes(self.cleaned_data["codes"]))

    def clean_codes_file_kept(self) -> list[str]:
        return self._checked(parse_codes(self.cleaned_data["codes_file_kept"]))

    def clean_keep_codes(self) -> list[str]:
        return self._checked(parse_codes(self.cleaned_data["keep_codes"]))

    def clean_codes_file(self) -> list[str]:
        upload = self.cleaned_data.get("codes_file")
        if not upload:
            return []
        try:
            text = upload.read(MAX_IDS_FILE_BYTES + 1).decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise forms.ValidationError("the file is not UTF-8 text") from exc
        if len(text.encode()) > MAX_IDS_FILE_BYTES:
            raise forms.ValidationError("the file is larger than 1 MB")
        return self._checked(ids_from_file(text))

    def file_ids(self) -> list[str]:
        """Return the ids of the file of ids: the one chosen now, else the one kept from before an error."""
        data = self.cleaned_data
        return data.get("codes_file") or data.get("codes_file_kept") or []

    def selection_kwargs(self) -> dict[str, Any]:
        data = self.cleaned_data
        return {
            "persona_ids": [p.pk for p in data["personas"]],
            "target_ids": [t.pk for t in data["targets"]],
            "batch_ids": [b.pk for b in data["batches"]],
            "codes": list(dict.fromkeys([*data["codes"], *self.file_ids()])),
            "keep_codes": data.get("keep_codes") or None,
            "exclude_flagged": data["exclude_flagged"],
            "sample_size": data["sample_size"],
            "seed": data["sample_seed"],
        }


class StudyCreateForm(SelectionForm):
    """A new study: name, instrument, conversations, raters with labels, design and calibration."""

    name = forms.CharField(max_length=200, label="Internal name", help_text="For coordinators and researchers only; raters never see it")
    rater_title = forms.CharField(
        max_length=200, label="Title shown to raters", required=False,
        help_text="What raters see instead of the internal name (empty: \"Study\" and its number). "
        "Never name a chatbot, model or persona design here.",
    )
    description = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}))
    instrument = forms.ModelChoiceField(
        queryset=Instrument.objects.exclude(kind=InstrumentKind.SECTION).order_by("key", "-version"),
        help_text="An item checklist (e.g. AMHART) or a question flow (e.g. VERA-MH)",
    )
    section = forms.ModelChoiceField(
        queryset=Instrument.objects.filter(kind=InstrumentKind.SECTION).order_by("key", "-version"),
        required=False, label="Study rating section", help_text="Realism, perceived risk and disclosure, broke-role",
    )
    due_date = forms.DateField(required=False, label="Due date (optional)", widget=forms.DateInput(attrs={"type": "date"}),
                               help_text="When the ratings are due: raters see it in their queue and reminders")
    raters_per_conversation = forms.IntegerField(min_value=1, max_value=20, initial=2, label="Raters per conversation (k)")
    composition = forms.CharField(required=False, help_text="Optional: raters of each label per conversation, e.g. clinician=2, expert=1")
    tie_policy = forms.ChoiceField(choices=TiePolicy.choices, initial=TiePolicy.ADJUDICATION)
    min_ratings_for_consensus = forms.IntegerField(
        min_value=1, max_value=20, required=False, label="Ratings needed for a consensus",
        help_text="An item with fewer ratings has no consensus (too few ratings). Blank: 2, or 1 when each conversation has one rater",
    )
    senior_rater = forms.ChoiceField(required=False, help_text="Breaks ties under the senior-rater policy")
    calibration = forms.CharField(
        required=False, widget=forms.Textarea(attrs={"rows": 3}), label="Calibration references",
        help_text="Optional. One line per reference answer: code,item,label[,explanation]. Every rater rates these conversations first and sees the reference after submitting.",
    )

    field_order = ["name", "rater_title", "description", "instrument", "section"]

    def __init__(self, *args: Any, candidates: list[Any], **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.candidates = candidates
        self.fields["section"].initial = self.fields["section"].queryset.first()
        self.fields["senior_rater"].choices = [("", "none")] + [(str(u.pk), u.get_username()) for u in candidates]
        for user in candidates:
            self.fields[f"rater_{user.pk}"] = forms.BooleanField(required=False, label=user.get_username())
            self.fields[f"label_{user.pk}"] = forms.CharField(
                required=False, max_length=60, initial=DEFAULT_LABEL, label=f"Label of {user.get_username()}",
                widget=forms.TextInput(attrs={"aria-label": f"Role label of {user.get_username()}"}),
            )

    def rater_rows(self) -> list[tuple[Any, forms.BoundField, forms.BoundField]]:
        return [(u, self[f"rater_{u.pk}"], self[f"label_{u.pk}"]) for u in self.candidates]

    def clean_due_date(self) -> Any:
        return _not_past(self.cleaned_data.get("due_date"))

    def clean_composition(self) -> dict[str, int]:
        return parse_composition(self.cleaned_data["composition"])

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        raters = [(u, (data.get(f"label_{u.pk}") or DEFAULT_LABEL).strip()) for u in self.candidates if data.get(f"rater_{u.pk}")]
        if not raters:
            self.raters_error = "Pick at least one rater."
            self.add_error(None, self.raters_error)
        title = (data.get("rater_title") or "").casefold()
        if title:
            named = chatbot_names_in(title)
            if named:
                self.add_error("rater_title", f"Raters would see this: it names {', '.join(named)}. Choose a neutral title.")
        data["raters"] = raters
        senior = next((u for u in self.candidates if str(u.pk) == data.get("senior_rater")), None)
        if senior is not None and senior not in [u for u, _ in raters]:
            self.add_error("senior_rater", "The senior rater must be one of the raters picked below.")
        data["senior"] = senior
        data["calibration_map"] = {}
        text = data.get("calibration", "")
        if text and data.get("instrument") is not None:
            codes = parse_codes(" ".join(row.split(",", 1)[0] for row in text.splitlines()))
            try:
                data["calibration_map"] = parse_calibration(text, data["instrument"], conversations_by_codes(codes))
            except forms.ValidationError as exc:
                self.add_error("calibration", exc)
        return data


def chatbot_names_in(text: str) -> list[str]:
    """Return the chatbot codes, names and models that occur in ``text`` (blinding check)."""
    text = text.casefold()
    found: list[str] = []
    for code, name, model in Target.objects.values_list("code", "name", "model"):
        for word in (code, name, model, model.split("/")[-1] if model else ""):
            if word and len(word) >= 3 and word.casefold() in text and word not in found:
                found.append(word)
    return found


class AssignForm(forms.Form):
    seed = forms.IntegerField(required=False, min_value=0, help_text="Empty: a new seed is drawn and recorded")


class AddRaterForm(forms.Form):
    user = forms.ChoiceField(label="Rater")
    label = forms.CharField(max_length=60, initial=DEFAULT_LABEL)
    rebalance = forms.BooleanField(required=False, initial=True, help_text="Move unstarted work from the busiest raters")
    reason = forms.CharField(required=False, max_length=2000)

    def __init__(self, *args: Any, candidates: list[Any], **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.fields["user"].choices = [(str(u.pk), u.get_username()) for u in candidates]


def _not_past(value: Any) -> Any:
    from django.utils import timezone

    if value is not None and value < timezone.localdate():
        raise forms.ValidationError("The due date is in the past: choose today or a later day (or leave it empty).")
    return value


class DueDateForm(forms.Form):
    """When the study's ratings are due (empty: no due date)."""

    due_date = forms.DateField(required=False, label="Due date", widget=forms.DateInput(attrs={"type": "date"}),
                               help_text="Raters see it in their queue and reminders; the dashboard warns when the pace misses it")

    def clean_due_date(self) -> Any:
        return _not_past(self.cleaned_data.get("due_date"))


class ReasonForm(forms.Form):
    reason = forms.CharField(max_length=2000, widget=forms.Textarea(attrs={"rows": 2}), help_text="Recorded in the audit trail")

    def clean_reason(self) -> str:
        reason = self.cleaned_data["reason"].strip()
        if not reason:
            raise forms.ValidationError("Say why.")
        return reason


class RemoveRaterForm(ReasonForm):
    # Unticked (or absent): their unstarted work moves to other raters at once, as it always did.
    hold_unstarted = forms.BooleanField(
        required=False, label="Leave their unstarted conversations for me to decide",
        help_text="Otherwise those move to other raters now; work in progress always waits for your decision",
    )


class ReassignForm(ReasonForm):
    new_rater = forms.ChoiceField(label="Move to")

    field_order = ["new_rater", "reason"]

    def __init__(self, *args: Any, raters: list[Any], **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.fields["new_rater"].choices = [(str(u.pk), u.get_username()) for u in raters]


class AdjudicateForm(ReasonForm):
    label = forms.ChoiceField(label="Final label", widget=forms.RadioSelect)

    field_order = ["label", "reason"]

    def __init__(self, *args: Any, labels: list[str], **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.fields["label"].choices = [(label, label) for label in labels]


class RatingsImportForm(forms.Form):
    file = forms.FileField(help_text="CSV in long format: unit,rater,item,label (an empty label is a missing answer), or the VERA-MH clinician ratings file")
    format = forms.ChoiceField(required=False, choices=[("long", "Long: unit,rater,item,label"), ("vera-mh", "VERA-MH clinician ratings (as published)")], initial="long")
    external_raters = forms.BooleanField(
        required=False, label="Raters without an account",
        help_text="Names that are not raters of this study become its external raters (a label, no login). Always on for the VERA-MH format.",
    )
    dry_run = forms.BooleanField(required=False, label="Dry run", help_text="Check the file without importing anything")


def removed_work_decisions(data: Any, awaiting_ids: list[int]) -> dict[int, Any]:
    """Parse the removed-work forms: one decision for all awaiting, or a select per assignment.

    Per assignment: ``decision_<id>`` = "" (decide later), "keep", "discard", "move" (the least
    loaded eligible rater) or "move:<user id>". Ids are passed on as posted: the service says
    which ones are no longer open.
    """
    if data.get("apply") == "all":
        action = data.get("all_action", "")
        return dict.fromkeys(awaiting_ids, RemovedWorkDecision(action)) if action in (KEEP, MOVE, DISCARD) else {}
    decisions: dict[int, Any] = {}
    for key, value in data.items():
        if not key.startswith("decision_") or not key[9:].isdigit() or not value:
            continue
        if value in (KEEP, DISCARD, MOVE):
            decisions[int(key[9:])] = RemovedWorkDecision(value)
        elif value.startswith("move:") and value[5:].isdigit():
            decisions[int(key[9:])] = RemovedWorkDecision(MOVE, int(value[5:]))
    return decisions
