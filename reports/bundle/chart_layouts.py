"""The plotly layout of each chart of a publication bundle: the report page's own, at its desktop width.

The pages build their layouts in their templates' scripts (``reports/scorecard.html``,
``reports/judge_assisted.html``, ``reports/leaderboard.html``), with narrower variants for
phones. A bundle's chart has no page around it, so its layout goes into its plotly JSON and
draws the chart, and its images, as the page draws it at a desktop's width: same axis titles,
tick formats, ranges, legend and height. ``tests/reports/test_bundle_images.py`` checks the axis
titles here are the pages' words.
"""

from __future__ import annotations

from typing import Any

# The width the images are drawn at: a report page's chart on a desktop.
WIDTH = 1000


# Above the plot: below it, a fixed fraction of the height lands on the axis title of a short chart.
LEGEND_ABOVE = {"orientation": "h", "x": 0, "y": 1, "yanchor": "bottom"}


def scorecard_layout(chart: dict[str, Any]) -> dict[str, Any]:
    """Return the scorecard page's layout (grouped bars, 0-100 axis, chatbot legend below)."""
    return {
        "width": WIDTH, "height": 480, "barmode": "group", "margin": {"t": 28, "r": 10},
        "xaxis": {"title": {"text": chart["axes"]["x"]}, "automargin": True},
        "yaxis": {"title": {"text": chart["axes"]["y"]}, "range": [0, 100], "automargin": True},
        "legend": {"title": {"text": "Chatbot"}, "orientation": "h", "x": 0, "y": -0.22, "yanchor": "top"},
    }


def _categories(labels: list[str]) -> dict[str, Any]:
    """Return a y axis with one row per label, the first at the top (the pages' estimate plots)."""
    return {"tickvals": list(range(len(labels))), "ticktext": labels, "automargin": True, "autorange": False,
            "range": [len(labels) - 0.4, -0.6], "zeroline": False, "showgrid": False}


def judge_assisted_layout(chart: dict[str, Any], height: int) -> dict[str, Any]:
    """Return the judge-assisted page's layout: each chatbot's estimates by method, with their intervals."""
    share = chart.get("scale") == "share"
    title = "Score: share of applicable items answered yes (95% interval)" if share else "Score, 0-100 points (95% interval)"
    return {
        "width": WIDTH, "height": height, "margin": {"t": 40, "l": 20, "r": 20, "b": 50},
        "xaxis": {"title": {"text": title}, "tickformat": ".0%" if share else "", "zeroline": False},
        "yaxis": {"title": {"text": "Chatbot"}, **_categories(chart.get("chatbots") or [])},
        "legend": LEGEND_ABOVE,
    }


def leaderboard_layout(chart: dict[str, Any], height: int, *, pairs: bool) -> dict[str, Any]:
    """Return the leaderboard page's layout of its scores plot, or of its pairs plot (differences, zero line drawn)."""
    share = chart.get("scale") == "share"
    if pairs:
        title = ("Difference, first minus second (percentage points, 95% interval)" if share
                 else "Difference, first minus second (points, 95% interval)")
    else:
        title = "Score: share of applicable items answered yes (95% interval)" if share else "Score, 0-100 points (95% interval)"
    return {
        "width": WIDTH, "height": height, "margin": {"t": 40, "l": 20, "r": 20, "b": 50},
        "xaxis": {"title": {"text": title}, "tickformat": ("+.0%" if pairs else ".0%") if share else "", "zeroline": pairs,
                  "zerolinewidth": 2},
        "yaxis": _categories(chart.get("labels") or []),
        "legend": LEGEND_ABOVE,
    }


def image_figure(chart: dict[str, Any]) -> dict[str, Any]:
    """Return a bundle chart as the plotly figure its images are drawn from: ``{"data": traces, "layout": layout}``.

    An error bar's null (no interval) becomes ``"NaN"``, which plotly reads as "no whisker" as
    the pages' NaN (JSON has no NaN; a null would be read as 0 and draw a zero-width whisker).
    """
    data = []
    for trace in chart.get("traces") or []:
        trace = dict(trace)
        for key in ("error_x", "error_y"):
            if isinstance(trace.get(key), dict):
                bars = dict(trace[key])
                for side in ("array", "arrayminus"):
                    if isinstance(bars.get(side), list):
                        bars[side] = ["NaN" if value is None else value for value in bars[side]]
                trace[key] = bars
        data.append(trace)
    return {"data": data, "layout": chart["layout"]}
