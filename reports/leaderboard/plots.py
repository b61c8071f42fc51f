"""The leaderboard's charts: scores with their intervals side by side, and the pairs' differences.

An interval that cannot be estimated is never drawn as a point: it is listed in words under
the chart (as on the judge-assisted page). Intervals are drawn cut at the score's bounds.
"""

from __future__ import annotations

from typing import Any

from reports.templatetags.score_format import BOUNDS

COLOURS = {"judge_only": "#8a8f98", "human_only": "#c26a00", "ppi": "#1f5fa8", "ppi_tuned": "#2a8a4a"}
SYMBOLS = {"judge_only": "circle", "human_only": "square", "ppi": "diamond", "ppi_tuned": "triangle-up"}
DECISION_COLOURS = {"higher": "#1f5fa8", "no_difference": "#6b7079", "cannot_decide": "#b35c00"}
DECISION_NAMES = {"higher": "higher (Holm-adjusted)", "no_difference": "no difference shown",
                  "cannot_decide": "cannot decide yet"}


def _sentence(why: str) -> str:
    return why[0].upper() + why[1:] + ("" if why.endswith(".") else ".")


def scores_plot(chatbots: list[str], by_method: dict[str, dict[str, dict[str, Any]]], labels: dict[str, str],
                scale: str) -> dict[str, Any] | None:
    """Return plotly traces: per chatbot (in leaderboard order), each method's estimate and interval."""
    if not chatbots:
        return None
    lowest, highest = BOUNDS[scale]
    methods = list(by_method)
    traces, not_drawn = [], []
    for n, method in enumerate(methods):
        xs, ys, minus, plus, text = [], [], [], [], []
        for i, chatbot in enumerate(chatbots):
            est = by_method[method].get(chatbot)
            if not est:
                continue
            if est.get("estimate") is None or est.get("low") is None:
                why = est.get("cannot_estimate") or "no interval"
                not_drawn.append(f"{chatbot}, {labels[method]}: {_sentence(why)}")
                continue
            low, high = max(lowest, est["low"]), min(highest, est["high"])
            xs.append(est["estimate"])
            ys.append(i + (n - (len(methods) - 1) / 2) * 0.18)
            minus.append(max(0.0, est["estimate"] - low))
            plus.append(max(0.0, high - est["estimate"]))
            text.append(f"{labels[method]}: {est['estimate']:.3f} [{est['low']:.3f}, {est['high']:.3f}]")
        traces.append({
            "type": "scatter", "mode": "markers", "name": labels[method], "x": xs, "y": ys,
            "marker": {"color": COLOURS[method], "size": 9, "symbol": SYMBOLS[method]},
            "error_x": {"type": "data", "symmetric": False, "array": plus, "arrayminus": minus,
                        "color": COLOURS[method], "thickness": 2},
            "text": text, "hoverinfo": "text",
        })
    return {"traces": traces, "labels": chatbots, "scale": scale, "not_drawn": not_drawn}


def pairs_plot(pairs: list[dict[str, Any]], scale: str) -> dict[str, Any] | None:
    """Return plotly traces: each pair's difference A - B with its interval, coloured by the decision."""
    if not pairs:
        return None
    span = BOUNDS[scale][1] - BOUNDS[scale][0]
    labels = [f"{short(p['a'])} − {short(p['b'])}" for p in pairs]
    traces, not_drawn = [], []
    for decision, colour in DECISION_COLOURS.items():
        xs, ys, minus, plus, text = [], [], [], [], []
        for i, p in enumerate(pairs):
            if p["decision"] != decision:
                continue
            if p.get("difference") is None or p.get("low") is None:
                if decision == "no_difference" and p.get("difference") == 0:
                    why = p.get("cannot_estimate") or "no interval"
                else:
                    why = p.get("cannot_estimate") or p["verdict"]
                not_drawn.append(f"{p['a']} − {p['b']}: {_sentence(why)} Decision: {p['verdict']}.")
                continue
            low, high = max(-span, p["low"]), min(span, p["high"])
            xs.append(p["difference"])
            ys.append(i)
            minus.append(max(0.0, p["difference"] - low))
            plus.append(max(0.0, high - p["difference"]))
            text.append(f"{p['a']} − {p['b']}: {p['difference']:+.3f} [{p['low']:+.3f}, {p['high']:+.3f}]; {p['verdict']}")
        if xs:
            traces.append({
                "type": "scatter", "mode": "markers", "name": DECISION_NAMES[decision], "x": xs, "y": ys,
                "marker": {"color": colour, "size": 9, "symbol": "circle" if decision == "higher" else "circle-open"},
                "error_x": {"type": "data", "symmetric": False, "array": plus, "arrayminus": minus, "color": colour,
                            "thickness": 2},
                "text": text, "hoverinfo": "text",
            })
    return {"traces": traces, "labels": labels, "scale": scale, "not_drawn": not_drawn}


def short(chatbot: str) -> str:
    """Return a chatbot's code (what precedes " · model"), for narrow axis labels."""
    return chatbot.split(" · ")[0]
