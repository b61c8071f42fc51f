"""CSV exports of judge labels, streamed: long format, VERA-MH-style dimensions, ensemble.

- ``long``: one row per label (checklist items; for question flows the answered questions and
  the dimension labels, told apart by ``kind``). A missing label has an empty ``label``,
  status ``missing`` and its reason.
- ``dimensions``: one row per (conversation, judge, instance, dimension) of a question-flow
  run, with the answered path ("1=Yes; 2=No; ...") and how the walk ended.
- ``ensemble``: one row per (conversation, item) with the majority label, its provenance, the
  votes and the rule.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from django.db.models import QuerySet

from core.csvstream import stream_csv
from core.locks import locked_conversation_ids
from judging.models import EnsembleLabel, JudgeLabel, JudgeResult, JudgeRun, LabelKind

FORMATS = ("long", "dimensions", "ensemble")

LONG_COLUMNS = [
    "run",
    "conversation",
    "judge",
    "provider",
    "model",
    "instance",
    "kind",
    "item",
    "label",
    "status",
    "rationale",
    "evidence_turns",
    "missing_reason",
]
DIMENSION_COLUMNS = [
    "run",
    "conversation",
    "judge",
    "provider",
    "model",
    "instance",
    "dimension",
    "label",
    "status",
    "path",
    "ended_by",
    "error",
]
ENSEMBLE_COLUMNS = ["run", "conversation", "item", "label", "provenance", "votes", "rule"]


def _snapshot(config: dict, judge_id: int) -> dict:
    """Return a run's snapshot of one judge (name, provider, model) from the run's ``config``."""
    return (config or {}).get("judges", {}).get(str(judge_id), {})


def _labels(runs: QuerySet[JudgeRun], kinds: list[str], only: Any = None) -> QuerySet[JudgeLabel]:
    qs = JudgeLabel.objects.filter(result__run__in=runs, kind__in=kinds)
    if only is not None:
        qs = qs.filter(result__conversation_id__in=only)
    return qs.exclude(result__conversation_id__in=locked_conversation_ids()).order_by(
        "result__run_id", "result__conversation_id", "result__judge_id", "result__instance", "kind", "position"
    )


LONG_FIELDS = ("result__run_id", "result__conversation__code", "result__judge_id", "result__instance", "kind", "item_key",
               "label", "status", "rationale", "evidence", "missing_reason")


def long_rows(runs: QuerySet[JudgeRun], only: Any = None) -> Iterator[list[object]]:
    # Plain values and each run's judge snapshots read once: a study's export has 100,000s of
    # labels, and a model instance per label with its result, run and conversation (their JSON
    # fields decoded on every row) cost most of the export's time.
    configs = dict(JudgeRun.objects.filter(pk__in=runs.values("pk")).values_list("pk", "config"))
    rows = _labels(runs, [LabelKind.ITEM, LabelKind.QUESTION, LabelKind.DIMENSION], only).values_list(*LONG_FIELDS)
    for run_id, code, judge_id, instance, kind, item_key, label, status, rationale, evidence, missing_reason in rows.iterator(chunk_size=2000):
        snap = _snapshot(configs.get(run_id, {}), judge_id)
        yield [
            run_id,
            code,
            snap.get("name", judge_id),
            snap.get("provider", ""),
            snap.get("model", ""),
            instance,
            kind,
            item_key,
            label,
            status,
            rationale,
            " ".join(str(e.get("turn")) for e in evidence or []),
            missing_reason,
        ]


def _path_text(path: list[dict]) -> str:
    return "; ".join(f"{step['question_id']}={step['answer']}" for step in path or [])


def dimension_rows(runs: QuerySet[JudgeRun], only: Any = None) -> Iterator[list[object]]:
    results = JudgeResult.objects.filter(run__in=runs, run__mode="flow")
    if only is not None:
        results = results.filter(conversation_id__in=only)
    results = (
        results.exclude(conversation_id__in=locked_conversation_ids())
        .select_related("run", "conversation")
        .order_by("run_id", "conversation_id", "judge_id", "instance")
    )
    labels: dict[int, list[JudgeLabel]] = {}
    for label in JudgeLabel.objects.filter(result__in=results, kind=LabelKind.DIMENSION).order_by("position"):
        labels.setdefault(label.result_id, []).append(label)
    for result in results.iterator(chunk_size=1000):
        snap = _snapshot(result.run.config, result.judge_id)
        path = _path_text(result.path)
        for label in labels.get(result.pk, []):
            yield [
                result.run_id,
                result.conversation.code,
                snap.get("name", result.judge_id),
                snap.get("provider", ""),
                snap.get("model", ""),
                result.instance,
                label.item_key,
                label.label,
                label.status,
                path,
                result.ended_by,
                result.error,
            ]


def ensemble_rows(runs: QuerySet[JudgeRun], only: Any = None) -> Iterator[list[object]]:
    rows = EnsembleLabel.objects.filter(run__in=runs)
    if only is not None:
        rows = rows.filter(conversation_id__in=only)
    rows = (
        rows.exclude(conversation_id__in=locked_conversation_ids())
        .select_related("conversation")
        .order_by("run_id", "conversation_id", "position")
    )
    for e in rows.iterator(chunk_size=2000):
        yield [e.run_id, e.conversation.code, e.item_key, e.label, e.provenance, json.dumps(e.votes, ensure_ascii=False), e.rule]


def withheld_count(runs: QuerySet[JudgeRun]) -> int:
    """Return how many of the runs' conversations the exports leave out (a locked test set)."""
    locked = locked_conversation_ids()
    if not locked:
        return 0
    return JudgeResult.objects.filter(run__in=runs, conversation_id__in=locked).values("conversation_id").distinct().count()


def export_csv(runs: QuerySet[JudgeRun], fmt: str, *, only: Any = None) -> Iterator[str]:
    """Yield the CSV text of one export format for the given runs, header first.

    Conversations of a locked test set (``core.locks``) are left out: their judge labels leave
    the app only after a version declared final was evaluated on that test set. ``only``: just
    these conversation ids (a study's export carries no label of another study's conversations).
    """
    if fmt == "long":
        return stream_csv(LONG_COLUMNS, long_rows(runs, only))
    if fmt == "dimensions":
        return stream_csv(DIMENSION_COLUMNS, dimension_rows(runs, only))
    if fmt == "ensemble":
        return stream_csv(ENSEMBLE_COLUMNS, ensemble_rows(runs, only))
    raise ValueError(f"unknown export format '{fmt}'; use {', '.join(FORMATS)}")
