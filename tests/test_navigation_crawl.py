"""Every link a role sees works for that role (issue 28): a crawl of the demo from the home page, as
each role, following same-site links (GET pages only), finds no link answering 403, 404 or 500."""

from __future__ import annotations

import re
from collections import deque
from urllib.parse import urljoin, urlsplit

import pytest
from django.core.management import call_command
from django.test import Client, override_settings

pytestmark = pytest.mark.django_db

HREF = re.compile(r'href="([^"#]+)')
SKIP = re.compile(r"^/(admin/|accounts/logout|static/|api/|media/)|\.(csv|zip|jsonl|json)(\?|$)|/export|/bundle")
LIMIT = 160


PLOTLY = re.compile(r'src="[^"]*vendor/plotly/(plotly-[a-z]+)[^"]*"')


def _crawl(client: Client, start: str = "/") -> tuple[list[tuple[str, int | str, str]], int, int]:
    seen, queue, broken = {start}, deque([(start, "")]), []
    variants: dict[str, int] = {}
    visited = charted = 0
    while queue and visited < LIMIT:
        path, came_from = queue.popleft()
        response = client.get(path)
        visited += 1
        if response.status_code in (403, 404) or response.status_code >= 500:
            broken.append((path, response.status_code, came_from))
            continue
        if response.status_code != 200 or "text/html" not in response.get("Content-Type", ""):
            continue
        html = response.content.decode()
        bundles = PLOTLY.findall(html)
        charted += bool(bundles)
        if len(bundles) > 1:  # one plotly bundle per page (issue 32): the smallest that draws its charts
            broken.append((path, f"loads {len(bundles)} plotly bundles ({', '.join(bundles)})", came_from))
        for href in HREF.findall(html):
            href = href.replace("&amp;", "&")
            url = urlsplit(urljoin(path, href))
            if url.netloc or not url.path.startswith("/") or SKIP.search(url.path):
                continue
            target = url.path + (f"?{url.query}" if url.query else "")
            variants[url.path] = variants.get(url.path, 0) + (target not in seen)
            if target not in seen and variants[url.path] <= 2:  # a page's filters and sorts: two variants are enough
                seen.add(target)
                queue.append((target, path))
    return broken, visited, charted


@override_settings(EVALSITE_PREFLIGHT=False)
@pytest.mark.parametrize("role", ["researcher", "coordinator", "clinician", "admin"])
def test_no_link_a_role_sees_is_a_dead_end_for_that_role(role):
    call_command("seed_demo", "--quiet-logins", "--force")
    from django.contrib.auth import get_user_model

    client = Client()
    client.force_login(get_user_model().objects.get(username=role))
    broken, visited, charted = _crawl(client)
    assert visited > 10
    if role in ("researcher", "admin"):
        assert charted > 3  # the plotly check above saw the report pages
    assert not broken, f"as {role}: " + "; ".join(f"{p} answered {s} (linked from {f})" for p, s, f in broken)
