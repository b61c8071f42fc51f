"""Studies: creation, assignment of raters, rotation. Every change is recorded as a StudyEvent."""

from __future__ import annotations

import secrets
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from annotation.errors import AnnotationError
from annotation.models import (
    Assignment,
    AssignmentStatus,
    MemberRole,
    Study,
    StudyConversation,
    StudyEvent,
    StudyMembership,
    TiePolicy,
)
from annotation.studies.assignment import (
    AssignmentDesignError,
    RaterSlot,
    pick_rater,
    plan_assignments,
    slots_needed,
)
from annotation.studies.selectors import OPEN_STATUSES, removed_rater_assignments
from corpus.models import Conversation, Instrument, InstrumentKind


def _actor(user: AbstractBaseUser | None) -> AbstractBaseUser | None:
    return user if getattr(user, "pk", None) else None


def study_event(*, study: Study, actor: AbstractBaseUser | None, action: str, reason: str = "", **details: Any) -> StudyEvent:
    return StudyEvent.objects.create(study=study, actor=_actor(actor), action=action, reason=reason, details=details)


def study_due_date_set(*, study: Study, due_date: Any, actor: AbstractBaseUser | None) -> Study:
    """Set (or clear, with None) the date the study's ratings are due; recorded in the audit trail."""
    study.due_date = due_date
    study.save(update_fields=["due_date"])
    study_event(study=study, actor=actor, action="due_date_set", due_date=due_date.isoformat() if due_date else "")
    return study


@transaction.atomic
def study_create(
    *,
    name: str,
    instrument: Instrument,
    rater_title: str = "",
    section: Instrument | None,
    conversation_ids: list[int],
    created_by: AbstractBaseUser | None,
    coordinators: list[Any] = (),  # type: ignore[assignment]
    raters: list[tuple[Any, str]] = (),  # type: ignore[assignment]
    description: str = "",
    is_demo: bool = False,
    raters_per_conversation: int = 2,
    composition: dict[str, int] | None = None,
    tie_policy: str = TiePolicy.ADJUDICATION,
    senior_rater: Any = None,
    selection: dict | None = None,
    calibration: dict[int, dict] | None = None,
    reliability_threshold: float = 0.5,
    min_ratings_for_consensus: int | None = None,
    allow_empty: bool = False,
) -> Study:
    """Create a study with its conversations, coordinators and raters (with a label each).

    ``calibration`` maps conversation ids (rated first by every rater) to reference answers
    ``{item_key: {"label": ..., "explanation": ...}}`` used for feedback.
    ``min_ratings_for_consensus`` defaults to 2, or 1 when each conversation gets one rater (a
    single clinician's label is then the reference): never more than a conversation gets.
    ``allow_empty``: a study that grows later (active sampling adds its conversations batch by
    batch, and a batch may draw none).
    """
    if min_ratings_for_consensus is None:
        min_ratings_for_consensus = min(2, raters_per_conversation)
    if not name.strip():
        raise AnnotationError("a study needs a name")
    if instrument.kind == InstrumentKind.SECTION:
        raise AnnotationError("a rating section cannot be a study's main instrument")
    if section is not None and section.kind != InstrumentKind.SECTION:
        raise AnnotationError("the study section must be an instrument of kind 'section'")
    if not conversation_ids and not allow_empty:
        raise AnnotationError("the selection holds no conversations")
    if tie_policy not in TiePolicy.values:
        raise AnnotationError(f"unknown tie policy '{tie_policy}'")
    if tie_policy == TiePolicy.SENIOR and senior_rater is None:
        raise AnnotationError("the senior-rater tie policy needs a designated senior rater")
    if senior_rater is not None and senior_rater.pk not in {user.pk for user, _ in raters}:
        # Otherwise no membership is marked senior and every tie silently stays unresolved.
        raise AnnotationError("the senior rater must be one of the study's raters")
    if min_ratings_for_consensus < 1:
        raise AnnotationError("an item needs at least one rating before it has a consensus")
    if min_ratings_for_consensus > raters_per_conversation:
        raise AnnotationError(
            f"a consensus needing {min_ratings_for_consensus} ratings is never reached with "
            f"{raters_per_conversation} rater(s) per conversation"
        )
    try:
        slots_needed(raters_per_conversation, composition)
    except AssignmentDesignError as exc:
        raise AnnotationError(str(exc)) from exc
    study = Study.objects.create(
        name=name.strip(),
        rater_title=rater_title.strip(),
        description=description,
        instrument=instrument,
        section=section,
        created_by=_actor(created_by),
        is_demo=is_demo,
        raters_per_conversation=raters_per_conversation,
        composition=composition or {},
        tie_policy=tie_policy,
        selection=selection or {},
        sample_seed=(selection or {}).get("seed"),
        reliability_threshold=reliability_threshold,
        min_ratings_for_consensus=min_ratings_for_consensus,
        calibration_required=bool(calibration),
    )
    calibration = calibration or {}
    ids = list(dict.fromkeys([*conversation_ids, *calibration]))
    StudyConversation.objects.bulk_create(
        StudyConversation(
            study=study,
            conversation_id=cid,
            is_calibration=cid in calibration,
            calibration_reference=calibration.get(cid, {}),
        )
        for cid in ids
    )
    seen: set[int] = set()
    memberships = []
    for user in coordinators:
        memberships.append(StudyMembership(study=study, user=user, role=MemberRole.COORDINATOR))
    for user, label in raters:
        if user.pk in seen:
            raise AnnotationError(f"rater {user} is listed twice")
        seen.add(user.pk)
        memberships.append(
            StudyMembership(
                study=study, user=user, role=MemberRole.RATER, rater_label=label or "",
                is_senior=senior_rater is not None and user.pk == senior_rater.pk,
            )
        )
    StudyMembership.objects.bulk_create(memberships)
    study_event(study=study, actor=created_by, action="study_created", n_conversations=len(ids), n_raters=len(seen))
    return study


def _active_raters(study: Study) -> list[StudyMembership]:
    return list(study.memberships.filter(role=MemberRole.RATER, active=True).select_related("user").order_by("id"))


@transaction.atomic
def study_assign(*, study: Study, actor: AbstractBaseUser | None, seed: int | None = None) -> dict[str, Any]:
    """Create every rater's assignments: calibration first, then the balanced main design."""
    study = Study.objects.select_for_update().get(pk=study.pk)
    if study.assignments.exists():
        raise AnnotationError("this study already has assignments; use rotation to change them", status=409)
    members = _active_raters(study)
    if not members:
        raise AnnotationError("add raters before assigning")
    seed = int(seed if seed is not None else secrets.randbelow(2**31))
    # Conversations known only from a ratings file have no transcript to rate in the app.
    links = list(
        study.study_conversations.exclude(
            conversation_id__in=Conversation.objects.filter(metadata__transcript_missing=True).values("pk")
        ).values_list(
            "conversation_id", "is_calibration"
        )
    )
    main = [cid for cid, cal in links if not cal]
    calibration = sorted(cid for cid, cal in links if cal)
    try:
        plan = plan_assignments(
            main,
            [RaterSlot(m.user_id, m.rater_label) for m in members],
            k=study.raters_per_conversation,
            composition=study.composition or None,
            seed=seed,
        )
    except AssignmentDesignError as exc:
        raise AnnotationError(str(exc)) from exc
    rows = []
    for member in members:
        for position, cid in enumerate(calibration):
            rows.append(Assignment(study=study, conversation_id=cid, rater_id=member.user_id, is_calibration=True, position=position))
        for position, cid in enumerate(plan.orders.get(member.user_id, [])):
            rows.append(Assignment(study=study, conversation_id=cid, rater_id=member.user_id, position=position))
    Assignment.objects.bulk_create(rows)
    study.assignment_seed = seed
    study.save(update_fields=["assignment_seed"])
    study_event(
        study=study, actor=actor, action="assigned", seed=seed, n_assignments=len(rows),
        load={str(k): v for k, v in plan.load.items()},
    )
    return {"seed": seed, "n_assignments": len(rows), "load": plan.load, "overlap": plan.overlap}


def _loads(study: Study) -> Counter:
    return Counter(
        study.assignments.filter(is_calibration=False, rater__isnull=False).exclude(status=AssignmentStatus.WITHDRAWN).values_list("rater_id", flat=True)
    )


def _overlap(study: Study) -> dict[tuple[int, int], int]:
    from annotation.studies.assignment import pair_overlap

    pairs = study.assignments.filter(is_calibration=False, rater__isnull=False).exclude(status=AssignmentStatus.WITHDRAWN).values_list("conversation_id", "rater_id")
    return pair_overlap(list(pairs))


def _next_position(study: Study, rater_id: int) -> int:
    current = study.assignments.filter(rater_id=rater_id, is_calibration=False).aggregate(p=Max("position"))["p"]
    return (current if current is not None else -1) + 1


def _move(assignment: Assignment, new_rater_id: int, actor: AbstractBaseUser | None, reason: str, action: str) -> Assignment:
    old_rater = assignment.rater_id
    assignment.status = AssignmentStatus.WITHDRAWN
    assignment.save(update_fields=["status"])
    new = Assignment.objects.create(
        study=assignment.study, conversation_id=assignment.conversation_id, rater_id=new_rater_id,
        is_calibration=assignment.is_calibration, position=_next_position(assignment.study, new_rater_id),
    )
    study_event(
        study=assignment.study, actor=actor, action=action, reason=reason,
        conversation_id=assignment.conversation_id, from_rater=old_rater, to_rater=new_rater_id,
        withdrawn_assignment=assignment.pk, new_assignment=new.pk,
    )
    return new


@transaction.atomic
def study_remove_rater(
    *, study: Study, rater: Any, actor: AbstractBaseUser | None, reason: str, redistribute: bool = True
) -> list[Assignment]:
    """Take a rater out: their unstarted work goes to others, keeping load and labels balanced.

    Started work stays with the rater (their answers are never lost) and is listed on the study
    and progress pages until a coordinator decides what happens to it (``removed_work_decide``);
    with ``redistribute=False`` their unstarted work waits for that decision too. Calibration
    work not yet submitted is withdrawn: it trained this rater, who no longer rates.
    """
    if not reason.strip():
        raise AnnotationError("say why the rater is removed")
    study = Study.objects.select_for_update().get(pk=study.pk)
    membership = study.memberships.filter(role=MemberRole.RATER, user=rater, active=True).first()
    if membership is None:
        raise AnnotationError("this user is not an active rater of the study", status=404)
    membership.active = False
    membership.save(update_fields=["active"])
    study.assignments.filter(rater=rater, is_calibration=True, status__in=OPEN_STATUSES).update(
        status=AssignmentStatus.WITHDRAWN
    )
    left = study.assignments.filter(rater=rater, is_calibration=False, status__in=OPEN_STATUSES)
    study_event(
        study=study, actor=actor, action="rater_removed", reason=reason, rater=rater.pk,
        n_in_progress=left.filter(status=AssignmentStatus.IN_PROGRESS).count(),
        n_not_started=left.filter(status=AssignmentStatus.NOT_STARTED).count(), redistributed=redistribute,
    )
    if not redistribute:
        return []
    members = _active_raters(study)
    labels = {m.user_id: m.rater_label for m in members}
    load = _loads(study)
    overlap = _overlap(study)
    moved = []
    pending = study.assignments.filter(rater=rater, status=AssignmentStatus.NOT_STARTED, is_calibration=False).order_by("position")
    for assignment in pending:
        on_it = set(
            study.assignments.filter(conversation_id=assignment.conversation_id).exclude(status=AssignmentStatus.WITHDRAWN).values_list("rater_id", flat=True)
        ) - {rater.pk}
        pool = [uid for uid in labels if not study.composition or labels[uid] == membership.rater_label]
        pool = [uid for uid in pool if uid not in on_it]
        if not pool:
            raise AnnotationError(
                f"no eligible rater can take conversation {assignment.conversation.code}"
                + (f" (label '{membership.rater_label}')" if study.composition else "")
                + "; add a rater first, or remove without moving the unstarted work and decide on it afterwards",
                status=409,
            )
        new_rater = pick_rater(pool, sorted(on_it), load, overlap)
        load[new_rater] += 1
        load[rater.pk] -= 1
        moved.append(_move(assignment, new_rater, actor, reason, "reassigned_on_removal"))
    return moved


KEEP, MOVE, DISCARD = "keep", "move", "discard"


@dataclass(frozen=True)
class RemovedWorkDecision:
    """What happens to one conversation a removed rater holds."""

    action: str  # KEEP (the removed rater finishes it), MOVE or DISCARD (withdrawn, nobody rates it instead)
    to_rater_id: int | None = None  # MOVE: to this active rater; None: to the least loaded eligible one


@transaction.atomic
def removed_work_decide(
    *, study: Study, decisions: Mapping[int, RemovedWorkDecision], actor: AbstractBaseUser | None, reason: str
) -> Counter:
    """Settle removed raters' open work, assignment by assignment; return counts per action.

    Keep: the removed rater may still finish it (it stays in their list). Move: withdrawn from
    them (the draft stays with the withdrawn assignment) and given to an active rater who does
    not already hold the conversation, respecting the composition's labels when the target is
    picked automatically. Discard: withdrawn, so the conversation has one rater fewer. Every
    decision is recorded in the audit trail with the reason. All or nothing: if one decision is
    impossible, nothing changes and the error names every conversation concerned.
    """
    if not reason.strip():
        raise AnnotationError("say why: the reason goes into the audit trail")
    if not decisions:
        raise AnnotationError("choose what happens to at least one conversation")
    study = Study.objects.select_for_update().get(pk=study.pk)
    open_work = {a.pk: a for a in removed_rater_assignments(study).select_related("conversation")}
    gone = [pk for pk in decisions if pk not in open_work]
    if gone:
        raise AnnotationError(
            f"{len(gone)} of the chosen assignments {'is' if len(gone) == 1 else 'are'} no longer open work of a "
            "removed rater (submitted, moved or discarded meanwhile): reload the page and decide again",
            status=409,
        )
    if any(d.action not in (KEEP, MOVE, DISCARD) for d in decisions.values()):
        raise AnnotationError("a decision is keep, move or discard")
    labels = {m.user_id: m.rater_label for m in _active_raters(study)}
    removed_labels = dict(study.memberships.filter(role=MemberRole.RATER, active=False).values_list("user_id", "rater_label"))
    holders: dict[int, set[int]] = {}
    for conversation_id, rater_id in (
        study.assignments.filter(conversation_id__in={a.conversation_id for a in open_work.values()}, rater__isnull=False)
        .exclude(status=AssignmentStatus.WITHDRAWN)
        .values_list("conversation_id", "rater_id")
    ):
        holders.setdefault(conversation_id, set()).add(rater_id)
    load, overlap = _loads(study), _overlap(study)
    counts: Counter = Counter()
    problems: list[str] = []
    for pk in sorted(decisions, key=lambda k: (open_work[k].rater_id, open_work[k].position, k)):
        decision, assignment = decisions[pk], open_work[pk]
        code = assignment.conversation.code
        if decision.action == KEEP:
            if not assignment.kept_after_removal:
                assignment.kept_after_removal = True
                assignment.save(update_fields=["kept_after_removal"])
                study_event(study=study, actor=actor, action="removed_work_kept", reason=reason,
                            conversation_id=assignment.conversation_id, rater=assignment.rater_id, assignment=assignment.pk)
            counts[KEEP] += 1
        elif decision.action == DISCARD:
            assignment.status = AssignmentStatus.WITHDRAWN
            assignment.save(update_fields=["status"])
            holders.get(assignment.conversation_id, set()).discard(assignment.rater_id)
            study_event(study=study, actor=actor, action="removed_work_discarded", reason=reason,
                        conversation_id=assignment.conversation_id, rater=assignment.rater_id, withdrawn_assignment=assignment.pk)
            counts[DISCARD] += 1
        else:
            taken = holders.setdefault(assignment.conversation_id, set())
            if decision.to_rater_id is not None:
                new_rater = decision.to_rater_id
                if new_rater not in labels:
                    problems.append(f"{code}: the chosen rater is not an active rater of this study")
                    continue
                if new_rater in taken:
                    problems.append(f"{code}: the chosen rater already holds this conversation")
                    continue
            else:
                label = removed_labels.get(assignment.rater_id, "")
                pool = [uid for uid in labels if uid not in taken and (not study.composition or labels[uid] == label)]
                if not pool:
                    problems.append(f"{code}: no active rater{f' labelled {label!r}' if study.composition else ''} is free to take it")
                    continue
                new_rater = pick_rater(pool, sorted(taken - {assignment.rater_id}), load, overlap)
            load[new_rater] += 1
            taken.discard(assignment.rater_id)
            taken.add(new_rater)
            _move(assignment, new_rater, actor, reason, "removed_work_moved")
            counts[MOVE] += 1
    if problems:
        raise AnnotationError("nothing was changed: " + "; ".join(problems) + ". Add a rater, or keep or discard these.", status=409)
    return counts


@transaction.atomic
def study_add_rater(
    *, study: Study, user: Any, label: str, actor: AbstractBaseUser | None, reason: str = "", rebalance: bool = True
) -> list[Assignment]:
    """Add a rater; when the study is assigned, move unstarted work to them until loads even out."""
    study = Study.objects.select_for_update().get(pk=study.pk)
    membership, created = StudyMembership.objects.get_or_create(
        study=study, user=user, role=MemberRole.RATER, defaults={"rater_label": label}
    )
    if not created:
        if membership.active:
            raise AnnotationError("this user is already a rater of the study", status=409)
        membership.active = True
        membership.rater_label = label
        membership.save(update_fields=["active", "rater_label"])
    study_event(study=study, actor=actor, action="rater_added", reason=reason, rater=user.pk, label=label)
    moved: list[Assignment] = []
    if not study.assignments.exists():
        return moved
    calibration = study.study_conversations.filter(is_calibration=True).order_by("conversation_id")
    for position, cid in enumerate(calibration.values_list("conversation_id", flat=True)):
        # A rater re-added after removal has withdrawn calibration rows: they calibrate again.
        current = study.assignments.filter(conversation_id=cid, rater=user).exclude(status=AssignmentStatus.WITHDRAWN)
        if not current.exists():
            Assignment.objects.create(study=study, conversation_id=cid, rater=user, is_calibration=True, position=position)
    if not rebalance:
        return moved
    load = _loads(study)
    labels = {m.user_id: m.rater_label for m in _active_raters(study)}
    peers = [uid for uid in labels if uid != user.pk and (not study.composition or labels[uid] == label)]
    while peers:
        donor = max(peers, key=lambda uid: (load[uid], -uid))
        if load[donor] - load[user.pk] <= 1:
            break
        rated_by_new = set(study.assignments.filter(rater=user).exclude(status=AssignmentStatus.WITHDRAWN).values_list("conversation_id", flat=True))
        candidate = (
            study.assignments.filter(rater_id=donor, status=AssignmentStatus.NOT_STARTED, is_calibration=False)
            .exclude(conversation_id__in=rated_by_new)
            .order_by("-position")
            .first()
        )
        if candidate is None:
            peers.remove(donor)
            continue
        moved.append(_move(candidate, user.pk, actor, reason or "rebalanced onto a new rater", "rebalanced"))
        load[donor] -= 1
        load[user.pk] += 1
    return moved


@transaction.atomic
def assignment_reassign(*, assignment: Assignment, new_rater: Any, actor: AbstractBaseUser | None, reason: str) -> Assignment:
    """Move one unsubmitted assignment to another active rater of the study."""
    if not reason.strip():
        raise AnnotationError("say why the assignment is moved")
    assignment = Assignment.objects.select_for_update().select_related("study").get(pk=assignment.pk)
    if assignment.status in (AssignmentStatus.SUBMITTED, AssignmentStatus.WITHDRAWN):
        raise AnnotationError(f"a {assignment.get_status_display().lower()} assignment cannot be moved", status=409)
    if not assignment.study.memberships.filter(user=new_rater, role=MemberRole.RATER, active=True).exists():
        raise AnnotationError("the new rater is not an active rater of this study")
    if assignment.study.assignments.filter(conversation_id=assignment.conversation_id, rater=new_rater).exclude(status=AssignmentStatus.WITHDRAWN).exists():
        raise AnnotationError("the new rater already has this conversation", status=409)
    return _move(assignment, new_rater.pk, actor, reason, "reassigned")


def assignment_touch(*, assignment: Assignment, elapsed_seconds: float = 0) -> None:
    """Record activity on an assignment: start it, and add the time spent (capped per call)."""
    now = timezone.now()
    fields = ["last_activity_at"]
    if assignment.status == AssignmentStatus.NOT_STARTED:
        assignment.status = AssignmentStatus.IN_PROGRESS
        assignment.started_at = now
        fields += ["status", "started_at"]
    if elapsed_seconds > 0:
        # An autosave reports the seconds since the previous one; a long gap is a pause, not work.
        assignment.time_spent_seconds += int(min(elapsed_seconds, 300))
        fields.append("time_spent_seconds")
    assignment.last_activity_at = now
    assignment.save(update_fields=fields)


@transaction.atomic
def study_add_member(*, study: Study, user: Any, role: str, actor: AbstractBaseUser | None) -> StudyMembership:
    """Give a researcher (read results) or a coordinator (run the study) access to a study."""
    from core.roles import Role, user_roles

    needed = {MemberRole.RESEARCHER: Role.RESEARCHER, MemberRole.COORDINATOR: Role.COORDINATOR}.get(role)
    if needed is None:
        raise AnnotationError("a study member is a researcher or a coordinator (raters are added as raters)")
    if needed not in user_roles(user) and Role.ADMIN not in user_roles(user):
        raise AnnotationError(f"{user.get_username()} is not in the {needed} group")
    membership, created = StudyMembership.objects.get_or_create(study=study, user=user, role=role)
    if not created:
        raise AnnotationError(f"{user.get_username()} is already a {role} of this study", status=409)
    study_event(study=study, actor=actor, action="member_added", user=user.pk, role=role)
    return membership


ALT_TEST_EPSILON_MAX = 0.5  # beyond it a judge would "win" while losing most comparisons


@transaction.atomic
def study_set_alt_test_epsilon(*, study: Study, epsilon: float, actor: AbstractBaseUser | None) -> Study:
    """Set the study's alt-test margin epsilon (recorded as a study event).

    The paper's guidance (Calderon, Reichart & Dror, ACL 2025): 0.2 for expert raters, 0.15
    for skilled raters, 0.1 for crowd workers. Refused outside [0, 0.5].
    """
    if not 0 <= epsilon <= ALT_TEST_EPSILON_MAX:
        raise AnnotationError(f"epsilon must lie between 0 and {ALT_TEST_EPSILON_MAX}; got {epsilon}")
    study = Study.objects.select_for_update().get(pk=study.pk)
    previous = study.alt_test_epsilon
    if previous == epsilon:
        return study
    study.alt_test_epsilon = epsilon
    study.save(update_fields=["alt_test_epsilon"])
    study_event(study=study, actor=actor, action="alt_test_epsilon_set", previous=previous, epsilon=epsilon)
    return study


@transaction.atomic
def study_assign_conversations(
    *, study: Study, conversation_ids: list[int], actor: AbstractBaseUser | None, seed: int | None = None, summary: str = ""
) -> dict[str, Any]:
    """Assign raters to conversations a growing study just added (an active sampling batch).

    The same balanced design as :func:`study_assign` (k raters each, the study's composition),
    starting from the raters' current loads so the study stays balanced batch after batch; each
    rater's new conversations go after the ones they hold, in an order randomised from the seed.
    """
    study = Study.objects.select_for_update().get(pk=study.pk)
    members = _active_raters(study)
    if not members:
        raise AnnotationError("add raters before assigning")
    seed = int(seed if seed is not None else secrets.randbelow(2**31))
    try:
        plan = plan_assignments(
            list(conversation_ids), [RaterSlot(m.user_id, m.rater_label) for m in members],
            k=study.raters_per_conversation, composition=study.composition or None, seed=seed,
            initial_load=dict(_loads(study)),
        )
    except AssignmentDesignError as exc:
        raise AnnotationError(str(exc)) from exc
    rows = []
    for member in members:
        start = _next_position(study, member.user_id)
        for offset, cid in enumerate(plan.orders.get(member.user_id, [])):
            rows.append(Assignment(study=study, conversation_id=cid, rater_id=member.user_id, position=start + offset))
    Assignment.objects.bulk_create(rows)
    if study.assignment_seed is None:
        study.assignment_seed = seed
        study.save(update_fields=["assignment_seed"])
    study_event(
        study=study, actor=actor, action="assigned", seed=seed, n_assignments=len(rows),
        load={str(k): v for k, v in plan.load.items()}, summary=summary or f"{len(conversation_ids)} conversations added",
    )
    return {"seed": seed, "n_assignments": len(rows), "load": plan.load}
