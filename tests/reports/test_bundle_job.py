"""The publication bundle is built by a worker, never in a request, and served from its file while the data stand.

Pages and API ask with Celery not running tasks in place (``jobs.runs_inline`` false, the task's
message captured): the request answers the pending state at once, and the worker's task (run
here as a worker would) builds and stores the file.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import zipfile
from typing import Any

import pytest

import reports.bundle.build as build
from annotation.models import Rating
from annotation.rating.services import rating_revise
from core import recovery
from corpus.instruments.labels import instrument_labels
from reports import jobs
from reports.bundle.export import study_bundle_zip
from reports.models import ReportCache, ReportStatus
from reports.tasks import report_compute_task
from simulation.run_state import new_owner
from tests.conftest import client_for
from tests.support.report_study import build_report_study

pytestmark = pytest.mark.django_db


@pytest.fixture
def audit(db):  # type: ignore[no-untyped-def]
    return build_report_study(n_conversations=10, n_raters=3, k=2, n_judges=2, prefix="bj")


@pytest.fixture
def worker_elsewhere(monkeypatch, django_capture_on_commit_callbacks):  # type: ignore[no-untyped-def]
    """Celery as in production: a request queues the job and returns; the captured messages are what a worker gets."""
    monkeypatch.setattr(jobs, "runs_inline", lambda: False)


def _files(study_id: int) -> list[str]:
    return sorted(p.name for p in build.bundle_dir().glob(f"study-{study_id}-*.zip"))


def _ask(client, path: str, django_capture_on_commit_callbacks):  # type: ignore[no-untyped-def]
    with django_capture_on_commit_callbacks(execute=False) as queued:
        response = client.get(path)
    return response, queued


def _run_worker() -> None:
    for row in ReportCache.objects.filter(kind=build.KIND, status=ReportStatus.COMPUTING):
        assert report_compute_task(row.pk) == ReportStatus.READY


def _built(audit, django_capture_on_commit_callbacks):  # type: ignore[no-untyped-def]
    """Return the coordinator's client once the page has queued the bundle and a worker has built it."""
    client = client_for(audit.coordinator)
    _ask(client, f"/reports/studies/{audit.study.pk}/bundle/", django_capture_on_commit_callbacks)
    _run_worker()
    return client


def test_the_page_answers_the_progress_at_once_and_never_builds_the_bundle(audit, worker_elsewhere, monkeypatch,
                                                                              django_capture_on_commit_callbacks):
    def refuse(**kwargs: Any) -> bytes:
        raise AssertionError("the bundle was built in the request")

    monkeypatch.setattr(build, "study_bundle_zip", refuse)  # any build from here on fails the test
    client = client_for(audit.coordinator)
    page, queued = _ask(client, f"/reports/studies/{audit.study.pk}/bundle/", django_capture_on_commit_callbacks)
    assert page.status_code == 202 and len(queued) == 1
    html = page.content.decode()
    assert "Building the publication bundle" in html and 'id="report-progress"' in html and "data-job-url" in html
    assert "Ready to download" not in html and "bundle.zip" not in html  # no download offered before the file exists
    row = ReportCache.objects.get(kind=build.KIND)
    assert row.status == ReportStatus.COMPUTING and _files(audit.study.pk) == []
    # Asked again while it is queued: the same job, no second message.
    again, queued_again = _ask(client, f"/reports/studies/{audit.study.pk}/bundle/", django_capture_on_commit_callbacks)
    assert again.status_code == 202 and queued_again == [] and ReportCache.objects.filter(kind=build.KIND).count() == 1
    download = client.get(f"/reports/studies/{audit.study.pk}/bundle.zip")
    assert download.status_code == 302 and download["Location"] == f"/reports/studies/{audit.study.pk}/bundle/"
    api = client.get(f"/api/v1/reports/studies/{audit.study.pk}/bundle/")
    assert api.status_code == 202 and int(api["Retry-After"]) > 0
    state = api.json()
    assert state["pending"] is True and state["status"] == "computing" and state["job"] == row.pk and 0 <= state["progress"] < 1
    poll = client.get(f"/reports/jobs/{row.pk}/").json()
    assert poll["pending"] is True and poll["job"] == row.pk


def test_the_worker_builds_it_and_the_page_then_offers_the_download_of_the_stored_file(
        audit, worker_elsewhere, django_capture_on_commit_callbacks):
    client = client_for(audit.coordinator)
    _ask(client, f"/reports/studies/{audit.study.pk}/bundle/", django_capture_on_commit_callbacks)
    _run_worker()
    [name] = _files(audit.study.pk)
    row = ReportCache.objects.get(kind=build.KIND)
    assert row.progress == 1.0 and row.payload["file"] == name and row.attempts == 1
    page = client.get(f"/reports/studies/{audit.study.pk}/bundle/")
    html = page.content.decode()
    assert page.status_code == 200 and "Ready to download" in html
    assert f'href="/reports/studies/{audit.study.pk}/bundle.zip"' in html and row.payload["sha256"] in html
    download = client.get(f"/reports/studies/{audit.study.pk}/bundle.zip")
    assert download.status_code == 200 and download.streaming and download["Content-Type"] == "application/zip"
    assert f'filename="study-{audit.study.pk}-bundle.zip"' in download["Content-Disposition"]
    body = download.getvalue()
    assert body == (build.bundle_dir() / name).read_bytes() and len(body) == row.payload["bytes"]
    api = client.get(f"/api/v1/reports/studies/{audit.study.pk}/bundle/")
    assert api.status_code == 200 and api.getvalue() == body


def test_the_build_goes_through_figures_charts_and_zip_in_order(audit):
    seen: list[tuple[float, str]] = []
    payload = build._build({"study": audit.study.pk}, lambda fraction, stage: seen.append((fraction, stage)))
    names = [stage.split(":")[0] for _, stage in seen]
    assert names == ["figures", "charts", "charts", "zip", "stored"]
    assert [fraction for fraction, _ in seen] == sorted(fraction for fraction, _ in seen)
    assert "drawing" in seen[2][1] and payload["file"] in _files(audit.study.pk)


def _without_stamp(data: bytes) -> dict[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        files = {name: archive.read(name) for name in archive.namelist()}
    manifest = json.loads(files.pop("manifest.json"))
    manifest.pop("created_at")
    return {**files, "manifest.json": json.dumps(manifest, sort_keys=True).encode()}


def test_the_download_holds_the_files_the_export_writes(audit):
    client = client_for(audit.coordinator)  # Celery in place (unit tests): the build runs in the job, then the file is served
    downloaded = client.get(f"/reports/studies/{audit.study.pk}/bundle.zip").getvalue()
    exported = study_bundle_zip(study=audit.study)
    ours, theirs = _without_stamp(downloaded), _without_stamp(exported)
    assert sorted(ours) == sorted(theirs) and len(ours) > 20
    assert [name for name in ours if ours[name] != theirs[name]] == []


def _revise_one_rating(audit) -> None:  # type: ignore[no-untyped-def]
    rating = Rating.objects.filter(assignment__study=audit.study, status="submitted").select_related("assignment__rater").first()
    key, entry = next(iter(rating.answers["main"].items()))
    other = next(label for label in instrument_labels(audit.study.instrument)[key].labels if label != entry["value"])
    rating_revise(assignment_id=rating.assignment_id, user=rating.assignment.rater, changes={"main": {key: other}},
                  reason="second look at the transcript")


def test_a_rating_change_makes_the_stored_bundle_stale_and_the_next_build_replaces_it(
        audit, worker_elsewhere, django_capture_on_commit_callbacks):
    client = _built(audit, django_capture_on_commit_callbacks)
    [before] = _files(audit.study.pk)
    assert client.get(f"/reports/studies/{audit.study.pk}/bundle/").status_code == 200
    _revise_one_rating(audit)
    page, queued = _ask(client, f"/reports/studies/{audit.study.pk}/bundle/", django_capture_on_commit_callbacks)
    assert page.status_code == 202 and len(queued) == 1  # the old file is never offered
    assert client.get(f"/reports/studies/{audit.study.pk}/bundle.zip").status_code == 302
    assert client.get(f"/api/v1/reports/studies/{audit.study.pk}/bundle/").status_code == 202
    _run_worker()
    [after] = _files(audit.study.pk)  # the newest only: the stale file is deleted
    assert after != before
    ratings = zipfile.ZipFile(io.BytesIO(client.get(f"/reports/studies/{audit.study.pk}/bundle.zip").getvalue())).read("ratings_long.csv")
    assert ratings == zipfile.ZipFile(io.BytesIO(study_bundle_zip(study=audit.study))).read("ratings_long.csv")


def test_a_bundle_whose_file_is_gone_is_built_again_and_never_said_ready(audit, worker_elsewhere, django_capture_on_commit_callbacks):
    client = _built(audit, django_capture_on_commit_callbacks)
    for name in _files(audit.study.pk):
        (build.bundle_dir() / name).unlink()
    page, queued = _ask(client, f"/reports/studies/{audit.study.pk}/bundle/", django_capture_on_commit_callbacks)
    assert page.status_code == 202 and len(queued) == 1 and "Ready to download" not in page.content.decode()
    _run_worker()
    assert len(_files(audit.study.pk)) == 1 and client.get(f"/reports/studies/{audit.study.pk}/bundle/").status_code == 200


def _dead_owner() -> str:
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    return new_owner("report").replace(f":{os.getpid()}", f":{dead.pid}", 1)


def test_a_build_whose_worker_was_killed_is_sent_again_by_the_sweeper_and_finished(
        audit, worker_elsewhere, monkeypatch, django_capture_on_commit_callbacks):
    from django.utils import timezone

    monkeypatch.setattr(recovery, "queue_depth", lambda: 0)
    client = client_for(audit.coordinator)
    _ask(client, f"/reports/studies/{audit.study.pk}/bundle/", django_capture_on_commit_callbacks)
    row = ReportCache.objects.get(kind=build.KIND)
    # Taken by a worker that was killed while drawing the charts: no file, the job half done.
    ReportCache.objects.filter(pk=row.pk).update(lease_owner=_dead_owner(), taken_at=timezone.now(), attempts=1,
                                                 progress=0.5, stage="charts: drawing 3 charts as PNG and SVG")
    assert client.get(f"/reports/studies/{audit.study.pk}/bundle/").status_code == 202
    with django_capture_on_commit_callbacks(execute=True):
        assert recovery.sweep().lost["report jobs"] == 1  # sent again; the captured message runs as a worker would
    row.refresh_from_db()
    assert row.status == ReportStatus.READY and row.attempts == 2 and len(_files(audit.study.pk)) == 1
    assert client.get(f"/reports/studies/{audit.study.pk}/bundle/").status_code == 200


def test_only_the_studys_readers_reach_the_bundle_its_progress_or_its_file(audit, outsider, researcher, worker_elsewhere,
                                                                             django_capture_on_commit_callbacks):
    pk = audit.study.pk
    _ask(client_for(audit.coordinator), f"/reports/studies/{pk}/bundle/", django_capture_on_commit_callbacks)
    job = ReportCache.objects.get(kind=build.KIND).pk
    _run_worker()
    rater = audit.raters[0]
    for user in (outsider, researcher, rater):  # no role; a researcher not on the study; a rater of the study
        client = client_for(user)
        for path in (f"/reports/studies/{pk}/bundle/", f"/reports/studies/{pk}/bundle.zip", f"/reports/jobs/{job}/"):
            assert client.get(path).status_code == 404, (user.username, path)
    assert client_for(outsider).get(f"/api/v1/reports/studies/{pk}/bundle/").status_code == 403
    assert client_for(rater).get(f"/api/v1/reports/studies/{pk}/bundle/").status_code == 403
    assert client_for(researcher).get(f"/api/v1/reports/studies/{pk}/bundle/").status_code == 404
    # Reading is a GET: nothing to post, and a POST changes nothing.
    assert client_for(audit.coordinator).post(f"/reports/studies/{pk}/bundle/").status_code == 405


def test_the_bundle_is_a_job_without_a_methods_paragraph():
    assert jobs.KINDS[build.KIND].methods is False
    with pytest.raises(ValueError):
        build.bundle_file(1, "../../etc")


def test_a_worker_builds_one_bundle_at_a_time_and_the_next_says_it_waits(audit):
    seen: list[str] = []
    assert build._BUILDS.acquire(blocking=False)  # another bundle is being built by this worker

    def progress(fraction: float, stage: str) -> None:
        seen.append(stage)
        if "waiting for another bundle" in stage:
            build._BUILDS.release()  # that other build finishes

    build._build({"study": audit.study.pk}, progress)
    assert [stage.split(":")[0] for stage in seen] == ["figures", "figures", "charts", "charts", "zip", "stored"]
    assert "waiting for another bundle" in seen[1]
    assert build._BUILDS.acquire(blocking=False)  # released after the build: the next one starts at once
    build._BUILDS.release()
