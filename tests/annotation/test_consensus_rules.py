"""Consensus rules (issue 11, defect 2): a minimum of ratings, provisional labels, counts that add up."""

from __future__ import annotations

import csv
import io
import re
import zipfile

import pytest

from annotation.consensus.selectors import adjudication_queue
from annotation.consensus.services import study_compute_consensus
from annotation.models import Assignment, ConsensusLabel
from tests.annotation.coordinator_setup import clinicians, make_study, submit
from tests.conftest import client_for


def _pairs(study):  # type: ignore[no-untyped-def]
    """Return each conversation's two assignments (k=2), in conversation order."""
    by_conversation: dict[int, list[Assignment]] = {}
    for a in study.assignments.order_by("conversation_id", "rater__username"):
        by_conversation.setdefault(a.conversation_id, []).append(a)
    return list(by_conversation.values())


@pytest.fixture
def two_raters_each(coordinator):  # type: ignore[no-untyped-def]
    raters = clinicians(2)
    study = make_study(coordinator, raters, n=4, k=2)
    for conversation in study.conversations.all():
        for rater in raters:
            Assignment.objects.create(study=study, conversation=conversation, rater=rater)
    return study


def test_a_single_rating_of_two_is_too_few_and_never_unanimous(two_raters_each, coordinator):
    first, _second = _pairs(two_raters_each)[0]
    submit(first, {"amhart_01": "yes"})
    study_compute_consensus(study=two_raters_each, actor=coordinator)
    entry = ConsensusLabel.objects.get(study=two_raters_each, item_key="amhart_01")
    assert entry.provenance == "too_few" and entry.label == ""
    assert entry.n_ratings == 1 and entry.n_expected == 2 and entry.provisional


def test_a_study_that_asks_for_one_rating_calls_it_single_not_unanimous(coordinator):
    study = make_study(coordinator, clinicians(1), n=1, k=1, min_ratings_for_consensus=1)
    rater = study.memberships.get(role="rater").user
    assignment = Assignment.objects.create(study=study, conversation=study.conversations.get(), rater=rater)
    submit(assignment, {"amhart_01": "yes"})
    study_compute_consensus(study=study, actor=coordinator)
    entry = ConsensusLabel.objects.get(study=study, item_key="amhart_01")
    assert (entry.provenance, entry.label, entry.provisional) == ("single", "yes", False)


def test_labels_are_provisional_while_an_assignment_of_the_conversation_is_open(two_raters_each, coordinator):
    pairs = _pairs(two_raters_each)
    for a, b in pairs[:3]:
        submit(a, {"amhart_01": "yes"})
        submit(b, {"amhart_01": "yes"})
    a, _open = pairs[3]
    submit(a, {"amhart_01": "no"})
    study_compute_consensus(study=two_raters_each, actor=coordinator)
    final = ConsensusLabel.objects.filter(study=two_raters_each, provisional=False)
    assert final.count() == 3 and {e.provenance for e in final} == {"unanimous"}
    from annotation.consensus.selectors import consensus_summary

    summary = consensus_summary(two_raters_each)
    # the open conversation's item has one rating: too few, no provisional label yet
    assert (summary.provisional, summary.n_open_conversations, summary.too_few) == (0, 1, 1)
    page = client_for(coordinator).get(f"/studies/{two_raters_each.pk}/consensus/").content.decode()
    assert "provisional" in page and "too few ratings" in page.lower()


def test_labels_of_different_case_vote_together_in_the_items_spelling(two_raters_each, coordinator):
    a, b = _pairs(two_raters_each)[0]
    submit(a, {"amhart_01": "YES"})
    submit(b, {"amhart_01": " yes"})
    study_compute_consensus(study=two_raters_each, actor=coordinator)
    entry = ConsensusLabel.objects.get(study=two_raters_each, item_key="amhart_01")
    assert (entry.provenance, entry.label, entry.votes) == ("unanimous", "yes", {"yes": 2})


def test_a_withdrawn_rating_removes_its_stale_consensus(two_raters_each, coordinator):
    a, b = _pairs(two_raters_each)[0]
    submit(a, {"amhart_01": "yes", "amhart_02": "no"})
    submit(b, {"amhart_01": "yes"})
    study_compute_consensus(study=two_raters_each, actor=coordinator)
    assert ConsensusLabel.objects.filter(study=two_raters_each, item_key="amhart_02").exists()
    Assignment.objects.filter(pk=a.pk).update(status="withdrawn")
    study_compute_consensus(study=two_raters_each, actor=coordinator)
    assert not ConsensusLabel.objects.filter(study=two_raters_each, item_key="amhart_02").exists()


@pytest.fixture
def mixed_consensus(coordinator):  # type: ignore[no-untyped-def]
    """Three raters per conversation: unanimous, majority with dissent, ties, and open ones."""
    raters = clinicians(3)
    study = make_study(coordinator, raters, n=6, k=3)
    for conversation in study.conversations.all():
        for rater in raters:
            Assignment.objects.create(study=study, conversation=conversation, rater=rater)
    triples = []
    for conversation in study.conversations.order_by("pk"):
        triples.append(list(study.assignments.filter(conversation=conversation).order_by("rater__username")))
    plans = [
        ("yes", "yes", "yes"),  # unanimous
        ("yes", "yes", "no"),   # majority, disputed
        ("yes", "no", None),    # tie, but the third rating is open: provisional, waits
        ("yes", "no", "N/A"),   # plurality? no: three labels each once -> unresolved tie
        ("no", "no", None),     # provisional unanimous
        ("yes", None, None),    # too few ratings
    ]
    for triple, plan in zip(triples, plans, strict=True):
        for assignment, label in zip(triple, plan, strict=True):
            if label is not None:
                submit(assignment, {"amhart_13": label})
    study_compute_consensus(study=study, actor=coordinator)
    return study


def test_provenance_counts_add_up_across_page_queue_and_exports(mixed_consensus, coordinator):
    from annotation.consensus.selectors import consensus_summary

    study = mixed_consensus
    summary = consensus_summary(study)
    assert summary.total == ConsensusLabel.objects.filter(study=study).count() == 6
    assert sum(n for _, _, n in summary.provenances) == summary.total
    assert (summary.unresolved, summary.disputed, summary.waiting, summary.too_few) == (1, 1, 1, 1)
    assert summary.queue == adjudication_queue(study).count() == 2
    client = client_for(coordinator)
    page = client.get(f"/studies/{study.pk}/consensus/").content.decode()
    assert f"Adjudication queue ({summary.queue})" in page
    assert re.search(rf"Adjudication queue <strong>{summary.queue}</strong> = 1 unresolved \+ 1 decided with dissent", page)
    queue_page = client.get(f"/studies/{study.pk}/adjudication/").content.decode()
    assert f"{summary.queue} waiting" in queue_page
    rows = list(csv.DictReader(io.StringIO(client.get(f"/studies/{study.pk}/consensus.csv").content.decode())))
    assert len(rows) == summary.total
    assert sum(r["in_adjudication_queue"] == "True" for r in rows) == summary.queue
    assert sum(r["provisional"] == "True" and r["label"] != "" for r in rows) == summary.provisional == 1
    archive = zipfile.ZipFile(io.BytesIO(client.get(f"/reports/studies/{study.pk}/export.zip").content))
    exported = list(csv.DictReader(io.StringIO(archive.read("consensus.csv").decode())))
    assert len(exported) == summary.total
    assert sum(r["in_adjudication_queue"] == "True" for r in exported) == summary.queue
    assert f"adjudication queue {summary.queue}" in archive.read("README.txt").decode()
