"""``python -m stats`` without a circle (issue 31): the subcommands import their readers from
``stats.cli_input`` and never ``stats.cli``, which only assembles them, each registered one way."""

from __future__ import annotations

import ast
from pathlib import Path

import stats
from stats import agreement_cli, alt_test_cli, bundle_cli
from stats.cli import SUBCOMMANDS, build_parser

STATS = Path(stats.__file__).resolve().parent


def _module(path: Path) -> str:
    parts = ["stats", *path.relative_to(STATS).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path, known: set[str]) -> set[str]:
    """Return the stats modules ``path`` imports (at the top or inside a function)."""
    module = _module(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, base] if base else parts)
            names = [base, *(f"{base}.{alias.name}" for alias in node.names)]
        for name in names:
            while name and name not in known:
                name = name.rpartition(".")[0]
            if name and name != module:
                found.add(name)
    return found


def _graph() -> dict[str, set[str]]:
    paths = sorted(STATS.rglob("*.py"))
    known = {_module(p) for p in paths}
    return {_module(p): _imports(p, known) for p in paths}


def _loops(graph: dict[str, set[str]]) -> list[set[str]]:
    """Return the strongly connected groups of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    loops: list[set[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = set()
            while True:
                w = stack.pop()
                group.add(w)
                if w == v:
                    break
            if len(group) > 1:
                loops.append(group)

    for v in graph:
        if v not in index:
            visit(v)
    return loops


def test_the_stats_package_has_no_import_loop() -> None:
    assert _loops(_graph()) == []


def test_no_subcommand_imports_the_module_that_assembles_them() -> None:
    graph = _graph()
    assert [m for m, imported in graph.items() if "stats.cli" in imported and m != "stats.__main__"] == []


def test_the_loop_check_finds_a_loop() -> None:
    assert _loops({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [{"a", "b", "c"}]


def test_every_subcommand_is_registered_by_its_module_and_runs_its_main() -> None:
    sub = next(a for a in build_parser()._actions if a.dest == "command")
    runs = {name: parser.get_default("run") for name, parser in sub.choices.items()}
    assert runs == {"agreement": agreement_cli.main, "alt-test": alt_test_cli.main, "bundle": bundle_cli.main}
    assert SUBCOMMANDS == (agreement_cli, alt_test_cli, bundle_cli)
