"""Blinding is a security property: nothing a rater receives names the chatbot, the persona
design, conversation metadata, judges or another rater's answers.

Conversations are created with secrets in every place a leak could come from (target model,
name and code; persona name, key and design labels; metadata; per-message call records; a
system prompt; another rater's note; a consensus reason), then every rater page and API
response, success and error, is searched for each secret.
"""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from annotation.models import ConsensusLabel, ConsensusProvenance
from annotation.rating.services import rating_save_answer
from tests.conftest import client_for

from .rater_setup import SECRETS, answer_everything, first_assignment, flow_instrument, make_study

API = "/api/v1/my/assignments/"


def _json_post(client, url: str, data: dict):  # type: ignore[no-untyped-def]
    return client.post(url, json.dumps(data), content_type="application/json")


@pytest.fixture
def responses(clinician, clinician2, coordinator) -> dict[str, tuple[int, str]]:
    """Return every page and API answer a rater gets in a typical session: name -> (status, body)."""
    study = make_study([clinician, clinician2], n=3, n_calibration=1, sensitive=True, coordinator=coordinator)
    flow_study = make_study([clinician, clinician2], n=1, instrument=flow_instrument())
    calibration = first_assignment(study, clinician, calibration=True)
    main = first_assignment(study, clinician, calibration=False)
    flow = first_assignment(flow_study, clinician)

    # Another rater rates the same conversations, with notes that must stay private.
    for assignment in (first_assignment(study, clinician2, calibration=True), first_assignment(flow_study, clinician2)):
        part, key, value = ("main", "1", "Yes") if assignment.study_id == flow_study.pk else ("main", "amhart_01", "no")
        rating_save_answer(assignment_id=assignment.pk, user=clinician2, part=part, item_key=key, value=value, note="OTHER-RATER-NOTE")
        rating_save_answer(assignment_id=assignment.pk, user=clinician2, part="section", item_key="comment", value="OTHER-RATER-NOTE")
    ConsensusLabel.objects.create(
        study=study, conversation=calibration.conversation, item_key="amhart_01", label="no",
        provenance=ConsensusProvenance.ADJUDICATED, reason="OTHER-RATER-NOTE consensus",
    )

    client = client_for(clinician)
    out: dict[str, tuple[int, str]] = {}

    def get(name: str, url: str) -> None:
        response = client.get(url)
        out[name] = (response.status_code, response.content.decode())

    def post(name: str, url: str, data: dict, as_json: bool = True) -> None:
        response = _json_post(client, url, data) if as_json else client.post(url, data)
        out[name] = (response.status_code, response.content.decode())

    rate = lambda a: reverse("annotation:rate", args=[a.pk])  # noqa: E731
    get("dashboard", reverse("annotation:my-studies"))
    get("content warning", rate(calibration))
    client.post(reverse("annotation:rate-continue", args=[calibration.pk]))
    get("rating page", rate(calibration))
    get("main set locked page (423)", rate(main))
    post("submit refused page (400)", reverse("annotation:rate-submit", args=[calibration.pk]), {}, as_json=False)
    get("api list", API)
    get("api detail", f"{API}{calibration.pk}/")
    post("api save", f"{API}{calibration.pk}/answers/", {"part": "main", "item_key": "amhart_02", "value": "yes"})
    post("api save conflict (409)", f"{API}{calibration.pk}/answers/", {"part": "main", "item_key": "amhart_02", "value": "no", "expected_revision": 0})
    post("api save invalid (400)", f"{API}{calibration.pk}/answers/", {"part": "main", "item_key": "amhart_02", "value": "perhaps"})
    post("api save locked (423)", f"{API}{main.pk}/answers/", {"part": "main", "item_key": "amhart_02", "value": "yes"})
    post("api submit refused (400)", f"{API}{calibration.pk}/submit/", {})
    answer_everything(calibration, clinician)
    post("api submit", f"{API}{calibration.pk}/submit/", {})
    get("locked page with calibration feedback", rate(calibration))
    post("api revise", f"{API}{calibration.pk}/revise/", {"changes": {"main": {"amhart_03": "no"}}, "reason": "second look"})
    post("revise refused page (400)", reverse("annotation:rate-revise", args=[calibration.pk]), {"part": "main", "item_key": "amhart_03", "value": "yes", "reason": ""}, as_json=False)
    get("api detail submitted", f"{API}{calibration.pk}/")
    get("flow rating page", rate(flow))
    post("api flow save", f"{API}{flow.pk}/answers/", {"part": "main", "item_key": "1", "value": "No", "note": "mine"})
    get("api flow detail", f"{API}{flow.pk}/")
    other = first_assignment(study, clinician2, calibration=True)
    get("other rater's assignment page (404)", rate(other))
    get("api other rater's assignment (404)", f"{API}{other.pk}/")
    return out


def test_no_rater_page_or_api_response_reveals_a_secret(responses):
    leaks = [
        f"{name} (HTTP {status}) contains {secret!r}"
        for name, (status, body) in responses.items()
        for secret in SECRETS
        if secret.casefold() in body.casefold()
    ]
    assert not leaks, "\n".join(leaks)


def test_the_blinding_check_covered_every_kind_of_answer(responses):
    statuses = {name: status for name, (status, _) in responses.items()}
    assert len(statuses) == 22
    assert {200, 400, 404, 409, 423} <= set(statuses.values()), statuses
    assert "ending your life" in responses["rating page"][1]  # messages are shown, of course
    assert "ending your life" in responses["api detail"][1]
