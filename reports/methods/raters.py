"""The methods paragraph of the rater drift and load report (``reports.raters``)."""

from __future__ import annotations

from typing import Any

from reports.methods.base import Methods, clause, count, number, seed_text, share, writes
from reports.methods.references import cite

TITLE = "Rater drift and load"
ORDER_WORDS = {"queue": "the order of their assigned queue", "submitted": "the order in which they submitted"}


@writes("rater_drift")
def rater_drift(payload: dict[str, Any], params: dict[str, Any]) -> Methods:
    """Write the leave-one-out consensus, the thirds and their bootstrap, sittings, and what lacks timing data."""
    if payload.get("empty"):
        return Methods(TITLE, f"No rater drift was computed: {clause(payload['empty'])}.")
    raters = payload.get("raters") or []
    overall = (payload.get("pooled") or {}).get("overall") or {}
    consensus = payload.get("consensus") or {}
    boot = payload.get("bootstrap") or {}
    timing = payload.get("timing") or {}
    sentences = [
        f"For each of {count(len(raters), 'rater')} ({count(overall.get('n_submitted', 0), 'submitted rating')}), every label was "
        f"compared with the leave-one-out consensus of the other raters of the same conversation and item: their modal "
        f"label, never including the rater's own answer. A tie among the others gives no consensus, nor does a "
        f"conversation item answered by fewer than {count(consensus.get('min_raters', 3), 'rater')}; those labels were left out "
        f"and counted ({number(overall.get('n_tie', 0))} ties, {number(overall.get('n_too_few_raters', 0))} with too few raters). "
        f"Agreement with that consensus is reported as percent agreement and Cohen's kappa ({cite('cohen1960')}), beside "
        "agreement with each other rater, pair by pair, which needs no consensus.",
    ]
    timed = [r for r in raters if r.get("timed")]
    if timing.get("n_timed"):
        resamples = boot.get("resamples") or 0
        sentences.append(
            f"Each rater's timed ratings were split into thirds (first, middle, last) by {ORDER_WORDS.get(payload.get('order'), payload.get('order'))}; "
            "per third we report agreement and the median and mean active time per conversation recorded by the rating page. "
            f"Last third minus first third carries a {share(boot.get('confidence', 0.95))} confidence interval "
            f"({boot.get('method', 'percentile bootstrap')}; {count(resamples, 'resample')}; {seed_text(boot.get('seed'))}, "
            f"one fixed stream per rater and comparison; {cite('efron1993')})."
        )
        sentences.append(
            f"Sittings were split at gaps of more than {count(payload.get('sitting_gap_minutes', 30), 'minute')} between "
            f"submissions and compared with the study's soft limit of {count(payload.get('sitting_limit') or 0, 'conversation')} "
            "per sitting."
        )
    if timing.get("n_untimed"):
        sentences.append(
            f"{count(timing['n_untimed'], 'rating')} {'was' if timing['n_untimed'] == 1 else 'were'} imported from a file without "
            "timing data (no order of rating, no time, no sittings): they count in each rater's overall agreement only, never "
            f"in the thirds, the drift or the load" + (f" ({count(len(raters) - len(timed), 'rater')} without any timed rating)" if len(timed) < len(raters) else "")
            + "."
        )
    return Methods(TITLE, " ".join(sentences), references=("cohen1960", "efron1993") if timing.get("n_timed") else ("cohen1960",))
