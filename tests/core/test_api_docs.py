"""The API reference page: the OpenAPI schema as an accessible page of the site (issue 19)."""

from __future__ import annotations

import pytest

from core.api_docs import reference_from_schema, type_text
from tests.conftest import client_for

SCHEMA = {
    "info": {"title": "T", "version": "1", "description": "d"},
    "paths": {
        "/api/v1/widgets/{id}/": {
            "get": {"operationId": "v1_widgets_retrieve", "tags": ["v1"],
                    "parameters": [{"name": "id", "in": "path", "required": True, "schema": {"type": "integer"}}],
                    "responses": {"200": {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/Widget"}}},
                                          "description": ""}}},
        },
        "/api/v1/my/assignments/": {"get": {"operationId": "mine", "tags": ["my assignments"], "responses": {}}},
    },
    "components": {"schemas": {
        "Widget": {"type": "object", "required": ["name"], "properties": {
            "name": {"type": "string", "maxLength": 80},
            "parts": {"type": "array", "items": {"$ref": "#/components/schemas/Part"}},
            "kind": {"allOf": [{"$ref": "#/components/schemas/KindEnum"}], "readOnly": True},
            "note": {"type": "string", "nullable": True, "description": "Free text"},
        }},
        "KindEnum": {"enum": ["a", "b", ""], "type": "string"},
    }},
}


def test_types_read_as_words_and_link_to_their_schema() -> None:
    assert type_text({"type": "array", "items": {"$ref": "#/components/schemas/Part"}}).text == "array of Part"
    assert type_text({"type": "array", "items": {"$ref": "#/components/schemas/Part"}}).ref == "Part"
    assert type_text({"type": "string", "format": "date-time"}).text == "string (date-time)"
    assert type_text({"type": "string", "enum": ["x", "y", None]}).text == "string: one of x, y"


def test_the_reference_groups_operations_and_describes_every_field() -> None:
    ref = reference_from_schema(SCHEMA)
    assert [g.name for g in ref.groups] == ["My assignments", "Widgets"]
    op = ref.groups[1].operations[0]
    assert (op.method, op.path, op.anchor) == ("GET", "/api/v1/widgets/{id}/", "op-v1_widgets_retrieve")
    assert op.responses[0].type.ref == "Widget" and op.parameters[0].required
    widget = next(s for s in ref.schemas if s.name == "Widget")
    fields = {f.name: f for f in widget.fields}
    assert fields["name"].required and fields["name"].notes == "at most 80 characters"
    assert fields["kind"].type.ref == "KindEnum" and fields["kind"].notes == "read-only"
    assert fields["note"].notes == "may be null" and fields["note"].description == "Free text"
    assert next(s for s in ref.schemas if s.name == "KindEnum").values == ["a", "b"]


@pytest.mark.django_db
def test_the_api_docs_page_lists_every_endpoint_of_the_real_schema_in_the_sites_layout(researcher):
    client = client_for(researcher)
    body = client.get("/api/docs/").content.decode()
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    assert body.startswith("<!doctype html>") and '<html lang="en">' in body
    missing = [path for path in schema["paths"] if f'<code class="path">{path}</code>' not in body]
    assert not missing, missing
    assert 'id="schema-AnswerRequest"' in body and 'href="#schema-AnswerRequest"' in body
    assert "swagger" not in body.lower() and "cdn" not in body.lower()


@pytest.mark.django_db
def test_the_api_answers_json_even_to_a_browser(researcher):
    # DRF's browsable HTML pages failed axe; the reference page above is the human view.
    response = client_for(researcher).get("/api/v1/", HTTP_ACCEPT="text/html,application/xhtml+xml,*/*;q=0.8")
    assert response.status_code == 200 and response["Content-Type"].startswith("application/json")
