"""The coordinator's day in Chromium (issue 28): the dashboard on the home page, the study page's
due date and the rater's queue with its due date, at 390, 768 and 1366 px, with axe and the
layout checks (no sideways scroll, every control inside its card)."""

from __future__ import annotations

import pytest
from django.core.management import call_command

from annotation.management.commands.seed_demo import DEMO_USERS
from annotation.models import Study
from tests.browser.conftest import fits, log_in, screenshot

WIDTHS = {"390": (390, 844), "768": (768, 1024), "1366": (1366, 900)}
PASSWORDS = {name: password for name, _, password in DEMO_USERS}


def controls_inside_their_boxes(page, box: str) -> None:  # type: ignore[no-untyped-def]
    """Every link, button and input of ``box`` lies inside it (or inside its scrolling table)."""
    outside = page.evaluate("""(selector) => {
      const out = [];
      for (const root of document.querySelectorAll(selector)) {
        const r = root.getBoundingClientRect();
        for (const c of root.querySelectorAll('a, button, input:not([type=hidden]), select')) {
          const scroller = c.closest('.table-scroll');
          const limit = scroller ? scroller.getBoundingClientRect() : r;
          const b = c.getBoundingClientRect();
          if (!scroller && (b.left < limit.left - 1 || b.right > limit.right + 1)) out.push(c.outerHTML.slice(0, 80));
        }
      }
      return out;
    }""", box)
    assert outside == [], outside


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("width", list(WIDTHS))
def test_the_coordinators_day_at_every_width(page, width):
    call_command("seed_demo", "--quiet-logins")
    page.set_viewport_size(dict(zip(("width", "height"), WIDTHS[width], strict=True)))
    log_in(page, "coordinator", PASSWORDS["coordinator"])
    page.goto("/")
    page.wait_for_selector("#dashboard")
    text = page.locator("#dashboard").inner_text()
    assert "Idle raters" in text and "flagged conversation" in text and "Due" in text
    assert page.locator("#dashboard .risk").count() >= 1  # the validation sample has a due date
    fits(page)
    controls_inside_their_boxes(page, "#dashboard")
    screenshot(page, f"coordinator-dashboard-{width}")
    plan = Study.objects.exclude(due_date=None).get()
    page.goto(f"/studies/{plan.pk}/")
    page.wait_for_selector("#due-date")
    fits(page)
    controls_inside_their_boxes(page, ".card")
    screenshot(page, f"study-due-date-{width}")
    page.context.clear_cookies()
    log_in(page, "clinician", PASSWORDS["clinician"])
    page.goto("/ratings/")
    page.wait_for_selector(".due-date")
    fits(page)
    screenshot(page, f"rater-queue-due-{width}")
