"""Inter-rater reliability of a study: per item, pooled over items that share a label set.

Every label goes through the instrument's normaliser (``corpus.instruments.labels``) and its
declared N/A answers (VERA-MH: Not Relevant), so the N/A policy means what the page says:
``exclude`` drops them, ``category`` keeps them as a category of their own. Items are pooled
only with items of the same label set (yes/no items with yes/no items, N/A aside), because a
pooled kappa over yes/no and 1-5 items mixes categories that mean different things.
"""

from __future__ import annotations

import json
import shlex
import statistics
from collections import defaultdict
from collections.abc import Sequence
from itertools import combinations
from typing import Any

from django.conf import settings

from annotation.consensus.services import consensus_labels_of
from annotation.gold import gold_rating_count
from annotation.models import Study
from corpus.instruments.labels import ItemLabels, UnknownAnswer
from reports import selectors
from reports.jobs import Progress
from reports.methods.facts import instrument_facts
from stats import agreement_report, reference_agreement
from stats.report import DEFAULT_POOLED_RESAMPLING, DEFAULT_RESAMPLES, DEFAULT_SEED

# The statistics package's defaults, so the page, the API, the zip and `python -m stats` agree;
# the seed is fixed: the same data always gives the same intervals.
BOOTSTRAP_RESAMPLES = DEFAULT_RESAMPLES
BOOTSTRAP_SEED = DEFAULT_SEED
PREVALENCE_WARNING = 0.85

Row = tuple[str, str, str, str]


def target_width() -> float:
    """Return the interval width precision planning aims at (setting ``REPORT_TARGET_WIDTH``)."""
    return float(getattr(settings, "REPORT_TARGET_WIDTH", 0.10))


def normalise_rows(rows: Sequence[Row], labels: dict[str, ItemLabels]) -> tuple[list[Row], list[str]]:
    """Return the rows in each item's own spelling, and a problem per label the item lacks.

    Rows of items not in ``labels`` (free text, another instrument's keys) are left out.
    """
    out: list[Row] = []
    problems: list[str] = []
    for unit, rater, item, label in rows:
        spec = labels.get(item)
        if spec is None or spec.is_text:
            continue
        try:
            clean = spec.normalise(label)
        except UnknownAnswer as exc:
            problems.append(f"conversation {unit}, rater {rater}: {exc}")
            continue
        if clean is not None:
            out.append((unit, rater, item, clean))
    return out, problems


def label_groups(labels: dict[str, ItemLabels], present: set[str]) -> list[list[str]]:
    """Return the items present, grouped by label set (N/A aside), groups in form order."""
    groups: dict[tuple[str, ...], list[str]] = {}
    for key, spec in labels.items():
        if key in present:
            groups.setdefault((spec.scale == "ordinal_1_5", *[x.casefold() for x in spec.substantive]), []).append(key)
    return list(groups.values())


def group_order(keys: Sequence[str], labels: dict[str, ItemLabels]) -> list[str]:
    """Return the label order of a group: the substantive labels, then every N/A answer."""
    first = labels[keys[0]]
    na = [x for k in keys for x in labels[k].na_labels]
    return list(dict.fromkeys([*first.substantive, *na]))


def na_arguments(keys: Sequence[str], labels: dict[str, ItemLabels], na: str) -> dict[str, tuple[str, ...]]:
    """Return the per-item N/A declaration for the statistics.

    Excluded, the declared answers are dropped (and counted); as a category, none is mapped to
    the "N/A" token, so "Not Relevant" keeps its name on the page.
    """
    return {k: (labels[k].na_labels if na == "exclude" else ()) for k in keys}


def _flags(item: dict[str, Any], threshold: float) -> list[str]:
    flags = []
    kappa = item.get("fleiss_kappa")
    if kappa is not None and kappa < threshold:
        flags.append(f"κ below the study threshold {threshold:.2f}")
    rates = item.get("base_rates") or {}
    if rates and max(rates.values()) >= PREVALENCE_WARNING and item.get("n_units_pairable"):
        top = max(rates, key=rates.get)
        flags.append(f"'{top}' is {rates[top]:.0%} of ratings: κ is misleading at this prevalence, read AC1 and agreement")
    return flags


def compute_reliability(study: Study, na: str, bootstrap: int, progress: Progress) -> dict[str, Any]:
    """Return the reliability payload of a study (see ``reports.services.study_reliability``)."""
    labels = {k: v for k, v in consensus_labels_of(study).items() if not k.startswith("section:")}
    raw = selectors.study_ratings_long(study, part="main")
    rows, problems = normalise_rows(raw, labels)
    width = target_width()
    payload: dict[str, Any] = {
        "study": study.pk,
        "na_policy": na,
        "threshold": study.reliability_threshold,
        "n_ratings": len(rows),
        "n_raters": len({r[1] for r in rows}),
        "n_conversations": len({r[0] for r in rows}),
        # Gold conversations' ratings (known answers, a quality check in the queues) are not read.
        "n_gold_ratings_excluded": gold_rating_count(study),
        **_raters_per_conversation(rows),
        "instrument": instrument_facts(study.instrument),
        "prevalence_warning": PREVALENCE_WARNING,
        "target_width": width,
        "label_problems": problems[:50],
        "n_label_problems": len(problems),
        "items_info": {
            k: {"text": v.text, "number": v.number, "labels": list(v.labels), "na_labels": list(v.na_labels)}
            for k, v in labels.items()
            if not v.is_text
        },
        "bootstrap": {"resamples": bootstrap, "seed": BOOTSTRAP_SEED, "confidence": 0.95,
                      "pooled_resampling": DEFAULT_POOLED_RESAMPLING},
    }
    if not rows:
        payload["empty"] = "No submitted ratings yet."
        return payload
    groups = label_groups(labels, {r[2] for r in rows})
    main: dict[str, Any] = {"groups": [], "items": {}}
    for index, keys in enumerate(groups):
        progress(0.05 + 0.7 * index / len(groups), f"agreement and bootstrap intervals: items {', '.join(keys[:3])}{'…' if len(keys) > 3 else ''}")
        level = "ordinal" if labels[keys[0]].level == "ordinal" else "nominal"
        # Per item, each item's own scale (Gwet's AC1 counts its categories: yes/no is 2,
        # yes/no/N/A 3); pooled, the group's labels. One call when every item has the same scale.
        scales: dict[tuple[str, ...], list[str]] = {}
        for key in keys:
            scale = labels[key].substantive if na == "exclude" else labels[key].labels
            scales.setdefault(tuple(x.casefold() for x in scale), []).append(key)
        reports = [_report(rows, sub, labels, level, na, bootstrap, width) for sub in scales.values()]
        pooled = reports[0]["pooled"] if len(scales) == 1 else _report(rows, keys, labels, level, na, bootstrap, width)["pooled"]
        pooled["flags"] = _flags(pooled, study.reliability_threshold)
        main["groups"].append({"labels": list(labels[keys[0]].substantive), "items": keys, "level": level, "pooled": pooled})
        for data in reports:
            for key, item in data["items"].items():
                item["flags"] = _flags(item, study.reliability_threshold)
                item["group"] = index
                main["items"][key] = item
            for name in ("interval_method", "interval_method_label", "pooled_resampling"):
                payload.setdefault(name, data[name])
    main["items"] = {k: main["items"][k] for k in labels if k in main["items"]}
    if len(main["groups"]) == 1:
        main["pooled"] = main["groups"][0]["pooled"]
    payload["main"] = main
    payload["fleiss_variants"] = _variants(main)
    pairable = sum(g["pooled"]["n_units_pairable"] for g in main["groups"])
    if not pairable:
        payload["not_yet"] = _why_not_yet(rows)
    progress(0.8, "agreement of each rater pair and with the consensus")
    payload["raters"] = _rater_stats(study, rows, labels, na)
    progress(0.9, "study section")
    payload["section"] = _section(study, na)
    return payload


def _raters_per_conversation(rows: list[Row]) -> dict[str, Any]:
    """Return how many raters rated each conversation (min, median, max) and how many had two or more."""
    raters: dict[str, set[str]] = defaultdict(set)
    for unit, rater, _, _ in rows:
        raters[unit].add(rater)
    sizes = sorted(len(r) for r in raters.values())
    median = statistics.median(sizes) if sizes else None
    spread = {"min": sizes[0], "median": int(median) if float(median).is_integer() else median, "max": sizes[-1]} if sizes else {}
    return {"n_conversations_pairable": sum(1 for n in sizes if n >= 2), "raters_per_conversation": spread}


def _why_not_yet(rows: list[Row]) -> str:
    """Return why no coefficient exists yet, counting ratings as raters see them (one form each)."""
    forms = {(unit, rater) for unit, rater, _, _ in rows}
    raters = {rater for _, rater in forms}
    need = "reliability needs at least 2 raters on a conversation"
    if len(forms) == 1:
        return f"1 rating so far: {need}"
    if len(raters) == 1:
        return f"{len(forms)} ratings so far, all by one rater: {need}"
    return f"{len(forms)} ratings from {len(raters)} raters so far, but no conversation has two of them: {need}"


def _report(rows: list[Row], keys: list[str], labels: dict[str, ItemLabels], level: str, na: str, bootstrap: int, width: float) -> dict[str, Any]:
    wanted = set(keys)
    report = agreement_report(
        [r for r in rows if r[2] in wanted], level=level, na=na,  # type: ignore[arg-type]
        na_labels=na_arguments(keys, labels, na), canonical={k: labels[k].labels for k in keys},
        order=group_order(keys, labels), bootstrap=bootstrap, seed=BOOTSTRAP_SEED, target_width=width,
        pooled_resampling=DEFAULT_POOLED_RESAMPLING,
    )
    return report.as_dict()


def _variants(main: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Return which Fleiss variant each item used: {variant: {"label", "items"}}."""
    out: dict[str, dict[str, Any]] = {}
    for key, item in main["items"].items():
        variant = item.get("fleiss_variant")
        if variant:
            out.setdefault(variant, {"label": item.get("fleiss_variant_label"), "items": []})["items"].append(key)
    return out


def _pair_agreement(rows: Sequence[Row], na_labels: dict[str, tuple[str, ...]], na: str) -> dict[tuple[str, str], tuple[int, int]]:
    """Return (agreements, shared labels) of each pair of raters over every (conversation, item)."""
    by_rater: dict[str, dict[tuple[str, str], str]] = defaultdict(dict)
    for unit, rater, item, label in rows:
        if na == "exclude" and label in na_labels.get(item, ()):
            continue
        by_rater[rater][(unit, item)] = label
    out = {}
    for a, b in combinations(sorted(by_rater), 2):
        shared = by_rater[a].keys() & by_rater[b].keys()
        out[(a, b)] = (sum(by_rater[a][k] == by_rater[b][k] for k in shared), len(shared))
    return out


def _rater_stats(study: Study, rows: list[Row], labels: dict[str, ItemLabels], na: str) -> dict[str, Any]:
    """Return per-rater agreement with the others, with the consensus, and time per conversation."""
    names = sorted({r[1] for r in rows})
    pairs = _pair_agreement(rows, {k: v.na_labels for k, v in labels.items()}, na)
    matrix: dict[str, dict[str, float | None]] = {a: dict.fromkeys(names) for a in names}
    shared: dict[str, dict[str, int]] = {a: dict.fromkeys(names, 0) for a in names}
    agree: dict[str, list[int]] = {n: [0, 0] for n in names}
    for (a, b), (k, n) in pairs.items():
        shared[a][b] = shared[b][a] = n
        if n:
            matrix[a][b] = matrix[b][a] = k / n
            for name in (a, b):
                agree[name][0] += k
                agree[name][1] += n
    consensus = {key: v for key, v in selectors.study_consensus_map(study).items() if key[1] in labels}
    vs_consensus = {}
    if consensus:
        cleaned = {}
        for (unit, item), label in consensus.items():
            try:
                cleaned[(unit, item)] = labels[item].normalise(label)
            except UnknownAnswer:
                continue
        na_map = {k: (v.na_labels if na == "exclude" else ()) for k, v in labels.items()}
        comparison = reference_agreement(rows, cleaned, na=na, na_labels=na_map)  # type: ignore[arg-type]
        for c in comparison.pooled:
            vs_consensus[str(c.rater)] = {"n": c.n, "percent_agreement": c.percent_agreement, "cohen_kappa": c.cohen_kappa}
    times = selectors.study_time_per_rater(study)
    per_rater = {}
    for name in names:
        spent = times.get(name, [])
        # Ratings imported from a file record no active time: 0 s would read as a time.
        timed = [s for s in spent if s > 0]
        k, n = agree[name]
        per_rater[name] = {
            "n_conversations": len(spent),
            "agreement_with_others": k / n if n else None,
            "n_shared": n,
            "vs_consensus": vs_consensus.get(name),
            "median_seconds": statistics.median(timed) if timed else None,
            "n_timed": len(timed),
        }
    return {
        "names": names, "pair_agreement": matrix, "pair_shared": shared, "per_rater": per_rater,
        "consensus_by_construction": bool(vs_consensus) and not selectors.consensus_resolves_disagreement(study),
    }


def _section(study: Study, na: str) -> dict[str, Any]:
    """Return agreement on each study-section item (realism 1-5 ordinal, risk, disclosure...)."""
    if study.section is None:
        return {}
    labels = {k.split(":", 1)[1]: v for k, v in consensus_labels_of(study).items() if k.startswith("section:")}
    from corpus.instruments.labels import instrument_labels

    for key, spec in instrument_labels(study.section).items():
        if spec.scale == "ordinal_1_5":
            labels[key] = spec
    rows, _ = normalise_rows(selectors.study_ratings_long(study, part="section"), labels)
    out: dict[str, Any] = {}
    for key, spec in labels.items():
        item_rows = [r for r in rows if r[2] == key]
        if not item_rows:
            continue
        report = agreement_report(
            item_rows, level="ordinal" if spec.level == "ordinal" else "nominal", na=na,
            na_labels={key: spec.na_labels if na == "exclude" else ()}, canonical={key: spec.labels},
            order=list(spec.labels), bootstrap=0,
        )
        if key in report.items:
            out[key] = {**report.items[key].as_dict(), "text": spec.text}
    return out


CSV_STATS = ("n_units", "n_units_pairable", "n_raters", "n_ratings", "percent_agreement", "fleiss_kappa", "fleiss_p0",
             "fleiss_pe", "cohen_kappa_mean", "krippendorff_alpha", "gwet_ac1")
CI_STATS = ("percent_agreement", "fleiss_kappa", "krippendorff_alpha", "gwet_ac1")


def reliability_csv(data: dict[str, Any]) -> tuple[list[str], list[list[Any]]]:
    """Return the reliability table for CSV: pooled rows per label set, then one row per item.

    Each row names its interval method, Fleiss variant and, per coefficient with an interval,
    the interval, its width and the estimated number of more doubly-rated conversations for
    the target width.
    """
    header = [
        "item", "text", "label_set", *CSV_STATS,
        *[f"{c}_ci_{end}" for c in CI_STATS for end in ("low", "high")],
        *[f"{c}_ci_width" for c in CI_STATS], *[f"{c}_n_more_needed" for c in CI_STATS],
        "target_width", "fleiss_variant", "interval_method", "base_rates", "flags", "notes",
    ]
    main = data.get("main") or {}
    info = data.get("items_info") or {}
    named: list[tuple[str, str, list[str], dict[str, Any]]] = [
        ("pooled", f"pooled over {len(g['items'])} items", g["labels"], g["pooled"]) for g in main.get("groups", [])
    ]
    groups = main.get("groups", [])
    for key, item in (main.get("items") or {}).items():
        labels = groups[item["group"]]["labels"] if "group" in item and item["group"] < len(groups) else []
        named.append((key, (info.get(key) or {}).get("text", ""), labels, item))
    rows = []
    for name, text, labels, item in named:
        cis = [item.get(f"{c}_ci") or [None, None] for c in CI_STATS]
        plans = [(item.get("precision") or {}).get(c) or {} for c in CI_STATS]
        rows.append([
            name, text, " / ".join(labels), *[item.get(c) for c in CSV_STATS],
            *[v for ci in cis for v in ci], *[p.get("width") for p in plans], *[p.get("n_more_needed") for p in plans],
            data.get("target_width"), item.get("fleiss_variant"), data.get("interval_method"),
            json.dumps(item.get("base_rates", {})), "; ".join(item.get("flags", [])), "; ".join(item.get("notes", [])),
        ])
    return header, rows


def reliability_inputs(study: Study, data: dict[str, Any]) -> list[tuple[str, list[Row], str]]:
    """Return, per label set, the ratings the reliability figures were computed from and the command
    that recomputes them without the app: (file name, rows, ``python -m stats agreement`` command).

    The rows are the ones the report reads (each label in its item's spelling), in the order it
    reads them: the bootstrap draws conversations by order of appearance, so the command prints
    the same figures, intervals and precision plans as the page (same resamples and seed).
    """
    groups = (data.get("main") or {}).get("groups") or []
    if not groups:
        return []
    labels = {k: v for k, v in consensus_labels_of(study).items() if not k.startswith("section:")}
    rows, _ = normalise_rows(selectors.study_ratings_long(study, part="main"), labels)
    na = data.get("na_policy", "exclude")
    bootstrap = data.get("bootstrap") or {}
    out = []
    for n, group in enumerate(groups, start=1):
        keys = group["items"]
        name = "reliability_ratings.csv" if len(groups) == 1 else f"reliability_ratings_{n}.csv"
        wanted = set(keys)
        parts = ["python -m stats agreement", name, f"--na {na}"]
        if group.get("level") == "ordinal":
            parts.append("--level ordinal")
        order = group_order(keys, labels)
        if not any("," in label for label in order):
            parts.append("--order " + shlex.quote(",".join(order)))
        if na == "exclude":
            parts += [f"--na-label {shlex.quote(x)}" for x in dict.fromkeys(x for k in keys for x in labels[k].na_labels)]
        parts += [f"--bootstrap {bootstrap.get('resamples', BOOTSTRAP_RESAMPLES)}", f"--seed {bootstrap.get('seed', BOOTSTRAP_SEED)}",
                  f"--pooled-resampling {DEFAULT_POOLED_RESAMPLING}", f"--target-width {data.get('target_width', target_width())}"]
        out.append((name, [r for r in rows if r[2] in wanted], " ".join(parts)))
    return out
