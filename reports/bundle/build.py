"""The publication bundle built by a worker, never in a request, and kept as a file until the study's data change.

The bundle is a job of ``reports.jobs`` (kind ``bundle``, one per study): its data version is
the fingerprint of everything the bundle holds (``reports.bundle.version``), its computation
builds the zip (``reports.bundle.export.study_bundle_zip``) in stages (figures, charts, zip)
and stores it under ``EVALSITE_BUNDLE_DIR`` as ``study-ID-VERSION.zip``, keeping only the newest
file of each study. The claim, the progress the page polls, a worker that dies mid-build (the
sweeper sends the job again) and the retry after a failure are those of every report.

:func:`study_bundle_get` is what the page and the API ask: the job's pending state while a
worker builds it, or the stored file once it exists at the current data version, never "ready"
before the file is there.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import tempfile
import threading
import zipfile
from pathlib import Path
from typing import Any, BinaryIO

from django.conf import settings
from django.utils import timezone

import reports.bundle.layout as layout
from annotation.models import Study
from reports import jobs
from reports.bundle.export import study_bundle_zip
from reports.bundle.figures import study_figures
from reports.bundle.progress import listening
from reports.bundle.version import bundle_fingerprint

KIND = "bundle"
# Where each stage starts on the progress bar: the figures (every report of the study, computed if cold), the chart
# images (a Chromium drawing each chart) and the archive (codebook, manifest, zip, the file stored).
STAGES = {"figures": 0.02, "charts": 0.5, "zip": 0.9, "stored": 0.97}

# Bundles one worker process builds at once (EVALSITE_BUNDLE_BUILDS, default 1): each holds its zip in memory and
# starts a Chromium, and a worker runs many tasks at once (a thread pool); the others wait their turn.
_BUILDS = threading.BoundedSemaphore(max(1, int(getattr(settings, "EVALSITE_BUNDLE_BUILDS", 1) or 1)))


def bundle_dir() -> Path:
    """Return the folder the built bundles are kept in (made private if missing): web and workers must share it."""
    folder = Path(getattr(settings, "EVALSITE_BUNDLE_DIR", "") or Path(settings.VAR_DIR) / "bundles")
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    return folder


def bundle_file(study_id: int, version: str) -> Path:
    """Return the path of a study's bundle built at ``version`` (it may not exist)."""
    if not version.isalnum():
        raise ValueError(f"not a bundle version: {version!r}")
    return bundle_dir() / f"study-{study_id}-{version}.zip"


def _params(study_id: int) -> dict[str, Any]:
    return {"study": study_id}


def _version(params: dict[str, Any]) -> str:
    return bundle_fingerprint(Study.objects.select_related("instrument", "section").get(pk=params["study"]))


def _store(study_id: int, version: str, data: bytes) -> Path:
    """Write the bundle whole under a temporary name, then give it its name: a reader never sees half a file."""
    target = bundle_file(study_id, version)
    fd, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".study-{study_id}-", suffix=".part")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return target


def _prune(study_id: int, keep: Path) -> None:
    """Delete the study's other bundles: older data versions are never served again."""
    for path in keep.parent.glob(f"study-{study_id}-*.zip"):
        if path != keep:
            path.unlink(missing_ok=True)


def _build(params: dict[str, Any], progress: jobs.Progress) -> dict[str, Any]:
    """Build the study's bundle in stages, store it and return what the page says of it (the job's payload)."""
    study = Study.objects.select_related("instrument", "section").get(pk=params["study"])
    version = jobs.data_version(KIND, params)

    def stage(name: str, detail: str) -> None:
        progress(STAGES[name], f"{name}: {detail}")

    stage("figures", "computing every report of the study")
    study_figures(study)  # each report cached at the current data: the export reads them back
    if not _BUILDS.acquire(blocking=False):
        stage("figures", "waiting for another bundle this worker is building")
        _BUILDS.acquire()
    try:
        stage("charts", "building the charts and the tables")
        with listening(stage):
            data = study_bundle_zip(study=study)
    finally:
        _BUILDS.release()
    stage("stored", "storing the file")
    path = _store(study.pk, version, data)
    if jobs.data_version(KIND, params) == version:
        _prune(study.pk, path)
    else:  # the data changed while it was built: this file is already stale; the next ask builds again
        path.unlink(missing_ok=True)
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        manifest = json.loads(archive.read(layout.MANIFEST))
        n_files = len(archive.namelist())
    images = manifest.get("static_images") or {}
    return {
        "study": study.pk, "version": version, "file": path.name, "bytes": len(data),
        "sha256": hashlib.sha256(data).hexdigest(), "files": n_files, "built_at": timezone.now().isoformat(),
        "chart_images": str(images.get("summary", "")).removeprefix("Chart images: "), "n_chart_images": len(images.get("files") or []) // 2,
    }


jobs.register(KIND, version=_version, compute=_build, methods=False)


def study_bundle_get(*, study: Study) -> dict[str, Any]:
    """Return the bundle's pending state (``pending: True``, queued for a worker if cold) or its facts with ``path``.

    Ready only when the file built at the study's current data version is there: a file deleted
    since (by hand, or a newer build's clean-up) makes it built again.
    """
    params = _params(study.pk)
    current = jobs.data_version(KIND, params)
    for _ in range(2):
        state = jobs.report_get(KIND, params, wait=False, version=current)
        if state.get("pending"):
            return state
        version = str(state.get("version") or "")
        # Built from the data it is asked at (its build started after the last change), and its file is there.
        if version == current and bundle_file(study.pk, version).is_file():
            return {**state, "path": bundle_file(study.pk, version)}
        jobs.report_forget(KIND, params, data_version=current)
    raise RuntimeError(f"the bundle was built but its file is not in {bundle_dir()}: the web server and the workers must "
                       "share that folder (EVALSITE_BUNDLE_DIR)")


def study_bundle_open(*, study: Study) -> tuple[dict[str, Any], BinaryIO | None]:
    """Return the bundle's pending state and None, or its facts and the stored file opened for reading.

    A file replaced by a newer build between the look and the opening is asked for again once.
    """
    for _ in range(2):
        state = study_bundle_get(study=study)
        if state.get("pending"):
            return state, None
        try:
            return state, state["path"].open("rb")
        except FileNotFoundError:
            continue
    return study_bundle_get(study=study), None
