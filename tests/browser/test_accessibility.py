"""axe-core over every page of the site, each visited as the role that uses it.

Every named URL pattern outside the API and Django's admin is either visited here or listed in
NOT_PAGES with the reason (a POST action, a file download, an htmx fragment): a new page that
nobody adds here fails the coverage check.
"""

from __future__ import annotations

import pytest
from django.core.management import call_command
from django.test import override_settings
from django.urls import URLResolver, get_resolver, reverse

from annotation.consensus.services import study_compute_consensus
from annotation.management.commands.seed_demo import DEMO_USERS
from annotation.models import Assignment, AssignmentStatus, Study
from corpus.models import Conversation, Instrument, PersonaSet
from judging.services import judge_create, judge_run_create
from simulation.models import SimulationBatch
from simulation.prompts import prompt_templates_ensure_builtin
from tests.browser.conftest import check_a11y

pytestmark = pytest.mark.django_db(transaction=True)

NOT_PAGES = {
    "logout": "POST action",
    "corpus:conversation-export": "file download",
    "simulation:batch-progress": "htmx fragment of the batch page (checked within it)",
    "simulation:batch-cancel": "POST action", "simulation:batch-resume": "POST action",
    "reports:reliability-csv": "file download", "reports:realism-csv": "file download",
    "reports:scorecard-csv": "file download", "reports:judges-csv": "file download",
    "reports:study-export": "file download", "reports:run-scorecard-csv": "file download",
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
    "annotation:study-plan-preview": "htmx fragment of the planned-study form (checked within it)",
    "annotation:study-plan-csv": "file download", "annotation:study-sitting-limit": "POST action",
    "reports:judge-assisted-csv": "file download", "reports:drift-csv": "file download",
    "reports:raters-csv": "file download",
    "reports:judges-epsilon": "POST action (a form on the judges page)", "reports:judges-table-csv": "file download",
    "reports:development-split": "POST action", "reports:development-declare": "POST action",
    "reports:development-evaluate": "POST action", "reports:development-csv": "file download",
    "reports:development-look-csv": "file download",
    "reports:development-look-state": "JSON progress of a look being computed (polled by the look page)",
    "reports:development-look": "checked by tests/browser/test_devset.py (needs a split, a final version and a look)",
}


def page_names() -> set[str]:
    names: set[str] = set()

    def walk(patterns, ns: str | None = None, prefix: str = "") -> None:  # type: ignore[no-untyped-def]
        for entry in patterns:
            if isinstance(entry, URLResolver):
                walk(entry.url_patterns, entry.namespace or ns, prefix + str(entry.pattern))
            elif entry.name and not (prefix + str(entry.pattern)).startswith(("api/", "admin/", "^api", "^admin")):
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


@override_settings(EVALSITE_PREFLIGHT=False)
def test_every_page_has_no_serious_or_critical_accessibility_violation(page):
    call_command("seed_demo", "--quiet-logins", "--force")
    passwords = {name: password for name, _, password in DEMO_USERS}
    study = Study.objects.get(is_demo=True)
    study_compute_consensus(study=study)
    conversation = Conversation.objects.order_by("id").first()
    judge = judge_create(name="axe-judge", instrument=study.instrument, model="openai/axe-judge",
                         api_base="http://127.0.0.1:9/v1", api_key_env="AXE_TEST_API_KEY")
    run = judge_run_create(judges=[judge], conversation_ids=[conversation.pk], start=False)
    batch = SimulationBatch.objects.first()  # a batch needs a live chatbot: test_launch.py checks that page
    rater_assignment = Assignment.objects.filter(rater__username="clinician").exclude(status=AssignmentStatus.WITHDRAWN).order_by("position").first()
    adjudicable = study.assignments.exclude(status=AssignmentStatus.WITHDRAWN).first()

    visits: list[tuple[str, str, str]] = [  # (pattern name, user, path)
        ("login", "", reverse("login")),
        ("home", "researcher", reverse("home")),
        ("api-tokens", "researcher", reverse("api-tokens")),
        ("annotation:my-studies", "clinician", reverse("annotation:my-studies")),
        ("annotation:rate", "clinician", reverse("annotation:rate", args=[rater_assignment.pk])),
        ("annotation:study-list", "coordinator", reverse("annotation:study-list")),
        ("annotation:study-create", "coordinator", reverse("annotation:study-create")),
        ("annotation:study-detail", "coordinator", reverse("annotation:study-detail", args=[study.pk])),
        ("annotation:study-progress", "coordinator", reverse("annotation:study-progress", args=[study.pk])),
        ("annotation:study-consensus", "coordinator", reverse("annotation:study-consensus", args=[study.pk])),
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
        ("reports:development", "admin", reverse("reports:development", args=[study.pk])),
    ]
    if batch is not None:
        visits.append(("simulation:batch-detail", "researcher", reverse("simulation:batch-detail", args=[batch.code])))
    else:
        NOT_PAGES["simulation:batch-detail"] = "checked by tests/browser/test_launch.py (a batch needs a chatbot)"
    visited = {name for name, _, _ in visits}
    missing = page_names() - visited - set(NOT_PAGES)
    assert not missing, f"pages not checked by axe: {sorted(missing)}"

    failures: list[str] = []
    who = None
    for name, user, path in visits:
        if user != who:
            if user:
                log_in_as(page, user, passwords[user])
            else:
                page.context.clear_cookies()
            who = user
        response = page.goto(path)
        assert response is not None and response.status < 400, (name, path, response and response.status)
        if name == "annotation:rate" and page.locator("text=Before you read").count():
            page.click("button:has-text('Continue')")
            page.wait_for_selector("#rating-form")
        try:
            check_a11y(page, f"{name} as {user or 'anonymous'}")
        except AssertionError as exc:
            failures.append(str(exc))
    assert not failures, "\n\n".join(failures)
