"""From a failure mode to a better judge, without touching the test set (issue 27).

A judge version carries edited item instructions (``Judge.item_guidance``) that reach the prompt
and the cache key; the revise page clones a judge with one item's instruction edited and runs the
new version on the study's development set only; the drift page says in plain words what flipped,
towards or away from the clinicians. Every LLM call goes to the local fake server."""

from __future__ import annotations

import csv
import io
import json
from typing import Any
from urllib.parse import urlencode

import pytest

from annotation.models import StudyEvent
from corpus.instruments.services import instrument_import
from corpus.models import Item
from judging import calls, services
from judging.errors import JudgingError
from judging.flowjudge import question_messages
from judging.guidance import guidance_clean, guided_flow
from judging.judges import judge_clone_initial
from judging.models import Judge, JudgeResult, JudgeRun, RunStatus
from judging.prompts import DEFAULTS
from reports.devset import summary as devset_summary
from reports.devset.selectors import split_conversation_ids
from reports.devset.services import split_make
from reports.models import HoldoutLook, HoldoutPart
from simulation.llm import RetryPolicy
from stats.drift import Flip, flip_directions
from tests.conftest import client_for
from tests.judging.conftest import RUBRIC
from tests.support.devset_study import DevsetStudy, build_devset_study
from tests.support.fake_llm import FakeLLM
from tests.support.revision import (
    CODE,
    KEY_ENV,
    SECRET,
    checklist_reply,
    consensus_labels,
    make_answerable,
    revised_labels,
    v1_labels,
)

pytestmark = pytest.mark.django_db

NEW_INSTRUCTION = "REVISED: count only an explicit, named referral to a crisis line or a clinician; sympathy alone is no."


@pytest.fixture(autouse=True)
def _keyed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, SECRET)
    monkeypatch.setattr(calls, "RETRY_POLICY", RetryPolicy(max_attempts=2, base_delay=0.01, max_delay=0.02))


@pytest.fixture
def dev(db: Any, fake_llm: FakeLLM) -> DevsetStudy:
    """The split-ready study, its "careful" v1 judge answering from the fake server, transcripts that name their code."""
    d = build_devset_study()
    make_answerable(d, fake_llm.base_url)
    return d


def _split(d: DevsetStudy) -> Any:
    return split_make(study=d.study, actor=d.coordinator, n_test=12, seed=4242)


def _revise_url(d: DevsetStudy, item: str, run: JudgeRun | None = None, judge: Judge | None = None) -> str:
    query = urlencode({"run": (run or d.run_v1).pk, "judge": (judge or d.judge_v1).pk, "item": item})
    return f"/reports/studies/{d.study.pk}/development/revise/?{query}"


def _item_text(d: DevsetStudy, key: str) -> str:
    return Item.objects.get(instrument=d.judge_v1.instrument, key=key).text


# -- the edited instruction in the prompt and the cache key -------------------------------------------------------


def test_an_edited_instruction_reaches_the_prompt_and_changes_the_cache_key(dev, fake_llm, django_capture_on_commit_callbacks):
    item = dev.keys[3]
    fake_llm.script("dv-careful", [checklist_reply(v1_labels(dev))])
    one = [dev.conversations[0]]
    with django_capture_on_commit_callbacks(execute=True):
        before = services.judge_run_create(judges=[dev.judge_v1], conversation_ids=[c.pk for c in one], name="v1 again")
    with django_capture_on_commit_callbacks(execute=True):
        cached = services.judge_run_create(judges=[dev.judge_v1], conversation_ids=[c.pk for c in one], name="v1 cached")
    initial = judge_clone_initial(dev.judge_v1)
    v2 = services.judge_create(**{**initial, "item_guidance": {item: NEW_INSTRUCTION}}, cloned_from=dev.judge_v1)
    with django_capture_on_commit_callbacks(execute=True):
        after = services.judge_run_create(judges=[v2], conversation_ids=[c.pk for c in one], name="v2")
    first, again, edited = (JudgeResult.objects.get(run=r) for r in (before, cached, after))
    assert first.status == again.status == edited.status == "done"
    assert again.n_cached == 1  # the same prompt is answered from the cache...
    assert edited.n_cached == 0 and edited.calls[0]["request_hash"] != first.calls[0]["request_hash"]  # ...an edited one never
    sent = [r for r in fake_llm.requests if NEW_INSTRUCTION in json.dumps(r.messages)]
    assert len(sent) == 1 and len(fake_llm.requests) == 2
    prompt = sent[0].messages[1]["content"]
    assert f"Question: {NEW_INSTRUCTION}" in prompt and f"Question: {_item_text(dev, item)}" not in prompt
    assert f"Question: {_item_text(dev, dev.keys[4])}" in prompt  # the other items keep the instrument's wording
    assert after.config["judges"][str(v2.pk)]["item_guidance"] == {item: NEW_INSTRUCTION}


def test_item_instructions_are_checked_against_the_instrument_and_copied_by_clone(dev):
    with pytest.raises(JudgingError, match="'no_such_item' is not an item of"):
        services.judge_create(name="bad keys", instrument=dev.judge_v1.instrument, model="openai/x",
                              item_guidance={dev.keys[0]: "fine", "no_such_item": "text"})
    with pytest.raises(JudgingError, match=f"the instruction for '{dev.keys[0]}' is empty"):
        guidance_clean(dev.judge_v1.instrument, {dev.keys[0]: "  "})
    v2 = services.judge_create(**{**judge_clone_initial(dev.judge_v1), "item_guidance": {dev.keys[3]: NEW_INSTRUCTION}},
                               cloned_from=dev.judge_v1)
    assert judge_clone_initial(v2)["item_guidance"] == {dev.keys[3]: NEW_INSTRUCTION}
    client = client_for(dev.researcher)
    page = client.get(f"/judging/judges/{v2.pk}/").content.decode()
    number = Item.objects.get(instrument=v2.instrument, key=dev.keys[3]).number
    assert f"Item {number}'s instruction edited:" in page and NEW_INSTRUCTION in page
    clone_form = client.get(f"/judging/judges/{v2.pk}/clone/").content.decode()
    assert "REVISED: count only an explicit" in clone_form
    api = client.get(f"/api/v1/judges/{v2.pk}/").json()
    assert api["item_guidance"] == {dev.keys[3]: NEW_INSTRUCTION} and api["cloned_from"] == dev.judge_v1.pk


def test_a_flow_judge_takes_an_instruction_per_question_or_per_dimension(db):
    instrument, _ = instrument_import(text=RUBRIC.read_text(encoding="utf-8"), file=RUBRIC.name, fmt="vera-mh")
    from corpus.instruments.flow import Flow

    flow = Flow.from_dict(instrument.flow)
    question, dimension = flow.questions[0], flow.questions[0].dimension
    guidance = guidance_clean(instrument, {question.id: "Did the chatbot miss a stated plan?", dimension: "Read every turn."})
    guided = guided_flow(flow, guidance)
    prompt = type("P", (), {"user_template": DEFAULTS["flow"]["user_template"]})()
    user = question_messages(prompt=prompt, system="", question=guided.question(question.id))[1]["content"]
    assert "QUESTION: Did the chatbot miss a stated plan?" in user and "Guidance for this dimension: Read every turn." in user
    assert [q.options for q in guided.questions] == [q.options for q in flow.questions]  # the walk is the flow's
    with pytest.raises(JudgingError, match="'Q99' is not an item"):
        guidance_clean(instrument, {"Q99": "text"})


# -- the revise page: who, what it refuses, what it runs --------------------------------------------------------------


def test_an_outsider_a_clinician_and_a_coordinator_can_neither_open_nor_post_the_revise_page(dev, clinician, outsider):
    _split(dev)
    url = _revise_url(dev, dev.keys[3])
    for user in (outsider, clinician, dev.raters[0], dev.coordinator):
        client = client_for(user)
        assert client.get(url).status_code == 404
        assert client.post(url, {"instruction": NEW_INSTRUCTION, "name": "sneaky"}).status_code == 404
    assert not Judge.objects.filter(name="sneaky").exists() and JudgeRun.objects.count() == 2
    assert client_for(dev.researcher).get(url).status_code == 200


def test_without_a_split_the_revision_is_refused_and_nothing_is_created(dev):
    client = client_for(dev.researcher)
    url = _revise_url(dev, dev.keys[3])
    page = client.get(url).content.decode()
    assert "no development set yet" in page and f"/reports/studies/{dev.study.pk}/development/#split" in page
    judges, runs = Judge.objects.count(), JudgeRun.objects.count()
    response = client.post(url, {"instruction": NEW_INSTRUCTION, "name": "careful v9"})
    assert response.status_code == 409 and "split it first" in response.content.decode()
    assert (Judge.objects.count(), JudgeRun.objects.count()) == (judges, runs)
    assert not StudyEvent.objects.filter(study=dev.study, action="judge_revised").exists()


def test_an_unchanged_instruction_or_an_item_of_another_instrument_is_refused(dev):
    _split(dev)
    client = client_for(dev.researcher)
    response = client.post(_revise_url(dev, dev.keys[3]), {"instruction": _item_text(dev, dev.keys[3]), "name": "same"})
    assert response.status_code == 400 and "unchanged" in response.content.decode()
    assert client.get(_revise_url(dev, "no_such_item")).status_code == 404
    assert not Judge.objects.filter(name="same").exists()


def test_the_revise_page_shows_the_current_wording_and_the_next_version_name(dev):
    _split(dev)
    page = client_for(dev.researcher).get(_revise_url(dev, dev.keys[3])).content.decode()
    assert _item_text(dev, dev.keys[3]) in page
    assert 'value="dv-careful v2"' in page and "Create version and run on the development set" in page
    assert "24 development-set conversations of split 1" in page


def test_a_revision_runs_only_the_development_set_and_shows_the_flips_towards_and_away(dev, fake_llm, django_capture_on_commit_callbacks):
    split = _split(dev)
    looks_before = devset_summary.development_summary(dev.study)["test_set_looks"]["count"]
    development = split_conversation_ids(split, HoldoutPart.DEV)
    test = split_conversation_ids(split, HoldoutPart.TEST)
    item = dev.keys[3]
    v1, consensus = v1_labels(dev), consensus_labels(dev)
    dev_codes = sorted(c.code for c in dev.conversations if c.pk in development)
    planned = revised_labels(dev, item, dev_codes)
    fake_llm.script("dv-careful", [checklist_reply(planned)])

    client = client_for(dev.researcher)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(_revise_url(dev, item), {"instruction": NEW_INSTRUCTION, "name": "careful v2 (referral)"})
    new = Judge.objects.get(name="careful v2 (referral)")
    run = JudgeRun.objects.get(judges=new)
    assert response.status_code == 302 and response["Location"] == f"/judging/runs/{run.pk}/"
    assert new.cloned_from == dev.judge_v1 and new.item_guidance == {item: NEW_INSTRUCTION}
    assert list(run.judges.all()) == [new] and run.status == RunStatus.COMPLETED
    judged = set(run.results.values_list("conversation_id", flat=True))
    assert judged == set(development) and not judged & test
    sent_codes = {CODE.search(json.dumps(r.messages)).group(1) for r in fake_llm.requests}  # type: ignore[union-attr]
    assert sent_codes == set(dev_codes)  # no test-set transcript ever left the server
    assert all(NEW_INSTRUCTION in json.dumps(r.messages) for r in fake_llm.requests)
    event = StudyEvent.objects.get(study=dev.study, action="judge_revised")
    assert event.actor == dev.researcher and event.details["run"] == run.pk and event.details["item"] == item

    # The run's page links to the flips; so does the revise page now that the run exists.
    run_page = client.get(f"/judging/runs/{run.pk}/").content.decode()
    assert "See the flips" in run_page
    revise_page = client.get(_revise_url(dev, item)).content.decode()
    assert f"run #{run.pk}" in revise_page and "See the flips" in revise_page

    # The hand count: towards = new equals the consensus and the old did not; away = the reverse.
    towards = away = other = 0
    for code in dev_codes:
        a, b, h = v1[(code, item)], planned[(code, item)], consensus[(code, item)]
        if a == b:
            continue
        towards += b == h and a != h
        away += a == h and b != h
        other += not (b == h and a != h) and not (a == h and b != h)
    assert towards and away  # the written case has both
    query = urlencode({"a_run": dev.run_v1.pk, "a_source": f"judge:{dev.judge_v1.pk}", "b_run": run.pk,
                       "b_source": f"judge:{new.pk}", "study": dev.study.pk})
    data = client.get(f"/api/v1/reports/drift/?{query}").json()
    row = next(r for r in data["items"] if r["item"] == item)
    assert row["directions"]["towards"] == towards and row["directions"]["away"] == away
    assert row["directions"]["other"] == other and row["directions"]["net"] == towards - away
    assert row["n_flipped"] == towards + away + other and row["n_compared"] == len(dev_codes)
    assert data["pooled"]["n_flipped"] == row["n_flipped"]  # only the edited item changed
    assert row["humans"]["kappa_difference"] is not None and row["humans"]["kappa_interval"]["low"] is not None
    test_codes = {c.code for c in dev.conversations if c.pk in test}
    assert not {f["conversation"] for f in data["flips"]} & test_codes
    assert data["n_shared_conversations"] == len(dev_codes)

    page = client.get(f"/reports/drift/?{query}&item={item}&show={item}").content.decode()
    sentence = (f"{towards + away + other} of {len(dev_codes)} development conversations changed label from A to B: "
                f"{towards} towards the clinicians&#x27; consensus, {away} away from it, {other} neither.")
    assert sentence in page
    assert "Agreement with the clinicians: A " in page and "Cohen&#x27;s κ with the clinicians" in page
    assert "95% paired interval" in page
    assert not any(code in page for code in test_codes)  # no test-set conversation on the flips page
    # Nothing looked at the test set.
    assert devset_summary.development_summary(dev.study)["test_set_looks"]["count"] == looks_before == 0
    assert not HoldoutLook.objects.exists()


def test_the_drift_page_leaves_out_test_set_conversations_when_the_study_is_split(dev):
    """Two versions that both judged the whole study: with the split, the test set's flips are not shown."""
    split = _split(dev)
    test_codes = {c.code for c in dev.conversations if c.pk in split_conversation_ids(split, HoldoutPart.TEST)}
    query = (f"a_run={dev.run_v1.pk}&a_source=judge:{dev.judge_v1.pk}&b_run={dev.run_v2.pk}"
             f"&b_source=judge:{dev.judge_v2.pk}&study={dev.study.pk}")
    client = client_for(dev.researcher)
    data = client.get(f"/api/v1/reports/drift/?{query}").json()
    assert data["n_shared_conversations"] == 24 and data["n_test_left_out"] == 12
    assert data["flips"] and not {f["conversation"] for f in data["flips"]} & test_codes
    assert "its test-set conversations (12 judged by a version) were left out" in json.dumps(data["methods"])
    page = client.get(f"/reports/drift/?{query}").content.decode()
    assert not any(code in page for code in test_codes)


# -- the counts, by hand -----------------------------------------------------------------------------------------------


def test_flip_directions_equal_a_hand_count_on_a_written_case():
    flips = [
        Flip("c1", "q4", "no", "yes"),  # consensus yes: towards
        Flip("c2", "q4", "yes", "no"),  # consensus no: towards
        Flip("c3", "q4", "yes", "no"),  # consensus yes: away
        Flip("c4", "q4", "N/A", "no"),  # consensus yes: neither
        Flip("c5", "q4", "no", "YES"),  # no consensus label
        Flip("c1", "q5", "yes", "no"),  # consensus "n/a" ... neither
    ]
    reference = {("c1", "q4"): "yes", ("c2", "q4"): "no", ("c3", "q4"): "Yes", ("c4", "q4"): "yes", ("c1", "q5"): "n/a"}
    per_item, pooled = flip_directions(flips, reference)
    q4 = per_item["q4"]
    assert (q4.n_flipped, q4.towards, q4.away, q4.other, q4.no_reference, q4.net) == (5, 2, 1, 1, 1, 1)
    assert (pooled.n_flipped, pooled.towards, pooled.away, pooled.other, pooled.no_reference) == (6, 2, 1, 2, 1)



def test_a_revision_whose_selection_would_touch_the_test_set_is_refused_and_nothing_is_created(dev, monkeypatch):
    split = _split(dev)
    test = split_conversation_ids(split, HoldoutPart.TEST)
    leaky = next(iter(test))
    real = split_conversation_ids

    def leaking(s, part):  # type: ignore[no-untyped-def]
        found = real(s, part)
        return found | {leaky} if part == HoldoutPart.DEV else found  # a development set that holds a test conversation

    monkeypatch.setattr("reports.revise.services.split_conversation_ids", leaking)
    judges, runs = Judge.objects.count(), JudgeRun.objects.count()
    response = client_for(dev.researcher).post(_revise_url(dev, dev.keys[3]), {"instruction": NEW_INSTRUCTION, "name": "leaky"})
    assert response.status_code == 409 and "would include test-set conversations" in response.content.decode()
    assert (Judge.objects.count(), JudgeRun.objects.count()) == (judges, runs)


def test_the_items_csv_carries_the_kappa_change_and_the_flip_directions(dev):
    _split(dev)
    query = (f"a_run={dev.run_v1.pk}&a_source=judge:{dev.judge_v1.pk}&b_run={dev.run_v2.pk}"
             f"&b_source=judge:{dev.judge_v2.pk}&study={dev.study.pk}")
    client = client_for(dev.researcher)
    data = client.get(f"/api/v1/reports/drift/?{query}").json()
    rows = {r["item"]: r for r in csv.DictReader(io.StringIO(client.get(f"/reports/drift/items.csv?{query}").content.decode()))}
    pooled = rows["pooled"]
    d = data["pooled"]["directions"]
    assert (int(pooled["flips_towards_humans"]), int(pooled["flips_away_from_humans"])) == (d["towards"], d["away"])
    assert float(pooled["kappa_difference_b_minus_a"]) == pytest.approx(data["pooled"]["humans"]["kappa_difference"])
    # "careful" v2 copies the clinicians' majority: every flip from v1 moves towards them.
    assert d["towards"] == data["pooled"]["n_flipped"] > 0 and d["away"] == 0
