"""Load a script of bench/ as a module, so a test can run a small version of its check."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

BENCH = Path(__file__).resolve().parents[2] / "bench"


def load_bench(name: str, module_name: str | None = None) -> ModuleType:
    """Import ``bench/<name>.py`` (registered in sys.modules, as its dataclasses need)."""
    spec = importlib.util.spec_from_file_location(module_name or f"{name}_bench", BENCH / f"{name}.py")
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    sys.modules[spec.name] = module  # type: ignore[union-attr]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module
