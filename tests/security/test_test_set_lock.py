"""The locked test set really locked (issue 30, finding 1): every URL that returns labels withholds the
labels of a split study's test set until a version declared final was evaluated on it.

The URL conf is enumerated: every pattern whose path or name says it returns labels (CSV, export,
zip, bundle, labels, consensus, instances, review) is either requested below, as the study's
researcher, with no test-set conversation in what it returns, or listed in EXEMPT with the reason
it holds no conversation's label. A new such URL fails the enumeration until it is one or the other.
"""

from __future__ import annotations

import io
import re
import zipfile

import pytest
from django.urls import get_resolver

from reports.models import FinalDeclaration, HoldoutLook, HoldoutMember, HoldoutSplit, ReportStatus
from tests.conftest import client_for
from tests.support.devset_study import build_devset_study

pytestmark = pytest.mark.django_db

LABEL_WORDS = re.compile(r"csv|export|zip|bundle|labels|consensus|instances|review")

CHECKED = {
    "annotation:study-consensus-csv", "v1:coordinator-study-consensus", "reports:study-export", "reports:study-bundle",
    "reports:study-bundle-download", "v1:report-bundle", "judging:run-export", "v1:judge-run-labels", "reports:instances", "reports:instances-csv",
    "reports:review", "reports:failure-codes-csv", "reports:judges-csv", "reports:drift-csv",
}
EXEMPT = {
    "v1:conversation-export": "transcripts only, no label",
    "corpus:conversation-export": "transcripts only, no label",
    "v1:coordinator-study-adjudicate": "POST: the coordinator's adjudication of one item (their work)",
    "v1:coordinator-study-consensus-compute": "POST: queues the computation, returns counts",
    "annotation:study-consensus-compute": "POST: queues the computation, returns counts",
    "v1:coordinator-study-consensus-job": "the consensus job's progress and counts per provenance, no label",
    "annotation:study-consensus-job": "the consensus job's progress and counts per provenance, no label",
    "annotation:study-gold-csv": "each rater's accuracy on gold conversations (numbers per rater), no conversation's label",
    "annotation:study-consensus": "the coordinators' working page (adjudication needs every item); not an export",
    "annotation:study-adjudicate": "the coordinators' adjudication of one item (their work)",
    "v1:import-bundle": "POST: an upload",
    "v1:sampling-plan-preview": "a plan's counts before a study exists (no split yet)",
    "annotation:study-selection-preview": "counts of a selection before a study exists",
    "annotation:study-plan-preview": "counts of a plan before a study exists",
    "reports:reliability-csv": "per-item figures, no conversation",
    "reports:realism-csv": "per user-agent figures, no conversation",
    "reports:scorecard-csv": "per-chatbot figures, no conversation",
    "reports:judges-table-csv": "verdict figures per judge and rater, no conversation",
    "reports:run-scorecard-csv": "a run's ensemble scores per chatbot, no conversation",
    "reports:judge-assisted-csv": "per-chatbot estimates, no conversation",
    "reports:raters-csv": "per-rater figures, no conversation",
    "reports:development-look-csv": "a recorded look's own figures (after the look)",
    "reports:development-csv": "which set each conversation is in, no label",
    "reports:leaderboard-csv": "per-chatbot figures, no conversation",
    "reports:run-leaderboard-csv": "per-chatbot figures, no conversation",
    "reports:review-code-add": "POST: a code on a review page (refused on a locked conversation, tested in test_drilldown)",
    "reports:failure-counts-csv": "counts per category, no conversation",
    "annotation:study-audit-csv": "the audit trail: actions, not labels",
    "annotation:study-progress-csv": "assignment progress, not labels",
    "annotation:study-plan-csv": "a sampling plan's draws and probabilities, not labels",
    "annotation:study-active-csv": "active-sampling batches and probabilities, not labels",
    "annotation:study-active-estimates-csv": "per-chatbot estimates, no conversation",
    "annotation:study-flags-csv": "raters' flags, not labels",
    "reports:evidence-agreement-csv": "per-judge and per-item figures, no conversation (development set only after a split)",
}


def _patterns():  # type: ignore[no-untyped-def]
    def walk(patterns, prefix="", ns=""):  # type: ignore[no-untyped-def]
        for p in patterns:
            if hasattr(p, "url_patterns"):
                yield from walk(p.url_patterns, prefix + str(p.pattern), ns + p.namespace + ":" if p.namespace else ns)
            elif p.name:
                yield prefix + str(p.pattern), ns + p.name
    for path, name in walk(get_resolver().url_patterns):
        if path.startswith("admin") or "format" in path:
            continue
        if LABEL_WORDS.search(path + " " + name):
            yield name


def test_every_url_that_can_return_labels_is_checked_or_exempt_with_a_reason():
    names = set(_patterns())
    missing = sorted(names - CHECKED - set(EXEMPT))
    assert not missing, f"URLs that may return labels, neither checked for the test-set lock nor exempt: {missing}"
    assert not (CHECKED - names), f"checked names that no longer exist: {sorted(CHECKED - names)}"


@pytest.fixture
def locked(db):  # type: ignore[no-untyped-def]
    dev = build_devset_study(prefix="lk")
    assert client_for(dev.coordinator).post(f"/reports/studies/{dev.study.pk}/development/split/",
                                            {"n_test": 12, "seed": 11}).status_code == 302
    split = HoldoutSplit.objects.get(study=dev.study)
    test = set(HoldoutMember.objects.filter(split=split, part="test").values_list("conversation__code", flat=True))
    dev_codes = set(HoldoutMember.objects.filter(split=split, part="dev").values_list("conversation__code", flat=True))
    return dev, split, test, dev_codes


def _text(response) -> str:  # type: ignore[no-untyped-def]
    body = b"".join(response.streaming_content) if response.streaming else response.content
    if body[:2] == b"PK":
        archive = zipfile.ZipFile(io.BytesIO(body))
        return "\n".join(archive.read(n).decode("utf-8", "replace") for n in archive.namelist())
    return body.decode("utf-8", "replace")


def _urls(dev) -> dict[str, list[str]]:  # type: ignore[no-untyped-def]
    s, run = dev.study.pk, dev.run_v2.pk
    some = dev.conversations[0].code
    return {
        "annotation:study-consensus-csv": [f"/studies/{s}/consensus.csv"],
        "v1:coordinator-study-consensus": [f"/api/v1/studies/{s}/consensus/?page_size=1000"],
        "reports:study-export": [f"/reports/studies/{s}/export.zip"],
        "reports:study-bundle": [f"/reports/studies/{s}/bundle/"],
        "reports:study-bundle-download": [f"/reports/studies/{s}/bundle.zip"],
        "v1:report-bundle": [f"/api/v1/reports/studies/{s}/bundle/"],
        "judging:run-export": [f"/judging/runs/{run}/export/{fmt}.csv" for fmt in ("long", "dimensions", "ensemble")],
        "v1:judge-run-labels": [f"/api/v1/judge-runs/{run}/labels/?as={fmt}" for fmt in ("long", "dimensions", "ensemble")],
        "reports:instances": [f"/reports/studies/{s}/instances/", f"/reports/studies/{s}/instances/?set=test",
                              f"/reports/studies/{s}/instances/?run={run}&disagree=judge"],
        "reports:instances-csv": [f"/reports/studies/{s}/instances.csv", f"/reports/studies/{s}/instances.csv?run={run}"],
        "reports:review": [f"/reports/studies/{s}/review/{some}/"],
        "reports:failure-codes-csv": [f"/reports/studies/{s}/failure-modes/codes.csv"],
        "reports:judges-csv": [f"/reports/studies/{s}/judges.csv?run={run}"],
        "reports:drift-csv": [f"/reports/drift/flips.csv?a_run={dev.run_v1.pk}&b_run={run}&study={s}"],
    }


def test_no_url_returns_a_label_of_the_locked_test_set(locked):
    dev, _, test, dev_codes = locked
    client = client_for(dev.researcher)
    urls = _urls(dev)
    assert set(urls) == CHECKED
    seen_dev = False
    for name, paths in urls.items():
        for path in paths:
            response = client.get(path)
            assert response.status_code in (200, 403, 409), (path, response.status_code)
            if response.status_code != 200:
                continue
            text = _text(response)
            leaked = sorted(code for code in test if code in text)
            assert not leaked, f"{name} ({path}) returns test-set conversations {leaked[:3]}"
            seen_dev = seen_dev or any(code in text for code in dev_codes)
    assert seen_dev  # the exports still hold the development set


def test_the_bundle_is_refused_with_what_to_do_and_the_exports_say_what_they_withhold(locked):
    dev, _, test, _ = locked
    client = client_for(dev.researcher)
    for page in (f"/reports/studies/{dev.study.pk}/bundle/", f"/reports/studies/{dev.study.pk}/bundle.zip"):
        response = client.get(page)
        assert response.status_code == 409 and b"locked test set" in response.content
    assert client.get(f"/api/v1/reports/studies/{dev.study.pk}/bundle/").status_code == 409
    assert "12 conversations of a locked test set" in client.get(f"/studies/{dev.study.pk}/consensus.csv")["X-Evalsite-Withheld"]
    assert "locked test set" in client.get(f"/judging/runs/{dev.run_v2.pk}/export/long.csv")["X-Evalsite-Withheld"]
    readme = zipfile.ZipFile(io.BytesIO(client.get(f"/reports/studies/{dev.study.pk}/export.zip").content)).read("README.txt")
    assert b"Locked test set: 12 conversations" in readme


def test_after_a_look_at_the_test_set_the_exports_hold_it_again(locked):
    dev, split, test, _ = locked
    declaration = FinalDeclaration.objects.create(study=dev.study, split=split, run=dev.run_v2, source="ensemble", label="v2")
    HoldoutLook.objects.create(study=dev.study, split=split, declaration=declaration, number=1, data_version="x",
                               status=ReportStatus.READY)
    client = client_for(dev.researcher)
    text = _text(client.get(f"/studies/{dev.study.pk}/consensus.csv"))
    assert all(code in text for code in test)
    assert client.get(f"/reports/studies/{dev.study.pk}/bundle.zip").status_code == 200
