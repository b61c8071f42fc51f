"""Judge drift: two versions on the same conversations, flips with rationales, both against humans."""

from __future__ import annotations

import csv
import io

import pytest

from judging.models import Judge
from judging.sources import label_source_get
from reports.drift.services import judge_drift
from stats.drift import drift_report
from tests.conftest import client_for
from tests.support.judged import (
    AMHART_KEYS,
    amhart,
    amhart_truth,
    corpus,
    judged_run,
    judges_for,
    rated_study,
)


@pytest.fixture
def versions(db, coordinator, clinician):  # type: ignore[no-untyped-def]
    """Version A errs on items 1 and 2 of the first six conversations; B fixes item 1 and breaks item 3."""
    instrument = amhart()
    conversations = corpus(repetitions=4)  # 16 conversations
    truth = amhart_truth(conversations, seed=8)
    first = {c.pk for c in conversations[:6]}

    def flip(label):  # type: ignore[no-untyped-def]
        return "no" if label == "yes" else "yes"

    def version_a(judge, c):  # type: ignore[no-untyped-def]
        out = dict(truth[c.pk])
        if c.pk in first:
            out["amhart_01"], out["amhart_02"] = flip(out["amhart_01"]), flip(out["amhart_02"])
        return out

    def version_b(judge, c):  # type: ignore[no-untyped-def]
        out = dict(truth[c.pk])
        if c.pk in first:
            out["amhart_02"], out["amhart_03"] = flip(out["amhart_02"]), flip(out["amhart_03"])
        return out

    (judge_a,) = judges_for(instrument, ["judge-v1"])
    (judge_b,) = judges_for(instrument, ["judge-v2"], cloned_from=judge_a)
    run_a = judged_run(instrument, [judge_a], conversations, version_a, name="v1")
    run_b = judged_run(instrument, [judge_b], conversations, version_b, name="v2")
    study = rated_study(coordinator, [clinician], conversations, truth)
    return run_a, run_b, study, conversations, truth, first


def test_flips_agreement_between_versions_and_each_against_humans(versions):
    run_a, run_b, study, conversations, truth, first = versions
    source_a, source_b = label_source_get(run_a, None), label_source_get(run_b, None)
    data = judge_drift(run_a=run_a, source_a=source_a, run_b=run_b, source_b=source_b, study=study)
    assert data["n_shared_conversations"] == 16
    items = {r["item"]: r for r in data["items"]}
    assert items["amhart_01"]["n_flipped"] == 6 and items["amhart_03"]["n_flipped"] == 6
    assert items["amhart_02"]["n_flipped"] == 0 and items["amhart_04"]["agreement"] == 1
    assert data["pooled"]["n_flipped"] == 12 and data["pooled"]["n_compared"] == 16 * 14
    # Against humans: A is right 10/16 on item 1, B 16/16; on item 3 the other way round.
    assert items["amhart_01"]["humans"]["agreement_a"] == pytest.approx(10 / 16)
    assert items["amhart_01"]["humans"]["agreement_b"] == pytest.approx(1.0)
    assert items["amhart_01"]["humans"]["difference"] == pytest.approx(6 / 16)
    assert items["amhart_03"]["humans"]["difference"] == pytest.approx(-6 / 16)
    assert data["pooled"]["humans"]["difference"] == pytest.approx(0.0)
    interval = data["pooled"]["humans"]["interval"]
    assert interval["low"] <= 0 <= interval["high"]
    # The same figures as the statistics package on the same labels.
    by_code = {c.pk: c.code for c in conversations}
    expected = drift_report(
        {(by_code[c.pk], k): v for c in conversations for k, v in _a(truth, c, first).items()},
        {(by_code[c.pk], k): v for c in conversations for k, v in _b(truth, c, first).items()},
        {(by_code[c.pk], k): v for c in conversations for k, v in truth[c.pk].items()},
        n_resamples=2000, seed=20260115,
    )
    assert expected.pooled.difference == pytest.approx(data["pooled"]["humans"]["difference"])
    # Every flip carries the humans' label, and both versions' rationales on demand.
    from reports.drift.services import with_rationales

    flips = with_rationales(data["flips"], run_a, source_a, run_b, source_b, chunk=5)
    assert len(flips) == 12 and "rationale_a" not in data["flips"][0]
    flip = next(f for f in flips if f["item"] == "amhart_01")
    assert flip["rationale_a"].startswith("judge-v1 says") and flip["rationale_b"].startswith("judge-v2 says")
    assert flip["human"] == flip["label_b"]


def _a(truth, c, first):  # type: ignore[no-untyped-def]
    out = dict(truth[c.pk])
    if c.pk in first:
        out["amhart_01"] = "no" if out["amhart_01"] == "yes" else "yes"
        out["amhart_02"] = "no" if out["amhart_02"] == "yes" else "yes"
    return {k: v for k, v in out.items()}


def _b(truth, c, first):  # type: ignore[no-untyped-def]
    out = dict(truth[c.pk])
    if c.pk in first:
        out["amhart_02"] = "no" if out["amhart_02"] == "yes" else "yes"
        out["amhart_03"] = "no" if out["amhart_03"] == "yes" else "yes"
    return out


def test_ensembles_show_each_judges_vote_and_reason(db):
    instrument = amhart()
    conversations = corpus(repetitions=2)
    panel_a = judges_for(instrument, ["p1", "p2", "p3"])
    run_a = judged_run(instrument, panel_a, conversations, lambda j, c: dict.fromkeys(AMHART_KEYS, "yes"))
    run_b = judged_run(instrument, panel_a, conversations,
                       lambda j, c: {**dict.fromkeys(AMHART_KEYS, "yes"), "amhart_05": "no" if j.name != "p3" else "yes"})
    from reports.drift.services import with_rationales

    source_a, source_b = label_source_get(run_a, None), label_source_get(run_b, None)
    data = judge_drift(run_a=run_a, source_a=source_a, run_b=run_b, source_b=source_b, study=None)
    assert data["study"] is None and "n_reference" not in data
    flip = with_rationales(data["flips"], run_a, source_a, run_b, source_b)[0]
    assert flip["item"] == "amhart_05" and (flip["label_a"], flip["label_b"]) == ("yes", "no")
    assert [v[0] for v in flip["votes_b"]] == ["p1", "p2", "p3"]
    assert flip["votes_b"][2] == ["p3", "yes", "p3 says yes on amhart_05"]
    assert all(r["humans"] is None for r in data["items"])


def test_judge_page_links_to_the_comparison_with_the_previous_version(versions, researcher):
    run_a, run_b, *_ = versions
    judge_b = Judge.objects.get(name="judge-v2")
    judge_a = Judge.objects.get(name="judge-v1")
    client = client_for(researcher)
    body = client.get(f"/judging/judges/{judge_b.pk}/").content.decode()
    assert "Compare with the previous version" in body
    link = f"/reports/drift/?a_run={run_a.pk}&amp;a_source=judge:{judge_a.pk}&amp;b_run={run_b.pk}&amp;b_source=judge:{judge_b.pk}"
    assert link in body
    assert "Compare with the previous version" not in client.get(f"/judging/judges/{judge_a.pk}/").content.decode()


def test_judge_page_says_when_the_versions_share_no_run(db, researcher):
    instrument = amhart()
    (old,) = judges_for(instrument, ["old"])
    (new,) = judges_for(instrument, ["new"], cloned_from=old)
    body = client_for(researcher).get(f"/judging/judges/{new.pk}/").content.decode()
    assert "shares a conversation yet" in body


def test_page_csv_and_api(versions, coordinator, researcher, clinician, outsider):
    run_a, run_b, study, *_ = versions
    query = f"a_run={run_a.pk}&b_run={run_b.pk}&study={study.pk}"
    client = client_for(coordinator)
    page = client.get(f"/reports/drift/?{query}")
    assert page.status_code == 200
    body = page.content.decode()
    assert "12</strong> of 224 labels flipped" in body and "judge-v1 says" in body and "judge-v2 says" in body
    # Filter the flips by item and search by conversation code.
    filtered = client.get(f"/reports/drift/?{query}&show=amhart_03").content.decode()
    assert "6 flipped labels" in filtered
    items = list(csv.DictReader(io.StringIO(client.get(f"/reports/drift/items.csv?{query}").content.decode())))
    assert [r["item"] for r in items][-1] == "pooled" and len(items) == 15
    flips = list(csv.DictReader(io.StringIO(client.get(f"/reports/drift/flips.csv?{query}").content.decode())))
    assert len(flips) == 12 and all(r["rationale_a"] and r["rationale_b"] for r in flips)
    api = client.get(f"/api/v1/reports/drift/?{query}").json()
    assert api["pooled"]["n_flipped"] == 12 and len(api["flips"]) == 12 and "rationale_a" not in api["flips"][0]
    explained = client.get(f"/api/v1/reports/drift/?{query}&rationales=true").json()
    assert all(f["rationale_a"].startswith("judge-v1 says") for f in explained["flips"])
    assert client.get("/api/v1/reports/drift/").status_code == 400
    assert client.get(f"/api/v1/reports/drift/?a_run={run_a.pk}&b_run={run_b.pk}&a_source=judge:0").status_code == 400
    # The reference study is picked when not given: the one with consensus on these conversations.
    assert client.get(f"/api/v1/reports/drift/?a_run={run_a.pk}&b_run={run_b.pk}").json()["study"] == study.pk
    # A researcher who may not read the study cannot name it; without it they compare the versions only.
    assert client_for(researcher).get(f"/reports/drift/?{query}").status_code == 404
    own = client_for(researcher).get(f"/api/v1/reports/drift/?a_run={run_a.pk}&b_run={run_b.pk}").json()
    assert own["study"] is None and own["pooled"]["humans"] is None
    for user in (clinician, outsider):
        assert client_for(user).get(f"/reports/drift/?{query}").status_code == 404
        assert client_for(user).get(f"/api/v1/reports/drift/?{query}").status_code == 403
    assert client.get(f"/reports/drift/?a_run=999999&b_run={run_b.pk}").status_code == 404
    assert client.get("/reports/drift/").status_code == 200


def test_real_judge_versions_through_the_fake_server(fake_llm, researcher, django_capture_on_commit_callbacks, monkeypatch):
    """The whole path: a judge, its clone with another model, two runs, the link, the flips."""
    from judging import services as judging
    from tests.factories import ConversationFactory
    from tests.judging.conftest import checklist_reply

    monkeypatch.setenv("JUDGE_TEST_API_KEY", "sk-test-not-real")
    instrument = amhart()
    conversations = ConversationFactory.create_batch(3)
    fake_llm.script("judge-old", [checklist_reply({"amhart_13": "N/A", "amhart_14": "N/A"}, default="no")])
    fake_llm.script("judge-new", [checklist_reply({"amhart_01": "yes", "amhart_13": "N/A", "amhart_14": "N/A"}, default="no")])
    old = judging.judge_create(name="judge-old", instrument=instrument, model="openai/judge-old", provider="p",
                               api_base=fake_llm.base_url, api_key_env="JUDGE_TEST_API_KEY")
    new = judging.judge_create(name="judge-new", instrument=instrument, model="openai/judge-new", provider="p",
                               api_base=fake_llm.base_url, api_key_env="JUDGE_TEST_API_KEY", cloned_from=old)
    runs = []
    for judge in (old, new):
        with django_capture_on_commit_callbacks(execute=True):
            runs.append(judging.judge_run_create(judges=[judge], conversation_ids=[c.pk for c in conversations]))
    type(runs[0]).objects.filter(pk__in=[r.pk for r in runs]).update(shared=True)  # operators' runs (issue 30)
    client = client_for(researcher)
    body = client.get(f"/judging/judges/{new.pk}/").content.decode()
    assert f"a_run={runs[0].pk}" in body and f"b_run={runs[1].pk}" in body
    page = client.get(f"/reports/drift/?a_run={runs[0].pk}&a_source=judge:{old.pk}&b_run={runs[1].pk}&b_source=judge:{new.pk}")
    text = page.content.decode()
    assert "3</strong> of 42 labels flipped" in text and "amhart_01 judged yes." in text and "amhart_01 judged no." in text
