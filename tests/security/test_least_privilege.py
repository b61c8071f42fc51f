"""Issue 30, finding 8: least privilege across studies.

Every coordinator and researcher used to read every judge run, its conversations and labels,
chatbot names and models, batches and persona sets, whatever study they belonged to; a study's
publication bundle carried other studies' conversations. Now (core.visibility) a corpus object is
visible to administrators, its creator, the coordinators and researchers of a study that uses it,
and to every coordinator and researcher once its creator marks it shared. Anyone else gets 404 on
its pages and API detail, and lists, exports and form pickers without it.
"""

from __future__ import annotations

import io
import zipfile

import pytest
from django.contrib.admin.models import LogEntry
from rest_framework.test import APIClient

from annotation.models import MemberRole
from annotation.studies.services import study_add_member, study_create
from corpus.instruments.services import builtin_instruments_load
from corpus.models import Target
from judging.judges import judge_create
from judging.runs import judge_run_create
from simulation.batches import simulation_batch_create
from simulation.models import SimulationBatch
from tests.conftest import client_for, make_user
from tests.factories import ConversationFactory, PersonaFactory, PersonaSetFactory
from tests.simulation.sim_setup import amhart_spec

pytestmark = pytest.mark.django_db

B_MODEL = "openai/b-secret-model-7731"
B_SET = "B Secret Persona Set"


def api(user) -> APIClient:  # type: ignore[no-untyped-def]
    client = APIClient()
    client.force_authenticate(user)
    return client


def _study(name, instrument, section, conversations, coordinator, researcher):  # type: ignore[no-untyped-def]
    study = study_create(name=name, instrument=instrument, section=section, conversation_ids=[c.pk for c in conversations],
                         created_by=coordinator, coordinators=[coordinator], raters=[])
    study_add_member(study=study, user=researcher, role=MemberRole.RESEARCHER, actor=coordinator)
    return study


@pytest.fixture
def world(coordinator, researcher, fake_llm, monkeypatch):  # type: ignore[no-untyped-def]
    """Study A (cora, remy) and study B (bea, bob), each with its own chatbot, persona set, conversations,
    judge run and (B) a simulation batch created by bob."""
    from tests.simulation.sim_setup import KEY_ENV, SECRET

    monkeypatch.setenv(KEY_ENV, SECRET)
    amhart, section = builtin_instruments_load()
    bea, bob = make_user("bea", "coordinator"), make_user("bob", "researcher")
    bot_a = Target.objects.create(code="T-ALPHA", model="openai/a-model", api_base=fake_llm.base_url, api_key_env=KEY_ENV)
    bot_b = Target.objects.create(code="T-BRAVO", model=B_MODEL, api_base=fake_llm.base_url, api_key_env=KEY_ENV, created_by=bob)
    set_a = PersonaSetFactory(name="A persona set", shared=False)
    set_b = PersonaSetFactory(name=B_SET, created_by=bob, shared=False)
    conv_a = [ConversationFactory(code=f"C-AAAA0{i}", target=bot_a, shared=False, persona=PersonaFactory(persona_set=set_a)) for i in range(2)]
    conv_b = [ConversationFactory(code=f"C-BBBB0{i}", target=bot_b, shared=False, persona=PersonaFactory(persona_set=set_b, opening_message="hi"), created_by=bob)
              for i in range(2)]
    study_a = _study("Study A", amhart, section, conv_a, coordinator, researcher)
    study_b = _study("Study B", amhart, section, conv_b, bea, bob)
    judge = judge_create(name="j1", instrument=amhart, model="openai/j1")
    run_a = judge_run_create(judges=[judge], conversation_ids=[c.pk for c in conv_a], selection={"study_id": study_a.pk},
                             created_by=researcher, start=False, name="RUN-ALPHA")
    run_b = judge_run_create(judges=[judge], conversation_ids=[c.pk for c in conv_b], selection={"study_id": study_b.pk},
                             created_by=bob, start=False, name="RUN-BRAVO-SECRET")
    batch_b = simulation_batch_create(spec=amhart_spec(fake_llm, set_b, [bot_b], exchanges=1), created_by=bob, dispatch=False)
    return {"study_a": study_a, "study_b": study_b, "bot_b": bot_b, "set_b": set_b, "conv_a": conv_a, "conv_b": conv_b,
            "run_a": run_a, "run_b": run_b, "batch_b": batch_b, "bob": bob, "bea": bea}


def _b_pages(w) -> list[str]:  # type: ignore[no-untyped-def]
    code, run, batch = w["conv_b"][0].code, w["run_b"].pk, w["batch_b"].code
    return [
        f"/corpus/conversations/{code}/",
        f"/judging/runs/{run}/",
        f"/judging/runs/{run}/progress/",
        f"/judging/runs/{run}/conversations/{code}/",
        f"/judging/runs/{run}/export/long.csv",
        f"/judging/runs/{run}/export/ensemble.csv",
        f"/reports/runs/{run}/scorecard/",
        f"/corpus/personas/{w['set_b'].pk}/",
        f"/corpus/simulations/{batch}/",
        f"/corpus/simulations/{batch}/progress/",
    ]


def _b_api(w) -> list[str]:  # type: ignore[no-untyped-def]
    code, run, batch = w["conv_b"][0].code, w["run_b"].pk, w["batch_b"].code
    return [
        f"/api/v1/conversations/{code}/",
        f"/api/v1/judge-runs/{run}/",
        f"/api/v1/judge-runs/{run}/labels/",
        f"/api/v1/judge-runs/{run}/progress/",
        f"/api/v1/targets/{w['bot_b'].pk}/",
        f"/api/v1/persona-sets/{w['set_b'].pk}/",
        f"/api/v1/simulation-batches/{batch}/",
        f"/api/v1/reports/runs/{run}/scorecard/",
    ]


LISTS = ["/corpus/conversations/", "/corpus/chatbots/", "/corpus/personas/", "/corpus/simulations/", "/judging/runs/",
         "/corpus/conversations/export.csv", "/corpus/conversations/export.jsonl", "/judging/runs/new/",
         "/corpus/simulations/new/", "/studies/new/", "/reports/"]
API_LISTS = ["/api/v1/conversations/", "/api/v1/targets/", "/api/v1/persona-sets/", "/api/v1/simulation-batches/",
             "/api/v1/judge-runs/", "/api/v1/conversations/export/?as=csv"]


def _text(response) -> str:  # type: ignore[no-untyped-def]
    if hasattr(response, "streaming_content"):
        return b"".join(response.streaming_content).decode()
    return response.content.decode()


def _assert_nothing_of_b(text: str, w, where: str) -> None:  # type: ignore[no-untyped-def]
    for secret in (B_MODEL, "T-BRAVO", B_SET, "RUN-BRAVO-SECRET", w["batch_b"].code, *(c.code for c in w["conv_b"])):
        assert secret not in text, f"{secret} in {where}"


def test_a_researcher_of_study_a_cannot_open_study_bs_objects(world, researcher, coordinator):
    for user in (researcher, coordinator):
        for url in _b_pages(world):
            assert client_for(user).get(url).status_code == 404, (user, url)
        for url in _b_api(world):
            assert api(user).get(url).status_code == 404, (user, url)


def test_lists_exports_and_pickers_leave_study_bs_objects_out(world, researcher, coordinator):
    for user in (researcher, coordinator):
        for url in LISTS:
            response = client_for(user).get(url)
            if response.status_code == 404:  # a page this role does not use at all
                continue
            assert response.status_code == 200, url
            _assert_nothing_of_b(_text(response), world, url)
        for url in API_LISTS:
            response = api(user).get(url)
            assert response.status_code == 200, url
            _assert_nothing_of_b(_text(response), world, url)
    # The lists do show study A's own objects (the filter is not simply "nothing").
    page = client_for(researcher).get("/corpus/conversations/").content.decode()
    assert world["conv_a"][0].code in page
    assert "RUN-ALPHA" in client_for(researcher).get("/judging/runs/").content.decode()


def test_an_outsider_cannot_pick_or_name_study_bs_objects_in_forms(world, researcher, coordinator):
    b_code = world["conv_b"][0].code
    # A judge run of B's conversations by code, batch or persona set: refused like unknown ones.
    for payload in ({"codes": [b_code]}, {"batch_ids": [world["batch_b"].code]}, {"persona_set_ids": [world["set_b"].pk]}):
        response = api(researcher).post("/api/v1/judge-runs/", {"judges": ["j1"], **payload}, format="json")
        assert response.status_code == 400, (payload, response.content)
    # A study of B's conversations by code: refused, and the error reads like an unknown code's.
    response = api(coordinator).post("/api/v1/studies/", {
        "name": "grab", "instrument": world["study_a"].instrument_id, "selection": {"codes": [b_code]}}, format="json")
    unknown = api(coordinator).post("/api/v1/studies/", {
        "name": "grab", "instrument": world["study_a"].instrument_id, "selection": {"codes": ["C-NOSUCH"]}}, format="json")
    assert response.status_code == unknown.status_code == 400
    page = client_for(coordinator).post("/studies/new/", {"codes": b_code, "name": "grab"})
    assert page.status_code in (200, 400) and "no conversation has the code" in page.content.decode()
    # A new simulation with B's chatbot: not offered, not accepted.
    response = api(researcher).post("/api/v1/simulation-batches/", {
        "protocol": "amhart", "persona_set": world["set_b"].pk, "targets": ["T-BRAVO"], "exchanges": 1,
        "user_agent": {"model": "openai/u"}}, format="json")
    assert response.status_code == 400
    assert set(response.json()) >= {"persona_set", "targets"}
    # A sampling plan from B's run: not offered.
    assert "RUN-BRAVO-SECRET" not in client_for(coordinator).get("/studies/new/from-run/").content.decode()


def test_members_of_study_b_and_admins_see_everything_of_it(world, admin_user):
    for user in (world["bob"], world["bea"], admin_user):
        for url in _b_pages(world) + _b_api(world):
            # The batch made no conversation yet, so study B does not use it: bea (B's coordinator,
            # not its creator) does not see it; bob (its creator) and admins do.
            if user == world["bea"] and world["batch_b"].code in url:
                assert client_for(user).get(url).status_code == 404, url
                continue
            if url.startswith("/api/"):
                assert api(user).get(url).status_code == 200, (user, url)
                continue
            assert client_for(user).get(url).status_code == 200, (user, url)
    assert B_MODEL in client_for(world["bea"]).get("/corpus/chatbots/").content.decode()


def test_the_creator_shares_and_then_every_researcher_reads_it(world, researcher, admin_user):
    run_b, bob = world["run_b"], world["bob"]
    url = f"/judging/runs/{run_b.pk}/"
    assert client_for(researcher).get(url).status_code == 404
    # Nobody but its creator or an admin may share it; an outsider cannot even find it.
    assert client_for(researcher).post(f"/sharing/judge-run/{run_b.pk}/", {"shared": "1"}).status_code == 404
    page = client_for(bob).get(url).content.decode()
    assert "Share with every coordinator and researcher" in page
    response = client_for(bob).post(f"/sharing/judge-run/{run_b.pk}/", {"shared": "1"})
    assert response.status_code == 302 and response["Location"] == url
    assert client_for(researcher).get(url).status_code == 200
    assert api(researcher).get(f"/api/v1/judge-runs/{run_b.pk}/").status_code == 200
    assert "RUN-BRAVO-SECRET" in client_for(researcher).get("/judging/runs/").content.decode()
    # A reader who is not its creator sees it but may not unshare it.
    assert "Make private" not in client_for(researcher).get(url).content.decode()
    assert client_for(researcher).post(f"/sharing/judge-run/{run_b.pk}/", {"shared": "0"}).status_code == 403
    # The change is audited.
    entry = LogEntry.objects.get(object_id=str(run_b.pk), content_type__model="judgerun")
    assert entry.user_id == bob.pk and "shared" in entry.get_change_message()
    # The chatbot, shared by an admin: its model string is now listed for everyone.
    assert B_MODEL not in client_for(researcher).get("/corpus/chatbots/").content.decode()
    assert client_for(admin_user).post("/sharing/chatbot/T-BRAVO/", {"shared": "1"}).status_code == 302
    assert B_MODEL in client_for(researcher).get("/corpus/chatbots/").content.decode()
    # The batch and a conversation, by their creator; then private again.
    batch = world["batch_b"]
    assert client_for(bob).post(f"/sharing/batch/{batch.code}/", {"shared": "1"}).status_code == 302
    assert client_for(researcher).get(f"/corpus/simulations/{batch.code}/").status_code == 200
    code = world["conv_b"][0].code
    assert client_for(bob).post(f"/sharing/conversation/{code}/", {"shared": "1"}).status_code == 302
    assert client_for(researcher).get(f"/corpus/conversations/{code}/").status_code == 200
    assert client_for(bob).post(f"/sharing/conversation/{code}/", {"shared": "0"}).status_code == 302
    assert client_for(researcher).get(f"/corpus/conversations/{code}/").status_code == 404
    # Odd requests: 404 for an unknown kind, 400 for no choice, 405 for a GET.
    assert client_for(bob).post("/sharing/nothing/1/", {"shared": "1"}).status_code == 404
    assert client_for(bob).post(f"/sharing/batch/{batch.code}/", {}).status_code == 400
    assert client_for(bob).get(f"/sharing/batch/{batch.code}/").status_code == 405


def test_a_clinician_and_a_user_without_a_role_see_none_of_it(world, clinician, outsider):
    SimulationBatch.objects.update(shared=True)
    Target.objects.update(shared=True)
    for user in (clinician, outsider):
        for url in _b_pages(world)[:3] + ["/corpus/chatbots/", "/corpus/simulations/"]:
            assert client_for(user).get(url).status_code == 404, (user, url)
        for url in ["/api/v1/targets/", "/api/v1/judge-runs/"]:
            assert api(user).get(url).status_code in (403, 404), (user, url)


def test_a_bundle_of_study_a_carries_nothing_of_study_b(world, coordinator):
    """Even when study B's run also judged one of A's conversations (so A uses that run), A's bundle
    and study zip carry neither B's conversations nor their labels, chatbot or persona set."""
    run_b = judge_run_create(judges=list(world["run_b"].judges.all()),
                             conversation_ids=[c.pk for c in world["conv_b"]] + [world["conv_a"][0].pk],
                             created_by=world["bob"], start=False, name="RUN-BRAVO-WIDE")
    study_a = world["study_a"]
    for url in (f"/reports/studies/{study_a.pk}/bundle.zip", f"/api/v1/reports/studies/{study_a.pk}/bundle/"):
        response = client_for(coordinator).get(url)
        assert response.status_code == 200, url
        with zipfile.ZipFile(io.BytesIO(response.getvalue())) as archive:
            text = "\n".join(archive.read(name).decode("utf-8", "replace") for name in archive.namelist())
        assert world["conv_a"][0].code in text
        for secret in (B_MODEL, "T-BRAVO", B_SET, "RUN-BRAVO-SECRET", *(c.code for c in world["conv_b"])):
            assert secret not in text, (url, secret)
    assert run_b.pk  # the wide run is A's too: it may be named, but only over A's conversations
