"""The API reference page: the OpenAPI schema as a plain, accessible page of the site.

Swagger UI (what ``/api/docs/`` served before) nests buttons in buttons, has no ``lang`` and
text below 4.5:1 contrast (axe: three serious rules, issue 19). This page renders the same
schema (drf-spectacular's, so it cannot drift from the API) with the site's own layout: one
disclosure per endpoint, tables for parameters and fields, links from a field's type to its
schema. The machine-readable schema stays at ``/api/schema/`` for tools.

Access as for the schema (``core.permissions.UsesTheApi``): coordinators, researchers and
admins; raters never (it names fields a blind rater must not see).
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from core.roles import API_ROLES, has_any_role

METHODS = ("get", "post", "put", "patch", "delete")
REF = "#/components/schemas/"


@dataclass(frozen=True)
class TypeText:
    """A schema's type in words, with the component schema it names (for a link), if any."""

    text: str
    ref: str = ""


@dataclass(frozen=True)
class Field:
    name: str
    type: TypeText
    required: bool
    notes: str  # read-only, nullable, limits, default
    description: str


@dataclass(frozen=True)
class Body:
    """A request or response body: its media types and schema, or its description."""

    code: str  # the status for a response, "" for a request
    description: str
    media: str
    type: TypeText | None


@dataclass(frozen=True)
class Operation:
    method: str
    path: str
    anchor: str
    summary: str
    description: str
    parameters: list[Field]
    request: Body | None
    responses: list[Body]


@dataclass
class Group:
    name: str
    anchor: str
    operations: list[Operation] = field(default_factory=list)


@dataclass(frozen=True)
class SchemaDoc:
    name: str
    anchor: str
    description: str
    type: TypeText
    fields: list[Field]
    values: list[str]  # an enumeration's values


@dataclass(frozen=True)
class Reference:
    title: str
    version: str
    description: str
    groups: list[Group]
    schemas: list[SchemaDoc]
    auth: list[tuple[str, str]]


def schema_anchor(name: str) -> str:
    return f"schema-{name}"


def type_text(schema: dict[str, Any] | None) -> TypeText:
    """Return a schema's type in words ("array of Conversation", "string (date-time)", "one of a, b")."""
    if not schema:
        return TypeText("any")
    if "$ref" in schema:
        name = schema["$ref"].removeprefix(REF)
        return TypeText(name, name)
    for combiner in ("allOf", "oneOf", "anyOf"):
        if combiner in schema:
            parts = [type_text(s) for s in schema[combiner] if s]
            refs = [p.ref for p in parts if p.ref]
            joined = " or ".join(p.text for p in parts) if combiner != "allOf" else " and ".join(p.text for p in parts)
            return TypeText(joined, refs[0] if len(refs) == 1 else "")
    kind = schema.get("type", "object")
    if kind == "array":
        inner = type_text(schema.get("items"))
        return TypeText(f"array of {inner.text}", inner.ref)
    if "enum" in schema:
        values = ", ".join(str(v) for v in schema["enum"] if v not in ("", None))
        return TypeText(f"{kind}: one of {values}")
    if kind == "object" and isinstance(schema.get("additionalProperties"), dict):
        inner = type_text(schema["additionalProperties"])
        return TypeText(f"object of {inner.text}", inner.ref)
    fmt = schema.get("format")
    return TypeText(f"{kind} ({fmt})" if fmt else str(kind))


def _notes(schema: dict[str, Any]) -> str:
    notes = []
    if schema.get("readOnly"):
        notes.append("read-only")
    if schema.get("writeOnly"):
        notes.append("write-only")
    if schema.get("nullable"):
        notes.append("may be null")
    for key, word in (("minimum", "at least"), ("maximum", "at most"), ("maxLength", "at most {} characters")):
        if key in schema:
            notes.append(word.format(schema[key]) if "{}" in word else f"{word} {schema[key]}")
    if "default" in schema and schema["default"] not in ("", None):
        notes.append(f"default {schema['default']}")
    return ", ".join(notes)


def _fields(schema: dict[str, Any]) -> list[Field]:
    required = set(schema.get("required", []))
    return [
        Field(name, type_text(prop), name in required, _notes(prop), prop.get("description", ""))
        for name, prop in (schema.get("properties") or {}).items()
    ]


def _body(code: str, spec: dict[str, Any]) -> Body:
    content = spec.get("content") or {}
    media = next(iter(content), "")
    schema = content[media].get("schema") if media else None
    return Body(code, spec.get("description", ""), ", ".join(content), type_text(schema) if schema else None)


def _group_name(path: str, tags: list[str]) -> str:
    tag = next((t for t in tags if t != "v1"), "")
    if tag:
        return tag.capitalize()
    segment = path.removeprefix("/api/v1/").split("/", 1)[0]
    return segment.replace("-", " ").capitalize() or "API root"


def reference_from_schema(schema: dict[str, Any]) -> Reference:
    """Turn an OpenAPI 3 schema into the page's groups of operations and its schema tables."""
    groups: OrderedDict[str, Group] = OrderedDict()
    for path, item in sorted(schema.get("paths", {}).items()):
        for method in METHODS:
            spec = item.get(method)
            if spec is None:
                continue
            name = _group_name(path, spec.get("tags", []))
            group = groups.setdefault(name, Group(name, "group-" + name.lower().replace(" ", "-")))
            params = [
                Field(p["name"], type_text(p.get("schema")), bool(p.get("required")), f"in the {p.get('in', 'query')}", p.get("description", ""))
                for p in spec.get("parameters", [])
            ]
            body = spec.get("requestBody")
            group.operations.append(
                Operation(
                    method=method.upper(), path=path, anchor=f"op-{spec.get('operationId', method + path)}",
                    summary=spec.get("summary", ""), description=spec.get("description", ""), parameters=params,
                    request=_body("", body) if body else None,
                    responses=[_body(code, r) for code, r in sorted(spec.get("responses", {}).items())],
                )
            )
    schemas = []
    for name, spec in sorted(schema.get("components", {}).get("schemas", {}).items()):
        values = [str(v) for v in spec.get("enum", []) if v not in ("", None)]
        schemas.append(SchemaDoc(name, schema_anchor(name), spec.get("description", ""), type_text(spec), _fields(spec), values))
    auth = [
        (name, spec.get("description") or f"{spec.get('type', '')} in the {spec.get('in', '')} '{spec.get('name', '')}'")
        for name, spec in schema.get("components", {}).get("securitySchemes", {}).items()
    ]
    info = schema.get("info", {})
    return Reference(info.get("title", "API"), str(info.get("version", "")), info.get("description", ""),
                     list(groups.values()), schemas, auth)


@lru_cache(maxsize=1)
def api_reference() -> Reference:
    """Return the reference of this site's API (built once per process: the schema is fixed by the code)."""
    from drf_spectacular.generators import SchemaGenerator

    return reference_from_schema(SchemaGenerator().get_schema(request=None, public=True))


def api_docs(request: HttpRequest) -> HttpResponse:
    """Show the API reference to the roles that use the API."""
    if not has_any_role(request.user, API_ROLES):
        raise PermissionDenied("the API documentation is for coordinators, researchers and admins")
    return render(request, "core/api_docs.html", {"ref": api_reference()})
