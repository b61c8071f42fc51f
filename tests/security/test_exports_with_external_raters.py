"""Finding 6: ``GET /studies/N/progress/raters.csv`` answered 500 for every study with external raters.

External raters (names from an imported ratings file, with no login) sit beside the study's own
raters. Every export of such a study (each CSV and zip a coordinator can reach from the study's
pages and its reports) answers 200 with its rows, the external raters in them by name.
"""

from __future__ import annotations

import re

import pytest

from annotation.studies.ratings_import import ratings_import
from tests.annotation.test_external_raters import RATINGS, make_vera_study
from tests.conftest import client_for
from tests.security.test_blind_everywhere import crawl

pytestmark = pytest.mark.django_db
EXPORT = re.compile(r"\.(csv|zip)(\?|$)")


@pytest.fixture
def study_with_external_raters(coordinator, clinician):  # type: ignore[no-untyped-def]
    study = make_vera_study(coordinator).study
    ratings_import(study=study, text=RATINGS, file="ratings.csv", fmt="vera-mh", actor=coordinator)
    return study


def test_the_progress_csv_lists_external_raters(study_with_external_raters, coordinator):
    study = study_with_external_raters
    response = client_for(coordinator).get(f"/studies/{study.pk}/progress/raters.csv")
    assert response.status_code == 200, response.content[:300]
    body = b"".join(response.streaming_content).decode() if response.streaming else response.content.decode()
    for name in ("clinician_a", "clinician_b", "expert_a"):
        assert name in body


def test_every_export_a_coordinator_can_reach_answers_with_rows(study_with_external_raters, coordinator):
    study = study_with_external_raters
    n = study.pk
    pages_of_the_study = [f"/studies/{n}/", f"/studies/{n}/progress/", f"/studies/{n}/consensus/",
                          f"/reports/studies/{n}/reliability/", f"/api/v1/studies/{n}/"]
    # Every export of the study by name, linked or not (a page may hide a link while empty).
    exports_by_name = [
        f"/studies/{n}/progress/raters.csv", f"/studies/{n}/progress/conversations.csv", f"/studies/{n}/consensus.csv",
        f"/studies/{n}/sampling-plan.csv", f"/reports/studies/{n}/reliability.csv", f"/reports/studies/{n}/realism.csv",
        f"/reports/studies/{n}/judges.csv", f"/reports/studies/{n}/judge-assisted.csv", f"/reports/studies/{n}/raters.csv",
        f"/reports/studies/{n}/export.zip", f"/reports/studies/{n}/scorecard/chatbots.csv",
    ]
    starts = pages_of_the_study + exports_by_name
    pages = crawl(client_for(coordinator), starts, limit=400)
    exports = [(url, status, body) for url, status, body in pages if EXPORT.search(url) and f"/{study.pk}" in url]
    assert len(exports) >= 10, sorted(url for url, _, _ in pages)
    # 200 with rows; 404 only where the study has nothing of that kind (no sampling plan, no scorecard table).
    broken = [(url, status) for url, status, _ in exports if status not in (200, 404)]
    assert broken == []
    reached = {url.split("?")[0] for url, status, _ in exports if status == 200}
    assert {f"/studies/{n}/progress/raters.csv", f"/studies/{n}/progress/conversations.csv", f"/studies/{n}/consensus.csv",
            f"/reports/studies/{n}/reliability.csv", f"/reports/studies/{n}/raters.csv", f"/reports/studies/{n}/export.zip"} <= reached
    for url, _, body in exports:
        if ".csv" in url and body:
            assert body.count("\n") >= 1, url  # a header at least
    server_errors = [(url, status) for url, status, _ in pages if status >= 500]
    assert server_errors == []
