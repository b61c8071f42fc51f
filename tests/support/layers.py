"""The project's layers and a check that imports only go downward (see docs/architecture.md)."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

# Lowest first: a module may import its own layer and the layers before it, never one after.
LAYERS: tuple[str, ...] = ("core", "stats", "corpus", "simulation", "judging", "annotation", "reports")
# The composition root wires the layers together (settings, URLs, WSGI/ASGI, the Celery app).
ROOT_PACKAGE = "evalsite"
SKIP_DIRS = frozenset({"migrations", "__pycache__"})


@dataclass(frozen=True)
class Violation:
    path: str
    line: int
    importer: str
    imported: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.importer} (layer {self.importer.split('.')[0]}) imports {self.imported}"


def _module_name(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imported_modules(tree: ast.AST, module: str, is_package: bool) -> Iterator[tuple[int, str]]:
    package = module if is_package else module.rpartition(".")[0]
    for node in ast.walk(tree):  # every import, also inside functions
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parts = parts[: len(parts) - node.level + 1]
                base = ".".join([*parts, base] if base else parts)
            yield node.lineno, base


def layer_violations(root: Path) -> list[Violation]:
    """Return every import in the layered packages under ``root`` that reaches a higher layer."""
    rank = {name: i for i, name in enumerate(LAYERS)}
    found: list[Violation] = []
    for layer in LAYERS:
        folder = root / layer
        if not folder.is_dir():
            continue
        for path in sorted(folder.rglob("*.py")):
            if SKIP_DIRS & set(path.relative_to(root).parts):
                continue
            module = _module_name(root, path)
            tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
            for line, imported in _imported_modules(tree, module, path.name == "__init__.py"):
                top = imported.split(".")[0]
                if top == ROOT_PACKAGE or (top in rank and rank[top] > rank[layer]):
                    found.append(Violation(str(path.relative_to(root)), line, module, imported))
    return found
