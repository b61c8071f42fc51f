"""Read what users upload within bounds: nesting depth, YAML alias expansion, CSV field size, JSON values.

The upload limits (``core.uploads``) bound the raw file; these bound what parsing makes of it.
A 501-byte YAML file of nested anchors and aliases expands to tens of millions of values; a
file of 50,000 ``[`` exhausts Python's recursion; a 200,000-character CSV field trips the csv
module's own limit. Each of those is a ``TooComplex`` (a ``ValueError``) with a message a
researcher can act on, which the importers turn into a located ``Problem``: a 400, never a 500.

- ``MAX_DEPTH``: lists and mappings nested at most this deep (JSON and YAML);
- ``MAX_ALIAS_VALUES``: the values YAML aliases may add beyond the document's own (a shared
  block reused a few times is fine; a bomb is not); a recursive alias is refused outright;
- ``MAX_CSV_FIELD``: the longest CSV/TSV field, in characters (the csv module's default);
- values must be storable as JSON: no NaN or infinity (PostgreSQL refuses them), no dates,
  bytes or sets from YAML tags.

Pure Python (PyYAML only): no Django import.
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Iterator
from typing import Any

import yaml

from core.problems import ImportRejected, Problem

MAX_DEPTH = 64
MAX_ALIAS_VALUES = 10_000
MAX_CSV_FIELD = 131_072


class TooComplex(ValueError):
    """A document beyond the parsing bounds; ``line`` is 1-based when known."""

    def __init__(self, message: str, line: int | None = None) -> None:
        super().__init__(message)
        self.line = line


def depth_message() -> str:
    return f"lists and mappings are nested more than {MAX_DEPTH} levels deep, the most a file may hold"


# -- JSON -------------------------------------------------------------------------------------


def _refuse_constant(name: str) -> Any:
    raise TooComplex(f"{name} is not a number a file may hold (write a number or leave the field empty)")


def json_loads(text: str | bytes) -> Any:
    """Parse JSON with the bounds; raise ``json.JSONDecodeError`` or ``TooComplex`` (both ``ValueError``)."""
    try:
        value = json.loads(text, parse_constant=_refuse_constant)
    except RecursionError:
        raise TooComplex(depth_message()) from None
    check_value(value)
    return value


def check_value(value: Any) -> None:
    """Refuse a parsed value nested too deeply or holding something JSON cannot store."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            if depth > MAX_DEPTH:
                raise TooComplex(depth_message())
            for key, child in item.items():
                if not isinstance(key, (str, int, bool)) and key is not None:
                    raise TooComplex(f"a mapping key of type {type(key).__name__} cannot be stored: write keys as text")
                stack.append((child, depth + 1))
        elif isinstance(item, list):
            if depth > MAX_DEPTH:
                raise TooComplex(depth_message())
            stack.extend((child, depth + 1) for child in item)
        elif isinstance(item, float):
            if not math.isfinite(item):
                raise TooComplex("NaN and infinity are not numbers a file may hold")
        elif not (item is None or isinstance(item, (str, int, bool))):
            raise TooComplex(f"a value of type {type(item).__name__} cannot be stored: write it as text")


# -- YAML -------------------------------------------------------------------------------------


class _BoundedLoader(yaml.SafeLoader):
    """SafeLoader that stops composing past ``MAX_DEPTH`` and reads dates as text."""

    # Dates stay text: a persona's "2024-05-01" is stored as written, and JSON holds no dates.
    yaml_implicit_resolvers = {
        first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                mark = self.peek_event().start_mark
                raise TooComplex(depth_message(), mark.line + 1 if mark else None)
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


def _check_aliases(root: yaml.Node) -> None:
    """Refuse a recursive alias, or aliases that add more than ``MAX_ALIAS_VALUES`` values."""
    sizes: dict[int, int] = {}
    on_path: set[int] = set()

    def size(node: yaml.Node) -> int:  # depth is bounded by MAX_DEPTH: recursion is safe
        key = id(node)
        if key in on_path:
            line = node.start_mark.line + 1 if node.start_mark else None
            raise TooComplex("a YAML alias refers to a mapping or list that contains it (a loop): write the values out", line)
        if key in sizes:
            return sizes[key]
        on_path.add(key)
        total = 1
        if isinstance(node, yaml.SequenceNode):
            total += sum(size(child) for child in node.value)
        elif isinstance(node, yaml.MappingNode):
            total += sum(size(k) + size(v) for k, v in node.value)
        on_path.discard(key)
        sizes[key] = total
        return total

    expanded = size(root)
    added = expanded - len(sizes)
    if added > MAX_ALIAS_VALUES:
        raise TooComplex(
            f"YAML anchors and aliases expand this file by {added:,} values, more than the {MAX_ALIAS_VALUES:,} allowed: "
            "write the repeated parts out, or use fewer aliases"
        )


def yaml_compose(text: str) -> tuple[yaml.Node | None, Any]:
    """Return (node tree, data) of one YAML document within the bounds.

    Raises ``yaml.YAMLError`` for text that is not YAML and ``TooComplex`` past a bound.
    """
    loader = _BoundedLoader(text)
    try:
        try:
            root = loader.get_single_node()
        except RecursionError:  # a structure PyYAML recurses on before our depth check sees it
            raise TooComplex(depth_message()) from None
        if root is None:
            return None, None
        _check_aliases(root)
        data = loader.construct_document(root)
    finally:
        loader.dispose()
    check_value(data)
    return root, data


# -- CSV --------------------------------------------------------------------------------------


class BoundedCsv:
    """A ``csv.reader`` or ``csv.DictReader`` whose unreadable line is refused with its line number.

    Iterate it, ``next()`` it, read ``line_num`` and (for a DictReader) ``fieldnames`` as the
    wrapped reader's; a line the csv module cannot read (a field past ``MAX_CSV_FIELD``, a NUL
    character) raises ``ImportRejected`` naming the file and the line instead of ``csv.Error``.
    """

    def __init__(self, reader: Any, file: str) -> None:
        self._reader = reader
        self._file = file

    def _refuse(self, exc: csv.Error) -> ImportRejected:
        # The line being read when it failed: the reader counts only the lines it finished.
        line = int(getattr(self._reader, "line_num", 0) or 0) + 1
        return ImportRejected([Problem(csv_error_message(exc), self._file, line)])

    def __iter__(self) -> Iterator[Any]:
        return self

    def __next__(self) -> Any:
        try:
            return next(self._reader)
        except csv.Error as exc:
            raise self._refuse(exc) from None

    @property
    def line_num(self) -> int:
        return int(self._reader.line_num)

    @property
    def fieldnames(self) -> Any:
        try:
            return self._reader.fieldnames
        except csv.Error as exc:
            raise self._refuse(exc) from None


def csv_error_message(exc: csv.Error) -> str:
    text = str(exc)
    if "field larger than field limit" in text:
        return f"a field is longer than {MAX_CSV_FIELD:,} characters, the most one field may hold"
    if "NUL" in text:
        return "the line holds a NUL character: is this a text file?"
    if "new-line character" in text:
        return "a line break inside a field that is not in quotes: put the field in double quotes"
    return f"the line cannot be read as CSV/TSV ({text})"
