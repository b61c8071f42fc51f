"""Adjudication beside the transcript (issue 19, defect 3): the disputed items of a conversation in
one column, the transcript beside them and in view while the items scroll; stacked on a phone.
Screenshots: test-artifacts/adjudication-1366.png and adjudication-390.png."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotation.consensus.services import study_compute_consensus
from annotation.studies.services import study_assign
from tests.annotation.coordinator_setup import AMHART_KEYS, make_study, submit
from tests.browser.conftest import log_in, screenshot
from tests.conftest import PASSWORD
from tests.factories import ConversationFactory

pytestmark = pytest.mark.django_db(transaction=True)

TRANSCRIPT = [("user" if i % 2 == 0 else "assistant", f"Message {i + 1}: " + "I keep going over it in my head. " * 6)
              for i in range(12)]

BOXES = """() => { const r = s => document.querySelector(s).getBoundingClientRect();
  const t = r('#case-transcript .transcript-box'), f = r('#adjudicate-form');
  return {t: {left: t.left, right: t.right, top: t.top, bottom: t.bottom}, f: {left: f.left, right: f.right, top: f.top, bottom: f.bottom},
          wide: document.documentElement.scrollWidth, inner: document.documentElement.clientWidth,
          height: document.documentElement.scrollHeight, view: window.innerHeight}; }"""


def test_the_transcript_sits_beside_the_disputed_items_and_stays_in_view(page, coordinator, clinician, clinician2):
    conversation = ConversationFactory(messages=TRANSCRIPT, message_count=len(TRANSCRIPT))
    study = make_study(coordinator, [clinician, clinician2], n=1, k=2, conversations=[conversation])
    study_assign(study=study, actor=coordinator, seed=1)
    for a in study.assignments.all():
        first = a.rater == clinician
        submit(a, {key: ("yes" if first or n % 2 else "no") for n, key in enumerate(AMHART_KEYS[:12])},
               notes={"amhart_01": "named the feeling in message 2" if first else "only generic reassurance"})
    study_compute_consensus(study=study, actor=coordinator)
    log_in(page, coordinator.username, PASSWORD)
    url = reverse("annotation:study-adjudication", args=[study.pk]) + f"?conversation={conversation.pk}"

    page.set_viewport_size({"width": 1366, "height": 900})
    page.goto(url)
    assert page.locator(".adjudicate-item").count() == 6
    box = page.evaluate(BOXES)
    assert box["t"]["left"] >= box["f"]["right"], "the transcript should be beside the items"
    assert box["t"]["top"] < box["view"], "the transcript should be in view at the top of the case"
    screenshot(page, "adjudication-1366")
    page.evaluate("window.scrollTo(0, document.documentElement.scrollHeight)")
    box = page.evaluate(BOXES)
    assert 0 <= box["t"]["top"] < box["view"] and box["t"]["bottom"] > 200, "the transcript scrolled away with the items"
    assert page.locator("text=named the feeling in message 2").is_visible()

    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(url)
    box = page.evaluate(BOXES)
    assert box["wide"] <= box["inner"], "the phone page scrolls sideways"
    assert box["t"]["top"] >= box["f"]["bottom"], "on a phone the transcript follows the items"
    assert page.locator("a.to-transcript").is_visible()
    screenshot(page, "adjudication-390")
