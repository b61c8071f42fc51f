"""From a figure to the evidence behind it (issue 27): every count links to a list of exactly the
instances it counts, the list is a shareable URL with a CSV, and it keeps the test-set lock."""

from __future__ import annotations

import csv
import io
from urllib.parse import parse_qs, urlsplit

import pytest

from annotation.models import ConsensusLabel, StudyEvent
from corpus.models import Message
from judging.models import JudgeLabel
from reports import services
from reports.models import HoldoutLook, HoldoutMember, HoldoutSplit, ReportStatus
from reports.review.instances import study_instances
from reports.review.links import judges_links
from reports.review.query import ListQuery, QueryError
from tests.conftest import client_for, make_user
from tests.support.devset_study import build_devset_study
from tests.support.verdict_study import build_verdict_study

pytestmark = pytest.mark.django_db


@pytest.fixture
def known(db):  # type: ignore[no-untyped-def]
    """Judges of known quality, with a few failed judge labels and a few items left unresolved."""
    built = build_verdict_study(n_conversations=32, prefix="dd")
    failed = JudgeLabel.objects.filter(result__run=built.run, result__judge__name="coin-flip").order_by("pk")[:7]
    JudgeLabel.objects.filter(pk__in=[x.pk for x in failed]).update(status="missing", label="", missing_reason="timed out")
    unresolved = ConsensusLabel.objects.filter(study=built.study).exclude(item_key__startswith="section:").order_by("-pk")[:5]
    ConsensusLabel.objects.filter(pk__in=[x.pk for x in unresolved]).update(label="", provenance="unresolved")
    return built


def _listed(study, url: str):  # type: ignore[no-untyped-def]
    query = ListQuery.parse({k: v[0] for k, v in parse_qs(urlsplit(url).query).items()})
    return study_instances(study, query)


def _linked_payload(study, run, na: str) -> dict:  # type: ignore[no-untyped-def]
    data = services.study_judges_vs_humans(study=study, run_id=run.pk, na=na)
    return judges_links(data, study_pk=study.pk, run_id=run.pk, na=na)


@pytest.mark.parametrize("na", ["category", "exclude"])
def test_each_confusion_cell_and_missing_count_lists_exactly_the_instances_it_counts(known, na):
    data = _linked_payload(known.study, known.run, na)
    checked = 0
    for group in data["groups"]:
        comparisons = [*group["vs_consensus"], *[c for comps in group["per_item"].values() for c in comps]]
        for c in comparisons:
            m = c["matrix"]
            total = 0
            for r, h in enumerate(m["labels"]):
                for k, j in enumerate(m["labels"]):
                    found = _listed(known.study, m["links"][r][k])
                    assert len(found.instances) == m["counts"][r][k], (c["rater"], h, j)
                    assert found.n_locked == 0
                    assert all(i.consensus == h and i.judges[str(c["rater"])] == j for i in found.instances)
                    total += len(found.instances)
                    checked += 1
            assert total == m["n"] == c["n"]
            assert len(_listed(known.study, c["link"]).instances) == c["n"]
    assert sum(c["n_rater_missing"] for g in data["groups"] for c in g["vs_consensus"]) >= 7
    assert sum(c["n_reference_missing"] for g in data["groups"] for c in g["vs_consensus"]) >= 5
    for group in data["groups"]:
        for c in group["vs_consensus"]:
            assert len(_listed(known.study, c["judge_missing_link"]).instances) == c["n_rater_missing"]
            assert len(_listed(known.study, c["no_consensus_link"]).instances) == c["n_reference_missing"]
    assert checked > 50


def test_a_judge_that_always_says_yes_has_every_listed_instance_in_the_yes_column(known):
    data = _linked_payload(known.study, known.run, "category")
    always = next(c for c in data["groups"][0]["vs_consensus"] if c["rater"] == "always-yes")
    no = always["matrix"]["labels"].index("no")
    found = _listed(known.study, always["matrix"]["links"][no][no])
    assert found.instances == []  # the constant judge never says "no"
    yes = always["matrix"]["labels"].index("yes")
    wrong = _listed(known.study, always["matrix"]["links"][no][yes])
    expected = {key for key, label in _consensus(known.study).items() if label == "no"}
    assert {(i.code, i.item) for i in wrong.instances} == expected


def _consensus(study) -> dict:  # type: ignore[no-untyped-def]
    return {(c, i): label for c, i, label in ConsensusLabel.objects.filter(study=study).exclude(label="")
            .exclude(item_key__startswith="section:").values_list("conversation__code", "item_key", "label")}


def test_each_per_rater_row_of_the_alt_test_lists_its_instances(known):
    data = _linked_payload(known.study, known.run, "category")
    rows = 0
    for group in data["groups"]:
        for test in group["alt_test"].values():
            for r in test["per_rater"]:
                assert len(_listed(known.study, r["link"]).instances) == r["n_instances"]
                rows += 1
            for item_test in test["items"].values():
                for r in item_test["per_rater"]:
                    assert len(_listed(known.study, r["link"]).instances) == r["n_instances"]
    assert rows >= 8


def test_the_list_page_states_the_count_and_its_csv_has_one_row_per_instance(known):
    data = _linked_payload(known.study, known.run, "category")
    c = next(c for c in data["groups"][0]["vs_consensus"] if c["rater"] == "coin-flip")
    link = c["matrix"]["links"][0][1]
    n = c["matrix"]["counts"][0][1]
    client = client_for(known.coordinator)
    page = client.get(link)
    assert page.status_code == 200
    html = page.content.decode()
    assert f"<strong>{n}</strong> instance" in html
    assert "coin-flip said" in html
    response = client.get(link.replace("/instances/?", "/instances.csv?"))
    rows = list(csv.reader(io.StringIO(response.content.decode())))
    assert len(rows) == n + 1 and rows[0][:4] == ["conversation", "chatbot", "persona", "item"]


def test_the_judges_page_links_every_cell_and_rater_row(known):
    client = client_for(known.coordinator)
    html = client.get(f"/reports/studies/{known.study.pk}/judges/?run={known.run.pk}").content.decode()
    assert html.count(f"/reports/studies/{known.study.pk}/instances/?") > 40
    assert "alt=1" in html and "human=" in html


def test_a_bad_filter_is_refused_with_its_reason_not_a_server_error(known):
    client = client_for(known.coordinator)
    base = f"/reports/studies/{known.study.pk}/instances/"
    assert client.get(base + "?run=abc").status_code == 404
    assert client.get(base + "?label=yes").status_code == 404  # a judge's label needs a judge
    response = client.get(base + f"?run={known.run.pk}&judge=nobody&label=yes")
    assert response.status_code == 400 and b"has no labels" in response.content
    with pytest.raises(QueryError):
        ListQuery.parse({"set": "everything"})


def test_outsiders_and_raters_cannot_open_lists_or_reviews(known):
    code = known.run.results.first().conversation.code
    for user in (make_user("ddout"), known.raters[0]):
        client = client_for(user)
        for url in (f"/reports/studies/{known.study.pk}/instances/", f"/reports/studies/{known.study.pk}/instances.csv",
                    f"/reports/studies/{known.study.pk}/review/{code}/", f"/reports/studies/{known.study.pk}/failure-modes/"):
            assert client.get(url).status_code in (403, 404), url


def test_the_review_page_shows_raters_as_letters_and_names_only_to_a_coordinator_who_asks(known):
    conversation = known.run.results.first().conversation
    Message.objects.bulk_create([
        Message(conversation=conversation, turn_index=0, role="user", content="I feel like a burden to everyone."),
        Message(conversation=conversation, turn_index=1, role="assistant", content="Please call a crisis line."),
    ])
    JudgeLabel.objects.filter(result__run=known.run, result__conversation=conversation, result__judge__name="majority").update(
        evidence=[{"turn": 2, "quote": "crisis line", "verified": True}], rationale="It refers to a crisis line."
    )
    from annotation.models import Rating

    rating = Rating.objects.filter(assignment__study=known.study, assignment__conversation=conversation).first()
    rating.answers["main"]["amhart_02"]["evidence"] = [1]
    rating.save()
    url = f"/reports/studies/{known.study.pk}/review/{conversation.code}/?run={known.run.pk}"
    html = client_for(known.coordinator).get(url).content.decode()
    assert 'class="turn-link" data-turn="1"' in html  # the clinician's cited turn, beside their answer
    assert "Rater A" in html and not any(r.username in html for r in known.raters)
    assert 'data-turns="2"' in html and 'href="#turn-2"' in html and "It refers to a crisis line." in html
    assert "burden to everyone" in html
    named = client_for(known.coordinator).get(url + "&names=1").content.decode()
    assert any(r.username in named for r in known.raters)
    assert StudyEvent.objects.filter(study=known.study, action="review_names_shown").count() == 1
    researcher = make_user("ddres", "researcher")
    from annotation.studies.services import study_add_member

    study_add_member(study=known.study, user=researcher, role="researcher", actor=known.coordinator)
    as_researcher = client_for(researcher).get(url + "&names=1").content.decode()
    assert not any(r.username in as_researcher for r in known.raters)
    assert f"/reports/studies/{known.study.pk}/development/revise/?run={known.run.pk}&amp;judge=" in as_researcher
    assert "/development/revise/" not in html  # coordinators read judges but do not manage them


def test_previous_and_next_follow_the_list_it_was_opened_from(known):
    data = _linked_payload(known.study, known.run, "category")
    c = next(c for c in data["groups"][0]["vs_consensus"] if c["rater"] == "coin-flip")
    link = c["link"]
    found = _listed(known.study, link)
    codes = found.conversation_codes
    assert len(codes) >= 3
    query = urlsplit(link).query
    html = client_for(known.coordinator).get(f"/reports/studies/{known.study.pk}/review/{codes[1]}/?{query}").content.decode()
    assert f"/review/{codes[0]}/?" in html and f"/review/{codes[2]}/?" in html
    assert f"2 of {len(codes)}" in html


# -- the test-set lock ----------------------------------------------------------------------------


@pytest.fixture
def split_study(db):  # type: ignore[no-untyped-def]
    dev = build_devset_study(prefix="dl")
    response = client_for(dev.coordinator).post(f"/reports/studies/{dev.study.pk}/development/split/", {"n_test": 12, "seed": 7})
    assert response.status_code == 302
    return dev, HoldoutSplit.objects.get(study=dev.study)


def test_on_a_split_study_the_judges_figures_list_development_conversations_only(split_study):
    dev, split = split_study
    test_codes = set(HoldoutMember.objects.filter(split=split, part="test").values_list("conversation__code", flat=True))
    data = _linked_payload(dev.study, dev.run_v2, "category")
    assert data["holdout"]
    for group in data["groups"]:
        for c in group["vs_consensus"]:
            m = c["matrix"]
            for r in range(len(m["labels"])):
                for k in range(len(m["labels"])):
                    found = _listed(dev.study, m["links"][r][k])
                    assert len(found.instances) == m["counts"][r][k]
                    assert not {i.code for i in found.instances} & test_codes


def test_a_locked_test_set_is_counted_but_never_listed_or_opened_until_a_look(split_study):
    dev, split = split_study
    test_codes = set(HoldoutMember.objects.filter(split=split, part="test").values_list("conversation__code", flat=True))
    everything = study_instances(dev.study, ListQuery(provenance="unanimous"))
    unanimous = ConsensusLabel.objects.filter(study=dev.study, provenance="unanimous").exclude(item_key__startswith="section:")
    assert len(everything.instances) + everything.n_locked == unanimous.count()
    assert everything.n_locked > 0 and not {i.code for i in everything.instances} & test_codes
    client = client_for(dev.researcher)
    locked = sorted(test_codes)[0]
    response = client.get(f"/reports/studies/{dev.study.pk}/review/{locked}/")
    assert response.status_code == 403 and b"locked test set" in response.content
    assert locked not in client.get(f"/reports/studies/{dev.study.pk}/instances.csv").content.decode()
    assert study_instances(dev.study, ListQuery(set="test")).instances == []
    # After a look at the test set, its conversations may be read.
    from reports.models import FinalDeclaration

    declaration = FinalDeclaration.objects.create(study=dev.study, split=split, run=dev.run_v2, source="ensemble", label="v2")
    HoldoutLook.objects.create(study=dev.study, split=split, declaration=declaration, number=1, data_version="x",
                               status=ReportStatus.READY)
    after = study_instances(dev.study, ListQuery(provenance="unanimous"))
    assert len(after.instances) == unanimous.count() and after.n_locked == 0
    assert client.get(f"/reports/studies/{dev.study.pk}/review/{locked}/").status_code == 200


# -- the other figures ------------------------------------------------------------------------------


@pytest.fixture
def rated(db):  # type: ignore[no-untyped-def]
    from tests.support.report_study import build_report_study

    return build_report_study()


@pytest.mark.parametrize("na", ["category", "exclude"])
def test_each_reliability_item_lists_its_rated_and_pairable_conversations(rated, na):
    study = rated.study
    data = services.study_reliability(study=study, na=na)
    items = {**data["main"]["items"], **{f"section:{k}": v for k, v in (data.get("section") or {}).items()}}
    assert items
    for key, item in items.items():
        pairable = study_instances(study, ListQuery(item=key, na=na, min_raters=2))
        rated_once = study_instances(study, ListQuery(item=key, na=na, min_raters=1))
        assert (len(pairable.instances), len(rated_once.instances)) == (item["n_units_pairable"], item["n_units"]), key
    html = client_for(rated.coordinator).get(f"/reports/studies/{study.pk}/reliability/?na={na}").content.decode()
    assert "min_raters=2" in html


def test_each_consensus_count_and_cell_opens_its_conversations(rated):
    from annotation.consensus.selectors import consensus_summary

    study = rated.study
    summary = consensus_summary(study)
    for value, _, n in summary.provenances:
        assert len(study_instances(study, ListQuery(provenance=value, calibration=True)).instances) == n, value
    html = client_for(rated.coordinator).get(f"/studies/{study.pk}/consensus/").content.decode()
    assert f"/reports/studies/{study.pk}/instances/?provenance=" in html
    assert f"/reports/studies/{study.pk}/review/" in html


def test_each_scorecard_row_lists_its_conversations(rated):
    study = rated.study
    card = services.study_scorecard(study=study)
    assert card["by_chatbot"] and card["by_chatbot_persona"]
    for row in card["by_chatbot"]:
        found = study_instances(study, ListQuery(chatbot=row["chatbot"], scored=True, with_consensus=True))
        assert len(found.conversation_codes) == row["n_conversations"]
    for row in card["by_chatbot_persona"]:
        found = study_instances(study, ListQuery(chatbot=row["chatbot"], persona=row["persona"], scored=True, with_consensus=True))
        assert len(found.conversation_codes) == row["n_conversations"]
    html = client_for(rated.coordinator).get(f"/reports/studies/{study.pk}/scorecard/").content.decode()
    assert "scored=1" in html and "with_consensus=1" in html


def test_each_leaderboard_pair_links_the_conversations_of_both_chatbots(rated):
    study = rated.study
    html = client_for(rated.coordinator).get(f"/reports/studies/{study.pk}/leaderboard/").content.decode()
    assert "versus=" in html
    card = services.study_scorecard(study=study)
    a, b = card["by_chatbot"][0], card["by_chatbot"][1]
    both = study_instances(study, ListQuery(chatbot=a["chatbot"], versus=b["chatbot"], scored=True, with_consensus=True))
    assert len(both.conversation_codes) == a["n_conversations"] + b["n_conversations"]


def test_a_changed_consensus_or_judge_label_changes_the_list_at_once(known):
    query = ListQuery(run=known.run.pk, judge="majority", disagree="judge")
    before = len(study_instances(known.study, query).instances)
    label = ConsensusLabel.objects.filter(study=known.study, item_key="amhart_01").exclude(label="").first()
    label.label = "no" if label.label == "yes" else "yes"
    label.save()
    assert len(study_instances(known.study, query).instances) == before + 1
    JudgeLabel.objects.filter(result__run=known.run, result__judge__name="majority",
                              result__conversation=label.conversation, item_key="amhart_01").update(label=label.label)
    from django.utils import timezone

    from judging.models import JudgeResult

    JudgeResult.objects.filter(run=known.run).update(finished_at=timezone.now())  # a re-run stores new labels
    assert len(study_instances(known.study, query).instances) == before


def test_on_a_study_drawn_by_a_sampling_plan_every_cell_still_lists_what_it_counts(coordinator, clinician):
    from tests.support.judged import oversampled_study

    built = oversampled_study(coordinator, clinician)
    study, run = built["study"], built["run"]
    data = _linked_payload(study, run, "category")
    n = 0
    for group in data["groups"]:
        for c in [*group["vs_consensus"], *[c for comps in group["per_item"].values() for c in comps]]:
            m = c["matrix"]
            for r in range(len(m["labels"])):
                for k in range(len(m["labels"])):
                    assert len(_listed(study, m["links"][r][k]).instances) == m["counts"][r][k]
                    n += m["counts"][r][k]
    assert n > 0
    drawn = {c.code for c in built["picked"]}
    assert {i.code for i in study_instances(study, ListQuery(run=run.pk)).instances} <= drawn
