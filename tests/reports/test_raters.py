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
    # Last thirds against the others' consensus: clara 21 of 42; cyrus (conversations 0-2, where clara
    # agreed) 42 of 42; rita (conversations 6-8) 21 of 21, the other 21 a clara-cyrus tie.
    assert data["pooled"]["thirds"][2]["agreement"] == pytest.approx((21 + 42 + 21) / (42 + 42 + 21))
    assert data["pooled"]["thirds"][2]["n_tie"] == 21


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
    assert last["n_too_few_raters"] == 28 and last["agreement"] is None  # no consensus of one other rater...
    assert last["agreement_with_others"] == pytest.approx(24 / 28)  # ...but agreement with that rater
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


def test_a_single_rater_has_no_consensus_of_others_and_the_report_says_so(db, coordinator, clinician):
    conversations = corpus(chatbots=("BOT-A",), personas=1, repetitions=3)
    study = study_create(name="Fresh", instrument=amhart(), section=None, conversation_ids=[c.pk for c in conversations],
                         created_by=coordinator, coordinators=[coordinator], raters=[(clinician, "clinician")])
    assert "empty" in rater_drift(study=study)
    rate(study, conversations[0], clinician, dict.fromkeys(AMHART_KEYS, "yes"))
    data = rater_drift(study=study)
    first = _rater(data, "clara")["thirds"][0]
    assert first["agreement"] is None and "fewer than 3 raters" in first["agreement_note"]


def test_page_csv_and_api_for_readers_only(tired, coordinator, researcher, clinician, outsider):
    client = client_for(coordinator)
    body = client.get(f"/reports/studies/{tired.pk}/raters/").content.decode()
    assert "Rater drift and load" in body and "clara" in body and "last" in body and "10 min 00 s" in body
    rows = list(csv.DictReader(io.StringIO(client.get(f"/reports/studies/{tired.pk}/raters.csv").content.decode())))
    assert {r["rater"] for r in rows} == {"clara", "cyrus", "rita", "all raters"}
    assert len(rows) == 4 * 4  # three thirds and "all", per rater and for all raters
    assert {"agreement_with_consensus_of_others", "agreement_with_other_raters", "n_tie", "n_too_few_raters"} <= set(rows[0])
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


# --- issue 18, defect 6: a leave-one-out consensus, and no timing where there is none -------------


def test_with_two_raters_per_conversation_no_cell_reads_full_agreement_with_a_consensus(db, coordinator, clinician, clinician2):
    """k = 2: the consensus of the others is one rater; the report hides it and says why."""
    conversations = corpus(chatbots=("BOT-A",), personas=1, repetitions=6)
    study = study_create(name="Pairs", instrument=amhart(), section=None, conversation_ids=[c.pk for c in conversations],
                         created_by=coordinator, coordinators=[coordinator], raters=[(clinician, "clinician"), (clinician2, "clinician")])
    truth = dict.fromkeys(AMHART_KEYS, "yes")
    for i, c in enumerate(conversations):
        rate(study, c, clinician, {**truth, "amhart_01": "no"} if i < 3 else {**truth, "amhart_01": "no", "amhart_02": "no"}, position=i)
        rate(study, c, clinician2, truth, position=i)
    study_compute_consensus(study=study, actor=coordinator)
    data = rater_drift(study=study)
    for rater in data["raters"]:
        for cell in [*rater["thirds"], rater["overall"]]:
            assert cell["agreement"] is None and cell["kappa"] is None
            assert "fewer than 3 raters" in cell["agreement_note"]
            assert cell["n_too_few_raters"] == cell["n_submitted"] * 14
        assert rater["last_minus_first"]["difference"] is None
    assert data["consensus"]["method"] == "leave-one-out"
    body = client_for(coordinator).get(f"/reports/studies/{study.pk}/raters/").content.decode()
    assert "100.0%" not in body and "1.00" not in body
    assert "fewer than 3 raters" in body


def test_a_rater_is_compared_with_the_consensus_of_the_other_raters_only(db, coordinator, clinician, clinician2):
    """Three raters, yes/yes/no on every item: the odd rater disagrees with the others' yes,
    and each "yes" rater meets a tie (yes vs no) among the other two: never compared."""
    from tests.conftest import make_user

    conversations = corpus(chatbots=("BOT-A",), personas=1, repetitions=3)
    rita = make_user("rita", "clinician")
    study = study_create(name="Three", instrument=amhart(), section=None, conversation_ids=[c.pk for c in conversations],
                         created_by=coordinator, coordinators=[coordinator],
                         raters=[(clinician, "clinician"), (clinician2, "clinician"), (rita, "clinician")])
    for i, c in enumerate(conversations):
        rate(study, c, clinician, dict.fromkeys(AMHART_KEYS, "yes"), position=i)
        rate(study, c, clinician2, dict.fromkeys(AMHART_KEYS, "yes"), position=i)
        rate(study, c, rita, dict.fromkeys(AMHART_KEYS, "no"), position=i)
    study_compute_consensus(study=study, actor=coordinator)
    data = rater_drift(study=study)
    rita_overall = _rater(data, "rita")["overall"]
    assert rita_overall["agreement"] == 0.0 and rita_overall["n_labels"] == 3 * 14  # the others say yes
    clara_overall = _rater(data, "clara")["overall"]
    # A consensus with her own answer would read 100%; the others (cyrus yes, rita no) tie.
    assert clara_overall["agreement"] is None and clara_overall["n_tie"] == 3 * 14
    assert "tie" in clara_overall["agreement_note"]


def _imported(coordinator, clinician, clinician2, n: int = 9):  # type: ignore[no-untyped-def]
    """A study of n conversations whose three raters' ratings were imported from a file."""
    from annotation.studies.ratings_import import ratings_import
    from tests.conftest import make_user

    conversations = corpus(chatbots=("BOT-A",), personas=1, repetitions=n)
    rita = make_user("rita", "clinician")
    study = study_create(name="Imported", instrument=amhart(), section=None, conversation_ids=[c.pk for c in conversations],
                         created_by=coordinator, coordinators=[coordinator],
                         raters=[(clinician, "clinician"), (clinician2, "clinician"), (rita, "clinician")])
    study.sitting_limit = 4
    study.save()
    rows = ["unit,rater,item,label"]
    for i, c in enumerate(conversations):
        for rater in ("clara", "cyrus", "rita"):
            wrong = rater == "clara" and i >= 2 * n // 3  # "drift" over the thirds of file order
            rows += [f"{c.code},{rater},{key},{'no' if wrong and k < 7 else 'yes'}" for k, key in enumerate(AMHART_KEYS)]
    ratings_import(study=study, text="\n".join(rows) + "\n", file="ratings.csv", actor=coordinator)
    study_compute_consensus(study=study, actor=coordinator)
    return study


def test_imported_ratings_have_no_sittings_no_times_and_no_drift_over_file_order(db, coordinator, clinician, clinician2):
    study = _imported(coordinator, clinician, clinician2)
    data = rater_drift(study=study)
    assert data["timing"]["n_timed"] == 0 and data["timing"]["n_untimed"] == 27
    assert "no timing data" in data["timing"]["note"].lower()
    clara = _rater(data, "clara")
    assert clara["timed"] is False and clara["thirds"] == []
    assert clara["last_minus_first"] is None and clara["sittings"] is None
    assert clara["overall"]["median_seconds"] is None and clara["overall"]["n_untimed"] == 9
    assert clara["overall"]["agreement"] == pytest.approx((9 * 14 - 3 * 7) / (9 * 14))  # still compared with the others
    assert data["pooled"]["thirds"] == [] and data["pooled"]["last_minus_first"] is None
    body = client_for(coordinator).get(f"/reports/studies/{study.pk}/raters/").content.decode()
    assert "No timing data" in body
    assert "0 s<" not in body and "over the limit" not in body and "longest" not in body
    assert "last third − first third" not in body and "Median time" not in body
    rows = list(csv.DictReader(io.StringIO(client_for(coordinator).get(f"/reports/studies/{study.pk}/raters.csv").content.decode())))
    assert {r["third"] for r in rows} == {"all"} and all(r["median_seconds"] == "" for r in rows)


def test_the_reliability_page_has_no_median_time_for_imported_ratings(db, coordinator, clinician, clinician2):
    from reports.services import study_reliability

    study = _imported(coordinator, clinician, clinician2, n=3)
    per_rater = study_reliability(study=study, bootstrap=0)["raters"]["per_rater"]
    assert all(r["median_seconds"] is None and r["n_timed"] == 0 for r in per_rater.values())
    body = client_for(coordinator).get(f"/reports/studies/{study.pk}/reliability/").content.decode()
    assert " 0 s<" not in body and "no timing data" in body
