"""Reads for study coordinators: their studies, the assignment design and the audit trail.

Coordinators are not blinded: they see chatbot codes, personas and who rated what. Access is
checked here, once per entity: a study is managed by its active coordinators (with the
coordinator role) and by admins; a researcher member of a study may read it; everyone else
gets 404, so nobody learns which studies exist. Every function runs a fixed number of queries,
whatever the size of the study.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.core.paginator import Page, Paginator
from django.db.models import Count, Exists, IntegerField, OuterRef, QuerySet, Subquery
from django.db.models.functions import Coalesce
from django.http import Http404

from annotation.models import (
    Assignment,
    AssignmentStatus,
    ConversationFlag,
    FlagStatus,
    MemberRole,
    Rating,
    Study,
    StudyConversation,
    StudyEvent,
    StudyMembership,
)
from annotation.studies.assignment import pair_overlap
from core.roles import Role, has_any_role, user_roles
from corpus.models import Conversation

# Fewer shared conversations than this and a pair's agreement cannot be estimated usefully.
MIN_PAIR_OVERLAP = 5
AnyUser = AbstractBaseUser | AnonymousUser


def can_create_studies(user: AnyUser) -> bool:
    """Return whether the user may open the study list and create studies."""
    return has_any_role(user, {Role.COORDINATOR, Role.ADMIN})


def _subcount(qs: QuerySet) -> Coalesce:
    counted = qs.filter(study=OuterRef("pk")).order_by().values("study").annotate(n=Count("pk")).values("n")
    return Coalesce(Subquery(counted, output_field=IntegerField()), 0)


def coordinator_study_list(user: AnyUser, *, write: bool = True) -> QuerySet[Study]:
    """Return the studies the user coordinates (admins: all), with counts for the list page.

    With ``write=False`` a researcher also gets the studies they are a researcher member of.
    """
    roles = user_roles(user)
    allowed = [MemberRole.COORDINATOR] if Role.COORDINATOR in roles else []
    if not write and Role.RESEARCHER in roles:
        allowed.append(MemberRole.RESEARCHER)
    if Role.ADMIN not in roles and not allowed:
        raise Http404("not found")
    qs = Study.objects.select_related("instrument", "section").annotate(
        n_conversations=_subcount(StudyConversation.objects.all()),
        n_raters=_subcount(StudyMembership.objects.filter(role=MemberRole.RATER, active=True)),
        n_assignments=_subcount(Assignment.objects.exclude(status=AssignmentStatus.WITHDRAWN)),
        n_submitted=_subcount(Assignment.objects.filter(status=AssignmentStatus.SUBMITTED)),
        n_open_flags=_subcount(ConversationFlag.objects.filter(status=FlagStatus.OPEN)),
    )
    if Role.ADMIN in roles:
        return qs
    return qs.filter(_member(user, allowed))


def _member(user: AnyUser, roles: list[str]) -> Exists:
    return Exists(StudyMembership.objects.filter(study=OuterRef("pk"), user_id=user.pk, role__in=roles, active=True))


def study_get_for_coordinator(user: AnyUser, *, pk: int, write: bool = True) -> Study:
    """Return a study the user may manage (``write``) or read; raise Http404 otherwise.

    The study carries ``n_open_flags`` (the Flags tab's count on every study page, in the same query).
    """
    roles = user_roles(user)
    qs = Study.objects.select_related("instrument", "section", "created_by").annotate(
        n_open_flags=_subcount(ConversationFlag.objects.filter(status=FlagStatus.OPEN)))
    if Role.ADMIN not in roles:
        allowed = [MemberRole.COORDINATOR] if Role.COORDINATOR in roles else []
        if not write and Role.RESEARCHER in roles:
            allowed.append(MemberRole.RESEARCHER)
        if not allowed:
            raise Http404("not found")
        qs = qs.filter(_member(user, allowed))
    study = qs.filter(pk=pk).first()
    if study is None:
        raise Http404("not found")
    return study


def user_manages_study(user: AnyUser, study: Study) -> bool:
    """Return whether the user may change the study (forms are shown only to them)."""
    roles = user_roles(user)
    if Role.ADMIN in roles:
        return True
    return Role.COORDINATOR in roles and study.memberships.filter(
        user_id=user.pk, role=MemberRole.COORDINATOR, active=True
    ).exists()


def rater_candidates() -> QuerySet:
    """Return the users who may rate: active members of the clinician group."""
    return get_user_model().objects.filter(groups__name=Role.CLINICIAN, is_active=True).order_by("username").distinct()


def member_candidates(study: Study) -> QuerySet:
    """Return researchers and coordinators who are not yet members of the study in that role."""
    return (
        get_user_model()
        .objects.filter(groups__name__in=[Role.RESEARCHER, Role.COORDINATOR], is_active=True)
        .exclude(study_memberships__study=study, study_memberships__role__in=["researcher", "coordinator"])
        .order_by("username")
        .distinct()
    )


def rater_candidate_get(*, user_id: int) -> Any:
    """Return one rater candidate, or raise Http404."""
    user = rater_candidates().filter(pk=user_id).first()
    if user is None:
        raise Http404("not found")
    return user


def study_rater_get(study: Study, *, user_id: int) -> Any:
    """Return a user who is (or was) a rater of the study, or raise Http404."""
    membership = study.memberships.filter(role=MemberRole.RATER, user_id=user_id).select_related("user").first()
    if membership is None:
        raise Http404("not found")
    return membership.user


def assignment_get_for_manager(user: AnyUser, *, pk: int) -> Assignment:
    """Return an assignment of a study the user manages, or raise Http404."""
    study_id = Assignment.objects.filter(pk=pk).values_list("study_id", flat=True).first()
    if study_id is None:
        raise Http404("not found")
    return assignment_get_for_coordinator(study_get_for_coordinator(user, pk=study_id), pk=pk)


def assignment_get_for_coordinator(study: Study, *, pk: int) -> Assignment:
    """Return an assignment of this study (the study is already access-checked)."""
    assignment = (
        Assignment.objects.select_related("conversation", "rater", "study").filter(pk=pk, study=study).first()
    )
    if assignment is None:
        raise Http404("not found")
    return assignment


def conversation_holders(study: Study, *, conversation_id: int) -> set[int]:
    """Return the ids of the raters who hold (not withdrawn) an assignment of this conversation."""
    return set(
        study.assignments.filter(conversation_id=conversation_id)
        .exclude(status=AssignmentStatus.WITHDRAWN)
        .values_list("rater_id", flat=True)
    )


OPEN_STATUSES = (AssignmentStatus.NOT_STARTED, AssignmentStatus.IN_PROGRESS)


def removed_rater_assignments(study: Study) -> QuerySet[Assignment]:
    """Return the open (not started, in progress) main-set work of raters removed from the study."""
    removed = study.memberships.filter(role=MemberRole.RATER, active=False).values("user_id")
    return study.assignments.filter(rater_id__in=removed, status__in=OPEN_STATUSES, is_calibration=False)


@dataclass(frozen=True)
class RemovedWorkRow:
    """One conversation a removed rater still holds, and where it could go."""

    assignment: Assignment
    rater_name: str
    rater_label: str
    n_answers: int  # answers saved in the draft (they stay with the assignment if it is moved or discarded)
    move_targets: list[tuple[int, str]]  # active raters who do not hold this conversation: (user id, username)

    @property
    def kept(self) -> bool:
        return self.assignment.kept_after_removal


@dataclass(frozen=True)
class RemovedWork:
    rows: list[RemovedWorkRow]

    @property
    def awaiting(self) -> list[RemovedWorkRow]:
        return [r for r in self.rows if not r.kept]

    @property
    def kept(self) -> list[RemovedWorkRow]:
        return [r for r in self.rows if r.kept]


def removed_work(study: Study) -> RemovedWork:
    """Return every conversation removed raters still hold, awaiting a decision first (five queries)."""
    assignments = list(
        removed_rater_assignments(study)
        .select_related("conversation", "rater")
        .order_by("kept_after_removal", "rater__username", "position", "id")
    )
    if not assignments:
        return RemovedWork([])
    members = rater_memberships(study)
    labels = {m.user_id: m.rater_label for m in members}
    active = [(m.user_id, m.user.get_username(), m.rater_label) for m in members if m.active]
    holders: dict[int, set[int]] = {}
    for conversation_id, rater_id in (
        study.assignments.filter(conversation_id__in={a.conversation_id for a in assignments}, rater__isnull=False)
        .exclude(status=AssignmentStatus.WITHDRAWN)
        .values_list("conversation_id", "rater_id")
    ):
        holders.setdefault(conversation_id, set()).add(rater_id)
    answers = dict(Rating.objects.filter(assignment__in=assignments).values_list("assignment_id", "answers"))
    rows = []
    for a in assignments:
        saved = answers.get(a.pk) or {}
        n = sum(1 for part in saved.values() if isinstance(part, dict) for entry in part.values() if entry.get("value"))
        taken = holders.get(a.conversation_id, set())
        targets = [(uid, name) for uid, name, _ in active if uid not in taken]
        rows.append(RemovedWorkRow(a, a.rater.get_username(), labels.get(a.rater_id, ""), n, targets))
    return RemovedWork(rows)


def selection_summary(selection: dict[str, Any]) -> list[str]:
    """Return the recorded selection as readable phrases (persona names, chatbot and batch codes)."""
    from corpus.models import Persona, Target
    from simulation.models import SimulationBatch

    parts = []
    for key, model, field_name, what in (
        ("persona_ids", Persona, "name", "personas"),
        ("target_ids", Target, "code", "chatbots"),
        ("batch_ids", SimulationBatch, "code", "batches"),
    ):
        if selection.get(key):
            names = model.objects.filter(pk__in=selection[key]).order_by(field_name).values_list(field_name, flat=True)
            parts.append(f"{what} {', '.join(names)}")
    if selection.get("codes"):
        parts.append(f"{len(selection['codes'])} listed code(s)")
    if "matched" in selection:
        parts.append(f"{selection['matched']} matched" + (", integrity-flagged left out" if selection.get("exclude_flagged") else ""))
    if selection.get("from_ratings"):
        parts.append(
            f"the {selection.get('units', 0)} conversations rated in {selection['from_ratings']}"
            f" ({selection.get('placeholders', 0)} without transcript when created)"
        )
    if selection.get("flagged_kept"):
        parts.append(f"flagged but rated, kept: {', '.join(selection['flagged_kept'])}")
    if selection.get("left_out_flagged"):
        left = selection["left_out_flagged"]
        parts.append(f"{len(left)} flagged left out ({', '.join(left[:10])}{', …' if len(left) > 10 else ''})")
    if selection.get("kept_flagged"):
        parts.append(f"flagged kept on purpose: {', '.join(selection['kept_flagged'])}")
    if selection.get("sample_size"):
        parts.append(f"random sample of {selection['sample_size']} with seed {selection.get('seed')}")
    return parts


def conversations_by_codes(codes: list[str]) -> dict[str, int]:
    """Return ``{code: id}`` for the conversation codes that exist."""
    return dict(Conversation.objects.filter(code__in=codes).values_list("code", "id"))


def external_raters(study: Study) -> list[Any]:
    """Return the study's external raters with how many submitted ratings each has."""
    from django.db.models import Count, Q

    return list(
        study.external_raters.annotate(
            n_submitted=Count("assignments", filter=Q(assignments__status=AssignmentStatus.SUBMITTED))
        ).order_by("label")
    )


def rater_memberships(study: Study) -> list[StudyMembership]:
    """Return the study's rater memberships (active first), with their users."""
    return list(
        study.memberships.filter(role=MemberRole.RATER).select_related("user").order_by("-active", "user__username")
    )


# --- assignment design ---------------------------------------------------------------------


@dataclass(frozen=True)
class OverlapCell:
    n: int | None  # None on the diagonal
    too_few: bool = False


@dataclass(frozen=True)
class RaterLoad:
    membership: StudyMembership
    load: int
    calibration: int
    cells: list[OverlapCell] = field(default_factory=list)


@dataclass(frozen=True)
class Design:
    raters: list[RaterLoad]
    flagged: list[tuple[str, str, int]]
    n_main: int
    n_calibration: int
    assigned: bool
    expected_load: float
    expected_overlap: float
    min_overlap: int = MIN_PAIR_OVERLAP


def study_design(study: Study) -> Design:
    """Return each rater's load and the pair-overlap matrix, flagging pairs with too few shared."""
    members = rater_memberships(study)
    links = Counter(study.study_conversations.values_list("is_calibration", flat=True))
    n_main, n_cal = links.get(False, 0), links.get(True, 0)
    rows = list(
        # The in-app design: external raters' imported ratings have no place in it.
        study.assignments.exclude(status=AssignmentStatus.WITHDRAWN).filter(rater__isnull=False).values_list(
            "conversation_id", "rater_id", "is_calibration"
        )
    )
    main = [(c, r) for c, r, cal in rows if not cal]
    load = Counter(r for _, r in main)
    calibration = Counter(r for _, r, cal in rows if cal)
    overlap = pair_overlap(main)
    shown = [m for m in members if m.active or load[m.user_id]]
    flagged: list[tuple[str, str, int]] = []
    result = []
    for i, a in enumerate(shown):
        cells = []
        for j, b in enumerate(shown):
            if i == j:
                cells.append(OverlapCell(None))
                continue
            n = overlap.get((a.user_id, b.user_id), overlap.get((b.user_id, a.user_id), 0))
            too_few = bool(main) and n < MIN_PAIR_OVERLAP
            cells.append(OverlapCell(n, too_few))
            if too_few and i < j:
                flagged.append((a.user.get_username(), b.user.get_username(), n))
        result.append(RaterLoad(a, load[a.user_id], calibration[a.user_id], cells))
    n_raters = sum(1 for m in members if m.active)
    k = study.raters_per_conversation
    return Design(
        raters=result,
        flagged=flagged,
        n_main=n_main,
        n_calibration=n_cal,
        assigned=bool(rows),
        expected_load=round(n_main * k / n_raters, 1) if n_raters else 0.0,
        # Balanced design: N conversations x k(k-1)/2 pairs each, spread over R(R-1)/2 pairs.
        expected_overlap=round(n_main * k * (k - 1) / (n_raters * (n_raters - 1)), 1) if n_raters > 1 else 0.0,
    )


# --- audit trail ---------------------------------------------------------------------------

ACTIONS = {
    "study_created": "Study created",
    "due_date_set": "Due date set",
    "gold_set": "Gold conversations set",
    "assigned": "Raters assigned",
    "rater_removed": "Rater removed",
    "reassigned_on_removal": "Moved on removal",
    "rater_added": "Rater added",
    "rebalanced": "Rebalanced",
    "reassigned": "Assignment moved",
    "removed_work_kept": "Kept with the removed rater",
    "removed_work_moved": "Moved from a removed rater",
    "removed_work_discarded": "Discarded (withdrawn)",
    "consensus_computed": "Consensus computed",
    "adjudicated": "Adjudicated",
    "ratings_imported": "Ratings imported",
    "sampling_plan": "Sampling plan drawn",
    "sitting_limit_set": "Break prompt changed",
    "rater_support_set": "Raters' support text changed",
    "evidence_set": "Evidence from raters (cited turns) changed",
    "adjudication_blinding_set": "Adjudication blinding changed",
    # The coordinator's day (issue 19).
    # What became of them (sent by SMTP, printed, failed) is in the entry's summary (issue 28).
    "reminders_sent": "Reminder emails",
    "reminder_schedule_set": "Reminder schedule changed",
    "reminders_opted_out": "Rater turned reminders off",
    "reminders_opted_in": "Rater turned reminders on",
    "conversation_flagged": "Conversation flagged by a rater",
    "flag_resolved": "Flag resolved",
    "flag_notices_off": "Coordinator turned flag emails off",
    "flag_notices_on": "Coordinator turned flag emails on",
    "holdout_split": "Split into development and test sets",
    "final_declared": "Judge version declared final",
    "test_set_evaluated": "Test set evaluated",
    "judge_revised": "Judge revised and run on the development set",
}


@dataclass(frozen=True)
class AuditEntry:
    event: StudyEvent
    action: str
    summary: str


AUDIT_PER_PAGE = 20


def study_audit_page(study: Study, *, page: str | int | None = None, per_page: int = AUDIT_PER_PAGE) -> Page:
    """Return one page of the study's audit trail, newest first, with names resolved (a fixed number of queries)."""
    found = Paginator(study.events.select_related("actor"), per_page).get_page(page)
    found.object_list = _audit_entries(list(found.object_list))
    return found


def study_audit_trail(study: Study, *, limit: int | None = None) -> list[AuditEntry]:
    """Return the study's events (who, when, what, why) with names resolved, newest first (all by default)."""
    events = study.events.select_related("actor")
    return _audit_entries(list(events[:limit] if limit else events))


def _audit_entries(events: list[StudyEvent]) -> list[AuditEntry]:
    user_ids = {e.details.get(k) for e in events for k in ("rater", "from_rater", "to_rater")}
    conv_ids = {e.details.get("conversation_id") for e in events}
    users = dict(get_user_model().objects.filter(pk__in=[u for u in user_ids if u]).values_list("pk", "username"))
    codes = dict(Conversation.objects.filter(pk__in=[c for c in conv_ids if c]).values_list("pk", "code"))
    return [AuditEntry(e, ACTIONS.get(e.action, e.action), _summary(e.details, users, codes)) for e in events]


def _summary(details: dict[str, Any], users: dict[int, str], codes: dict[int, str]) -> str:
    parts = []
    if "conversation_id" in details:
        parts.append(f"conversation {codes.get(details['conversation_id'], details['conversation_id'])}")
    if "item_key" in details:
        parts.append(f"item {details['item_key']} → {details.get('label', '')}")
    if "rater" in details:
        parts.append(f"rater {users.get(details['rater'], details['rater'])}")
    if "label" in details and "item_key" not in details:
        parts.append(f"as '{details['label']}'")
    if "from_rater" in details:
        parts.append(f"from {users.get(details['from_rater'], '?')} to {users.get(details['to_rater'], '?')}")
    if "due_date" in details:
        parts.append(f"due {details['due_date']}" if details["due_date"] else "no due date")
    for key in ("seed", "n_assignments", "n_conversations", "n_raters", "n_ratings", "file"):
        if key in details:
            parts.append(f"{key.replace('n_', '').replace('_', ' ')}: {details[key]}")
    if details.get("counts"):
        parts.append(", ".join(f"{k}: {v}" for k, v in sorted(details["counts"].items())))
    if details.get("summary"):
        parts.append(str(details["summary"]))
    return "; ".join(parts)


def study_list_for_user(user: AbstractBaseUser | AnonymousUser) -> QuerySet[Study]:
    """Return the studies a user may manage: admins all, coordinators and researchers their own."""
    # Counted by subqueries: joining every conversation and member of each study (then DISTINCT)
    # cost over a second per list of one 2,000-conversation study.
    return _managed_by(user, Study.objects.select_related("instrument").annotate(
        n_conversations=_subcount(StudyConversation.objects.all()),
        n_raters=_subcount(StudyMembership.objects.filter(role=MemberRole.RATER)),
        n_open_flags=_subcount(ConversationFlag.objects.filter(status=FlagStatus.OPEN)),
    ))


def study_access_for_user(user: AbstractBaseUser | AnonymousUser) -> QuerySet[Study]:
    """Return the studies ``study_list_for_user`` returns, without its counts: the access check of one study's pages.

    The counts join every conversation and member of a study; a page of a 2,000-conversation
    study paid about a second for them on every request.
    """
    return _managed_by(user, Study.objects.select_related("instrument"))


def _managed_by(user: AbstractBaseUser | AnonymousUser, qs: QuerySet[Study]) -> QuerySet[Study]:
    roles = user_roles(user)
    if Role.ADMIN in roles:
        return qs
    if roles & {Role.COORDINATOR, Role.RESEARCHER}:
        return qs.filter(
            memberships__user=user, memberships__role__in=[MemberRole.COORDINATOR, MemberRole.RESEARCHER]
        ).distinct()
    return qs.none()


def study_list_for_rater(user: AbstractBaseUser | AnonymousUser) -> QuerySet[Study]:
    """Return the studies in which the user is an active rater."""
    if not getattr(user, "is_authenticated", False):
        return Study.objects.none()
    return Study.objects.filter(
        memberships__user=user, memberships__role=MemberRole.RATER, memberships__active=True
    ).distinct()


def study_rater_letters(study: Study) -> dict[str, str]:
    """Return each rater's pseudonym in the study ("Rater A"...), by rater name, in order of joining.

    The same letter for the same rater on every page of the study (adjudication, the review page);
    in-app raters first (as they joined), then external raters (as imported).
    """
    names = list(StudyMembership.objects.filter(study=study, role=MemberRole.RATER).order_by("added_at", "pk")
                 .values_list("user__username", flat=True))
    names += list(study.external_raters.order_by("pk").values_list("label", flat=True))
    return {name: f"Rater {_letters(n)}" for n, name in enumerate(dict.fromkeys(names))}


def _letters(n: int) -> str:
    letters = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
    return letters[n] if n < 26 else _letters(n // 26 - 1) + letters[n % 26]
