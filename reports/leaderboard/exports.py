"""The leaderboard's CSV tables: every score, and every pair (long form, ready for R or Stata)."""

from __future__ import annotations

from typing import Any

from reports.leaderboard.tables import CONFIDENCE, METHOD_LABELS

SCORES_HEADER = [
    "stratum", "method", "method_label", "chatbot", "estimate", "ci_low", "ci_high", "confidence", "interval",
    "std_error", "lambda", "n_conversations", "n_rated", "n_clusters", "cannot_estimate", "note",
]
PAIRS_HEADER = [
    "stratum", "method", "method_label", "chatbot_a", "chatbot_b", "estimate_a", "estimate_b", "difference_a_minus_b",
    "ci_low", "ci_high", "confidence", "design", "design_note", "procedure", "n_clusters", "n_shared", "n_resamples",
    "n_undefined", "seed", "std_error", "df", "p_value", "p_holm", "alpha", "family_size", "decision", "verdict", "cannot_estimate",
]


def scores_csv_rows(payload: dict[str, Any]) -> list[list[Any]]:
    """Return one CSV row per stratum, method and chatbot (long form, ready for R or Stata)."""
    out = []
    for table in payload.get("tables", []):
        label = METHOD_LABELS.get(table["method"], table["method"])
        if table.get("error"):
            out.append([table["stratum"], table["method"], label, None, None, None, None, CONFIDENCE, None, None, None,
                        None, None, None, table["error"], None])
        for s in table["scores"]:
            out.append([table["stratum"], table["method"], label, s["chatbot"], s["estimate"], s["low"], s["high"],
                        CONFIDENCE, s["interval"], s["std_error"], s["lam"], s["n_conversations"], s["n_rated"],
                        s["n_clusters"], s["cannot_estimate"], s["note"]])
    return out


def pairs_csv_rows(payload: dict[str, Any]) -> list[list[Any]]:
    """Return one CSV row per stratum, method and pair of chatbots."""
    params = payload.get("parameters", {})
    out = []
    for table in payload.get("tables", []):
        label = METHOD_LABELS.get(table["method"], table["method"])
        for p in table["pairs"]:
            out.append([table["stratum"], table["method"], label, p["a"], p["b"], p["estimate_a"], p["estimate_b"],
                        p["difference"], p["low"], p["high"], p["confidence"], p["design"], p["design_note"],
                        p["procedure"], p["n_clusters"], p["n_shared"], p["n_resamples"], p["n_undefined"],
                        params.get("seed"), p.get("std_error"), p.get("df"), p["p_value"], p["p_adjusted"], params.get("alpha"), table["family_size"],
                        p["decision"], p["verdict"], p["cannot_estimate"]])
    return out
