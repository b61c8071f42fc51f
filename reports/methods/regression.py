"""The methods paragraph of the item-level regression on a judge run's scorecard (``stats.regression``).

The payload's formula names the reference level of every factor, a chatbot's among them (its
model name): the paragraph writes the model from the factor names instead, and says a dropped
factor had a single level without naming it.
"""

from __future__ import annotations

from typing import Any

from reports.methods.base import Methods, clause, count, listing, writes
from reports.methods.references import cite

TITLE = "Item-level regression"
RANDOM_WORDS = {"item": "item", "run": "conversation index (run index)"}


def _model(payload: dict[str, Any]) -> str:
    """Return the model in formula notation from its terms, with lme4-style random intercepts."""
    terms = list(payload.get("fixed_effects") or [])
    if payload.get("method") == "cluster_robust" and "C(item)" in str(payload.get("formula", "")):
        terms.append("item")
    terms += [f"(1 | {RANDOM_WORDS.get(r, r).split(' (')[0]})" for r in payload.get("random_intercepts") or []]
    return "passed ~ " + (" + ".join(terms) if terms else "1")


def _dropped(payload: dict[str, Any]) -> str:
    parts = []
    for d in payload.get("dropped") or []:
        reason = str(d.get("reason", ""))
        # "a single level (CB-A · vendor/model)": the level may be a chatbot's model name.
        reason = "it has a single level" if reason.startswith("a single level") else reason
        parts.append(f"the {d.get('kind', 'term')} for {RANDOM_WORDS.get(d.get('term'), d.get('term'))}: {reason}")
    return "; ".join(parts)


def _references(levels: dict[str, str]) -> str:
    named = [f"{factor} = {level}" for factor, level in levels.items() if factor != "chatbot"]
    if "chatbot" in levels:
        named.append("chatbot = the chatbot each odds ratio is compared with (“vs …” in the table)")
    return listing(named)


def _chatbots(payload: dict[str, Any]) -> list[str]:
    """Return the chatbot levels the payload names (odds-ratio terms, reference level), longest first."""
    names = {str((payload.get("reference_levels") or {}).get("chatbot") or "")}
    for term in payload.get("terms") or []:
        name = str(term.get("term", ""))
        if name.startswith("chatbot: "):
            level, _, ref = name[len("chatbot: "):].partition(" (vs ")
            names |= {level, ref.rstrip(")")}
    return sorted((n for n in names if n), key=len, reverse=True)


def _redact(text: str, chatbots: list[str]) -> str:
    """Return the text with every chatbot level (a model name) replaced by "a chatbot"."""
    for name in chatbots:
        text = text.replace(f"chatbot {name}", "a chatbot").replace(name, "a chatbot")
    return text


@writes("run-regression")
def regression(payload: dict[str, Any], params: dict[str, Any]) -> Methods:
    """Write the model fitted (not the model planned), its estimator, optimizer, standard errors and sample."""
    run = payload.get("run", params.get("run"))
    robust = payload.get("method") == "cluster_robust"
    if payload.get("empty") or payload.get("error"):
        why = payload.get("empty") or "the data cannot support the model (the page gives the reason)"
        return Methods(TITLE, f"No regression was fitted on the ensemble labels of judge run #{run}: {clause(why)}.")
    sentences = [
        f"Following AMHART, each yes/no ensemble label of judge run #{run} was modelled as an item passed (yes) or failed "
        f"(no): {count(payload.get('n_observations', 0), 'label')}"
        + (f" from {count(payload['n_clusters'], 'conversation')}" if payload.get("n_clusters") else "")
        + (f"; {count(payload['n_excluded_na'], 'not-applicable label')} {'was' if payload['n_excluded_na'] == 1 else 'were'} excluded"
           if payload.get("n_excluded_na") else "")
        + ".",
        f"The model fitted, {_model(payload)}, was a {payload.get('description', '')}.",
    ]
    dropped = _dropped(payload)
    if dropped:
        sentences.append(f"Left out of the planned model: {dropped}.")
    if payload.get("reference_levels"):
        sentences.append(f"Reference levels: {_references(payload['reference_levels'])}.")
    sentences.append(f"Estimation: {str(payload.get('estimator', '')).rstrip('.')}.")
    optimizer = payload.get("optimizer") or {}
    if optimizer.get("used"):
        settings = ", ".join(f"{k} {v}" for k, v in optimizer.items() if k in ("xtol", "gtol", "maxiter"))
        converged = ("it converged" if payload.get("converged") else "it did not converge (read the estimates with care)")
        gradient = payload.get("gradient_norm")
        sentences.append(
            f"The optimizer was {optimizer['used']} ({settings}) from {optimizer.get('start', 'fixed starting values')}, so "
            f"refits give the same estimates; {converged}"
            + (f", gradient norm {gradient:.2g}" if gradient is not None else "") + "."
        )
    sentences.append("Odds ratios are the exponentiated coefficients, each adjusted for the other terms of the model.")
    warnings = [_redact(str(w), _chatbots(payload)) for w in payload.get("warnings") or []]
    if warnings:
        sentences.append(f"Caveats: {'; '.join(warnings)}.")
    refs: tuple[str, ...] = ("seabold2010",)
    if robust:
        sentences.append(f"Cluster-robust (sandwich) standard errors: {cite('liang1986', 'cameron2015')}.")
        refs += ("liang1986", "cameron2015")
    return Methods(TITLE, " ".join(sentences), references=refs,
                   equals=f"The model is fitted by statsmodels itself ({cite('seabold2010')}); evalsite prepares the data and reads the fit.")
