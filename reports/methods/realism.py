"""The methods paragraph of the realism report: realism ratings, and perceived vs designed risk and disclosure."""

from __future__ import annotations

from typing import Any

from reports.methods.base import Methods, count, listing, quoted, writes
from reports.methods.references import cite

TITLE = "Realism of the simulated users"
NAMES = {"risk": "perceived suicide risk", "disclosure": "perceived disclosure"}


@writes("realism")
def realism(payload: dict[str, Any], params: dict[str, Any]) -> Methods:
    """Write how realism was summarised and how perception was compared with the persona design."""
    rows = payload.get("realism") or []
    blocks = payload.get("design_vs_perceived") or {}
    n_ratings = payload.get("n_ratings", 0)
    if not rows and not blocks:
        return Methods(TITLE, f"No realism figure was computed: none of the {count(n_ratings, 'submitted rating')} "
                              "holds a realism, risk or disclosure answer of the study section that could be compared.")
    sentences = []
    if rows:
        n = max((r.get(k) or 0) for r in rows for k in ("realism_user_n", "realism_clinical_n"))
        sentences.append(
            "The raters' 1–5 ratings of the realism of the simulated user's communication and of its clinical presentation "
            f"are summarised by mean and standard deviation per user-agent model ({count(len(rows), 'model')}; up to "
            f"{count(n, 'rating')} per model and question), from {count(n_ratings, 'submitted rating')} of the study section."
        )
    if blocks:
        compared = [f"{NAMES.get(name, name)} ({quoted(block.get('labels', []))}; {count(block.get('n', 0), 'rating')})"
                    for name, block in blocks.items()]
        sentences.append(
            f"The raters' {listing(compared)} {'was' if len(compared) == 1 else 'were each'} compared with the level the "
            "persona was designed with: a confusion matrix (rows: design, columns: perception), percent agreement and "
            f"unweighted Cohen's kappa ({cite('cohen1960')})."
        )
        sentences.append("The design's levels were spelled as the rating form spells them before the comparison (e.g. "
                         "“Immediate” as “Imminent”, “Not applicable” as “N/A”).")
    return Methods(TITLE, " ".join(sentences), references=("cohen1960",) if blocks else ())
