"""Validate the project's own persona-set format (YAML or JSON); see ``docs/formats.md``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from core.problems import ImportRejected, Problem
from core.yamlspec import Document
from corpus.instruments.spec import KEY_RE

RESERVED = {"key", "name", "design", "opening_message"}


@dataclass(frozen=True)
class PersonaSetSpec:
    key: str
    name: str
    description: str
    format: str
    system_prompt: str
    personas: tuple[dict[str, Any], ...]

    def hash_payload(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "name": self.name,
            "description": self.description,
            "format": self.format,
            "system_prompt": self.system_prompt,
            "personas": list(self.personas),
        }


def parse_persona_set_spec(text: str, file: str = "personas.yaml") -> PersonaSetSpec:
    """Parse a persona set document; raise ``ImportRejected`` listing every problem."""
    doc = Document(text, file)
    data = doc.data
    if not isinstance(data, dict):
        raise ImportRejected([Problem("the document must be a mapping with key, name, personas", file, 1)])
    problems: list[Problem] = []
    key = str(data.get("key") or "").strip()
    if not key:
        problems.append(doc.problem(["key"], "'key' is required"))
    elif not KEY_RE.match(key):
        problems.append(doc.problem(["key"], f"key '{key}' may hold only letters, digits, '-', '_', '.'"))
    name = str(data.get("name") or "").strip()
    if not name:
        problems.append(doc.problem(["name"], "'name' is required"))
    fmt = str(data.get("format") or "custom")
    if fmt not in ("amhart", "vera-mh", "custom"):
        problems.append(doc.problem(["format"], f"unknown format '{fmt}'; expected amhart, vera-mh or custom"))
    if key.startswith("amhart") and "format" not in data:
        fmt = "amhart"
    raw = data.get("personas")
    personas: list[dict[str, Any]] = []
    if not isinstance(raw, list) or not raw:
        problems.append(doc.problem(["personas"], "'personas' must be a non-empty list"))
        raise ImportRejected(problems)
    seen: set[str] = set()
    for index, entry in enumerate(raw):
        path: list = ["personas", index]
        if not isinstance(entry, dict):
            problems.append(doc.problem(path, "each persona must be a mapping"))
            continue
        pkey = str(entry.get("key") or "").strip()
        if not pkey:
            problems.append(doc.problem([*path, "key"], "'key' is required"))
        elif pkey in seen:
            problems.append(doc.problem([*path, "key"], f"duplicate persona key '{pkey}'"))
        seen.add(pkey)
        pname = str(entry.get("name") or "").strip()
        if not pname:
            problems.append(doc.problem([*path, "name"], "'name' is required"))
        design = entry.get("design", {}) or {}
        if not isinstance(design, dict):
            problems.append(doc.problem([*path, "design"], "'design' must be a mapping of design labels"))
            design = {}
        opening = entry.get("opening_message", "") or ""
        if not isinstance(opening, str):
            problems.append(doc.problem([*path, "opening_message"], "'opening_message' must be text"))
            opening = ""
        if fmt == "amhart" and not opening.strip():
            problems.append(doc.problem([*path, "opening_message"], "AMHART personas need the fixed opening message"))
        profile = {k: v for k, v in entry.items() if k not in RESERVED}
        personas.append(
            {
                "key": pkey,
                "name": pname,
                "design": {str(k): v for k, v in design.items()},
                "profile": profile,
                "opening_message": opening.strip(),
            }
        )
    if problems:
        raise ImportRejected(problems)
    return PersonaSetSpec(
        key=key,
        name=name,
        description=str(data.get("description") or "").strip(),
        format=fmt,
        system_prompt=str(data.get("system_prompt") or "").strip(),
        personas=tuple(personas),
    )
