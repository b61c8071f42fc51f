"""Read YAML or JSON documents and locate a field's line for precise error reports.

Pure Python (PyYAML only). JSON is valid YAML, so one reader serves both formats. Parsing is
bounded (``core.bounded``): nesting depth, alias expansion, values JSON can store.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any

import yaml

from core.bounded import TooComplex, yaml_compose
from core.problems import ImportRejected, Problem

Path = Sequence[str | int]


class Document:
    """A parsed document plus its node tree, to map a field path to a line number."""

    def __init__(self, text: str, file: str):
        self.file = file
        self.data: Any
        try:
            self.root, self.data = yaml_compose(text)
        except TooComplex as exc:
            raise ImportRejected([Problem(str(exc), file, exc.line)]) from exc
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            line = mark.line + 1 if mark is not None else None
            reason = getattr(exc, "problem", None) or str(exc)
            raise ImportRejected([Problem(f"not valid YAML/JSON: {reason}", file, line)]) from exc

    def line_of(self, path: Path) -> int | None:
        """Return the 1-based line of the node at ``path`` (or its nearest existing parent)."""
        node = self.root
        line = node.start_mark.line + 1 if node is not None else None
        for step in path:
            if node is None:
                break
            child = None
            if isinstance(node, yaml.MappingNode) and isinstance(step, str):
                for key_node, value_node in node.value:
                    if key_node.value == step:
                        child = value_node
                        break
            elif isinstance(node, yaml.SequenceNode) and isinstance(step, int):
                if 0 <= step < len(node.value):
                    child = node.value[step]
            if child is None:
                break
            node = child
            line = node.start_mark.line + 1
        return line

    def problem(self, path: Path, message: str) -> Problem:
        column = ".".join(str(p) for p in path) or None
        return Problem(message, self.file, self.line_of(path), column)


def canonical_hash(data: Any) -> str:
    """Return a sha256 of the canonical JSON form, used to detect identical re-imports."""
    blob = json.dumps(data, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()
