"""The methods paragraph of the benchmark leaderboard: each chatbot's score, every pair compared."""

from __future__ import annotations

from typing import Any

from reports.methods.base import Methods, count, listing, number, share, writes
from reports.methods.references import cite

TITLE = "Benchmark leaderboard (paired comparisons of the chatbots)"


def _method_sentence(info: dict[str, Any]) -> str:
    interval = info.get("interval") or {}
    summary = interval.get("summary") or interval.get("name") or interval.get("kind") or "no interval"
    return f"{info.get('label')}: {str(info.get('name', '')).rstrip('.')} ({summary})"


def _decisions(payload: dict[str, Any]) -> tuple[int, int, int]:
    """Return (pairs decided higher, shown no difference, not decided) in the headline table."""
    headline = payload.get("headline")
    for table in payload.get("tables") or []:
        if table.get("stratum") == "all" and table.get("method") == headline:
            pairs = table.get("pairs") or []
            return (sum(p.get("decision") == "higher" for p in pairs),
                    sum(p.get("decision") == "no_difference" for p in pairs),
                    sum(p.get("decision") == "cannot_decide" for p in pairs))
    return 0, 0, 0


def _leaderboard(payload: dict[str, Any], params: dict[str, Any]) -> Methods:
    """Write how every chatbot's score was estimated and how the pairs were compared and decided."""
    chatbots = payload.get("chatbots") or []
    if payload.get("empty") or not chatbots:
        reason = str(payload.get("empty") or "no chatbot has a score yet").rstrip(".")
        return Methods(TITLE, f"No leaderboard was computed: {reason}.")
    par = payload.get("parameters") or {}
    pairwise = par.get("pairwise") or {}
    clusters = par.get("clusters") or {}
    infos = payload.get("method_info") or {}
    score = (payload.get("score") or {}).get("label", "score")
    source = ("the human consensus of the study" + (f" and judge run #{payload['run']}" if payload.get("run") else "")
              if payload.get("context") == "study" else f"judge run #{payload.get('run')}")
    sentences = [
        f"The {count(len(chatbots), 'chatbot')} were compared on the {score}, from {source}, by "
        f"{listing(str(infos[m].get('label', m)) for m in payload.get('method_keys') or [] if m in infos)}.",
        "Each chatbot's score and interval: " + "; ".join(_method_sentence(i) for i in infos.values()) + ".",
        f"Every pair of chatbots was compared by the difference of their scores with a "
        f"{str((pairwise.get('paired') or {}).get('name', 'paired cluster bootstrap')).lower()}, clusters being "
        f"{clusters.get('definition', 'personas')}, so that what a {clusters.get('singular', 'persona')} does to every "
        f"chatbot cancels ({cite('davison1997', 'field2007')}); a pair sharing no "
        f"{clusters.get('singular', 'cluster')} was compared by an "
        f"{str((pairwise.get('unpaired') or {}).get('name', 'unpaired cluster bootstrap')).lower()}, and says so.",
    ]
    refs: list[str] = ["davison1997", "field2007"]
    if any(m in (payload.get("method_keys") or []) for m in ("ppi", "ppi_tuned")):
        sentences.append(f"For PPI the score was re-estimated in every resample ({cite('zrnic2024bootstrap')}); for "
                         f"PPI++ {pairwise.get('ppi_tuned', 'each chatbot keeps its lambda')}.")
        refs.append("zrnic2024bootstrap")
    sentences.append(
        f"{number(par.get('n_resamples', 0))} resamples (seed {par.get('seed')}); {share(par.get('confidence', 0.95))} "
        f"intervals of the difference ± t_(G−1) · √(G/(G−1)) · SE*, SE* the standard deviation of the resampled "
        f"differences and G the number of {clusters.get('plural', 'clusters')} drawn, a small-sample correction of the "
        f"bootstrap, which is otherwise too narrow with few clusters ({cite('hesterberg2015', 'cameron2015')}; "
        f"unpaired: the two chatbots' variances added, with Welch's degrees of freedom, {cite('welch1947')}). "
        f"Each pair's two-sided t p-value, the test that inverts that interval ({cite('davison1997')}), was adjusted "
        f"by Holm's step-down procedure ({cite('holm1979')}) at "
        f"α = {par.get('alpha')}, one family per method and set of conversations (all, or one persona risk level), "
        f"deciding \u201cA scores higher than B\u201d or \u201cno difference shown\u201d; "
        f"{str(par.get('minimums', '')).rstrip('.')}."
    )
    refs += ["hesterberg2015", "cameron2015", "welch1947", "holm1979"]
    higher, none, undecided = _decisions(payload)
    total = higher + none + undecided
    if total:
        sentences.append(
            f"Over all conversations, by the headline method ({infos.get(payload.get('headline'), {}).get('label', '')}), "
            f"{number(higher)} of {count(total, 'pair')} showed a difference, {number(none)} showed none"
            + (f" and {number(undecided)} could not be decided yet" if undecided else "") + "."
        )
    strata = [s for s in payload.get("strata") or [] if s.get("key") != "all"]
    if strata:
        sentences.append(f"The same comparisons were repeated within each of {count(len(strata), 'persona risk level')}, "
                         "as VERA-MH reports.")
    return Methods(TITLE, " ".join(sentences), references=tuple(refs))


@writes("leaderboard")
def study_leaderboard(payload: dict[str, Any], params: dict[str, Any]) -> Methods:
    """Write a study's leaderboard paragraph."""
    return _leaderboard(payload, params)


@writes("leaderboard_run")
def run_leaderboard(payload: dict[str, Any], params: dict[str, Any]) -> Methods:
    """Write a judge run's leaderboard paragraph."""
    return _leaderboard(payload, params)
