"""Coordinators' pages: build a study, assign and rotate raters, watch progress, run consensus.

Every view authorizes through ``coordinator_selectors`` (404 for anyone who does not manage the
study), parses a form, calls one service or selectors, and renders or redirects.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from annotation import gold
from annotation.consensus import selectors as consensus_reads
from annotation.consensus.adjudication import consensus_adjudicate_conversation
from annotation.consensus.jobs import consensus_marker, consensus_request, job_state, shown_job
from annotation.consensus.services import consensus_adjudicate
from annotation.errors import AnnotationError
from annotation.models import AssignmentStatus, MemberRole
from annotation.reminders.selectors import reminder_log
from annotation.reminders.services import last_reminders_at, reminders_recent
from annotation.studies import progress as progress_reads
from annotation.studies import selectors as reads
from annotation.studies.forms import (
    AddRaterForm,
    AdjudicateForm,
    AssignForm,
    DueDateForm,
    RatingsImportForm,
    ReassignForm,
    RemoveRaterForm,
    SelectionForm,
    StudyCreateForm,
    chatbot_names_in,
    removed_work_decisions,
)
from annotation.studies.ratings_import import ratings_import
from annotation.studies.services import (
    DISCARD,
    KEEP,
    MOVE,
    assignment_reassign,
    removed_work_decide,
    study_add_member,
    study_add_rater,
    study_assign,
    study_create,
    study_due_date_set,
    study_event,
    study_remove_rater,
)
from core.csvstream import csv_response
from core.emails import backend_info
from core.locks import locked_conversation_ids, withheld_note
from core.staged_uploads import import_page
from core.tables import Column, TableQuery
from core.uploads import read_upload
from corpus.conversations.selectors import conversation_ids_for_selection


def _detail(pk: int, anchor: str = "") -> HttpResponse:
    return redirect(reverse("annotation:study-detail", args=[pk]) + (f"#{anchor}" if anchor else ""))


def _csv(filename: str, header: list[str], rows: Iterable[list[Any]]) -> HttpResponse:
    # The one CSV writer (core.csvstream) quotes free text that a spreadsheet would run.
    return csv_response(filename, header, rows)


@require_GET
def study_list(request: HttpRequest) -> HttpResponse:
    # Researchers read their studies here too (the study pages' "Studies" breadcrumb leads here): issue 28.
    studies = reads.coordinator_study_list(request.user, write=False)
    return render(request, "annotation/coordinator/study_list.html",
                  {"studies": studies, "can_create": reads.can_create_studies(request.user)})


def study_new(request: HttpRequest) -> HttpResponse:
    if not reads.can_create_studies(request.user):
        raise Http404("not found")
    form = StudyCreateForm(request.POST or None, request.FILES or None, candidates=list(reads.rater_candidates()), user=request.user)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        ids, record = conversation_ids_for_selection(**form.selection_kwargs(), user=request.user)
        try:
            study = study_create(
                name=data["name"], rater_title=data["rater_title"], description=data["description"], instrument=data["instrument"],
                section=data["section"], conversation_ids=ids, created_by=request.user,
                coordinators=[request.user], raters=data["raters"],
                raters_per_conversation=data["raters_per_conversation"], composition=data["composition"] or None,
                tie_policy=data["tie_policy"], senior_rater=data["senior"], selection=record,
                calibration=data["calibration_map"] or None,
                min_ratings_for_consensus=data.get("min_ratings_for_consensus") or None,
            )
        except AnnotationError as exc:
            form.add_error(None, str(exc))
        else:
            if data.get("due_date"):
                study_due_date_set(study=study, due_date=data["due_date"], actor=request.user)
            messages.success(request, f"Study created with {study.study_conversations.count()} conversations. Assign the raters next.")
            return _detail(study.pk)
    status = 400 if request.method == "POST" else 200
    context: dict[str, Any] = {"form": form}
    if request.method == "POST":
        context["kept_file_ids"] = len(_keep_file_ids(form))
        # Keep the live count after an error: the same selection, counted again.
        selection = SelectionForm(form.data, user=request.user)
        if selection.is_valid():
            ids, record = conversation_ids_for_selection(**selection.selection_kwargs(), user=request.user)
            context.update(preview={"n": len(ids), "record": record, "form": selection})
        named = chatbot_names_in(request.POST.get("name", ""))
        if named:
            context["name_warning"] = named
    return render(request, "annotation/coordinator/study_form.html", context, status=status)


def _keep_file_ids(form: StudyCreateForm) -> list[str]:
    """Carry the ids of a chosen file of ids into the page that comes back with an error.

    A browser cannot refill a file input, so without this the selection (and its live count)
    would silently lose the file's conversations. The form renders them as a hidden field.
    """
    ids = form.file_ids() if hasattr(form, "cleaned_data") else []
    if ids:
        data = form.data.copy()
        data["codes_file_kept"] = " ".join(ids)
        form.data = data
    return ids


@require_http_methods(["GET", "POST"])
def selection_preview(request: HttpRequest) -> HttpResponse:
    """Count the conversations a selection matches (the new-study form posts itself here as it changes).

    A POST (multipart) so that a chosen file of ids is counted too; it changes nothing.
    """
    if not reads.can_create_studies(request.user):
        raise Http404("not found")
    form = SelectionForm(request.POST if request.method == "POST" else request.GET, request.FILES, user=request.user)
    context: dict[str, Any] = {"form": form}
    if form.is_valid():
        ids, record = conversation_ids_for_selection(**form.selection_kwargs(), user=request.user)
        context.update(n=len(ids), record=record)
    return render(request, "annotation/coordinator/_selection_preview.html", context)


@require_GET
def study_detail(request: HttpRequest, pk: int) -> HttpResponse:
    study = reads.study_get_for_coordinator(request.user, pk=pk, write=False)
    manages = reads.user_manages_study(request.user, study)
    members = reads.rater_memberships(study)
    active = {m.user_id for m in members if m.active}
    context = {
        "study": study,
        "manages": manages,
        "design": reads.study_design(study),
        "selection": reads.selection_summary(study.selection),
        "audit": reads.study_audit_page(study, page=request.GET.get("audit_page")),
        "assign_form": AssignForm(),
        "remove_form": RemoveRaterForm(),
        "removed": reads.removed_work(study),
        "add_form": AddRaterForm(candidates=[u for u in reads.rater_candidates() if u.pk not in active]),
        "member_candidates": reads.member_candidates(study) if manages else [],
        "members": study.memberships.exclude(role="rater").select_related("user").order_by("role", "user__username"),
        "external_raters": reads.external_raters(study),
        "due_form": DueDateForm(initial={"due_date": study.due_date}),
    }
    # The viewer's own coordination of the study: the "email me about flags" setting (issue 28, defect 3).
    context["my_coordination"] = next((m for m in context["members"] if m.user_id == request.user.pk
                                       and m.role == MemberRole.COORDINATOR and m.active), None)
    return render(request, "annotation/coordinator/study_detail.html", context)


@require_POST
def study_due_date(request: HttpRequest, pk: int) -> HttpResponse:
    """Set or clear the study's due date (the study page's form; recorded in the audit trail)."""
    study = reads.study_get_for_coordinator(request.user, pk=pk)
    form = DueDateForm(request.POST)
    if form.is_valid():
        study_due_date_set(study=study, due_date=form.cleaned_data["due_date"], actor=request.user)
        due = form.cleaned_data["due_date"]
        messages.success(request, f"Saved: the ratings are due on {due:%-d %B %Y}." if due else "Saved: the study has no due date.")
    else:
        messages.error(request, "Nothing was changed: " + " ".join(form.errors.get("due_date", ["not a date."])))
    return redirect(reverse("annotation:study-detail", args=[pk]) + "#due-date")


@require_http_methods(["GET", "POST"])
def study_gold(request: HttpRequest, pk: int) -> HttpResponse:
    """Gold conversations: which ones, how often in each queue, and each rater's accuracy on them."""
    study = reads.study_get_for_coordinator(request.user, pk=pk, write=request.method == "POST")
    if request.method == "POST":
        try:
            ids = [int(x) for x in request.POST.getlist("gold")]
            rate = float(request.POST.get("rate", "0") or 0) / 100
            alert = float(request.POST.get("alert_below", "80") or 0) / 100
        except ValueError:
            messages.error(request, "Nothing was changed: the rate and the threshold are percentages, the conversations ids.")
            return redirect("annotation:study-gold", pk=pk)
        try:
            result = gold.gold_set(study=study, conversation_ids=ids, rate=rate, alert_below=alert, actor=request.user)
        except AnnotationError as exc:
            messages.error(request, f"Nothing was changed: {exc}")
            return redirect("annotation:study-gold", pk=pk)
        messages.success(
            request,
            f"Saved: {result.marked} gold conversation{'s' if result.marked != 1 else ''} at {rate:.0%} of each queue; "
            f"{result.added} gold assignment{'s' if result.added != 1 else ''} added to raters' queues"
            + (f", {result.withdrawn} not started withdrawn" if result.withdrawn else "")
            + (" (every rater already holds these conversations or has their share: gold goes only where it is new)"
               if rate > 0 and result.marked and not result.added else "") + ".",
        )
        return redirect("annotation:study-gold", pk=pk)
    context = {
        "study": study,
        "manages": reads.user_manages_study(request.user, study),
        "candidates": gold.gold_candidates(study),
        "report": gold.gold_accuracy(study),
        "max_rate": int(gold.MAX_RATE * 100),
    }
    return render(request, "annotation/coordinator/study_gold.html", context)


@require_GET
def study_gold_csv(request: HttpRequest, pk: int) -> HttpResponse:
    """Each rater's gold ratings as CSV: accuracy overall, on the recent ones, and each in order."""
    study = reads.study_get_for_coordinator(request.user, pk=pk, write=False)
    report = gold.gold_accuracy(study)
    rows = ([r.username, r.n, r.accuracy, r.recent, r.alert, r.reading, " ".join(f"{x:.2f}" for x in r.series)]
            for r in report.raters)
    return _csv(f"study-{study.pk}-gold-accuracy.csv",
                ["rater", "gold_ratings", "accuracy", "recent_accuracy", "alert", "reading", "each_in_order"], rows)


@require_GET
def study_audit_csv(request: HttpRequest, pk: int) -> HttpResponse:
    """Return the study's whole audit trail as CSV (the page shows it a page at a time)."""
    study = reads.study_get_for_coordinator(request.user, pk=pk, write=False)
    rows = ([e.event.created_at.isoformat(), e.event.actor.get_username() if e.event.actor else "system", e.action,
             e.summary, e.event.reason] for e in reads.study_audit_trail(study))
    return _csv(f"study-{study.pk}-audit-trail.csv", ["when", "who", "what", "details", "why"], rows)


@require_POST
def study_assign_view(request: HttpRequest, pk: int) -> HttpResponse:
    study = reads.study_get_for_coordinator(request.user, pk=pk)
    form = AssignForm(request.POST)
    if not form.is_valid():
        messages.error(request, "The seed must be a whole number of 0 or more.")
        return _detail(pk)
    try:
        result = study_assign(study=study, actor=request.user, seed=form.cleaned_data["seed"])
    except AnnotationError as exc:
        messages.error(request, str(exc))
    else:
        mixed = gold.gold_mix(study)  # gold conversations keep their share of the new queues (issue 29)
        messages.success(request, f"Assigned {result['n_assignments']} conversation ratings with seed {result['seed']} (recorded)"
                         + (f"; {mixed} gold conversation(s) mixed into the queues" if mixed else "") + ".")
    return _detail(pk, "design")


@require_POST
def study_rater_add(request: HttpRequest, pk: int) -> HttpResponse:
    study = reads.study_get_for_coordinator(request.user, pk=pk)
    form = AddRaterForm(request.POST, candidates=list(reads.rater_candidates()))
    if not form.is_valid():
        messages.error(request, "Pick a rater and give a label.")
        return _detail(pk, "raters")
    user = reads.rater_candidate_get(user_id=int(form.cleaned_data["user"]))
    try:
        moved = study_add_rater(
            study=study, user=user, label=form.cleaned_data["label"].strip(), actor=request.user,
            reason=form.cleaned_data["reason"], rebalance=form.cleaned_data["rebalance"],
        )
    except AnnotationError as exc:
        messages.error(request, str(exc))
    else:
        mixed = gold.gold_mix(study)  # the new rater's share of gold conversations (issue 29)
        messages.success(request, f"Added {user.get_username()}; {len(moved)} unstarted assignment(s) moved to them"
                         + (f", and {mixed} gold conversation(s) mixed into their queue" if mixed else "") + ".")
    return _detail(pk, "raters")


@require_POST
def study_member_add(request: HttpRequest, pk: int) -> HttpResponse:
    study = reads.study_get_for_coordinator(request.user, pk=pk)
    user = reads.member_candidates(study).filter(pk=_int_or_zero(request.POST.get("user"))).first()
    if user is None:
        messages.error(request, "Pick a researcher or coordinator who is not yet a member.")
        return _detail(pk, "raters")
    try:
        study_add_member(study=study, user=user, role=request.POST.get("role", ""), actor=request.user)
    except AnnotationError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, f"{user.get_username()} can now open this study as {request.POST.get('role')}.")
    return _detail(pk, "raters")


def _int_or_zero(value: str | None) -> int:
    try:
        return int(value or 0)
    except ValueError:
        return 0


@require_POST
def study_rater_remove(request: HttpRequest, pk: int, user_id: int) -> HttpResponse:
    study = reads.study_get_for_coordinator(request.user, pk=pk)
    rater = reads.study_rater_get(study, user_id=user_id)
    form = RemoveRaterForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Say why the rater is removed: the reason goes into the audit trail.")
        return _detail(pk, "raters")
    redistribute = not form.cleaned_data["hold_unstarted"]
    try:
        moved = study_remove_rater(study=study, rater=rater, actor=request.user, reason=form.cleaned_data["reason"],
                                   redistribute=redistribute)
    except AnnotationError as exc:
        messages.error(request, str(exc))
        return _detail(pk, "raters")
    left = reads.removed_rater_assignments(study).filter(rater=rater, kept_after_removal=False).count()
    done = f"Removed {rater.get_username()}" + (f"; {len(moved)} unstarted assignment(s) redistributed" if redistribute else "")
    if left:
        messages.warning(request, f"{done}. {left} conversation(s) they still hold await your decision below: keep with them, move or discard.")
        return _detail(pk, "removed-work")
    messages.success(request, f"{done}.")
    return _detail(pk, "raters")


@require_POST
def study_removed_work(request: HttpRequest, pk: int) -> HttpResponse:
    """Decide what happens to conversations removed raters still hold (one by one, or all at once)."""
    study = reads.study_get_for_coordinator(request.user, pk=pk)
    back = "annotation:study-progress" if request.POST.get("next") == "progress" else "annotation:study-detail"
    target = redirect(reverse(back, args=[pk]) + "#removed-work")
    reason = request.POST.get("reason", "").strip()
    awaiting = [row.assignment.pk for row in reads.removed_work(study).awaiting]
    decisions = removed_work_decisions(request.POST, awaiting)
    if not decisions:
        messages.error(request, "Nothing was changed: choose what happens to at least one conversation.")
        return target
    if not reason:
        messages.error(request, "Nothing was changed: say why (the reason goes into the audit trail with each decision).")
        return target
    try:
        counts = removed_work_decide(study=study, decisions=decisions, actor=request.user, reason=reason)
    except AnnotationError as exc:
        messages.error(request, str(exc)[:1].upper() + str(exc)[1:])
        return target
    done = [f"{n} {what}" for what, n in (("kept with the removed rater", counts[KEEP]), ("moved", counts[MOVE]),
                                           ("discarded", counts[DISCARD])) if n]
    messages.success(request, "Recorded in the audit trail: " + ", ".join(done) + ".")
    return target


def assignment_reassign_view(request: HttpRequest, pk: int, assignment_id: int) -> HttpResponse:
    study = reads.study_get_for_coordinator(request.user, pk=pk)
    assignment = reads.assignment_get_for_coordinator(study, pk=assignment_id)
    # Only raters who could take it: active, and not already holding this conversation.
    holders = reads.conversation_holders(study, conversation_id=assignment.conversation_id)
    raters = [m.user for m in reads.rater_memberships(study) if m.active and m.user_id not in holders]
    form = ReassignForm(request.POST or None, raters=raters)
    movable = assignment.status in (AssignmentStatus.NOT_STARTED, AssignmentStatus.IN_PROGRESS)
    if request.method == "POST" and movable and form.is_valid():
        new_rater = reads.study_rater_get(study, user_id=int(form.cleaned_data["new_rater"]))
        try:
            assignment_reassign(assignment=assignment, new_rater=new_rater, actor=request.user, reason=form.cleaned_data["reason"])
        except AnnotationError as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, f"Conversation {assignment.conversation.code} moved to {new_rater.get_username()}.")
            return redirect("annotation:study-progress", pk=pk)
    context = {"study": study, "assignment": assignment, "form": form, "movable": movable}
    return render(request, "annotation/coordinator/assignment_reassign.html", context, status=400 if form.errors else 200)


PROGRESS_COLUMNS = [
    Column("code", "Conversation", lambda r: r.conversation.code),
    Column("persona", "Persona", lambda r: r.conversation.persona.name if r.conversation.persona else None),
    Column("chatbot", "Chatbot", lambda r: r.conversation.target.code if r.conversation.target else None),
    Column("done", "Done", lambda r: (r.n_submitted / len(r.cells)) if r.cells else 0.0, numeric=True),
]


@require_GET
def study_progress(request: HttpRequest, pk: int) -> HttpResponse:
    study = reads.study_get_for_coordinator(request.user, pk=pk, write=False)
    progress = progress_reads.study_progress(study)
    table = TableQuery.from_request(
        request, filters=progress_reads.PROGRESS_FILTERS, columns=PROGRESS_COLUMNS, default_sort="code"
    )
    rows = table.sorted(progress_reads.conversation_rows(progress, show=table.show, q=table.q))
    context = {
        "study": study,
        "manages": reads.user_manages_study(request.user, study),
        "progress": progress,
        "table": table,
        "page": table.paginate(rows),
        "removed": reads.removed_work(study),
        # The coordinator's day: open flags and who a reminder would reach.
        "n_open_flags": study.n_open_flags,
        "reminder_candidates": sum(1 for r in progress.raters if r.membership.active and not r.external_label
                                   and r.remaining and not r.reminders_off and r.membership.user.email),
        # Where email goes, in words, and what became of the last reminders (issue 28, defect 2).
        "email_backend": backend_info(),
        "reminder_log": reminder_log(study),
        **_reminder_cooldown(study),
        # Gold conversations in the queues: each rater's accuracy on them (issue 29).
        "gold_report": gold.gold_report_if_used(study),
    }
    return render(request, "annotation/coordinator/study_progress.html", context)


def _reminder_cooldown(study: Any) -> dict[str, Any]:
    """Return when the last reminders went, and whether sending again now asks to confirm."""
    return {"last_reminders_at": last_reminders_at(study), "reminders_confirm": reminders_recent(study) is not None}


@require_GET
def study_progress_csv(request: HttpRequest, pk: int, table: str) -> HttpResponse:
    if table not in ("raters", "conversations"):
        raise Http404("not found")
    study = reads.study_get_for_coordinator(request.user, pk=pk, write=False)
    progress = progress_reads.study_progress(study)
    rows = progress_reads.progress_rater_rows if table == "raters" else progress_reads.progress_assignment_rows
    return _csv(f"study-{study.pk}-progress-{table}.csv", *rows(progress))


CONSENSUS_COLUMNS = [
    Column("code", "Conversation", lambda r: r.conversation.code),
    Column("chatbot", "Chatbot", lambda r: r.conversation.target.code if r.conversation.target else None),
    Column("unresolved", "Unresolved", lambda r: r.n_unresolved, numeric=True),
    Column("disagreement", "Most disputed", lambda r: r.disagreement, numeric=True),
]


@require_GET
def study_consensus(request: HttpRequest, pk: int) -> HttpResponse:
    study = reads.study_get_for_coordinator(request.user, pk=pk, write=False)
    consensus = consensus_reads.consensus_table(study)
    table = TableQuery.from_request(
        request, filters=consensus_reads.CONSENSUS_FILTERS, columns=CONSENSUS_COLUMNS, default_sort="code"
    )
    rows = table.sorted(consensus_reads.consensus_rows(consensus.rows, show=table.show, q=table.q))
    summary = consensus_reads.consensus_summary(study)
    context = {
        "study": study,
        "manages": reads.user_manages_study(request.user, study),
        "consensus": consensus,
        "table": table,
        "page": table.paginate(rows),
        "summary": summary,
        "n_queue": summary.queue,
        "withheld": withheld_note(n) if (n := len(locked_conversation_ids(study_id=study.pk))) else "",
        "marker": consensus_marker(study),
    }
    return render(request, "annotation/coordinator/study_consensus.html", context)


@require_POST
def study_consensus_compute(request: HttpRequest, pk: int) -> HttpResponse:
    """Queue the consensus for a worker (never computed in the request); the page shows its progress."""
    study = reads.study_get_for_coordinator(request.user, pk=pk)
    job = consensus_request(study=study, actor=request.user)
    if job.status == "ready":
        counts = job.counts
        summary = ", ".join(f"{n} {name.replace('_', '-')}" for name, n in sorted(counts.items())) or "no submitted ratings yet"
        messages.success(request, f"Consensus computed: {summary}; {job.written} label{'s' if job.written != 1 else ''} changed.")
    elif job.status == "failed":
        messages.error(request, f"The consensus could not be computed: {job.error}")
    else:
        messages.info(request, "A background worker is computing the consensus; this page shows its progress and reloads when it is done.")
    return redirect("annotation:study-consensus", pk=pk)


@require_GET
def study_consensus_job(request: HttpRequest, pk: int) -> JsonResponse:
    """The state of the study's consensus job, for the page's progress poll (JSON)."""
    study = reads.study_get_for_coordinator(request.user, pk=pk, write=False)
    job = shown_job(consensus_marker(study))
    return JsonResponse(job_state(job) if job is not None else {"pending": False})


@require_GET
def study_consensus_csv(request: HttpRequest, pk: int) -> HttpResponse:
    study = reads.study_get_for_coordinator(request.user, pk=pk, write=False)
    response = _csv(f"study-{study.pk}-consensus.csv", *consensus_reads.consensus_csv_rows(study))
    withheld = len(locked_conversation_ids(study_id=study.pk))
    if withheld:
        response["X-Evalsite-Withheld"] = withheld_note(withheld)
    return response


def _queue_context(request: HttpRequest, study: Any, conversation_id: int | None, **extra: Any) -> dict[str, Any]:
    table = TableQuery.from_request(request, filters=consensus_reads.QUEUE_FILTERS)
    queue = consensus_reads.adjudication_queue_by_conversation(study, show=table.show, q=table.q)
    page = table.paginate(queue, per_page=30)
    if conversation_id is None and page.object_list:
        conversation_id = page.object_list[0].conversation.pk
    case = None
    if conversation_id is not None:
        try:
            case = consensus_reads.adjudication_conversation_case(study, conversation_id=conversation_id)
        except Http404:
            case = None  # settled meanwhile: show the queue
    # Raters as Rater A, B, C (issue 28): their names only when a coordinator asks, recorded in the audit trail.
    show_names = request.GET.get("names") == "1"  # every caller checked the user manages the study
    if show_names and case is not None:
        study_event(study=study, actor=request.user, action="adjudication_names_shown", conversation=case.conversation.code,
                    reason="a coordinator chose to see the raters' names while adjudicating")
    letters = reads.study_rater_letters(study) if case is not None else {}
    case_rows = [
        (c, [(a, a.username if show_names else letters.get(a.username, "Rater ?")) for a in c.answers])
        for c in (case.cases if case is not None else [])
    ]
    return {
        "study": study,
        "table": table,
        "page": page,
        "n_waiting": sum(len(g.entries) for g in queue),
        "case": case,
        "show_names": show_names,
        "case_rows": case_rows,
        "titles": consensus_reads.item_titles(study),
        "done": consensus_reads.adjudicated_entries(study)[:50],
        "chosen": {},
        "summary": consensus_reads.consensus_summary(study),
        **extra,
    }


@require_GET
def study_adjudication(request: HttpRequest, pk: int) -> HttpResponse:
    study = reads.study_get_for_coordinator(request.user, pk=pk)
    conversation = request.GET.get("conversation", "")
    entry = request.GET.get("entry", "")
    conversation_id = int(conversation) if conversation.isdigit() else None
    if conversation_id is None and entry.isdigit():
        conversation_id = study.consensus.filter(pk=int(entry)).values_list("conversation_id", flat=True).first()
    context = _queue_context(request, study, conversation_id)
    return render(request, "annotation/coordinator/adjudication.html", context)


@require_POST
def study_adjudicate_conversation(request: HttpRequest, pk: int, conversation_id: int) -> HttpResponse:
    """Record final labels for the disputed items of one conversation, with one reason for all."""
    study = reads.study_get_for_coordinator(request.user, pk=pk)
    case = consensus_reads.adjudication_conversation_case(study, conversation_id=conversation_id)
    chosen = {c.entry.pk: request.POST.get(f"label_{c.entry.pk}", "") for c in case.cases}
    reason = request.POST.get("reason", "").strip()
    errors: dict[str, str] = {}
    if not reason:
        errors["reason"] = "Say why: the reason is recorded with every label you set."
    if not any(chosen.values()):
        errors["labels"] = "Choose a final label for at least one item."
    if not errors:
        try:
            entries = consensus_adjudicate_conversation(
                study=study, conversation_id=conversation_id, labels=chosen, reason=reason, actor=request.user
            )
        except AnnotationError as exc:
            errors["labels"] = str(exc)
        else:
            left = len(case.cases) - len(entries)
            messages.success(
                request,
                f"{case.conversation.code}: {len(entries)} final label{'s' if len(entries) != 1 else ''} recorded"
                + (f"; {left} item{'s' if left != 1 else ''} of it still open." if left else "; the next conversation is open."),
            )
            # Stay on the conversation while it has disputed items; then the queue opens the next one.
            target = reverse("annotation:study-adjudication", args=[pk])
            return redirect(f"{target}?conversation={conversation_id}" if left else target)
    context = _queue_context(request, study, conversation_id, errors=errors, chosen=chosen, reason=reason)
    return render(request, "annotation/coordinator/adjudication.html", context, status=400)


@require_POST
def study_adjudicate(request: HttpRequest, pk: int, consensus_id: int) -> HttpResponse:
    """Record the final label of one item (the per-conversation form is the page's usual way)."""
    study = reads.study_get_for_coordinator(request.user, pk=pk)
    case = consensus_reads.adjudication_case(study, consensus_id=consensus_id)
    form = AdjudicateForm(request.POST, labels=consensus_reads.adjudication_labels(case))
    if form.is_valid():
        try:
            entry = consensus_adjudicate(
                consensus_id=consensus_id, study=study, label=form.cleaned_data["label"],
                reason=form.cleaned_data["reason"], actor=request.user,
            )
        except AnnotationError as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, f"{entry.conversation.code} · {case.item.text}: final label '{entry.label}' recorded.")
            still_open = consensus_reads.adjudication_queue(study).filter(conversation_id=entry.conversation_id).exists()
            target = reverse("annotation:study-adjudication", args=[pk])
            return redirect(f"{target}?conversation={entry.conversation_id}" if still_open else target)
    errors = {"labels": " ".join(form.non_field_errors() + form.errors.get("label", [])), "reason": " ".join(form.errors.get("reason", []))}
    context = _queue_context(request, study, case.entry.conversation_id, errors={k: v for k, v in errors.items() if v},
                             chosen={case.entry.pk: request.POST.get("label", "")}, reason=request.POST.get("reason", ""))
    return render(request, "annotation/coordinator/adjudication.html", context, status=400)


def study_import_ratings(request: HttpRequest, pk: int) -> HttpResponse:
    study = reads.study_get_for_coordinator(request.user, pk=pk)

    def run(data: dict) -> dict:
        (name, text), *_ = read_upload(data["file"].name, data["file"])
        result = ratings_import(
            study=study, text=text, file=name, actor=request.user, dry_run=data["dry_run"],
            fmt=data["format"] or "long", external_raters=data["external_raters"],
        )
        return {"result": result}

    return import_page(
        request, target=f"ratings:study-{study.pk}",  # the kept dry-run file is good for this study only
        form_class=RatingsImportForm, template="annotation/coordinator/ratings_import.html",
        context={"study": study}, run=run,
    )
