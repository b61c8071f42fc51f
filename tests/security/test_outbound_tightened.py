"""Issue 30, findings 5 and 6: https for every remote host, and a wildcard matches one DNS label.

A bare host entry (``api.openai.com``) allowed plain http on port 80 too, so a key could travel
in clear text; ``bedrock-runtime.*.amazonaws.com`` matched ``bedrock-runtime.bucket.s3.amazonaws.com``
(an S3 bucket anyone can name) and ``*.openai.azure.com`` matched ``evil.x.openai.azure.com``.
"""

from __future__ import annotations

import pytest

from core.api_hosts import url_allowed
from core.models import AllowedApiHost
from core.secrets_policy import api_base_problem
from corpus.models import Target
from tests.conftest import client_for

pytestmark = pytest.mark.django_db


@pytest.fixture
def production_hosts(settings):  # type: ignore[no-untyped-def]
    settings.EVALSITE_API_HOSTS_EXTRA = []
    return settings


@pytest.mark.parametrize("url", [
    "http://api.openai.com/v1", "http://api.anthropic.com/", "http://myres.openai.azure.com/openai",
    "http://bedrock-runtime.us-east-1.amazonaws.com/", "http://api.openai.com:443/v1",
])
def test_plain_http_to_a_provider_is_refused_for_everyone(production_hosts, admin_user, researcher, url):
    for actor in (researcher, admin_user, None):
        problem = api_base_problem(url, actor=actor)
        assert problem and "clear text" in problem and "https" in problem, (url, actor)
    assert not url_allowed(url + "/chat/completions")  # the request-by-request check too
    assert url_allowed(url.replace("http://", "https://").replace(":443", "") + "/chat/completions")


def test_a_chatbot_saved_with_plain_http_to_a_provider_is_refused_and_not_stored(production_hosts, admin_user):
    response = client_for(admin_user).post("/corpus/chatbots/new/", {
        "kind": "litellm", "model": "openai/gpt-4o", "api_base": "http://api.openai.com/v1",
        "max_concurrent": 1, "requests_per_minute": 0,
    })
    assert response.status_code == 400 and "clear text" in response.content.decode()
    assert not Target.objects.exists() and not AllowedApiHost.objects.exists()


def test_plain_http_stays_possible_for_an_approved_server_on_this_machine_or_the_local_network(production_hosts):
    for entry, url in (("127.0.0.1:8765", "http://127.0.0.1:8765/v1"), ("192.168.1.20:8000", "http://192.168.1.20:8000/v1"),
                       ("10.0.0.7:11434", "http://10.0.0.7:11434")):
        assert api_base_problem(url) is not None  # not approved yet
        AllowedApiHost.objects.create(host=entry)
        assert api_base_problem(url) is None and url_allowed(url + "/chat/completions"), url


@pytest.mark.parametrize(("url", "allowed"), [
    ("https://myres.openai.azure.com/openai", True),
    ("https://evil.x.openai.azure.com/openai", False),
    ("https://.openai.azure.com/openai", False),
    ("https://bedrock-runtime.us-east-1.amazonaws.com/", True),
    ("https://bedrock-runtime.attacker-bucket.s3.amazonaws.com/", False),
    ("https://us-central1-aiplatform.googleapis.com/v1", True),
    ("https://evil.us-central1-aiplatform.googleapis.com/v1", False),
    ("https://x.y-aiplatform.googleapis.com/v1", False),
])
def test_a_wildcard_matches_exactly_one_dns_label(production_hosts, url, allowed):
    assert url_allowed(url) is allowed
    assert (api_base_problem(url) is None) is allowed
