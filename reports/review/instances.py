"""The (conversation, item) instances of a study behind its figures, and the filters over them.

With a judge run, the instances come from :func:`reports.comparison.comparison_inputs`, the very
labels the judges-vs-humans page counts (same normaliser, N/A policy and scope), so the list of
a confusion-matrix cell holds exactly that cell's count. Without one, from the study's submitted
ratings and consensus labels, as the reliability and consensus pages read them.
"""

from __future__ import annotations

import threading
from collections import OrderedDict, defaultdict
from dataclasses import dataclass, field, replace
from typing import Any

from django.db.models import Count, Max

from annotation.consensus.services import consensus_labels_of
from annotation.models import ConsensusLabel, ConversationFlag, FlagStatus, Study
from corpus.instruments.labels import ItemLabels, UnknownAnswer, instrument_labels
from corpus.models import Conversation
from reports import selectors
from reports.comparison import comparison_inputs
from reports.models import FailureCode
from reports.reliability import label_groups, normalise_rows
from reports.review.query import ListQuery
from reports.review.scope import Scope, review_scope
from reports.scorecards import SCORED_SCALES

ENSEMBLE = "ensemble"


@dataclass
class Instance:
    """One item of one conversation: what every rater, the consensus and every judge answered."""

    conversation_id: int
    code: str
    chatbot: str
    persona: str
    item: str
    consensus: str | None = None
    provenance: str = ""
    raters: dict[str, str] = field(default_factory=dict)
    judges: dict[str, str | None] = field(default_factory=dict)
    codes: list[str] = field(default_factory=list)
    categories: set[int] = field(default_factory=set)

    @property
    def raters_disagree(self) -> bool:
        return len(set(self.raters.values())) > 1

    def judge_disagrees(self, judge: str) -> bool:
        label = self.judges.get(judge)
        return self.consensus is not None and label is not None and label != self.consensus


@dataclass
class InstanceList:
    """The instances a query selects, the scope they were read in, and what the query means."""

    study: Study
    query: ListQuery
    scope: Scope
    na: str
    instances: list[Instance]
    items: dict[str, ItemLabels]
    groups: list[list[str]]
    judges: list[str]
    n_locked: int  # instances of locked conversations the query would otherwise select
    error: str = ""

    @property
    def conversation_codes(self) -> list[str]:
        """Return the listed conversations in list order, each once (previous / next on the review page)."""
        return list(dict.fromkeys(i.code for i in self.instances))


def _conversations(ids: set[int]) -> dict[int, tuple[str, str, str]]:
    rows = Conversation.objects.filter(pk__in=ids).values_list(
        "pk", "code", "target__code", "target__model", "persona__name"
    )
    return {pk: (code, f"{t} · {m}" if t else "(unknown chatbot)", persona or "(no persona)") for pk, code, t, m, persona in rows}


def _study_conversations(study: Study, scope: Scope, *, calibration: bool) -> dict[str, int]:
    """Return the study's conversations in scope (locked ones included: counted, never listed), by code.

    Calibration conversations only with ``calibration`` (consensus and reliability pages count
    them; judges are compared on the main conversations only).
    """
    qs = study.study_conversations.all() if calibration else study.study_conversations.filter(is_calibration=False)
    rows = qs.values_list("conversation__code", "conversation_id")
    return {code: cid for code, cid in rows if scope.conversation_ids is None or cid in scope.conversation_ids
            or cid in scope.locked_ids}


def _normalise(labels: dict[str, ItemLabels], item: str, label: str, na: str) -> str | None:
    spec = labels.get(item)
    if spec is None:
        return None
    try:
        clean = spec.normalise(label)
    except UnknownAnswer:
        return None
    if clean is not None and na == "exclude" and spec.is_na(clean):
        return None
    return clean


@dataclass(frozen=True)
class _Base:
    """Every instance of a study under one judge run, N/A policy and scope, before any filter."""

    instances: tuple[Instance, ...]
    items: dict[str, ItemLabels]
    judges: list[str]


# The unfiltered instances of the few studies being read now, by what they were read from: a list,
# its CSV and the review page's previous / next read the same base without reading it again. A
# changed rating, consensus label, judge label or study composition changes the version (a new key).
_BASES: OrderedDict[tuple[Any, ...], _Base] = OrderedDict()
_BASES_LOCK = threading.Lock()
BASES_KEPT = 4


def _version(study: Study, run_id: int | None, read_ids: set[int]) -> str:
    """Return a fingerprint of everything the base reads (a few aggregate queries)."""
    from judging.models import EnsembleLabel, JudgeLabel

    parts = [str(study.created_at), str(study.instrument_id), str(study.section_id), selectors.study_data_version(study),
             str(len(read_ids)), str(hash(frozenset(read_ids)))]
    if run_id is not None:
        labels = JudgeLabel.objects.filter(result__run_id=run_id).aggregate(n=Count("id"), last=Max("result__finished_at"))
        ensemble = EnsembleLabel.objects.filter(run_id=run_id).aggregate(n=Count("id"))
        parts += [str(labels), str(ensemble)]
    return "|".join(parts)


def _base(study: Study, run_id: int | None, na: str, codes: dict[str, int]) -> _Base:
    read_ids = set(codes.values())
    key = (study.pk, run_id, na, _version(study, run_id, read_ids))
    with _BASES_LOCK:
        found = _BASES.get(key)
        if found is not None:
            _BASES.move_to_end(key)
            return found
    base = _read_base(study, run_id, na, codes)
    with _BASES_LOCK:
        _BASES[key] = base
        while len(_BASES) > BASES_KEPT:
            _BASES.popitem(last=False)
    return base


def _read_base(study: Study, run_id: int | None, na: str, codes: dict[str, int]) -> _Base:
    read_ids = set(codes.values())
    consensus_rows = ConsensusLabel.objects.filter(study=study, conversation_id__in=read_ids).values_list(
        "conversation__code", "item_key", "label", "provenance"
    )
    provenance = {(code, item): p for code, item, _, p in consensus_rows}
    judges: list[str] = []
    if run_id is not None:
        inputs = comparison_inputs(study, run_id, na, conversation_ids=read_ids)
        items = inputs.shared
        raters = inputs.humans
        consensus = inputs.consensus
        machine = [*inputs.judges, *inputs.ensemble]
        judges = list(dict.fromkeys(r[1] for r in inputs.judges)) + ([ENSEMBLE] if inputs.ensemble else [])
        keys = {(u, i) for u, _, i, _ in [*machine, *raters]} | set(consensus)
        keys = {k for k in keys if k[1] in items}
    else:
        # Every consensus item: the instrument's, then the study section's ("section:KEY", as consensus keys them).
        items = consensus_labels_of(study)
        if study.section is not None:  # the section's 1-5 scales too, which have no consensus but a reliability row
            items.update({k: v for k, v in instrument_labels(study.section, prefix="section:").items()
                          if not v.is_text and k not in items})
        long = selectors.study_ratings_long(study, part="main", conversation_ids=read_ids)
        long += [(u, r, f"section:{i}", label) for u, r, i, label in
                 selectors.study_ratings_long(study, part="section", conversation_ids=read_ids)]
        raters, _ = normalise_rows(long, items)
        if na == "exclude":
            raters = [r for r in raters if not items[r[2]].is_na(r[3])]
        consensus = {}
        for code, item, label, _ in consensus_rows:
            clean = _normalise(items, item, label, na) if label else None
            if clean is not None:
                consensus[(code, item)] = clean
        machine = []
        keys = {(u, i) for u, _, i, _ in raters if i in items} | {(c, i) for c, i in provenance if i in items}
    keys = {k for k in keys if k[0] in codes}
    by_key: dict[tuple[str, str], Instance] = {}
    meta = _conversations(read_ids)
    for code, item in keys:
        cid = codes[code]
        _, chatbot, persona = meta.get(cid, (code, "(unknown)", "(none)"))
        by_key[(code, item)] = Instance(cid, code, chatbot, persona, item, consensus.get((code, item)),
                                        provenance.get((code, item), ""))
    for unit, rater, item, label in raters:
        if (unit, item) in by_key:
            by_key[(unit, item)].raters[rater] = label
    for unit, judge, item, label in machine:
        if (unit, item) in by_key:
            by_key[(unit, item)].judges[judge] = label
    order = {key: n for n, key in enumerate(items)}
    instances = tuple(sorted(by_key.values(), key=lambda i: (i.code, order.get(i.item, 0))))
    return _Base(instances, items, judges)


def study_instances(study: Study, query: ListQuery) -> InstanceList:
    """Return the instances of ``query`` in the study, in conversation-code then form order.

    Locked conversations (``reports.review.scope``) are counted in ``n_locked`` and never listed.
    The instances returned are the caller's own (failure codes attached); the shared base is
    never changed.
    """
    scope = review_scope(study, query.set)
    na = selectors.reliability_na(study, query.na or None) if query.run is None else (query.na or "category")
    codes = _study_conversations(study, scope, calibration=query.run is None and query.calibration)
    base = _base(study, query.run, na, codes)
    items, judges = base.items, base.judges
    coded: dict[tuple[int, str], list[tuple[str, int | None, str]]] = defaultdict(list)
    for cid, item, text, category, judge in FailureCode.objects.filter(study=study, conversation_id__in=codes.values()).values_list(
        "conversation_id", "item_key", "text", "category_id", "judge"
    ):
        if query.about and (judge or "(raters)") != query.about:
            continue
        coded[(cid, item)].append((text, category, judge))
    groups = label_groups(items, set(items))
    if query.group is not None and query.group >= len(groups):
        return InstanceList(study, query, scope, na, [], items, groups, judges, 0, f"there is no item group {query.group}")
    if query.item and query.item not in items:
        return InstanceList(study, query, scope, na, [], items, groups, judges, 0, f"item {query.item!r} is not compared here")
    if query.judge and query.judge not in judges:
        return InstanceList(study, query, scope, na, [], items, groups, judges, 0,
                            f"judge {query.judge!r} has no labels on this study's conversations in run {query.run}")
    scored = frozenset(k for k, v in items.items() if v.scale in SCORED_SCALES)
    flagged = _flagged(study, query.flag) if query.flag else None
    chosen: list[Instance] = []
    for shared in base.instances:
        if flagged is not None and shared.conversation_id not in flagged:
            continue
        entries = coded.get((shared.conversation_id, shared.item))
        instance = replace(shared, codes=[t for t, _, _ in entries], categories={c for _, c, _ in entries if c is not None}) \
            if entries else shared
        if matches(instance, query, groups, scored):
            chosen.append(instance)
    listed = [i for i in chosen if scope.allows(i.conversation_id)]
    return InstanceList(study, query, scope, na, listed, items, groups, judges, len(chosen) - len(listed))


def _flagged(study: Study, which: str) -> set[int]:
    qs = ConversationFlag.objects.filter(study=study)
    if which == "open":
        qs = qs.filter(status=FlagStatus.OPEN)
    return set(qs.values_list("conversation_id", flat=True))


def matches(instance: Instance, query: ListQuery, groups: list[list[str]], scored: frozenset[str] = frozenset()) -> bool:
    """Tell whether an instance is one the query's figure counts."""
    if query.group is not None and instance.item not in groups[query.group]:
        return False
    if query.item and instance.item != query.item:
        return False
    if query.chatbot and instance.chatbot not in (query.chatbot, query.versus or query.chatbot):
        return False
    if query.persona and instance.persona != query.persona:
        return False
    if query.with_consensus and not instance.provenance:
        return False
    if query.scored and instance.item not in scored:
        return False
    if query.provenance and instance.provenance != query.provenance:
        return False
    if query.human and instance.consensus != query.human:
        return False
    judge_label = instance.judges.get(query.judge) if query.judge else None
    if query.missing == "judge" and (instance.consensus is None or judge_label is not None):
        return False
    if query.missing == "consensus" and (instance.consensus is not None or judge_label is None):
        return False
    if query.label and judge_label != query.label:
        return False
    if query.compared and (instance.consensus is None or judge_label is None):
        return False
    if query.min_raters is not None and len(instance.raters) < query.min_raters:
        return False
    if query.rater and query.rater not in instance.raters:
        return False
    if query.alt and (judge_label is None or len(instance.raters) < 2):
        return False
    if query.disagree == "raters" and not instance.raters_disagree:
        return False
    if query.disagree == "judge":
        names = [query.judge] if query.judge else list(instance.judges)
        if not any(instance.judge_disagrees(n) for n in names):
            return False
    if query.code is not None and query.code not in instance.categories:
        return False
    return not (query.coded and query.coded not in instance.codes)
