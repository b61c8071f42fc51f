"""The methods paragraph of the inter-rater reliability report (``reports.reliability``)."""

from __future__ import annotations

import re
from typing import Any

from reports.methods.base import (
    PARAGRAPH,
    Methods,
    clause,
    count,
    listing,
    number,
    prose,
    quoted,
    seed_text,
    share,
    writes,
)
from reports.methods.references import cite

TITLE = "Inter-rater reliability"
EQUALS = (
    f"Fleiss' kappa equals statsmodels' fleiss_kappa ({cite('seabold2010')}) with the same number of raters per unit and "
    f"irrCAC's Fleiss coefficient ({cite('gwet2019irrcac')}, in its Python port: {cite('fergadis_irrcac')}) with varying "
    f"numbers, Krippendorff's alpha the krippendorff package ({cite('castro2017')}), Cohen's kappa scikit-learn's "
    f"cohen_kappa_score ({cite('pedregosa2011')}) and Gwet's AC1 irrCAC's AC1 (the same port), each to four decimals in "
    "evalsite's tests."
)
# Every work EQUALS cites: the paragraph lists them all among its references.
EQUALS_REFERENCES = ("seabold2010", "gwet2019irrcac", "fergadis_irrcac", "castro2017", "pedregosa2011")


def instrument_phrase(payload: dict[str, Any], n_items: int | None = None) -> str:
    """Return "the 14 items of the AMHART: ... instrument (version 1)" from the payload's ``instrument``."""
    instrument = payload.get("instrument") or {}
    unit = "dimensions" if instrument.get("kind") == "flow" else "items"
    counted = f"the {number(n_items)} {unit if n_items != 1 else unit[:-1]}" if n_items is not None else f"the {unit}"
    if not instrument.get("name"):
        return counted
    return f"{counted} of the instrument “{instrument['name']}” (version {instrument.get('version', 1)})"


def in_words_of(payload: dict[str, Any], sentences: list[str]) -> list[str]:
    """Return the sentences with "item" as "dimension" when the instrument is a question flow (VERA-MH)."""
    if (payload.get("instrument") or {}).get("kind") != "flow":
        return sentences
    return [re.sub(r"\bitem(s?)\b", r"dimension\1", s) for s in sentences]


def na_sentence(na: str, declared: list[str]) -> str:
    """Return how N/A answers were handled, naming the answers the instrument declares N/A."""
    names = f" ({quoted(declared)}, as the instrument declares them)" if declared else ""
    if na == "exclude":
        return (f"Not-applicable answers{names} were excluded before agreement was computed, so agreement is among "
                "applicable ratings (as AMHART reports it).")
    return f"Not-applicable answers{names} were kept as a category of their own."


def _level(group: dict[str, Any]) -> str:
    return "ordinal" if group.get("level") == "ordinal" else "nominal"


@writes("reliability")
def reliability(payload: dict[str, Any], params: dict[str, Any]) -> Methods:
    """Write what the reliability report computed: raters, units, coefficients, N/A, intervals."""
    main = payload.get("main") or {}
    groups = main.get("groups") or []
    items = main.get("items") or {}
    n_items = len(items) if items else (len(payload.get("items_info") or {}) or None)
    declared = list(dict.fromkeys(x for v in (payload.get("items_info") or {}).values() for x in v.get("na_labels", [])))
    na = payload.get("na_policy", "exclude")
    if payload.get("empty") or not groups:
        why = payload.get("empty") or "no ratings could be compared"
        return Methods(TITLE, f"No inter-rater reliability was computed for {instrument_phrase(payload, n_items)}: {clause(why)}.")
    per_conv = payload.get("raters_per_conversation") or {}
    spread = ""
    if per_conv.get("min") is not None:
        spread = (f" ({number(per_conv['min'])} raters per conversation)" if per_conv["min"] == per_conv["max"]
                  else f" ({number(per_conv['min'])} to {number(per_conv['max'])} raters per conversation, median {number(per_conv['median'])})")
    pairable = payload.get("n_conversations_pairable")
    sentences = [
        f"Inter-rater reliability was computed from {count(payload.get('n_ratings', 0), 'submitted item rating')} by "
        f"{count(payload.get('n_raters', 0), 'rater')} on {count(payload.get('n_conversations', 0), 'conversation')}{spread}, "
        f"for {instrument_phrase(payload, n_items)}; calibration conversations were left out"
        + (f", and so were the {count(payload['n_gold_ratings_excluded'], 'rating')} of gold conversations (known answers "
           "mixed into the raters' queues to check their attention)." if payload.get("n_gold_ratings_excluded") else ".")
        + (f" Agreement is measured on the {count(pairable, 'conversation')} rated by two or more raters."
           if pairable is not None else ""),
        na_sentence(na, declared),
    ]
    if payload.get("not_yet"):
        sentences.append(f"No coefficient could be computed yet: {payload['not_yet']}.")
        return Methods(TITLE, prose(in_words_of(payload, sentences)))
    sentences.append(PARAGRAPH)
    pooled_over = listing(
        f"the {count(len(g['items']), 'item')} with the labels {quoted(g['labels'])} ({_level(g)} level)" for g in groups
    )
    variants = payload.get("fleiss_variants") or {}
    varying = "gwet_2014_varying_raters" in variants
    fleiss = (
        "Fleiss' kappa with its observed (P0) and chance (Pe) agreement"
        + (f" ({cite('fleiss1971')}; for items whose conversations have different numbers of raters, the generalisation "
           f"of {cite('gwet2014')}: P0 over conversations rated at least twice, chance agreement over all rated ones)"
           if varying else f" ({cite('fleiss1971')})")
    )
    levels = {_level(g) for g in groups}
    alpha_level = ("at the nominal level of measurement" if levels == {"nominal"}
                   else "at the ordinal level for ordinal items (with the nominal alpha beside it) and the nominal level otherwise"
                   if "ordinal" in levels and "nominal" in levels else "at the ordinal level of measurement (with the nominal alpha beside it)")
    sentences.append(
        f"For each item, and pooled over {pooled_over} with each conversation–item pair a unit, we computed percent agreement "
        "(the share of agreeing rater pairs in a conversation, averaged over conversations rated at least twice), "
        f"{fleiss}, the mean of the pairwise Cohen's kappas ({cite('cohen1960')}), Krippendorff's alpha {alpha_level} "
        f"({cite('krippendorff2011')}), which tolerates missing ratings, and Gwet's AC1 ({cite('gwet2008')}), which stays "
        "stable when one label dominates."
    )
    boot = payload.get("bootstrap") or {}
    resamples = boot.get("resamples") or 0
    if resamples:
        pooled_how = ("whole conversations were resampled with all their items (a cluster bootstrap; "
                      f"{cite('davison1997', 'field2007')})" if boot.get("pooled_resampling") == "cluster"
                      else "conversation–item pairs were resampled")
        sentences.append(
            f"{share(boot.get('confidence', 0.95))} confidence intervals are percentile bootstrap intervals "
            f"({cite('efron1993')}) from {count(resamples, 'resample')} with {seed_text(boot.get('seed'))}: per item, "
            f"conversations were resampled; pooled, {pooled_how}. Resamples in which a coefficient was undefined were left "
            "out of its interval and counted."
        )
    else:
        sentences.append("No confidence intervals were computed (no bootstrap).")
    prevalence = payload.get("prevalence_warning")
    sentences.append(
        f"Items with Fleiss' kappa below {payload.get('threshold', 0.5):.2f} are flagged"
        + (f", as are items where one label makes up {share(prevalence)} or more of the ratings (kappa is misleading at "
           "that prevalence)." if prevalence else ".")
    )
    if resamples and payload.get("target_width"):
        sentences.append(
            f"How many more conversations rated by two or more raters would bring each interval to a width of "
            f"{payload['target_width']:.2f} was estimated from its bootstrap width, assuming the width shrinks as 1/√n."
        )
    sentences = in_words_of(payload, sentences)  # the study section below has items, whatever the instrument
    section = payload.get("section") or {}
    if section:
        ordinal = [k for k, v in section.items() if v.get("krippendorff_level") == "ordinal"]
        sentences.append(
            f"The {count(len(section), 'study-section item')} (answered by the raters beside the instrument) are described "
            "by percent agreement and Krippendorff's alpha"
            + (f", at the ordinal level for the 1–5 items ({number(len(ordinal))}) and the nominal level otherwise" if ordinal else "")
            + ", without intervals."
        )
    if payload.get("n_label_problems"):
        sentences.append(f"{count(payload['n_label_problems'], 'stored label')} that {'is' if payload['n_label_problems'] == 1 else 'are'} "
                         "not an answer of its item were left out.")
    return Methods(
        TITLE, prose(sentences),
        references=("fleiss1971", "cohen1960", "krippendorff2011", "gwet2008", "efron1993",
                    *(("gwet2014",) if varying else ()),
                    *(("davison1997", "field2007") if resamples and boot.get("pooled_resampling") == "cluster" else ()),
                    *EQUALS_REFERENCES),
        equals=EQUALS,
    )
