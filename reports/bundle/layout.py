"""The publication bundle's layout: its files, their columns and what each column and label means (the codebook).

One place names every file and column, so the export writes them, the import checks them and
the codebook describes them from the same lists (``docs/formats.md``, "Publication bundle").
"""

from __future__ import annotations

import re

# Bumped when a file's name, a column or a meaning changes; the import refuses other formats.
BUNDLE_FORMAT = 1
MANIFEST = "manifest.json"
STUDY = "study.json"
CODEBOOK = "codebook.md"
JSONL = "transcripts/conversations.jsonl"
VERA_DIR = "transcripts/vera-mh/"
VERA_INDEX = "transcripts/vera-mh/index.csv"
RATINGS_LONG = "ratings_long.csv"
RATINGS_VERA = "ratings_vera_mh.csv"
ASSIGNMENTS = "assignments.csv"
CONSENSUS = "consensus.csv"
JUDGE_LABELS = "judge_labels_long.csv"
EVIDENCE_TURNS = "evidence_turns"  # ratings_long.csv's column added after format 1: optional on import
FIGURES_DIR = "figures/"
PLOTLY_DIR = "figures/plotly/"
PNG_DIR = "figures/png/"
SVG_DIR = "figures/svg/"

# file -> [(column, meaning)]: the columns the import requires, in the order the export writes them.
COLUMNS: dict[str, list[tuple[str, str]]] = {
    RATINGS_LONG: [
        ("unit", "conversation code (C-XXXXXX), the pseudonym used in every file of the bundle"),
        ("rater", "rater name: the username of an in-app rater or the label of an external rater"),
        ("part", "main (the study's instrument), section (the study's rating section), derived (a question flow's dimension label, from the answered questions) or form (the turns cited for the rating as a whole: item evidence, no label)"),
        ("item", "item key of the instrument or section; for part derived, the dimension"),
        ("label", "the answer as stored (see the labels below); empty: not answered"),
        ("note", "the rater's note on the answer, if any"),
        ("submitted_at", "when the rating was submitted (ISO 8601, UTC offset)"),
        ("time_spent_seconds", "active time on the rating page, in seconds (0: not recorded, e.g. ratings imported from a file)"),
        (EVIDENCE_TURNS, "the transcript turns the rater cited for the answer, separated by ';' (turn n: the conversation's n-th message, "
                         "system messages counted, as in judge_labels_long.csv); empty: none cited. Derived rows: the union of the "
                         "dimension's questions; the form row: the turns cited for the rating as a whole. Optional on import (older bundles)"),
    ],
    ASSIGNMENTS: [
        ("unit", "conversation code"),
        ("rater", "rater name, as in ratings_long.csv"),
        ("status", "submitted, or open work: not_started, in_progress (no answers are carried for open work)"),
        ("order", "submitted ratings: the order they were stored in (1, 2, ...), the order statistics that resample conversations draw them in; empty for open work"),
        ("position", "the conversation's place in the rater's queue (0 first)"),
        ("is_calibration", "true for a calibration conversation (rated first by every rater)"),
        ("started_at", "when the rater opened it (ISO 8601; empty: not recorded)"),
        ("submitted_at", "when the rating was submitted (ISO 8601; empty for open work)"),
        ("time_spent_seconds", "active time on the rating page, in seconds"),
    ],
    CONSENSUS: [
        ("unit", "conversation code"),
        ("external_id", "the conversation's id in its source (e.g. VERA-MH's 6-hex id), if any"),
        ("item", "item key (or dimension)"),
        ("label", "the human reference label; empty when there is none (unresolved, too few ratings)"),
        ("provenance", "how it was reached: unanimous, majority, plurality, tie_break, adjudicated, unresolved, single, too_few"),
        ("n_ratings", "ratings of the item so far"),
        ("n_expected", "ratings the study asks for"),
        ("provisional", "true while an assignment of the conversation is still open"),
        ("in_adjudication_queue", "true when it waits for (or was decided with dissent by) an adjudicator"),
        ("votes", "label=count pairs, separated by '; '"),
        ("disagreement", "1 minus the share of the modal label"),
        ("adjudicated_by", "who adjudicated (username), if anyone"),
        ("reason", "the adjudicator's reason, if any"),
    ],
    JUDGE_LABELS: [
        ("run", "the judge run's place among the study's judge runs, oldest first (1, 2, ...; study.json lists each run's name and place); bundles made before issue 31 wrote its id in the exporting database"),
        ("conversation", "conversation code"),
        ("judge", "judge name"),
        ("provider", "the judge's provider"),
        ("model", "the judge's model"),
        ("instance", "repetition of the same judge on the same conversation (0 first)"),
        ("kind", "item (checklist item), question (a question-flow answer) or dimension (a question flow's dimension label)"),
        ("item", "item key, question id or dimension"),
        ("label", "the judge's label; empty: missing (see status and missing_reason)"),
        ("status", "ok or missing"),
        ("rationale", "the judge's rationale"),
        ("evidence_turns", "the turns the judge quoted, space-separated"),
        ("missing_reason", "why the label is missing"),
    ],
    VERA_INDEX: [
        ("file", "the transcript's path inside transcripts/vera-mh/"),
        ("conversation", "conversation code"),
        ("vera_id", "the hexadecimal id in the file name (the conversation's VERA-MH id when it has one)"),
    ],
}

# Other files, for the codebook: name -> what it holds.
FILES: dict[str, str] = {
    MANIFEST: "bundle format, app name and version, software versions, when it was made, and the SHA-256 and size of every other file",
    STUDY: "the study's name, instrument and section (files below), settings (raters per conversation, consensus minimum, tie policy, thresholds, alt-test epsilon, sittings), its conversations in order with their design (calibration, inclusion probability, stratum), its judge runs (names, oldest first), its sampling plan, an active study's plan with every batch and every visited conversation's uncertainty, inclusion probability and draw (active_plan), and the development/test splits with their members, the versions declared final and every look at a test set with its result (holdout)",
    CODEBOOK: "this file",
    "README.txt": "the study zip's own guide: each CSV and the exact `python -m stats agreement` command for reliability_ratings*.csv (judge runs named by place, as in METHODS.md)",
    "METHODS.md": "the methods paragraph of each report of the study, with references and software versions; judge runs are named by their place among the study's runs (judge run 1 is the oldest), as in study.json (the study zip and the report pages name them by id)",
    "instruments/": "the instrument and the rating section in evalsite's JSON format (docs/formats.md, Instruments): items, scales, labels, N/A declarations",
    "personas/": "every persona set the conversations use, in evalsite's JSON format (docs/formats.md, Personas): cards and design labels",
    JSONL: "every conversation the study and its judge runs cover, in evalsite's JSONL format (docs/formats.md); metadata.evalsite_code is its code",
    VERA_DIR: "the same conversations in VERA-MH's published layout: run folders p_<user model>__a_<chatbot model>__t<turns>__r<runs>__<timestamp> of <id>_<Persona>_<model>_run<k>.txt transcripts (user:/agent: blocks); system messages are left out",
    RATINGS_VERA: "for a VERA-MH question-flow study: the ratings in the published clinician-ratings layout (one row per rater and conversation; conversation_id is the vera_id of transcripts/vera-mh/index.csv; NA: not answered)",
    "reliability_ratings*.csv": "unit,rater,item,label: the ratings the reliability figures were computed from, in the order they were read; README.txt and manifest.json give the command",
    "reliability.csv": "the inter-rater reliability table, per item and pooled",
    "scores_*.csv": "the scorecard tables from the human consensus",
    "judge_dimensions.csv / ensemble.csv": "question-flow walks of each judge; the judges' majority vote per conversation and item",
    FIGURES_DIR: "every report's figures as JSON (the payload the page and the API show), e.g. reliability.json, judges_run1.json",
    PLOTLY_DIR: "the report charts as plotly JSON: draw one with Plotly.newPlot(div, chart.traces, chart.layout) (a null in an "
                "error bar's array: no interval, drawn without a whisker; give plotly NaN there)",
    PNG_DIR: "each chart of figures/plotly/ as a PNG image (NAME.png for NAME.json), made by plotly.js itself (kaleido driving a "
             "headless Chromium, the app's own copy of plotly.js, no network); manifest.json's static_images says how they were made, "
             "or why there are none (e.g. no Chromium on the machine that made the bundle)",
    SVG_DIR: "the same charts as SVG images (vector: for print), made the same way",
}


# Characters no common file system takes in a name (Windows: <>:"/\\|?* and control characters),
# and the names Windows reserves for devices, with or without an extension.
_NOT_PORTABLE = re.compile(r'[<>:"/\\|?*\x00-\x1f\x7f]')
_RESERVED = re.compile(r"^(con|prn|aux|nul|com[0-9]|lpt[0-9])(\..*)?$", re.IGNORECASE)


def portable_part(part: str) -> str:
    """Return one component of a bundle path as a name every common file system (and unzip tool) takes.

    Characters Windows refuses become ``-``; a trailing dot or space (dropped by Windows) is
    removed; a reserved device name (``CON``, ``NUL.json``, ``com1`` ...) gets a ``_`` in front.
    A name that is already portable is returned unchanged.
    """
    text = _NOT_PORTABLE.sub("-", part).rstrip(". ") or "_"
    return f"_{text}" if _RESERVED.match(text) else text


def portable_path(name: str) -> str:
    """Return a ``/``-separated bundle path with each component made portable (:func:`portable_part`)."""
    return "/".join(portable_part(part) for part in name.split("/"))


def is_image(name: str) -> bool:
    """Return whether ``name`` is one of the bundle's chart images (outputs: never read back by the import)."""
    return (name.startswith(PNG_DIR) and name.endswith(".png")) or (name.startswith(SVG_DIR) and name.endswith(".svg"))


def is_portable(name: str) -> bool:
    """Return whether every component of ``name`` is already portable."""
    return portable_path(name) == name
