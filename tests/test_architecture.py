"""Imports only go downward through the layers: core, stats, corpus, simulation, judging,
annotation, reports (docs/architecture.md)."""

from __future__ import annotations

from pathlib import Path

from tests.support.layers import LAYERS, layer_violations

ROOT = Path(__file__).resolve().parents[1]


def test_every_layer_imports_only_the_layers_below_it() -> None:
    violations = layer_violations(ROOT)
    assert not violations, "\n".join(str(v) for v in violations)


def test_every_layer_is_a_package_of_the_project() -> None:
    assert all((ROOT / layer / "__init__.py").is_file() for layer in LAYERS)


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return tmp_path


def test_the_check_catches_a_lower_layer_importing_a_higher_one(tmp_path: Path) -> None:
    root = _tree(
        tmp_path,
        {
            "corpus/__init__.py": "",
            "corpus/services.py": "def f():\n    from annotation.models import Study\n",
            "annotation/__init__.py": "",
            "annotation/models.py": "from corpus.models import Conversation\n",
        },
    )
    violations = layer_violations(root)
    assert [(v.importer, v.imported, v.line) for v in violations] == [("corpus.services", "annotation.models", 2)]


def test_the_check_catches_relative_imports_and_the_composition_root(tmp_path: Path) -> None:
    root = _tree(
        tmp_path,
        {
            "stats/__init__.py": "from . import data\n",
            "stats/data.py": "",
            "core/__init__.py": "",
            "core/views.py": "import stats\nfrom evalsite.celery import app\n",
        },
    )
    assert sorted(v.imported for v in layer_violations(root)) == ["evalsite.celery", "stats"]


def test_migrations_are_not_checked(tmp_path: Path) -> None:
    root = _tree(tmp_path, {"corpus/__init__.py": "", "corpus/migrations/0001_initial.py": "import annotation\n"})
    assert layer_violations(root) == []
