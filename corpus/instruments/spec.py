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
from corpus.instruments.flow import LABELS as FLOW_LABELS
from corpus.instruments.flow import NOT_RELEVANT as FLOW_NOT_RELEVANT
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
    # The answers that mean "not applicable" instrument-wide (flows: dimension labels); empty:
    # the kind's default (flows: Not Relevant; checklists: each item's own scale).
    na_labels: tuple[str, ...] = ()

    def effective_na_labels(self) -> list[str]:
        """Return the declared N/A labels, or the kind's default (flows: ["Not Relevant"])."""
        if self.na_labels:
            return list(self.na_labels)
        return [FLOW_NOT_RELEVANT] if self.kind == "flow" else []

    def hash_payload(self) -> dict[str, Any]:
        payload = {
            "key": self.key,
            "name": self.name,
            "kind": self.kind,
            "description": self.description,
            "source": self.source,
            "items": list(self.items),
            "flow": self.flow,
        }
        # Only a declaration that differs from the default enters the hash, so instruments
        # imported before N/A labels were declarable keep their identity (no new version).
        default = [FLOW_NOT_RELEVANT] if self.kind == "flow" else []
        if self.effective_na_labels() != default:
            payload["na_labels"] = self.effective_na_labels()
        return payload


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
    na_labels = tuple(_label_list(doc, data, [], problems))
    if kind == "flow":
        for index, label in enumerate(na_labels):
            if label not in FLOW_LABELS:
                problems.append(doc.problem(["na_labels", index], f"'{label}' is not a dimension label; expected one of {', '.join(FLOW_LABELS)}"))

    if kind == "flow":
        flow = _parse_flow(doc, data, problems)
        if problems:
            raise ImportRejected(problems)
        assert flow is not None
        return InstrumentSpec(key, name, kind, description, source, (), flow.to_dict(), na_labels=na_labels)

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
    for index, label in enumerate(na_labels):
        if not any(_folds_into(label, _item_labels(i)) for i in items):
            problems.append(doc.problem(["na_labels", index], f"'{label}' is not an answer of any item"))
    if problems:
        raise ImportRejected(problems)
    return InstrumentSpec(key, name, kind, description, source, tuple(items), na_labels=na_labels)


def _label_list(doc: Document, data: dict, path: list, problems: list[Problem]) -> list[str]:
    """Return the optional ``na_labels`` list of texts at ``path``."""
    raw = data.get("na_labels")
    if raw is None:
        return []
    if not isinstance(raw, list) or not all(isinstance(x, str | int | float) and str(x).strip() for x in raw):
        problems.append(doc.problem([*path, "na_labels"], "'na_labels' must be a list of answers (texts)"))
        return []
    return list(dict.fromkeys(str(x).strip() for x in raw))


def _item_labels(item: dict[str, Any]) -> list[str]:
    scale = item.get("scale")
    if scale == "yes_no_na":
        return ["yes", "no", "N/A"] if item.get("na_allowed") else ["yes", "no"]
    if scale in ("yes_no", "boolean"):
        return ["yes", "no"]
    if scale == "ordinal_1_5":
        return ["1", "2", "3", "4", "5"]
    return list(item.get("categories") or [])


def _folds_into(label: str, labels: list[str]) -> bool:
    return label.casefold() in {x.casefold() for x in labels}


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
    declared_na = _label_list(doc, raw, path, problems)
    extra: dict[str, Any] = {}
    if declared_na:
        labels = _item_labels({"scale": scale, "na_allowed": bools["na_allowed"], "categories": categories})
        by_fold = {x.casefold(): x for x in labels}
        for index, label in enumerate(declared_na):
            if label.casefold() not in by_fold:
                allowed = ", ".join(labels) or "(none: free text)"
                problems.append(doc.problem([*path, "na_labels", index], f"'{label}' is not an answer of this item; its answers are {allowed}"))
        # Stored in the item's own spelling; only present when declared, so the content hash of
        # instruments written before this field existed does not change.
        extra["na_labels"] = [by_fold.get(x.casefold(), x) for x in declared_na]
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
        **extra,
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
