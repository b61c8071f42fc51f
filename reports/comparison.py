"""Judges against humans: one comparison model for any judge run.

A judge is compared with humans only on the items both rate: the study instrument's items (or
question-flow dimensions) that the run labelled, never the study's own rating section (perceived
risk, disclosure, realism), which no judge answers. Every label, human or judge, goes through
the study item's normaliser, so label sets match per item; a judge label the item does not have
is counted (``n_off_scale``), never compared. Per item: agreement, Cohen's kappa and a confusion
matrix (rows: human consensus, columns: the judge). Pooled figures are given per group of items
that share a label set. Missing counts count what is missing: ``n_judge_missing`` are items
with a consensus that the judge did not label (a failed call, a missing label), and
``n_no_consensus`` items the judge labelled that have no human consensus (unresolved, too few
ratings, not rated yet).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import Any

from annotation.consensus.services import consensus_labels_of
from annotation.models import Study
from corpus.instruments.labels import ItemLabels, UnknownAnswer
from judging.models import JudgeRun
from reports import selectors
from reports.jobs import Progress
from reports.methods.facts import consensus_facts, ensemble_facts, instrument_facts
from reports.reliability import group_order, label_groups, normalise_rows
from reports.verdict import group_verdict, headline, parameters
from stats import rater_pair_agreement, reference_agreement

Row = tuple[str, str, str, str | None]


def _judge_rows(rows: Sequence[Row], labels: dict[str, ItemLabels], na: str) -> tuple[list[Row], dict[str, Counter[str]]]:
    """Return judge rows on the shared items in the items' spelling; count labels off the scale.

    ``off_scale`` counts, per judge and item, the labels that are none of the item's labels.
    """
    out: list[Row] = []
    off_scale: dict[str, Counter[str]] = defaultdict(Counter)
    for unit, judge, item, label in rows:
        spec = labels.get(item)
        if spec is None:
            continue
        try:
            clean = spec.normalise(label)
        except UnknownAnswer:
            off_scale[judge][item] += 1
            clean = None
        if clean is not None and na == "exclude" and spec.is_na(clean):
            continue
        out.append((unit, judge, item, clean))
    return out, off_scale


def _matrix(comparison: dict[str, Any]) -> dict[str, Any]:
    confusion = comparison["confusion"]
    return {"labels": confusion["labels"], "counts": confusion["counts"], "n": confusion["n"]}


@dataclass(frozen=True)
class ComparisonInputs:
    """The labels a judges-vs-humans comparison reads, each in its item's spelling.

    ``judges``/``ensemble``: (unit, judge, item, label or None) on the shared items (None: a
    missing or off-scale label); ``humans``: (unit, rater, item, label); ``consensus``: the
    human reference per (unit, item) on conversations the run judged. The drill-down lists
    (``reports.review``) read the same inputs, so a listed instance is exactly a counted one.
    """

    shared: dict[str, ItemLabels]
    judged_items: set[str]
    judge_raw: list[Row]
    ensemble_raw: list[Row]
    warnings: list[str]
    judges: list[Row] = field(default_factory=list)
    ensemble: list[Row] = field(default_factory=list)
    humans: list[Row] = field(default_factory=list)
    consensus: dict[tuple[str, str], str] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    off_scale: dict[str, Counter[str]] = field(default_factory=dict)


def comparison_inputs(
    study: Study,
    run_id: int,
    na: str,
    *,
    conversation_ids: Collection[int] | None = None,
    only: str | None = None,
) -> ComparisonInputs:
    """Return what :func:`compute_judges` compares (see its parameters); nothing else is read."""
    study_labels = {k: v for k, v in consensus_labels_of(study).items() if not k.startswith("section:")}
    judge_raw, ensemble_raw, warnings = selectors.judge_rows_for_study(study, run_id, conversation_ids=conversation_ids)
    if only is not None:
        judge_raw = [r for r in judge_raw if r[1] == only]
        ensemble_raw = ensemble_raw if only == "ensemble" else []
    judged_items = {r[2] for r in [*judge_raw, *ensemble_raw]}
    shared = {k: v for k, v in study_labels.items() if k in judged_items}
    inputs = ComparisonInputs(shared, judged_items, judge_raw, ensemble_raw, warnings)
    if not shared:
        return inputs
    judges, off_scale = _judge_rows(judge_raw, shared, na)
    ensemble, ensemble_off = _judge_rows(ensemble_raw, shared, na)
    off_scale.update(ensemble_off)
    judged = {r[0] for r in [*judge_raw, *ensemble_raw]}
    humans, problems = normalise_rows(selectors.study_ratings_long(study, part="main", conversation_ids=conversation_ids), shared)
    if na == "exclude":
        humans = [r for r in humans if not shared[r[2]].is_na(r[3])]
    consensus: dict[tuple[str, str], str] = {}
    for (unit, item), label in selectors.study_consensus_map(study, conversation_ids=conversation_ids).items():
        if item in shared and unit in judged:  # a conversation the run did not judge is not "missing"
            try:
                clean = shared[item].normalise(label)
            except UnknownAnswer:
                continue
            if clean is not None and not (na == "exclude" and shared[item].is_na(clean)):
                consensus[(unit, item)] = clean
    return ComparisonInputs(shared, judged_items, judge_raw, ensemble_raw, warnings, judges, ensemble, humans,
                            consensus, problems, dict(off_scale))


def compute_judges(
    study: Study,
    run_id: int,
    na: str,
    progress: Progress,
    *,
    conversation_ids: Collection[int] | None = None,
    only: str | None = None,
) -> dict[str, Any]:
    """Return the judges-vs-humans payload of a study and a judge run.

    ``conversation_ids``: compare on these conversations only (a development or test set); no
    rating, consensus or judge label of another conversation is read. ``only``: keep one
    judge's labels (its name) or the ensemble's (``"ensemble"``), for a version declared final.
    """
    progress(0.05, "reading judge labels, ratings and consensus")
    study_labels = {k: v for k, v in consensus_labels_of(study).items() if not k.startswith("section:")}
    inputs = comparison_inputs(study, run_id, na, conversation_ids=conversation_ids, only=only)
    judge_raw, ensemble_raw, judged_items, shared = inputs.judge_raw, inputs.ensemble_raw, inputs.judged_items, inputs.shared
    payload: dict[str, Any] = {
        "run": run_id,
        "na_policy": na,
        "warnings": inputs.warnings,
        "items_compared": list(shared),
        "items_info": {k: {"text": v.text, "number": v.number, "labels": list(v.labels)} for k, v in shared.items()},
        "items_not_judged": [k for k in study_labels if k not in judged_items],
        "judge_items_not_in_study": sorted(judged_items - set(study_labels)),
    }
    if not judge_raw and not ensemble_raw:
        payload["empty"] = "This run has no labels for the study's conversations."
        return payload
    if not shared:
        payload["empty"] = (
            "This run labels none of the study instrument's items (it judged "
            f"{', '.join(sorted(judged_items)[:5])}{'…' if len(judged_items) > 5 else ''}), so there is nothing to compare."
        )
        return payload
    judges, ensemble, humans, consensus = inputs.judges, inputs.ensemble, inputs.humans, inputs.consensus
    off_scale = defaultdict(Counter, inputs.off_scale)
    payload.update({
        # Counted on the set the alt-test and the per-rater figures use: the rated conversations the run judged
        # (consensus counted apart: before it is computed there is none, yet the ratings are compared).
        "n_consensus": len(consensus),
        "n_consensus_conversations": len({unit for unit, _ in consensus}),
        "n_conversations": len(rated := {r[0] for r in humans} & {r[0] for r in [*judges, *ensemble]}),
        "n_raters": len({r[1] for r in humans if r[0] in rated}),
        "instrument": instrument_facts(study.instrument),
        "consensus_rule": consensus_facts(study),
        "ensemble": ensemble_facts(JudgeRun.objects.get(pk=run_id)),
        "label_problems": inputs.problems[:20],
        "off_scale": {j: sum(c.values()) for j, c in off_scale.items()},
        "consensus_status": selectors.consensus_status_on(study, list(shared), conversation_ids=conversation_ids),
        "parameters": parameters(study.alt_test_epsilon),
    })
    groups = label_groups(shared, set(shared))
    payload["groups"] = []
    for index, keys in enumerate(groups):
        progress(0.15 + 0.8 * index / len(groups), f"comparing items {', '.join(keys[:3])}{'…' if len(keys) > 3 else ''}")
        payload["groups"].append(_group(keys, shared, na, judges, ensemble, humans, consensus, off_scale, study.alt_test_epsilon))
    return payload


def _group(
    keys: list[str],
    labels: dict[str, ItemLabels],
    na: str,
    judges: list[Row],
    ensemble: list[Row],
    humans: list[Row],
    consensus: dict[tuple[str, str], str],
    off_scale: dict[str, Counter[str]],
    epsilon: float,
) -> dict[str, Any]:
    """Compare judges, ensemble and humans on one group of items that share a label set.

    The verdict (the alt-test of each judge and the ensemble) and the figures with intervals
    come from ``reports.verdict``; their intervals are merged into the comparison rows.
    """
    order = group_order(keys, labels)
    if na == "exclude":
        order = [x for x in order if not any(labels[k].is_na(x) for k in keys)]
    wanted = set(keys)
    machine = [r for r in [*judges, *ensemble] if r[2] in wanted]
    people = [r for r in humans if r[2] in wanted]
    reference = {k: v for k, v in consensus.items() if k[1] in wanted}
    group: dict[str, Any] = {"labels": list(labels[keys[0]].substantive), "order": order, "items": keys}
    if reference:
        vs = reference_agreement(machine, reference, na="category", na_labels=(), labels=order, reference_name="consensus")
        pooled = [c.as_dict() for c in vs.pooled]
        for c in pooled:
            c["n_off_scale"] = sum(n for item, n in off_scale.get(c["rater"], Counter()).items() if item in wanted)
            c["matrix"] = _matrix(c)
            del c["confusion"]
        group["vs_consensus"] = pooled
        group["per_item"] = {}
        for key in keys:  # each item's matrix on its own labels (no N/A row for a yes/no item)
            item_reference = {k: v for k, v in reference.items() if k[1] == key}
            if not item_reference:
                continue
            own = [x for x in labels[key].labels if not (na == "exclude" and labels[key].is_na(x))]
            per_item = reference_agreement(
                [r for r in machine if r[2] == key], item_reference, na="category", na_labels=(), labels=own,
                reference_name="consensus",
            )
            group["per_item"][key] = [
                {**{k: v for k, v in c.as_dict().items() if k != "confusion"}, "matrix": _matrix(c.as_dict())}
                for c in per_item.pooled
            ]
    if people:
        judge_names = [r for r in machine if r[1] != "ensemble"]
        pairs = rater_pair_agreement(judge_names, people, na="category", na_labels=(), labels=order)
        vs_raters = [{k: v for k, v in c.as_dict().items() if k != "confusion"} for c in pairs.pooled]
        human_pairs = rater_pair_agreement(people, people, na="category", na_labels=(), labels=order)
        group["vs_raters"] = vs_raters
        group["human_pairs"] = [
            {k: v for k, v in c.as_dict().items() if k != "confusion"}
            for c in human_pairs.pooled
            if str(c.rater) < str(c.reference) and c.n > 0
        ]
        verdict = group_verdict(machine=machine, people=people, reference=reference, order=order, epsilon=epsilon)
        figures = verdict["figures"]
        group["alt_test"] = verdict["alt_test"]
        group["baseline"] = verdict["baseline"]
        group["headline"] = headline(verdict["alt_test"])
        group["human_range"] = figures["human_range"]
        group["leave_one_out"] = figures["leave_one_out"]
        _merge_intervals(group.get("vs_consensus", []), figures["vs_consensus"])
        for key, comps in group.get("per_item", {}).items():
            _merge_intervals(comps, figures["vs_consensus_items"].get(key, []))
        _merge_intervals(group["vs_raters"], figures["vs_raters"])
        _merge_intervals(group["human_pairs"], figures["human_pairs"])
        excluded = {(e["rater"], e["reference"]) for e in figures["human_range"]["excluded"]}
        for c in group["human_pairs"]:
            c["in_human_range"] = (c["reference"], c["rater"]) not in excluded and (c["rater"], c["reference"]) not in excluded
    return group


def _merge_intervals(rows: list[dict[str, Any]], figures: list[dict[str, Any]]) -> None:
    """Add each figure's intervals and conversation count to the matching comparison row.

    The figures recompute agreement and kappa from the same labels (a test checks they are
    equal); the rows keep their own point estimates and gain ``agreement_ci``/``kappa_ci``.
    """
    by_pair = {(f["rater"], f["reference"]): f for f in figures}
    by_pair.update({(f["reference"], f["rater"]): f for f in figures})
    for row in rows:
        figure = by_pair.get((str(row["rater"]), str(row["reference"])))
        if figure is not None:
            row["agreement_ci"] = figure["agreement_ci"]
            row["kappa_ci"] = figure["kappa_ci"]
            row["n_conversations"] = figure["n_conversations"]
