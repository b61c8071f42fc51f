"""The methods paragraph of the judge-assisted scorecard: PPI and PPI++ beside judges-only and humans-only."""

from __future__ import annotations

from typing import Any

from reports.methods.base import PARAGRAPH, Methods, clause, count, number, prose, share, writes
from reports.methods.judges import ensemble_sentence
from reports.methods.references import cite

TITLE = "Judge-assisted scores (prediction-powered inference)"
EQUALS = (
    "The PPI estimate and standard error equal those of the authors' ppi_py (ppi_mean_ci with lam=1), and each rated "
    "conversation's cross-fitted λ equals ppi_py's λ (lam=None) computed without that conversation, to four decimals in "
    f"evalsite's tests ({cite('angelopoulos2023')})."
)


def _source(payload: dict[str, Any]) -> str:
    """Return whose labels were used, naming no judge (a judge's name may be its model's)."""
    run = payload.get("run")
    source = (payload.get("source") or {}).get("key", "ensemble")
    if source == "ensemble":
        return f"the majority-vote ensemble labels of judge run #{run}"
    return f"the labels of one judge of judge run #{run} (source {source})"


def _scores(payload: dict[str, Any]) -> str:
    scores = payload.get("scores") or []
    if payload.get("kind") == "vera-mh":
        n = sum(1 for s in scores if s["key"].startswith("dimension:"))
        return f"the VERA-MH overall score and the score of each of its {count(n, 'dimension')}"
    n = sum(1 for s in scores if s["key"].startswith("item:"))
    return f"the AMHART score (yes / (yes + no), mean over conversations) and the yes-rate of each of {count(n, 'yes/no item')}"


def _lambda_range(rows: list[dict[str, Any]]) -> str:
    values = [r["lam_tuned"] for r in rows if r.get("lam_tuned") is not None]
    if not values:
        return ""
    low, high = min(values), max(values)
    return f"; here λ = {low:.2f}" if round(low, 2) == round(high, 2) else f"; here λ from {low:.2f} to {high:.2f}"


def _wilson(rows: list[dict[str, Any]]) -> tuple[str, tuple[str, ...]]:
    """Return the sentence on the humans-only Wilson intervals (empty when none was drawn) and what it cites."""
    kinds = [str((r.get("human_only") or {}).get("interval") or "") for r in rows]
    drawn = sum(k.startswith("wilson") for k in kinds)
    if not drawn:
        return "", ()
    text = (f"The humans-only interval of a yes/no proportion ({count(drawn, 'estimate')} here: an item's yes-rate, or a score "
            f"that is 0 or 1 per conversation) is instead the Wilson score interval ({cite('wilson1927', 'brown2001')}), "
            "which is not centred on the estimate: a symmetric t interval on tens of yes/no answers covers less than stated "
            "(bench/ppi_coverage.py)")
    refs: tuple[str, ...] = ("wilson1927", "brown2001")
    if "wilson_effective_n" in kinds:
        text += (f"; under the sampling plan its n is the effective sample size p̂(1 − p̂)/v̂, v̂ the Hájek proportion's "
                 f"variance, capped at the answers given ({cite('korn1998', 'franco2019')})")
        refs += ("korn1998", "franco2019")
    return text + ".", refs


@writes("judge_assisted")
def judge_assisted(payload: dict[str, Any], params: dict[str, Any]) -> Methods:
    """Write the estimators (as the literature names them), their λ, ddof and interval, weights and sample."""
    if payload.get("empty"):
        return Methods(TITLE, f"No judge-assisted estimate was computed: {clause(payload['empty'])}.")
    rows = payload.get("rows") or []
    used = payload.get("methods_used") or {}
    chatbots = {r["chatbot"] for r in rows}
    confidence = share(payload.get("confidence", 0.95))
    sentences = [
        f"Chatbot scores were estimated from {_source(payload)} on {count(payload.get('n_judged', 0), 'judged conversation')} "
        f"of {count(len(chatbots), 'chatbot')}, {number(payload.get('n_rated', 0))} of which have a human consensus in the study, "
        f"for {_scores(payload)}.",
    ]
    ensemble = payload.get("ensemble") or {}
    if (payload.get("source") or {}).get("key", "ensemble") == "ensemble" and ensemble:
        sentences.append(ensemble_sentence(ensemble))
    sentences.append(PARAGRAPH)
    ppi, tuned, human, two = (used.get(k) or {} for k in ("ppi", "ppi_tuned", "human_only", "two_phase"))
    sentences.append(
        "For each chatbot and score we report four estimates: the judges-only mean over every judged conversation "
        "(uncorrected: its interval ignores the judges' errors); the humans-only mean over the rated conversations "
        f"(ddof {human.get('ddof', 0)}); prediction-powered inference (PPI; {cite('angelopoulos2023')}) with λ = "
        f"{ppi.get('lambda', '1')}, the judges' mean over the chatbot's unrated conversations corrected by the mean "
        f"human-minus-judge difference on the rated ones (ddof {ppi.get('ddof', 0)}); and its power-tuned variant PPI++ "
        f"({cite('angelopoulos2023ppipp')}), with λ chosen to minimise the variance as ppi_py chooses it, but cross-fitted: "
        f"each rated conversation's λ is estimated without that conversation (leave-one-out; "
        f"{cite('chernozhukov2018', 'zrnic2024cross')}), because a λ estimated on the data it weights makes the interval "
        f"cover less than stated at these sample sizes (bench/ppi_coverage.py) (ddof {tuned.get('ddof', 1)}"
        f"{_lambda_range(rows)}, the mean λ)."
    )
    sentences.append(
        f"The API and CSV add the two-phase difference estimator, whose judge term averages over every judged conversation "
        f"(λ = 1, ddof {two.get('ddof', 1)}; {cite('sarndal1992', 'breidt2017')})."
    )
    interval = str(payload.get("interval") or "normal (Wald)")
    delta = "delta method" in interval
    small = interval.startswith("Student t")
    if small:
        interval = ("small-sample t intervals: the estimate ± Student's t quantile with n − 1 degrees of freedom times its "
                    "standard error, n the rated conversations (Kish's effective number under a sampling plan), their "
                    "variance with divisor n − 1; ppi_py draws normal intervals with divisor n, which cover less than "
                    f"stated with tens of ratings ({cite('hesterberg2015')}; bench/ppi_coverage.py)")
    else:
        interval = f"{interval.split(';')[0].strip()} intervals"
    sentences.append(
        f"Intervals are {confidence} {interval}"
        + (f"; a score computed from several label shares gets its interval by the delta method ({cite('oehlert1992')})"
           if delta else "") + "."
    )
    wilson, wilson_refs = _wilson(rows)
    if wilson:
        sentences.append(wilson)
    refs: tuple[str, ...] = ("angelopoulos2023", "angelopoulos2023ppipp", "chernozhukov2018", "zrnic2024cross",
                             "sarndal1992", "breidt2017", *wilson_refs)
    if small:
        refs += ("hesterberg2015",)
    if delta:
        refs += ("oehlert1992",)
    if payload.get("weighted"):
        sentences.append(
            "Because the study's conversations were drawn by a sampling plan from this run, every mean is a Hájek estimate: "
            "each rated conversation counts 1/π and each unrated one 1/(1 − π), π its recorded inclusion probability "
            f"({cite('hajek1971', 'sarndal1992')}, sec. 5.7)."
        )
        refs += ("hajek1971",)
    else:
        note = next((n for n in payload.get("notes") or [] if "weights" in n or "unweighted" in n.lower()), "")
        if not note or "no recorded sampling plan" in note:
            note = ("The study has no recorded sampling plan, so its rated conversations were treated as a simple random "
                    "sample of the run's conversations (equal weights, unweighted).")
        sentences.append(note)
    no_ratings = {r["chatbot"] for r in rows if r.get("warning") and not r.get("n_labeled")}
    if no_ratings:
        sentences.append(f"{count(len(no_ratings), 'chatbot')} without any rated conversation {'gets' if len(no_ratings) == 1 else 'get'} "
                         "the judges-only figure alone, marked uncorrected.")
    cannot = sum(1 for r in rows for m in ("human_only", "ppi", "ppi_tuned") if (r.get(m) or {}).get("cannot_estimate"))
    if cannot:
        sentences.append(f"{count(cannot, 'estimate')} {'has' if cannot == 1 else 'have'} no interval and {'is' if cannot == 1 else 'are'} "
                         "reported as such, never drawn (the page and the CSV say why for each: e.g. too few rated or unrated "
                         "conversations, human scores that do not vary).")
    return Methods(TITLE, prose(sentences), references=refs, equals=EQUALS)
