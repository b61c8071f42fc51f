"""The judge ensemble: a majority vote per item, and the one-judge-per-provider check.

The vote is ``stats.majority_vote`` over the run's judges in a fixed order. Instance 0
of each judge votes (further instances measure self-consistency, they are not extra voters).
A judge that failed, or whose label is missing, still counts as a voter without a vote, so a
failure can cost the majority but never creates one. N/A is a label of its own. No label with a
strict majority is stored as such (blank label, provenance "no_majority" or "tie"): never
guessed. The rule text is stored on every ensemble row. A run of one judge has that judge's
labels as its run labels (provenance "single_judge"): one judge is a run, and is scored as one.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence

from django.db import transaction

from judging.models import EnsembleLabel, JudgeLabel, JudgeMode, JudgeRun, LabelKind, LabelStatus
from stats import majority_vote

# The provenance of a single-judge run's labels: that judge's label, no vote.
SINGLE_JUDGE = "single_judge"


def provider_warnings(members: Sequence[Mapping[str, str]]) -> list[str]:
    """Return one warning per provider that has more than one judge in the panel.

    ``members`` holds {"name", "provider"} per judge. AMHART's panel is one judge per provider,
    so two judges of one provider weaken the ensemble's independence.
    """
    by_provider: dict[str, list[str]] = defaultdict(list)
    for member in members:
        by_provider[(member.get("provider") or "unknown").strip().lower()].append(member["name"])
    if len(members) < 2:
        return []
    return [
        f"Judges {', '.join(names)} all come from provider '{provider}': an ensemble should have "
        "one judge per provider (AMHART), or its votes are not independent."
        for provider, names in sorted(by_provider.items())
        if len(names) > 1
    ]


def ensemble_rule(n_judges: int) -> str:
    """Return the rule text stored with every ensemble label of a panel of ``n_judges``."""
    if n_judges < 2:
        return ("Single judge: the run's labels are that judge's labels (instance 0), no vote; a failed or "
                "missing label stays missing.")
    need = n_judges // 2 + 1
    return (
        f"Majority of {n_judges} judges: a label needs at least {need} votes. N/A is a category "
        "of its own. Instance 0 of each judge votes; a failed or missing label counts as a voter "
        "without a vote. Otherwise no majority is recorded, never guessed."
    )


def ensemble_kind(mode: str) -> str:
    """Return which labels vote: checklist items, or question-flow dimensions."""
    return LabelKind.ITEM if mode == JudgeMode.CHECKLIST else LabelKind.DIMENSION


@transaction.atomic
def ensemble_compute(*, run: JudgeRun, item_order: Sequence[str]) -> int:
    """Replace the run's ensemble labels by a fresh majority vote; return how many were stored.

    ``item_order`` lists the item keys (checklist) or dimensions (flow) to vote on, in order.
    """
    EnsembleLabel.objects.filter(run=run).delete()
    panel = [(int(judge_id), snap["name"]) for judge_id, snap in sorted(run.config.get("judges", {}).items(), key=lambda kv: kv[1]["position"])]
    if not panel:
        return 0
    # One judge is a run: its labels are the run's labels (provenance "single_judge"), so that
    # scorecards, the leaderboard and the bundle score it like a panel's majority.
    single = len(panel) == 1
    rule = ensemble_rule(1) if single else (run.ensemble_rule or ensemble_rule(len(panel)))
    kind = ensemble_kind(run.mode)
    given: dict[tuple[int, str], dict[int, str | None]] = defaultdict(dict)
    rows = JudgeLabel.objects.filter(result__run=run, result__instance=0, kind=kind).values_list(
        "result__conversation_id", "item_key", "result__judge_id", "label", "status"
    )
    for conversation_id, item_key, judge_id, label, status in rows:
        given[(conversation_id, item_key)][judge_id] = label if status == LabelStatus.OK else None
    conversation_ids = sorted(set(run.results.values_list("conversation_id", flat=True)))
    position = {key: i for i, key in enumerate(item_order)}
    spelling = _spellers(run)
    created = []
    for conversation_id in conversation_ids:
        for item_key in item_order:
            votes_by_judge = given.get((conversation_id, item_key), {})
            votes = [spelling(item_key, votes_by_judge.get(judge_id)) for judge_id, _ in panel]
            result = majority_vote(votes, na_labels=())
            provenance = result.provenance
            if single:
                provenance = SINGLE_JUDGE if result.label else "no_ratings"
            created.append(
                EnsembleLabel(
                    run=run,
                    conversation_id=conversation_id,
                    item_key=item_key,
                    position=position[item_key],
                    label=result.label or "",
                    provenance=provenance,
                    votes={name: votes_by_judge.get(judge_id) for judge_id, name in panel},
                    rule=rule,
                )
            )
    EnsembleLabel.objects.bulk_create(created, batch_size=500)
    return len(created)


def _spellers(run: JudgeRun) -> Callable[[str, str | None], str | None]:
    """Return a function giving a judge label in its item's own spelling (the one normaliser).

    "Yes", "YES" and "yes" vote together as the item's "yes"; a label the item does not have
    is kept as given (folded for the vote), never dropped or turned into another label.
    """
    from corpus.instruments.labels import UnknownAnswer, instrument_labels

    items = instrument_labels(run.instrument) if run.instrument_id else {}

    def spell(item_key: str, label: str | None) -> str | None:
        labels = items.get(item_key)
        if label is None or labels is None:
            return label
        try:
            return labels.normalise(label)
        except UnknownAnswer:
            return label

    return spell
