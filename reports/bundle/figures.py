"""Every figure of a study, computed by the reports themselves: what a bundle ships and what its import must reproduce.

``study_figures`` asks each report of the study for its payload (computed now if the cache is
cold): inter-rater reliability at the study's N/A policy, the scorecard from the human
consensus, realism (with a rating section), rater drift and load, judges vs humans for every
judge run that labelled the study's conversations, the judge-assisted scores and the
leaderboard for the study's default run. ``figure_differences`` compares two such sets
number by number, to a number of decimal places, ignoring what legitimately changes between
two databases (row ids, cache stamps, software versions, the prose of methods paragraphs).
"""

from __future__ import annotations

import json
import math
from typing import Any

import reports.bundle.chart_layouts as chart_layouts
from annotation.models import Study
from judging.errors import JudgingError
from reports import selectors, services
from reports.charts import scorecard_chart

# Keys whose values are database ids or bookkeeping, never a figure: not compared.
IGNORED_KEYS = frozenset({
    "_cache", "methods", "study", "run", "job", "id", "pk", "run_id", "judge_id", "computed_at", "software",
    "created_at", "started_at", "seconds", "judge_run", "source_key", "sources", "source", "data_version",
})


def _runs(study: Study) -> list[Any]:
    """Return the study's judge runs, oldest first (the order a bundle imports them in)."""
    return list(selectors.judge_runs_for_study(study).order_by("pk"))


def _within_study(study: Study, run: Any) -> bool:
    """Return whether every conversation the run judged is one the study uses."""
    return not run.results.exclude(conversation_id__in=selectors.study_used_conversation_ids(study)).exists()


def study_figures(study: Study) -> dict[str, dict[str, Any]]:
    """Return ``{figure name: report payload}`` for every report of the study (see the module docstring).

    Judge runs are named by their position among the study's runs, oldest first (``judges_run1``),
    so two databases name the same run alike whatever its id.
    """
    from reports.judge_assisted import selectors as assisted_reads
    from reports.judge_assisted.services import judge_assisted_scorecard
    from reports.leaderboard.services import study_leaderboard
    from reports.raters.services import rater_drift

    figures: dict[str, dict[str, Any]] = {
        "reliability": services.study_reliability(study=study),
        "scorecard": services.study_scorecard(study=study),
        "rater_drift": rater_drift(study=study),
    }
    if study.section_id:
        figures["realism"] = services.study_realism(study=study)
    runs = _runs(study)
    for index, run in enumerate(runs, start=1):
        figures[f"judges_run{index}"] = services.study_judges_vs_humans(study=study, run_id=run.pk)
    default = assisted_reads.judge_run_for_study(study, None)
    if default is not None and not _within_study(study, default):
        # A run that also judged other studies' conversations: its judge-assisted scores and
        # leaderboard draw on them, so the bundle leaves them out (least privilege, issue 30).
        default = None
    if default is not None:
        try:
            figures["judge_assisted"] = judge_assisted_scorecard(study=study, run=default)
        except JudgingError as exc:
            figures["judge_assisted"] = {"error": str(exc)}
    figures["leaderboard"] = study_leaderboard(study=study, run=default, wait=True)
    return {name: json.loads(json.dumps(payload, default=str)) for name, payload in figures.items()}


def figure_charts(figures: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Return the plotly charts that can be built from the payloads: the pages' traces and, under ``layout``, their layout."""
    from reports.judge_assisted.views import chart_height, plot_data
    from reports.leaderboard.views import board

    charts: dict[str, Any] = {}
    card = scorecard_chart(figures.get("scorecard") or {})
    if card:
        chart = json.loads(card)
        charts["scorecard"] = {**chart, "layout": chart_layouts.scorecard_layout(chart)}
    assisted = figures.get("judge_assisted") or {}
    for score in dict.fromkeys(row["score"] for row in assisted.get("rows", [])):
        plot = plot_data(assisted, score)
        if plot:
            charts[f"judge_assisted_{score}"] = {**plot, "layout": chart_layouts.judge_assisted_layout(plot, chart_height(len(plot["chatbots"])))}
    leaderboard = figures.get("leaderboard") or {}
    if leaderboard.get("tables") and leaderboard.get("headline"):
        for stratum in dict.fromkeys(t["stratum"] for t in leaderboard["tables"]):
            shown = board(leaderboard, stratum, leaderboard["headline"])
            for name, height in (("scores_plot", "scores_height"), ("pairs_plot", "pairs_height")):
                if shown.get(name):
                    plot = json.loads(shown[name])
                    layout = chart_layouts.leaderboard_layout(plot, shown[height], pairs=name == "pairs_plot")
                    charts[f"leaderboard_{stratum}_{name}"] = {**plot, "layout": layout}
    return charts


def numeric_leaves(payload: Any, path: str = "") -> dict[str, float | None]:
    """Return every number (and every null where a number could be) of a payload by its path."""
    out: dict[str, float | None] = {}
    if isinstance(payload, dict):
        for key, value in payload.items():
            if key in IGNORED_KEYS:
                continue
            out.update(numeric_leaves(value, f"{path}/{key}"))
    elif isinstance(payload, list):
        for index, value in enumerate(payload):
            out.update(numeric_leaves(value, f"{path}[{index}]"))
    elif isinstance(payload, bool):
        out[path] = float(payload)
    elif isinstance(payload, int | float):
        out[path] = float(payload)
    elif payload is None:
        out[path] = None
    return out


def figure_differences(before: dict[str, dict[str, Any]], after: dict[str, dict[str, Any]], *, places: int = 4) -> list[str]:
    """Return every figure that differs between two sets of figures at ``places`` decimals (empty: the same).

    A figure present in one set and not the other is a difference; so is a number against a null.
    """
    problems: list[str] = []
    for name in sorted(set(before) | set(after)):
        if name not in before or name not in after:
            problems.append(f"{name}: only in the {'first' if name in before else 'second'} set")
            continue
        left, right = numeric_leaves(before[name]), numeric_leaves(after[name])
        for path in sorted(set(left) | set(right)):
            a, b = left.get(path, "absent"), right.get(path, "absent")
            if isinstance(a, float) and isinstance(b, float):
                if math.isnan(a) and math.isnan(b):
                    continue
                if round(a, places) != round(b, places) and abs(a - b) >= 0.5 * 10 ** -places:
                    problems.append(f"{name}{path}: {a!r} != {b!r}")
            elif a != b:
                problems.append(f"{name}{path}: {a!r} != {b!r}")
    return problems
