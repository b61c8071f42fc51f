"""The leaderboard's tables: per set of conversations and method, every chatbot's score and every pair.

Each conversation of a study or run becomes a :class:`Record` (its design, its judges' and
clinicians' labels of what the headline score counts, its inclusion probability);
:func:`finish` cuts them by persona risk level and fills one table per method with the scores
(judges only from the scorecard, the other methods from the judge-assisted page's rows) and
the pairs (:func:`stats.leaderboard.compare_chatbots`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from corpus.instruments.labels import ItemLabels, UnknownAnswer, instrument_labels
from corpus.models import Instrument
from judging.sources import LabelSource
from reports import jobs
from reports.judge_assisted.services import METHOD_LABELS as ASSISTED_LABELS
from reports.judge_assisted.services import Weights, methods_used, score_row
from reports.leaderboard import selectors
from reports.scorecards import scorecard
from stats.data import StatsInputError
from stats.leaderboard import (
    DEFAULT_ALPHA,
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
    MAX_UNDEFINED_SHARE,
    MIN_CLUSTERS,
    PROCEDURES,
    Unit,
    compare_chatbots,
)
from stats.ppi import ESTIMATORS, ppi_amhart_score, ppi_vera_mh_score
from stats.scorecard import VERA_RESAMPLES, VERA_SEED

CONFIDENCE = 0.95
METHOD_ORDER = ("judge_only", "human_only", "ppi", "ppi_tuned")
METHOD_LABELS = {key: ASSISTED_LABELS[key] for key in METHOD_ORDER}
SCORES = {
    True: ("vera_mh_score", "VERA-MH overall score", "points"),
    False: ("amhart_score", "AMHART score (yes / (yes + no), mean over conversations)", "share"),
}
CLUSTERS = {
    True: ("persona", "personas"),
    False: ("persona × repetition cell", "persona × repetition cells"),
}
# The judges-only interval is the scorecard's (stats.scorecard), so the run scorecard page shows the same one.
SCORECARD_INTERVALS = {
    True: {"name": "Percentile cluster bootstrap over conversations, as the scorecard",
           "reference": f"Efron & Tibshirani (1993), ch. 13; stats.scorecard.vera_score_interval ({VERA_RESAMPLES} "
                        f"resamples, seed {VERA_SEED}): each conversation brings all its labels",
           "kind": "percentile bootstrap over conversations",
           "summary": f"percentile bootstrap over conversations, as on the scorecard ({VERA_RESAMPLES} resamples, seed "
                      f"{VERA_SEED})"},
    False: {"name": "Student t interval over the conversations' scores, as the scorecard",
            "reference": "Student (1908); scipy.stats.t.interval (stats.scorecard.mean_interval)",
            "kind": "Student t over conversations",
            "summary": "Student t interval over the conversations' scores, as on the scorecard"},
}
CLUSTER_DEFINITIONS = {
    True: "a persona card: every conversation of any chatbot with that persona (all repetitions) is drawn together, "
          "so the intervals treat the personas as a sample of the personas the chatbots could meet",
    False: "a persona card and repetition index: the conversations of every chatbot with that persona in that "
           "repetition are drawn together, so the intervals are conditional on the persona cards (a fixed design, "
           "as AMHART's eight cards)",
}


@dataclass
class Record:
    """One conversation: its design, its judges' and clinicians' labels (score items only), its π."""

    id: int
    design: selectors.Design
    judge: dict[str, str | None] | None = None
    human: dict[str, str | None] | None = None
    pi: float | None = None

    def cluster(self, flow: bool) -> tuple[Any, ...] | None:
        d = self.design
        if d.persona_id is None:
            return None
        if flow:
            return ("persona", d.persona_id)
        return None if d.repetition is None else ("cell", d.persona_id, d.repetition)


@dataclass
class Context:
    """What every table of one leaderboard shares."""

    instrument: Instrument
    flow: bool
    methods: list[str]
    weights: Weights | None = None
    notes: list[str] = field(default_factory=list)
    off_scale: int = 0

    @property
    def score(self) -> tuple[str, str, str]:
        return SCORES[self.flow]


def score_specs(instrument: Instrument) -> dict[str, ItemLabels]:
    """Return the labels of what the headline score counts: a flow's dimensions, a checklist's yes/no items."""
    specs = instrument_labels(instrument)
    keys = selectors.score_item_keys(instrument)
    return specs if keys is None else {k: specs[k] for k in keys if k in specs}


def respell(labels: dict[str, str | None], specs: dict[str, ItemLabels], ctx: Context) -> dict[str, str | None]:
    """Return the score's labels in their item's spelling; a label off the item's scale becomes missing."""
    out: dict[str, str | None] = {}
    for key, spec in specs.items():
        if key not in labels:
            continue
        try:
            out[key] = spec.normalise(labels[key])
        except UnknownAnswer:
            out[key] = None
            ctx.off_scale += 1
    return out


def payload_base(context: str, ctx: Context, *, study: int | None, run: int | None, source: LabelSource | None) -> dict[str, Any]:
    key, label, scale = ctx.score
    singular, plural = CLUSTERS[ctx.flow]
    return {
        "context": context,
        "study": study,
        "run": run,
        "source": {"key": source.key, "name": source.name} if source else None,
        "kind": "vera-mh" if ctx.flow else "checklist",
        "score": {"key": key, "label": label, "scale": scale},
        "confidence": CONFIDENCE,
        "parameters": {
            "confidence": CONFIDENCE,
            "alpha": DEFAULT_ALPHA,
            "n_resamples": DEFAULT_RESAMPLES,
            "seed": DEFAULT_SEED,
            "min_clusters": MIN_CLUSTERS,
            "max_undefined_share": MAX_UNDEFINED_SHARE,
            "clusters": {"singular": singular, "plural": plural, "definition": CLUSTER_DEFINITIONS[ctx.flow]},
            "pairwise": {
                "paired": PROCEDURES["paired_cluster_bootstrap"],
                "unpaired": PROCEDURES["unpaired_cluster_bootstrap"],
                "p_value": PROCEDURES["bootstrap_p"],
                "adjustment": {
                    **PROCEDURES["holm"], "alpha": DEFAULT_ALPHA,
                    "family": "the pairs of one method and one set of conversations (all, or one persona risk level) "
                              "that meet the minimums",
                },
                "ppi": PROCEDURES["ppi_bootstrap"],
                "ppi_tuned": "each chatbot's lambda fixed at its full-sample PPI++ value (ppi_py's, estimated on the same "
                             "rated conversations; the judge-assisted report cross-fits it, so its PPI++ can differ "
                             "slightly) in every resample",
                "seeding": "every pair's resamples come from a generator seeded with the seed alone",
            },
            "minimums": (f"a decision needs each chatbot's conversations with a score (humans only and PPI: rated "
                         f"ones) in at least {MIN_CLUSTERS} {plural}, and at most {MAX_UNDEFINED_SHARE:.0%} of the "
                         "resamples undefined; below that, 'cannot decide yet'"),
        },
    }


def _method_info(ctx: Context) -> dict[str, dict[str, Any]]:
    """Return what each method and its interval is, with references (for the page and a methods paragraph)."""
    assisted = methods_used()
    plural = CLUSTERS[ctx.flow][1]
    out: dict[str, dict[str, Any]] = {}
    for method in ctx.methods:
        if method == "judge_only":
            out[method] = {
                "label": METHOD_LABELS[method],
                "name": "Judges only (uncorrected): the scorecard's score of the judges' labels over every judged "
                        "conversation",
                "reference": "the run scorecard (stats.scorecard): the AMHART score as the AMHART paper computes it, "
                             "the VERA-MH score as VERA-MH v1.1 does",
                "interval": SCORECARD_INTERVALS[ctx.flow],
            }
            continue
        info = assisted[method]
        if method == "ppi_tuned":  # the leaderboard keeps ppi_py's same-sample λ (score_row's tuning="same-sample")
            info = {**info, **ESTIMATORS["ppi++"],
                    "lambda": "ppi_py's power tuning on the rated conversations (same-sample), one per chatbot, fixed in "
                              "the resamples"}
        out[method] = {
            "label": info["label"], "name": info["name"], "reference": info["reference"], "ddof": info["ddof"],
            "lambda": info["lambda"],
            "interval": {"name": "Small-sample t interval (Student t, n - 1 df, ddof 1), delta method for the VERA-MH "
                                 "score, as the judge-assisted page",
                         "reference": "the standard error of ppi_py's ppi_mean_ci / classical_mean_ci (Angelopoulos et al. "
                                      "2023) with divisor n - 1 and Student's t quantile (Hesterberg 2015)",
                         "kind": "t",
                         "summary": "small-sample t interval as on the judge-assisted page"
                                    + (", delta method for the VERA-MH score" if ctx.flow else "")},
        }
        if method == "human_only" and not ctx.flow:  # a mean of 0/1 conversation scores is a proportion
            out[method]["interval"]["summary"] += (
                "; Wilson's score interval (Wilson 1927) where every rated conversation's score is 0 or 1, as there")
    for method, info in out.items():
        info["comparison"] = {
            "name": PROCEDURES["paired_cluster_bootstrap"]["name"],
            "unpaired_fallback": PROCEDURES["unpaired_cluster_bootstrap"]["name"],
            "clusters": plural,
            **({"re_estimation": PROCEDURES["ppi_bootstrap"]["name"]} if method in ("ppi", "ppi_tuned") else {}),
        }
    return out


def finish(payload: dict[str, Any], records: list[Record], ctx: Context, progress: jobs.Progress) -> dict[str, Any]:
    """Add the strata, every method's table in each, the notes and the method descriptions."""
    strata = _strata(records, ctx)
    payload["strata"] = [{"key": key, "label": label, "n_conversations": len(rs),
                          "n_personas": len({r.design.persona_id for r in rs if r.design.persona_id is not None})}
                         for key, label, rs in strata]
    payload["chatbots"] = sorted({r.design.chatbot for r in records})
    payload["method_keys"] = ctx.methods  # "methods" is the methods paragraph (reports.methods)
    payload["method_labels"] = {m: METHOD_LABELS[m] for m in ctx.methods}
    payload["headline"] = "ppi" if "ppi" in ctx.methods else ("human_only" if "human_only" in ctx.methods else "judge_only")
    payload["method_info"] = _method_info(ctx)
    tables = []
    for n, (key, _, rs) in enumerate(strata):
        progress(0.1 + 0.85 * n / max(1, len(strata)), f"comparing the chatbots ({key})")
        tables += _tables(key, rs, ctx)
    payload["tables"] = tables
    if payload["headline"] == "ppi" and "human_only" in ctx.methods and not any(
        s["estimate"] is not None for t in tables if t["stratum"] == "all" and t["method"] == "ppi" for s in t["scores"]
    ):
        # Every judged conversation rated (or PPI undefined for every chatbot): the judges add
        # nothing, so the page opens on the humans-only comparison rather than an empty one.
        payload["headline"] = "human_only"
    no_cluster = sum(1 for r in records if r.cluster(ctx.flow) is None)
    if no_cluster:
        what = "persona" if ctx.flow else "persona or repetition index"
        ctx.notes.append(f"{no_cluster} conversation(s) have no {what}: each is a cluster of its own, paired with "
                         "nothing.")
    no_risk = sum(1 for r in records if not r.design.risk)
    if len(strata) > 1 and no_risk:
        ctx.notes.append(f"{no_risk} conversation(s) have no persona risk level: they count under All conversations only.")
    if ctx.off_scale:
        ctx.notes.append(f"{ctx.off_scale} label(s) are not on their item's scale and count as missing.")
    payload["notes"] = ctx.notes
    if not records:
        payload["empty"] = "There is no conversation to score yet."
    return payload


def _strata(records: list[Record], ctx: Context) -> list[tuple[str, str, list[Record]]]:
    out = [("all", "All conversations", records)]
    levels = sorted({r.design.risk for r in records if r.design.risk}, key=selectors.risk_sort_key)
    for level in levels:
        out.append((f"risk:{level}", f"Persona risk level: {level}", [r for r in records if r.design.risk == level]))
    return out


def _entry(labels: dict[str, str | None] | None) -> list[str | None] | None:
    return None if labels is None else list(labels.values())


def _tables(stratum: str, records: list[Record], ctx: Context) -> list[dict[str, Any]]:
    """Return one table per method for the conversations of one stratum."""
    score_kind = "vera_mh" if ctx.flow else "amhart"
    units = [Unit(r.design.chatbot, r.cluster(ctx.flow), judge=_entry(r.judge), human=_entry(r.human), inclusion_prob=r.pi)
             for r in records]
    rows = _assisted_rows(records, ctx) if ctx.weights is not None and "human_only" in ctx.methods else {}
    out = []
    for method in ctx.methods:
        table: dict[str, Any] = {"stratum": stratum, "method": method, "scores": [], "pairs": [], "family_size": 0,
                                 "error": None}
        lam = None
        if method == "ppi_tuned":
            lam = {bot: row["lam_tuned"] for bot, row in rows.items() if row.get("lam_tuned") is not None}
        try:
            comparison = compare_chatbots(
                units, score=score_kind, method=method, lam=lam, confidence=CONFIDENCE, cluster_name=CLUSTERS[ctx.flow],  # type: ignore[arg-type]
                score_intervals=False,
            )
        except StatsInputError as exc:
            table["error"] = str(exc)
            out.append(table)
            continue
        own = {s.chatbot: s for s in comparison.scores}
        if method == "judge_only":
            card = _scorecard_rows(records, ctx)
            scores = [_judges_only_score(s, card.get(s.chatbot), ctx.flow) for s in comparison.scores]
        elif method == "human_only" and ctx.weights is None:
            scores = [_humans_alone_score(bot, [r for r in records if r.design.chatbot == bot], ctx, own[bot]) for bot in own]
        else:
            scores = [_assisted_score(rows[bot], method, own[bot]) for bot in own if bot in rows]
        table["scores"] = sorted(scores, key=lambda s: (s["estimate"] is None, -(s["estimate"] or 0.0), s["chatbot"]))
        table["pairs"] = [p.as_dict() for p in comparison.pairs]
        table["family_size"] = comparison.family_size
        out.append(table)
    return out


def _assisted_rows(records: list[Record], ctx: Context) -> dict[str, dict[str, Any]]:
    """Return the judge-assisted page's row of the headline score per chatbot for these conversations."""
    human = {r.id: r.human for r in records if r.human is not None}
    judge = {r.id: r.judge or {} for r in records}
    by_bot: dict[str, tuple[list[int], list[int]]] = {}
    for r in records:
        rated, unrated = by_bot.setdefault(r.design.chatbot, ([], []))
        (rated if r.human is not None else unrated).append(r.id)
    judge_of: Callable[[int], dict[str, str | None]] = lambda cid: judge.get(cid, {})  # noqa: E731
    return {
        bot: score_row(bot, ctx.score, ctx.flow, human, judge_of, rated, unrated, ctx.weights,  # type: ignore[arg-type]
                       tuning="same-sample")
        for bot, (rated, unrated) in sorted(by_bot.items())
    }


def _estimate(est: dict[str, Any] | None) -> dict[str, Any]:
    est = est or {}
    return {"estimate": est.get("estimate"), "low": est.get("low"), "high": est.get("high"),
            "std_error": est.get("std_error"), "cannot_estimate": est.get("cannot_estimate"), "note": est.get("note")}


def _assisted_score(row: dict[str, Any], method: str, own: Any) -> dict[str, Any]:
    out = {"chatbot": row["chatbot"], **_estimate(row.get(method)), "interval": (row.get(method) or {}).get("interval") or "t",
           "n_conversations": own.n_conversations, "n_rated": row["n_labeled"], "n_clusters": own.n_clusters,
           "lam": row.get("lam_tuned") if method == "ppi_tuned" else None}
    if row.get("error"):
        out["cannot_estimate"] = f"cannot be estimated: {row['error']}"
    return out


def _humans_alone_score(bot: str, records: list[Record], ctx: Context, own: Any) -> dict[str, Any]:
    """Return humans only without a judge run: stats.ppi's λ = 0 estimate (judge columns unused)."""
    entries = [_entry(r.human) for r in records if r.human is not None]
    estimator = ppi_vera_mh_score if ctx.flow else ppi_amhart_score
    try:
        est = estimator(entries, entries, [], confidence=CONFIDENCE, small_sample=True).human_only.as_dict()
    except StatsInputError as exc:
        est = {"cannot_estimate": f"cannot be estimated: {exc}"}
    return {"chatbot": bot, **_estimate(est), "interval": est.get("interval") or "t", "n_conversations": own.n_conversations,
            "n_rated": own.n_rated, "n_clusters": own.n_clusters, "lam": None}


def _judges_only_score(own: Any, row: dict[str, Any] | None, flow: bool) -> dict[str, Any]:
    """Return a chatbot's judges-only score and interval as its scorecard row gives them."""
    row = row or {}
    low, high = row.get("ci_low"), row.get("ci_high")
    why = row.get("ci_note") or "no scored conversation"
    return {"chatbot": own.chatbot, "estimate": row.get("score" if flow else "mean_score"), "low": low, "high": high,
            "std_error": None, "cannot_estimate": None if low is not None and high is not None else f"cannot be estimated: {why}",
            "note": None, "interval": SCORECARD_INTERVALS[flow]["kind"], "n_conversations": own.n_conversations,
            "n_rated": own.n_rated, "n_clusters": own.n_clusters, "lam": None}


def _scorecard_rows(records: list[Record], ctx: Context) -> dict[str, dict[str, Any]]:
    """Return each chatbot's scorecard row of the judges' labels: the run scorecard's score and interval."""
    rows = []
    for r in records:
        for key, label in (r.judge or {}).items():
            base = {"conversation": r.id, "chatbot": r.design.chatbot, "item": key, "dimension": key, "label": label}
            if ctx.flow:
                rows.append({**base, "risk": r.design.risk or "—"})
            else:
                rows.append({**base, "persona": r.design.persona, "diagnosis": "—", "severity": "—", "domain": "—"})
    if not rows:
        return {}
    card = scorecard(rows, ctx.instrument, lambda fraction, stage: None)
    return {row["chatbot"]: row for row in card.get("by_chatbot", [])}
