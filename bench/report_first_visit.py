"""Benchmark a report page's first visit in Chromium: bytes over the wire and time to a drawn chart.

Data: ``tests.support.report_study`` (150 AMHART conversations, 4 clinicians, k=2, the study
section, consensus, a three-judge run) on a fresh SQLite database in a temporary directory.
The app runs as ``make run`` runs it (``manage.py serve``: the web server and a Celery worker on
the filesystem broker, debug off, static files by WhiteNoise). Chromium (Debian's, through
Playwright) opens each report with an empty browser cache, as a reader's first visit.

Two workloads per page, one ``RESULT`` line each:

* ``cache=warm``: the report is already computed (another reader opened it): the page, its
  CSS and scripts. ``transfer_bytes`` is what crossed the network (compressed where the server
  compressed it, from Chromium's own accounting), ``load_ms`` the navigation's load event,
  ``chart_ms`` when the page's chart was drawn (0: the page has none).
* ``cache=cold``: the report's data changed since it was computed, so the page shows its
  progress while the worker computes it and reloads once it is ready: ``ready_ms`` is the time
  from the first request to the drawn report, ``compute_ms`` the worker's own computation.

Figures depend on the machine; take them on an idle one and compare them with each other.

Run: .venv/bin/python bench/report_first_visit.py [--port 8123] [--repeat 3] [--pages scorecard,reliability,realism]
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
VAR = tempfile.mkdtemp(prefix="evalsite-bench-visit-")
ENV = {
    **os.environ,
    "DJANGO_SETTINGS_MODULE": "evalsite.settings.base",
    "EVALSITE_VAR_DIR": VAR,
    "EVALSITE_DEBUG": "0",
    "DJANGO_LOG_LEVEL": "WARNING",
    "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    "HF_HUB_OFFLINE": "1",
    "EVALSITE_WORKER_CONCURRENCY": "4",
    # Playwright's sync API runs an event loop in this thread; the ORM calls here stay synchronous.
    "DJANGO_ALLOW_ASYNC_UNSAFE": "true",
}
os.environ.update(ENV)

import django  # noqa: E402

django.setup()

from common import result_line  # noqa: E402
from django.core.management import call_command  # noqa: E402

CHROMIUM = os.environ.get("EVALSITE_CHROMIUM", "/usr/bin/chromium")
LAUNCH_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
               "--disable-sync", "--no-first-run", "--disable-quic"]
CHARTS = {"scorecard": "#score-chart", "reliability": "#pair-heatmap", "realism": "[id^=cm-]"}


def build() -> tuple[int, str]:
    """Create the study and a logged-in session for its coordinator; return (study id, session key)."""
    from celery import current_app
    from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
    from django.contrib.sessions.backends.db import SessionStore

    from tests.support.report_study import build_report_study

    current_app.conf.task_always_eager = True
    audit = build_report_study(n_conversations=150, prefix="visit")
    session = SessionStore()
    session[SESSION_KEY] = str(audit.coordinator.pk)
    session[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
    session[HASH_SESSION_KEY] = audit.coordinator.get_session_auth_hash()
    session.save()
    return audit.study.pk, session.session_key


def warm(study: int) -> None:
    """Compute the reports in place (the ``cache=warm`` case: someone opened them before)."""
    from annotation.models import Study
    from reports import selectors, services

    s = Study.objects.get(pk=study)
    services.study_scorecard(study=s)
    services.study_reliability(study=s, na=selectors.reliability_na(s, None))
    services.study_realism(study=s)


def touch(study: int) -> None:
    """Change a rating's revision, so every report of the study is out of date (the ``cold`` case)."""
    from annotation.models import Rating

    rating = Rating.objects.filter(assignment__study_id=study).order_by("pk").first()
    Rating.objects.filter(pk=rating.pk).update(revision=rating.revision + 1)


def start_server(port: int) -> subprocess.Popen:
    log = open(Path(VAR) / "serve.log", "w")  # noqa: SIM115
    server = subprocess.Popen([sys.executable, "manage.py", "serve", f"127.0.0.1:{port}"], cwd=ROOT, env=ENV,
                              stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/accounts/login/", timeout=2)  # noqa: S310
            return server
        except OSError:
            time.sleep(0.3)
    raise SystemExit(f"the server did not answer; see {VAR}/serve.log")


def visit(browser, base: str, session_key: str, url: str, chart: str) -> dict[str, float]:  # type: ignore[no-untyped-def]
    """Open ``url`` in a fresh browser context; return transfer bytes, requests and timings."""
    context = browser.new_context(base_url=base, viewport={"width": 1366, "height": 900})
    context.add_cookies([{"name": "sessionid", "value": session_key, "url": base}])
    page = context.new_page()
    cdp = context.new_cdp_session(page)
    cdp.send("Network.enable")
    cdp.send("Network.setCacheDisabled", {"cacheDisabled": True})
    sizes: dict[str, float] = {}
    cdp.on("Network.loadingFinished", lambda e: sizes.__setitem__(e["requestId"], e["encodedDataLength"]))
    started = time.perf_counter()
    page.goto(url, wait_until="load", timeout=120_000)
    drawn = 0.0
    if page.locator(chart).count():
        page.locator(f"{chart} .main-svg").first.wait_for(state="attached", timeout=120_000)
        drawn = (time.perf_counter() - started) * 1000
    load = page.evaluate("() => { const n = performance.getEntriesByType('navigation')[0]; return n.loadEventEnd - n.startTime; }")
    page.wait_for_timeout(200)  # the last loadingFinished events
    out = {"transfer_bytes": sum(sizes.values()), "requests": len(sizes), "load_ms": load, "chart_ms": drawn}
    context.close()
    return out


def visit_cold(browser, base: str, session_key: str, url: str, chart: str) -> float:  # type: ignore[no-untyped-def]
    """Open an out-of-date report; return ms until the computed report's chart is drawn."""
    context = browser.new_context(base_url=base, viewport={"width": 1366, "height": 900})
    context.add_cookies([{"name": "sessionid", "value": session_key, "url": base}])
    page = context.new_page()
    started = time.perf_counter()
    page.goto(url, wait_until="domcontentloaded", timeout=120_000)
    page.locator(f"{chart} .main-svg").first.wait_for(state="attached", timeout=300_000)
    ready = (time.perf_counter() - started) * 1000
    context.close()
    return ready


def compute_ms(study: int, kind: str) -> float:
    from reports.models import ReportCache

    row = ReportCache.objects.filter(kind=kind, params__study=study).order_by("-computed_at").first()
    return 1000 * row.seconds if row else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8123)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--pages", default="scorecard,reliability,realism")
    parser.add_argument("--keep", action="store_true", help="leave the temporary database in place")
    args = parser.parse_args()
    call_command("migrate", verbosity=0)
    study, session_key = build()
    server = start_server(args.port)
    base = f"http://127.0.0.1:{args.port}"
    kinds = {"scorecard": "scorecard", "reliability": "reliability", "realism": "realism"}
    try:
        from playwright.sync_api import sync_playwright

        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=LAUNCH_ARGS)
            for name in [p for p in args.pages.split(",") if p in CHARTS]:
                url = f"/reports/studies/{study}/{name}/"
                warm(study)  # the cold runs of the page before left every report out of date
                runs = [visit(browser, base, session_key, url, CHARTS[name]) for _ in range(args.repeat)]
                figures = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
                print(result_line("report_first_visit", page=name, cache="warm", transfer_bytes=int(figures["transfer_bytes"]),
                                  transfer_kb=figures["transfer_bytes"] / 1024, requests=int(figures["requests"]),
                                  load_ms=figures["load_ms"], chart_ms=figures["chart_ms"]), flush=True)
                ready = []
                for _ in range(args.repeat):
                    touch(study)
                    ready.append(visit_cold(browser, base, session_key, url, CHARTS[name]))
                print(result_line("report_first_visit", page=name, cache="cold", ready_ms=statistics.median(ready),
                                  compute_ms=compute_ms(study, kinds[name])), flush=True)
            browser.close()
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
        if args.keep:
            print(f"database kept in {VAR}")
        else:
            shutil.rmtree(VAR, ignore_errors=True)


if __name__ == "__main__":
    main()
