"""The benchmark leaderboard: every chatbot's score side by side, every pair compared.

For a judge run, or a study (its clinicians' consensus, with a judge run that labelled its
conversations when there is one), each chatbot's headline score (the AMHART score or the
VERA-MH overall score) by every method the data allows, each with its own named interval:

* **judges only** (a run's ensemble or one judge): the scorecard's figure and interval
  (:mod:`reports.scorecards`: Student t over conversation scores for AMHART, a bootstrap over
  conversations for VERA-MH; the same numbers as the run's scorecard page);
* **humans only**, **judge-assisted (PPI)** and **power-tuned (PPI++)**: the judge-assisted
  page's estimates and normal intervals (:func:`reports.judge_assisted.services.score_row`,
  Hájek-weighted under a sampling plan), so both pages give the same figures. A study without
  a judge run gets humans only, from :mod:`stats.ppi` (its λ = 0 case).

Every pair of chatbots is compared, per method, by the difference of their estimates with a
paired cluster bootstrap interval (clusters: personas for VERA-MH; persona and repetition index
for a checklist such as AMHART) and Holm's adjustment over the pairs deciding "A scores higher
than B" or "no difference shown" (:func:`stats.leaderboard.compare_chatbots`). All of it again
for each persona risk level (None, Low, High, Immediate), as VERA-MH reports.
"""

from __future__ import annotations

from typing import Any

from annotation.models import Study
from corpus.models import InstrumentKind
from judging.models import JudgeRun
from judging.sources import LabelSource, label_source_get, run_labels
from reports import jobs
from reports.judge_assisted import selectors as assisted_reads
from reports.judge_assisted.services import estimation_weights
from reports.leaderboard import selectors
from reports.leaderboard.tables import Context, Record, finish, payload_base, respell, score_specs

KIND_STUDY = "leaderboard"
KIND_RUN = "leaderboard_run"


def study_leaderboard(*, study: Study, run: JudgeRun | None, source_key: str | None = None, wait: bool = False) -> dict[str, Any]:
    """Return a study's leaderboard (cached per data state), or its pending state while a worker computes it.

    Raises ``judging.errors.JudgingError`` for an unknown label source.
    """
    params: dict[str, Any] = {"study": study.pk, "run": run.pk if run else None, "source": None}
    if run is not None:
        params["source"] = label_source_get(run, source_key).key
    return jobs.report_get(KIND_STUDY, params, wait=wait)


def run_leaderboard(*, run: JudgeRun, source_key: str | None = None, wait: bool = False) -> dict[str, Any]:
    """Return a judge run's leaderboard from its judges' labels (judges only).

    Raises ``judging.errors.JudgingError`` for an unknown label source.
    """
    return jobs.report_get(KIND_RUN, {"run": run.pk, "source": label_source_get(run, source_key).key}, wait=wait)


def _study_params(params: dict[str, Any]) -> tuple[Study, JudgeRun | None, LabelSource | None]:
    study = Study.objects.select_related("instrument").get(pk=params["study"])
    if params.get("run") is None:
        return study, None, None
    run = JudgeRun.objects.select_related("instrument").get(pk=params["run"])
    return study, run, label_source_get(run, params["source"])


def _study_version(params: dict[str, Any]) -> str:
    study, run, _ = _study_params(params)
    return selectors.study_version(study, run)


def _run_params(params: dict[str, Any]) -> tuple[JudgeRun, LabelSource]:
    run = JudgeRun.objects.select_related("instrument").get(pk=params["run"])
    return run, label_source_get(run, params["source"])


def _run_version(params: dict[str, Any]) -> str:
    return selectors.run_version(_run_params(params)[0])


def _compute_study(params: dict[str, Any], progress: jobs.Progress) -> dict[str, Any]:
    study, run, source = _study_params(params)
    progress(0.05, "reading the human consensus and the judges' labels")
    flow = study.instrument.kind == InstrumentKind.FLOW
    ctx = Context(study.instrument, flow, ["human_only"])
    specs = score_specs(study.instrument)
    human = {cid: respell(labels, specs, ctx) for cid, labels in assisted_reads.study_human_labels(study).items()}
    payload = payload_base("study", ctx, study=study.pk, run=run.pk if run else None, source=source)
    if run is None:
        ctx.notes.append("No judge run has labelled this study's conversations: the leaderboard is the clinicians' "
                         "consensus alone (humans only).")
        designs = selectors.conversation_designs(human)
        records = [Record(cid, designs[cid], human=labels) for cid, labels in human.items() if cid in designs]
        payload.update(n_rated=len(records), n_judged=0, weighted=False, weights="equal (unweighted)")
        return finish(payload, records, ctx, progress)
    labels = run_labels(run, source)  # type: ignore[arg-type]
    judged = labels.conversations
    rated = sorted(cid for cid in human if cid in judged)
    if len(human) > len(rated):
        ctx.notes.append(f"{len(human) - len(rated)} rated conversation(s) were not judged in run {run.pk} (or failed "
                         "the integrity checks) and are left out, as on the judge-assisted page.")
    if run.instrument_id != study.instrument_id:
        ctx.notes.append(f"The run used instrument {run.instrument}, the study {study.instrument}: only labels with the "
                         "same item keys are compared.")
    ctx.weights = estimation_weights(study, run, rated, {cid: c.chatbot for cid, c in judged.items()})
    ctx.notes.insert(0, ctx.weights.note)
    ctx.methods = ["judge_only", "human_only", "ppi", "ppi_tuned"]
    if ctx.weights.weighted and ctx.weights.unrated is None:
        ctx.methods = ["judge_only", "human_only"]
        ctx.notes.append("PPI and PPI++ cannot be estimated: the plan's inclusion probabilities of the unrated "
                         f"conversations are not known ({ctx.weights.why_no_unrated}).")
    if not rated:
        ctx.methods = ["judge_only"]
        ctx.notes.append("No conversation of this run has a human consensus in this study yet (compute consensus "
                         "first): the leaderboard is the judges' alone.")
    designs = selectors.conversation_designs(judged)
    rated_set = set(rated)
    records = []
    for cid in judged:
        pi = None
        if ctx.weights.rated is not None and cid in rated_set:
            pi = ctx.weights.rated[cid]
        elif ctx.weights.unrated is not None and cid not in rated_set:
            pi = ctx.weights.unrated.get(cid)
        records.append(Record(cid, designs[cid], judge=respell(labels.of(cid), specs, ctx),
                              human=human[cid] if cid in rated_set else None, pi=pi))
    payload.update(n_rated=len(rated), n_judged=len(judged), weighted=ctx.weights.weighted,
                   weights="inverse inclusion probabilities (Hájek)" if ctx.weights.weighted else "equal (unweighted)")
    return finish(payload, records, ctx, progress)


def _compute_run(params: dict[str, Any], progress: jobs.Progress) -> dict[str, Any]:
    run, source = _run_params(params)
    progress(0.05, "reading the judges' labels")
    flow = run.instrument.kind == InstrumentKind.FLOW
    ctx = Context(run.instrument, flow, ["judge_only"])
    specs = score_specs(run.instrument)
    labels = run_labels(run, source)
    designs = selectors.conversation_designs(labels.conversations)
    records = [Record(cid, designs[cid], judge=respell(labels.of(cid), specs, ctx)) for cid in labels.conversations]
    payload = payload_base("run", ctx, study=None, run=run.pk, source=source)
    payload.update(n_judged=len(records), n_rated=0, weighted=False, weights="equal (unweighted)")
    return finish(payload, records, ctx, progress)


jobs.register(KIND_STUDY, version=_study_version, compute=_compute_study)
jobs.register(KIND_RUN, version=_run_version, compute=_compute_run)
