"""Validate the project's own instrument format (YAML or JSON) into a normalised spec.

The format is documented in ``docs/formats.md``. Pure Python: the service layer turns the
normalised spec into ``Instrument`` and ``Item`` rows.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from core.problems import ImportRejected, Problem
from core.yamlspec import Document
from corpus.instruments.flow import Flow, validate_flow

SCALES = ("yes_no_na", "yes_no", "ordinal_1_5", "categories", "boolean", "text")
KINDS = ("checklist", "section", "flow")
HELP_FIELDS = (
    "counts",
    "counts_rationale",
    "does_not_count",
    "does_not_count_rationale",
    "guidance",
    "source",
)
KEY_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


@dataclass(frozen=True)
class InstrumentSpec:
    key: str
    name: str
    kind: str
    description: str
    source: str
    items: tuple[dict[str, Any], ...]
    flow: dict[str, Any] | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def hash_payload(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "name": self.name,
            "kind": self.kind,
            "description": self.description,
            "source": self.source,
            "items": list(self.items),
            "flow": self.flow,
        }


def _text(doc: Document, data: dict, path: list, name: str, problems: list[Problem], *, required: bool = True) -> str:
    value = data.get(name)
    if value is None or (isinstance(value, str) and not value.strip()):
        if required:
            problems.append(doc.problem([*path, name], f"'{name}' is required"))
        return ""
    if not isinstance(value, str | int | float):
        problems.append(doc.problem([*path, name], f"'{name}' must be text"))
        return ""
    return str(value).strip()


def parse_instrument_spec(text: str, file: str = "instrument.yaml") -> InstrumentSpec:
    """Parse and validate an instrument document; raise ``ImportRejected`` listing every problem."""
    doc = Document(text, file)
    data = doc.data
    if not isinstance(data, dict):
        raise ImportRejected([Problem("the document must be a mapping with key, name, kind, items", file, 1)])
    problems: list[Problem] = []
    key = _text(doc, data, [], "key", problems)
    if key and not KEY_RE.match(key):
        problems.append(doc.problem(["key"], f"key '{key}' may hold only letters, digits, '-', '_', '.'"))
    name = _text(doc, data, [], "name", problems)
    kind = _text(doc, data, [], "kind", problems)
    if kind and kind not in KINDS:
        problems.append(doc.problem(["kind"], f"unknown kind '{kind}'; expected one of {', '.join(KINDS)}"))
    description = _text(doc, data, [], "description", problems, required=False)
    source = _text(doc, data, [], "source", problems, required=False)

    if kind == "flow":
        flow = _parse_flow(doc, data, problems)
        if problems:
            raise ImportRejected(problems)
        assert flow is not None
        return InstrumentSpec(key, name, kind, description, source, (), flow.to_dict())

    raw_items = data.get("items")
    if not isinstance(raw_items, list) or not raw_items:
        problems.append(doc.problem(["items"], "'items' must be a non-empty list"))
        raise ImportRejected(problems)
    items: list[dict[str, Any]] = []
    seen: dict[str, int] = {}
    for index, raw in enumerate(raw_items):
        path: list = ["items", index]
        if not isinstance(raw, dict):
            problems.append(doc.problem(path, "each item must be a mapping"))
            continue
        item = _parse_item(doc, raw, path, problems)
        if item["key"]:
            if item["key"] in seen:
                problems.append(
                    doc.problem([*path, "key"], f"duplicate item key '{item['key']}' (first at item {seen[item['key']] + 1})")
                )
            else:
                seen[item["key"]] = index
        items.append(item)
    if problems:
        raise ImportRejected(problems)
    return InstrumentSpec(key, name, kind, description, source, tuple(items))


def _parse_item(doc: Document, raw: dict, path: list, problems: list[Problem]) -> dict[str, Any]:
    key = _text(doc, raw, path, "key", problems)
    if key and not KEY_RE.match(key):
        problems.append(doc.problem([*path, "key"], f"item key '{key}' may hold only letters, digits, '-', '_', '.'"))
    text = _text(doc, raw, path, "text", problems)
    scale = _text(doc, raw, path, "scale", problems)
    if scale and scale not in SCALES:
        problems.append(doc.problem([*path, "scale"], f"unknown scale '{scale}'; expected one of {', '.join(SCALES)}"))
    categories: list[str] = []
    raw_categories = raw.get("categories")
    if scale == "categories":
        if not isinstance(raw_categories, list) or not raw_categories:
            problems.append(doc.problem([*path, "categories"], "scale 'categories' needs a non-empty 'categories' list"))
        else:
            categories = [str(c) for c in raw_categories]
            if len(set(categories)) != len(categories):
                problems.append(doc.problem([*path, "categories"], "categories must be unique"))
    elif raw_categories not in (None, []):
        problems.append(doc.problem([*path, "categories"], f"'categories' only applies to scale 'categories', not '{scale}'"))
    bools: dict[str, bool] = {}
    for flag, default in (("na_allowed", False), ("required", scale != "text")):
        value = raw.get(flag, default)
        if not isinstance(value, bool):
            problems.append(doc.problem([*path, flag], f"'{flag}' must be true or false"))
            value = default
        bools[flag] = value
    if bools["na_allowed"] and scale != "yes_no_na":
        problems.append(doc.problem([*path, "na_allowed"], "'na_allowed' only applies to scale 'yes_no_na'"))
    help_raw = raw.get("help", {}) or {}
    help_clean: dict[str, str] = {}
    if not isinstance(help_raw, dict):
        problems.append(doc.problem([*path, "help"], "'help' must be a mapping"))
    else:
        for hkey, hvalue in help_raw.items():
            if hkey not in HELP_FIELDS:
                problems.append(doc.problem([*path, "help", hkey], f"unknown help field '{hkey}'; expected {', '.join(HELP_FIELDS)}"))
            elif not isinstance(hvalue, str):
                problems.append(doc.problem([*path, "help", hkey], "help fields must be text"))
            else:
                help_clean[hkey] = hvalue.strip()
    labels_raw = raw.get("scale_labels", {}) or {}
    scale_labels: dict[str, str] = {}
    if not isinstance(labels_raw, dict):
        problems.append(doc.problem([*path, "scale_labels"], "'scale_labels' must be a mapping"))
    else:
        scale_labels = {str(k): str(v) for k, v in labels_raw.items()}
    number = raw.get("number", "")
    return {
        "key": key,
        "number": "" if number is None else str(number),
        "domain": str(raw.get("domain") or "").strip(),
        "text": text,
        "scale": scale,
        "categories": categories,
        "scale_labels": scale_labels,
        "na_allowed": bools["na_allowed"],
        "required": bools["required"],
        "applicability": str(raw.get("applicability") or "").strip(),
        "help": help_clean,
    }


def _parse_flow(doc: Document, data: dict, problems: list[Problem]) -> Flow | None:
    raw = data.get("flow")
    if not isinstance(raw, dict):
        problems.append(doc.problem(["flow"], "kind 'flow' needs a 'flow' mapping with 'questions'"))
        return None
    try:
        flow = Flow.from_dict(raw)
    except (KeyError, TypeError, ValueError) as exc:
        problems.append(doc.problem(["flow"], f"flow is malformed: {exc}"))
        return None
    problems.extend(validate_flow(flow, file=doc.file))
    return flow
