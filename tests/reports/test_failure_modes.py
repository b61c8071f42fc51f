"""Failure modes (issue 27): short codes on disagreements (open coding), grouped into categories that
can be renamed and merged (axial coding), counted per judge, item and chatbot, each count listing
exactly its disagreements; codes in the exports, and a methods sentence that counts the coding."""

from __future__ import annotations

import csv
import io
import zipfile
from urllib.parse import parse_qs, urlsplit

import pytest

from annotation.models import StudyEvent
from reports.models import FailureCategory, FailureCode
from reports.review.instances import study_instances
from reports.review.query import ListQuery
from tests.conftest import client_for, make_user
from tests.support.verdict_study import build_verdict_study

pytestmark = pytest.mark.django_db


@pytest.fixture
def known(db):  # type: ignore[no-untyped-def]
    return build_verdict_study(n_conversations=12, prefix="fm")


def _code(client, known, code: str, item: str, text: str, judge: str = "always-yes"):  # type: ignore[no-untyped-def]
    return client.post(f"/reports/studies/{known.study.pk}/review/{code}/codes/",
                       {"item": item, "text": text, "judge": judge, "run": known.run.pk})


def _listed(study, url: str):  # type: ignore[no-untyped-def]
    return study_instances(study, ListQuery.parse({k: v[0] for k, v in parse_qs(urlsplit(url).query).items()}))


def test_a_code_is_attached_once_recorded_and_shown_on_the_review_page(known):
    client = client_for(known.coordinator)
    response = _code(client, known, "FM-001", "amhart_13", "  counted a hotline   mention as a referral ")
    assert response.status_code == 302
    _code(client, known, "FM-001", "amhart_13", "counted a hotline mention as a referral")
    code = FailureCode.objects.get(study=known.study)
    assert code.text == "counted a hotline mention as a referral" and code.judge == "always-yes"
    assert StudyEvent.objects.filter(study=known.study, action="failure_code_added").count() == 1
    html = client.get(f"/reports/studies/{known.study.pk}/review/FM-001/?run={known.run.pk}").content.decode()
    assert "counted a hotline mention as a referral" in html


def test_an_empty_or_overlong_code_is_refused_and_nothing_is_saved(known):
    client = client_for(known.coordinator)
    _code(client, known, "FM-001", "amhart_13", "   ")
    _code(client, known, "FM-001", "amhart_13", "x" * 201)
    _code(client, known, "FM-001", "no_such_item", "fine")
    assert not FailureCode.objects.exists()


def test_categories_group_codes_rename_and_merge_and_counts_list_their_disagreements(known):
    client = client_for(known.coordinator)
    _code(client, known, "FM-001", "amhart_13", "missed passive ideation")
    _code(client, known, "FM-002", "amhart_13", "missed passive ideation", judge="coin-flip")
    _code(client, known, "FM-003", "amhart_01", "ignored hopelessness")
    _code(client, known, "FM-003", "amhart_01", "missed passive ideation")  # the same instance, two codes
    _code(client, known, "FM-004", "amhart_02", "counted a hotline as a referral")
    page = f"/reports/studies/{known.study.pk}/failure-modes/"
    client.post(page, {"action": "create", "name": "Misses risk", "codes": ["missed passive ideation", "ignored hopelessness"]})
    client.post(page, {"action": "create", "name": "Referral", "codes": ["counted a hotline as a referral"]})
    risk = FailureCategory.objects.get(study=known.study, name="Misses risk")
    html = client.get(page + "?by=judge").content.decode()
    assert 'id="failure-counts"' in html
    from reports.review.codes import category_counts

    for by in ("judge", "item", "chatbot"):
        counts = category_counts(known.study, by)
        row = next(r for r in counts["rows"] if r["name"] == "Misses risk")
        assert row["total"] == 3  # FM-003's two codes count once
        view = client.get(page + f"?by={by}")
        for cell in [c for r in view.context["counts"]["rows"] for c in r["cells"] if c["href"]]:
            assert len(_listed(known.study, cell["href"]).instances) == cell["n"]
    assert category_counts(known.study, "judge")["rows"][0]["counts"]["always-yes"] == 2
    referral = FailureCategory.objects.get(study=known.study, name="Referral")
    client.post(page, {"action": "rename", "category": referral.pk, "name": "Wrong referral"})
    assert FailureCategory.objects.get(pk=referral.pk).name == "Wrong referral"
    client.post(page, {"action": "rename", "category": referral.pk, "name": "misses RISK"})  # a duplicate name is refused
    assert FailureCategory.objects.get(pk=referral.pk).name == "Wrong referral"
    client.post(page, {"action": "merge", "source": referral.pk, "target": risk.pk})
    assert list(FailureCategory.objects.filter(study=known.study).values_list("name", flat=True)) == ["Misses risk"]
    assert FailureCode.objects.filter(category=risk).count() == 5
    facts_html = client.get(page).content.decode()
    assert "4 (conversation, item) disagreements received 5 codes (3 distinct) from 1 person" in facts_html


def test_codes_are_in_a_csv_and_the_study_zip(known):
    client = client_for(known.coordinator)
    _code(client, known, "FM-001", "amhart_13", "missed passive ideation")
    rows = list(csv.reader(io.StringIO(client.get(f"/reports/studies/{known.study.pk}/failure-modes/codes.csv").content.decode())))
    assert rows[0] == ["conversation", "item", "judge", "run", "code", "category", "coded_at"]
    assert rows[1][:5] == ["FM-001", "amhart_13", "always-yes", str(known.run.pk), "missed passive ideation"]
    archive = zipfile.ZipFile(io.BytesIO(client.get(f"/reports/studies/{known.study.pk}/export.zip").content))
    assert "missed passive ideation" in archive.read("failure_codes.csv").decode()
    methods = archive.read("METHODS.md").decode()
    assert "Failure modes (coding of disagreements)" in methods and "1 (conversation, item) disagreement received 1 code" in methods


def test_an_outsider_cannot_code_or_read_codes(known):
    outsider = client_for(make_user("fmout"))
    assert _code(outsider, known, "FM-001", "amhart_13", "x").status_code in (403, 404)
    assert outsider.get(f"/reports/studies/{known.study.pk}/failure-modes/codes.csv").status_code in (403, 404)
    assert not FailureCode.objects.exists()
