"""axe-core over every page of the site, each visited as the role that uses it.

Every named URL pattern outside the API and Django's admin is either visited here or listed in
NOT_PAGES with the reason (a POST action, a file download, an htmx fragment): a new page that
nobody adds here fails the coverage check.
"""

from __future__ import annotations

import os
from typing import Any, NamedTuple
from urllib.parse import urlencode

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.test import override_settings
from django.urls import URLResolver, get_resolver, reverse

from annotation.consensus.services import study_compute_consensus
from annotation.management.commands.seed_demo import DEMO_USERS
from annotation.models import Assignment, AssignmentStatus, ConsensusProvenance, Study
from annotation.rating.services import rating_save_answer, rating_submit
from annotation.studies.services import study_add_member, study_assign, study_create
from corpus.models import Conversation, Instrument, PersonaSet
from judging.services import judge_create, judge_run_create
from reports.devset.services import split_make
from simulation.models import SimulationBatch
from simulation.prompts import prompt_templates_ensure_builtin
from tests.annotation.rater_setup import answer_everything, flow_instrument
from tests.browser.conftest import check_a11y
from tests.support.active_study import active_study
from tests.support.devset_study import build_devset_study

pytestmark = pytest.mark.django_db(transaction=True)

NOT_PAGES = {
    "logout": "POST action",
    "sharing-set": "POST action (the sharing switch on the chatbot, conversation, persona set, batch and run pages)",
    "corpus:conversation-export": "file download",
    "simulation:batch-progress": "htmx fragment of the batch page (checked within it)",
    "simulation:batch-cancel": "POST action", "simulation:batch-resume": "POST action",
    "reports:reliability-csv": "file download", "reports:realism-csv": "file download",
    "reports:scorecard-csv": "file download", "reports:judges-csv": "file download",
    "reports:study-export": "file download", "reports:study-bundle-download": "file download",
    "reports:run-scorecard-csv": "file download",
    "judging:run-progress": "htmx fragment of the run page (checked within it)",
    "judging:run-cancel": "POST action", "judging:run-retry": "POST action", "judging:run-export": "file download",
    "annotation:rate-continue": "POST action", "annotation:rate-submit": "POST action",
    "annotation:rate-revise": "POST action",
    "annotation:study-selection-preview": "htmx fragment of the new-study form",
    "annotation:study-assign": "POST action", "annotation:study-rater-add": "POST action",
    "annotation:study-member-add": "POST action", "annotation:study-rater-remove": "POST action",
    "annotation:study-removed-work": "POST action (forms on the study and progress pages)",
    "annotation:study-progress-csv": "file download", "annotation:study-consensus-compute": "POST action",
    "annotation:study-consensus-csv": "file download", "annotation:study-adjudicate": "POST action",
    "annotation:study-adjudicate-conversation": "POST action",
    "corpus:conversation-content-warning": "POST action (a form on the conversation page)",
    "corpus:conversation-link-personas": "POST action (a button on the conversation list)",
    "reports:job": "JSON progress of a report being computed (polled by the report pages)",
    "annotation:study-consensus-job": "JSON progress of the consensus being computed (polled by the consensus page)",
    "annotation:study-gold-csv": "file download",
    "annotation:study-plan-preview": "htmx fragment of the planned-study form (checked within it)",
    "annotation:study-plan-csv": "file download", "annotation:study-sitting-limit": "POST action",
    "reports:judge-assisted-csv": "file download", "reports:drift-csv": "file download",
    "reports:raters-csv": "file download",
    "reports:judges-epsilon": "POST action (a form on the judges page)", "reports:judges-table-csv": "file download",
    "api-schema": "the OpenAPI schema (YAML) that the API docs page reads",
    "annotation:study-rater-support": "POST action (a form on the study page)",
    "annotation:study-evidence": "POST action (a form on the study page)",
    "annotation:study-adjudication-blinding": "POST action (a form on the adjudication page)",
    # The coordinator's day and honest counts (issue 19, i19coord).
    "simulation:batch-count": "htmx fragment of the new-batch form (checked within it)",
    "judging:run-count": "htmx fragment of the new-run form (checked within it)",
    "annotation:study-audit-csv": "file download", "annotation:study-flags-csv": "file download",
    "annotation:study-reminders-send": "POST action (a button on the progress page)",
    "annotation:study-reminders-schedule": "POST action (a form on the progress page)",
    "annotation:rate-flag": "POST action (a form on the rating page)",
    "annotation:study-flag-resolve": "POST action (a form on the flags page)",
    "annotation:study-flag-notices": "POST action (a form on the study page)",
    "annotation:study-due-date": "POST action (a form on the study page)",
    "reports:development-split": "POST action", "reports:development-declare": "POST action",
    "reports:development-evaluate": "POST action", "reports:development-csv": "file download",
    "reports:development-look-csv": "file download",
    "reports:development-look-state": "JSON progress of a look being computed (polled by the look page)",
    "reports:development-look": "checked by tests/browser/test_devset.py (needs a split, a final version and a look)",
    # The benchmark leaderboard (issue 23).
    "reports:instances-csv": "file download", "reports:review-code-add": "POST action (a form on the review page)",
    "reports:failure-codes-csv": "file download", "reports:failure-counts-csv": "file download",
    "reports:failure-code-remove": "POST action",
    "reports:leaderboard-csv": "file download", "reports:run-leaderboard-csv": "file download",
    # Active sampling (issue 23, i23active).
    "annotation:study-active-next": "POST action (the next-batch button on the active sampling page)",
    "annotation:study-active-csv": "file download", "annotation:study-active-estimates-csv": "file download",
    # Evidence agreement (issue 27).
    "reports:evidence-agreement-csv": "file download",
}


# Whole URL trees that are not the site's own pages: Django's admin (its own stylesheet, for
# administrators only) and the API's JSON endpoints (the API reference page, api-docs, is visited).
NOT_SITE_PAGES = {"admin/": "Django's admin", "api/v1/": "the API answers JSON only (its reference page, api-docs, is visited)"}


def page_names() -> set[str]:
    """Return the name of every URL pattern of the site's own pages (namespaced)."""
    names: set[str] = set()

    def walk(patterns, ns: str | None = None, prefix: str = "") -> None:  # type: ignore[no-untyped-def]
        for entry in patterns:
            if isinstance(entry, URLResolver):
                walk(entry.url_patterns, entry.namespace or ns, prefix + str(entry.pattern))
            elif entry.name and not (prefix + str(entry.pattern)).startswith((*NOT_SITE_PAGES, "^api/v1", "^admin")):
                names.add(f"{ns}:{entry.name}" if ns else entry.name)

    walk(get_resolver().url_patterns)
    return names


def log_in_as(page, username: str, password: str) -> None:  # type: ignore[no-untyped-def]
    page.context.clear_cookies()
    page.goto("/accounts/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    page.click("button[type=submit]")
    page.wait_for_load_state("networkidle")


class Visit(NamedTuple):
    """One page to check: its URL pattern, who visits it, its path, which variant, the status it answers."""

    name: str
    user: str  # a demo login; "" for anonymous
    path: str
    variant: str = ""  # e.g. "content warning", "guided flow": one URL pattern, several pages
    status: int = 200


PASSWORDS = {name: password for name, _, password in DEMO_USERS}
CONTENT_WARNING = "content warning"


def _rater_variants(study: Study) -> list[Visit]:
    """Put the rater's pages in their other states; return their visits.

    A submitted rating (locked, changed through "Change this answer") whose conversation the
    second rater answered differently (so adjudication has a case), a withdrawn conversation, a
    content warning not yet passed, a guided question flow with the study section, half
    answered, and a main conversation locked until calibration is done.
    """
    users = {u.username: u for u in get_user_model().objects.filter(username__in=PASSWORDS)}
    clinician, clinician2 = users["clinician"], users["clinician2"]
    mine = list(study.assignments.filter(rater=clinician).order_by("position"))
    submitted, withdrawn = mine[1], mine[2]
    warning = next(a for a in mine[3:] if a.conversation.sensitive)
    answer_everything(submitted, clinician)
    rating_submit(assignment_id=submitted.pk, user=clinician)
    theirs = study.assignments.get(rater=clinician2, conversation=submitted.conversation)
    answer_everything(theirs, clinician2)
    for key in ("amhart_01", "amhart_02", "amhart_05"):
        rating_save_answer(assignment_id=theirs.pk, user=clinician2, part="main", item_key=key, value="no",
                           note="The reply changed the subject." if key == "amhart_01" else None)
    rating_submit(assignment_id=theirs.pk, user=clinician2)
    Assignment.objects.filter(pk=withdrawn.pk).update(status=AssignmentStatus.WITHDRAWN)

    flow_study = study_create(
        name="Guided flow study", rater_title="Suicide-risk conversations", instrument=flow_instrument(),
        section=study.section, conversation_ids=[c.conversation_id for c in mine[:3]],
        created_by=users["coordinator"], coordinators=[users["coordinator"]], raters=[(clinician, "clinician")],
        raters_per_conversation=1,
    )
    study_assign(study=flow_study, actor=users["coordinator"], seed=3)
    flow_assignment = flow_study.assignments.order_by("position").first()
    rating_save_answer(assignment_id=flow_assignment.pk, user=clinician, part="main", item_key="1", value="Yes")
    # Calibration first: the main conversation is locked until the calibration one is submitted.
    second = next(a.conversation_id for a in mine if not a.conversation.sensitive)  # no warning before the 423
    first = next(a.conversation_id for a in mine if a.conversation_id != second)
    calibrated = study_create(
        name="Calibrated study", instrument=study.instrument, section=None, conversation_ids=[second],
        created_by=users["coordinator"], raters=[(clinician, "clinician")], raters_per_conversation=1,
        calibration={first: {"amhart_01": {"label": "yes", "explanation": "validates the feeling in turn 2"}}},
    )
    study_assign(study=calibrated, actor=users["coordinator"], seed=5)
    locked_main = calibrated.assignments.get(is_calibration=False)
    rate = "annotation:rate"
    return [
        Visit(rate, "clinician", reverse(rate, args=[locked_main.pk]), "calibration first", status=423),
        Visit(rate, "clinician", reverse(rate, args=[submitted.pk]), "submitted, locked"),
        Visit(rate, "clinician", reverse(rate, args=[withdrawn.pk]), "withdrawn", status=410),
        Visit(rate, "clinician", reverse(rate, args=[warning.pk]), CONTENT_WARNING),
        Visit(rate, "clinician", reverse(rate, args=[flow_assignment.pk]), "guided flow"),
    ]


def site_visits() -> list[Visit]:
    """Seed the demo (and the rater pages' other states) and return every page to visit, as whom."""
    call_command("seed_demo", "--quiet-logins", "--force")
    study = Study.objects.get(is_demo=True)
    # The demo study is rated in full already; the rater pages' other states (and the open
    # adjudication case they make) get a study of their own on the same conversations.
    users = {u.username: u for u in get_user_model().objects.filter(username__in=PASSWORDS)}
    states = study_create(
        name="Rater page states", instrument=study.instrument, section=study.section,
        conversation_ids=list(study.assignments.values_list("conversation_id", flat=True).distinct()),
        created_by=users["coordinator"], coordinators=[users["coordinator"]],
        raters=[(users["clinician"], "clinician"), (users["clinician2"], "clinician")], raters_per_conversation=2,
    )
    study_assign(study=states, actor=users["coordinator"], seed=7)
    rater_variants = _rater_variants(states)  # before the consensus: their submitted ratings dispute items
    study_compute_consensus(study=states)
    study_compute_consensus(study=study)
    conversation = Conversation.objects.order_by("id").first()
    judge = judge_create(name="axe-judge", instrument=study.instrument, model="openai/axe-judge",
                         api_base="http://127.0.0.1:9/v1", api_key_env="AXE_TEST_API_KEY")
    run = judge_run_create(judges=[judge], conversation_ids=[conversation.pk], start=False)
    batch = SimulationBatch.objects.first()  # a batch needs a live chatbot: test_launch.py checks that page
    # One still to rate (the demo's main study is rated already; its validation sample is not).
    rater_assignment = Assignment.objects.filter(rater__username="clinician").exclude(
        status__in=[AssignmentStatus.WITHDRAWN, AssignmentStatus.SUBMITTED]).order_by("study", "position").first()
    adjudicable = study.assignments.exclude(status=AssignmentStatus.WITHDRAWN).first()

    visits: list[tuple[str, str, str]] = [  # (pattern name, user, path)
        ("login", "", reverse("login")),
        ("password_reset", "", reverse("password_reset")),
        ("password_reset_done", "", reverse("password_reset_done")),
        ("password_reset_confirm", "", reverse("password_reset_confirm", args=["MQ", "expired-token"])),
        ("password_reset_complete", "", reverse("password_reset_complete")),
        ("home", "researcher", reverse("home")),
        ("api-tokens", "researcher", reverse("api-tokens")),
        ("password_change", "researcher", reverse("password_change")),
        ("password_change_done", "researcher", reverse("password_change_done")),
        ("annotation:my-studies", "clinician", reverse("annotation:my-studies")),
        ("annotation:rate", "clinician", reverse("annotation:rate", args=[rater_assignment.pk])),
        ("annotation:my-reminders", "clinician", reverse("annotation:my-reminders")),
        ("annotation:study-list", "coordinator", reverse("annotation:study-list")),
        ("annotation:study-create", "coordinator", reverse("annotation:study-create")),
        ("annotation:study-detail", "coordinator", reverse("annotation:study-detail", args=[study.pk])),
        ("annotation:study-progress", "coordinator", reverse("annotation:study-progress", args=[study.pk])),
        ("annotation:study-flags", "coordinator", reverse("annotation:study-flags", args=[study.pk])),
        ("annotation:study-consensus", "coordinator", reverse("annotation:study-consensus", args=[study.pk])),
        ("annotation:study-gold", "coordinator", reverse("annotation:study-gold", args=[study.pk])),
        ("annotation:study-adjudication", "coordinator", reverse("annotation:study-adjudication", args=[study.pk])),
        ("annotation:study-assignment-reassign", "coordinator",
         reverse("annotation:study-assignment-reassign", args=[study.pk, adjudicable.pk])),
        ("annotation:study-import-ratings", "coordinator", reverse("annotation:study-import-ratings", args=[study.pk])),
        ("annotation:study-create-from-run", "coordinator", reverse("annotation:study-create-from-run") + f"?run={run.pk}"),
        ("corpus:conversation-list", "researcher", reverse("corpus:conversation-list")),
        ("corpus:conversation-detail", "researcher", reverse("corpus:conversation-detail", args=[conversation.code])),
        ("corpus:persona-set-list", "researcher", reverse("corpus:persona-set-list")),
        ("corpus:persona-set-detail", "researcher", reverse("corpus:persona-set-detail", args=[PersonaSet.objects.first().pk])),
        ("corpus:target-list", "researcher", reverse("corpus:target-list")),
        ("corpus:target-create", "researcher", reverse("corpus:target-create")),
        ("corpus:import-index", "researcher", reverse("corpus:import-index")),
        ("corpus:import-conversations", "researcher", reverse("corpus:import-conversations")),
        ("corpus:import-personas", "researcher", reverse("corpus:import-personas")),
        ("corpus:instrument-list", "researcher", reverse("corpus:instrument-list")),
        ("corpus:instrument-detail", "researcher", reverse("corpus:instrument-detail", args=[Instrument.objects.first().pk])),
        ("corpus:import-instruments", "researcher", reverse("corpus:import-instruments")),
        ("simulation:batch-list", "researcher", reverse("simulation:batch-list")),
        ("simulation:batch-create", "researcher", reverse("simulation:batch-create")),
        ("simulation:prompt-template-list", "researcher", reverse("simulation:prompt-template-list")),
        ("simulation:prompt-template-create", "researcher", reverse("simulation:prompt-template-create")),
        ("simulation:prompt-template-detail", "researcher",
         reverse("simulation:prompt-template-detail", args=[next(iter(prompt_templates_ensure_builtin().values())).pk])),
        ("judging:judge-list", "researcher", reverse("judging:judge-list")),
        ("judging:judge-create", "researcher", reverse("judging:judge-create")),
        ("judging:judge-detail", "researcher", reverse("judging:judge-detail", args=[judge.pk])),
        ("judging:judge-clone", "researcher", reverse("judging:judge-clone", args=[judge.pk])),
        ("judging:prompt-list", "researcher", reverse("judging:prompt-list")),
        ("judging:prompt-create", "researcher", reverse("judging:prompt-create")),
        ("judging:prompt-detail", "researcher", reverse("judging:prompt-detail", args=[judge.prompt_id])),
        ("judging:run-list", "researcher", reverse("judging:run-list")),
        ("judging:run-create", "researcher", reverse("judging:run-create")),
        ("judging:run-detail", "researcher", reverse("judging:run-detail", args=[run.pk])),
        ("judging:run-conversation", "researcher", reverse("judging:run-conversation", args=[run.pk, conversation.code])),
        ("reports:index", "researcher", reverse("reports:index")),
        ("reports:reliability", "admin", reverse("reports:reliability", args=[study.pk])),
        ("reports:realism", "admin", reverse("reports:realism", args=[study.pk])),
        ("reports:scorecard", "admin", reverse("reports:scorecard", args=[study.pk])),
        ("reports:judges", "admin", reverse("reports:judges", args=[study.pk])),
        ("reports:run-scorecard", "admin", reverse("reports:run-scorecard", args=[run.pk])),
        ("reports:judge-assisted", "admin", reverse("reports:judge-assisted", args=[study.pk])),
        ("reports:drift", "admin", reverse("reports:drift") + f"?a_run={run.pk}&b_run={run.pk}"),
        ("reports:raters", "admin", reverse("reports:raters", args=[study.pk])),
        ("reports:study-bundle", "admin", reverse("reports:study-bundle", args=[study.pk])),
        *_review_visits(study, users),
        ("status", "admin", reverse("status")),
        ("reports:development", "admin", reverse("reports:development", args=[study.pk])),
        ("reports:leaderboard", "admin", reverse("reports:leaderboard", args=[study.pk])),
        ("reports:run-leaderboard", "admin", reverse("reports:run-leaderboard", args=[run.pk])),
    ]
    if batch is not None:
        visits.append(("simulation:batch-detail", "researcher", reverse("simulation:batch-detail", args=[batch.code])))
    else:
        NOT_PAGES["simulation:batch-detail"] = "checked by tests/browser/test_launch.py (a batch needs a chatbot)"
    visits += _active_visits(users_by_name())
    visits.append(evidence_visit("admin"))
    visits += _revise_visits(users_by_name())
    disputed = states.consensus.filter(provenance=ConsensusProvenance.UNRESOLVED).values_list("conversation_id", flat=True).first()
    assert disputed is not None, "the two submitted ratings of the states study should leave an item to adjudicate"
    adjudication = reverse("annotation:study-adjudication", args=[states.pk])
    return [Visit(*visit) for visit in visits] + rater_variants + [
        Visit("annotation:study-adjudication", "coordinator", f"{adjudication}?conversation={disputed}", "a case open"),
        Visit("api-docs", "researcher", reverse("api-docs")),
        # The home page and the menu differ by role.
        *(Visit("home", user, reverse("home"), f"as {user}") for user in ("clinician", "coordinator", "admin")),
    ]


def _review_visits(study: Study, users: dict[str, Any]) -> list[tuple[str, str, str]]:
    """Return the drill-down list, a review page and the failure-modes page of the demo study (issue 27)."""
    from reports.review.codes import (
        failure_category_create,
        failure_code_add,
        failure_codes_categorise,
    )
    from reports.selectors import judge_runs_for_study

    demo_run = judge_runs_for_study(study).order_by("pk").first()
    coded = study.study_conversations.filter(is_calibration=False).select_related("conversation").order_by("conversation__code").first()
    item = study.instrument.items.order_by("position").first().key
    failure_code_add(study=study, conversation=coded.conversation, item_key=item, text="missed passive ideation",
                     judge="", run=demo_run, actor=users["researcher"])
    category = failure_category_create(study=study, name="Misses risk", actor=users["researcher"])
    failure_codes_categorise(study=study, texts=["missed passive ideation"], category=category, actor=users["researcher"])
    code = coded.conversation.code
    return [
        ("reports:instances", "researcher", reverse("reports:instances", args=[study.pk]) + f"?run={demo_run.pk}&disagree=judge"),
        ("reports:review", "researcher", reverse("reports:review", args=[study.pk, code]) + f"?run={demo_run.pk}&disagree=judge"),
        ("reports:failure-modes", "researcher", reverse("reports:failure-modes", args=[study.pk])),
    ]


def users_by_name() -> dict[str, Any]:
    return {u.username: u for u in get_user_model().objects.filter(username__in=PASSWORDS)}


def _active_visits(users: dict[str, Any]) -> list[tuple[str, str, str]]:
    """Return the active sampling pages: the new-study form on a three-judge run, a study mid-way (issue 23)."""
    demo = list(Conversation.objects.filter(is_demo=True).order_by("id"))
    study = active_study(users["coordinator"], [users["clinician2"]], demo, budget=8, batch_size=4, prefix="axe")
    run_id = study.active_plan.judge_run_id
    return [
        ("annotation:study-create-active", "coordinator", reverse("annotation:study-create-active") + f"?run={run_id}"),
        ("annotation:study-active", "coordinator", reverse("annotation:study-active", args=[study.pk])),
    ]


def evidence_visit(user: str, prefix: str = "axev") -> tuple[str, str, str]:
    """Return the evidence agreement page of a study whose clinicians and two judges cite turns (issue 27)."""
    from tests.support.evidence_study import build_evidence_study

    ev = build_evidence_study(prefix=prefix)
    name = "reports:evidence-agreement"
    return (name, user, reverse(name, args=[ev.study.pk]) + f"?run={ev.run.pk}")


def _revise_visits(users: dict[str, Any]) -> list[tuple[str, str, str]]:
    """Return the revise-a-judge page of a split study, as a researcher of it (issue 27)."""
    dev = build_devset_study(prefix="axrv")
    study_add_member(study=dev.study, user=users["researcher"], role="researcher", actor=dev.coordinator)
    split_make(study=dev.study, actor=dev.coordinator, n_test=12, seed=4242)
    query = urlencode({"run": dev.run_v1.pk, "judge": dev.judge_v1.pk, "item": dev.keys[3]})
    return [("reports:devset-revise", "researcher", reverse("reports:devset-revise", args=[dev.study.pk]) + f"?{query}")]


def only_pages(visits: list[Visit]) -> list[Visit]:
    """Return the visits of the URL patterns named in EVALSITE_PAGES (comma-separated), or all of them.

    For checking one page while working on it; the coverage check still sees every visit.
    """
    wanted = {name.strip() for name in os.environ.get("EVALSITE_PAGES", "").split(",") if name.strip()}
    return [v for v in visits if v.name in wanted] if wanted else visits


def uncovered(visits: list[Visit]) -> list[str]:
    """Return the URL pattern names that no visit covers and NOT_PAGES does not excuse."""
    return sorted(page_names() - {v.name for v in visits} - set(NOT_PAGES))


def open_visit(page, visit: Visit) -> None:  # type: ignore[no-untyped-def]
    """Go to the visit's page and check its status; past a content warning unless the visit is the warning."""
    response = page.goto(visit.path)
    assert response is not None and response.status == visit.status, (visit, response and response.status)
    if visit.name == "annotation:rate" and visit.variant != CONTENT_WARNING and page.locator("text=Before you read").count():
        page.click("button:has-text('Continue')")
        page.wait_for_selector("#rate-layout")


@override_settings(EVALSITE_PREFLIGHT=False)
def test_every_page_has_no_serious_or_critical_accessibility_violation(page):
    visits = site_visits()
    missing = uncovered(visits)
    assert not missing, f"pages not checked by axe: {missing}"

    failures: list[str] = []
    who = None
    for visit in only_pages(visits):
        name, user = visit.name, visit.user
        if user != who:
            if user:
                log_in_as(page, user, PASSWORDS[user])
            else:
                page.context.clear_cookies()
            who = user
        open_visit(page, visit)
        try:
            check_a11y(page, f"{name}{' (' + visit.variant + ')' if visit.variant else ''} as {user or 'anonymous'}")
        except AssertionError as exc:
            failures.append(str(exc))
    assert not failures, "\n\n".join(failures)


@override_settings(EVALSITE_PREFLIGHT=False)
def test_evidence_agreement_page_has_no_serious_or_critical_accessibility_violation(page):
    """The evidence agreement page alone (the full run above visits it too), at a phone's and a desktop's width."""
    from tests.browser.conftest import ARTIFACTS, screenshot
    from tests.support.report_study import PASSWORD

    name, _, path = evidence_visit("", prefix="a11yev")
    log_in_as(page, "a11yevresearch1", PASSWORD)
    for width, height in ((390, 844), (1366, 900)):
        page.set_viewport_size({"width": width, "height": height})
        open_visit(page, Visit(name, "researcher", path))
        page.wait_for_selector(".evidence-plot .main-svg")
        screenshot(page, f"evidence-agreement-{width}")  # checks axe too
        page.screenshot(path=str(ARTIFACTS / f"evidence-agreement-{width}-top.png"))  # the first screen
        for part, selector in (("chart", ".evidence-plot"), ("table", ".evidence-judge")):
            page.locator(selector).first.screenshot(path=str(ARTIFACTS / f"evidence-agreement-{width}-{part}.png"))
