"""Reads of judges, runs and labels, with the access rules (checked here, once per entity).

Researchers and admins manage judges and runs; coordinators may look; clinicians (raters) and
users without a role never see anything of the judging app: judge output would unblind them.
Everything answers 404 to them, so nothing leaks that a run exists.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.core.exceptions import PermissionDenied
from django.db.models import Count, Prefetch, Q, QuerySet, Sum
from django.http import Http404
from django.utils import timezone

from core.roles import Role, has_any_role, user_roles
from core.visibility import visible
from corpus.conversations.collections import collection_get
from corpus.models import Conversation, Item, Message
from judging.errors import JudgingError
from judging.models import (
    EnsembleLabel,
    Judge,
    JudgeLabel,
    JudgeResult,
    JudgeRun,
    LabelKind,
    PromptTemplate,
    ResultStatus,
)
from simulation.preflight import ErrorGroup, error_groups

VIEW_ROLES = frozenset({Role.COORDINATOR, Role.RESEARCHER, Role.ADMIN})
MANAGE_ROLES = frozenset({Role.RESEARCHER, Role.ADMIN})
User = AbstractBaseUser | AnonymousUser


def can_view_judging(user: User) -> bool:
    return has_any_role(user, VIEW_ROLES)


def can_manage_judging(user: User) -> bool:
    return has_any_role(user, MANAGE_ROLES)


def require_view(user: User) -> None:
    if not can_view_judging(user):
        raise Http404("not found")


def require_manage(user: User) -> None:
    if not can_manage_judging(user):
        raise Http404("not found")


# -- judges and prompts ------------------------------------------------------------------------


def judge_list_for_user(user: User) -> QuerySet[Judge]:
    require_view(user)
    return Judge.objects.select_related("instrument", "prompt").annotate(n_runs=Count("runs")).order_by("name")


def judge_get(user: User, *, pk: int) -> Judge:
    require_view(user)
    try:
        return Judge.objects.select_related("instrument", "prompt").get(pk=pk)
    except Judge.DoesNotExist as exc:
        raise Http404("not found") from exc


def judges_by_reference(references: list[str]) -> list[Judge]:
    """Return judges named by id or by name, in the order given; raise on an unknown one."""
    found: list[Judge] = []
    unknown: list[str] = []
    for ref in references:
        ref = str(ref).strip()
        judge = Judge.objects.filter(pk=int(ref)).first() if ref.isdigit() else None
        judge = judge or Judge.objects.filter(name=ref).first()
        if judge is None:
            unknown.append(ref)
        else:
            found.append(judge)
    if unknown:
        raise JudgingError(f"unknown judge(s): {', '.join(unknown)}")
    return found


def prompt_list_for_user(user: User) -> QuerySet[PromptTemplate]:
    require_view(user)
    return PromptTemplate.objects.annotate(n_judges=Count("judges")).order_by("key", "-version")


def prompt_get(user: User, *, pk: int) -> PromptTemplate:
    require_view(user)
    try:
        return PromptTemplate.objects.get(pk=pk)
    except PromptTemplate.DoesNotExist as exc:
        raise Http404("not found") from exc


# -- which conversations a run judges ------------------------------------------------------------


def conversation_ids_for_judging(
    *,
    batch_ids: list[str] | None = None,
    persona_set_ids: list[int] | None = None,
    study_id: int | None = None,
    codes: list[str] | None = None,
    include_flagged: bool = False,
    user: Any = None,
) -> tuple[list[int], dict[str, Any]]:
    """Return the conversation ids of a selection and the selection as the run records it.

    The criteria combine (AND). A simulation batch is the conversations whose metadata carries
    its ``batch_id`` or ``batch_code``. Conversations flagged by the integrity checks are left out unless
    ``include_flagged``: a flagged conversation is never scored. A study must be one ``user`` may
    read (None: an operator's command); one that exists but is not answers like one that does not.
    So must every conversation (core.visibility): the others are left out, and a code the user
    may not read is refused like an unknown one.
    """
    if not (batch_ids or persona_set_ids or study_id or codes):
        raise JudgingError("choose conversations: a batch, a persona set, a study or codes")
    # Only conversations the user may read (core.visibility): a run of someone else's
    # conversations would show them on the run's pages. One not readable answers like an unknown one.
    qs = Conversation.objects.all() if user is None else visible(Conversation.objects.all(), user)
    if batch_ids:
        numbers = [int(b) for b in batch_ids if str(b).strip().isdigit()]
        names = [str(b).strip() for b in batch_ids]
        qs = qs.filter(Q(metadata__batch_id__in=numbers) | Q(metadata__batch_code__in=names))
    if persona_set_ids:
        qs = qs.filter(persona__persona_set_id__in=persona_set_ids)
    if study_id:
        studies = collection_get("study")
        if studies is None or not studies.choices(user).filter(pk=study_id).exists():
            raise JudgingError(f"no study {study_id} among the studies you can read")
        qs = qs.filter(studies.conversation_filter(study_id))
    if codes:
        codes = [c.strip() for c in codes if c.strip()]
        known = set(qs.filter(code__in=codes).values_list("code", flat=True))
        unknown = [c for c in codes if c not in known]
        if unknown:
            raise JudgingError(f"unknown conversation code(s): {', '.join(unknown)}")
        qs = qs.filter(code__in=codes)
    # A conversation known only from a ratings file has no transcript to judge yet.
    qs = qs.exclude(pk__in=Conversation.objects.filter(message_count=0, metadata__transcript_missing=True).values("pk"))
    matched = qs.distinct().count()
    if not include_flagged:
        qs = qs.exclude(integrity_ok=False)
    ids = sorted(set(qs.values_list("id", flat=True)))
    record = {
        "batch_ids": [str(b) for b in batch_ids or []],
        "persona_set_ids": list(persona_set_ids or []),
        "study_id": study_id,
        "codes": list(codes or []),
        "include_flagged": include_flagged,
        "matched": matched,
        "flagged_left_out": matched - len(ids),
        "conversations": len(ids),
    }
    return ids, record


# -- runs -----------------------------------------------------------------------------------


def run_list_for_user(user: User) -> QuerySet[JudgeRun]:
    require_view(user)
    return visible(JudgeRun.objects.all(), user).select_related("instrument").prefetch_related("judges").order_by("-created_at", "-id")


def run_get_for_user(user: User, *, pk: int, act: bool = False) -> JudgeRun:
    """Return a run the user may read; with ``act``, one they may also cancel or retry (else 403)."""
    require_view(user)
    try:
        run = visible(JudgeRun.objects.all(), user).select_related("instrument", "created_by").get(pk=pk)
    except JudgeRun.DoesNotExist as exc:
        raise Http404("not found") from exc
    if act:
        run_require_act(user, run)
    return run


def run_require_act(user: User, run: JudgeRun) -> None:
    """Raise PermissionDenied (403) unless the user may cancel or retry ``run``."""
    if not run_may_act(user, run):
        raise PermissionDenied(
            "only the researcher who started this run, the members of its study or an administrator may cancel or retry it"
        )


def run_may_act(user: User, run: JudgeRun) -> bool:
    """Return whether the user may cancel or retry the run: its creator, an admin, or a member of its study.

    Researchers read every run (the corpus is theirs to read), but acting on one stops or spends
    someone else's work: that is for whoever started it, the study it was chosen from, or an admin.
    """
    if not can_manage_judging(user):
        return False
    if Role.ADMIN in user_roles(user) or (run.created_by_id is not None and run.created_by_id == user.pk):
        return True
    study_id = (run.selection or {}).get("study_id")
    studies = collection_get("study")
    return bool(study_id) and studies is not None and studies.choices(user).filter(pk=study_id).exists()


@dataclass
class JudgeSummary:
    judge_id: int
    name: str
    provider: str
    model: str
    prompt: str
    done: int = 0
    failed: int = 0
    open: int = 0
    calls: int = 0
    cached: int = 0
    tokens: int = 0
    cost: float = 0.0
    failed_calls: int = 0


@dataclass
class RunOverview:
    run: JudgeRun
    judges: list[JudgeSummary]
    failures: list[JudgeResult]
    n_failures: int
    ensemble: dict[str, int] = field(default_factory=dict)  # provenance -> count


def run_stalled_count(run: JudgeRun) -> int:
    """Return how many of a going run's results are stalled: running, but their lease ran out."""
    if run.is_finished:
        return 0
    from judging.leases import stalled_results

    return len(stalled_results(run.pk))


# The pace behind "about 6 minutes left": judgements finished in this recent window (the whole
# run's average would count the queue's wait and the launch check as slowness).
PACE_WINDOW = timedelta(minutes=5)


def run_seconds_left(run: JudgeRun, *, now: datetime | None = None) -> float | None:
    """Return the estimated seconds left of a going run from its recent pace (None: no estimate yet)."""
    if run.is_finished or not run.started_at:
        return None
    now = now or timezone.now()
    finished = run.n_done + run.n_failed
    left = max(run.n_total - finished, 0)
    if not finished or not left:
        return None
    since = max(now - PACE_WINDOW, run.started_at)
    window = (now - since).total_seconds()
    recent = run.results.filter(finished_at__gte=since).count()
    if recent and window > 0:
        return left / (recent / window)
    elapsed = (now - run.started_at).total_seconds()
    return left * elapsed / finished if elapsed > 0 else None


def run_overview(run: JudgeRun, *, failures_limit: int = 50) -> RunOverview:
    """Return the per-judge summary, the first failures and the ensemble counts (4 queries)."""
    snapshots = run.config.get("judges", {})
    summaries = {
        int(pk): JudgeSummary(int(pk), s["name"], s["provider"], s["model"], s.get("prompt", ""))
        for pk, s in sorted(snapshots.items(), key=lambda kv: kv[1]["position"])
    }
    rows = run.results.values("judge_id").annotate(
        done=Count("id", filter=Q(status=ResultStatus.DONE)),
        failed=Count("id", filter=Q(status=ResultStatus.FAILED)),
        open=Count("id", filter=Q(status__in=[ResultStatus.PENDING, ResultStatus.RUNNING])),
        calls=Sum("n_calls"),
        failed_calls=Sum("n_failed_calls"),
        cached=Sum("n_cached"),
        tokens=Sum("prompt_tokens") + Sum("completion_tokens"),
        cost=Sum("cost_usd"),
    )
    for row in rows:
        s = summaries.get(row["judge_id"])
        if s is not None:
            s.done, s.failed, s.open = row["done"], row["failed"], row["open"]
            s.calls, s.cached, s.tokens = row["calls"] or 0, row["cached"] or 0, row["tokens"] or 0
            s.failed_calls = row["failed_calls"] or 0
            s.cost = float(row["cost"] or 0)
    failed = run.results.filter(status=ResultStatus.FAILED)
    failures = list(failed.select_related("judge", "conversation").order_by("conversation_id", "judge_id", "instance")[:failures_limit])
    n_failures = run.n_failed
    ensemble = dict(run.ensemble.values_list("provenance").annotate(n=Count("id")).values_list("provenance", "n"))
    return RunOverview(run, list(summaries.values()), failures, n_failures, ensemble)


def run_conversations(run: JudgeRun) -> QuerySet[Conversation]:
    """Return the run's conversations with counts of finished results and open ensemble votes."""
    return (
        Conversation.objects.filter(judge_results__run=run)
        .select_related("persona", "target")
        .annotate(
            n_results=Count("judge_results", filter=Q(judge_results__run=run), distinct=True),
            n_failed=Count(
                "judge_results",
                filter=Q(judge_results__run=run, judge_results__status=ResultStatus.FAILED),
                distinct=True,
            ),
        )
        .order_by("id")
        .distinct()
    )


def no_majority_counts(run: JudgeRun, conversation_ids: list[int]) -> dict[int, int]:
    """Return, per conversation, how many ensemble labels have no majority."""
    rows = (
        EnsembleLabel.objects.filter(run=run, conversation_id__in=conversation_ids, label="")
        .values("conversation_id")
        .annotate(n=Count("id"))
    )
    return {row["conversation_id"]: row["n"] for row in rows}


# -- one conversation, every judge side by side ------------------------------------------------


@dataclass
class Cell:
    """One judge instance's label of one item (None: that result has no such label)."""

    label: JudgeLabel | None


@dataclass
class ItemRow:
    key: str
    title: str
    cells: list[Cell]
    ensemble: EnsembleLabel | None


@dataclass
class ConversationJudgements:
    run: JudgeRun
    conversation: Conversation
    columns: list[JudgeResult]  # one per judge instance, in panel order
    rows: list[ItemRow]
    questions: list[tuple[JudgeResult, list[JudgeLabel]]]  # answered flow questions per column


def conversation_judgements(user: User, *, run: JudgeRun, code: str) -> ConversationJudgements:
    """Return each judge's labels, rationale and evidence for one conversation of a run.

    Never for raters: it shows judge output. A fixed number of queries whatever the size.
    """
    require_view(user)
    try:
        conversation = (
            Conversation.objects.select_related("persona__persona_set", "target")
            .prefetch_related(Prefetch("messages", queryset=Message.objects.order_by("turn_index")))
            .get(code=code, pk__in=run.results.values("conversation_id"))
        )
    except Conversation.DoesNotExist as exc:
        raise Http404("not found") from exc
    snapshots = run.config.get("judges", {})
    order = {int(pk): s["position"] for pk, s in snapshots.items()}
    columns = sorted(
        run.results.filter(conversation=conversation)
        .select_related("judge")
        .prefetch_related(Prefetch("labels", queryset=JudgeLabel.objects.order_by("kind", "position"))),
        key=lambda r: (order.get(r.judge_id, 99), r.instance),
    )
    kind = LabelKind.ITEM if run.mode == "checklist" else LabelKind.DIMENSION
    titles: dict[str, str] = {}
    if run.mode == "checklist":
        for key, number, text in Item.objects.filter(instrument_id=run.instrument_id).order_by("position").values_list("key", "number", "text"):
            titles[key] = f"{number}. {text}" if number else text
    by_result: dict[int, dict[str, JudgeLabel]] = defaultdict(dict)
    questions: dict[int, list[JudgeLabel]] = defaultdict(list)
    keys: dict[str, int] = {}
    for result in columns:
        for label in result.labels.all():
            if label.kind == kind:
                by_result[result.pk][label.item_key] = label
                keys.setdefault(label.item_key, label.position)
            elif label.kind == LabelKind.QUESTION:
                questions[result.pk].append(label)
    ensemble = {e.item_key: e for e in EnsembleLabel.objects.filter(run=run, conversation=conversation)}
    for key, e in ensemble.items():
        keys.setdefault(key, e.position)
    rows = [
        ItemRow(
            key=key,
            title=titles.get(key, key),
            cells=[Cell(by_result[r.pk].get(key)) for r in columns],
            ensemble=ensemble.get(key),
        )
        for key in sorted(keys, key=lambda k: keys[k])
    ]
    paths = [(r, questions[r.pk]) for r in columns if questions.get(r.pk)]
    return ConversationJudgements(run, conversation, columns, rows, paths)


def run_error_groups(run: JudgeRun) -> list[ErrorGroup]:
    """Return the failures of a run grouped by error kind, most frequent first (two queries)."""
    return error_groups(run.results.filter(status=ResultStatus.FAILED))
