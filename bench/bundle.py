"""The publication bundle's round trip: export a study, empty the database, import the bundle, recompute every figure.

Data: the demo (``seed_demo``: 36 conversations rated by three clinicians, two judge runs), or
``--study report`` (``tests.support.report_study``: 150 AMHART conversations, four clinicians,
k=2, a three-judge run), on a fresh SQLite database in a temporary directory. Each round trip:
compute the study's figures (every report, ``reports.bundle.figures``), export the bundle, empty
the database (``flush``), import the bundle, recompute the figures and compare them to 4 decimals.

One ``RESULT`` line per round trip: ``export_s`` (the bundle, figures included), ``import_s``
(checks and rebuild), ``figures_s`` (recomputing every report of the rebuilt study),
``bundle_bytes``, the conversations and ratings carried, ``chart_images`` (charts drawn as PNG
and SVG: the export draws them in a Chromium when there is one, ``reports.bundle.images``; their
time is in ``export_s``) and ``figures_equal`` (1: every figure equal to 4 decimals; 0 with the
differences on stderr).

Run: .venv/bin/python bench/bundle.py [--study demo|report] [--repeat 1]
"""

from __future__ import annotations

import argparse
import io
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
os.environ.update({
    "DJANGO_SETTINGS_MODULE": "evalsite.settings.base",
    "EVALSITE_VAR_DIR": tempfile.mkdtemp(prefix="evalsite-bench-bundle-"),
    "DATABASE_URL": "",
    "EVALSITE_DEBUG": "0",
    "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    "HF_HUB_OFFLINE": "1",
})

import django  # noqa: E402

django.setup()

from celery import current_app  # noqa: E402
from common import result_line  # noqa: E402
from django.core.management import call_command  # noqa: E402


def build(kind: str) -> int:
    """Build the study to round-trip; return its id."""
    from annotation.models import Study

    if kind == "demo":
        from annotation.demo.seed import DEMO_STUDY

        call_command("seed_demo", stdout=io.StringIO())
        return Study.objects.get(name=DEMO_STUDY).pk
    from tests.support.report_study import build_report_study

    return build_report_study().study.pk


def round_trip(kind: str) -> str:
    from annotation.models import Rating, Study
    from reports.bundle.export import study_bundle_zip
    from reports.bundle.figures import figure_differences, study_figures
    from reports.bundle.importer import bundle_import

    call_command("flush", interactive=False)
    study = Study.objects.get(pk=build(kind))
    before = study_figures(study)
    started = time.perf_counter()
    data = study_bundle_zip(study=study)
    export_s = time.perf_counter() - started
    call_command("flush", interactive=False)
    started = time.perf_counter()
    result = bundle_import(data=data, file="bundle.zip")
    import_s = time.perf_counter() - started
    started = time.perf_counter()
    after = study_figures(result.study)
    figures_s = time.perf_counter() - started
    differences = figure_differences(before, after, places=4)
    for line in differences[:20]:
        print(f"differs: {line}", file=sys.stderr)
    return result_line(
        "bundle_roundtrip", study=kind, conversations=result.n_conversations,
        ratings=Rating.objects.filter(assignment__study=result.study).count(), figures=len(before),
        bundle_bytes=len(data), chart_images=len(_manifest(data)["static_images"]["files"]) // 2,
        export_s=export_s, import_s=import_s, figures_s=figures_s,
        figures_equal=int(not differences),
    )


def _manifest(data: bytes) -> dict:
    import json
    import zipfile

    return json.loads(zipfile.ZipFile(io.BytesIO(data)).read("manifest.json"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--study", choices=("demo", "report"), default="demo")
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    current_app.conf.task_always_eager = True  # reports computed in place, as a script asks for them
    call_command("migrate", verbosity=0)
    for _ in range(args.repeat):
        print(round_trip(args.study), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
