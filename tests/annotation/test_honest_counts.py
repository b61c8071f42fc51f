"""Issue 19, honest counts on the coordinators' pages: whole numbers, the right judges, dates, a paged audit trail."""

from __future__ import annotations

import csv
import io
import re

import pytest
from django.urls import reverse

from annotation.models import StudyEvent
from tests.annotation.coordinator_setup import make_study
from tests.conftest import client_for
from tests.support.judged import amhart, amhart_truth, corpus, judged_run, judges_for

pytestmark = pytest.mark.django_db


@pytest.fixture
def runs(db):  # type: ignore[no-untyped-def]
    """Two judge runs of the same conversations by different judges."""
    instrument = amhart()
    conversations = corpus(chatbots=("BOT-A", "BOT-B", "BOT-C"), personas=2, repetitions=8)
    truth = amhart_truth(conversations, seed=4)
    first = judged_run(instrument, judges_for(instrument, ["judge-a", "judge-b"]), conversations, lambda j, c: truth[c.pk])
    second = judged_run(instrument, judges_for(instrument, ["judge-z"]), conversations, lambda j, c: truth[c.pk])
    return first, second


def _options(html: str, select: str) -> list[str]:
    block = html.split(f'name="{select}"')[1].split("</select>")[0]
    return re.findall(r"<option[^>]*>([^<]*)</option>", block)


def test_the_plan_offers_only_the_judges_of_the_chosen_run(coordinator, runs):
    first, second = runs
    page = client_for(coordinator).get(reverse("annotation:study-create-from-run"), {"run": first.pk}).content.decode()
    options = _options(page, "source")
    assert any("judge-a" in o for o in options) and any("judge-b" in o for o in options)
    assert not any("judge-z" in o for o in options)
    # The page carries each run's judges, so choosing another run changes the list without a reload.
    assert 'id="run-sources"' in page and "judge-z" in page.split('id="run-sources"')[1].split("</script>")[0]


def test_the_plan_preview_counts_expected_ratings_in_whole_numbers(coordinator, runs):
    first, _ = runs
    body = client_for(coordinator).get(reverse("annotation:study-plan-preview"), {
        "run": first.pk, "method": "simple_random", "plan_size": 12, "plan_seed": 1, "d_agree": 5, "d_split": 30,
    }).content.decode()
    table = body.split("Expected rated")[1].split("</table>")[0]
    assert re.search(r'<td class="num">4</td>', table), table[:800]
    assert "4.0<" not in table and ".0</td>" not in table


def test_the_audit_trail_is_paged(coordinator, clinician, clinician2):
    study = make_study(coordinator, [clinician, clinician2], n=4, k=2)
    StudyEvent.objects.bulk_create(
        StudyEvent(study=study, actor=coordinator, action="consensus_computed", reason=f"event number {i}") for i in range(60)
    )
    client = client_for(coordinator)
    page = client.get(reverse("annotation:study-detail", args=[study.pk])).content.decode()
    audit = page.split('id="audit"')[1]
    assert audit.count("event number") == 20
    assert "event number 59" in audit and "event number 0<" not in audit
    assert "audit_page=2#audit" in audit and "of 4" in audit  # 61 events with the study's creation
    third = client.get(reverse("annotation:study-detail", args=[study.pk]), {"audit_page": 3}).content.decode()
    assert "event number 0<" in third.split('id="audit"')[1]
    last = client.get(reverse("annotation:study-detail", args=[study.pk]), {"audit_page": 4}).content.decode()
    assert last.split('id="audit"')[1].count("<tr><td") == 1  # the oldest: the study's creation
    # The whole trail as CSV.
    response = client.get(reverse("annotation:study-audit-csv", args=[study.pk]))
    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode()
                                           if response.streaming else response.content.decode())))
    assert len(rows) == 61 and {"when", "who", "what", "details", "why"} <= set(rows[0])


def test_the_audit_csv_is_for_the_studys_coordinators_only(coordinator, clinician, clinician2, outsider):
    study = make_study(coordinator, [clinician, clinician2], n=2, k=2)
    for user in (outsider, clinician):
        assert client_for(user).get(reverse("annotation:study-audit-csv", args=[study.pk])).status_code == 404


def test_dates_are_marked_up_for_the_readers_locale(coordinator, clinician, clinician2):
    study = make_study(coordinator, [clinician, clinician2], n=2, k=2)
    page = client_for(coordinator).get(reverse("annotation:study-detail", args=[study.pk])).content.decode()
    stamp = study.created_at.isoformat()
    assert f'<time datetime="{stamp}" data-local="datetime">' in page
    assert "local-time.js" in page
