"""The methods paragraph of an active sampling study: how its conversations were drawn and the score estimated.

Written from the study's own state (the parameters, batches and estimates the page, the API and
the CSV show), ready to paste into a paper, with the references it cites. It counts chatbots
and conversations and never names a chatbot, a model, a provider, a judge or a rater. (The
report pages' paragraphs live in ``reports.methods``; this page belongs to the coordinators'
layer below it, so it writes its own, in the same form: ``title``, ``text``, ``references``.)
"""

from __future__ import annotations

from typing import Any

from annotation.sampling.active.state import ActiveState

TITLE = "Active sampling for human review"
REFERENCES = {
    "zrnic2024": "Zrnic, T., & Candès, E. J. (2024). Active statistical inference. Proceedings of the 41st International "
                 "Conference on Machine Learning (ICML). arXiv:2403.03208",
    "hall1980": "Hall, P., & Heyde, C. C. (1980). Martingale limit theory and its application. Academic Press.",
    "chow1965": "Chow, Y. S., & Robbins, H. (1965). On the asymptotic theory of fixed-width sequential confidence "
                "intervals for the mean. The Annals of Mathematical Statistics, 36(2), 457–462.",
}


def _number(value: float | None, points: bool) -> str:
    if value is None:
        return "not estimable"
    return f"{value:.1f}" if points else f"{value:.3f}"


def active_methods(state: ActiveState) -> dict[str, Any]:
    """Return ``{"title", "text", "references"}``: the design, the estimator and where the study stands."""
    p = state.parameters()
    points = state.population.instrument == "vera_mh"
    pooled = state.pooled.estimate
    n_batches = len(state.batches)
    taus = ", ".join(f"{b.batch.tau:.2f}" for b in state.batches) or "none yet"
    sentences = [
        f"Conversations for clinician review were drawn by active sampling (Zrnic & Candès, 2024) from a judge run of "
        f"{p['population']} conversations ({len(state.groups)} chatbot{'s' if len(state.groups) != 1 else ''}), scored on the "
        f"{p['score_label']}.",
        f"The conversations were visited in a random order (seed {p['seed']}), {p['visit_size']} per batch; each visited "
        f"conversation was sent for rating independently (Poisson sampling) with a probability that grew with the judges' "
        f"uncertainty about it ({str(p['uncertainty_label']).lower()}), mixed with uniform sampling at a share τ of at least "
        f"{p['floor']:.2f} (τ started at {p['tau_start']:.2f} and was re-tuned on the ratings of earlier batches once "
        f"{p['tau_tuned_after']} were available), capped at 1, for an expected {p['batch_size']} ratings per batch within a "
        f"budget of {p['budget']}. Every inclusion probability and draw was recorded.",
        f"{n_batches} batch{'es' if n_batches != 1 else ''} were drawn (τ per batch: {taus}; batch seeds "
        f"{', '.join(str(s) for s in p['batch_seeds']) or 'none yet'}); {state.n_visited} conversations were visited, "
        f"{state.n_selected} drawn and {state.n_rated} rated with a final consensus.",
        "Each score was estimated by the active inference estimator: the judges' score plus the clinician-minus-judge "
        "correction on the rated conversations weighted by the inverse of their inclusion probabilities, unbiased "
        "whatever the judges get wrong, with a normal "
        f"{p['confidence']:.0%} interval valid batch after batch, since each batch's probabilities depended only on earlier "
        "batches (a martingale central limit theorem; Hall & Heyde, 1980).",
        f"Sampling was to stop once the interval of the {'pooled score' if p['stop_on'] == 'pooled' else 'score of every chatbot'} "
        f"was at most {_number(p['target_width'], points)} wide with at least {p['min_rated_to_stop']} rated conversations "
        "behind it (a fixed-width sequential rule; Chow & Robbins, 1965), or once the budget was spent.",
        f"Over all chatbots the estimate is {_number(pooled.estimate, points)}"
        + ("" if pooled.low is None else f" ({p['confidence']:.0%} interval {_number(pooled.low, points)} to "
           f"{_number(pooled.high, points)}, width {_number(pooled.width, points)})") + ".",
    ]
    return {"title": TITLE, "text": " ".join(sentences), "references": [{"key": k, "citation": v} for k, v in REFERENCES.items()]}
