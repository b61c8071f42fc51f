"""Judge labels made outside the app (VERA-MH's own judge, AMHART's scripts, any other tool).

``import_judge_labels FILE.csv --instrument KEY`` reads a long file ``unit,judge,item,label``
(optional ``rationale``, ``instance``, ``evidence_turns`` and ``missing_reason`` columns) and stores it as one finished *external*
judge run: one Judge per judge name (model ``external/<name>``, provider ``external``, no
prompt is ever sent), one JudgeResult per (judge, conversation, instance) and one JudgeLabel
per label, then the same majority-vote ensemble as in-app runs. So the labels feed the
ensemble, the judges-vs-humans report and the run scorecard exactly like in-app runs, and
never the inter-rater reliability (which reads human ratings only).

``unit`` is a conversation code or source id (``#`` prefix dropped); ``item`` an item key
(checklists) or a dimension name (question flows); an empty label is a missing label;
``evidence_turns`` the turns the judge cited ("3 5" or "3;5": turn n is the conversation's n-th
message, as ``judge_labels_long.csv`` writes them), kept as the label's evidence without quotes.
All-or-nothing, with the same grouped problem reports as every importer.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import Count
from django.utils import timezone

from core.bounded import BoundedCsv
from core.problems import ImportRejected, Problem
from corpus.conversations.selectors import conversation_ids_resolve
from corpus.instruments.flow import LABELS as FLOW_LABELS
from corpus.models import Instrument, InstrumentKind, Message
from judging.ensemble import ensemble_compute, ensemble_rule
from judging.judges import judge_snapshot
from judging.material import instrument_view, vote_keys
from judging.models import (
    Judge,
    JudgeLabel,
    JudgeMode,
    JudgeResult,
    JudgeRun,
    LabelKind,
    LabelStatus,
    PromptTemplate,
    ResultStatus,
    RunStatus,
)
from judging.prompts import content_hash

COLUMNS = ("unit", "judge", "item", "label")
OPTIONAL = ("rationale", "instance", "evidence_turns", "missing_reason")
EXTERNAL_PROVIDER = "external"
NO_PROMPT = "(labels imported from outside the app: evalsite sent no prompt for them)"


@dataclass(frozen=True)
class JudgeLabelsImportResult:
    run: JudgeRun | None
    dry_run: bool
    n_rows: int
    n_labels: int
    judges: tuple[str, ...]
    n_conversations: int
    n_ensemble: int


@dataclass(frozen=True)
class _Label:
    line: int
    conversation_id: int
    judge: str
    instance: int
    item: str
    label: str
    rationale: str
    evidence: tuple[int, ...] = ()
    missing_reason: str = ""


def _evidence(cell: str) -> tuple[int, ...] | None:
    """Read an evidence_turns cell ("3 5", "3;5", empty: none); None when it is not a list of turn numbers."""
    cells = cell.replace(";", " ").split()
    if not all(c.isdigit() and int(c) >= 1 for c in cells):
        return None
    return tuple(int(c) for c in cells)


def _allowed(instrument: Instrument) -> dict[str, tuple[str, ...]]:
    """Return ``{item key or dimension: allowed labels}``."""
    if instrument.kind == InstrumentKind.FLOW:
        return {d: FLOW_LABELS for d in dict.fromkeys(instrument.items.order_by("position").values_list("domain", flat=True)) if d}
    return {i.key: tuple(i.allowed_labels()) for i in instrument.items.order_by("position")}


def _parse(text: str, file: str, instrument: Instrument) -> tuple[list[_Label], list[Problem], int]:
    reader = BoundedCsv(csv.DictReader(io.StringIO(text.lstrip("\ufeff"))), file)
    header = {(n or "").strip().lower(): n for n in reader.fieldnames or []}
    missing = [c for c in COLUMNS if c not in header]
    if missing:
        return [], [Problem(f"missing column(s) {', '.join(missing)}; the header must be unit,judge,item,label[,rationale][,instance][,evidence_turns][,missing_reason]", file, 1, c) for c in missing], 0
    rows = [(reader.line_num, {c: (r.get(header[c]) or "").strip() for c in (*COLUMNS, *OPTIONAL)
                               if c in header}) for r in reader]
    found, unknown = conversation_ids_resolve([r["unit"] for _, r in rows if r["unit"]])
    ids = {pk for pks in found.values() for pk in pks}
    messages = dict(Message.objects.filter(conversation_id__in=ids).values("conversation_id").annotate(n=Count("id"))
                    .values_list("conversation_id", "n"))
    allowed = _allowed(instrument)
    existing = dict(Judge.objects.filter(name__in={r["judge"] for _, r in rows}).values_list("name", "provider"))
    problems: list[Problem] = []
    labels: list[_Label] = []
    seen: dict[tuple[int, str, int, str], int] = {}
    for line, r in rows:
        def bad(column: str, message: str, line: int = line) -> None:
            problems.append(Problem(message, file, line, column))

        pks = found.get(r["unit"]) if r["unit"] else None
        if not r["unit"]:
            bad("unit", "the unit is empty")
        elif r["unit"] in unknown:
            bad("unit", f"unknown unit '{r['unit']}': no conversation has this code or source id")
        elif pks and len(pks) > 1:
            bad("unit", f"source id '{r['unit']}' matches {len(pks)} conversations; use their codes")
        if not r["judge"]:
            bad("judge", "the judge is empty")
        elif r["judge"] in existing and existing[r["judge"]] != EXTERNAL_PROVIDER:
            bad("judge", f"'{r['judge']}' is the name of an in-app judge; give the external judge another name")
        item = r["item"]
        match_item = next((k for k in allowed if k.casefold() == item.casefold()), None)
        if match_item is None:
            bad("item", f"unknown item '{item}' of {instrument}; expected one of: {', '.join(list(allowed)[:20])}")
        label = r["label"]
        if match_item is not None and label:
            choice = next((x for x in allowed[match_item] if x.casefold() == label.casefold()), None)
            if choice is None:
                bad("label", f"'{label}' is not a label of {match_item}; allowed: {', '.join(allowed[match_item])}")
            label = choice or label
        instance = 0
        if r.get("instance"):
            if not r["instance"].isdigit() or int(r["instance"]) > 20:
                bad("instance", f"'{r['instance']}' is not an instance number from 0 to 20")
            else:
                instance = int(r["instance"])
        evidence = _evidence(r.get("evidence_turns", ""))
        if evidence is None:
            bad("evidence_turns", f"'{r['evidence_turns']}' is not a list of turn numbers (e.g. 3 5)")
        elif pks and len(pks) == 1 and any(t > messages.get(pks[0], 0) for t in evidence):
            bad("evidence_turns", f"turn {max(evidence)} is not a turn of unit '{r['unit']}' ({messages.get(pks[0], 0)} messages)")
        if problems and problems[-1].line == line:
            continue
        assert pks is not None and match_item is not None and evidence is not None
        key = (pks[0], r["judge"], instance, match_item)
        if key in seen:
            bad("item", f"duplicate: unit '{r['unit']}', judge '{r['judge']}', item '{item}' already on line {seen[key]}")
            continue
        seen[key] = line
        labels.append(_Label(line, pks[0], r["judge"], instance, match_item, label, r.get("rationale", ""), evidence,
                             r.get("missing_reason", "") if not label else ""))
    if not rows and not problems:
        problems.append(Problem("the file has a header but no labels", file, 1))
    return labels, problems, len(rows)


def _external_prompt(mode: str) -> PromptTemplate:
    key = f"external-labels-{mode}"
    digest = content_hash(mode=mode, system=NO_PROMPT, user=NO_PROMPT, retry=NO_PROMPT)
    prompt = PromptTemplate.objects.filter(key=key, content_hash=digest).first()
    if prompt is None:
        prompt = PromptTemplate.objects.create(
            key=key, version=1, name="External labels (no prompt)", mode=mode,
            description="Stands for judges whose labels were imported: evalsite never called them.",
            system_template=NO_PROMPT, user_template=NO_PROMPT, retry_template=NO_PROMPT, content_hash=digest,
        )
    return prompt


@transaction.atomic
def judge_labels_import(
    *, text: str, file: str, instrument: Instrument, name: str = "", created_by: AbstractBaseUser | None = None,
    dry_run: bool = False, identities: dict[str, tuple[str, str]] | None = None,
) -> JudgeLabelsImportResult:
    """Store judge labels made outside the app as one finished external judge run; all or nothing.

    ``identities``: judge name -> (provider, model) it was known by where the labels were made (a
    publication bundle names them); the run's snapshot of that judge records them, still marked
    external, so the run's exports name the judge as the source did. Without it: ``external``.
    """
    labels, problems, n_rows = _parse(text, file, instrument)
    if problems:
        raise ImportRejected(problems)
    judges_in_file = list(dict.fromkeys(label.judge for label in labels))
    conversations = sorted({label.conversation_id for label in labels})
    n_labels = sum(1 for label in labels if label.label)
    if dry_run:
        return JudgeLabelsImportResult(None, True, n_rows, n_labels, tuple(judges_in_file), len(conversations), 0)
    mode = JudgeMode.FLOW if instrument.kind == InstrumentKind.FLOW else JudgeMode.CHECKLIST
    prompt = _external_prompt(mode)
    judges: list[Judge] = []
    for judge_name in judges_in_file:
        judge, _ = Judge.objects.get_or_create(
            name=judge_name,
            defaults={
                "mode": mode, "instrument": instrument, "model": f"external/{judge_name}", "provider": EXTERNAL_PROVIDER,
                "prompt": prompt, "temperature": None, "notes": f"Labels imported from {file}; never called by evalsite.",
            },
        )
        judges.append(judge)
    by_name = {j.name: j for j in judges}
    snapshots = {str(j.pk): {**judge_snapshot(j, position=i), "external": True} for i, j in enumerate(judges)}
    for snapshot in snapshots.values():
        provider, model = (identities or {}).get(snapshot.get("name", ""), ("", ""))
        if provider and model:
            snapshot.update(provider=provider, model=model)
    now = timezone.now()
    instances = max(label.instance for label in labels) + 1
    run = JudgeRun.objects.create(
        name=name.strip() or f"External labels from {file}",
        instrument=instrument,
        mode=mode,
        selection={"imported_from": file, "conversations": len(conversations), "external": True},
        config={
            "judges": snapshots,
            "instrument": {"id": instrument.pk, "content_hash": instrument.content_hash},
            "external": {"file": file, "rows": n_rows},
        },
        instances=instances,
        use_cache=False,
        # The judges' providers are unknown: say so rather than warn about one shared "external" provider.
        warnings=[f"Labels imported from {file}: made outside the app; their models and prompts are not known here."],
        ensemble_rule=ensemble_rule(len(judges)),
        status=RunStatus.COMPLETED,
        started_at=now,
        finished_at=now,
        created_by=created_by if getattr(created_by, "pk", None) else None,
    )
    run.judges.set(judges)
    kind = LabelKind.DIMENSION if mode == JudgeMode.FLOW else LabelKind.ITEM
    results: dict[tuple[int, int, int], JudgeResult] = {}
    for label in labels:
        key = (by_name[label.judge].pk, label.conversation_id, label.instance)
        if key not in results:
            results[key] = JudgeResult(
                run=run, judge_id=key[0], conversation_id=key[1], instance=key[2], status=ResultStatus.DONE,
                ended_by="imported", started_at=now, finished_at=now,
            )
    JudgeResult.objects.bulk_create(results.values(), batch_size=1000)
    position = {k: i for i, k in enumerate(_allowed(instrument))}
    JudgeLabel.objects.bulk_create(
        (
            JudgeLabel(
                result=results[(by_name[label.judge].pk, label.conversation_id, label.instance)],
                kind=kind, item_key=label.item, position=position.get(label.item, 0), label=label.label,
                status=LabelStatus.OK if label.label else LabelStatus.MISSING, rationale=label.rationale,
                # The turns only: a file carries no quote to verify against the transcript.
                evidence=[{"turn": turn} for turn in label.evidence],
                missing_reason="" if label.label else (label.missing_reason or f"no label in {file}"),
            )
            for label in labels
        ),
        batch_size=1000,
    )
    run.n_total = run.n_done = len(results)
    run.save(update_fields=["n_total", "n_done"])
    n_ensemble = ensemble_compute(run=run, item_order=vote_keys(instrument_view(instrument.pk, instrument.content_hash)))
    return JudgeLabelsImportResult(run, False, n_rows, n_labels, tuple(judges_in_file), len(conversations), n_ensemble)


def run_is_external(run: JudgeRun) -> bool:
    return bool((run.config or {}).get("external"))


