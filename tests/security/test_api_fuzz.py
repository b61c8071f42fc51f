"""Issue 30: a schema-driven fuzz test over every API endpoint (Schemathesis on the app's own
OpenAPI schema, in process through the WSGI application): generated bodies, parameters and
queries, valid and malformed, never answer 5xx, and the responses match the schema."""

from __future__ import annotations

import pytest
import schemathesis
from django.core.wsgi import get_wsgi_application
from drf_spectacular.generators import SchemaGenerator
from hypothesis import HealthCheck, Phase
from hypothesis import settings as hypothesis_settings
from schemathesis.checks import not_a_server_error, response_schema_conformance

from core.api_tokens import api_token_create

pytestmark = pytest.mark.django_db

schema = schemathesis.openapi.from_dict(SchemaGenerator().get_schema(request=None, public=True))
schema.app = get_wsgi_application()


@pytest.fixture(params=["researcher", "admin_user"])
def token(request):  # type: ignore[no-untyped-def]
    """A researcher's token (the API's main user) and an administrator's (no 403 stops a request short)."""
    return api_token_create(user=request.getfixturevalue(request.param))[1]


@schema.parametrize()
@hypothesis_settings(max_examples=3, deadline=None, derandomize=True, database=None,
                     suppress_health_check=list(HealthCheck), phases=[Phase.explicit, Phase.generate])
def test_no_api_endpoint_answers_a_server_error(case, token):  # type: ignore[no-untyped-def]
    case.call_and_validate(headers={"Authorization": f"Token {token}"}, checks=[not_a_server_error, response_schema_conformance])
