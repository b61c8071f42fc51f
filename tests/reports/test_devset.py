"""Judge development with a locked test set (issue 23): one recorded, stratified split; every version
compared freely on the development set without reading a test-set label; the test set evaluated only
for a version declared final, each look recorded, counted once and shown; the verdict on the test set."""

from __future__ import annotations

import csv
import io
from collections import Counter

import pytest
from django.test import Client

from annotation.models import ConsensusLabel, Rating, StudyEvent
from reports import comparison
from reports import selectors as report_selectors
from reports.devset import selectors as devset_selectors
from reports.devset import services as devset_services
from reports.devset.services import split_make
from reports.models import FinalDeclaration, HoldoutLook, HoldoutMember, HoldoutSplit
from stats.holdout import holdout_split
from tests.conftest import client_for, make_user
from tests.support.devset_study import build_devset_study, judge_run_with_labels, overfit_labels

pytestmark = pytest.mark.django_db


@pytest.fixture
def dev(db):  # type: ignore[no-untyped-def]
    return build_devset_study()


def _split(dev, n_test: int = 12, seed: int = 4242):  # type: ignore[no-untyped-def]
    response = client_for(dev.coordinator).post(f"/reports/studies/{dev.study.pk}/development/split/",
                                                {"n_test": n_test, "seed": seed})
    assert response.status_code == 302
    return HoldoutSplit.objects.get(study=dev.study, number=1)


def _codes(split: HoldoutSplit, part: str) -> set[str]:
    return set(HoldoutMember.objects.filter(split=split, part=part).values_list("conversation__code", flat=True))


def _declare(client, dev, run, source: str) -> dict:  # type: ignore[no-untyped-def]
    response = client.post(f"/api/v1/reports/studies/{dev.study.pk}/development/declarations/",
                           {"run": run.pk, "source": source, "note": "stopped tuning"}, content_type="application/json")
    assert response.status_code in (200, 201), response.content[:300]
    return response.json()


def _evaluate(client, dev, run, source: str) -> tuple[int, dict]:  # type: ignore[no-untyped-def]
    response = client.post(f"/api/v1/reports/studies/{dev.study.pk}/development/looks/",
                           {"run": run.pk, "source": source}, content_type="application/json")
    return response.status_code, response.json()


def test_a_coordinator_splits_once_stratified_by_chatbot_and_persona_with_the_seed_recorded(dev):
    split = _split(dev, n_test=12, seed=4242)
    assert (split.seed, split.n_test, split.n_dev, split.created_by) == (4242, 12, 24, dev.coordinator)
    test = _codes(split, "test")
    assert len(test) == 12 and len(_codes(split, "dev")) == 24
    # 3 chatbots x 4 personas x 3 conversations, a third held out: one per (chatbot, persona) cell.
    cells = Counter((c.target_id, c.persona_id) for c in dev.conversations if c.code in test)
    assert len(cells) == 12 and set(cells.values()) == {1}
    assert {(s["test"], s["dev"]) for s in split.strata} == {(1, 2)}
    # Reproducible from the seed alone: the same draw from the same conversations in code order.
    conversations = devset_selectors.study_main_conversations(dev.study)
    again = holdout_split([c.code for c in conversations], [(c.chatbot, c.persona) for c in conversations], 12, seed=4242)
    assert set(again.test) == test
    event = StudyEvent.objects.get(study=dev.study, action="holdout_split")
    assert event.actor == dev.coordinator and event.details["seed"] == 4242 and event.details["n_test"] == 12
    page = client_for(dev.coordinator).get(f"/studies/{dev.study.pk}/").content.decode()
    assert "Split into development and test sets" in page  # the study's audit trail


def test_a_split_is_immutable_and_a_new_one_needs_a_recorded_reason_and_is_shown_as_such(dev):
    split = _split(dev)
    with pytest.raises(ValueError, match="immutable"):
        split.seed = 1
        split.save()
    member = HoldoutMember.objects.filter(split=split).first()
    with pytest.raises(ValueError, match="immutable"):
        member.part = "dev" if member.part == "test" else "test"
        member.save()
    api = client_for(dev.coordinator)
    url = f"/api/v1/reports/studies/{dev.study.pk}/development/split/"
    refused = api.post(url, {"n_test": 10, "seed": 1}, content_type="application/json")
    assert refused.status_code == 409 and "reason" in refused.json()["detail"]
    assert HoldoutSplit.objects.filter(study=dev.study).count() == 1
    again = api.post(url, {"n_test": 10, "seed": 1, "reason": "two chatbots were added"}, content_type="application/json")
    assert again.status_code == 201 and again.json()["number"] == 2
    page = api.get(f"/reports/studies/{dev.study.pk}/development/").content.decode()
    assert "split 2" in page and "two chatbots were added" in page and 'id="split-again"' in page
    payload = api.get(f"/api/v1/reports/studies/{dev.study.pk}/development/").json()
    assert payload["split"]["number"] == 2 and payload["split"]["reason"] == "two chatbots were added"
    assert [s["number"] for s in payload["earlier_splits"]] == [1]
    assert "split 1 time before" in payload["methods"]["text"] or "split 1 time" in payload["methods"]["text"]
    assert StudyEvent.objects.filter(study=dev.study, action="holdout_split").count() == 2


def test_the_split_form_offers_the_size_the_alt_test_needs(dev):
    page = client_for(dev.coordinator).get(f"/reports/studies/{dev.study.pk}/development/").content.decode()
    guidance = client_for(dev.coordinator).get(f"/api/v1/reports/studies/{dev.study.pk}/development/").json()["guidance"]
    # Four raters rate 27 of the 36 conversations each: 30 per item would need 40 (more than all), pooled
    # over 14 items 3, so the default is a fifth of the study and the page says why.
    assert guidance["conversations_per_rater"] == [27, 27, 27, 27] and guidance["per_item"] is None
    assert guidance["pooled"] == 3 and guidance["default"] == 8
    assert 'name="n_test" value="8"' in page and 'id="size-guidance"' in page
    researcher_page = client_for(dev.researcher).get(f"/reports/studies/{dev.study.pk}/development/").content.decode()
    assert 'name="n_test"' not in researcher_page and "A coordinator of the study makes the split" in researcher_page


class _Spy:
    """Record every conversation code the comparison's reads return (the wrapped selectors still run)."""

    def __init__(self, monkeypatch) -> None:  # type: ignore[no-untyped-def]
        self.codes: set[str] = set()
        for name in ("study_ratings_long", "study_consensus_map", "judge_rows_for_study"):
            original = getattr(report_selectors, name)
            monkeypatch.setattr(comparison.selectors, name, self._wrap(original))

    def _wrap(self, original):  # type: ignore[no-untyped-def]
        def wrapped(*args, **kwargs):  # type: ignore[no-untyped-def]
            result = original(*args, **kwargs)
            if isinstance(result, dict):
                self.codes |= {unit for unit, _ in result}
            elif isinstance(result, tuple):
                self.codes |= {r[0] for part in result[:2] for r in part}
            else:
                self.codes |= {r[0] for r in result}
            return result

        return wrapped


def test_development_comparisons_never_read_a_test_set_label(dev, monkeypatch):
    split = _split(dev)
    test, development = _codes(split, "test"), _codes(split, "dev")
    spy = _Spy(monkeypatch)
    client = client_for(dev.researcher)
    payload = client.get(f"/api/v1/reports/studies/{dev.study.pk}/judges/?run={dev.run_v2.pk}").json()
    assert spy.codes and spy.codes <= development and not spy.codes & test
    assert payload["holdout"]["set"] == "development" and payload["holdout"]["n_conversations"] == 24
    group = payload["groups"][0]
    careful = next(c for c in group["vs_consensus"] if c["rater"] == dev.judge_v2.name)
    assert careful["n_conversations"] == 24
    # Poison the test set: every test-set judge label, rating and consensus label turned around.
    # The development figures (recomputed: the data changed) stay exactly the same.
    from judging.models import JudgeLabel

    flip = {"yes": "no", "no": "yes"}
    for label in JudgeLabel.objects.filter(result__run=dev.run_v2, result__conversation__code__in=test):
        JudgeLabel.objects.filter(pk=label.pk).update(label=flip[label.label])
    for rating in Rating.objects.filter(assignment__study=dev.study, assignment__conversation__code__in=test):
        rating.answers = {"main": {k: {"value": flip[v["value"]]} for k, v in rating.answers["main"].items()}}
        rating.revision += 1
        rating.save()
    ConsensusLabel.objects.filter(study=dev.study, conversation__code__in=test, label="yes").update(label="no")
    again = client.get(f"/api/v1/reports/studies/{dev.study.pk}/judges/?run={dev.run_v2.pk}").json()
    assert again["_cache"]["hit"] is False
    strip = lambda p: {k: v for k, v in p.items() if k != "_cache"}  # noqa: E731
    assert strip(again) == strip(payload)
    page = client.get(f"/reports/studies/{dev.study.pk}/judges/?run={dev.run_v2.pk}").content.decode()
    assert 'id="holdout-note"' in page and "Development set only" in page


def test_the_development_page_lists_every_version_on_the_development_set(dev):
    split = _split(dev)
    client = client_for(dev.researcher)
    payload = client.get(f"/api/v1/reports/studies/{dev.study.pk}/development/").json()
    rows = {(r["run"], r["source"]): r for r in payload["development_versions"] if "source" in r}
    v1 = rows[(dev.run_v1.pk, f"judge:{dev.judge_v1.pk}")]
    v2 = rows[(dev.run_v2.pk, f"judge:{dev.judge_v2.pk}")]
    assert v1["label"] == f"{dev.judge_v1.name} version 1 (run #{dev.run_v1.pk})"
    assert v2["label"] == f"{dev.judge_v2.name} version 2 (run #{dev.run_v2.pk})"
    assert v1["n_conversations"] == v2["n_conversations"] == split.n_dev
    assert v2["kappa"] > v1["kappa"] and v2["alt_test_passed"] is True
    assert v2["kappa_ci"]["low"] <= v2["kappa"] <= v2["kappa_ci"]["high"]
    page = client.get(f"/reports/studies/{dev.study.pk}/development/").content.decode()
    assert v2["label"] in page and 'class="devset-plot"' in page
    rows_csv = list(csv.DictReader(io.StringIO(client.get(f"/reports/studies/{dev.study.pk}/development/versions.csv").content.decode())))
    assert {r["version"] for r in rows_csv} >= {v1["label"], v2["label"]}


def test_the_test_set_cannot_be_evaluated_for_a_version_not_declared_final(dev):
    _split(dev)
    client = client_for(dev.researcher)
    status, body = _evaluate(client, dev, dev.run_v2, f"judge:{dev.judge_v2.pk}")
    assert status == 400 and "not declared final" in body["detail"]
    page = client.post(f"/reports/studies/{dev.study.pk}/development/evaluate/", {"declaration": 999, "confirm": "yes"}, follow=True)
    assert "Only a version declared final" in page.content.decode()
    assert not HoldoutLook.objects.exists()
    # Declared under split 1, then the study is split again: the declaration does not carry over.
    declared = _declare(client, dev, dev.run_v2, f"judge:{dev.judge_v2.pk}")
    split_make(study=dev.study, actor=dev.coordinator, n_test=12, seed=9, reason="a rater's labels were lost")
    refused = client.post(f"/api/v1/reports/studies/{dev.study.pk}/development/looks/", {"declaration": declared["id"]},
                          content_type="application/json")
    assert refused.status_code == 400 and not HoldoutLook.objects.exists()
    status, body = _evaluate(client, dev, dev.run_v2, f"judge:{dev.judge_v2.pk}")
    assert status == 400 and "not declared final" in body["detail"]


def test_each_look_is_recorded_counted_and_shown_on_the_page_in_the_api_and_the_methods(dev):
    _split(dev)
    client = client_for(dev.researcher)
    v1 = _declare(client, dev, dev.run_v1, f"judge:{dev.judge_v1.pk}")
    status, first = _evaluate(client, dev, dev.run_v1, f"judge:{dev.judge_v1.pk}")
    assert status == 201 and first["number"] == 1 and first["status"] == "ready" and first["created"] is True
    v2 = _declare(client, dev, dev.run_v2, f"judge:{dev.judge_v2.pk}")
    status, second = _evaluate(client, dev, dev.run_v2, f"judge:{dev.judge_v2.pk}")
    assert status == 201 and second["number"] == 2
    summary = client.get(f"/api/v1/reports/studies/{dev.study.pk}/development/").json()
    looks = summary["test_set_looks"]
    assert looks["count"] == 2 and looks["versions"] == [v1["version"], v2["version"]]
    assert looks["summary"] == f"Test set evaluated 2 times: versions {v1['version']}, {v2['version']}."
    assert summary["methods"]["test_set_looks"] == 2 and summary["methods"]["test_set_versions"] == looks["versions"]
    assert "evaluated only for versions declared final, 2 times" in summary["methods"]["text"]
    assert [lk["looked_by"] for lk in looks["looks"]] == [dev.researcher.username] * 2
    page = client.get(f"/reports/studies/{dev.study.pk}/development/").content.decode()
    assert looks["summary"] in page.replace("&#x27;", "'")
    assert StudyEvent.objects.filter(study=dev.study, action="test_set_evaluated").count() == 2
    assert StudyEvent.objects.filter(study=dev.study, action="final_declared").count() == 2
    register = list(csv.DictReader(io.StringIO(client.get(f"/reports/studies/{dev.study.pk}/development/looks.csv").content.decode())))
    assert [(r["look"], r["version"]) for r in register] == [("1", v1["version"]), ("2", v2["version"])]


def test_a_look_is_counted_once_per_evaluation_not_per_page_view(dev):
    """A look is the explicit "Evaluate on the test set" action; its stored result is re-read freely,
    and evaluating the same version on unchanged test data is the same look."""
    split = _split(dev)
    client = client_for(dev.researcher)
    declared = _declare(client, dev, dev.run_v2, f"judge:{dev.judge_v2.pk}")
    response = client.post(f"/reports/studies/{dev.study.pk}/development/evaluate/",
                           {"declaration": declared["id"], "confirm": "yes"})
    look = HoldoutLook.objects.get()
    assert response.status_code == 302 and response["Location"].endswith(f"/development/looks/{look.pk}/")
    stored = dict(look.payload)
    for _ in range(3):
        assert client.get(f"/reports/studies/{dev.study.pk}/development/looks/{look.pk}/").status_code == 200
        assert client.get(f"/api/v1/reports/studies/{dev.study.pk}/development/looks/{look.pk}/").json()["result"] == stored
        client.get(f"/reports/studies/{dev.study.pk}/development/")
    status, again = _evaluate(client, dev, dev.run_v2, f"judge:{dev.judge_v2.pk}")
    assert status == 200 and again["created"] is False and again["id"] == look.pk
    assert HoldoutLook.objects.count() == 1
    # Without ticking the confirmation nothing is evaluated.
    client.post(f"/reports/studies/{dev.study.pk}/development/evaluate/", {"declaration": declared["id"]})
    assert HoldoutLook.objects.count() == 1
    # New test-set ratings: evaluating again is a new look; the stored first look keeps its result.
    rating = Rating.objects.filter(assignment__study=dev.study, assignment__conversation__code__in=_codes(split, "test")).first()
    rating.revision += 1
    rating.save()
    status, third = _evaluate(client, dev, dev.run_v2, f"judge:{dev.judge_v2.pk}")
    assert status == 201 and third["number"] == 2
    look.refresh_from_db()
    assert look.payload == stored
    # A change in the development set alone is no reason for a new look.
    dev_rating = Rating.objects.filter(assignment__study=dev.study, assignment__conversation__code__in=_codes(split, "dev")).first()
    dev_rating.revision += 1
    dev_rating.save()
    status, fourth = _evaluate(client, dev, dev.run_v2, f"judge:{dev.judge_v2.pk}")
    assert status == 200 and fourth["number"] == 2


def test_the_verdict_is_reported_on_the_test_set_where_a_judge_tuned_on_development_fails(dev):
    """A judge that copies the clinicians on the development set and contradicts them elsewhere
    passes on the development set and fails on the test set: the test set's verdict is reported."""
    split = _split(dev)
    from judging.judges import judge_create

    tuned = judge_create(name="dv-tuned", instrument=dev.study.instrument, model="openai/dv-tuned", cloned_from=dev.judge_v2)
    run = judge_run_with_labels(dev.study.instrument, dev.conversations, dev.keys,
                                {tuned.name: overfit_labels(dev, _codes(split, "dev"))}, [tuned], name="tuned")
    client = client_for(dev.researcher)
    development = client.get(f"/api/v1/reports/studies/{dev.study.pk}/judges/?run={run.pk}").json()["groups"][0]
    assert development["alt_test"][tuned.name]["passed"] is True
    _declare(client, dev, run, f"judge:{tuned.pk}")
    status, look = _evaluate(client, dev, run, f"judge:{tuned.pk}")
    assert status == 201
    group = look["result"]["groups"][0]
    assert look["result"]["holdout"]["set"] == "test" and look["result"]["holdout"]["n_conversations"] == 12
    assert set(group["alt_test"]) == {tuned.name}  # only the declared version, never the others of the run
    assert group["alt_test"][tuned.name]["passed"] is False
    on_test = group["vs_consensus"][0]
    assert on_test["n_conversations"] == 12 and on_test["cohen_kappa"] < 0
    assert on_test["kappa_ci"]["high"] < 0 and on_test["agreement_ci"]["low"] <= on_test["percent_agreement"]
    page = client.get(f"/reports/studies/{dev.study.pk}/development/looks/{look['id']}/").content.decode()
    assert 'class="verdict-badge fail">fails' in page and f"{tuned.name} version 3" in page
    rows = list(csv.DictReader(io.StringIO(client.get(f"/reports/studies/{dev.study.pk}/development/looks/{look['id']}.csv").content.decode())))
    pooled = next(r for r in rows if r["scope"] == "pooled")
    assert pooled["alt_test_passed"] == "False" and float(pooled["cohen_kappa"]) < 0


def test_an_ensemble_version_is_evaluated_with_the_ensemble_labels_only(dev):
    _split(dev)
    client = client_for(dev.researcher)
    _declare(client, dev, dev.run_v2, "ensemble")
    status, look = _evaluate(client, dev, dev.run_v2, "ensemble")
    assert status == 201
    assert look["version"].startswith(f"ensemble of run #{dev.run_v2.pk}")
    assert set(look["result"]["groups"][0]["alt_test"]) == {"ensemble"}


def test_who_may_split_declare_look_and_read(dev, outsider, coordinator, clinician):
    base = f"/reports/studies/{dev.study.pk}/development/"
    api = f"/api/v1/reports/studies/{dev.study.pk}/development/"
    anonymous = Client()
    assert anonymous.get(base).status_code == 302 and anonymous.get(api).status_code in (401, 403)
    assert anonymous.post(f"{api}split/", {"n_test": 5}, content_type="application/json").status_code in (401, 403)
    for user in (outsider, coordinator, clinician):  # coordinator: not a member of this study
        client = client_for(user)
        assert client.get(base).status_code == 404
        assert client.post(f"{base}split/", {"n_test": 5}).status_code == 404
        assert client.get(api).status_code in (403, 404)
        assert client.post(f"{api}split/", {"n_test": 5}, content_type="application/json").status_code in (403, 404)
    assert not HoldoutSplit.objects.exists()
    # The study's researcher reads but does not split; its coordinator splits but does not look.
    assert client_for(dev.researcher).post(f"{base}split/", {"n_test": 5}).status_code == 404
    assert client_for(dev.researcher).post(f"{api}split/", {"n_test": 5}, content_type="application/json").status_code == 403
    split = _split(dev)
    coordinator_client = client_for(dev.coordinator)
    assert coordinator_client.get(base).status_code == 200
    assert coordinator_client.post(f"{base}declare/", {"version": f"{dev.run_v2.pk}|ensemble"}).status_code == 404
    assert coordinator_client.post(f"{api}declarations/", {"run": dev.run_v2.pk, "source": "ensemble"},
                                   content_type="application/json").status_code == 403
    declared = _declare(client_for(dev.researcher), dev, dev.run_v2, "ensemble")
    assert coordinator_client.post(f"{base}evaluate/", {"declaration": declared["id"], "confirm": "yes"}).status_code == 404
    assert coordinator_client.post(f"{api}looks/", {"declaration": declared["id"]}, content_type="application/json").status_code == 403
    assert not HoldoutLook.objects.exists()
    look, _ = devset_services.test_set_evaluate(study=dev.study, declaration=FinalDeclaration.objects.get(), actor=dev.researcher)
    assert coordinator_client.get(f"{base}looks/{look.pk}/").status_code == 200  # a stored look is read by every reader
    for user in (outsider, coordinator, clinician):
        client = client_for(user)
        assert client.get(f"{base}looks/{look.pk}/").status_code == 404
        assert client.get(f"{api}looks/{look.pk}/").status_code in (403, 404)
        assert client.get(f"{base}split.csv").status_code == 404
    rows = list(csv.DictReader(io.StringIO(coordinator_client.get(f"{base}split.csv").content.decode())))
    assert len(rows) == 36 and Counter(r["set"] for r in rows) == {"dev": 24, "test": 12}
    assert {r["seed"] for r in rows} == {str(split.seed)}
    admin = make_user("devadmin", "admin", is_superuser=True)
    assert client_for(admin).get(base).status_code == 200


def test_judge_drift_compares_versions_with_the_clinicians_on_the_development_set_only(dev):
    client = client_for(dev.researcher)
    query = (f"a_run={dev.run_v1.pk}&a_source=judge:{dev.judge_v1.pk}&b_run={dev.run_v2.pk}"
             f"&b_source=judge:{dev.judge_v2.pk}&study={dev.study.pk}")
    before = client.get(f"/api/v1/reports/drift/?{query}").json()
    assert before["pooled"]["humans"]["n_units"] == 36 and "holdout" not in before
    split = _split(dev)
    after = client.get(f"/api/v1/reports/drift/?{query}").json()
    assert after["pooled"]["humans"]["n_units"] == split.n_dev
    assert after["holdout"] == {"set": "development", "split": 1, "n_conversations": 24}
    test = _codes(split, "test")
    assert all(f["human"] is None for f in after["flips"] if f["conversation"] in test)
    page = client.get(f"/reports/drift/?{query}").content.decode()
    assert "the development set of the study" in page


def test_a_judge_run_still_running_is_not_evaluated_and_nothing_is_counted(dev):
    _split(dev)
    client = client_for(dev.researcher)
    _declare(client, dev, dev.run_v2, f"judge:{dev.judge_v2.pk}")
    type(dev.run_v2).objects.filter(pk=dev.run_v2.pk).update(status="running")
    status, body = _evaluate(client, dev, dev.run_v2, f"judge:{dev.judge_v2.pk}")
    assert status == 409 and "still running" in body["detail"] and not HoldoutLook.objects.exists()
    type(dev.run_v2).objects.filter(pk=dev.run_v2.pk).update(status="completed")
    status, _ = _evaluate(client, dev, dev.run_v2, f"judge:{dev.judge_v2.pk}")
    assert status == 201 and HoldoutLook.objects.count() == 1


def test_the_bundle_carries_the_split_in_its_methods(dev):
    """The publication bundle's METHODS.md gives the split and its seed, as the development page does."""
    import io
    import zipfile

    client = client_for(dev.coordinator)
    before = zipfile.ZipFile(io.BytesIO(client.get(f"/reports/studies/{dev.study.pk}/bundle.zip").getvalue())).read("METHODS.md").decode()
    assert "Judge development with a locked test set" not in before
    split = _split(dev, seed=4242)
    # Before a look the bundle would carry the locked test set's labels: refused (issue 30).
    assert client.get(f"/reports/studies/{dev.study.pk}/bundle.zip").status_code == 409
    declaration = FinalDeclaration.objects.create(study=dev.study, split=split, run=dev.run_v2, source="ensemble", label="v2")
    HoldoutLook.objects.create(study=dev.study, split=split, declaration=declaration, number=1, data_version="x", status="ready")
    for path in (f"/reports/studies/{dev.study.pk}/bundle.zip",):
        methods = zipfile.ZipFile(io.BytesIO(client.get(path).getvalue())).read("METHODS.md").decode()
        assert "## Judge development with a locked test set" in methods
        assert "seed 4242" in methods
