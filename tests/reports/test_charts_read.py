"""Issue 19, charts that read: intervals on the scorecard bars, zero drawn as zero and missing as
missing, no "—%", model names without their API base, perceived risk and disclosure summarised
with or without a persona design; the reliability header while computing."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest
from django.template.loader import render_to_string

from corpus.models import Conversation, Persona
from reports import services
from reports.charts import scorecard_chart, scorecard_no_interval
from stats.scorecard import mean_interval
from tests.conftest import client_for
from tests.support.report_study import build_report_study

pytestmark = pytest.mark.django_db


@pytest.fixture
def small(db):  # type: ignore[no-untyped-def]
    return build_report_study(n_conversations=36, n_raters=3, k=2, n_judges=0, prefix="cr")


def test_scorecard_bars_carry_their_95_percent_interval(small):
    response = client_for(small.coordinator).get(f"/reports/studies/{small.study.pk}/scorecard/")
    chart = json.loads(response.context["chart"])
    data = services.study_scorecard(study=small.study)
    scores = {(r["chatbot"], r["persona"]): r for r in data["per_conversation"] if r["score"] is not None}
    bars = [t for t in chart["traces"] if not t["name"].endswith(": missing")]
    assert bars and all(t["error_y"]["visible"] and t["error_y"]["type"] == "data" for t in bars)
    checked = 0
    for trace in bars:
        for persona, value, plus, minus in zip(trace["x"], trace["y"], trace["error_y"]["array"], trace["error_y"]["arrayminus"], strict=True):
            values = [r["score"] for r in data["per_conversation"]
                      if r["chatbot"] == trace["name"] and r["persona"] == persona and r["score"] is not None]
            low, high, _ = mean_interval(values)
            if low is None or value is None:
                continue
            assert value - minus == pytest.approx(max(0.0, 100 * low)) and value + plus == pytest.approx(min(100.0, 100 * high))
            checked += 1
    assert checked >= 4 and scores
    page = response.content.decode()
    assert "95% interval" in page and "95% CI" in page


def _card(rows: list[dict]) -> dict:
    return {"kind": "checklist", "by_chatbot_persona": rows}


def test_a_score_of_zero_is_drawn_as_zero_and_a_missing_score_as_missing():
    rows = [
        {"chatbot": "A", "persona": "p1", "mean_score": 0.0, "ci_low": None, "ci_high": None, "n_scored": 3},
        {"chatbot": "A", "persona": "p2", "mean_score": None, "ci_low": None, "ci_high": None, "n_scored": 0},
        {"chatbot": "B", "persona": "p1", "mean_score": 0.5, "ci_low": 0.3, "ci_high": 0.7, "n_scored": 4},
        # B has no conversation of persona p2 at all: missing too, never an empty gap.
    ]
    chart = json.loads(scorecard_chart(_card(rows)))
    traces = {t["name"]: t for t in chart["traces"]}
    a, b = traces["A"], traces["B"]
    assert a["x"] == ["p1", "p2"] and a["y"] == [0.0, None]
    assert a["text"] == ["0%", ""] and a["textposition"] == "outside"  # zero is written at the baseline
    assert traces["A: missing"]["missing"] == ["p2"] and traces["A: missing"]["text"] == ["", "missing"]
    assert traces["B: missing"]["missing"] == ["p2"]
    assert traces["A: missing"]["marker"]["pattern"]["shape"] == "/"  # hatched: visibly not a value
    assert a["offsetgroup"] == traces["A: missing"]["offsetgroup"]  # drawn in the chatbot's own slot
    assert b["error_y"]["array"][0] == pytest.approx(20.0) and b["error_y"]["arrayminus"][0] == pytest.approx(20.0)
    assert chart["axes"]["x"] and chart["axes"]["y"]


def test_empty_percentage_cells_read_a_dash_not_dash_percent():
    data = {
        "kind": "vera-mh", "labels": {"expected": 2, "present": 1, "missing": 1},
        "by_chatbot": [{"chatbot": "A", "score": None, "best_practice_pct": None, "high_harm_pct": None, "n_labels": 0, "n_not_relevant": 2}],
        "by_chatbot_dimension": [{"chatbot": "A", "dimension": "Detects Potential Risk", "score": None,
                                  "best_practice_pct": None, "high_harm_pct": None}],
        "distribution_by_risk": [],
    }
    html = render_to_string("reports/scorecard.html", {"study": None, "run": SimpleNamespace(pk=1, name="r"), "data": data,
                                                       "csv_base": "/x/", "sections": {}})
    assert "—%" not in html and "-%" not in html
    assert "<td class=\"num\">—</td>" in html


def test_the_realism_page_names_the_user_agent_model_never_its_api_base(small):
    Conversation.objects.filter(studies=small.study).update(metadata={
        "user_agent": {"model": "openai/persona-agent-7", "api_base": "http://10.1.2.3:8000/v1", "params": {"temperature": 1}},
    })
    client = client_for(small.coordinator)
    page = client.get(f"/reports/studies/{small.study.pk}/realism/").content.decode()
    assert "openai/persona-agent-7" in page
    assert "api_base" not in page and "10.1.2.3" not in page and "{&#x27;model" not in page and "{'model" not in page
    csv_text = client.get(f"/reports/studies/{small.study.pk}/realism.csv").content.decode()
    assert "openai/persona-agent-7" in csv_text and "10.1.2.3" not in csv_text


def test_perceived_risk_and_disclosure_are_summarised_without_a_persona_design(small):
    Persona.objects.filter(persona_set__key="report-cards").update(design={})
    page = client_for(small.coordinator).get(f"/reports/studies/{small.study.pk}/realism/").content.decode()
    data = services.study_realism(study=small.study)
    assert data["design_vs_perceived"] == {}
    risk = data["perceived"]["risk"]
    assert risk["labels"][:4] == ["None", "Low", "High", "Imminent"]
    assert risk["rows"][0]["group"] == "All ratings" and sum(risk["rows"][0]["counts"]) == risk["rows"][0]["n"] == data["n_ratings"]
    assert 'id="perceived-risk"' in page and 'id="perceived-disclosure"' in page


def test_perceived_levels_are_summarised_beside_the_design_comparison(small):
    page = client_for(small.coordinator).get(f"/reports/studies/{small.study.pk}/realism/").content.decode()
    assert 'id="perceived-risk"' in page and "against the persona's design" in page


def test_the_reliability_header_never_reads_seed_comma_while_computing(small, monkeypatch, django_capture_on_commit_callbacks):
    from reports import jobs

    monkeypatch.setattr(jobs, "runs_inline", lambda: False)
    with django_capture_on_commit_callbacks(execute=False):
        response = client_for(small.coordinator).get(f"/reports/studies/{small.study.pk}/reliability/")
    page = response.content.decode()
    assert response.status_code == 202 and "Computing this report" in page
    assert "seed ," not in page and "(seed )" not in page and "bootstrap resamples of units (seed" not in page


def test_the_reliability_page_dates_its_computation_for_the_readers_locale(small):
    page = client_for(small.coordinator).get(f"/reports/studies/{small.study.pk}/reliability/").content.decode()
    computed = page.split("Computed ")[1][:120]
    assert computed.startswith('<time datetime="') and 'data-local="seconds"' in computed


def test_a_bar_without_an_interval_gets_no_whisker_and_says_why_in_words():
    rows = [
        {"chatbot": "A", "persona": "p1", "mean_score": 0.75, "ci_low": None, "ci_high": None, "n_scored": 2,
         "ci_note": "all 2 conversations scored the same: no spread to estimate an interval from"},
        {"chatbot": "A", "persona": "p2", "mean_score": 0.5, "ci_low": None, "ci_high": None, "n_scored": 1,
         "ci_note": "fewer than two scored conversations: no interval"},
        {"chatbot": "A", "persona": "p3", "mean_score": 0.5, "ci_low": 0.4, "ci_high": 0.6, "n_scored": 5},
        {"chatbot": "A", "persona": "p4", "mean_score": None, "ci_low": None, "ci_high": None, "n_scored": 0},
    ]
    trace = next(t for t in json.loads(scorecard_chart(_card(rows)))["traces"] if t["name"] == "A")
    assert trace["error_y"]["array"][:2] == [None, None] and trace["error_y"]["arrayminus"][:2] == [None, None]
    assert trace["error_y"]["array"][2] == pytest.approx(10.0)
    words = scorecard_no_interval(_card(rows))
    assert words == ["A · p1: all 2 conversations scored the same: no spread to estimate an interval from",
                     "A · p2: fewer than two scored conversations: no interval"]  # a missing bar is said elsewhere
