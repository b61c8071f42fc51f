"""The software a report was computed with: names and versions, read when the report is computed."""

from __future__ import annotations

import platform
from importlib import metadata

# Distribution name -> how a methods section names it. The order is the order of the sentence.
PACKAGES = (
    ("evalsite", "evalsite"),
    ("numpy", "NumPy"),
    ("scipy", "SciPy"),
    ("pandas", "pandas"),
    ("statsmodels", "statsmodels"),
    ("krippendorff", "krippendorff"),
)
NOT_INSTALLED = "not installed"


def _version(distribution: str) -> str:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return NOT_INSTALLED


def software_versions() -> dict[str, str]:
    """Return {"python": "3.11.9", "evalsite": "0.1.0", "numpy": ..., ...} for this process."""
    return {"python": platform.python_version(), **{dist: _version(dist) for dist, _ in PACKAGES}}


def software_sentence(versions: dict[str, str]) -> str:
    """Return "Computed with evalsite 0.1.0 (Python 3.11.9; NumPy 1.26.4, ...)." from recorded versions."""
    libraries = [f"{name} {versions[dist]}" for dist, name in PACKAGES[1:] if versions.get(dist, NOT_INSTALLED) != NOT_INSTALLED]
    return (f"Computed with evalsite {versions.get('evalsite', NOT_INSTALLED)} (Python {versions.get('python', '?')}; "
            f"{', '.join(libraries)}).")
