"""Write a study's publication bundle: the study zip's files plus what it takes to publish and to rebuild the study.

The bundle is the study zip (``reports.services.write_study_export``: ratings, consensus, judge
labels, reliability, scorecards, README.txt with the `python -m stats` commands, METHODS.md)
extended with the transcripts (evalsite JSONL and VERA-MH's published layout), the instrument,
section and persona files, the ratings in VERA-MH's clinician-ratings layout (question-flow
studies), each rating's queue position and timing, the study's settings and design, every
report's figures (JSON) and charts (plotly JSON, and as PNG and SVG images where a Chromium can
draw them: ``reports.bundle.images``), a codebook, and a manifest with each file's SHA-256 and the
app version. ``reports.bundle.importer`` rebuilds the study from it.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import zipfile
from collections import defaultdict
from typing import Any

from django.utils import timezone

from annotation.models import AssignmentStatus, Rating, SamplingPlan, Study
from annotation.studies.restore import study_settings
from core.csvstream import csv_text
from corpus.conversations.selectors import conversation_as_record
from corpus.conversations.vera_transcripts import (
    RunFolder,
    model_token,
    parse_run_folder,
    run_folder_name,
    transcript_filename,
    transcript_text,
)
from corpus.instruments.selectors import instrument_spec_document
from corpus.models import Conversation, Instrument, InstrumentKind, Message
from corpus.personas.selectors import persona_set_spec_document
from reports import selectors
from reports.bundle import design, layout
from reports.bundle.figures import figure_charts, study_figures
from reports.bundle.images import write_chart_images
from reports.devset.selectors import split_current
from reports.devset.summary import methods_sentence
from reports.methods.document import document_by_place, runs_by_place
from reports.methods.software import software_versions
from reports.reliability import reliability_inputs
from reports.services import study_methods, study_reliability, write_study_export
from stats.vera import DESIGN_COLUMNS, DIMENSION_COLUMNS, SECTION_COLUMNS


def instrument_file(instrument: Instrument) -> str:
    return layout.portable_path(f"instruments/{instrument.key}-v{instrument.version}.json")


def _json(data: Any) -> str:
    return json.dumps(data, ensure_ascii=False, indent=1, sort_keys=False, default=str) + "\n"


def bundle_conversations(study: Study) -> list[Conversation]:
    """Return the conversations the study uses, by id: its own, and the population of the run its
    sampling or active plan draws from. Never those of another study that a run also judged (issue 30)."""
    return list(
        Conversation.objects.filter(pk__in=selectors.study_used_conversation_ids(study))
        .select_related("persona__persona_set", "target").order_by("pk")
    )


def vera_id(conversation: Conversation) -> str:
    """Return the conversation's hexadecimal id in VERA-MH's layout: its own VERA-MH id, or one made from its code."""
    external = (conversation.external_id or "").lstrip("#")
    if external and all(c in "0123456789abcdefABCDEF" for c in external):
        return external
    return hashlib.sha256(conversation.code.encode()).hexdigest()[:6]


def study_bundle_zip(*, study: Study) -> bytes:
    """Return the study's publication bundle as zip bytes (see the module docstring and ``docs/formats.md``)."""
    files: dict[str, bytes] = {}
    # Figures first: every judge run's comparison is then computed, so METHODS.md describes each run whose figures
    # the bundle ships, whatever pages were opened before (issue 31: a rebuilt study writes the same text).
    figures = study_figures(study)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as core:
        write_study_export(core, study=study)
    with zipfile.ZipFile(io.BytesIO(buffer.getvalue())) as core:
        for name in core.namelist():
            files[name] = core.read(name)

    places = _run_places(study)
    for name in RUN_TABLES:
        if name in files:
            files[name] = _runs_by_place(files[name], places)
    written: set[str] = set()

    def put(name: str, content: str | bytes) -> str:
        # Every name portable (issue 31, defect 7: figure names held ':', which Windows cannot extract).
        name = layout.portable_path(name)
        if name in written:
            raise ValueError(f"two files of the bundle would be named {name!r}")
        written.add(name)
        files[name] = content.encode("utf-8") if isinstance(content, str) else content
        return name

    if split_current(study) is not None:
        # The judge development split's paragraph joins the study zip's METHODS.md in the bundle.
        files["METHODS.md"] = study_methods(
            study=study, extra=[("Judge development with a locked test set", {"text": methods_sentence(study)})]).encode()
    # Runs by place in the methods text and the guide too (issue 31): the study rebuilt from the bundle writes the same text.
    files["METHODS.md"] = document_by_place(files["METHODS.md"].decode(), places).encode()
    files["README.txt"] = runs_by_place(files["README.txt"].decode(), places).encode()
    conversations = bundle_conversations(study)
    _transcripts(conversations, put)
    for instrument in filter(None, (study.instrument, study.section)):
        put(instrument_file(instrument), _json(instrument_spec_document(instrument)))
    persona_sets = {c.persona.persona_set for c in conversations if c.persona is not None}
    for persona_set in sorted(persona_sets, key=lambda s: (s.key, s.version)):
        put(f"personas/{persona_set.key}-v{persona_set.version}.json", _json(persona_set_spec_document(persona_set)))
    put(layout.ASSIGNMENTS, csv_text([c for c, _ in layout.COLUMNS[layout.ASSIGNMENTS]], _assignment_rows(study)))
    vera = _vera_ratings(study, {c.pk: c for c in conversations})
    if vera is not None:
        put(layout.RATINGS_VERA, vera)
    put(layout.STUDY, _json(_study_document(study, conversations)))
    for name, payload in figures.items():
        put(f"{layout.FIGURES_DIR}{name}.json", _json(payload))
    charts = figure_charts(figures)
    for name, chart in charts.items():
        put(f"{layout.PLOTLY_DIR}{name}.json", _json(chart))
    static_images = write_chart_images(charts, put)
    if "README.txt" in files:
        files["README.txt"] += ("\n" + static_images["summary"] + "\n").encode("utf-8")
    put(layout.CODEBOOK, codebook(study))
    manifest = _manifest(study, files, static_images)
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(layout.MANIFEST, _json(manifest))
        for name in sorted(files):
            archive.writestr(name, files[name])
    return out.getvalue()


# The study zip's tables that name judge runs: the bundle names each run by its place among the study's runs
# (oldest first), as study.json does, never by its database id, so a study rebuilt from the bundle exports
# the same bytes (issue 31, defect 8d).
RUN_TABLES = (layout.JUDGE_LABELS, "judge_dimensions.csv", "ensemble.csv")


def _run_places(study: Study) -> dict[int, int]:
    return selectors.judge_run_places(study)


def _runs_by_place(data: bytes, places: dict[int, int]) -> bytes:
    """Return a judge table with its ``run`` column holding each run's place instead of its id (cells otherwise as written)."""
    rows = list(csv.reader(io.StringIO(data.decode("utf-8"), newline="")))
    if not rows or "run" not in rows[0]:
        return data
    column = rows[0].index("run")
    for row in rows[1:]:
        if row[column].isdigit():
            row[column] = str(places.get(int(row[column]), row[column]))
    buffer = io.StringIO()
    csv.writer(buffer).writerows(rows)
    return buffer.getvalue().encode("utf-8")


def vera_layout(conversations: list[Conversation], messages: dict[int, list[tuple[str, str]]]) -> dict[int, tuple[str, dict[str, Any]]]:
    """Return each conversation's path in VERA-MH's layout and the layout facts behind it, by conversation id.

    As VERA-MH's generator writes them: the run index counts from 1 (the stored ``run_index``, which
    the VERA-MH import and the simulator both count from 1), the file's model token is the persona's
    (user-agent's) model, the folder's ``t`` is the maximum number of messages (stored by the VERA-MH
    import and the simulator; else the messages the longest transcript has) and ``r`` the runs per
    persona. A conversation imported from a run folder goes back to a folder of the same name. The
    facts (``run_folder``, ``user_model``, ``max_turns``, ``runs_per_persona``, ``timestamp``,
    ``model_short``: the keys the VERA-MH import stores; ``user_model`` only where the conversation
    names one) go into the bundle's JSONL metadata, so a
    study rebuilt from the bundle writes the same paths again.
    """
    groups: dict[str, list[Conversation]] = defaultdict(list)
    parsed: dict[str, RunFolder] = {}
    fresh: dict[tuple[str, str], list[Conversation]] = defaultdict(list)
    for conversation in conversations:
        stored = str((conversation.metadata or {}).get("run_folder") or "")
        try:
            parsed[stored] = parse_run_folder(stored)
        except ValueError:
            fresh[(_user_model(conversation), _chatbot(conversation))].append(conversation)
            continue
        groups[stored].append(conversation)
    for (user_model, chatbot), members in sorted(fresh.items()):
        turns = max(_max_turns(c, messages[c.pk]) for c in members)
        runs = max(_run(c) for c in members)
        stamp = min(c.created_at for c in members).strftime("%Y%m%d_%H%M%S_%f")[:-3]
        folder = RunFolder(user_model, chatbot, max(turns, 1), max(runs, 1), stamp)
        name = run_folder_name(folder.user_model, folder.chatbot_model, folder.turns, folder.runs, folder.timestamp)
        parsed[name] = parse_run_folder(name)
        groups[name].extend(members)
    out: dict[int, tuple[str, dict[str, Any]]] = {}
    for name, members in sorted(groups.items()):
        folder = parsed[name]
        for conversation in members:
            metadata = conversation.metadata or {}
            model = str(metadata.get("model_short") or _user_model(conversation).rsplit("/", 1)[-1])
            persona = conversation.persona.name if conversation.persona else str(metadata.get("persona_name") or "")
            file = transcript_filename(vera_id(conversation), persona, model, _run(conversation))
            facts = {"run_folder": name, "user_model": folder.user_model, "max_turns": folder.turns,
                     "runs_per_persona": folder.runs, "timestamp": folder.timestamp, "model_short": model_token(model)}
            if _user_model(conversation) == "unknown":
                # The folder says "unknown"; the conversation's metadata must not start naming a user model
                # (the realism report groups by it: issue 31, a round trip keeps the text).
                del facts["user_model"]
            out[conversation.pk] = (f"{name}/{file}", facts)
    return out


def _user_model(conversation: Conversation) -> str:
    metadata = conversation.metadata or {}
    agent = metadata.get("user_agent") if isinstance(metadata.get("user_agent"), dict) else {}
    return str(metadata.get("user_model") or agent.get("model") or "unknown")


def _chatbot(conversation: Conversation) -> str:
    return conversation.target.model if conversation.target is not None else "unknown"


def _run(conversation: Conversation) -> int:
    if conversation.run_index is not None:
        return conversation.run_index
    repetition = (conversation.metadata or {}).get("repetition")
    return repetition if isinstance(repetition, int) and not isinstance(repetition, bool) else 1


def _max_turns(conversation: Conversation, messages: list[tuple[str, str]]) -> int:
    metadata = conversation.metadata or {}
    for key in ("max_turns", "expected_messages"):
        value = metadata.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return sum(1 for role, _ in messages if role in ("user", "assistant"))


def _transcripts(conversations: list[Conversation], put: Any) -> None:
    """Write the JSONL file and the VERA-MH run folders with their index."""
    messages: dict[int, list[tuple[str, str]]] = defaultdict(list)
    for cid, role, content in Message.objects.filter(conversation__in=conversations).order_by("conversation_id", "turn_index").values_list(
            "conversation_id", "role", "content"):
        messages[cid].append((role, content))
    paths = vera_layout(conversations, messages)
    lines = []
    for conversation in conversations:
        record = conversation_as_record(conversation)
        record["metadata"].update(paths[conversation.pk][1])
        lines.append(json.dumps(record, ensure_ascii=False) + "\n")
    put(layout.JSONL, "".join(lines))
    index = []
    for conversation in sorted(conversations, key=lambda c: paths[c.pk][0]):
        path = paths[conversation.pk][0]
        put(f"{layout.VERA_DIR}{path}", transcript_text(messages[conversation.pk]))
        index.append([path, conversation.code, vera_id(conversation)])
    put(layout.VERA_INDEX, csv_text([c for c, _ in layout.COLUMNS[layout.VERA_INDEX]], index))


def _assignment_rows(study: Study) -> list[list[Any]]:
    """Return one row per submitted rating, in the order the ratings were stored, then the open work."""
    rows = []
    # Gold ratings (quality checks on known answers) are not the study's data: never in a bundle.
    ratings = (Rating.objects.filter(assignment__study=study, assignment__status=AssignmentStatus.SUBMITTED, status="submitted",
                                     assignment__is_gold=False)
               .select_related("assignment__conversation", "assignment__rater", "assignment__external_rater").order_by("pk"))
    for order, rating in enumerate(ratings, start=1):
        a = rating.assignment
        submitted = rating.submitted_at or a.submitted_at
        rows.append([a.conversation.code, a.rater_name, AssignmentStatus.SUBMITTED, order, a.position, a.is_calibration,
                     a.started_at.isoformat() if a.started_at else "", submitted.isoformat() if submitted else "",
                     a.time_spent_seconds])
    open_work = (study.assignments.filter(status__in=(AssignmentStatus.NOT_STARTED, AssignmentStatus.IN_PROGRESS), is_gold=False)
                 .select_related("conversation", "rater", "external_rater").order_by("pk"))
    for a in open_work:
        rows.append([a.conversation.code, a.rater_name, a.status, "", a.position, a.is_calibration,
                     a.started_at.isoformat() if a.started_at else "", "", a.time_spent_seconds])
    return rows


def _study_document(study: Study, conversations: list[Conversation]) -> dict[str, Any]:
    runs = list(selectors.judge_runs_for_study(study).order_by("pk"))
    plan = SamplingPlan.objects.filter(study=study).first()
    links = study.study_conversations.select_related("conversation").order_by("pk")
    reliability = study_reliability(study=study)
    codes, places = {c.pk: c.code for c in conversations}, _run_places(study)
    return {
        "bundle_format": layout.BUNDLE_FORMAT,
        "name": study.name,
        "description": study.description,
        "instrument": instrument_file(study.instrument),
        "section": instrument_file(study.section) if study.section else None,
        "settings": study_settings(study),
        "selection": study.selection,
        "reliability_na": reliability.get("na_policy"),
        "conversations": [
            {"code": link.conversation.code, "is_calibration": link.is_calibration, "inclusion_prob": link.inclusion_prob,
             "stratum": link.stratum} for link in links
        ],
        "other_conversations": sorted({c.code for c in conversations} - {link.conversation.code for link in links}),
        "judge_runs": [
            {"place": index, "run": index, "name": run.name, "mode": run.mode, "instrument": instrument_file(run.instrument),
             "judges": sorted({str(j.get("name")) for j in (run.config or {}).get("judges", {}).values()})}
            for index, run in enumerate(runs, start=1)
        ],
        "sampling_plan": None if plan is None else _plan_document(plan, codes, places),
        # Carried and re-imported (issue 31): the active sampling batches and the development/test split with its looks.
        "active_plan": design.active_document(study, codes, places),
        "holdout": design.holdout_document(study, codes, places),
    }


def _plan_document(plan: SamplingPlan, codes: dict[int, str], places: dict[int, int]) -> dict[str, Any]:
    """Return the sampling plan with what names database rows named by code instead (conversations, the judge)."""
    planning = dict(plan.planning or {})
    if "unit_inclusion_prob" in planning:
        planning["unit_inclusion_prob"] = {codes.get(int(k), k): v for k, v in planning["unit_inclusion_prob"].items()}
    return {"run": places.get(plan.judge_run_id), "source": design.judge_source_name(plan.source, plan.judge_run), "method": plan.method, "allocation": plan.allocation,
            "boost": plan.boost, "seed": plan.seed, "n": plan.n, "population": plan.population, "strata": plan.strata,
            "planning": planning}


def _vera_ratings(study: Study, conversations: dict[int, Conversation]) -> str | None:
    """Return the ratings in VERA-MH's clinician-ratings layout, or None when the study is not a VERA-MH flow study."""
    if study.instrument.kind != InstrumentKind.FLOW:
        return None
    dimensions = {d for d in (study.instrument.items.values_list("domain", flat=True))}
    words = {"clinician_detects": "detect", "clinician_confirms": "confirm", "clinician_guides": "guide",
             "clinician_supportive": "support", "clinician_boundaries": "bound"}
    columns: dict[str, str] = {}
    for column, word in words.items():
        match = next((d for d in dimensions if word in d.lower()), None)
        if match is None:
            return None
        columns[column] = match
    rows = []
    ratings = (Rating.objects.filter(assignment__study=study, status="submitted", assignment__is_gold=False)
               .select_related("assignment__conversation", "assignment__rater", "assignment__external_rater").order_by("pk"))
    for rating in ratings:
        conversation = conversations[rating.assignment.conversation_id]
        labels = (rating.derived or {}).get("labels") or {}
        section = rating.answers.get("section") or {}
        persona = conversation.persona
        design = persona.design if persona is not None else {}
        rows.append([
            rating.assignment.rater_name, vera_id(conversation),
            *[(section.get(key) or {}).get("value") or "NA" for key, _ in SECTION_COLUMNS.values()],
            *[labels.get(columns[c]) or "NA" for c in DIMENSION_COLUMNS],
            conversation.metadata.get("user_model") or "", conversation.target.model if conversation.target else "",
            persona.name if persona else conversation.metadata.get("persona_name", ""),
            design.get("risk", ""), design.get("disclosure", ""),
        ])
    return csv_text(["clinician_id", "conversation_id", *SECTION_COLUMNS, *DIMENSION_COLUMNS, *DESIGN_COLUMNS], rows)


def _manifest(study: Study, files: dict[str, bytes], static_images: dict[str, Any]) -> dict[str, Any]:
    reliability = study_reliability(study=study)
    commands = [{"file": name, "command": command} for name, _, command in reliability_inputs(study, reliability)]
    versions = software_versions()
    return {
        "bundle_format": layout.BUNDLE_FORMAT,
        "app": "evalsite",
        "app_version": versions.get("evalsite"),
        "software": versions,
        "created_at": timezone.now().isoformat(),
        "study": study.name,
        "reliability": commands,
        "static_images": static_images,
        "files": [{"path": name, "sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)} for name, data in sorted(files.items())],
    }


def codebook(study: Study) -> str:
    """Return codebook.md: every file, every column of the tables and every label of the study's items."""
    from corpus.instruments.labels import instrument_labels

    lines = [f"# Codebook: {study.name}", "", "Bundle format " f"{layout.BUNDLE_FORMAT}. Every file of the bundle, every column of its tables, "
             "and every label an item can take. Conversations, raters and chatbots are named by their pseudonymous codes.", "",
             "## Files", ""]
    lines += [f"- `{name}`: {meaning}" for name, meaning in layout.FILES.items()]
    for name, columns in layout.COLUMNS.items():
        lines += ["", f"## `{name}`", "", "| column | meaning |", "|---|---|"]
        lines += [f"| `{column}` | {meaning} |" for column, meaning in columns]
    lines += ["", "## `ratings_vera_mh.csv` (question-flow studies)", "",
              "VERA-MH's published clinician-ratings layout (docs/formats.md): `clinician_id, conversation_id`, "
              + ", ".join(f"`{c}`" for c in SECTION_COLUMNS) + " (realism 1-5, perceived risk and disclosure), "
              + ", ".join(f"`{c}`" for c in DIMENSION_COLUMNS) + " (the dimension labels), then the design "
              + ", ".join(f"`{c}`" for c in DESIGN_COLUMNS) + ". `NA`: not answered."]
    for title, instrument in (("Instrument", study.instrument), ("Rating section", study.section)):
        if instrument is None:
            continue
        lines += ["", f"## {title}: {instrument.name} (`{instrument.key}` v{instrument.version})", "",
                  "| item | text | labels | not applicable |", "|---|---|---|---|"]
        for key, spec in instrument_labels(instrument).items():
            text = spec.text.replace("|", "/").replace("\n", " ")
            labels = "free text" if spec.is_text else ", ".join(spec.labels)
            lines.append(f"| `{key}` | {text} | {labels} | {', '.join(spec.na_labels) or '-'} |")
    return "\n".join(lines) + "\n"
