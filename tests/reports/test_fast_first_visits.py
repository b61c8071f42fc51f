"""Issue 19, fast first visits: the smallest plotly bundle and only where a chart is drawn, every
report cached (judge drift with its study chosen automatically, rater drift while raters work)."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection
from django.test.utils import CaptureQueriesContext

from annotation.models import Assignment, AssignmentStatus
from corpus.models import Persona
from reports.drift import selectors as drift_reads
from reports.models import ReportCache
from tests.conftest import client_for
from tests.support.report_study import build_report_study

pytestmark = pytest.mark.django_db

VENDOR = Path(settings.BASE_DIR) / "static" / "vendor" / "plotly"


def _scripts(page: str) -> list[str]:
    return [part.split('"')[0] for part in page.split('<script src="')[1:]]


@pytest.fixture
def small(db):  # type: ignore[no-untyped-def]
    return build_report_study(n_conversations=30, n_raters=3, k=2, n_judges=2, prefix="ff")


def test_no_template_loads_the_full_plotly_bundle():
    templates = Path(settings.BASE_DIR) / "templates"
    offenders = [str(p.relative_to(templates)) for p in templates.rglob("*.html") if "plotly.min.js" in p.read_text(encoding="utf-8")]
    assert offenders == []


def test_each_report_page_loads_the_smallest_bundle_its_charts_need(small):
    client = client_for(small.coordinator)
    study = small.study.pk
    scorecard = _scripts(client.get(f"/reports/studies/{study}/scorecard/").content.decode())
    assert [s for s in scorecard if "plotly" in s] == ["/static/vendor/plotly/plotly-basic.min.js"]  # bars only
    reliability = _scripts(client.get(f"/reports/studies/{study}/reliability/").content.decode())
    assert [s for s in reliability if "plotly" in s] == ["/static/vendor/plotly/plotly-cartesian.min.js"]  # a heatmap
    realism = _scripts(client.get(f"/reports/studies/{study}/realism/").content.decode())
    assert [s for s in realism if "plotly" in s] == ["/static/vendor/plotly/plotly-cartesian.min.js"]


def test_pages_without_a_chart_load_no_plotly_at_all(small, monkeypatch, django_capture_on_commit_callbacks):
    from reports import jobs

    client = client_for(small.coordinator)
    Persona.objects.filter(persona_set__key="report-cards").update(design={})  # no design: tables only
    realism = client.get(f"/reports/studies/{small.study.pk}/realism/").content.decode()
    assert not any("plotly" in s for s in _scripts(realism))
    monkeypatch.setattr(jobs, "runs_inline", lambda: False)
    ReportCache.objects.all().delete()
    with django_capture_on_commit_callbacks(execute=False):
        pending = client.get(f"/reports/studies/{small.study.pk}/scorecard/")
    assert pending.status_code == 202 and not any("plotly" in s for s in _scripts(pending.content.decode()))
    for page in ("/studies/", f"/studies/{small.study.pk}/", f"/studies/{small.study.pk}/progress/", "/reports/"):
        assert not any("plotly" in s for s in _scripts(client.get(page).content.decode())), page


def test_the_vendored_bundles_and_their_gzip_copies_are_the_same_bytes():
    for name in ("plotly-basic.min.js", "plotly-cartesian.min.js"):
        plain = (VENDOR / name).read_bytes()
        assert gzip.decompress((VENDOR / f"{name}.gz").read_bytes()) == plain
        assert len(plain) < 1_600_000  # a partial bundle, not the 4.8 MB one
    assert (VENDOR / "LICENSE").exists()


def test_whitenoise_sends_the_compressed_bundle_to_browsers_that_accept_gzip(small):
    client = client_for(small.coordinator)
    response = client.get("/static/vendor/plotly/plotly-basic.min.js", HTTP_ACCEPT_ENCODING="gzip")
    assert response.status_code == 200 and response.get("Content-Encoding") == "gzip"
    assert int(response["Content-Length"]) == (VENDOR / "plotly-basic.min.js.gz").stat().st_size


def test_the_drift_page_chooses_its_study_in_one_grouped_query(small):
    run = small.run
    with CaptureQueriesContext(connection) as queries:
        study = drift_reads.reference_study(small.coordinator, None, run, run)
    assert study == small.study
    # A count per readable study (a correlated subquery) took seconds on every visit of a large run.
    assert not any("(SELECT COUNT(" in q["sql"].upper().replace("\n", " ") for q in queries.captured_queries)
    assert len(queries.captured_queries) <= 3  # the roles, the grouped count, the study


def test_the_drift_page_with_its_study_chosen_automatically_is_served_from_the_cache(small, monkeypatch):
    from reports.drift import services

    computed = []
    real = services._compute
    monkeypatch.setattr(services, "_compute", lambda *args: computed.append(1) or real(*args))
    judges = sorted(small.run.judges.values_list("pk", flat=True))
    url = f"/reports/drift/?a_run={small.run.pk}&a_source=judge:{judges[0]}&b_run={small.run.pk}&b_source=judge:{judges[1]}"
    client = client_for(small.coordinator)
    first = client.get(url)
    assert first.status_code == 200 and first.context["study"] == small.study
    with CaptureQueriesContext(connection) as warm:
        again = client.get(url)
    given = client.get(url + f"&study={small.study.pk}")
    assert again.status_code == given.status_code == 200 and computed == [1]
    assert len(warm.captured_queries) < 40


def test_rater_drift_is_not_recomputed_while_raters_work_on_drafts(small, monkeypatch):
    from reports.raters import services

    computed = []
    real = services._compute
    monkeypatch.setattr(services, "_compute", lambda *args: computed.append(1) or real(*args))
    client = client_for(small.coordinator)
    url = f"/reports/studies/{small.study.pk}/raters/"
    assert client.get(url).status_code == 200
    draft = Assignment.objects.filter(study=small.study).exclude(status=AssignmentStatus.SUBMITTED).first()
    if draft is None:  # every assignment submitted: open one again as a draft would be
        draft = Assignment.objects.filter(study=small.study).first()
        Assignment.objects.filter(pk=draft.pk).update(status=AssignmentStatus.IN_PROGRESS, submitted_at=None)
        client.get(url)
    before = len(computed)
    for seconds in (30, 60, 90):  # the rating page's clock ticks while the rater reads
        Assignment.objects.filter(pk=draft.pk).update(time_spent_seconds=seconds)
        assert client.get(url).status_code == 200
    assert len(computed) == before
