"""study.json's active sampling and judge development records: written by the export, read back by the import.

``active_plan``: the plan an active study grows by (its design, seed, visit order by conversation
code, planning values) and every batch with every visited conversation's uncertainty, inclusion
probability and draw. ``holdout``: the study's development/test splits (members by code), the
versions declared final under them and every look at a test set with its stored result. Both
name database rows the way the rest of the bundle does (conversations by code, a judge by name,
a judge run by its place among the study's runs), so a study rebuilt from the bundle in another
database writes the same records again (issue 31). ``docs/formats.md`` describes the keys.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import datetime
from typing import Any

from annotation.errors import AnnotationError
from annotation.models import ActivePlan, Study
from annotation.sampling.active.restore import (
    BATCH_FIELDS,
    PLAN_FIELDS,
    RestoredBatch,
    RestoredUnit,
    active_plan_restore,
)
from core.problems import ImportRejected, Problem
from reports.bundle import layout
from reports.devset.restore import DeclarationRecord, LookRecord, SplitRecord, holdout_restore
from reports.devset.selectors import test_data_version
from reports.errors import ReportsError
from reports.models import FinalDeclaration, HoldoutLook, HoldoutSplit

# A declaration's label names its run by id ("ensemble of run #12 (…)"); the bundle writes this
# mark instead, and the import puts back the id the run gets in the importing database.
RUN_MARK = "run #{run}"
UNIT_COLUMNS = ("conversation", "position", "uncertainty", "inclusion_prob", "selected")
MEMBER_COLUMNS = ("conversation", "part", "stratum")


def judge_source_name(source: str, run: Any) -> str:
    """Return a label source key with a judge named by name (``judge_name:NAME``) instead of by id (``judge:ID``)."""
    if not source.startswith("judge:"):
        return source
    judge = (run.config or {}).get("judges", {}).get(source.split(":", 1)[1], {})
    return f"judge_name:{judge.get('name', '')}"


def judge_source_key(source: str, run: Any, where: str) -> str:
    """Return the label source key of this database for a bundle's (``judge_name:NAME`` -> ``judge:ID``)."""
    if not source.startswith("judge_name:"):
        return source
    name = source.split(":", 1)[1]
    judge = run.judges.filter(name=name).first()
    if judge is None:
        raise ImportRejected([Problem(f"judge '{name}' is not a judge of its run", layout.STUDY, None, where)])
    return f"judge:{judge.pk}"


def runs_mapped(payload: Any, mapping: dict[int, int]) -> Any:
    """Return a stored report payload with every ``run`` number looked up in ``mapping`` (id -> place, or back)."""
    if isinstance(payload, dict):
        return {key: mapping.get(value, value) if key == "run" and isinstance(value, int) and not isinstance(value, bool)
                else runs_mapped(value, mapping) for key, value in payload.items()}
    if isinstance(payload, list):
        return [runs_mapped(value, mapping) for value in payload]
    return payload


def _iso(stamp: datetime | None) -> str | None:
    return stamp.isoformat() if stamp is not None else None


def active_document(study: Study, codes: dict[int, str], places: dict[int, int]) -> dict[str, Any] | None:
    """Return study.json's ``active_plan``, or None for a study not built by active sampling."""
    plan = ActivePlan.objects.filter(study=study).select_related("judge_run").first()
    if plan is None:
        return None
    batches = []
    for batch in plan.batches.order_by("number"):
        units = [[codes[u.conversation_id], u.position, u.uncertainty, u.inclusion_prob, u.selected]
                 for u in batch.units.order_by("position", "pk")]
        batches.append({**{name: getattr(batch, name) for name in BATCH_FIELDS}, "created_at": _iso(batch.created_at),
                        "units": units})
    fields = {name: getattr(plan, name) for name in PLAN_FIELDS}
    fields.update(source=judge_source_name(plan.source, plan.judge_run), order=[codes[pk] for pk in plan.order])
    return {"run": places.get(plan.judge_run_id), **fields, "batches": batches}


def holdout_document(study: Study, codes: dict[int, str], places: dict[int, int]) -> dict[str, Any] | None:
    """Return study.json's ``holdout`` (splits, declarations, looks), or None for a study never split."""
    splits = list(HoldoutSplit.objects.filter(study=study).order_by("number"))
    if not splits:
        return None
    declarations = list(FinalDeclaration.objects.filter(study=study).select_related("run", "split")
                        .order_by("split__number", "declared_at", "id"))
    index = {d.pk: i for i, d in enumerate(declarations)}
    looks = HoldoutLook.objects.filter(study=study).select_related("split", "declaration").order_by("split__number", "number")
    return {
        "splits": [{
            "number": s.number, "seed": s.seed, "n_test": s.n_test, "n_dev": s.n_dev, "method": s.method, "strata": s.strata,
            "guidance": s.guidance, "reason": s.reason, "created_at": _iso(s.created_at),
            "members": [[codes[cid], part, stratum]
                        for cid, part, stratum in s.members.order_by("pk").values_list("conversation_id", "part", "stratum")],
        } for s in splits],
        "declarations": [{
            "split": d.split.number, "run": places.get(d.run_id), "source": judge_source_name(d.source, d.run),
            "label": re.sub(rf"\brun #{d.run_id}\b", RUN_MARK, d.label), "note": d.note, "declared_at": _iso(d.declared_at),
        } for d in declarations],
        "looks": [{
            "split": lk.split.number, "number": lk.number, "declaration": index[lk.declaration_id], "na_policy": lk.na_policy,
            "status": lk.status, "error": lk.error, "looked_at": _iso(lk.looked_at), "finished_at": _iso(lk.finished_at),
            # Whether the result was computed on the data the bundle holds (then it is the same look where it is rebuilt).
            "current": lk.data_version == test_data_version(study, lk.split, lk.declaration, lk.na_policy),
            "payload": runs_mapped(lk.payload, places),
        } for lk in looks],
    }


# The import: each reader raises ImportRejected naming study.json and the key at fault.

_KIND_WORDS = {str: "text", int: "a whole number", float: "a number", bool: "true or false", dict: "an object", list: "a list"}


def _value(entry: Any, key: str, kinds: tuple[type, ...], where: str) -> Any:
    value = entry.get(key) if isinstance(entry, dict) else None
    wrong_bool = isinstance(value, bool) and bool not in kinds
    if not isinstance(value, kinds) or wrong_bool:
        wanted = " or ".join(dict.fromkeys(_KIND_WORDS.get(k, "null") for k in kinds))
        raise ImportRejected([Problem(f"should be {wanted}", layout.STUDY, None, f"{where}.{key}")])
    return value


def _time(entry: dict[str, Any], key: str, where: str) -> datetime | None:
    value = _value(entry, key, (str, type(None)), where)
    if value is None:
        return None
    try:
        stamp = datetime.fromisoformat(value)
    except ValueError:
        stamp = None
    if stamp is None or stamp.tzinfo is None:
        raise ImportRejected([Problem(f"'{value}' is not an ISO 8601 time with a UTC offset", layout.STUDY, None, f"{where}.{key}")])
    return stamp


def _conversation(code: Any, by_code: dict[str, int], where: str) -> int:
    if not isinstance(code, str) or code not in by_code:
        raise ImportRejected([Problem(f"conversation '{code}' is not in {layout.JSONL}", layout.STUDY, None, where)])
    return by_code[code]


def _row(cells: Any, columns: tuple[str, ...], where: str) -> list[Any]:
    if not isinstance(cells, list) or len(cells) != len(columns):
        raise ImportRejected([Problem(f"should be a list [{', '.join(columns)}]", layout.STUDY, None, where)])
    return cells


def _run(runs: dict[Any, Any], entry: dict[str, Any], where: str) -> Any:
    run = runs.get(entry.get("run"))
    if run is None:
        raise ImportRejected([Problem(f"judge run {entry.get('run')} is not among the bundle's runs", layout.STUDY, None,
                                      f"{where}.run")])
    return run


def _service(call: Callable[[], Any], where: str) -> Any:
    try:
        return call()
    except (AnnotationError, ReportsError) as exc:
        raise ImportRejected([Problem(str(exc), layout.STUDY, None, where)]) from exc


def restore_active(document: dict[str, Any], study: Study, runs: dict[Any, Any], by_code: dict[str, int], actor: Any) -> None:
    """Restore study.json's ``active_plan`` (if any) on the rebuilt study."""
    plan = document.get("active_plan")
    if not plan:
        return
    where = "active_plan"
    run = _run(runs, plan, where)
    fields = {name: plan[name] for name in PLAN_FIELDS if name in plan}
    fields["source"] = judge_source_key(str(plan.get("source") or "ensemble"), run, f"{where}.source")
    fields["order"] = [_conversation(code, by_code, f"{where}.order[{i}]")
                       for i, code in enumerate(_value(plan, "order", (list,), where))]
    batches = []
    for i, batch in enumerate(_value(plan, "batches", (list,), where)):
        at = f"{where}.batches[{i}]"
        units = []
        for j, cells in enumerate(_value(batch, "units", (list,), at)):
            code, position, uncertainty, prob, selected = _row(cells, UNIT_COLUMNS, f"{at}.units[{j}]")
            unit = dict(zip(UNIT_COLUMNS[1:], (position, uncertainty, prob, selected), strict=True))
            _value(unit, "position", (int,), f"{at}.units[{j}]")
            _value(unit, "uncertainty", (int, float), f"{at}.units[{j}]")
            _value(unit, "inclusion_prob", (int, float), f"{at}.units[{j}]")
            _value(unit, "selected", (bool,), f"{at}.units[{j}]")
            units.append(RestoredUnit(_conversation(code, by_code, f"{at}.units[{j}]"), position, float(uncertainty), float(prob),
                                      selected))
        batches.append(RestoredBatch({name: batch[name] for name in BATCH_FIELDS if name in batch},
                                     _time(batch, "created_at", at), units))
    _service(lambda: active_plan_restore(study=study, judge_run=run, fields=fields, batches=batches, actor=actor), where)


def restore_holdout(document: dict[str, Any], study: Study, runs: dict[Any, Any], by_code: dict[str, int], actor: Any) -> None:
    """Restore study.json's ``holdout`` (if any): the splits, the declarations of final versions and the looks."""
    holdout = document.get("holdout")
    if not holdout:
        return
    where = "holdout"
    splits = []
    for i, entry in enumerate(_value(holdout, "splits", (list,), where)):
        at = f"{where}.splits[{i}]"
        members = []
        for j, cells in enumerate(_value(entry, "members", (list,), at)):
            code, part, stratum = _row(cells, MEMBER_COLUMNS, f"{at}.members[{j}]")
            members.append((_conversation(code, by_code, f"{at}.members[{j}]"), str(part), str(stratum)))
        splits.append(SplitRecord(
            _value(entry, "number", (int,), at), _value(entry, "seed", (int,), at), _value(entry, "n_test", (int,), at),
            _value(entry, "n_dev", (int,), at), _value(entry, "method", (str,), at), _value(entry, "strata", (list,), at),
            _value(entry, "guidance", (dict,), at), _value(entry, "reason", (str,), at), _time(entry, "created_at", at), members,
        ))
    declarations = []
    for i, entry in enumerate(_value(holdout, "declarations", (list,), where)):
        at = f"{where}.declarations[{i}]"
        run = _run(runs, entry, at)
        declarations.append(DeclarationRecord(
            _value(entry, "split", (int,), at), run, judge_source_key(_value(entry, "source", (str,), at), run, f"{at}.source"),
            _value(entry, "label", (str,), at).replace(RUN_MARK, f"run #{run.pk}"), _value(entry, "note", (str,), at),
            _time(entry, "declared_at", at),
        ))
    back = {place: run.pk for place, run in runs.items() if isinstance(place, int)}
    looks = []
    for i, entry in enumerate(_value(holdout, "looks", (list,), where)):
        at = f"{where}.looks[{i}]"
        looks.append(LookRecord(
            _value(entry, "split", (int,), at), _value(entry, "number", (int,), at), _value(entry, "declaration", (int,), at),
            _value(entry, "na_policy", (str,), at), _value(entry, "status", (str,), at), _value(entry, "error", (str,), at),
            runs_mapped(_value(entry, "payload", (dict,), at), back), _time(entry, "looked_at", at),
            _time(entry, "finished_at", at), _value(entry, "current", (bool,), at),
        ))
    _service(lambda: holdout_restore(study=study, splits=splits, declarations=declarations, looks=looks, actor=actor), where)
