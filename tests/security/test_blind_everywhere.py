"""Finding 4 (blinding): a clinician's home page listed the internal study names.

Two worlds that differ in everything a rater must not learn (the study's internal name, the
chatbot's model and code, the persona's design, a judge run's labels on the conversation) but
share the rater-facing title and the transcript. Each world's rater crawls every page and API
response reachable from the home page by following links; the two crawls must be identical
byte for byte once ids, codes, usernames, tokens and times are taken out, and no secret of
either world may appear anywhere in them.
"""

from __future__ import annotations

import json
import re
from collections import deque
from typing import Any
from urllib.parse import urljoin, urlsplit

import pytest
from django.test import Client

from annotation.models import Assignment
from annotation.studies.services import study_assign, study_create
from corpus.instruments.services import builtin_instruments_load
from corpus.models import Conversation
from tests.conftest import client_for
from tests.factories import ConversationFactory, PersonaFactory, TargetFactory
from tests.support.judged import judged_run, judges_for

pytestmark = pytest.mark.django_db
TITLE = "Teen wellbeing check-in"
TRANSCRIPT = [
    ("user", "Exams start next week and I can't focus. Any tips for studying when I'm stressed?"),
    ("assistant", "That sounds stressful. Try short study blocks with breaks, and sleep well before the exam."),
    ("user", "Thanks, I'll try the short blocks tomorrow."),
    ("assistant", "Good plan. Tell me how it goes!"),
]
WORLDS: dict[str, dict[str, Any]] = {
    "a": {"name": "INTERNAL-A gpt-4o arm, high-risk personas", "model": "openai/gpt-4o-secret-a", "code": "TGT-SECRET-A",
          "design": {"risk": "High-secret", "severity": "severe-secret"}, "judge": "judge-secret-a"},
    "b": {"name": "INTERNAL-B claude arm, no-risk personas", "model": "anthropic/claude-secret-b", "code": "TGT-SECRET-B",
          "design": {"risk": "None-secret", "severity": "mild-secret"}, "judge": None},
}
SECRETS = [value for world in WORLDS.values() for key, value in world.items() if key != "design" and value] + [
    v for world in WORLDS.values() for v in world["design"].values()
] + ["INTERNAL-A", "INTERNAL-B"]
LINK_RE = re.compile(r'(?:href|action|hx-get|hx-post|data-url|data-src)="([^"]+)"')
SKIP = ("/static/", "/accounts/logout/", "/logout/", "mailto:", "javascript:")


def _world(key: str, rater: Any, coordinator: Any) -> tuple[Assignment, Conversation]:
    world = WORLDS[key]
    amhart, section = builtin_instruments_load()
    target = TargetFactory(code=world["code"], name=world["code"], model=world["model"])
    persona = PersonaFactory(key=f"persona-{key}", design=world["design"])
    conversation = ConversationFactory(target=target, persona=persona, messages=TRANSCRIPT, message_count=len(TRANSCRIPT),
                                       metadata={"model": world["model"]})
    study = study_create(
        name=world["name"], rater_title=TITLE, instrument=amhart, section=section, conversation_ids=[conversation.pk],
        created_by=coordinator, coordinators=[coordinator], raters=[(rater, "clinician")], raters_per_conversation=1,
    )
    study_assign(study=study, actor=coordinator, seed=7)
    if world["judge"]:
        judged_run(amhart, judges_for(amhart, [world["judge"]]), [conversation], lambda j, c: {"amhart_01": "yes"},
                   name=f"{world['judge']} run")
    return Assignment.objects.get(study=study, rater=rater), conversation


def _links(url: str, response: Any) -> list[str]:
    content_type = response.get("Content-Type", "")
    body = b"".join(response.streaming_content) if response.streaming else response.content
    text = body.decode("utf-8", "replace")
    if "json" in content_type:
        candidates = re.findall(r'"((?:https?://testserver)?/[^"\s]*)"', text)
    elif "html" in content_type:
        candidates = LINK_RE.findall(text)
    else:
        candidates = []
    out = []
    for link in candidates:
        link = link.replace("&amp;", "&")
        if link.startswith(SKIP) or link.startswith("#"):
            continue
        absolute = urljoin("http://testserver" + url, link)
        parts = urlsplit(absolute)
        if parts.netloc != "testserver" or parts.path.startswith(SKIP):
            continue
        out.append(parts.path + (f"?{parts.query}" if parts.query else ""))
    return out


def crawl(client: Client, starts: list[str], limit: int = 400) -> list[tuple[str, int, str]]:
    """Return (url, status, body) for every page reachable by links from ``starts``, in discovery order."""
    seen: set[str] = set()
    queue = deque(starts)
    pages = []
    while queue and len(pages) < limit:
        url = queue.popleft()
        if url in seen:
            continue
        seen.add(url)
        response = client.get(url)
        body = b"".join(response.streaming_content) if response.streaming else response.content
        pages.append((url, response.status_code, body.decode("utf-8", "replace")))
        if response.status_code == 200:
            response_copy = type("R", (), {"streaming": False, "content": body, "get": response.get})()
            queue.extend(link for link in _links(url, response_copy) if link not in seen)
    assert len(pages) < limit, "the crawl did not end: a link loop with changing URLs?"
    return pages


def parameterless_urls() -> list[str]:
    """Return every URL pattern of the project that takes no argument (each page a link could lead to)."""
    from django.urls import URLPattern, URLResolver, get_resolver

    found: list[str] = []

    def walk(patterns: list[Any], prefix: str) -> None:
        for pattern in patterns:
            route = prefix + str(pattern.pattern)
            if any(ch in route for ch in "<(?[\\$^"):
                continue  # an argument (or a regular expression): reached through links instead
            if isinstance(pattern, URLResolver):
                walk(pattern.url_patterns, route)
            elif isinstance(pattern, URLPattern):
                found.append("/" + route)

    walk(get_resolver().url_patterns, "")
    return sorted(url for url in set(found) if not url.startswith(SKIP))


def _normalise(text: str, assignment: Assignment, conversation: Conversation, username: str) -> str:
    text = text.replace(conversation.code, "CODE").replace(username, "RATER")
    text = re.sub(r"(/ratings/|/my/assignments/|/studies/|study-|#study-)\d+", r"\1ID", text)
    text = re.sub(r'"(id|assignment|study|study_id|conversation)": ?\d+', r'"\1": ID', text)
    text = re.sub(r'name="study" value="\d+"', 'name="study" value="ID"', text)  # the reminders form'
    text = re.sub(r"[A-Za-z0-9]{64}", "TOKEN", text)  # CSRF tokens
    text = re.sub(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)?", "TIME", text)
    return text


def test_every_page_a_rater_can_reach_is_the_same_in_both_worlds(clinician, clinician2, coordinator):
    crawls = {}
    for key, rater in (("a", clinician), ("b", clinician2)):
        assignment, conversation = _world(key, rater, coordinator)
        starts = ["/", "/ratings/", "/api/v1/my/assignments/", f"/api/v1/my/assignments/{assignment.pk}/"]
        pages = crawl(client_for(rater), starts + parameterless_urls())
        crawls[key] = [
            (_normalise(url, assignment, conversation, rater.get_username()), status,
             _normalise(body, assignment, conversation, rater.get_username()))
            for url, status, body in pages
        ]
    a, b = crawls["a"], crawls["b"]
    assert [url for url, _, _ in a] == [url for url, _, _ in b]
    for (url, status_a, body_a), (_, status_b, body_b) in zip(a, b, strict=True):
        assert status_a == status_b, url
        assert body_a == body_b, url
        for secret in SECRETS:
            assert secret not in body_a and secret not in body_b, (url, secret)
    reached = {url for url, status, _ in a if status == 200}
    # The crawl really went through the rater's pages, the home page first.
    assert {"/", "/ratings/", "/ratings/ID/", "/api/v1/my/assignments/", "/api/v1/my/assignments/ID/"} <= reached, sorted(reached)


def test_the_home_page_names_the_study_by_its_rater_facing_title(clinician, coordinator):
    _world("a", clinician, coordinator)
    page = client_for(clinician).get("/").content.decode()
    assert TITLE in page and "INTERNAL-A" not in page


def test_a_study_without_a_rater_title_is_study_and_its_number(clinician, coordinator):
    assignment, _ = _world("a", clinician, coordinator)
    assignment.study.rater_title = ""
    assignment.study.save(update_fields=["rater_title"])
    page = client_for(clinician).get("/").content.decode()
    assert f"Study {assignment.study_id}" in page and "INTERNAL-A" not in page


def test_a_coordinator_still_sees_the_internal_name_of_the_studies_they_manage(clinician, coordinator):
    _world("a", clinician, coordinator)
    page = client_for(coordinator).get("/").content.decode()
    assert "INTERNAL-A gpt-4o arm" in page


def test_the_rater_api_never_names_the_study_internally(clinician, coordinator):
    assignment, _ = _world("a", clinician, coordinator)
    client = client_for(clinician)
    for url in ("/api/v1/my/assignments/", f"/api/v1/my/assignments/{assignment.pk}/"):
        body = json.dumps(client.get(url).json())
        assert "INTERNAL-A" not in body
