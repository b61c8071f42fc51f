"""Finding 6: membership, ownership and roles.

- A researcher who is not a member of a study could start a judge run on it (and read its
  conversation codes on the run page); the form listed every study's name; ``study_id=99``
  answered "no study 99" while a forbidden id was accepted. Now only studies the user may read
  are offered and accepted, and an unknown id and a forbidden one answer the same.
- Any researcher could cancel, retry or resume another researcher's runs and batches. Now only
  the one who started it, the members of its study (for a run chosen from a study) and admins.
- ``/api/v1/`` answered 200 to users with no role and to clinicians; every API needs a role.
- ``manage.py api_token`` issued a working token to a clinician whom the tokens page refuses.
"""

from __future__ import annotations

import re

import pytest
from django.core.management import CommandError, call_command
from knox.models import AuthToken
from rest_framework.test import APIClient

from annotation.models import MemberRole
from annotation.studies.services import study_add_member, study_create
from corpus.instruments.services import builtin_instruments_load
from corpus.personas.services import builtin_personas_load
from judging.judges import judge_create
from judging.models import JudgeRun, RunStatus
from judging.runs import judge_run_create
from simulation.batches import simulation_batch_create
from simulation.models import SimulationBatch
from tests.conftest import client_for, make_user
from tests.factories import ConversationFactory
from tests.security.test_blind_everywhere import crawl, parameterless_urls
from tests.simulation.sim_setup import amhart_spec, make_target

pytestmark = pytest.mark.django_db


def api(user) -> APIClient:  # type: ignore[no-untyped-def]
    client = APIClient()
    client.force_authenticate(user)
    return client


@pytest.fixture
def setting(coordinator, researcher):  # type: ignore[no-untyped-def]
    """A study whose members are the coordinator and the researcher; a judge; a second researcher."""
    amhart, section = builtin_instruments_load()
    conversations = ConversationFactory.create_batch(2)
    study = study_create(
        name="SECRET-STUDY-NAME arm B", instrument=amhart, section=section, conversation_ids=[c.pk for c in conversations],
        created_by=coordinator, coordinators=[coordinator], raters=[],
    )
    study_add_member(study=study, user=researcher, role=MemberRole.RESEARCHER, actor=coordinator)
    judge = judge_create(name="j1", instrument=amhart, model="openai/j1")
    other = make_user("rosa", "researcher")
    return {"study": study, "judge": judge, "other": other, "conversations": conversations}


def _run_payload(setting, study_id):  # type: ignore[no-untyped-def]
    return {"judges": [setting["judge"].name], "study_id": study_id}


def test_a_researcher_who_is_not_a_member_cannot_judge_a_study(setting, researcher):
    study, other = setting["study"], setting["other"]
    forbidden = api(other).post("/api/v1/judge-runs/", _run_payload(setting, study.pk), format="json")
    unknown = api(other).post("/api/v1/judge-runs/", _run_payload(setting, 99999), format="json")
    assert forbidden.status_code == unknown.status_code == 400
    same = lambda r: re.sub(r"\d+", "N", r.json()["detail"])  # noqa: E731
    assert same(forbidden) == same(unknown)
    assert not JudgeRun.objects.exists()
    # The form neither lists the study nor accepts it.
    page = client_for(other).get("/judging/runs/new/").content.decode()
    assert "SECRET-STUDY-NAME" not in page
    posted = client_for(other).post("/judging/runs/new/", {"judges": [setting["judge"].pk], "study": study.pk, "instances": 1})
    assert posted.status_code == 400 and not JudgeRun.objects.exists()
    # A member can.
    assert "SECRET-STUDY-NAME" in client_for(researcher).get("/judging/runs/new/").content.decode()
    assert api(researcher).post("/api/v1/judge-runs/", _run_payload(setting, study.pk), format="json").status_code == 201


def _run(setting, creator, *, from_study: bool):  # type: ignore[no-untyped-def]
    selection = {"study_id": setting["study"].pk} if from_study else {"codes": [c.code for c in setting["conversations"]]}
    return judge_run_create(judges=[setting["judge"]], conversation_ids=[c.pk for c in setting["conversations"]],
                            selection=selection, created_by=creator, start=False)


def test_only_its_creator_its_studys_members_and_admins_act_on_a_run(setting, researcher, admin_user, coordinator):
    other = setting["other"]
    run = _run(setting, other, from_study=False)
    # Another researcher reads it, but may not cancel it (API and page).
    assert api(researcher).get(f"/api/v1/judge-runs/{run.pk}/").status_code == 200
    assert api(researcher).post(f"/api/v1/judge-runs/{run.pk}/cancel/").status_code == 403
    assert client_for(researcher).post(f"/judging/runs/{run.pk}/cancel/").status_code == 403
    assert "Cancel run" not in client_for(researcher).get(f"/judging/runs/{run.pk}/").content.decode()
    run.refresh_from_db()
    assert not run.is_finished
    assert "Cancel run" in client_for(other).get(f"/judging/runs/{run.pk}/").content.decode()
    assert api(other).post(f"/api/v1/judge-runs/{run.pk}/cancel/").status_code == 200
    # Retry of a finished run: the same rule.
    JudgeRun.objects.filter(pk=run.pk).update(status=RunStatus.PARTIAL)
    assert api(researcher).post(f"/api/v1/judge-runs/{run.pk}/retry/").status_code == 403
    assert client_for(researcher).post(f"/judging/runs/{run.pk}/retry/").status_code == 403
    assert api(admin_user).post(f"/api/v1/judge-runs/{run.pk}/retry/").status_code in (200, 409)
    # A run chosen from a study: its members act on it too.
    study_run = _run(setting, other, from_study=True)
    assert api(researcher).post(f"/api/v1/judge-runs/{study_run.pk}/cancel/").status_code == 200


def test_only_its_creator_and_admins_act_on_a_batch(setting, researcher, admin_user, fake_llm, monkeypatch):
    from tests.simulation.sim_setup import KEY_ENV, SECRET

    monkeypatch.setenv(KEY_ENV, SECRET)
    other = setting["other"]
    persona_set = builtin_personas_load()
    target = make_target(fake_llm)
    batch = simulation_batch_create(spec=amhart_spec(fake_llm, persona_set, [target], exchanges=1), created_by=other, dispatch=False)
    url = f"/api/v1/simulation-batches/{batch.code}/"
    # Another researcher does not even see it (issue 30: least privilege) until its creator shares it.
    assert api(researcher).get(url).status_code == 404
    SimulationBatch.objects.filter(pk=batch.pk).update(shared=True)
    assert api(researcher).get(url).status_code == 200
    assert api(researcher).post(url + "cancel/").status_code == 403
    assert client_for(researcher).post(f"/corpus/simulations/{batch.code}/cancel/").status_code == 403
    assert "Cancel the batch" not in client_for(researcher).get(f"/corpus/simulations/{batch.code}/").content.decode()
    batch.refresh_from_db()
    assert batch.status == SimulationBatch.Status.RUNNING
    assert api(other).post(url + "cancel/").status_code == 200
    assert api(researcher).post(url + "resume/", {}, format="json").status_code == 403
    assert client_for(researcher).post(f"/corpus/simulations/{batch.code}/resume/").status_code == 403
    batch.refresh_from_db()
    assert batch.status == SimulationBatch.Status.CANCELLED
    assert api(admin_user).post(url + "resume/", {}, format="json").status_code == 200


def test_the_api_root_needs_a_role_that_uses_the_api(outsider, clinician, researcher):
    assert client_for(outsider).get("/api/v1/").status_code == 403
    assert client_for(clinician).get("/api/v1/").status_code == 403
    assert client_for(researcher).get("/api/v1/").status_code == 200


def test_no_api_answers_a_user_without_a_role(outsider):
    from evalsite.urls import router

    listed = [f"/api/v1/{prefix}/" for prefix, _, _ in router.registry]
    pages = crawl(client_for(outsider), listed + [u for u in parameterless_urls() if u.startswith("/api/")])
    answered = [(url, status) for url, status, _ in pages if status < 300]
    assert answered == []
    assert len(pages) >= 19


def test_api_tokens_only_for_the_roles_the_tokens_page_serves(clinician, outsider, researcher):
    for user in (clinician, outsider):
        assert client_for(user).get("/accounts/api-tokens/").status_code == 404
        with pytest.raises(CommandError, match="no role that uses the API"):
            call_command("api_token", user.username)
        assert not AuthToken.objects.filter(user=user).exists()
    call_command("api_token", researcher.username)
    assert AuthToken.objects.filter(user=researcher).count() == 1


def test_a_token_whose_user_has_no_api_role_does_not_open_the_api(clinician, researcher):
    _, token = AuthToken.objects.create(user=clinician)  # made behind the page's back (the admin, an old one)
    client = APIClient()
    assert client.get("/api/v1/my/assignments/", HTTP_AUTHORIZATION=f"Token {token}").status_code in (401, 403)
    _, token = AuthToken.objects.create(user=researcher)
    assert client.get("/api/v1/instruments/", HTTP_AUTHORIZATION=f"Token {token}").status_code == 200
    researcher.groups.clear()  # the role taken away: the token stops working at once
    assert client.get("/api/v1/instruments/", HTTP_AUTHORIZATION=f"Token {token}").status_code in (401, 403)
