"""Rebuild a study from its publication bundle, all or nothing, every problem named by file, line and column.

The manifest is read first: its format, then every file's SHA-256 and size (a changed, missing
or unlisted file is refused before anything is read; the chart images, outputs made from
figures/plotly/, are checked that way and never read back). Then the tables' headers and rows are
checked, and the study is rebuilt through the importers the app already has, inside one
transaction: the instrument and section, the persona sets, the conversations (keeping their
codes), the study with its settings and design, the ratings (external raters named as in the
bundle, stored in the bundle's order), each rating's queue position and timing, the consensus
labels as they stood, each judge run (as an external run, oldest first, with the turns its judges
cited), the sampling plan, an active study's plan with every batch and draw, and the
development/test splits with their declarations and looks (``reports.bundle.design``).
Any problem rolls the whole import back.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from annotation.errors import AnnotationError
from annotation.models import Study
from annotation.studies.ratings_import import ratings_import
from annotation.studies.restore import (
    AssignmentTiming,
    CitedTurns,
    ConsensusEntry,
    ConversationLink,
    OpenAssignment,
    assignments_restore_open,
    assignments_restore_timing,
    consensus_restore,
    ratings_restore_evidence,
    sampling_plan_restore,
    study_restore,
)
from core.bounded import TooComplex, json_loads
from core.problems import ImportRejected, Problem
from core.uploads import read_zip_files
from corpus.conversations.services import conversations_import
from corpus.instruments.services import instrument_create_from_spec
from corpus.instruments.spec import parse_instrument_spec
from corpus.models import Conversation, Instrument, InstrumentKind
from corpus.personas.services import persona_set_create_from_spec
from corpus.personas.spec import parse_persona_set_spec
from judging.external import judge_labels_import
from reports.bundle import design, layout

# The export neutralises spreadsheet formulas with a leading apostrophe (core.csvstream); read back without it.
_NEUTRALISED = ("'=", "'+", "'-", "'@", "'\t", "'\r")


@dataclass(frozen=True)
class BundleImportResult:
    study: Study
    n_conversations: int
    n_ratings: int
    n_consensus: int
    runs: tuple[Any, ...]
    dry_run: bool = False

    def summary(self) -> str:
        verb = "checked" if self.dry_run else "imported"
        return (f"{verb} study '{self.study.name}': {self.n_conversations} conversation(s), {self.n_ratings} rating(s), "
                f"{self.n_consensus} consensus label(s), {len(self.runs)} judge run(s)")


class _DryRun(Exception):
    def __init__(self, result: BundleImportResult):
        self.result = result


def _cell(value: str) -> str:
    return value[1:] if value.startswith(_NEUTRALISED) else value


@dataclass
class _Table:
    name: str
    rows: list[tuple[int, dict[str, str]]]


class _Bundle:
    """The bundle's files, checked against the manifest."""

    def __init__(self, data: bytes, file: str):
        self.file = file
        # The chart images are outputs (made from figures/plotly/): kept as bytes for their checksums, never read back.
        files = read_zip_files(file if file.lower().endswith(".zip") else f"{file}.zip", io.BytesIO(data), binary=layout.is_image)
        self.texts = {name: content for name, content in files if isinstance(content, str)}
        self.images = {name: content for name, content in files if isinstance(content, bytes)}
        if layout.MANIFEST not in self.texts:
            raise ImportRejected([Problem(f"no {layout.MANIFEST}: not a publication bundle", file)])
        self.manifest = self.json(layout.MANIFEST)
        problems = _shape_problems(layout.MANIFEST, self.manifest, MANIFEST_SHAPE)
        if problems:
            raise ImportRejected(problems)
        fmt = self.manifest.get("bundle_format")
        if fmt != layout.BUNDLE_FORMAT:
            raise ImportRejected([Problem(f"bundle format {fmt!r}; this version of evalsite reads format {layout.BUNDLE_FORMAT}",
                                          layout.MANIFEST, None, "bundle_format")])
        problems: list[Problem] = []
        listed = {}
        for entry in self.manifest.get("files") or []:
            listed[entry.get("path")] = entry
            text = self.texts.get(entry.get("path"))
            content = text.encode("utf-8") if text is not None else self.images.get(entry.get("path"))
            if content is None:
                problems.append(Problem("listed in the manifest but missing from the bundle", entry.get("path") or "?"))
                continue
            digest = hashlib.sha256(content).hexdigest()
            if digest != entry.get("sha256"):
                problems.append(Problem(f"SHA-256 {digest[:12]}… differs from the manifest's {str(entry.get('sha256'))[:12]}…: "
                                        "the file was changed after the bundle was made", entry["path"]))
        for name in sorted((set(self.texts) | set(self.images)) - set(listed) - {layout.MANIFEST}):
            problems.append(Problem("not listed in the manifest (no checksum): added after the bundle was made?", name))
        if problems:
            raise ImportRejected(problems)

    def text(self, name: str) -> str:
        if name not in self.texts:
            raise ImportRejected([Problem("missing from the bundle", name)])
        return self.texts[name]

    def json(self, name: str) -> Any:
        """Parse a JSON file of the bundle within the bounds (``core.bounded``: 64 levels at most)."""
        try:
            return json_loads(self.text(name))
        except json.JSONDecodeError as exc:
            raise ImportRejected([Problem(f"not valid JSON: {exc.msg}", name, exc.lineno)]) from exc
        except TooComplex as exc:
            raise ImportRejected([Problem(str(exc), name, exc.line)]) from exc

    def table(self, name: str, required: list[str] | None = None) -> _Table:
        """Read a CSV of the bundle, its header checked against the layout's columns."""
        required = required if required is not None else [c for c, _ in layout.COLUMNS[name]]
        reader = csv.reader(io.StringIO(self.text(name)))
        try:
            header = next(reader)
        except StopIteration:
            raise ImportRejected([Problem("the file is empty; expected the header " + ",".join(required), name, 1)]) from None
        problems = [Problem(f"missing column '{c}'; the header must hold {','.join(required)}", name, 1, c)
                    for c in required if c not in header]
        if problems:
            raise ImportRejected(problems)
        rows = []
        for row in reader:
            if not any(cell.strip() for cell in row):
                continue
            if len(row) != len(header):
                raise ImportRejected([Problem(f"expected {len(header)} fields, found {len(row)}", name, reader.line_num)])
            rows.append((reader.line_num, {h: _cell(v) for h, v in zip(header, row, strict=True)}))
        return _Table(name, rows)


def _int(table: _Table, line: int, column: str, value: str, problems: list[Problem]) -> int:
    try:
        return int(float(value))
    except ValueError:
        problems.append(Problem(f"'{value}' is not a number", table.name, line, column))
        return 0


def _float(table: _Table, line: int, column: str, value: str, problems: list[Problem]) -> float:
    try:
        return float(value)
    except ValueError:
        problems.append(Problem(f"'{value}' is not a number", table.name, line, column))
        return 0.0


def _bool(table: _Table, line: int, column: str, value: str, problems: list[Problem]) -> bool:
    if value.strip().lower() in ("true", "1", "yes"):
        return True
    if value.strip().lower() in ("false", "0", "no", ""):
        return False
    problems.append(Problem(f"'{value}' is not true or false", table.name, line, column))
    return False


def _time(table: _Table, line: int, column: str, value: str, problems: list[Problem]) -> datetime | None:
    if not value:
        return None
    try:
        stamp = datetime.fromisoformat(value)
    except ValueError:
        problems.append(Problem(f"'{value}' is not an ISO 8601 time", table.name, line, column))
        return None
    if stamp.tzinfo is None:
        problems.append(Problem(f"'{value}' has no UTC offset", table.name, line, column))
    return stamp


def _turns(table: _Table, line: int, value: str, problems: list[Problem]) -> tuple[int, ...]:
    """Read an evidence_turns cell ("3;5"; empty: none)."""
    cells = [c.strip() for c in (value or "").split(";") if c.strip()]
    if not all(c.isdigit() and int(c) >= 1 for c in cells):
        problems.append(Problem(f"'{value}' is not a list of turn numbers separated by ';' (e.g. 3;5)", table.name, line,
                                layout.EVIDENCE_TURNS))
        return ()
    return tuple(int(c) for c in cells)


def _service(call: Any, file: str) -> Any:
    """Run an app service; its ``AnnotationError`` becomes a problem of ``file``."""
    try:
        return call()
    except AnnotationError as exc:
        raise ImportRejected([Problem(str(exc), file)]) from exc


def bundle_import(*, data: bytes, file: str, actor: AbstractBaseUser | None = None, dry_run: bool = False,
                  coordinators: list[Any] = ()) -> BundleImportResult:  # type: ignore[assignment]
    """Rebuild the study of a publication bundle; all or nothing (``ImportRejected`` lists the problems).

    ``coordinators`` manage the rebuilt study (the API passes the coordinator who imports it).
    ``dry_run`` does everything, then rolls it back: what would be imported, checked the whole way.
    """
    bundle = _Bundle(data, file)
    try:
        with transaction.atomic():
            result = _import(bundle, actor, list(coordinators))
            if dry_run:
                raise _DryRun(BundleImportResult(result.study, result.n_conversations, result.n_ratings,
                                                 result.n_consensus, result.runs, dry_run=True))
    except _DryRun as done:
        return done.result
    return result


# The shapes the importer reads (a type per key; a list's one element stands for each of its
# elements): a file of another shape is refused with where, never read into a server error.
MANIFEST_SHAPE: dict[str, Any] = {"files": [{"path": str, "sha256": str}]}
STUDY_SHAPE: dict[str, Any] = {
    "name": (str, type(None)), "description": (str, type(None)), "instrument": (str, type(None)),
    "section": (str, type(None)), "settings": (dict, type(None)), "selection": (dict, type(None)),
    "conversations": [{"code": str, "is_calibration": (bool, type(None)), "inclusion_prob": (int, float, type(None)),
                       "stratum": (str, type(None))}],
    "judge_runs": [{"run": (int, str), "instrument": str, "name": (str, type(None))}],
    "sampling_plan": ({"run": (int, str), "source": (str, type(None)), "planning": ({"unit_inclusion_prob": dict}, type(None))}, type(None)),
    "active_plan": ({"run": (int, str), "source": (str, type(None)), "order": [str], "planning": (dict, type(None)),
                     "batches": [{"units": [list], "created_at": (str, type(None))}]}, type(None)),
    "holdout": ({"splits": [{"members": [list]}], "declarations": [{"run": (int, str), "source": str, "label": str}],
                 "looks": [{"declaration": int, "payload": dict}]}, type(None)),
}
_KINDS = {dict: "an object", list: "a list", str: "text", int: "a number", float: "a number", bool: "true or false",
          type(None): "null"}


def _shape_problems(file: str, value: Any, shape: Any, where: str = "") -> list[Problem]:
    """Return a problem for each value of ``value`` whose type is not the one ``shape`` gives it."""
    options = shape if isinstance(shape, tuple) else (shape,)
    for option in options:
        if isinstance(option, dict) and isinstance(value, dict):
            return [p for key, sub in option.items() if key in value
                    for p in _shape_problems(file, value[key], sub, f"{where}.{key}" if where else key)]
        if isinstance(option, list) and isinstance(value, list):
            return [p for i, item in enumerate(value) for p in _shape_problems(file, item, option[0], f"{where}[{i}]")][:20]
        if isinstance(option, type) and isinstance(value, option) and not (option is int and isinstance(value, bool)):
            return []
    wanted = " or ".join(dict.fromkeys(_KINDS[o if isinstance(o, type) else type(o)] for o in options))
    return [Problem(f"should be {wanted}, not {_KINDS.get(type(value), type(value).__name__)}", file, None, where or "(the whole file)")]


def _import(bundle: _Bundle, actor: AbstractBaseUser | None, coordinators: list[Any]) -> BundleImportResult:
    document = bundle.json(layout.STUDY)
    problems = _shape_problems(layout.STUDY, document, STUDY_SHAPE)
    if problems:
        raise ImportRejected(problems)
    instruments: dict[str, Instrument] = {}
    for name in sorted(n for n in bundle.texts if n.startswith("instruments/")):
        spec = parse_instrument_spec(bundle.text(name), name)
        instruments[name], _ = instrument_create_from_spec(spec=spec, created_by=actor)
    for name in sorted(n for n in bundle.texts if n.startswith("personas/")):
        persona_set_create_from_spec(spec=parse_persona_set_spec(bundle.text(name), name), created_by=actor)
    imported = conversations_import(files=[(layout.JSONL, bundle.text(layout.JSONL))], fmt="jsonl", created_by=actor, keep_codes=True)
    by_code = _conversations_by_code(bundle)

    def instrument(key: str | None, column: str) -> Instrument | None:
        if key is None:
            return None
        if key not in instruments:
            raise ImportRejected([Problem(f"'{key}' is not an instrument file of the bundle", layout.STUDY, None, column)])
        return instruments[key]

    main = instrument(document.get("instrument"), "instrument")
    if main is None:
        raise ImportRejected([Problem("the study names no instrument", layout.STUDY, None, "instrument")])
    links = []
    problems: list[Problem] = []
    for index, entry in enumerate(document.get("conversations") or []):
        code = entry.get("code")
        if code not in by_code:
            problems.append(Problem(f"conversation '{code}' is not in {layout.JSONL}", layout.STUDY, None, f"conversations[{index}].code"))
            continue
        links.append(ConversationLink(by_code[code], bool(entry.get("is_calibration")), entry.get("inclusion_prob"), entry.get("stratum") or ""))
    if problems:
        raise ImportRejected(problems)
    study = _service(lambda: study_restore(
        name=str(document.get("name") or "Imported study"), description=str(document.get("description") or ""),
        instrument=main, section=instrument(document.get("section"), "section"), settings=document.get("settings") or {},
        links=links, selection=document.get("selection") or {}, created_by=actor, source=bundle.file, coordinators=coordinators,
    ), layout.STUDY)
    n_ratings = _ratings(bundle, study, actor)
    n_consensus = _consensus(bundle, study)
    runs = _judge_runs(bundle, document, instruments, actor)
    plan = document.get("sampling_plan")
    if plan:
        run = runs.get(plan.get("run"))
        if run is None:
            raise ImportRejected([Problem(f"the sampling plan's judge run {plan.get('run')} is not among the bundle's runs",
                                          layout.STUDY, None, "sampling_plan.run")])
        fields = _plan_fields(plan, run, by_code)
        _service(lambda: sampling_plan_restore(study=study, judge_run=run, fields=fields), layout.STUDY)
    design.restore_active(document, study, runs, by_code, actor)
    design.restore_holdout(document, study, runs, by_code, actor)
    return BundleImportResult(study, len(imported.created) + len(imported.duplicates), n_ratings, n_consensus, tuple(runs.values()))


def _plan_fields(plan: dict[str, Any], run: Any, by_code: dict[str, int]) -> dict[str, Any]:
    """Return the plan's fields with the conversations and the judge it names by code and name as rows of this database."""
    fields = {k: v for k, v in plan.items() if k != "run"}
    planning = dict(fields.get("planning") or {})
    if "unit_inclusion_prob" in planning:
        unknown = sorted(set(planning["unit_inclusion_prob"]) - set(by_code))
        if unknown:
            raise ImportRejected([Problem(f"the sampling plan names conversation(s) not in {layout.JSONL}: {', '.join(unknown[:5])}",
                                          layout.STUDY, None, "sampling_plan.planning.unit_inclusion_prob")])
        planning["unit_inclusion_prob"] = {str(by_code[code]): pi for code, pi in planning["unit_inclusion_prob"].items()}
    fields["planning"] = planning
    fields["source"] = design.judge_source_key(str(fields.get("source") or "ensemble"), run, "sampling_plan.source")
    return fields


def _conversations_by_code(bundle: _Bundle) -> dict[str, int]:
    """Return each bundle conversation's id in this database, by its code (found by code, or by content if already present)."""
    from corpus.conversations.formats import read_jsonl

    records, _ = read_jsonl(bundle.text(layout.JSONL), layout.JSONL)
    by_hash = dict(Conversation.objects.filter(content_hash__in=[r.content_hash() for r in records]).values_list("content_hash", "pk"))
    return {str(r.metadata.get("evalsite_code")): by_hash[r.content_hash()] for r in records if r.content_hash() in by_hash}


def _ratings(bundle: _Bundle, study: Study, actor: AbstractBaseUser | None) -> int:
    """Import ratings_long.csv in the stored order of assignments.csv, then restore positions and timing."""
    assignments = bundle.table(layout.ASSIGNMENTS)
    ratings = bundle.table(layout.RATINGS_LONG, [c for c, _ in layout.COLUMNS[layout.RATINGS_LONG] if c != layout.EVIDENCE_TURNS])
    problems: list[Problem] = []
    order: dict[tuple[str, str], int] = {}
    timings = []
    open_work = []
    for line, row in assignments.rows:
        key = (row["unit"], row["rater"])
        if row["status"] != "submitted":
            open_work.append(OpenAssignment(
                row["unit"], row["rater"], _int(assignments, line, "position", row["position"], problems),
                _bool(assignments, line, "is_calibration", row["is_calibration"], problems), row["status"],
                _time(assignments, line, "started_at", row["started_at"], problems),
                _int(assignments, line, "time_spent_seconds", row["time_spent_seconds"], problems),
            ))
            continue
        order[key] = _int(assignments, line, "order", row["order"], problems)
        timings.append(AssignmentTiming(
            row["unit"], row["rater"], _int(assignments, line, "position", row["position"], problems),
            _time(assignments, line, "started_at", row["started_at"], problems),
            _time(assignments, line, "submitted_at", row["submitted_at"], problems),
            _int(assignments, line, "time_spent_seconds", row["time_spent_seconds"], problems),
        ))
    flow = study.instrument.kind == InstrumentKind.FLOW
    kept: list[tuple[int, int, list[str]]] = []
    cited: list[CitedTurns] = []
    for line, row in ratings.rows:
        part = row["part"]
        if part not in ("main", "section", "derived", "form"):
            problems.append(Problem(f"unknown part '{part}'; expected main, section, derived or form", ratings.name, line, "part"))
            continue
        if (part == "main" and flow) or (part == "derived" and not flow):
            continue  # a flow's answered questions: its dimensions (derived) are what reports read
        key = (row["unit"], row["rater"])
        if key not in order:
            problems.append(Problem(f"rating of '{row['unit']}' by '{row['rater']}' has no row in {layout.ASSIGNMENTS}",
                                    ratings.name, line, "unit"))
            continue
        turns = _turns(ratings, line, row.get(layout.EVIDENCE_TURNS, ""), problems)
        if turns:
            cited.append(CitedTurns(row["unit"], row["rater"], part, row["item"], turns))
        if part == "form":
            continue  # turns cited for the whole form: no answer
        item = f"section:{row['item']}" if part == "section" else row["item"]
        kept.append((order[key], line, [row["unit"], row["rater"], item, row["label"], row["note"]]))
    if problems:
        raise ImportRejected(problems)
    kept.sort(key=lambda k: (k[0], k[1]))
    text = "unit,rater,item,label,note\n" + "".join(_csv_line(cells) for _, _, cells in kept)
    lines = [line for _, line, _ in kept]
    try:
        if kept:  # a study with no rating yet (an active study's first batch, still open) has only open work
            ratings_import(study=study, text=text, file=ratings.name, actor=actor, external_raters=True)
    except ImportRejected as exc:
        # The import read a reordered copy: name the bundle file's own lines.
        raise ImportRejected([Problem(p.message, layout.RATINGS_LONG, lines[p.line - 2] if p.line and 2 <= p.line < len(lines) + 2 else p.line,
                                      p.column) for p in exc.problems]) from exc
    _service(lambda: ratings_restore_evidence(study=study, cited=cited), layout.RATINGS_LONG)
    _service(lambda: assignments_restore_timing(study=study, timings=timings), layout.ASSIGNMENTS)
    _service(lambda: assignments_restore_open(study=study, assignments=open_work, source=bundle.file), layout.ASSIGNMENTS)
    return len(order)


def _csv_line(cells: list[str]) -> str:
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n").writerow(cells)
    return buffer.getvalue()


def _consensus(bundle: _Bundle, study: Study) -> int:
    table = bundle.table(layout.CONSENSUS)
    problems: list[Problem] = []
    entries = []
    for line, row in table.rows:
        votes: dict[str, int] = {}
        for part in filter(None, (p.strip() for p in row["votes"].split("; "))):
            label, _, count = part.rpartition("=")
            votes[label] = _int(table, line, "votes", count, problems)
        entries.append(ConsensusEntry(
            row["unit"], row["item"], row["label"], row["provenance"], _int(table, line, "n_ratings", row["n_ratings"], problems),
            _int(table, line, "n_expected", row["n_expected"], problems), _bool(table, line, "provisional", row["provisional"], problems),
            votes, _float(table, line, "disagreement", row["disagreement"], problems), row["reason"],
        ))
    if problems:
        raise ImportRejected(problems)
    return _service(lambda: consensus_restore(study=study, entries=entries), layout.CONSENSUS)


def _judge_runs(bundle: _Bundle, document: dict[str, Any], instruments: dict[str, Instrument], actor: AbstractBaseUser | None) -> dict[Any, Any]:
    """Import each judge run of the bundle as an external run, oldest first; return {exported run id: run}."""
    runs = document.get("judge_runs") or []
    if not runs:
        return {}
    table = bundle.table(layout.JUDGE_LABELS)
    out = {}
    for index, entry in enumerate(runs):
        instrument = instruments.get(entry.get("instrument"))
        if instrument is None:
            raise ImportRejected([Problem(f"judge run '{entry.get('name')}' names instrument '{entry.get('instrument')}', "
                                          "which is not a file of the bundle", layout.STUDY, None, f"judge_runs[{index}].instrument")])
        kind = "dimension" if instrument.kind == InstrumentKind.FLOW else "item"
        rows = [(line, row) for line, row in table.rows if row["run"] == str(entry.get("run")) and row["kind"] == kind]
        lines = [line for line, _ in rows]
        # The turns each judge cited and why a label is missing come back too (issue 31: a round trip keeps the text).
        text = "unit,judge,item,label,rationale,instance,evidence_turns,missing_reason\n" + "".join(
            _csv_line([row["conversation"], row["judge"], row["item"], row["label"], row["rationale"], row["instance"],
                       row["evidence_turns"], row["missing_reason"]]) for _, row in rows)
        try:
            identities = {row["judge"]: (row.get("provider") or "", row.get("model") or "") for _, row in rows}
            result = judge_labels_import(text=text, file=layout.JUDGE_LABELS, instrument=instrument, name=str(entry.get("name") or ""),
                                         created_by=actor, identities=identities)
        except ImportRejected as exc:
            raise ImportRejected([Problem(p.message, layout.JUDGE_LABELS, lines[p.line - 2] if p.line and 2 <= p.line < len(lines) + 2 else p.line,
                                          p.column) for p in exc.problems]) from exc
        out[entry.get("run")] = result.run
    return out
