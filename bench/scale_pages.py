"""The web process of bench/scale.py: every report page cold and warm, the drill-downs, the exports.

Run by bench/scale.py in a process of its own (its peak memory is the web process's), on the
benchmark's database and Redis, with the two workers running: HTTP GET through Django's test
Client, logged in as the study's researcher. Every report cache is emptied first, so the first
visit of a report finds nothing: the page answers 202 (its progress) and queues the computation
on a worker; it is asked again every 0.2 s until it answers. ``cold_s`` is that wait (for a page
that is not a cached report, its first request), ``warm_ms`` the median of ``--repeat``
requests after it, ``queries`` the SQL statements of one warm request. Goals: warm <= 500 ms,
a cold report <= 10 s. The publication bundle is written to ``--bundle-out`` for the import.

Run: bench/scale.py --only pages (not alone: it needs the benchmark's data and workers)
"""

from __future__ import annotations

import argparse
import html
import os
import re
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.common import result_line  # noqa: E402
from bench.scale_data import verdict  # noqa: E402

WARM_GOAL_MS, COLD_GOAL_S, COLD_TIMEOUT_S = 500.0, 10.0, 1800.0


def report_pages(study: int, run: int) -> list[tuple[str, str]]:
    """Return (name, URL) of every report page of a study and its judge run."""
    s = f"/reports/studies/{study}"
    return [
        ("index", "/reports/"),
        ("reliability", f"{s}/reliability/"),
        ("reliability-na-category", f"{s}/reliability/?na=category"),
        ("realism", f"{s}/realism/"),
        ("scorecard", f"{s}/scorecard/"),
        ("judges", f"{s}/judges/?run={run}"),
        ("judge-assisted", f"{s}/judge-assisted/?run={run}"),
        ("leaderboard", f"{s}/leaderboard/?run={run}"),
        ("raters", f"{s}/raters/"),
        ("evidence-agreement", f"{s}/evidence-agreement/?run={run}"),
        ("failure-modes", f"{s}/failure-modes/?run={run}"),
        ("development", f"{s}/development/"),
        ("run-scorecard", f"/reports/runs/{run}/scorecard/"),
        ("run-leaderboard", f"/reports/runs/{run}/leaderboard/"),
        ("drift-picker", "/reports/drift/"),
    ]


class Visitor:
    def __init__(self, client: Any, repeat: int) -> None:
        self.client = client
        self.repeat = repeat
        self.failed = 0

    def cold(self, url: str) -> tuple[float, Any, int]:
        """Ask until the page is no longer pending; return (seconds, last response, pending answers)."""
        started = time.perf_counter()
        pending = 0
        while True:
            response = self.client.get(url)
            if response.status_code != 202 or time.perf_counter() - started > COLD_TIMEOUT_S:
                return time.perf_counter() - started, response, pending
            pending += 1
            time.sleep(0.2)

    def warm(self, url: str) -> tuple[float, float, int, Any]:
        """Return the median and slowest of ``repeat`` requests (ms), one request's queries, the last response."""
        from django.db import connection
        from django.test.utils import CaptureQueriesContext

        times = []
        response = None
        for _ in range(self.repeat):
            started = time.perf_counter()
            response = self.client.get(url)
            times.append((time.perf_counter() - started) * 1000)
        with CaptureQueriesContext(connection) as queries:
            self.client.get(url)
        return statistics.median(times), max(times), len(queries), response

    def page(self, name: str, url: str) -> Any:
        """Visit ``url`` cold then warm; print its RESULT line; return the warm response."""
        cold_s, first, pending = self.cold(url)
        warm_ms, slowest, queries, response = self.warm(url)
        status = response.status_code if response is not None else first.status_code
        why = []
        if status != 200:
            why.append(f"status_{status}")
        if pending and cold_s > COLD_GOAL_S:
            why.append(f"cold_{cold_s:.1f}s>{COLD_GOAL_S:.0f}s")
        if warm_ms > WARM_GOAL_MS:
            why.append(f"warm_{warm_ms:.0f}ms>{WARM_GOAL_MS:.0f}ms_{queries}_queries")
        self.failed += status != 200
        body = getattr(response, "content", b"") if response is not None else b""
        print(result_line(
            "page", page=name, status=status, computed_by_worker="yes" if pending else "no", cold_s=cold_s,
            warm_ms=warm_ms, warm_max_ms=slowest, queries=queries, kb=len(body) / 1024,
            target=f"warm<={WARM_GOAL_MS:.0f}ms,cold<={COLD_GOAL_S:.0f}s", **verdict(not why, ",".join(why)),
        ), flush=True)
        return response


def first_link(response: Any, pattern: str, after: str = "") -> str | None:
    """Return the first link of a page whose href matches ``pattern`` (and is followed by ``after``), or None."""
    if response is None or response.status_code != 200:
        return None
    match = re.search(rf'href="({pattern}[^"]*)"{after}', response.content.decode(errors="replace"))
    return html.unescape(match.group(1)) if match else None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--study", type=int, required=True)
    parser.add_argument("--run", type=int, required=True)
    parser.add_argument("--researcher", required=True)
    parser.add_argument("--password", required=True)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--bundle-out", required=True)
    args = parser.parse_args()
    import django

    django.setup()
    from django.conf import settings

    # Plain static names (no collectstatic for a benchmark); the test client's host.
    settings.STORAGES = {**settings.STORAGES, "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"}}
    settings.ALLOWED_HOSTS = ["*"]
    from django.test import Client

    from reports.models import ReportCache

    ReportCache.objects.all().delete()  # every report cold
    client = Client()
    # Logged in through the login page, as a reader is (the login throttle records the address).
    login = client.post("/accounts/login/", {"username": args.researcher, "password": args.password})
    if login.status_code != 302:
        raise SystemExit(f"logging in as {args.researcher} failed: {login.status_code}")
    client.get("/")  # the process's own first request (imports, templates) is not a page's
    visitor = Visitor(client, args.repeat)
    s = f"/reports/studies/{args.study}"
    judges = None
    for name, url in report_pages(args.study, args.run):
        response = visitor.page(name, url)
        if name == "judges":
            judges = response
    # The drill-downs: a confusion cell's list from the judges page, then a review page from that list.
    cell = first_link(judges, rf"{s}/instances/\?", r' aria-label="\d+ conversation items: consensus')
    listing = visitor.page("instances-confusion-cell", cell) if cell else None
    if cell is None:
        print(result_line("page", page="instances-confusion-cell", error="no-link-on-the-judges-page"), flush=True)
        visitor.failed += 1
    visitor.page("instances-run", f"{s}/instances/?run={args.run}")
    review = first_link(listing, rf"{s}/review/")
    if review:
        visitor.page("review-from-list", review)
    else:
        print(result_line("page", page="review-from-list", error="no-link-on-the-list"), flush=True)
        visitor.failed += 1
    from annotation.models import StudyConversation

    code = StudyConversation.objects.filter(study_id=args.study).order_by("conversation_id").values_list("conversation__code", flat=True).first()
    visitor.page("review-alone", f"{s}/review/{code}/?run={args.run}")
    study_zip = export(client, "study-export", f"{s}/export.zip")
    bundle = bundle_export(client, f"/api/v1/reports/studies/{args.study}/bundle/")
    if bundle is not None:
        Path(args.bundle_out).write_bytes(bundle)
    return 1 if visitor.failed or study_zip is None or bundle is None else 0


def export(client: Any, workload: str, url: str) -> bytes | None:
    """Download an export once (built in the request); print its RESULT line; return its bytes (None: refused)."""
    started = time.perf_counter()
    response = client.get(url)
    data = b"".join(response.streaming_content) if response.streaming else response.content
    wall = time.perf_counter() - started
    why = [] if response.status_code == 200 else [f"status_{response.status_code}"]
    if wall > COLD_GOAL_S:
        why.append(f"{wall:.1f}s>{COLD_GOAL_S:.0f}s_built_in_the_request")
    print(result_line(workload, status=response.status_code, wall_s=wall, mb=len(data) / 2**20,
                      streamed="yes" if response.streaming else "no", target=f"<={COLD_GOAL_S:.0f}s",
                      **verdict(not why, ",".join(why))), flush=True)
    return data if response.status_code == 200 else None


def bundle_export(client: Any, url: str, patience_s: float = 1800.0) -> bytes | None:
    """Ask the API for the publication bundle until a worker has built it (202 until then); return its bytes.

    Times the whole wait (the build, by a worker) and the slowest single request: the bundle is
    never built in a request, so each answer is a state or the stored file streamed.
    """
    started, slowest, polls = time.perf_counter(), 0.0, 0
    while True:
        asked = time.perf_counter()
        response = client.get(url)
        data = b"".join(response.streaming_content) if response.streaming else response.content
        slowest, polls = max(slowest, time.perf_counter() - asked), polls + 1
        if response.status_code != 202 or time.perf_counter() - started > patience_s:
            break
        time.sleep(0.5)
    wall = time.perf_counter() - started
    why = [] if response.status_code == 200 else [f"status_{response.status_code}"]
    if wall > COLD_GOAL_S:
        why.append(f"built_in_{wall:.1f}s>{COLD_GOAL_S:.0f}s")
    if slowest * 1000 > WARM_GOAL_MS:
        why.append(f"slowest_request_{slowest * 1000:.0f}ms>{WARM_GOAL_MS:.0f}ms")
    print(result_line("bundle-export", status=response.status_code, computed_by_worker="yes", wall_s=wall,
                      slowest_request_ms=slowest * 1000, polls=polls, mb=len(data) / 2**20,
                      streamed="yes" if response.streaming else "no",
                      target=f"built<={COLD_GOAL_S:.0f}s,request<={WARM_GOAL_MS:.0f}ms",
                      **verdict(not why, ",".join(why))), flush=True)
    return data if response.status_code == 200 else None


if __name__ == "__main__":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "evalsite.settings.base")
    sys.exit(main())
