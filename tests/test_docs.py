"""What the README and docs say stays true."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.test import Client

from tests.conftest import client_for

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def test_the_docs_name_one_statistics_command():
    said = [f"{p.name}:{n}" for p in DOCS for n, line in enumerate(p.read_text().splitlines(), 1) if "-m reports.stats" in line]
    assert said == []  # `python -m stats`, everywhere


def test_the_readme_says_how_to_change_the_address_and_which_page_to_open_first():
    readme = (ROOT / "README.md").read_text()
    assert "make run ADDR=" in readme
    assert re.search(r"Open first:.*researcher.*Reports", readme, re.S)


@pytest.mark.parametrize("path, status", [
    ("/api/v1/conversations/", 403), ("/api/v1/studies/", 403), ("/api/v1/targets/", 403), ("/api/v1/simulation-batches/", 403),
    ("/api/v1/reports/drift/", 403), ("/api/v1/sampling-plans/", 403), ("/api/schema/", 403),
    ("/api/v1/judges/", 404), ("/api/v1/judge-prompts/", 404), ("/api/v1/judge-runs/", 404), ("/api/v1/my/assignments/", 404),
])
def test_api_answers_a_user_without_a_role_as_the_readme_says(outsider, path, status):
    assert client_for(outsider).get(path).status_code == status
    readme = (ROOT / "README.md").read_text()
    assert "API\nendpoints a role may not use answer 403, except the judging endpoints" in readme


def test_pages_answer_a_user_without_a_role_404(outsider):
    for path in ("/corpus/conversations/", "/reports/", "/judging/", "/studies/"):
        assert client_for(outsider).get(path).status_code == 404, path
    assert Client().get("/reports/").status_code == 302  # anonymous: the login page first


def test_the_deployment_guide_restarts_every_long_running_unit_and_the_readme_links_it():
    guide = (ROOT / "docs" / "deployment.md").read_text()
    assert "docs/deployment.md" in (ROOT / "README.md").read_text()
    units = re.findall(r"```ini\n(.*?)```", guide, re.S)
    services = [u for u in units if "Type=oneshot" not in u]
    commands = [re.search(r"^ExecStart=(.*)$", u, re.M)[1] for u in services]
    assert any("gunicorn evalsite.wsgi" in c for c in commands) and any("celery -A evalsite worker" in c for c in commands)
    for unit in services:
        assert re.search(r"^Restart=always$", unit, re.M) and "EnvironmentFile=/etc/evalsite/env" in unit, unit
        assert re.search(r"^WantedBy=multi-user.target$", unit, re.M), unit
