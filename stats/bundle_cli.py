"""``python -m stats bundle BUNDLE.zip``: a publication bundle's reliability figures from its files alone.

Reads the bundle (the zip, or the folder it was unpacked to), checks every file against the
SHA-256 its ``manifest.json`` lists, then runs, for each label set the manifest's
``reliability`` list names, the exact ``python -m stats agreement`` command the app wrote for
it on the bundle's ratings file (``reliability_ratings*.csv``): the same resamples, seed, N/A
policy, scale and order as the reliability page, so it prints the page's figures. No database,
no Django. Exit status 2 with ``error: FILE: ...`` on a changed or missing file.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import shlex
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Any

from .agreement_cli import run_argv

MANIFEST = "manifest.json"
PREFIX = ("python", "-m", "stats", "agreement")


class BundleError(Exception):
    """A bundle that cannot be read or whose files do not match its manifest."""


def add_parser(sub: Any) -> None:
    """Register the ``bundle`` subcommand on the ``python -m stats`` parser."""
    parser = sub.add_parser("bundle", help="reliability figures of a publication bundle, from its files alone")
    parser.add_argument("bundle", help="the bundle's zip, or the folder it was unpacked to")
    parser.add_argument("--json", action="store_true", help="print JSON: each label set's report, keyed by its ratings file")
    parser.set_defaults(run=main)


def read_bundle(path: str | Path) -> dict[str, bytes]:
    """Return the bundle's files by their path inside it; raise BundleError when it cannot be read."""
    path = Path(path)
    if path.is_dir():
        return {str(p.relative_to(path)).replace("\\", "/"): p.read_bytes() for p in path.rglob("*") if p.is_file()}
    try:
        with zipfile.ZipFile(path) as archive:
            return {name: archive.read(name) for name in archive.namelist() if not name.endswith("/")}
    except FileNotFoundError:
        raise BundleError(f"{path}: file not found") from None
    except zipfile.BadZipFile:
        raise BundleError(f"{path}: not a zip archive (nor a folder)") from None


def verified_manifest(files: dict[str, bytes]) -> dict[str, Any]:
    """Return the manifest once every file it lists has its SHA-256; raise BundleError naming the first that does not."""
    if MANIFEST not in files:
        raise BundleError(f"{MANIFEST}: missing: not a publication bundle")
    try:
        manifest = json.loads(files[MANIFEST])
    except json.JSONDecodeError as exc:
        raise BundleError(f"{MANIFEST}: not valid JSON ({exc.msg})") from None
    except RecursionError:
        raise BundleError(f"{MANIFEST}: nested too deeply to be a bundle's manifest") from None
    if not isinstance(manifest, dict) or not isinstance(manifest.get("files") or [], list) or not all(
        isinstance(entry, dict) for entry in manifest.get("files") or []
    ):
        raise BundleError(f"{MANIFEST}: not the manifest of a publication bundle (an object with a list of files)")
    for entry in manifest.get("files") or []:
        name = entry.get("path")
        if name not in files:
            raise BundleError(f"{name}: listed in the manifest but missing from the bundle")
        if hashlib.sha256(files[name]).hexdigest() != entry.get("sha256"):
            raise BundleError(f"{name}: its SHA-256 differs from the manifest's: the file was changed after the bundle was made")
    return manifest


def commands(manifest: dict[str, Any]) -> list[tuple[str, list[str]]]:
    """Return (ratings file, the agreement command's options) for each label set of the manifest."""
    out = []
    for entry in manifest.get("reliability") or []:
        words = shlex.split(entry["command"])
        if tuple(words[:4]) != PREFIX or len(words) < 5 or words[4] != entry["file"]:
            raise BundleError(f"{MANIFEST}: unexpected reliability command {entry['command']!r}")
        out.append((entry["file"], words[5:]))
    return out


def main(args: Any) -> int:
    """Run ``python -m stats bundle``; return the exit status (0 ok, 2 bad input or a failed command)."""
    try:
        files = read_bundle(args.bundle)
        manifest = verified_manifest(files)
        runs = commands(manifest)
    except BundleError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if not runs:
        print("error: the bundle's manifest lists no reliability ratings (no label set had ratings)", file=sys.stderr)
        return 2
    reports: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as folder:
        for name, options in runs:
            target = Path(folder) / name
            target.write_bytes(files[name])
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                status = run_argv([str(target), *options, *(["--json"] if args.json else [])])
            if status:
                return status
            if args.json:
                reports[name] = json.loads(out.getvalue())
            else:
                sys.stdout.write(out.getvalue().replace(str(target), name) + "\n")
    if args.json:
        sys.stdout.write(json.dumps({"bundle": str(args.bundle), "app_version": manifest.get("app_version"),
                                     "reports": reports}, indent=2, allow_nan=False) + "\n")
    return 0
