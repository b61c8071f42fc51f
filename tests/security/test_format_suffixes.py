"""Issue 30, finding 3: every DRF custom action answered 500 with a format suffix
(``/api/v1/conversations/export.json``: ``TypeError: unexpected keyword argument 'format'``),
including POSTs by users who may not act on the object. Suffixes are refused (404) on every API
route; ``?format=json`` and the Accept header still choose the format."""

from __future__ import annotations

import re

import pytest
from rest_framework.test import APIClient

from tests.conftest import client_for
from tests.support.urlconf import raw_patterns

pytestmark = pytest.mark.django_db

GROUP = re.compile(r"\(\?P<[^>]+>[^)]*\)|<(?:int:)?[^>]+>")


def _api_paths() -> list[str]:
    """Return a sample path of every API route (each parameter filled with 1), from the URL conf."""
    paths = set()
    for raw in raw_patterns():
        path = GROUP.sub("1", raw.replace("^", "").replace("$", "")).replace("\\.", ".").replace("/?", "/")
        if path.startswith("api/v1/") and "format" not in raw:
            paths.add("/" + path)
    return sorted(paths)


def test_the_enumeration_finds_the_custom_actions():
    paths = _api_paths()
    assert "/api/v1/conversations/export/" in paths and "/api/v1/judge-runs/1/labels/" in paths
    assert len(paths) > 40


@pytest.mark.parametrize("who", ["researcher", "coordinator", "clinician", "outsider"])
def test_no_api_route_answers_a_format_suffix_with_a_server_error(request, who):  # type: ignore[no-untyped-def]
    user = request.getfixturevalue(who)
    client = APIClient()
    client.force_authenticate(user)
    failures = []
    for path in _api_paths():
        suffixed = path.rstrip("/") + ".json"
        for method in ("get", "post"):
            response = getattr(client, method)(suffixed, {}, format="json")
            if response.status_code >= 500 or response.status_code not in (401, 403, 404, 405):
                failures.append((method, suffixed, response.status_code))
    assert failures == []


def test_the_format_is_still_chosen_by_query_or_accept_header(researcher):
    client = client_for(researcher)
    assert client.get("/api/v1/conversations/?format=json")["Content-Type"].startswith("application/json")
    assert client.get("/api/v1/conversations/", HTTP_ACCEPT="application/json")["Content-Type"].startswith("application/json")
