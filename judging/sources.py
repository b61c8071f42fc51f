"""Whose labels of a judge run a report reads: the ensemble's, or one judge's.

Judge-assisted scores, sampling plans and judge drift all need "the judge's label of item X
on conversation C" from a run. With two or more judges that is the ensemble by default (no
majority is a missing label, never a guess); any single judge of the run may be picked
instead (instance 0: further instances measure self-consistency). A source is written
``ensemble`` or ``judge:<id>`` in URLs, the API and stored plans.

Conversations flagged by the integrity checks are left out everywhere here: a flagged
conversation is never scored. Every function runs a fixed number of queries.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from core.visibility import visible
from corpus.models import Conversation
from judging.ensemble import ensemble_kind
from judging.errors import JudgingError
from judging.models import EnsembleLabel, Judge, JudgeLabel, JudgeRun, LabelStatus

ENSEMBLE = "ensemble"
NO_MAJORITY = ("tie", "no_majority")


@dataclass(frozen=True)
class LabelSource:
    """The ensemble of a run, or one of its judges."""

    key: str  # "ensemble" or "judge:<id>"
    name: str  # what pages show: "ensemble" or the judge's name
    judge_id: int | None = None

    @property
    def is_ensemble(self) -> bool:
        return self.judge_id is None


def run_panel(run: JudgeRun) -> list[tuple[int, str]]:
    """Return the run's judges as (id, name) in panel order (from the run's own snapshot)."""
    snapshots = (run.config or {}).get("judges", {})
    if snapshots:
        ordered = sorted(snapshots.items(), key=lambda kv: kv[1].get("position", 0))
        return [(int(pk), str(s.get("name", pk))) for pk, s in ordered]
    return list(run.judges.order_by("name").values_list("pk", "name"))


def run_label_sources(run: JudgeRun) -> list[LabelSource]:
    """Return the sources a report may read: the ensemble (two or more judges), then each judge."""
    panel = run_panel(run)
    sources = [LabelSource(ENSEMBLE, "ensemble")] if len(panel) >= 2 else []
    return sources + [LabelSource(f"judge:{pk}", name, pk) for pk, name in panel]


def label_source_get(run: JudgeRun, key: str | None) -> LabelSource:
    """Return the source named ``key`` (empty: the run's default); raise JudgingError if unknown."""
    sources = run_label_sources(run)
    if not sources:
        raise JudgingError(f"judge run {run.pk} has no judges")
    if not key:
        return sources[0]
    found = next((s for s in sources if s.key == key), None)
    if found is None:
        choices = ", ".join(s.key for s in sources)
        raise JudgingError(f"'{key}' is not a label source of judge run {run.pk} (choose {choices})")
    return found


@dataclass(frozen=True)
class JudgedConversation:
    """One conversation of a run with its chatbot and persona, as reports group them."""

    id: int
    code: str
    chatbot: str
    persona: str


@dataclass
class RunLabels:
    """A source's labels of a run: per conversation, item -> label (None: missing)."""

    run: JudgeRun
    source: LabelSource
    conversations: dict[int, JudgedConversation]
    labels: dict[int, dict[str, str | None]] = field(default_factory=dict)
    items: list[str] = field(default_factory=list)

    def of(self, conversation_id: int) -> dict[str, str | None]:
        return self.labels.get(conversation_id, {})


def run_conversations(run: JudgeRun) -> dict[int, JudgedConversation]:
    """Return the run's conversations that passed the integrity checks (one query).

    Plain values, not model instances: a run may hold tens of thousands of conversations.
    """
    ids = run.results.values("conversation_id")
    rows = (
        Conversation.objects.filter(pk__in=ids)
        .exclude(integrity_ok=False)
        .order_by("code")
        .values_list("pk", "code", "target__code", "target__model", "persona__name")
    )
    return {
        pk: JudgedConversation(
            pk, code, f"{target_code} · {target_model}" if target_code is not None else "(unknown)", persona or "(none)"
        )
        for pk, code, target_code, target_model, persona in rows
    }


def run_labels(run: JudgeRun, source: LabelSource) -> RunLabels:
    """Return every label of a source on the run's (integrity-checked) conversations.

    Ensemble: the majority label, None where there was no majority. One judge: its instance-0
    label, None where it failed or gave none. Conversations the source never labelled still
    appear (with no labels) so counts stay honest.
    """
    conversations = run_conversations(run)
    out = RunLabels(run, source, conversations, {cid: {} for cid in conversations})
    order: dict[str, int] = {}
    if source.is_ensemble:
        rows = EnsembleLabel.objects.filter(run=run).values_list("conversation_id", "item_key", "label", "position")
        for cid, key, label, position in rows:
            order.setdefault(key, position)
            if cid in out.labels:
                out.labels[cid][key] = label or None
    else:
        rows = JudgeLabel.objects.filter(
            result__run=run, result__judge_id=source.judge_id, result__instance=0, kind=ensemble_kind(run.mode)
        ).values_list("result__conversation_id", "item_key", "label", "status", "position")
        for cid, key, label, status, position in rows:
            order.setdefault(key, position)
            if cid in out.labels:
                out.labels[cid][key] = label if status == LabelStatus.OK and label else None
    out.items = sorted(order, key=lambda k: order[k])
    return out


def run_disagreement_flags(run: JudgeRun) -> dict[int, bool]:
    """Return, per conversation of the run, whether its judges disagreed on any item.

    Disagreement: the ensemble found no majority (tie or no majority), or the judges who voted
    gave different labels (a split vote such as 2 to 1). A judge that failed is not a dissent.
    A run with one judge has nothing to disagree about: every conversation is False.
    """
    flags: dict[int, bool] = defaultdict(bool)
    for (cid, _), split in run_label_splits(run).items():
        flags[cid] |= split
    return {cid: flags.get(cid, False) for cid in run_conversations(run)}


def label_is_split(provenance: str, votes: dict) -> bool:
    """Return whether one ensemble label had no majority or a dissenting vote."""
    given = {str(v).strip().casefold() for v in (votes or {}).values() if v not in (None, "")}
    return provenance in NO_MAJORITY or len(given) > 1


def run_label_splits(run: JudgeRun) -> dict[tuple[int, str], bool]:
    """Return the (conversation, item) pairs of the ensemble where the judges split (True only).

    Unanimous labels are left out of the query (most of them, and their votes need not be
    read): a pair that is absent did not split.
    """
    rows = (
        EnsembleLabel.objects.filter(run=run)
        .exclude(provenance="unanimous")
        .values_list("conversation_id", "item_key", "provenance", "votes")
    )
    return {(cid, key): True for cid, key, provenance, votes in rows if label_is_split(provenance, votes)}


@dataclass(frozen=True)
class LabelDetail:
    """A label with why it was given: the judge's rationale, or each judge's vote and rationale."""

    label: str | None
    rationale: str
    votes: tuple[tuple[str, str | None, str], ...] = ()  # ensemble: (judge, label, rationale)


def run_label_details(
    run: JudgeRun, source: LabelSource, pairs: list[tuple[int, str]]
) -> dict[tuple[int, str], LabelDetail]:
    """Return the label and rationale(s) of the given (conversation id, item) pairs (two queries)."""
    wanted = set(pairs)
    conversation_ids = sorted({cid for cid, _ in wanted})
    items = sorted({key for _, key in wanted})
    if not wanted:
        return {}
    judge_rows = JudgeLabel.objects.filter(
        result__run=run, result__instance=0, kind=ensemble_kind(run.mode),
        result__conversation_id__in=conversation_ids, item_key__in=items,
    )
    if not source.is_ensemble:
        judge_rows = judge_rows.filter(result__judge_id=source.judge_id)
    by_pair: dict[tuple[int, str], list[tuple[int, str | None, str]]] = defaultdict(list)
    for cid, key, judge_id, label, status, rationale, reason in judge_rows.values_list(
        "result__conversation_id", "item_key", "result__judge_id", "label", "status", "rationale", "missing_reason"
    ):
        if (cid, key) in wanted:
            text = rationale if status == LabelStatus.OK else f"no label: {reason}".strip()
            by_pair[(cid, key)].append((judge_id, label or None, text))
    out: dict[tuple[int, str], LabelDetail] = {}
    if source.is_ensemble:
        names = dict(run_panel(run))
        order = {pk: n for n, (pk, _) in enumerate(run_panel(run))}
        ensemble = {
            (cid, key): label or None
            for cid, key, label in EnsembleLabel.objects.filter(
                run=run, conversation_id__in=conversation_ids, item_key__in=items
            ).values_list("conversation_id", "item_key", "label")
        }
        for pair in wanted:
            votes = sorted(by_pair.get(pair, []), key=lambda v: order.get(v[0], 99))
            out[pair] = LabelDetail(
                ensemble.get(pair),
                "",
                tuple((names.get(pk, str(pk)), label, text) for pk, label, text in votes),
            )
    else:
        for pair in wanted:
            found = by_pair.get(pair)
            out[pair] = LabelDetail(found[0][1], found[0][2]) if found else LabelDetail(None, "")
    return out


def judge_versions(judge: Judge) -> list[Judge]:
    """Return the judge's earlier versions, newest first (``cloned_from`` chain, cycles cut)."""
    chain: list[Judge] = []
    seen = {judge.pk}
    current = judge.cloned_from
    while current is not None and current.pk not in seen:
        chain.append(current)
        seen.add(current.pk)
        current = current.cloned_from
    return chain


@dataclass(frozen=True)
class VersionPair:
    """The runs that let a judge be compared with its previous version on shared conversations."""

    previous: Judge
    run_previous: JudgeRun | None
    run_current: JudgeRun | None
    n_shared: int


def judge_previous_version_runs(judge: Judge, *, user: Any = None) -> VersionPair | None:
    """Return the newest run of the judge and of its previous version sharing the most conversations.

    None when the judge has no previous version. The runs are None when either version has
    never run or they share no conversation. With a ``user``, only runs they may read (core.visibility).
    """
    previous = judge.cloned_from
    if previous is None:
        return None
    runs = JudgeRun.objects.all() if user is None else visible(JudgeRun.objects.all(), user)
    mine = list(runs.filter(judges=judge).order_by("-created_at", "-id")[:20])
    theirs = list(runs.filter(judges=previous).order_by("-created_at", "-id")[:20])
    if not mine or not theirs:
        return VersionPair(previous, None, None, 0)
    ids = {r.pk for r in mine + theirs}
    conversations: dict[int, set[int]] = defaultdict(set)
    for run_id, cid in (
        JudgeRun.objects.filter(pk__in=ids).values_list("pk", "results__conversation_id").distinct()
    ):
        if cid is not None:
            conversations[run_id].add(cid)
    best: tuple[int, JudgeRun, JudgeRun] | None = None
    for current in mine:  # newest first: ties keep the newest pair
        for older in theirs:  # the same run when it holds both versions
            shared = len(conversations[current.pk] & conversations[older.pk])
            if shared and (best is None or shared > best[0]):
                best = (shared, older, current)
    if best is None:
        return VersionPair(previous, None, None, 0)
    return VersionPair(previous, best[1], best[2], best[0])
