"""Judge-assisted scorecards: per chatbot and score, PPI and PPI++ beside judge-only and human-only.

The judges (a run's ensemble, or one judge) labelled every conversation of the run; the
clinicians of a study rated some of them. For each chatbot and each score (AMHART score and
every yes/no item's yes-rate; or the VERA-MH overall score and each dimension's score) the
prediction-powered estimate (PPI, Angelopoulos et al., Science 2023, as ppi_py computes it;
:mod:`stats.ppi`) corrects the judges' figure over the chatbot's unrated conversations by the
mean human-minus-judge difference on the rated ones, with an interval that accounts for both.
PPI++ tunes how much to lean on the judges. The two-phase difference estimator (judge term
over every judged conversation) is given too, under its own name, in the API and CSV. The
judge-only interval ignores the judges' errors; the human-only interval uses the ratings
alone: side by side, the researcher sees what the human sample buys (the correction) and what
the judges buy (the effective number of ratings). A chatbot nobody rated still gets its
judges-only figure, with the warning that it is uncorrected.

Rated conversations are weighted by 1/π, and unrated ones by 1/(1 - π), when the study was
drawn with a sampling plan from this run's conversations (or from a run that judged exactly
the same ones): Hájek means (:mod:`stats.ppi.engine`). Otherwise they are treated as a simple
random sample of the run's conversations, and the page says so.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from annotation.models import Study
from annotation.sampling.inclusion import plan_unit_inclusion
from corpus.models import InstrumentKind
from judging.models import JudgeRun
from judging.sources import LabelSource, label_source_get, run_labels
from reports import jobs
from reports.judge_assisted import selectors
from reports.methods.facts import ensemble_facts, instrument_facts
from stats.data import StatsInputError
from stats.ppi import ESTIMATORS, PPIEstimate, ppi_amhart_score, ppi_item_rate, ppi_vera_mh_score
from stats.ppi.results import Tuning

CONFIDENCE = 0.95
METHODS = ("judge_only", "human_only", "ppi", "ppi_tuned", "two_phase")
METHOD_LABELS = {
    "judge_only": "Judges only (uncorrected)",
    "human_only": "Humans only",
    "ppi": "Judge-assisted (PPI)",
    "ppi_tuned": "Judge-assisted, power-tuned (PPI++)",
    "two_phase": "Two-phase difference estimator",
}
# The stats package's name of each page method (its estimator name and reference).
METHOD_KEYS = {"judge_only": "judge_only", "human_only": "human_only", "ppi": "ppi", "ppi_tuned": "ppi++_cf",
               "two_phase": "two_phase"}
NO_RATINGS = (
    "Judges only, uncorrected: no clinician rated {what} of this chatbot's conversations, so the judges' errors are not "
    "corrected and their interval ignores them."
)


KIND = "judge_assisted"
INTERVAL = ("Student t (n - 1 df), ddof 1; delta method for a function of means (item yes-rates, VERA-MH scores); "
            "humans only on a yes/no proportion: Wilson score interval (Korn & Graubard's effective sample size under "
            "a sampling plan)")


def judge_assisted_scorecard(*, study: Study, run: JudgeRun, source_key: str | None = None) -> dict[str, Any]:
    """Return the judge-assisted scorecard of a study with a run's labels (cached per data state).

    Raises ``judging.errors.JudgingError`` for an unknown label source.
    """
    source = label_source_get(run, source_key)
    return jobs.report_get(KIND, {"study": study.pk, "run": run.pk, "source": source.key}, wait=True)  # computed in the request: these pages have no pending state yet


def _params(params: dict[str, Any]) -> tuple[Study, JudgeRun, LabelSource]:
    study = Study.objects.select_related("instrument", "section").get(pk=params["study"])
    run = JudgeRun.objects.select_related("instrument").get(pk=params["run"])
    return study, run, label_source_get(run, params["source"])


def _version(params: dict[str, Any]) -> str:
    study, run, _ = _params(params)
    return selectors.data_version(study, run)


def _compute_report(params: dict[str, Any], progress: jobs.Progress) -> dict[str, Any]:
    progress(0.1, "reading the judges' labels and the human consensus")
    return _compute(*_params(params))


@dataclass(frozen=True)
class Weights:
    """The inclusion probabilities the estimators use, and what the page says of them."""

    rated: dict[int, float] | None  # π of each rated conversation (None: equal weights)
    unrated: dict[int, float] | None  # π of every other judged conversation (None: not known)
    note: str
    why_no_unrated: str = ""  # why PPI cannot be weighted although the rated π are known

    @property
    def weighted(self) -> bool:
        return self.rated is not None


def estimation_weights(study: Study, run: JudgeRun, rated: list[int], chatbot_of: dict[int, str]) -> Weights:
    """Return the inclusion probabilities to use (None: equal weights) and why.

    ``chatbot_of`` maps every judged conversation of the run to its chatbot.
    """
    judged = list(chatbot_of)
    plan = selectors.study_plan(study)
    if plan.plan is None and selectors.study_is_active(study):
        return Weights(None, None, (
            "This study was drawn by active sampling (batches whose chances followed the judges' uncertainty): PPI "
            "here treats its rated conversations as a simple random sample and can be biased towards the conversations "
            "the judges found hard. Its active sampling page gives the estimate that undoes how they were drawn "
            "(active inference, Zrnic & Candès 2024)."
        ))
    if plan.plan is None:
        return Weights(None, None, (
            "This study has no recorded sampling plan: its rated conversations are treated as a simple random "
            "sample of the run's conversations (equal weights). If they were picked otherwise (by persona, by "
            "chatbot, by hand), the judge-assisted and human-only estimates can be biased."
        ))
    missing = [cid for cid in rated if cid not in plan.inclusion_prob]
    if missing:
        return Weights(None, None, (
            f"{len(missing)} rated conversation(s) have no recorded inclusion probability: equal weights are used, "
            "as if the sample were simple random (unweighted)."
        ))
    if plan.plan.judge_run_id != run.pk and not selectors.same_population(plan.plan.judge_run, run):
        return Weights(None, None, (
            f"The study's sampling plan was drawn from run #{plan.plan.judge_run_id}, which judged other conversations "
            "than this run: its inclusion probabilities do not apply here, and equal weights are used (unweighted). "
            f"Choose run #{plan.plan.judge_run_id} for weighted estimates."
        ))
    # Picked conversations still without a consensus: assumed missing at random among the picked conversations of
    # the same chatbot and inclusion probability (a stratum, or strata alike), so a conversation's chance of being
    # *rated* is π times the share of its group's picked conversations rated so far.
    def group(cid: int, pi: float) -> tuple[str, float]:
        return chatbot_of.get(cid, ""), round(pi, 12)

    picked_n: dict[tuple[str, float], int] = defaultdict(int)
    rated_n: dict[tuple[str, float], int] = defaultdict(int)
    rated_set = set(rated)
    for cid, pi in plan.inclusion_prob.items():
        picked_n[group(cid, pi)] += 1
        rated_n[group(cid, pi)] += cid in rated_set

    def share(cid: int, pi: float) -> float:
        key = group(cid, pi)
        return rated_n[key] / picked_n[key] if picked_n.get(key) else 1.0

    waiting = len(plan.inclusion_prob) - len(rated)
    pending = (
        f" {waiting} of the plan's {len(plan.inclusion_prob)} conversations have no consensus yet: the estimate "
        "assumes they would not differ from the rated ones of the same chatbot and stratum (a conversation's chance "
        "of being rated is taken as π times the share of its stratum rated so far; it firms up as they are rated)."
        if waiting > 0 else ""
    )
    where = (f"{plan.plan.get_method_display().lower()} from this run" if plan.plan.judge_run_id == run.pk
             else f"drawn from run #{plan.plan.judge_run_id}, which judged the same conversations as this run")
    note = (
        f"Weighted by the study's sampling plan ({where}): Hájek estimates, each rated conversation counting 1/π "
        "and each unrated one 1/(1 − π), π its recorded inclusion probability." + pending
    )
    rated_pi = {cid: plan.inclusion_prob[cid] * share(cid, plan.inclusion_prob[cid]) for cid in rated}
    units, why = plan_unit_inclusion(plan.plan)
    if units is None or any(cid not in units for cid in judged if cid not in rated_set):
        why = why or "the plan does not record the chances of every conversation of this run"
        return Weights(rated_pi, None, note, why)
    unrated_pi = {cid: units[cid] * share(cid, units[cid]) for cid in judged if cid not in rated_set}
    return Weights(rated_pi, unrated_pi, note)


def _scores(study: Study) -> list[tuple[str, str, str]]:
    """Return (key, label, scale) of every score: the instrument's score, then items or dimensions."""
    items = selectors.score_items(study)
    if study.instrument.kind == InstrumentKind.FLOW:
        return [("vera_mh_score", "VERA-MH overall score", "points")] + [
            (f"dimension:{i.key}", f"VERA-MH score: {i.title}", "points") for i in items
        ]
    return [("amhart_score", "AMHART score (yes / (yes + no), mean over conversations)", "share")] + [
        (f"item:{i.key}", f"Yes-rate: {i.title}", "share") for i in items
    ]


Estimator = Callable[..., PPIEstimate]


def _estimator(score: str, flow: bool) -> tuple[Estimator, Callable[[dict[str, str | None]], Any]]:
    """Return the stats function and how one conversation's labels become its entry."""
    if score in ("amhart_score", "vera_mh_score"):
        return (ppi_vera_mh_score if flow else ppi_amhart_score), (lambda labels: list(labels.values()))
    kind, key = score.split(":", 1)
    return (ppi_vera_mh_score if kind == "dimension" else ppi_item_rate), (lambda labels: labels.get(key))


def _cannot(method: str, why: str) -> dict[str, Any]:
    return {"method": METHOD_KEYS[method], "estimator": ESTIMATORS[METHOD_KEYS[method]]["name"], "estimate": None,
            "std_error": None, "low": None, "high": None, "width": None, "confidence": CONFIDENCE, "ddof": 0,
            "interval": None, "interval_name": None, "interval_n": None, "note": None,
            "cannot_estimate": f"cannot be estimated: {why}"}


def score_row(
    chatbot: str, score: tuple[str, str, str], flow: bool, human: dict[int, dict[str, str | None]],
    judge: Callable[[int], dict[str, str | None]], rated: list[int], unrated: list[int], weights: Weights,
    tuning: Tuning = "cross-fit",
) -> dict[str, Any]:
    """Return one chatbot's estimates of one score by every method, from its rated and unrated conversations.

    PPI++ cross-fits its λ (stats.ppi.engine); the leaderboard asks for ppi_py's same-sample λ
    (``tuning="same-sample"``), because its pairwise bootstrap keeps one λ per chatbot fixed in
    the resamples. Also used by the leaderboard (per chatbot and persona risk level).
    """
    key, label, scale = score
    estimator, entry = _estimator(key, flow)
    row: dict[str, Any] = {"chatbot": chatbot, "score": key, "score_label": label, "scale": scale,
                           "n_labeled": len(rated), "n_unlabeled": len(unrated), "n_total": len(rated) + len(unrated)}
    args = (
        [entry(human[c]) for c in rated],
        [entry(judge(c)) for c in rated],
        [entry(judge(c)) for c in unrated],
    )
    probs = [weights.rated[c] for c in rated] if weights.rated is not None else None
    probs_u = [weights.unrated[c] for c in unrated] if weights.unrated is not None else None
    paper_ok = probs is None or probs_u is not None
    kw: dict[str, Any] = {"confidence": CONFIDENCE, "small_sample": True}
    try:
        two_phase = estimator(*args, **kw, inclusion_prob=probs, judge_term="all")
        if paper_ok:
            classical = estimator(*args, **kw, inclusion_prob=probs, unlabeled_inclusion_prob=probs_u)
            tuned = estimator(*args, **kw, inclusion_prob=probs, unlabeled_inclusion_prob=probs_u, tuned=True,
                              tuning=tuning)
    except StatsInputError as exc:
        return {**row, "error": str(exc), "warning": None, **dict.fromkeys(METHODS)}
    base = classical if paper_ok else two_phase
    if paper_ok:
        ppi, ppi_tuned = classical.ppi.as_dict(), tuned.ppi.as_dict()
        lam_tuned, effective_tuned = tuned.lam, tuned.effective_n
        notes = [*classical.notes, *tuned.notes]
    else:
        why = f"the plan's inclusion probabilities of the unrated conversations are not known ({weights.why_no_unrated})"
        ppi, ppi_tuned = _cannot("ppi", why), _cannot("ppi_tuned", why)
        lam_tuned, effective_tuned, notes = None, None, list(two_phase.notes)
    warning = None
    if base.n_labeled < 2:
        warning = NO_RATINGS.format(what="any" if base.n_labeled == 0 else "more than one")
    return {
        **row,
        "error": None,
        "warning": warning,
        "judge_only": base.judge_only.as_dict(),
        "human_only": base.human_only.as_dict(),
        "ppi": ppi,
        "ppi_tuned": ppi_tuned,
        "two_phase": two_phase.ppi.as_dict(),
        "lam": 1.0,
        "lam_tuned": lam_tuned,
        "lam_two_phase": two_phase.lam,
        "weighted": base.weighted,
        "weights": base.weights if paper_ok else two_phase.weights,
        "interval": base.interval,
        "n_labeled": base.n_labeled,
        "n_unlabeled": base.n_unlabeled,
        "n_total": base.n_total,
        "n_dropped_labeled": base.n_dropped_labeled,
        "n_dropped_unlabeled": base.n_dropped_unlabeled,
        "correction": (ppi["estimate"] - base.judge_only.estimate
                       if ppi["estimate"] is not None and base.judge_only.estimate is not None else None),
        "effective_n": classical.effective_n if paper_ok else None,
        "effective_n_tuned": effective_tuned,
        "effective_n_two_phase": two_phase.effective_n,
        "notes": list(dict.fromkeys(notes)),
    }


def methods_used() -> dict[str, dict[str, Any]]:
    """Return what each method is, for a methods paragraph: estimator, reference, ddof, λ."""
    ddof = {"two_phase": 1, "ppi_tuned": 1, "ppi": 1, "human_only": 1}
    lam = {"ppi": "1", "ppi_tuned": "ppi_py's power tuning, cross-fitted: each rated conversation's lambda is estimated "
                                    "without it (leave-one-out); lam_tuned is their weighted mean", "human_only": "0",
           "two_phase": "1 (judge term over every judged conversation)"}
    return {
        method: {"label": METHOD_LABELS[method], **ESTIMATORS[METHOD_KEYS[method]], "ddof": ddof.get(method, 0),
                 "lambda": lam.get(method)}
        for method in METHODS
    }


def _compute(study: Study, run: JudgeRun, source: LabelSource) -> dict[str, Any]:
    labels = run_labels(run, source)
    human = selectors.study_human_labels(study)
    flow = study.instrument.kind == InstrumentKind.FLOW
    payload: dict[str, Any] = {
        "study": study.pk,
        "run": run.pk,
        "source": {"key": source.key, "name": source.name},
        "kind": "vera-mh" if flow else "checklist",
        "instrument": instrument_facts(study.instrument),
        "ensemble": ensemble_facts(run),
        "confidence": CONFIDENCE,
        "judge_term": "PPI and PPI++: the unrated conversations (Angelopoulos et al. 2023); two-phase: every judged one",
        "method_labels": METHOD_LABELS,  # "methods" is the methods paragraph (reports.methods)
        "methods_used": methods_used(),
        "interval": INTERVAL,
        "notes": [],
    }
    if run.instrument_id != study.instrument_id:
        payload["notes"].append(
            f"The run used instrument {run.instrument}, the study {study.instrument}: only labels with the same item "
            "keys are compared."
        )
    rated_all = sorted(human)
    rated = [cid for cid in rated_all if cid in labels.conversations]
    payload.update(n_judged=len(labels.conversations), n_rated=len(rated), n_rated_not_judged=len(rated_all) - len(rated))
    if payload["n_rated_not_judged"]:
        payload["notes"].append(
            f"{payload['n_rated_not_judged']} rated conversation(s) were not judged in this run (or failed the integrity "
            "checks) and are left out."
        )
    if not labels.conversations:
        payload["empty"] = "This run has no judged conversation (or all were flagged by the integrity checks)."
        return payload
    weights = estimation_weights(study, run, rated, {cid: c.chatbot for cid, c in labels.conversations.items()})
    payload["weighted"] = weights.weighted
    payload["weights"] = "inverse inclusion probabilities (Hájek)" if weights.weighted else "equal (unweighted)"
    payload["notes"].insert(0, weights.note)
    if not rated:
        payload["no_ratings"] = (
            "No conversation of this run has a human consensus in this study yet (compute consensus first): every "
            "figure below is the judges' alone, uncorrected."
        )
    groups: dict[str, list[int]] = defaultdict(list)
    for cid, conversation in labels.conversations.items():
        groups[conversation.chatbot].append(cid)
    rated_set = set(rated)
    scores = _scores(study)
    payload["scores"] = [{"key": k, "label": label, "scale": scale} for k, label, scale in scores]
    rows = []
    for chatbot, cids in sorted(groups.items()):
        mine = [c for c in cids if c in rated_set]
        others = [c for c in cids if c not in rated_set]
        for score in scores:
            rows.append(score_row(chatbot, score, flow, human, labels.of, mine, others, weights))
    payload["rows"] = rows
    return payload


CSV_HEADER = [
    "chatbot", "score", "method", "estimator", "estimate", "std_error", "ci_low", "ci_high", "width", "confidence",
    "interval", "lambda", "ddof", "n_labeled", "n_unlabeled", "n_total", "weighted", "weights", "correction",
    "effective_n", "cannot_estimate", "warning", "note",
]


def csv_rows(payload: dict[str, Any]) -> list[list[Any]]:
    """Return one CSV row per chatbot, score and method (long form, ready for R or Stata)."""
    out = []
    for row in payload.get("rows", []):
        for method in METHODS:
            est = row.get(method)
            if est is None:
                out.append([row["chatbot"], row["score"], method, ESTIMATORS[METHOD_KEYS[method]]["name"], None, None,
                            None, None, None, CONFIDENCE, None, None, None, row["n_labeled"], row["n_unlabeled"],
                            row["n_total"], None, None, None, None, row.get("error"), None, row.get("error")])
                continue
            lam = {"ppi": row.get("lam"), "ppi_tuned": row.get("lam_tuned"), "two_phase": row.get("lam_two_phase"),
                   "human_only": 0.0}.get(method)
            effective = {"ppi": row.get("effective_n"), "ppi_tuned": row.get("effective_n_tuned"),
                         "two_phase": row.get("effective_n_two_phase")}.get(method)
            warning = row.get("warning") if method == "judge_only" else None
            out.append([
                row["chatbot"], row["score"], method, est.get("estimator"), est["estimate"], est["std_error"], est["low"],
                est["high"], est["width"], est["confidence"], _interval_text(est, row), lam, est.get("ddof"),
                row["n_labeled"], row["n_unlabeled"], row["n_total"], row.get("weighted"), row.get("weights"),
                row.get("correction") if method == "ppi" else None, effective, est.get("cannot_estimate"), warning,
                "; ".join(x for x in [est.get("note"), *row.get("notes", [])] if x),
            ])
    return out


def _interval_text(est: dict[str, Any], row: dict[str, Any]) -> str | None:
    """Return how one estimate's interval was drawn: a Wilson interval by its name, others as the row says."""
    if str(est.get("interval") or "").startswith("wilson"):
        n = est.get("interval_n")
        return f"{est.get('interval_name')}" + (f" (n = {n:.1f})" if n is not None else "")
    return row.get("interval")


jobs.register(KIND, version=_version, compute=_compute_report)
