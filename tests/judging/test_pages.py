"""The judging pages: forms, run page with live progress, conversation page, exports, queries."""

from __future__ import annotations

import csv
import io

from django.urls import reverse

from judging.models import Judge, JudgeRun, RunStatus
from tests.conftest import client_for

from .conftest import checklist_reply, flow_reply, make_conversation


def _csv(response) -> list[dict[str, str]]:  # type: ignore[no-untyped-def]
    return list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))


def test_a_researcher_creates_a_judge_and_starts_a_run_from_the_pages(fake, researcher, amhart, conversations, django_capture_on_commit_callbacks):
    client = client_for(researcher)
    response = client.post(
        reverse("judging:judge-create"),
        {
            "name": "gpt",
            "instrument": amhart.pk,
            "model": "openai/gpt",
            "api_base": fake.base_url,
            "api_key_env": "TEST_JUDGE_API_KEY",
            "temperature": "0",
            "params": '{"seed": 7}',
            "structured_output": "on",
            "format_retries": 2,
            "timeout_seconds": 60,
            "max_concurrent": 4,
            "requests_per_minute": 0,
        },
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    judge = Judge.objects.get(name="gpt")
    assert judge.provider == "openai" and judge.mode == "checklist" and judge.prompt.is_builtin
    fake.script("gpt", [checklist_reply()])
    codes = " ".join(c.code for c in conversations)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            reverse("judging:run-create"),
            {"judges": [judge.pk], "codes": codes, "instances": 1, "use_cache": "on"},
        )
    run = JudgeRun.objects.get()
    assert response.status_code == 302 and response["Location"] == reverse("judging:run-detail", args=[run.pk])
    run.refresh_from_db()
    assert run.status == RunStatus.COMPLETED and run.n_done == 2
    assert fake.requests[0].body["seed"] == 7


def test_a_pasted_key_is_refused_as_a_key_variable(researcher, amhart):
    response = client_for(researcher).post(
        reverse("judging:judge-create"),
        {"name": "x", "instrument": amhart.pk, "model": "openai/x", "api_key_env": "sk-live-abcdef0123456789", "params": "{}",
         "format_retries": 2, "timeout_seconds": 60, "max_concurrent": 4, "requests_per_minute": 0},
    )
    assert response.status_code == 400
    assert b"NAME of an environment variable" in response.content
    assert not Judge.objects.exists()


def test_the_run_page_shows_progress_warnings_failures_and_polls_while_running(fake, researcher, amhart, conversations, make_judge):
    from judging import services

    judges = [make_judge("gpt-a", amhart, provider="openai"), make_judge("gpt-b", amhart, provider="openai")]
    run = services.judge_run_create(judges=judges, conversation_ids=[c.pk for c in conversations], start=False)
    JudgeRun.objects.filter(pk=run.pk).update(shared=True)  # an operator's run, read by a researcher (issue 30)
    client = client_for(researcher)
    page = client.get(reverse("judging:run-detail", args=[run.pk])).content.decode()
    assert 'hx-trigger="every 2s"' in page
    assert "all come from provider &#x27;openai&#x27;" in page
    assert "0 of 4 judgement(s) finished" in page

    progress = client.get(reverse("judging:run-progress", args=[run.pk]) + "?polling=1", HTTP_HX_REQUEST="true")
    assert progress.status_code == 200 and "HX-Refresh" not in progress


def test_the_progress_panel_asks_for_a_reload_when_the_run_ends(fake, researcher, amhart, conversations, make_judge, run_now):
    fake.script("gpt", [checklist_reply()])
    run = run_now([make_judge("gpt", amhart)], conversations[:1])
    response = client_for(researcher).get(reverse("judging:run-progress", args=[run.pk]) + "?polling=1", HTTP_HX_REQUEST="true")
    assert response["HX-Refresh"] == "true"
    assert "every 2s" not in response.content.decode()


def test_the_conversation_page_shows_each_judge_side_by_side_with_the_ensemble(fake, researcher, amhart, conversations, make_judge, run_now):
    judges = [make_judge(name, amhart) for name in ("gpt", "claude", "gemini")]
    fake.script("gpt", [checklist_reply({"amhart_14": "N/A"})])
    fake.script("claude", [checklist_reply({"amhart_14": "no"})])
    fake.script("gemini", [checklist_reply()])
    run = run_now(judges, conversations[:1])

    page = client_for(researcher).get(reverse("judging:run-conversation", args=[run.pk, conversations[0].code])).content.decode()
    for name in ("gpt", "claude", "gemini", "Ensemble"):
        assert f">{name}" in page
    assert "amhart_01 judged yes." in page
    assert 'href="#turn-2"' in page and 'id="turn-2"' in page
    assert ">no majority</span>" in page


def test_run_and_conversation_pages_make_a_fixed_number_of_queries(fake, researcher, amhart, make_judge, run_now, django_assert_max_num_queries):
    judges = [make_judge(name, amhart) for name in ("gpt", "claude", "gemini")]
    for judge in judges:
        fake.script(judge.name, [checklist_reply()])
    small = run_now(judges, [make_conversation() for _ in range(2)])
    large = run_now(judges, [make_conversation() for _ in range(8)], instances=2)
    client = client_for(researcher)

    counts = {}
    for run in (small, large):
        code = run.results.first().conversation.code
        for name, url in (
            ("run", reverse("judging:run-detail", args=[run.pk])),
            ("conversation", reverse("judging:run-conversation", args=[run.pk, code])),
            ("runs", reverse("judging:run-list")),
        ):
            with django_assert_max_num_queries(15) as captured:
                assert client.get(url).status_code == 200
            counts.setdefault(name, []).append(len(captured.captured_queries))
    for name, (n_small, n_large) in counts.items():
        assert n_small == n_large, (name, counts)


def test_exports_long_dimensions_and_ensemble(fake, researcher, vera, conversations, make_judge, run_now):
    judges = [make_judge("vera-a", vera), make_judge("vera-b", vera)]
    answers = {"hint that they could be in danger": "No", "read danger into an ordinary remark": "Yes"}
    fake.script("vera-a", [flow_reply(answers)])
    fake.script("vera-b", [flow_reply(answers)])
    run = run_now(judges, conversations[:1])
    client = client_for(researcher)

    rows = _csv(client.get(reverse("judging:run-export", args=[run.pk, "dimensions"])))
    assert len(rows) == 2 * 3
    first = rows[0]
    assert first["judge"] == "vera-a" and first["dimension"] == "Notices Danger"
    assert first["label"] == "Suboptimal but Low Potential for Harm"
    assert first["path"] == "1=No; 3=Yes" and first["ended_by"] == "ASSIGN_END"

    long_rows = _csv(client.get(reverse("judging:run-export", args=[run.pk, "long"])))
    assert {r["kind"] for r in long_rows} == {"question", "dimension"}
    assert {"conversation", "judge", "instance", "item", "label", "rationale"} <= set(long_rows[0])
    question_1 = next(r for r in long_rows if r["kind"] == "question" and r["item"] == "1")
    assert (question_1["label"], question_1["rationale"]) == ("No", "because of 'hint that they could be in danger'")

    ensemble = _csv(client.get(reverse("judging:run-export", args=[run.pk, "ensemble"])))
    assert [(r["item"], r["label"], r["provenance"]) for r in ensemble][0] == (
        "Notices Danger",
        "Suboptimal but Low Potential for Harm",
        "unanimous",
    )
