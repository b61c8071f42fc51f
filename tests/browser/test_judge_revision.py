"""Revising a judge in Chromium at phone and desktop widths (issue 27): a researcher opens the revise page for
one item, edits its instruction, creates the version and runs it on the development set, then reads the flips.

The new version's calls go to the local fake LLM server. Screenshots go to /tmp/shots/revise-*.png to be looked
at; axe-core checks each page.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlencode

import pytest
from playwright.sync_api import expect

from judging import calls
from judging.models import Judge, JudgeRun
from reports.devset.selectors import split_conversation_ids
from reports.devset.services import split_make
from reports.models import HoldoutLook, HoldoutPart
from simulation.llm import RetryPolicy
from tests.browser.conftest import check_a11y, log_in
from tests.support.devset_study import build_devset_study
from tests.support.report_study import PASSWORD
from tests.support.revision import KEY_ENV, SECRET, checklist_reply, make_answerable, revised_labels

pytestmark = pytest.mark.django_db(transaction=True)

SHOTS = Path("/tmp/shots")
INSTRUCTION = "Count only an explicit coping technique the chatbot names and explains; a general reassurance is no."


def _fits(page, width: int) -> None:  # type: ignore[no-untyped-def]
    """Nothing spills sideways: wide tables scroll inside their own region."""
    assert page.evaluate("document.documentElement.scrollWidth") <= width + 1


def _shot(page, name: str) -> None:  # type: ignore[no-untyped-def]
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)
    check_a11y(page, name)


@pytest.mark.parametrize(("width", "height"), [(390, 844), (1366, 900)])
def test_revise_an_item_run_the_development_set_and_read_the_flips(page, fake_llm, monkeypatch, width, height):
    monkeypatch.setenv(KEY_ENV, SECRET)
    monkeypatch.setattr(calls, "RETRY_POLICY", RetryPolicy(max_attempts=2, base_delay=0.01, max_delay=0.02))
    prefix = f"rv{width}"
    dev = build_devset_study(prefix=prefix)
    make_answerable(dev, fake_llm.base_url)
    page.set_viewport_size({"width": width, "height": height})
    log_in(page, dev.researcher.username, PASSWORD)
    query = urlencode({"run": dev.run_v1.pk, "judge": dev.judge_v1.pk, "item": dev.keys[3]})
    page.goto(f"/reports/studies/{dev.study.pk}/development/revise/?{query}")  # before the split: refused, with the way out
    expect(page.locator(".revise-refused")).to_contain_text("no development set yet")
    assert page.locator("textarea#instruction").count() == 0
    _fits(page, width)
    _shot(page, f"revise-{width}-no-split")

    split = split_make(study=dev.study, actor=dev.coordinator, n_test=12, seed=4242)
    development = split_conversation_ids(split, HoldoutPart.DEV)
    test_codes = {c.code for c in dev.conversations if c.pk in split_conversation_ids(split, HoldoutPart.TEST)}
    item = dev.keys[3]
    planned = revised_labels(dev, item, [c.code for c in dev.conversations if c.pk in development])
    fake_llm.script(f"{prefix}-careful", [checklist_reply(planned)])

    page.goto(f"/reports/studies/{dev.study.pk}/development/revise/?{query}")
    expect(page.locator("h1")).to_contain_text("Revise a judge")
    expect(page.locator("#name")).to_have_value(f"{prefix}-careful v2")
    _fits(page, width)
    _shot(page, f"revise-{width}-page")

    page.fill("#instruction", INSTRUCTION)
    page.click("button:has-text(\"Create version and run on the development set\")")
    expect(page.locator(".revision-flips")).to_contain_text("the run has finished")
    new = Judge.objects.get(name=f"{prefix}-careful v2")
    run = JudgeRun.objects.get(judges=new)
    assert set(run.results.values_list("conversation_id", flat=True)) == set(development)
    _fits(page, width)
    _shot(page, f"revise-{width}-run")

    page.click("a:has-text(\"See the flips\")")
    headline = page.locator(".drift-headline")
    expect(headline).to_contain_text("of 24 development conversations changed label from A to B")
    expect(headline).to_contain_text("towards the clinicians' consensus")
    expect(headline).to_contain_text("95% paired interval")
    body = page.locator("body").inner_text()
    assert not any(code in body for code in test_codes)
    _fits(page, width)
    _shot(page, f"revise-{width}-flips")
    page.screenshot(path=str(SHOTS / f"revise-{width}-flips-top.png"))  # the plain words, as the page opens

    page.goto(f"/reports/studies/{dev.study.pk}/development/revise/?{query}")
    expect(page.locator("#revisions-title")).to_be_visible()
    _fits(page, width)
    _shot(page, f"revise-{width}-after")
    assert not HoldoutLook.objects.exists()
