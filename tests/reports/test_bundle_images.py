"""Issue 31: the publication bundle carries every chart as PNG and SVG, drawn by plotly's own image export (kaleido
driving the machine's Chromium with the app's plotly.js); without a Chromium it says why, and imports all the same.

Real kaleido, real Chromium: one small study whose bundle is drawn in one browser session, and one tiny figure
drawn alone to watch what the browser loads.
"""

from __future__ import annotations

import hashlib
import io
import json
import re
import struct
import zipfile
from pathlib import Path
from xml.etree import ElementTree

import pytest
from django.core.management import call_command
from django.test import override_settings

import reports.bundle.images as images
import reports.bundle.layout as layout
from annotation.models import Study
from core.problems import ImportRejected
from corpus.models import Conversation
from reports.bundle.export import study_bundle_zip
from reports.bundle.importer import bundle_import
from tests.reports.test_bundle import _stats_bundle
from tests.support.chromium import chromium_or_skip
from tests.support.demo_bundle import rewrite
from tests.support.report_study import build_report_study

pytestmark = pytest.mark.django_db(transaction=True)

MISSING = "/nonexistent/chromium"
TEMPLATES = Path(__file__).resolve().parents[2] / "templates" / "reports"


@pytest.fixture(scope="module")
def bundles(django_db_setup, django_db_blocker):  # type: ignore[no-untyped-def]
    """A small study with a judge run (bar and scatter charts), exported with a Chromium and with a missing one."""
    chromium = chromium_or_skip()
    with django_db_blocker.unblock():
        small = build_report_study(n_conversations=48, n_raters=2, k=2, n_judges=1, prefix="c")  # codes C-0000...: a bundle keeps them
        for conversation in Conversation.objects.all():
            # The built study's transcripts are all alike; an import keeps one conversation per transcript.
            conversation.messages.filter(turn_index=0).update(content=f"I can't sleep ({conversation.code}).")
        with override_settings(EVALSITE_BUNDLE_IMAGES=True, EVALSITE_CHART_BROWSER=chromium):
            drawn = study_bundle_zip(study=small.study)
        with override_settings(EVALSITE_BUNDLE_IMAGES=True, EVALSITE_CHART_BROWSER=MISSING):
            missing = study_bundle_zip(study=small.study)
        call_command("flush", interactive=False)
    return {"drawn": drawn, "missing": missing}


def _files(data: bytes) -> dict[str, bytes]:
    archive = zipfile.ZipFile(io.BytesIO(data))
    return {name: archive.read(name) for name in archive.namelist()}


def _charts(files: dict[str, bytes]) -> dict[str, dict]:
    return {name[len(layout.PLOTLY_DIR):-len(".json")]: json.loads(data) for name, data in files.items()
            if name.startswith(layout.PLOTLY_DIR) and name.endswith(".json")}


def test_each_chart_comes_as_a_png_and_an_svg_with_its_axis_titles(bundles):
    files = _files(bundles["drawn"])
    charts = _charts(files)
    assert "scorecard" in charts and any(name.startswith("judge_assisted_") for name in charts)
    assert {t["type"] for chart in charts.values() for t in chart["traces"]} >= {"bar", "scatter"}
    # One PNG and one SVG per plotly JSON, and nothing else under figures/png/ and figures/svg/.
    assert {n for n in files if n.startswith(layout.PNG_DIR)} == {f"{layout.PNG_DIR}{c}.png" for c in charts}
    assert {n for n in files if n.startswith(layout.SVG_DIR)} == {f"{layout.SVG_DIR}{c}.svg" for c in charts}
    for name, chart in charts.items():
        png = files[f"{layout.PNG_DIR}{name}.png"]
        assert png[:8] == b"\x89PNG\r\n\x1a\n" and png[12:16] == b"IHDR", name
        width, height = struct.unpack(">II", png[16:24])
        assert (width, height) == (2 * chart["layout"]["width"], 2 * chart["layout"]["height"]), name
        assert len(png) > 20_000, name  # a drawn chart at print resolution, not a blank or a stub
        root = ElementTree.fromstring(files[f"{layout.SVG_DIR}{name}.svg"])
        assert root.tag == "{http://www.w3.org/2000/svg}svg", name
        text = " ".join("".join(root.itertext()).split())
        for axis in ("xaxis", "yaxis"):
            title = (chart["layout"][axis].get("title") or {}).get("text")
            if title:
                assert title in text, (name, axis, title)
        # The categories (the estimate plots' rows, the bars' personas) and, with two traces or more, the legend's
        # entries are drawn: the image is the chart, not an empty frame.
        categories = chart["layout"]["yaxis"].get("ticktext") or [x for t in chart["traces"] for x in t["x"] if t["type"] == "bar"]
        legend = [t["name"] for t in chart["traces"] if t.get("showlegend", True) and t.get("x")]
        assert categories and all(str(c) in text for c in categories), name
        assert len(legend) < 2 or all(n in text for n in legend), name


def test_the_manifest_lists_the_images_with_their_checksums_and_how_they_were_made(bundles):
    files = _files(bundles["drawn"])
    manifest = json.loads(files[layout.MANIFEST])
    listed = {entry["path"]: entry for entry in manifest["files"]}
    made = manifest["static_images"]
    image_names = sorted(n for n in files if layout.is_image(n))
    assert sorted(made["files"]) == image_names and made["not_made"] == {}
    for name in image_names:
        assert listed[name]["sha256"] == hashlib.sha256(files[name]).hexdigest() and listed[name]["bytes"] == len(files[name])
    assert re.search(r"plotly\.js 4\.\d+\.\d+ \(plotly-(basic|cartesian)\.min\.js, the app's own copy\)", made["made_with"])
    assert "Chromium" in made["made_with"] and "kaleido 1." in made["made_with"] and made["fetched"] == []
    readme = files["README.txt"].decode()
    assert f"Chart images: each of the {len(_charts(files))} charts of figures/plotly/ as PNG" in readme


def test_a_bundle_with_images_imports_and_a_changed_image_is_refused(bundles, tmp_path):
    data = bundles["drawn"]
    png = f"{layout.PNG_DIR}scorecard.png"
    changed = bytearray(_files(data)[png])
    changed[-20] ^= 0xFF
    with pytest.raises(ImportRejected) as caught:
        bundle_import(data=rewrite(data, {png: bytes(changed)}, fix_manifest=False), file="bundle.zip")
    assert [str(p) for p in caught.value.problems][0].startswith(f"{png}: SHA-256 ")
    assert not Study.objects.exists()
    result = bundle_import(data=data, file="bundle.zip")
    assert result.n_ratings > 0 and Study.objects.count() == 1
    # `python -m stats bundle` (no Django) checks the images' checksums too, and still runs on the bundle.
    path = tmp_path / "bundle.zip"
    path.write_bytes(data)
    assert _stats_bundle(path).returncode == 0
    path.write_bytes(rewrite(data, {png: bytes(changed)}, fix_manifest=False))
    done = _stats_bundle(path)
    assert done.returncode == 2 and done.stderr.startswith(f"error: {png}: its SHA-256 differs")


def test_without_a_chromium_the_bundle_says_why_and_still_imports(bundles):
    files = _files(bundles["missing"])
    charts = _charts(files)
    assert charts and not any(layout.is_image(n) for n in files)
    made = json.loads(files[layout.MANIFEST])["static_images"]
    assert made["files"] == [] and set(made["not_made"]) == {f"{layout.PLOTLY_DIR}{name}.json" for name in charts}
    assert all(f"no Chromium at {MISSING}" in why for why in made["not_made"].values())
    assert f"Chart images: NOT included (no Chromium at {MISSING}" in files["README.txt"].decode()
    assert bundle_import(data=bundles["missing"], file="bundle.zip").n_ratings > 0


def test_the_charts_are_drawn_with_the_apps_plotly_and_nothing_is_fetched():
    """No MathJax, no CDN: the page names local files only, the browser loads only those, and its one proxy refuses all."""
    figure = {"data": [{"type": "bar", "name": "CB-A", "x": ["p1"], "y": [40]}],
              "layout": {"width": 400, "height": 300, "xaxis": {"title": {"text": "Persona"}}}}
    bundle, why = images.plotly_bundle({"c": figure})
    assert bundle == images.VENDOR / "plotly-basic.min.js" and why == ""
    sources = re.findall(r'<script[^>]*\bsrc="([^"]+)"', images.page_html(bundle))
    assert bundle.as_uri() in sources and all(s.startswith("file:///") and Path(s[len("file://"):]).is_file() for s in sources)
    rendered = images.render_figures({"c": figure}, browser=chromium_or_skip(), timeout=60)
    assert set(rendered.images) == {"c"} and rendered.failed == {}
    loaded = [url for url in rendered.page_requests if url.startswith("file:")]
    assert bundle.as_uri() in loaded and rendered.fetched == []
    # Whatever reached the proxy (Chromium's own update checks and clock) was refused; the page asked for none of it.
    assert not any("plotly" in line.lower() or "mathjax" in line.lower() for line in rendered.refused)


def test_the_smallest_vendored_plotly_that_holds_every_trace_type_is_used():
    assert images.bundle_trace_types(images.VENDOR / "plotly-basic.min.js") == {"bar", "pie", "scatter"}
    bundle, _ = images.plotly_bundle({"a": {"data": [{"type": "bar"}]}, "b": {"data": [{"type": "heatmap"}]}})
    assert bundle == images.VENDOR / "plotly-cartesian.min.js"
    bundle, why = images.plotly_bundle({"a": {"data": [{"type": "scattergeo"}]}})
    assert bundle is None and "scattergeo" in why


def test_images_turned_off_or_no_browser_give_a_reason_for_each_chart():
    figure = {"data": [{"type": "bar", "x": [1], "y": [2]}], "layout": {"width": 400, "height": 300}}
    with override_settings(EVALSITE_BUNDLE_IMAGES=False):
        rendered = images.bundle_images({"one": figure, "two": figure})
    assert rendered.images == {} and set(rendered.failed) == {"one", "two"}
    assert all("EVALSITE_BUNDLE_IMAGES=0" in why for why in rendered.failed.values())
    rendered = images.render_figures({"one": figure}, browser=str(TEMPLATES))  # a folder, not a browser
    assert rendered.images == {} and "not an executable file" in rendered.failed["one"]


def test_the_images_have_the_pages_axis_words(bundles):
    """The bundle's layouts mirror the pages' scripts: every axis title they use is the page's own."""
    charts = _charts(_files(bundles["drawn"]))
    pages = {"judge_assisted_": "judge_assisted.html", "leaderboard_": "leaderboard.html"}
    checked = 0
    for name, chart in charts.items():
        title = chart["layout"]["xaxis"]["title"]["text"]
        if name == "scorecard":
            assert title == chart["axes"]["x"] and chart["layout"]["yaxis"]["title"]["text"] == chart["axes"]["y"]
        else:
            page = next(page for prefix, page in pages.items() if name.startswith(prefix))
            assert f'"{title}"' in (TEMPLATES / page).read_text(), (name, title)
        checked += 1
    assert checked >= 2
