"""Issue 30: the Hypothesis form test over the forms of pages WITH parameters (a study, a run, a batch,
a conversation...), which tests/security/test_form_fuzz.py cannot reach from the URL conf alone.

The demo is seeded, its pages are crawled from the home page as the administrator (every form
shown to some role is shown to them) and as the coordinator, and every POST form found is sent
malformed, deeply nested, oversized and wrongly typed bodies, as the administrator and as an
outsider: never a 5xx, and a refused body (4xx, or the page again with its errors) changes nothing
in the database. Forms that end the session or leave the signed-in world are skipped."""

from __future__ import annotations

import re
from collections import deque
from urllib.parse import urljoin, urlsplit

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.test import Client, override_settings

from tests.conftest import client_for
from tests.security.test_form_fuzz import SKIPPED, _Forms, fuzz_forms

pytestmark = pytest.mark.django_db

HREF = re.compile(r'href="([^"#]+)')
NOT_PAGES = re.compile(r"^/(admin/|accounts/logout|static/|api/|media/)|\.(csv|zip|jsonl|json|png|svg)(\?|$)|/export|/bundle")
LIMIT = 160


def _crawl_forms(client: Client) -> dict[str, set[str]]:
    """Return {form target: its field names} for every POST form on the pages reachable from home."""
    seen, queue, forms = {"/"}, deque(["/"]), {}
    variants: dict[str, int] = {}
    visited = 0
    while queue and visited < LIMIT:
        path = queue.popleft()
        response = client.get(path)
        visited += 1
        if response.status_code != 200 or "text/html" not in response.get("Content-Type", ""):
            continue
        html = response.content.decode("utf-8", "replace")
        parser = _Forms()
        parser.feed(html)
        for action, fields in parser.forms:
            target = urlsplit(urljoin(path, action or path))
            url = target.path + (f"?{target.query}" if target.query else "")
            if not url.startswith(SKIPPED):
                forms.setdefault(url, set()).update(fields)
        for href in HREF.findall(html):
            parts = urlsplit(urljoin(path, href.replace("&amp;", "&")))
            if parts.netloc or not parts.path.startswith("/") or NOT_PAGES.search(parts.path):
                continue
            variants[parts.path] = variants.get(parts.path, 0) + 1
            if parts.path not in seen and variants[parts.path] <= 1:
                seen.add(parts.path)
                queue.append(parts.path)
    return forms


@override_settings(EVALSITE_PREFLIGHT=False)
def test_no_form_of_a_page_with_parameters_answers_a_server_error_or_saves_a_malformed_body(outsider):  # type: ignore[no-untyped-def]
    call_command("seed_demo", "--quiet-logins", "--force")
    users = get_user_model().objects
    found: dict[str, set[str]] = {}
    for role in ("admin", "coordinator"):
        client = Client()
        client.force_login(users.get(username=role))
        for target, fields in _crawl_forms(client).items():
            found.setdefault(target, set()).update(fields)
    forms = sorted((t, sorted(f)) for t, f in found.items() if re.search(r"/\d+/|/[A-Z]+-\d+", t))
    assert len(forms) >= 15, forms  # the enumeration reached the study, run and batch pages
    for who in ("admin", "outsider"):
        fuzz_forms(client_for(outsider if who == "outsider" else users.get(username=who)), forms, examples=1, who=who)

