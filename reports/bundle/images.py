"""Draw plotly figures as PNG and SVG images with plotly's own image export: kaleido driving a headless Chromium.

One browser session draws every figure (``render_figures``), each as PNG and as SVG, with the
app's own copy of plotly.js (``static/vendor/plotly/``: the smallest vendored bundle that holds
every trace type the figures use) and without MathJax: the page kaleido opens names local files
only, so nothing is fetched from the network. Every way it can fail comes back as a reason in
words, never as an exception: kaleido not installed, no Chromium, a figure plotly.js cannot
draw, the session taking longer than its time limit. ``write_chart_images`` is what the
publication bundle calls: it draws the bundle's charts as the settings say
(``EVALSITE_BUNDLE_IMAGES``, ``EVALSITE_CHART_BROWSER``, ``EVALSITE_CHART_IMAGE_TIMEOUT``), writes
``figures/png/NAME.png`` and ``figures/svg/NAME.svg`` and returns the manifest's account of them.
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import re
import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.conf import settings

import reports.bundle.layout as layout
from reports.bundle.chart_layouts import image_figure
from reports.bundle.progress import stage

VENDOR = Path(__file__).resolve().parent.parent.parent / "static" / "vendor" / "plotly"
# Smallest first: the first that holds every trace type of the figures draws them.
BUNDLES = ("plotly-basic.min.js", "plotly-cartesian.min.js")
BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome")
PNG_SCALE = 2  # print resolution: twice the page's pixels
_TRACE = re.compile(rb'moduleType:"trace",name:"([a-z0-9]+)"')
_VERSION = re.compile(rb"plotly\.js \([a-z]+ - minified\) v([0-9.]+)")


@dataclass(frozen=True)
class ChartImage:
    png: bytes
    svg: bytes


@dataclass(frozen=True)
class Rendered:
    """What a session drew: each figure's images by name, each figure it could not draw with the reason, and how."""

    images: dict[str, ChartImage] = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)
    made_with: str = ""
    # Every address the drawing page asked for (its scripts: local files), as the browser reported them.
    page_requests: list[str] = field(default_factory=list)
    # The first line of every request that reached the refusing proxy (Chromium's own update checks, clock, sign-in):
    # none of them left the machine.
    refused: list[str] = field(default_factory=list)

    @property
    def fetched(self) -> list[str]:
        """Return what the page asked of the network (refused): anything but local files and data. Empty: nothing."""
        return [url for url in self.page_requests if url.split(":", 1)[0] not in ("file", "data", "blob", "about")]


def bundle_trace_types(bundle: Path) -> set[str]:
    """Return the trace types a plotly.js bundle registers (read from the bundle itself)."""
    return {m.decode() for m in _TRACE.findall(bundle.read_bytes())}


def plotly_bundle(figures: dict[str, dict[str, Any]]) -> tuple[Path | None, str]:
    """Return the smallest vendored plotly.js bundle that draws every trace of the figures, or None and why not."""
    wanted = {str(trace.get("type") or "scatter") for figure in figures.values() for trace in figure.get("data") or []}
    for name in BUNDLES:
        path = VENDOR / name
        if path.is_file() and wanted <= bundle_trace_types(path):
            return path, ""
    return None, f"trace type(s) {', '.join(sorted(wanted))} are not all in one of the app's plotly.js bundles ({', '.join(BUNDLES)})"


def find_browser(configured: str = "") -> tuple[str | None, str]:
    """Return the Chromium (or Chrome) to draw with: ``configured`` when given, else the first on PATH; or None and why not."""
    if configured:
        path = Path(configured)
        if path.is_file() and shutil.which(str(path)):
            return str(path), ""
        return None, f"no Chromium at {configured} (EVALSITE_CHART_BROWSER): not an executable file"
    for name in BROWSERS:
        found = shutil.which(name)
        if found:
            return found, ""
    return None, f"no Chromium or Chrome on this machine ({', '.join(BROWSERS)} not on PATH; EVALSITE_CHART_BROWSER names one)"


def _browser_version(browser: str) -> str:
    try:
        out = subprocess.run([browser, "--version"], capture_output=True, text=True, timeout=10, check=False).stdout
    except (OSError, subprocess.SubprocessError):
        return Path(browser).name
    return out.strip() or Path(browser).name


def _made_with(browser: str, bundle: Path) -> str:
    match = _VERSION.search(bundle.read_bytes()[:400])
    plotly = f"plotly.js {match.group(1).decode()}" if match else "plotly.js"
    return (f"{plotly} ({bundle.name}, the app's own copy) in headless {_browser_version(browser)}, driven by kaleido "
            f"{importlib.metadata.version('kaleido')}; PNG at {PNG_SCALE}x the page's pixels, SVG as plotly.js writes it")


def render_figures(figures: dict[str, dict[str, Any]], *, browser: str = "", timeout: float = 30.0) -> Rendered:
    """Draw each plotly figure (``{"data": [...], "layout": {...}}``) as PNG and SVG in one browser session.

    ``browser`` is Chromium's path (empty: the first Chromium or Chrome on PATH). The whole session
    (starting the browser included) has ``timeout`` seconds; past it, every figure not yet drawn
    fails with that reason and the browser is closed. Returns the images by figure name and the
    reason for each figure without them.
    """
    if not figures:
        return Rendered()
    try:
        import kaleido  # noqa: F401  (an optional renderer: its absence is a reason, not an error)
    except ImportError:
        return _all_failed(figures, "kaleido (plotly's image export) is not installed: pip install kaleido")
    path, why = find_browser(browser)
    if path is None:
        return _all_failed(figures, why)
    bundle, why = plotly_bundle(figures)
    if bundle is None:
        return _all_failed(figures, why)
    images: dict[str, ChartImage] = {}
    failed: dict[str, str] = {}
    outcome: dict[str, BaseException] = {}
    requested: list[str] = []

    started = time.monotonic()

    def run(proxy: str) -> None:
        try:
            asyncio.run(asyncio.wait_for(_session(figures, path, bundle, images, failed, timeout, proxy, requested),
                                         timeout))
        except BaseException as exc:  # reported below as the reason of each figure not drawn
            outcome["error"] = exc

    with _RefusingProxy() as proxy:
        # Its own thread and event loop: the caller may be a request, a task or a command, with or without a running loop.
        worker = threading.Thread(target=run, args=(proxy.address,), name="chart-images", daemon=True)
        worker.start()
        worker.join(timeout + 15)
    # A session that outlived its join still writes to these: read copies.
    drawn, not_drawn, asked = dict(images), dict(failed), list(dict.fromkeys(requested))
    error = outcome.get("error")
    # Cut short while starting, the browser reports that it failed to start: the time limit is the reason then too.
    if worker.is_alive() or isinstance(error, TimeoutError) or (error is not None and time.monotonic() - started >= timeout):
        reason = f"the images took longer than {timeout:g} s (EVALSITE_CHART_IMAGE_TIMEOUT)"
    elif error is not None:
        reason = f"the browser session failed: {_words(error)}"
    else:
        reason = ""
    for name in figures:
        if name not in drawn and name not in not_drawn:
            not_drawn[name] = reason or "not drawn"
    return Rendered(images=drawn, failed=not_drawn, made_with=_made_with(path, bundle) if drawn else "",
                    page_requests=asked, refused=list(proxy.asked))


def page(bundle: Path) -> Any:
    """Return kaleido's page for ``bundle``: the app's plotly.js, no MathJax (its default comes from a CDN)."""
    import kaleido

    return kaleido.PageGenerator(plotly=bundle.as_uri(), mathjax=False)


def page_html(bundle: Path) -> str:
    """Return the HTML of the page the figures are drawn on (every script on it a local file)."""
    return str(page(bundle).generate_index())


class _RefusingProxy:
    """The browser's only proxy: a loopback port that answers no request, and notes the first line of each one asked.

    Chromium sends every http(s) request through its proxy, so with this one nothing leaves the
    machine, and what the page would have fetched (nothing: its scripts are local files) is known.
    """

    def __enter__(self) -> _RefusingProxy:
        self.asked: list[str] = []
        self._socket = socket.create_server(("127.0.0.1", 0))
        self._socket.settimeout(0.2)
        self.address = f"127.0.0.1:{self._socket.getsockname()[1]}"
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, name="chart-images-proxy", daemon=True)
        self._thread.start()
        return self

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                connection, _ = self._socket.accept()
            except OSError:  # the accept timed out (look at the stop flag again) or the socket closed
                continue
            with connection:
                connection.settimeout(1)
                try:
                    first = connection.recv(4096).split(b"\r\n", 1)[0].decode("latin-1")
                except OSError:
                    first = ""
                self.asked.append(first[:200] or "a connection that sent no request")

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(2)
        self._socket.close()


# Chromium's own traffic (update checks, the clock, the search engine, accounts: seen through the
# refusing proxy) turned off, so the proxy's log holds only what drawing would fetch.
QUIET = ("--disable-background-networking", "--disable-component-update", "--disable-domain-reliability",
         "--disable-client-side-phishing-detection", "--disable-default-apps", "--dns-prefetch-disable", "--no-pings",
         "--disable-sync", "--disable-features=OptimizationHints,MediaRouter,Translate,AutofillServerCommunication")


def _quiet_chromium() -> type:
    from choreographer.browsers.chromium import Chromium

    class QuietChromium(Chromium):
        def get_cli(self) -> list[str]:
            return [*super().get_cli(), *QUIET]

    return QuietChromium


def _recorder(requested: list[str]) -> Callable[[dict[str, Any]], Coroutine[Any, Any, None]]:
    async def record(event: dict[str, Any]) -> None:
        requested.append(str(((event.get("params") or {}).get("request") or {}).get("url") or ""))

    return record


async def _session(figures: dict[str, dict[str, Any]], browser: str, bundle: Path, images: dict[str, ChartImage],
                   failed: dict[str, str], timeout: float, proxy: str, requested: list[str]) -> None:
    import kaleido

    async with kaleido.Kaleido(n=1, timeout=timeout, page_generator=page(bundle), path=browser, proxy_server=proxy,
                               browser_cls=_quiet_chromium()) as session:
        for tab in list(session.tabs.values()):
            # The page's own requests, as the browser reports them (kaleido reloads the page after each image).
            tab.subscribe("Network.requestWillBeSent", _recorder(requested))
            await tab.send_command("Network.enable")
        for name, figure in figures.items():
            try:
                png = await session.calc_fig(figure, {"format": "png", "scale": PNG_SCALE})
                svg = await session.calc_fig(figure, {"format": "svg"})
            except TimeoutError:
                raise
            except Exception as exc:  # one figure plotly.js cannot draw: the others are still drawn
                failed[name] = f"plotly.js could not draw it: {_words(exc)}"
                continue
            problem = _not_an_image(png, svg)
            if problem:
                failed[name] = problem
            else:
                images[name] = ChartImage(png=png, svg=svg)


def _not_an_image(png: bytes, svg: bytes) -> str:
    if not png.startswith(b"\x89PNG\r\n\x1a\n"):
        return "the renderer returned something that is not a PNG image"
    if not svg.lstrip().startswith(b"<svg"):
        return "the renderer returned something that is not an SVG image"
    return ""


def _words(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text[:300]}" if text else type(exc).__name__


def _all_failed(figures: dict[str, dict[str, Any]], reason: str) -> Rendered:
    return Rendered(failed=dict.fromkeys(figures, reason))


def bundle_images(figures: dict[str, dict[str, Any]]) -> Rendered:
    """Draw a bundle's charts as the settings say (``EVALSITE_BUNDLE_IMAGES`` off: none, with that reason)."""
    if not getattr(settings, "EVALSITE_BUNDLE_IMAGES", True):
        return _all_failed(figures, "chart images are turned off where the bundle was made (EVALSITE_BUNDLE_IMAGES=0)")
    return render_figures(figures, browser=getattr(settings, "EVALSITE_CHART_BROWSER", ""),
                          timeout=float(getattr(settings, "EVALSITE_CHART_IMAGE_TIMEOUT", 20)))


def write_chart_images(charts: dict[str, Any], put: Callable[[str, bytes], str]) -> dict[str, Any]:
    """Write each bundle chart's PNG and SVG with ``put(path, bytes)``; return the manifest's account of them (``static_images``).

    The images are drawn in one browser session; a chart without them is named with the reason,
    in the manifest and (``summary``) in README.txt, never left out in silence.
    """
    stage("charts", f"drawing {len(charts)} chart{'s' if len(charts) != 1 else ''} as PNG and SVG")
    rendered = bundle_images({name: image_figure(chart) for name, chart in charts.items()})
    stage("zip", "writing the codebook, the manifest and the archive")
    made = []
    for name, image in rendered.images.items():
        made.append(put(f"{layout.PNG_DIR}{name}.png", image.png))
        made.append(put(f"{layout.SVG_DIR}{name}.svg", image.svg))
    # Each chart without images named by its plotly JSON's path in the bundle (names there are made portable).
    not_made = {layout.portable_path(f"{layout.PLOTLY_DIR}{name}.json"): why for name, why in rendered.failed.items()}
    reasons = sorted(set(not_made.values()))
    if not charts:
        summary = "Chart images: none (the study has no charts yet)."
    elif not rendered.failed:
        summary = (f"Chart images: each of the {len(charts)} charts of figures/plotly/ as PNG (figures/png/) and SVG (figures/svg/), "
                   f"drawn by {rendered.made_with}.")
    elif not rendered.images:
        summary = (f"Chart images: NOT included ({'; '.join(reasons)}). figures/plotly/ holds every chart: "
                   "draw one with Plotly.newPlot(div, chart.traces, chart.layout) to make its image.")
    else:
        summary = (f"Chart images: {len(rendered.images)} of the {len(charts)} charts as PNG (figures/png/) and SVG (figures/svg/), "
                   f"drawn by {rendered.made_with}; not drawn: "
                   + "; ".join(f"{name} ({why})" for name, why in sorted(not_made.items())) + ".")
    return {"formats": ["png", "svg"], "made_with": rendered.made_with, "files": made,
            "not_made": dict(sorted(not_made.items())), "fetched": rendered.fetched, "summary": summary}
