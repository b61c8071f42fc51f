"""Judge development with a locked test set: split once, compare freely on development, look at test rarely.

Both seed studies tuned their judge prompts on the clinician labels they then reported agreement
on, so the final agreement is optimistic. Here a study's rated conversations are split once
(:func:`split_make`, stratified by chatbot and persona, seed recorded, :mod:`stats.holdout`);
the judges-vs-humans report then compares every judge version on the development set only
(``reports.services.study_judges_vs_humans``). A researcher declares a version final
(:func:`final_declare`); only a declared version can be evaluated on the test set
(:func:`test_set_evaluate`), and every evaluation is a *look*: recorded (who, when, which
version), counted, shown on the page, in the API and in the methods sentence, its result
stored and re-viewable without a new look. Evaluating the same version again on unchanged data
is the same look. The verdict on the judge (agreement, Cohen's kappa with cluster-bootstrap
intervals, the alternative annotator test) is the test set's (``reports.comparison``).
"""

from __future__ import annotations

import json
import secrets
from datetime import timedelta
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from annotation.models import Study
from annotation.studies.services import study_event
from core.enqueue import enqueue_on_commit
from judging.errors import JudgingError
from judging.models import JudgeRun
from judging.sources import ENSEMBLE, run_label_sources
from reports import jobs
from reports.comparison import compute_judges
from reports.devset import selectors
from reports.errors import ReportsError
from reports.models import (
    FinalDeclaration,
    HoldoutLook,
    HoldoutMember,
    HoldoutPart,
    HoldoutSplit,
    ReportStatus,
)
from reports.selectors import judge_runs_for_study
from stats.data import StatsInputError
from stats.holdout import holdout_size_guidance, holdout_split

NA_POLICIES = ("category", "exclude")
SEED_MAX = 2**31 - 1
# A look still "computing" after this lost its worker: evaluating again queues the same look again.
STALE_AFTER = timedelta(minutes=15)


def _who(user: AbstractBaseUser | None) -> str | None:
    return user.get_username() if user is not None else None


def size_guidance(study: Study) -> dict[str, Any]:
    """Return the test sizes the alternative annotator test needs in this study, and the default size."""
    conversations = selectors.study_main_conversations(study)
    counts, basis = selectors.conversations_per_rater(study)
    if len(conversations) < 2:
        return {"population": len(conversations), "default": None, "basis": basis,
                "notes": ["A split needs at least two rated conversations in the study."]}
    guidance = holdout_size_guidance(counts, len(conversations), selectors.compared_items(study))
    return {**guidance.as_dict(), "basis": basis, "expected_per_rater_at_default": guidance.expected_per_rater(guidance.default)}


@transaction.atomic
def split_make(
    *, study: Study, actor: AbstractBaseUser, n_test: int, seed: int | None = None, reason: str = ""
) -> HoldoutSplit:
    """Split the study's rated conversations once into a development and a test set; record it.

    Stratified by chatbot, then persona within chatbot (``stats.holdout``), over the study's
    non-calibration conversations in code order; ``seed`` is drawn when not given and recorded
    either way. A study already split is split again only with a ``reason`` (a new decision,
    recorded and shown): the earlier split and its looks stay. Raises ReportsError.
    """
    Study.objects.select_for_update().filter(pk=study.pk).first()  # one split at a time per study
    previous = selectors.split_current(study)
    reason = (reason or "").strip()
    if previous is not None and not reason:
        raise ReportsError(
            f"The study is already split (split {previous.number}, seed {previous.seed}). A split is never changed: "
            "a new split is a new decision, so give the reason for it.",
            status=409,
        )
    if seed is None:
        seed = secrets.randbelow(SEED_MAX)
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= SEED_MAX:
        raise ReportsError(f"The seed must be a whole number from 0 to {SEED_MAX}.")
    conversations = selectors.study_main_conversations(study)
    if len(conversations) < 2:
        raise ReportsError("A split needs at least two rated (non-calibration) conversations in the study.")
    try:
        split = holdout_split([c.id for c in conversations], [(c.chatbot, c.persona) for c in conversations], n_test, seed)
    except StatsInputError as exc:
        raise ReportsError(f"{str(exc)[:1].upper()}{str(exc)[1:]}.") from exc
    guidance = size_guidance(study)
    row = HoldoutSplit.objects.create(
        study=study, number=(previous.number + 1) if previous else 1, seed=seed, n_test=split.n_test, n_dev=split.n_dev,
        method=split.method, guidance=guidance, reason=reason, created_by=actor,
        strata=[{"chatbot": str(s.key[0]), "persona": str(s.key[1]), "population": s.population, "test": s.test,
                 "dev": s.dev, "quota": round(s.quota, 4)} for s in split.strata],
    )
    test = set(split.test)
    HoldoutMember.objects.bulk_create(
        HoldoutMember(split=row, conversation_id=c.id, part=HoldoutPart.TEST if c.id in test else HoldoutPart.DEV,
                      stratum=f"{c.chatbot} / {c.persona}"[:300])
        for c in conversations
    )
    looks_before = HoldoutLook.objects.filter(split=previous).count() if previous else 0
    summary = (f"split {row.number}: {row.n_dev} development, {row.n_test} test conversations, stratified by chatbot and persona"
               + (f"; replaces split {previous.number} (its test set evaluated {looks_before} time"
                  f"{'s' if looks_before != 1 else ''})" if previous else ""))
    study_event(study=study, actor=actor, action="holdout_split", reason=reason, split=row.number, seed=seed,
                n_test=row.n_test, n_dev=row.n_dev, replaces=previous.number if previous else None, summary=summary)
    return row


@transaction.atomic
def final_declare(
    *, study: Study, run: JudgeRun, source: str, actor: AbstractBaseUser, note: str = ""
) -> tuple[FinalDeclaration, bool]:
    """Record that a judge version (a run's ensemble or one judge) is final; return it and whether it is new.

    Needs the study's split (there is no test set to protect before it) and a run that labelled
    the study's conversations. Declaring the same version again returns the earlier declaration.
    """
    split = selectors.split_current(study)
    if split is None:
        raise ReportsError("Split the study into a development and a test set first: a final version is evaluated on the test set.")
    if not judge_runs_for_study(study).filter(pk=run.pk).exists():
        raise ReportsError(f"Judge run #{run.pk} labelled none of this study's conversations.")
    try:
        _, label = selectors.version_label(run, source or "")
    except JudgingError as exc:
        raise ReportsError(str(exc)) from exc
    source = source or run_label_sources(run)[0].key
    existing = selectors.declaration_for(split, run.pk, source)
    if existing is not None:
        return existing, False
    declaration = FinalDeclaration.objects.create(
        study=study, split=split, run=run, source=source, label=label[:300], note=(note or "").strip(), declared_by=actor,
    )
    study_event(study=study, actor=actor, action="final_declared", reason=declaration.note, split=split.number, run=run.pk,
                source=source, summary=f"{label} declared final (split {split.number})")
    return declaration, True


@transaction.atomic
def test_set_evaluate(
    *, study: Study, declaration: FinalDeclaration, actor: AbstractBaseUser, na: str = "category"
) -> tuple[HoldoutLook, bool]:
    """Evaluate a declared-final version on the test set: one recorded, counted look; return it and whether it is new.

    The look is counted when asked for, whatever its result. The same version evaluated again
    on unchanged test data (ratings, consensus, its labels, epsilon, N/A policy) returns the
    earlier look and counts nothing. Refused for a declaration made under an earlier split
    (declare the version again under the split in force) and for a run with no label on the
    test set.
    """
    if na not in NA_POLICIES:
        raise ReportsError("na must be 'category' or 'exclude'.")
    split = selectors.split_current(study)
    if split is None:
        raise ReportsError("The study has no test set yet: split it first.")
    HoldoutSplit.objects.select_for_update().filter(pk=split.pk).first()  # one numbering at a time
    if declaration.study_id != study.pk:
        raise ReportsError("This declaration is not one of this study's.")
    if declaration.split_id != split.pk:
        raise ReportsError(
            f"{declaration.label} was declared final under split {declaration.split.number}; the study has been split "
            f"again (split {split.number}). Declare it final again to evaluate it on the new test set.",
            status=409,
        )
    if not declaration.run.is_finished:
        raise ReportsError(f"Judge run #{declaration.run_id} is still {declaration.run.get_status_display().lower()}: evaluate "
                           "it once it has finished, so the look sees all its labels. Nothing was evaluated or counted.",
                           status=409)
    test = selectors.split_conversation_ids(split, HoldoutPart.TEST)
    if not selectors.run_labelled_any(declaration.run, test):
        raise ReportsError(f"Judge run #{declaration.run_id} labelled none of the test set's conversations: "
                           "run the judge on them first. Nothing was evaluated or counted.")
    version = selectors.test_data_version(study, split, declaration, na)
    existing = HoldoutLook.objects.filter(declaration=declaration, data_version=version).first()
    if existing is not None:
        stale = existing.status == ReportStatus.COMPUTING and timezone.now() - existing.looked_at > STALE_AFTER
        if existing.status == ReportStatus.FAILED or stale:
            HoldoutLook.objects.filter(pk=existing.pk).update(status=ReportStatus.COMPUTING, error="", progress=0.0,
                                                              stage="queued again: waiting for a worker")
            _compute_later(existing.pk)
            existing.refresh_from_db()
        return existing, False
    number = (HoldoutLook.objects.filter(split=split).aggregate(n=Max("number"))["n"] or 0) + 1
    look = HoldoutLook.objects.create(
        study=study, split=split, declaration=declaration, number=number, na_policy=na, data_version=version,
        looked_by=actor, stage="queued: waiting for a worker",
    )
    study_event(study=study, actor=actor, action="test_set_evaluated", split=split.number, look=number,
                run=declaration.run_id, source=declaration.source,
                summary=f"look {number} at the test set of split {split.number}: {declaration.label}")
    _compute_later(look.pk)
    look.refresh_from_db()
    return look, True


def _compute_later(look_id: int) -> None:
    """Compute a look now (tests, scripts: Celery in place) or by a worker once the look is committed."""
    if jobs.runs_inline():
        look_compute(look_id=look_id)
    else:
        enqueue_on_commit("reports.tasks.holdout_look_task", [look_id])


def look_compute(*, look_id: int) -> str:
    """Compute a look's result once and store it on the look; return the look's status.

    Safe to run twice: a look already computed is left alone (its stored result is the look).
    Only the test set's conversations and only the declared version's labels are compared.
    """
    look = HoldoutLook.objects.select_related("declaration__run", "split", "study__instrument", "study__section").filter(
        pk=look_id
    ).first()
    if look is None:
        return "gone"
    if look.status == ReportStatus.READY:
        return look.status

    def progress(fraction: float, stage: str) -> None:
        HoldoutLook.objects.filter(pk=look_id, status=ReportStatus.COMPUTING).update(
            progress=max(0.0, min(1.0, fraction)), stage=stage[:200]
        )

    declaration = look.declaration
    test = selectors.split_conversation_ids(look.split, HoldoutPart.TEST)
    progress(0.02, "reading the test set")
    try:
        name, label = selectors.version_label(declaration.run, declaration.source)
        payload = compute_judges(look.study, declaration.run_id, look.na_policy, progress, conversation_ids=test, only=name)
    except Exception as exc:  # the page shows the error; evaluating again retries this same look
        HoldoutLook.objects.filter(pk=look_id).update(status=ReportStatus.FAILED, error=f"{type(exc).__name__}: {exc}"[:2000],
                                                      stage="failed")
        raise
    if declaration.source != ENSEMBLE:
        payload["warnings"] = []  # the run's warnings are about its ensemble, not one judge
    payload["holdout"] = {
        "set": "test",
        "split": look.split.number,
        "n_conversations": len(test),
        "look": look.number,
        "version": declaration.label,
        "note": (f"Test set of split {look.split.number}: {len(test)} held-out conversations, evaluated for {label}, "
                 f"declared final by {_who(declaration.declared_by) or 'a former user'}. Look {look.number} at this test set."),
    }
    HoldoutLook.objects.filter(pk=look_id).exclude(status=ReportStatus.READY).update(
        payload=json.loads(json.dumps(payload)), status=ReportStatus.READY, progress=1.0, stage="", error="",
        finished_at=timezone.now(),
    )
    return ReportStatus.READY
