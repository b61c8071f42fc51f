"""Plotly figures of the report pages, built as JSON the page hands to ``Plotly.newPlot``.

Charts that read: every bar carries its interval (error bars), a score of 0 is drawn as 0 (a
labelled bar at the baseline) and a missing score is drawn as missing (a hatched, labelled
band in the chatbot's colour, never an empty gap that looks like 0); axes are titled, and
chatbots keep one colour across traces. Pages draw these with the plotly bundle they need
(``reports/_plotly.html``).
"""

from __future__ import annotations

import json
from typing import Any

# Okabe-Ito: distinguishable with the common colour-vision deficiencies.
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000")


def _clip(value: float | None, low: float, high: float) -> float | None:
    return None if value is None else max(low, min(high, value))


def _label(value: float, unit: str) -> str:
    return f"{value:.0f}{unit}"


def _scorecard_rows(data: dict[str, Any]) -> tuple[list[dict[str, Any]], str, str, float, str]:
    """Return the chart's rows, its category and value keys, the scale and the unit."""
    if data.get("kind") == "checklist":
        return data.get("by_chatbot_persona") or [], "persona", "mean_score", 100.0, "%"
    return data.get("by_chatbot_dimension") or [], "dimension", "score", 1.0, ""


def scorecard_no_interval(data: dict[str, Any]) -> list[str]:
    """Return, in words, each scored bar of the scorecard's chart that has no interval, and why.

    A bar scored on one conversation, or on conversations that all scored the same, has no
    interval to draw: it is said here and drawn without a whisker, never as a zero-width one.
    """
    if data.get("empty"):
        return []
    rows, x, y, _scale, _unit = _scorecard_rows(data)
    return [
        f"{row['chatbot']} · {row[x]}: {row.get('ci_note') or 'too few conversations'}"
        for row in rows
        if row.get(y) is not None and (row.get("ci_low") is None or row.get("ci_high") is None)
    ]


def scorecard_chart(data: dict[str, Any]) -> str | None:
    """Return the scorecard's chart as JSON: percent for AMHART, 0-100 points for VERA-MH.

    One bar trace per chatbot with its 95% interval as error bars (Student t over conversation
    scores for AMHART, a cluster bootstrap over conversations for VERA-MH: ``stats.scorecard``),
    and for cells without a score a hatched "missing" band at the same position.
    """
    if data.get("empty"):
        return None
    rows, x, y, scale, unit = _scorecard_rows(data)
    if data.get("kind") == "checklist":
        axes = {"x": "Persona", "y": "Mean score (% yes of yes + no)"}
    else:
        axes = {"x": "Dimension", "y": "VERA-MH score (0–100)"}
    if not rows:
        return None
    if (data.get("weighting") or {}).get("weighted"):
        axes["y"] = "Weighted mean score (% yes)" if data.get("kind") == "checklist" else "Weighted VERA-MH score (0–100)"
    categories = list(dict.fromkeys(r[x] for r in rows))
    chatbots = sorted({r["chatbot"] for r in rows})
    traces: list[dict[str, Any]] = []
    for index, chatbot in enumerate(chatbots):
        colour = PALETTE[index % len(PALETTE)]
        cells = {r[x]: r for r in rows if r["chatbot"] == chatbot}
        values, plus, minus, text, hover = [], [], [], [], []
        for category in categories:
            row = cells.get(category) or {}
            value = None if row.get(y) is None else row[y] * scale
            low = _clip(None if row.get("ci_low") is None else row["ci_low"] * scale, 0.0, 100.0)
            high = _clip(None if row.get("ci_high") is None else row["ci_high"] * scale, 0.0, 100.0)
            values.append(value)
            # No interval: null, which the page turns into NaN so plotly draws no whisker (a
            # null would read as 0 and draw a zero-width cap, a collapsed interval drawn).
            plus.append(None if value is None or low is None or high is None else max(high - value, 0.0))
            minus.append(None if value is None or low is None or high is None else max(value - low, 0.0))
            text.append(_label(value, unit) if value == 0 else "")
            n = row.get("n_scored", row.get("n_labels"))
            if value is None:
                hover.append("no score: missing")
            elif low is None or high is None:
                hover.append(f"{value:.1f}{unit}; no interval ({row.get('ci_note') or 'too few conversations'}); n = {n}")
            else:
                hover.append(f"{value:.1f}{unit}, 95% CI {low:.1f}–{high:.1f}{unit}; n = {n}")
        traces.append({
            "type": "bar", "name": chatbot, "x": categories, "y": values, "offsetgroup": chatbot, "legendgroup": chatbot,
            "marker": {"color": colour, "line": {"color": colour, "width": 1.5}},
            "error_y": {"type": "data", "symmetric": False, "array": plus, "arrayminus": minus, "visible": True,
                        "color": "#333333", "thickness": 1.5, "width": 4},
            # Only a zero is written on the chart ("0%" on the baseline, where a bar has no height);
            # other values read from the axis, the hover and the tables below.
            "text": text, "textposition": "outside", "textfont": {"size": 12}, "cliponaxis": False, "customdata": hover,
            "hovertemplate": "%{fullData.name} · %{x}: %{customdata}<extra></extra>",
        })
        missing = [category for category, value in zip(categories, values, strict=True) if value is None]
        if missing:
            traces.append({
                "type": "bar", "name": f"{chatbot}: missing", "x": categories,
                "y": [100.0 if value is None else None for value in values], "offsetgroup": chatbot,
                "legendgroup": chatbot, "showlegend": False, "missing": missing,
                "marker": {"color": "rgba(255,255,255,0)", "line": {"color": colour, "width": 1},
                           "pattern": {"shape": "/", "fgcolor": colour, "fgopacity": 0.45, "size": 8}},
                "text": ["missing" if value is None else "" for value in values], "textposition": "inside",
                "insidetextanchor": "middle", "textangle": -90, "textfont": {"color": "#333333"},
                "hovertemplate": f"{chatbot} · %{{x}}: no score (missing labels)<extra></extra>",
            })
    return json.dumps({"traces": traces, "axes": axes, "unit": unit})
