"""Reads for the reports: who may see a study's results, and its ratings in long form."""

from __future__ import annotations

import hashlib
from collections.abc import Collection

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db.models import Count, Max, Q
from django.http import Http404

from annotation.models import (
    ActivePlan,
    AssignmentStatus,
    ConsensusLabel,
    Rating,
    RatingStatus,
    SamplingPlan,
    Study,
)
from annotation.studies.selectors import study_access_for_user, study_list_for_user
from corpus.models import InstrumentKind, Scale


def study_list_for_reports(user: AbstractBaseUser | AnonymousUser):  # type: ignore[no-untyped-def]
    """Return the studies whose results the user may read: those they manage (never as a rater)."""
    return study_list_for_user(user).order_by("-created_at")


def study_get_for_reports(user: AbstractBaseUser | AnonymousUser, *, pk: int) -> Study:
    study = study_access_for_user(user).select_related("section").filter(pk=pk).first()
    if study is None:
        raise Http404("not found")
    return study


def reliability_na_default(study: Study) -> str:
    """Return how the reliability report treats N/A answers unless the reader chooses.

    AMHART reports agreement on yes/no among applicable ratings (N/A excluded); the VERA-MH
    clinician study counts Not Relevant as a label of its own (a clinical judgment that the
    dimension does not apply), which is how its published reliability (alpha 0.77) comes out.
    """
    return "category" if study.instrument.kind == InstrumentKind.FLOW else "exclude"


def reliability_na(study: Study, requested: str | None) -> str:
    """Return the N/A policy asked for (``exclude`` or ``category``), else the study's default."""
    return requested if requested in ("exclude", "category") else reliability_na_default(study)


def _submitted(study: Study):  # type: ignore[no-untyped-def]
    return (
        Rating.objects.filter(assignment__study=study, assignment__is_calibration=False, assignment__is_gold=False,
                              status=RatingStatus.SUBMITTED)
        .exclude(assignment__status=AssignmentStatus.WITHDRAWN)
        .select_related("assignment__conversation", "assignment__rater", "assignment__external_rater")
    )


def study_data_version(study: Study) -> str:
    """Return a fingerprint that changes whenever a rating or consensus label changes."""
    ratings = _submitted(study).aggregate(n=Count("id"), last=Max("updated_at"), rev=Max("revision"))
    consensus = ConsensusLabel.objects.filter(study=study).aggregate(n=Count("id"), last=Max("updated_at"))
    blob = f"{study.pk}|{ratings}|{consensus}|{study.reliability_threshold}"
    return hashlib.sha256(blob.encode()).hexdigest()[:32]


def study_ratings_long(
    study: Study, *, part: str = "main", conversation_ids: Collection[int] | None = None
) -> list[tuple[str, str, str, str]]:
    """Return submitted ratings as (unit, rater, item, label): unit = conversation code.

    For a question flow the items are the dimensions and the labels the derived dimension
    labels. Free-text answers are left out. Rows come in the order the ratings were stored
    (an imported file: its row order), the order ``python -m stats agreement`` reads a file
    in: the bootstrap draws conversations by their order of appearance, so the same ratings
    in the same order give the same intervals in the app and on the command line.
    ``conversation_ids``: only these conversations are read (a development or test set).
    """
    rows: list[tuple[str, str, str, str]] = []
    text_keys: set[str] = set()
    if part == "section" and study.section is not None:
        text_keys = set(study.section.items.filter(scale=Scale.TEXT).values_list("key", flat=True))
    submitted = _submitted(study)
    if conversation_ids is not None:
        submitted = submitted.filter(assignment__conversation_id__in=list(conversation_ids))
    for rating in submitted.order_by("pk"):
        unit = rating.assignment.conversation.code
        rater = rating.assignment.rater_name  # a username or an external rater's label
        if part == "main" and study.instrument.kind == InstrumentKind.FLOW:
            for dimension, label in (rating.derived or {}).get("labels", {}).items():
                rows.append((unit, rater, str(dimension), str(label)))
            continue
        for key, entry in rating.answers.get(part, {}).items():
            if key in text_keys or not entry.get("value"):
                continue
            rows.append((unit, rater, key, entry["value"]))
    return rows


def study_time_per_rater(study: Study) -> dict[str, list[int]]:
    times: dict[str, list[int]] = {}
    for rating in _submitted(study):
        times.setdefault(rating.assignment.rater_name, []).append(rating.assignment.time_spent_seconds)
    return times


def study_consensus_map(study: Study, *, conversation_ids: Collection[int] | None = None) -> dict[tuple[str, str], str]:
    """Return the human reference label per (conversation code, item) where one exists (of these conversations)."""
    qs = ConsensusLabel.objects.filter(study=study).exclude(label="")
    if conversation_ids is not None:
        qs = qs.filter(conversation_id__in=list(conversation_ids))
    rows = qs.values_list("conversation__code", "item_key", "label")
    return {(code, item): label for code, item, label in rows}


# user_llm: the short name a ratings file gives (kept when a transcript fills the conversation later),
# so one study groups its conversations under one name per user-agent.
USER_MODEL_KEYS = ("user_llm", "user_model", "user_agent_model", "user_agent")


def user_model_name(metadata: dict) -> str | None:
    """Return the user-agent's model name from a conversation's metadata, and nothing else.

    A simulated conversation records its user-agent as a mapping (model, API base, parameters):
    reports name the model only, never the endpoint it was reached at.
    """
    for key in USER_MODEL_KEYS:
        value = metadata.get(key)
        if isinstance(value, dict):
            value = value.get("model")
        if value not in (None, "") and not isinstance(value, dict | list):
            return str(value)
    return None


def study_section_with_design(study: Study) -> list[dict]:
    """Return each submitted rating's section answers with the persona design and user-agent."""
    out = []
    for rating in _submitted(study).select_related("assignment__conversation__persona"):
        conversation = rating.assignment.conversation
        metadata = conversation.metadata or {}
        out.append(
            {
                "conversation": conversation.code,
                "user_model": user_model_name(metadata),
                "design": (conversation.persona.design if conversation.persona else {}) or {},
                "answers": {k: v.get("value") for k, v in rating.answers.get("section", {}).items()},
            }
        )
    return out


def study_consensus_rows(study: Study) -> list[dict]:
    """Return human consensus labels with the design columns scorecards need.

    Only the main instrument's items (never the study section); a label without consensus
    (unresolved, too few ratings) is None. Each row also carries ``provenance`` and
    ``provisional``; calibration conversations are left out.
    """
    domains = dict(study.instrument.items.values_list("key", "domain"))
    calibration = set(study.study_conversations.filter(is_calibration=True).values_list("conversation_id", flat=True))
    qs = (
        ConsensusLabel.objects.filter(study=study)
        .exclude(item_key__startswith="section:")
        .exclude(conversation_id__in=calibration)
        .select_related("conversation__persona", "conversation__target")
    )
    return [
        {**design_row(c.conversation, c.item_key, c.label, domains), "provenance": c.provenance, "provisional": c.provisional}
        for c in qs
    ]


def study_inclusion_weights(study: Study) -> tuple[dict[str, float] | None, dict]:
    """Return each main conversation's weight 1/π (by code) under the study's sampling plan, and what to say.

    None (unweighted) when the study has no plan, or when a main conversation has no recorded inclusion
    probability; the second value says which, for the page, the API and the CSV.
    """
    plan = SamplingPlan.objects.filter(study=study).select_related("judge_run").first()
    active = ActivePlan.objects.filter(study=study).first() if plan is None else None
    if active is not None:
        links = list(study.study_conversations.filter(is_calibration=False).values_list("conversation__code", "inclusion_prob"))
        if links and all(pi for _, pi in links):
            return {code: 1 / pi for code, pi in links}, {
                "weighted": True,
                "weights": "inverse inclusion probabilities (Hájek)",
                "note": (f"Weighted by the study's active sampling (judge run #{active.judge_run_id}, batches whose chances "
                         "followed the judges' uncertainty): each rated conversation counts 1/π times, π its recorded "
                         "chance in its batch (Hájek estimator; Särndal, Swensson & Wretman 1992, sec. 5.7). The "
                         "unweighted figures, which over-represent the conversations the judges found hard, are beside "
                         "them; the active sampling page gives the estimate that also uses the judges' labels."),
                "plan": {"method": "active_sampling", "n": len(links), "population": active.population,
                         "judge_run": active.judge_run_id},
            }
    if plan is None:
        return None, {"weighted": False, "weights": "equal (unweighted)",
                      "note": "Unweighted: every rated conversation counts the same (this study has no sampling plan)."}
    links = list(study.study_conversations.filter(is_calibration=False).values_list("conversation__code", "inclusion_prob"))
    missing = [code for code, pi in links if not pi]
    if missing:
        return None, {"weighted": False, "weights": "equal (unweighted)",
                      "note": f"Unweighted: {len(missing)} of the study's conversations have no recorded inclusion probability, "
                              "so the sampling plan cannot be undone; every rated conversation counts the same."}
    return {code: 1 / pi for code, pi in links}, {
        "weighted": True,
        "weights": "inverse inclusion probabilities (Hájek)",
        "note": (f"Weighted by the study's sampling plan ({plan.get_method_display().lower()}, {plan.n} of the "
                 f"{plan.population} conversations of judge run #{plan.judge_run_id}): each rated conversation counts "
                 "1/π times, π its chance of being drawn, so the scores estimate the run's conversations, not the "
                 "sample (Hájek estimator; Särndal, Swensson & Wretman 1992, sec. 5.7). The unweighted figures, "
                 "which describe the sample as drawn, are beside them."),
        "plan": {"method": plan.method, "method_label": plan.get_method_display(), "n": plan.n, "population": plan.population,
                 "judge_run": plan.judge_run_id},
    }


def study_text_answers(study: Study, keys: list[str]) -> list[dict]:
    """Return the submitted free-text answers of the main instrument's text items, per conversation."""
    wanted = set(keys)
    out = []
    for rating in _submitted(study).select_related("assignment__conversation__target").order_by(
        "assignment__conversation__code", "assignment__rater__username"
    ):
        conversation = rating.assignment.conversation
        target = conversation.target
        for key, entry in (rating.answers.get("main") or {}).items():
            if key in wanted and str(entry.get("value") or "").strip():
                out.append({
                    "chatbot": f"{target.code} · {target.model}" if target else "(unknown)",
                    "conversation": conversation.code, "item": key,
                    "rater": rating.assignment.rater.get_username(), "text": str(entry["value"]).strip(),
                })
    return out


def consensus_status_on(study: Study, keys: list[str], *, conversation_ids: Collection[int] | None = None) -> dict[str, int]:
    """Return how many consensus labels of these items exist per provenance, and how many are provisional."""
    qs = ConsensusLabel.objects.filter(study=study, item_key__in=keys)
    if conversation_ids is not None:
        qs = qs.filter(conversation_id__in=list(conversation_ids))
    rows = qs.values_list("provenance", "provisional")
    out: dict[str, int] = {}
    for provenance, provisional in rows:
        out[provenance] = out.get(provenance, 0) + 1
        out["provisional"] = out.get("provisional", 0) + bool(provisional)
    return out


def consensus_resolves_disagreement(study: Study) -> bool:
    """Tell whether any consensus label was reached despite dissent (majority, tie-break, adjudication).

    If none was, every consensus label is one all its raters gave, so each rater agrees with
    the consensus by construction (two raters per conversation, ties unresolved).
    """
    return (
        ConsensusLabel.objects.filter(study=study, disagreement__gt=0)
        .exclude(label="")
        .exclude(item_key__startswith="section:")
        .exists()
    )


def study_completion(study: Study) -> dict[str, int]:
    """Return the study's active (non-calibration) assignments and how many are submitted."""
    qs = study.assignments.filter(is_calibration=False, is_gold=False).exclude(status=AssignmentStatus.WITHDRAWN)
    counts = qs.aggregate(total=Count("id"), submitted=Count("id", filter=Q(status=AssignmentStatus.SUBMITTED)))
    return {"total": counts["total"] or 0, "submitted": counts["submitted"] or 0}


def judge_runs_for_study(study: Study):  # type: ignore[no-untyped-def]
    """Return judge runs that labelled at least one conversation of the study, newest first."""
    from judging.models import JudgeRun

    conversation_ids = study.study_conversations.values_list("conversation_id", flat=True)
    return JudgeRun.objects.filter(results__conversation_id__in=conversation_ids).distinct().order_by("-created_at")


def judge_run_places(study: Study) -> dict[int, int]:
    """Return each judge run of the study by id -> its place among the study's runs, oldest first (1, 2, ...).

    What a study's files name a run by (``figures/judges_run1.json``, study.json, METHODS.md): a
    study rebuilt from its bundle in another database gets other ids but the same places.
    """
    return {pk: place for place, pk in enumerate(judge_runs_for_study(study).order_by("pk").values_list("pk", flat=True), start=1)}


def study_used_conversation_ids(study: Study) -> list[int]:
    """Return the ids of the conversations a study uses: those it holds, and every conversation of the
    judge run its sampling or active plan draws from (the plan's population, which its bundle needs to
    be rebuilt). Its exports and bundle carry nothing of any other conversation (issue 30)."""
    from judging.models import JudgeResult

    held = set(study.study_conversations.values_list("conversation_id", flat=True))
    chosen = [pk for pk in (
        SamplingPlan.objects.filter(study=study).values_list("judge_run_id", flat=True).first(),
        ActivePlan.objects.filter(study=study).values_list("judge_run_id", flat=True).first(),
    ) if pk]
    if chosen:
        held |= set(JudgeResult.objects.filter(run_id__in=chosen).values_list("conversation_id", flat=True).distinct())
    return sorted(held)


def judge_rows_for_study(
    study: Study, run_id: int, *, conversation_ids: Collection[int] | None = None
) -> tuple[list[tuple[str, str, str, str | None]], list[tuple[str, str, str, str | None]], list[str]]:
    """Return (judge rows, ensemble rows, warnings) for the study's conversations in a run.

    Rows are (conversation code, judge name, item, label); a missing judge label is None, so
    it counts as missing (never as "no"). Only instance 0 of each judge is compared.
    ``conversation_ids``: only these of the study's conversations (a development or test set).
    """
    from judging.ensemble import ensemble_kind
    from judging.models import EnsembleLabel, JudgeLabel
    from judging.sources import run_panel

    run = judge_runs_for_study(study).filter(pk=run_id).first()
    if run is None:
        raise Http404("no such judge run for this study")
    main = study.study_conversations.filter(is_calibration=False)
    if conversation_ids is not None:
        main = main.filter(conversation_id__in=list(conversation_ids))
    conversation_ids = list(main.values_list("conversation_id", flat=True))
    kind = ensemble_kind(run.mode)
    judges = [
        (code, name, item, label or None)
        for code, name, item, label in JudgeLabel.objects.filter(
            result__run=run, result__instance=0, kind=kind, result__conversation_id__in=conversation_ids
        ).values_list("result__conversation__code", "result__judge__name", "item_key", "label")
    ]
    # A run of one judge has its judge's labels as run labels: they are that judge, not a second one.
    single = len(run_panel(run)) < 2
    ensemble = [] if single else [
        (code, "ensemble", item, label or None)
        for code, item, label in EnsembleLabel.objects.filter(run=run, conversation_id__in=conversation_ids).values_list(
            "conversation__code", "item_key", "label"
        )
    ]
    return judges, ensemble, list(run.warnings or [])


def evidence_cell(turns: Collection[int] | None) -> str:
    """Return cited turns as one CSV cell: "3;5" (empty: none)."""
    return ";".join(str(t) for t in (turns or []))


def study_ratings_export_rows(study: Study) -> list[list]:
    """Return ratings_long.csv's rows: unit, rater, part, item, label, note, submitted_at, time_spent_seconds, evidence_turns.

    ``evidence_turns``: the turns the rater cited for the answer ("3;5"; turn n is the n-th
    message of the conversation, as judges number them); a question flow's derived rows carry
    the union of their dimension's questions. Whole-form evidence is one more row per rating:
    part ``form``, item ``evidence``, empty label and note.
    """
    from annotation.rating.selectors import FORM_KEY, rating_evidence_by_item

    rows = []
    flow = study.instrument.kind == InstrumentKind.FLOW
    for rating in _submitted(study).order_by("assignment__conversation__code", "assignment__rater__username", "assignment__external_rater__label"):
        rating.assignment.study = study  # one instrument for every rating: no query per rating
        unit = rating.assignment.conversation.code
        rater = rating.assignment.rater_name
        when = rating.submitted_at.isoformat() if rating.submitted_at else ""
        spent = rating.assignment.time_spent_seconds
        for part in ("main", "section"):
            for key, entry in (rating.answers.get(part) or {}).items():
                rows.append([unit, rater, part, key, entry.get("value", ""), entry.get("note", ""), when, spent,
                             evidence_cell(entry.get("evidence"))])
        by_item = rating_evidence_by_item(rating) if flow or rating.answers.get("form_evidence") else {}
        for dimension, label in ((rating.derived or {}).get("labels") or {}).items():
            rows.append([unit, rater, "derived", dimension, label, "", when, spent, evidence_cell(by_item.get(dimension))])
        if by_item.get(FORM_KEY):
            rows.append([unit, rater, "form", "evidence", "", "", when, spent, evidence_cell(by_item[FORM_KEY])])
    return rows


def run_get_for_reports(user: AbstractBaseUser | AnonymousUser, *, pk: int):  # type: ignore[no-untyped-def]
    from judging.selectors import run_get_for_user

    return run_get_for_user(user, pk=pk)


def run_ensemble_rows(run) -> list[dict]:  # type: ignore[no-untyped-def]
    """Return a judge run's ensemble labels with each conversation's chatbot and persona design.

    No-majority items have label None (missing, never scored). Conversations flagged by the
    integrity checks are left out: a flagged conversation is never scored.
    """
    from corpus.models import Conversation
    from judging.models import EnsembleLabel

    domains = dict(run.instrument.items.values_list("key", "domain")) if run.instrument_id else {}
    labels = EnsembleLabel.objects.filter(run=run).exclude(conversation__integrity_ok=False)
    # Each conversation (with its persona and chatbot) read once, not once per item: a run of
    # 10,000 conversations has 140,000 ensemble labels.
    conversations = Conversation.objects.filter(pk__in=labels.values("conversation_id")).select_related("persona", "target")
    by_id = {c.pk: c for c in conversations}
    return [design_row(by_id[cid], item_key, label, domains) for cid, item_key, label in labels.values_list("conversation_id", "item_key", "label")]


def run_ensemble_rows_with_status(run) -> tuple[list[dict], dict[str, int], int]:  # type: ignore[no-untyped-def]
    """Return a run's ensemble rows, the provenance counts of those without a label, and how
    many conversations the integrity checks flagged (left out, never scored)."""
    from judging.models import EnsembleLabel

    rows = run_ensemble_rows(run)
    blank = EnsembleLabel.objects.filter(run=run, label="").exclude(conversation__integrity_ok=False)
    provenances = dict(blank.values_list("provenance").annotate(n=Count("id")).values_list("provenance", "n"))
    flagged = EnsembleLabel.objects.filter(run=run, conversation__integrity_ok=False).values("conversation_id").distinct().count()
    return rows, provenances, flagged


def design_row(conversation, item_key: str, label: str, domains: dict[str, str]) -> dict:  # type: ignore[no-untyped-def]
    """Return one label with its conversation's chatbot, persona design, run index and domain."""
    design = (conversation.persona.design if conversation.persona else {}) or {}
    target = conversation.target
    run = conversation.run_index if conversation.run_index is not None else (conversation.metadata or {}).get("repetition", 0)
    return {
        "conversation": conversation.code,
        "chatbot": f"{target.code} · {target.model}" if target else "(unknown)",
        "persona": conversation.persona.name if conversation.persona else "(none)",
        "diagnosis": str(design.get("concern") or design.get("diagnosis") or "—"),
        "severity": str(design.get("severity") or "—"),
        "sex": str(design.get("sex") or "—"),
        "risk": str(design.get("risk") or "—"),
        "run": run,
        "item": item_key,
        "dimension": item_key,
        "domain": domains.get(item_key, item_key),
        "label": label or None,
    }
