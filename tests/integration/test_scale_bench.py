"""bench/scale.py at a tiny scale on the test services: every workload's RESULT line, with the right counts.

Structure only, never timing: a shared 2-core machine makes every figure of a tiny run noise.
The benchmark makes and drops its own database beside the test database, takes a free Redis
database of the test server by lease and starts its own two workers and fake LLM server.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.services import worker_database_url

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]


def _results(stdout: str) -> list[dict[str, str]]:
    return [dict(part.split("=", 1) for part in line.split()[1:]) for line in stdout.splitlines() if line.startswith("RESULT ")]


def _one(results: list[dict[str, str]], workload: str, **match: str) -> dict[str, str]:
    found = [r for r in results if r["workload"] == workload and all(r.get(k) == v for k, v in match.items())]
    assert len(found) == 1, (workload, match, results)
    return found[0]


@pytest.fixture(scope="module")
def tiny_run() -> tuple[subprocess.CompletedProcess, list[dict[str, str]]]:
    from django.conf import settings

    from tests.support import redis_lease

    db = settings.DATABASES["default"]
    name = ((db.get("TEST") or {}).get("NAME") or f"test_{db['NAME']}") + "_scale"
    database_url = worker_database_url().rpartition("/")[0] + f"/{name}"
    server, _, _ = redis_lease.candidates(os.environ)
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL", "DJANGO_SETTINGS_MODULE")}
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "scale.py"), "--scale", "0.002", "--latency", "0.01",
         "--repeat", "1", "--database-url", database_url, "--redis-url", server],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=900,
    )
    return done, _results(done.stdout)


def test_the_tiny_run_finishes_with_a_result_line_per_workload(tiny_run):
    done, results = tiny_run
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    workloads = {r["workload"].split("-")[0] for r in results}
    assert {"import", "simulate", "study", "judge", "page", "bundle", "memory"} <= workloads
    assert len([r for r in results if r["workload"] in ("study-export", "bundle-export", "bundle-import")]) == 3
    assert not [r for r in results if "error" in r], results
    for result in results:
        assert result["goal"] in ("met", "missed"), result
        assert (result["goal"] == "missed") == ("why" in result), result


def test_the_counts_are_those_of_the_scale(tiny_run):
    _, results = tiny_run
    imported = _one(results, "import")
    assert (imported["conversations"], imported["messages"], imported["turns"]) == ("20", "400", "20")
    simulated = _one(results, "simulate-2x20-c32")
    assert (simulated["done"], simulated["messages"], simulated["failed"]) == ("2/2", "40", "0")
    study = _one(results, "study")
    assert (study["conversations"], study["raters"], study["k"]) == ("4", "3", "3")
    assert (study["assignments"], study["ratings"], study["consensus_status"]) == ("12", "12", "ready")
    assert study["csv_rows"] == str(12 * 19)  # 14 AMHART items and 5 of the study section per rating
    assert int(study["consensus_labels"]) > 0
    judged = _one(results, "judge-3x20-c32")
    assert (judged["results"], judged["done"], judged["status"], judged["duplicated"]) == ("60", "60", "completed", "0")
    assert judged["labels"] == str(60 * 14)


def test_every_page_answers_and_the_bundle_makes_the_round_trip(tiny_run):
    from bench.scale_pages import report_pages

    _, results = tiny_run
    pages = {r["page"]: r for r in results if r["workload"] == "page"}
    expected = {name for name, _ in report_pages(1, 1)} | {
        "instances-confusion-cell", "instances-run", "review-from-list", "review-alone"}
    assert set(pages) == expected
    assert {name: r["status"] for name, r in pages.items() if r["status"] != "200"} == {}
    # Nothing was cached: the reports were computed by the workers while their pages waited.
    assert pages["reliability"]["computed_by_worker"] == pages["scorecard"]["computed_by_worker"] == "yes"
    assert _one(results, "study-export")["status"] == _one(results, "bundle-export")["status"] == "200"
    imported = _one(results, "bundle-import")
    assert (imported["conversations"], imported["ratings"], imported["judge_runs"]) == ("4", "12", "1")
    assert int(imported["consensus_labels"]) > 0


def test_the_memory_line_names_the_web_process_each_worker_and_each_command(tiny_run):
    _, results = tiny_run
    memory = _one(results, "memory")
    for process in ("worker0_mb", "worker1_mb", "web_mb", "import_conversations_mb", "import_ratings_mb", "import_bundle_mb"):
        assert float(memory[process]) > 0, (process, memory)
