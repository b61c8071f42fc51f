"""Installing the project: an editable install is a plain path entry, with no setuptools warning."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_an_editable_install_warns_about_nothing(tmp_path):
    setuptools = pytest.importorskip("setuptools")
    if tuple(int(p) for p in setuptools.__version__.split(".")[:2]) < (68, 0):
        pytest.skip("the build backend pyproject.toml names (setuptools>=68) is not installed: make install-dev")
    project = tmp_path / "project"
    project.mkdir()
    shutil.copy(ROOT / "pyproject.toml", project)
    patterns = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]["find"]["include"]
    for name in (p.rstrip("*") for p in patterns):
        (project / name).mkdir()
        (project / name / "__init__.py").write_text("")
    (project / "tests").mkdir()  # a folder the checkout has beside the packages
    out = tmp_path / "dist"
    done = subprocess.run(
        [sys.executable, "-W", "always", "-c", f"import setuptools.build_meta as b; print(b.build_editable({str(out)!r}))"],
        cwd=project, capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    said = done.stdout + done.stderr
    assert "same name as your package" not in said and "meta path finder" not in said, said[-2000:]
