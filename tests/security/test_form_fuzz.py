"""Issue 30: a Hypothesis test over the app's forms. Every page form reachable from a page without
parameters (found by reading the pages as an administrator, so no form is hidden by a role) gets
malformed, deeply nested, oversized and wrongly typed bodies: never a 5xx, and a refused body
(4xx, or the page again with its errors) changes nothing in the database."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import pytest
from django.apps import apps
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import client_for
from tests.support.urlconf import raw_patterns

pytestmark = pytest.mark.django_db

PARAMETER = re.compile(r"\(\?P<|<")
# Signing out ends the session the next example needs; signing in is not a form of a signed-in user.
SKIPPED = ("/accounts/logout/", "/accounts/login/", "/admin/")
# Tables that change on every request by design (sessions, sign-in and reset attempts counted), not by a form's save.
UNCOUNTED = {"django_session", "core_throttlehit", "axes_accessattempt", "axes_accesslog", "axes_accessfailurelog"}


class _Forms(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.forms: list[tuple[str, list[str]]] = []
        self._fields: list[str] | None = None
        self._action = ""

    def handle_starttag(self, tag, attrs):  # type: ignore[no-untyped-def]
        a = dict(attrs)
        if tag == "form" and (a.get("method") or "").lower() == "post":
            self._fields, self._action = [], a.get("action") or ""
        elif self._fields is not None and tag in ("input", "select", "textarea") and a.get("name"):
            if a["name"] != "csrfmiddlewaretoken":
                self._fields.append(a["name"])

    def handle_endtag(self, tag):  # type: ignore[no-untyped-def]
        if tag == "form" and self._fields is not None:
            self.forms.append((self._action, self._fields))
            self._fields = None


def _pages() -> list[str]:
    pages = set()
    for raw in raw_patterns():
        path = "/" + raw.replace("^", "").replace("$", "")
        if PARAMETER.search(path) or "\\" in path or path.startswith("/api/") or path.startswith(SKIPPED):
            continue
        pages.add(path)
    return sorted(pages)


def _forms(client) -> list[tuple[str, list[str]]]:  # type: ignore[no-untyped-def]
    found: dict[str, set[str]] = {}
    for page in _pages():
        response = client.get(page)
        if response.status_code != 200 or "html" not in response.get("Content-Type", ""):
            continue
        parser = _Forms()
        parser.feed(response.content.decode("utf-8", "replace"))
        for action, fields in parser.forms:
            target = action if action.startswith("/") else page
            if not target.startswith(SKIPPED):
                found.setdefault(target.split("#")[0], set()).update(fields)
    return sorted((target, sorted(fields)) for target, fields in found.items())


def _counts() -> dict[str, int]:
    return {m._meta.db_table: m._default_manager.count() for m in apps.get_models()
            if m._meta.managed and not m._meta.proxy and m._meta.db_table not in UNCOUNTED}


NESTED = st.integers(65, 400).map(lambda n: "[" * n + "]" * n) | st.integers(65, 400).map(lambda n: '{"a":' * n + "1" + "}" * n)
HOSTILE = st.one_of(
    NESTED,
    st.just("x" * 140_000),  # oversized
    st.sampled_from(["", "-1", "0", "1e309", "NaN", "-inf", "99999999999999999999999", "abc", "2026-13-45",
                     "true", "null", "[]", "{}", "\x00", "../../etc/passwd", "=1+1", "<script>", "1; DROP TABLE x"]),
    st.text(max_size=50),
    st.integers(),
)


def _bodies(fields: list[str]):  # type: ignore[no-untyped-def]
    keys = st.sampled_from(fields) | st.text(min_size=1, max_size=12) if fields else st.text(min_size=1, max_size=12)
    values = HOSTILE | st.lists(HOSTILE, min_size=2, max_size=3)  # a field sent several times
    return st.dictionaries(keys, values, min_size=1, max_size=max(2, len(fields) + 1))


def _check(client, target, body, before, failures, content_type=None):  # type: ignore[no-untyped-def]
    kwargs = {"content_type": content_type} if content_type else {}
    response = client.post(target, body, **kwargs)
    status = response.status_code
    if status >= 500:
        failures.append((target, status))
    elif status == 200 or 400 <= status < 500:
        after = _counts()
        changed = {t for t in after if after[t] != before[t]}
        if changed:
            failures.append((target, status, sorted(changed)))


def test_the_enumeration_finds_the_forms(admin_user):
    targets = [t for t, _ in _forms(client_for(admin_user))]
    assert len(targets) >= 10, targets


@pytest.mark.parametrize("who", ["admin_user", "researcher", "outsider"])
def test_no_form_answers_a_server_error_or_saves_a_malformed_body(request, who, admin_user):  # type: ignore[no-untyped-def]
    fuzz_forms(client_for(request.getfixturevalue(who)), _forms(client_for(admin_user)), examples=2)


def fuzz_forms(client, forms: list[tuple[str, list[str]]], *, examples: int, who: str = "") -> None:  # type: ignore[no-untyped-def]
    """Send every form bodies malformed as a whole, then Hypothesis' hostile fields: no 5xx, no change when refused."""
    failures: list[tuple] = []
    # Bodies malformed as a whole: a nested JSON document, bytes that are not UTF-8, a broken multipart.
    for target, _ in forms:
        for raw, kind in (("[" * 5000 + "]" * 5000, "application/json"), (b"\xff\xfe\x00a=\x80", "application/x-www-form-urlencoded"),
                          (b"--x\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\n", "multipart/form-data; boundary=x")):
            _check(client, target, raw, _counts(), failures, content_type=kind)
    assert failures == [], f"as {who}: {failures}"

    @settings(max_examples=examples, deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck))
    @given(data=st.data())
    def run(data):  # type: ignore[no-untyped-def]
        failures: list[tuple] = []
        for target, fields in forms:
            _check(client, target, data.draw(_bodies(fields), label=target), _counts(), failures)
        assert failures == [], f"as {who}: {failures}"

    run()
