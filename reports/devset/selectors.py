"""Reads for judge development: a study's splits, their sets, declared versions and test-set looks.

Access: every function takes a study already checked by ``reports.selectors.study_get_for_reports``
(readers) or ``annotation.studies.selectors.study_get_for_coordinator`` (who may split). Who may
declare a version final and look at the test set is :func:`user_may_look` (researchers and admins).
"""

from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db.models import Count, Max

from annotation.consensus.services import consensus_labels_of
from annotation.models import (
    AssignmentStatus,
    ConsensusLabel,
    MemberRole,
    Rating,
    RatingStatus,
    Study,
)
from core.roles import Role, user_roles
from judging.models import EnsembleLabel, Judge, JudgeLabel, JudgeRun
from judging.sources import ENSEMBLE, label_source_get, run_label_sources, run_panel
from reports.models import FinalDeclaration, HoldoutLook, HoldoutMember, HoldoutPart, HoldoutSplit
from reports.selectors import judge_runs_for_study

CHATBOT_UNKNOWN = "(unknown chatbot)"
PERSONA_NONE = "(no persona)"


def user_may_look(user: AbstractBaseUser | AnonymousUser) -> bool:
    """Tell whether a user may declare a version final and evaluate the test set (researchers, admins)."""
    return bool(user_roles(user) & {Role.RESEARCHER, Role.ADMIN})


def split_current(study: Study) -> HoldoutSplit | None:
    """Return the study's split in force (the newest), or None before the first split."""
    return HoldoutSplit.objects.filter(study=study).select_related("created_by").order_by("-number").first()


def splits_of(study: Study) -> list[HoldoutSplit]:
    """Return every split of the study, newest first."""
    return list(HoldoutSplit.objects.filter(study=study).select_related("created_by").order_by("-number"))


def split_conversation_ids(split: HoldoutSplit, part: str) -> frozenset[int]:
    """Return the conversation ids of one set ("dev" or "test") of a split."""
    return frozenset(HoldoutMember.objects.filter(split=split, part=part).values_list("conversation_id", flat=True))


@dataclass(frozen=True)
class StudyConversation:
    """A main conversation of a study with what the split stratifies by."""

    id: int
    code: str
    chatbot: str
    persona: str


def study_main_conversations(study: Study) -> list[StudyConversation]:
    """Return the study's rated (non-calibration) conversations by code, with chatbot and persona."""
    rows = (
        study.study_conversations.filter(is_calibration=False)
        .order_by("conversation__code")
        .values_list("conversation_id", "conversation__code", "conversation__target__code",
                     "conversation__target__model", "conversation__persona__name")
    )
    return [
        StudyConversation(cid, code, f"{target} · {model}" if target else CHATBOT_UNKNOWN, persona or PERSONA_NONE)
        for cid, code, target, model, persona in rows
    ]


def split_rows(split: HoldoutSplit) -> list[dict[str, Any]]:
    """Return every conversation of a split with its set, chatbot, persona and stratum (for the CSV)."""
    rows = (
        HoldoutMember.objects.filter(split=split)
        .order_by("conversation__code")
        .values_list("conversation__code", "part", "stratum", "conversation__target__code", "conversation__target__model",
                     "conversation__persona__name")
    )
    return [
        {"conversation": code, "set": part, "chatbot": f"{target} · {model}" if target else CHATBOT_UNKNOWN,
         "persona": persona or PERSONA_NONE, "stratum": stratum}
        for code, part, stratum, target, model, persona in rows
    ]


def outside_split(study: Study, split: HoldoutSplit) -> int:
    """Return how many of the study's main conversations are in neither set (added after the split)."""
    members = HoldoutMember.objects.filter(split=split).values("conversation_id")
    return study.study_conversations.filter(is_calibration=False).exclude(conversation_id__in=members).count()


def earlier_test_in_dev(split: HoldoutSplit) -> int:
    """Return how many of this split's development conversations were in an earlier test set that was looked at."""
    looked = HoldoutLook.objects.filter(split__study_id=split.study_id, split__number__lt=split.number).values("split_id")
    seen = HoldoutMember.objects.filter(split_id__in=looked, part=HoldoutPart.TEST).values("conversation_id")
    return HoldoutMember.objects.filter(split=split, part=HoldoutPart.DEV, conversation_id__in=seen).count()


def conversations_per_rater(study: Study) -> tuple[list[int], str]:
    """Return how many main conversations each rater rates, and where the counts come from.

    From the study's active assignments; before assignment, the plan: N · k / R for each of
    the R active raters with k raters per conversation.
    """
    rows = (
        study.assignments.filter(is_calibration=False, is_gold=False)
        .exclude(status=AssignmentStatus.WITHDRAWN)
        .values_list("rater_id", "external_rater_id")
    )
    counts = Counter(f"u{r}" if r else f"x{x}" for r, x in rows)
    if counts:
        return sorted(counts.values(), reverse=True), "assignments"
    n = study.study_conversations.filter(is_calibration=False).count()
    raters = study.memberships.filter(role=MemberRole.RATER, active=True).count()
    if not raters:
        return [], "no raters yet"
    k = min(study.raters_per_conversation, raters)
    return [round(n * k / raters)] * raters, "planned (k raters per conversation, no assignment yet)"


def compared_items(study: Study) -> int:
    """Return how many of the instrument's items (or flow dimensions) a judge can be compared on."""
    return sum(1 for k in consensus_labels_of(study) if not k.startswith("section:"))


def declarations_of(split: HoldoutSplit) -> list[FinalDeclaration]:
    return list(FinalDeclaration.objects.filter(split=split).select_related("declared_by", "run").order_by("declared_at", "id"))


def looks_of(study: Study) -> list[HoldoutLook]:
    """Return every look at any of the study's test sets, oldest first (split, then number)."""
    return list(
        HoldoutLook.objects.filter(study=study)
        .select_related("declaration", "split", "looked_by")
        .order_by("split__number", "number")
    )


def look_get(study: Study, pk: int) -> HoldoutLook | None:
    return HoldoutLook.objects.filter(study=study, pk=pk).select_related("declaration__run", "split", "looked_by").first()


def declaration_get(split: HoldoutSplit, pk: int) -> FinalDeclaration | None:
    return FinalDeclaration.objects.filter(split=split, pk=pk).select_related("run").first()


def declaration_for(split: HoldoutSplit, run_id: int, source: str) -> FinalDeclaration | None:
    return FinalDeclaration.objects.filter(split=split, run_id=run_id, source=source).select_related("run").first()


def study_run(study: Study, run_id: int) -> JudgeRun | None:
    """Return a judge run that labelled the study's conversations, or None."""
    return judge_runs_for_study(study).filter(pk=run_id).first()


class JudgeBook:
    """Every judge's name and version number, loaded once (a version is a ``cloned_from`` step)."""

    def __init__(self) -> None:
        self._rows = {pk: (name, parent) for pk, name, parent in Judge.objects.values_list("pk", "name", "cloned_from_id")}

    def name(self, pk: int) -> str:
        return self._rows.get(pk, (str(pk), None))[0]

    def version(self, pk: int) -> int:
        """Return 1 for a judge cloned from nothing, 2 for its first clone, and so on (cycles cut)."""
        seen, current, n = {pk}, self._rows.get(pk, ("", None))[1], 1
        while current is not None and current not in seen:
            seen.add(current)
            n += 1
            current = self._rows.get(current, ("", None))[1]
        return n


def version_label(run: JudgeRun, source_key: str, book: JudgeBook | None = None) -> tuple[str, str]:
    """Return (name in the comparison payloads, label people read) of a run's labels from one source.

    One judge: its name and its version number along its ``cloned_from`` chain (the first judge
    is version 1); the ensemble: the run's panel. Raises JudgingError for an unknown source.
    """
    source = label_source_get(run, source_key)
    if source.key == ENSEMBLE:
        panel = ", ".join(name for _, name in run_panel(run))
        return ENSEMBLE, f"ensemble of run #{run.pk} ({panel})"
    book = book or JudgeBook()
    name = book.name(source.judge_id)  # type: ignore[arg-type]
    return name, f"{name} version {book.version(source.judge_id)} (run #{run.pk})"  # type: ignore[arg-type]


def version_choices(study: Study, limit: int = 30) -> list[dict[str, Any]]:
    """Return the versions a researcher may declare final: each recent run's ensemble and judges."""
    book = JudgeBook()
    out = []
    for run in judge_runs_for_study(study)[:limit]:
        for source in run_label_sources(run):
            out.append({"run": run.pk, "source": source.key, "value": f"{run.pk}|{source.key}",
                        "label": version_label(run, source.key, book)[1]})
    return out


def test_data_version(study: Study, split: HoldoutSplit, declaration: FinalDeclaration, na: str) -> str:
    """Return a fingerprint of what a look at the test set would read for this version.

    The test set's submitted ratings and consensus labels, the run's labels on the test set, the
    study's epsilon and the N/A policy: evaluating again with all of them unchanged is the same
    look, not a new one.
    """
    test = HoldoutMember.objects.filter(split=split, part=HoldoutPart.TEST).values("conversation_id")
    ratings = (
        Rating.objects.filter(assignment__study=study, assignment__is_calibration=False, assignment__is_gold=False,
                              status=RatingStatus.SUBMITTED,
                              assignment__conversation_id__in=test)
        .exclude(assignment__status=AssignmentStatus.WITHDRAWN)
        .aggregate(n=Count("id"), last=Max("updated_at"), rev=Max("revision"))
    )
    consensus = ConsensusLabel.objects.filter(study=study, conversation_id__in=test).aggregate(n=Count("id"), last=Max("updated_at"))
    labels = JudgeLabel.objects.filter(result__run_id=declaration.run_id, result__conversation_id__in=test).aggregate(
        n=Count("id"), last=Max("result__finished_at")
    )
    ensemble = EnsembleLabel.objects.filter(run_id=declaration.run_id, conversation_id__in=test).aggregate(n=Count("id"))
    blob = f"{split.pk}|{declaration.pk}|{na}|{study.alt_test_epsilon}|{ratings}|{consensus}|{labels}|{ensemble}"
    return hashlib.sha256(blob.encode()).hexdigest()[:32]


def run_labelled_any(run: JudgeRun, conversation_ids: frozenset[int]) -> bool:
    """Tell whether the run has a result on any of these conversations."""
    return run.results.filter(conversation_id__in=list(conversation_ids)).exists()


def development_scope(study: Study, split_id: int) -> dict[str, Any]:
    """Return the development set of a split of the study and what the payload says about it."""
    split = HoldoutSplit.objects.select_related("created_by").get(pk=split_id, study=study)
    dev = split_conversation_ids(split, HoldoutPart.DEV)
    return {
        "conversation_ids": dev,
        "holdout": {
            "set": "development",
            "split": split.number,
            "n_conversations": len(dev),
            "n_test_held_out": split.n_test,
            "note": (f"Development set only: {len(dev)} of the study's conversations (split {split.number}, seed "
                     f"{split.seed}). The {split.n_test} conversations of the test set are held out: no test-set "
                     "rating, consensus or judge label is read here; the test set is evaluated only for a version "
                     "declared final, on the judge development page."),
        },
    }
