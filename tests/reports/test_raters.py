"""Rater drift and load: agreement with consensus and time per conversation by queue position."""

from __future__ import annotations

import csv
import io
from datetime import timedelta

import pytest
from django.utils import timezone

from annotation.consensus.services import study_compute_consensus
from annotation.studies.services import study_create
from reports.raters.services import rater_drift
from tests.conftest import client_for
from tests.support.judged import AMHART_KEYS, amhart, corpus, rate


@pytest.fixture
def tired(db, coordinator, clinician, clinician2):  # type: ignore[no-untyped-def]
    """Nine conversations rated by two raters; clara agrees with the truth early and not late.

    Cyrus and a third reference rater always give the truth, so the consensus is the truth
    wherever two of three agree. Clara takes 10 minutes per conversation early, 2 late.
    """
    from tests.conftest import make_user

    conversations = corpus(chatbots=("BOT-A",), personas=1, repetitions=9)
    reference = make_user("rita", "clinician")
    study = study_create(name="Long queue", instrument=amhart(), section=None, conversation_ids=[c.pk for c in conversations],
                         created_by=coordinator, coordinators=[coordinator],
                         raters=[(clinician, "clinician"), (clinician2, "clinician"), (reference, "clinician")])
    truth = {key: "yes" for key in AMHART_KEYS}
    start = timezone.now() - timedelta(hours=3)
    for i, c in enumerate(conversations):
        tired_labels = dict(truth) if i < 3 else {**truth, **dict.fromkeys(AMHART_KEYS[:7], "no")}
        rate(study, c, clinician, tired_labels, position=i, seconds=600 if i < 3 else 120, submitted_at=start + timedelta(minutes=11 * i))
        rate(study, c, clinician2, truth, position=8 - i, seconds=300, submitted_at=start + timedelta(minutes=6 * i))
        rate(study, c, reference, truth, position=i, seconds=300, submitted_at=start + timedelta(hours=1, minutes=5 * i))
    study_compute_consensus(study=study, actor=coordinator)
    return study


def _rater(data, name):  # type: ignore[no-untyped-def]
    return next(r for r in data["raters"] if r["rater"] == name)


def test_agreement_and_time_fall_in_the_last_third_of_a_tired_raters_queue(tired):
    data = rater_drift(study=tired)
    clara = _rater(data, "clara")
    first, middle, last = clara["thirds"]
    assert (first["n_submitted"], middle["n_submitted"], last["n_submitted"]) == (3, 3, 3)
    assert first["agreement"] == 1.0 and last["agreement"] == pytest.approx(7 / 14)
    assert first["median_seconds"] == 600 and last["median_seconds"] == 120
    diff = clara["last_minus_first"]
    assert diff["difference"] == pytest.approx(-0.5)
    assert diff["interval"]["high"] < 0  # the interval excludes no change
    # Against the other two raters (no consensus needed, her own answer left out): the same drop.
    assert first["agreement_with_others"] == 1.0 and last["agreement_with_others"] == pytest.approx(0.5)
    assert last["n_peer_pairs"] == 3 * 14 * 2
    assert clara["last_minus_first_others"]["difference"] == pytest.approx(-0.5)
    cyrus = _rater(data, "cyrus")
    assert all(c["agreement"] == 1.0 for c in cyrus["thirds"])
    assert data["pooled"]["thirds"][0]["n_submitted"] == 9
    assert data["pooled"]["thirds"][2]["agreement"] == pytest.approx((7 + 14 + 14) / 42)


def test_with_two_raters_ties_have_no_consensus_but_agreement_with_the_other_rater_shows_drift(db, coordinator, clinician, clinician2):
    conversations = corpus(chatbots=("BOT-A",), personas=1, repetitions=6)
    study = study_create(name="Pairs", instrument=amhart(), section=None, conversation_ids=[c.pk for c in conversations],
                         created_by=coordinator, coordinators=[coordinator], raters=[(clinician, "clinician"), (clinician2, "clinician")])
    truth = dict.fromkeys(AMHART_KEYS, "yes")
    for i, c in enumerate(conversations):
        rate(study, c, clinician, truth if i < 2 else {**truth, "amhart_01": "no", "amhart_02": "no"}, position=i)
        rate(study, c, clinician2, truth, position=i)
    study_compute_consensus(study=study, actor=coordinator)
    clara = _rater(rater_drift(study=study), "clara")
    first, _, last = clara["thirds"]
    assert last["n_no_consensus"] == 4 and last["agreement"] == 1.0  # the ties are left out of it...
    assert last["agreement_with_others"] == pytest.approx(24 / 28)  # ...but not out of this
    assert first["agreement_with_others"] == 1.0


def test_submission_order_splits_by_when_the_rater_submitted(tired):
    data = rater_drift(study=tired, order="submitted")
    cyrus = _rater(data, "cyrus")
    # cyrus's queue runs backwards (position 8 - i) but he submitted in conversation order.
    assert [c["n_submitted"] for c in cyrus["thirds"]] == [3, 3, 3]
    queue = rater_drift(study=tired, order="queue")
    assert data["order"] == "submitted" and queue["order"] == "queue"


def test_sittings_count_the_load_against_the_studys_limit(tired):
    tired.sitting_limit, tired.sitting_gap_minutes = 4, 10
    tired.save()
    data = rater_drift(study=tired)
    clara = _rater(data, "clara")["sittings"]  # 11 minutes apart: every submission a sitting of its own
    cyrus = _rater(data, "cyrus")["sittings"]  # 6 minutes apart: one sitting of nine
    assert (clara["n_sittings"], clara["longest"]) == (9, 1)
    assert (cyrus["n_sittings"], cyrus["longest"], cyrus["over_limit"]) == (1, 9, 1)


def test_without_consensus_the_report_says_so(db, coordinator, clinician):
    conversations = corpus(chatbots=("BOT-A",), personas=1, repetitions=3)
    study = study_create(name="Fresh", instrument=amhart(), section=None, conversation_ids=[c.pk for c in conversations],
                         created_by=coordinator, coordinators=[coordinator], raters=[(clinician, "clinician")])
    assert "empty" in rater_drift(study=study)
    rate(study, conversations[0], clinician, dict.fromkeys(AMHART_KEYS, "yes"))
    data = rater_drift(study=study)
    assert "compute consensus" in data["notes"][0]
    assert _rater(data, "clara")["thirds"][0]["agreement"] is None


def test_page_csv_and_api_for_readers_only(tired, coordinator, researcher, clinician, outsider):
    client = client_for(coordinator)
    body = client.get(f"/reports/studies/{tired.pk}/raters/").content.decode()
    assert "Rater drift and load" in body and "clara" in body and "last" in body and "10 min 00 s" in body
    rows = list(csv.DictReader(io.StringIO(client.get(f"/reports/studies/{tired.pk}/raters.csv").content.decode())))
    assert {r["rater"] for r in rows} == {"clara", "cyrus", "rita", "all raters"}
    assert len(rows) == 3 * 4 + 3
    assert {"agreement_with_consensus", "agreement_with_other_raters", "n_no_consensus"} <= set(rows[0])
    api = client.get(f"/api/v1/reports/studies/{tired.pk}/raters/?order=submitted").json()
    assert api["order"] == "submitted" and len(api["raters"]) == 3
    assert client.get(f"/api/v1/reports/studies/{tired.pk}/raters/?order=random").status_code == 400
    detail = client.get(f"/studies/{tired.pk}/").content.decode()
    assert f"/reports/studies/{tired.pk}/raters/" in detail
    for user in (researcher, clinician, outsider):
        assert client_for(user).get(f"/reports/studies/{tired.pk}/raters/").status_code == 404
    for user in (clinician, outsider):
        assert client_for(user).get(f"/api/v1/reports/studies/{tired.pk}/raters/").status_code == 403


def test_report_reads_a_fixed_number_of_queries(tired, django_assert_max_num_queries):
    from reports.raters import selectors

    with django_assert_max_num_queries(4):
        selectors.study_rater_queues(tired)
