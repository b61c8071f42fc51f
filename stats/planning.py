"""Planning values for a validation sample, from a judge run's labels before any human rates.

:func:`stats.sampling.expected_plan_width` needs two planning values: var(Y), the spread of
the score over conversations, and r_i, the expected squared judge error (Y_i - Ŷ_i)² of each
conversation. Before the clinicians rate, neither is known; this module derives both from the
judge labels of the run and an assumed judge-clinician disagreement rate per label:

* var(Y) is the variance of the judge's own conversation scores (a stand-in for the humans').
* r_i assumes each of conversation i's labels disagrees with the clinicians independently
  with probability d_ij (e.g. larger where the judges split), the clinicians' label then being
  any other label with equal chance:

      r_i = Σ_j d_ij · mean_{b ≠ a_ij} (s(labels with j -> b) - s(labels))²

  a first-order approximation (one wrong label at a time, no systematic bias) of E[(Y_i - Ŷ_i)²].
  Errors that go together within a conversation make the real residual larger, so the planned
  width is then optimistic; the realised interval after rating is always computed from the
  data, never from these values.

Scores s: the AMHART conversation score yes/(yes+no) (N/A leaves the denominator; undefined
when nothing is applicable), or, for the VERA-MH score (a nonlinear function of label shares),
its linearisation z_i = ∇g(μ̂) · (BP_i, HPH_i, relevant_i) at the judge's pooled shares, the
same linearised score the PPI variance uses (:mod:`stats.ppi.engine`), so widths come out in
score points. Pure: plain sequences in, a frozen dataclass out.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from .data import StatsInputError, is_missing, is_na_label
from .ppi.scores import _vera_gradient, vera_mh_counts
from .scores import BEST_PRACTICE, HIGH_HARM, NOT_RELEVANT, SUBOPTIMAL, VERA_MH_LABELS

__all__ = ["AMHART_LABELS", "PlanningValues", "label_flip_residual", "planning_values"]

AMHART_LABELS: tuple[str, ...] = ("yes", "no", "N/A")
Instrument = Literal["amhart", "vera_mh"]


@dataclass(frozen=True)
class PlanningValues:
    """Per-conversation planning values: the judge's score and the expected squared error.

    ``scores`` is NaN where a conversation has no score (nothing applicable, no label);
    ``var_y`` is their sample variance (None with fewer than two scores); ``residual`` the r_i
    above, aligned with the input conversations.
    """

    target: str
    scores: np.ndarray
    residual: np.ndarray
    var_y: float | None
    note: str


def label_flip_residual(
    labels: Sequence[Any],
    disagreement: Sequence[float],
    alphabet: Sequence[str],
    score: Callable[[list[Any]], float],
) -> float:
    """Return Σ_j d_j · mean over other labels b of (score after label j -> b − score)².

    ``score`` must depend on the labels only through how often each occurs (both instruments'
    scores do), so one flip per distinct label stands for all its copies. Missing labels (None)
    are not flipped. A flip that leaves the score undefined (NaN) contributes nothing: that
    conversation would drop out of the estimate rather than err. Raises StatsInputError for
    mismatched lengths or probabilities outside [0, 1].
    """
    labels = list(labels)
    if len(disagreement) != len(labels):
        raise StatsInputError(f"disagreement has {len(disagreement)} entries for {len(labels)} labels")
    if disagreement and not 0 <= min(disagreement) <= max(disagreement) <= 1:
        raise StatsInputError(f"disagreement probabilities must lie in [0, 1], not {list(disagreement)!r}")
    base = score(labels)
    if math.isnan(base):
        return 0.0
    canon = {a: a for a in alphabet}
    weight: dict[Any, float] = {}
    first: dict[Any, int] = {}
    for j, label in enumerate(labels):
        if _missing(label):
            continue
        current = canon.get(label)
        if current is None:
            current = canon[label] = next((a for a in alphabet if a.casefold() == str(label).strip().casefold()), label)
        weight[current] = weight.get(current, 0.0) + float(disagreement[j])
        first.setdefault(current, j)
    total = 0.0
    for current, d in weight.items():
        others = [b for b in alphabet if b != current]
        if not others or d == 0:
            continue
        j = first[current]
        change = 0.0
        for other in others:
            value = score(labels[:j] + [other] + labels[j + 1 :])
            change += 0.0 if math.isnan(value) else (value - base) ** 2
        total += d * change / len(others)
    return total


def _missing(label: Any) -> bool:
    # Labels from the database are None or text; is_missing also knows pandas' and numpy's.
    return label is None or label == "" or (isinstance(label, float) and math.isnan(label)) or (
        not isinstance(label, str) and is_missing(label)
    )


def _canonical_amhart(labels: Sequence[Any], index: int) -> list[str | None]:
    out: list[str | None] = []
    for label in labels:
        known = _AMHART_SPELLINGS.get(label) if isinstance(label, str) else None
        if known is not None:
            out.append(known)
        elif _missing(label):
            out.append(None)
        elif str(label).strip().casefold() in ("yes", "no"):
            out.append(str(label).strip().casefold())
        elif is_na_label(str(label)):
            out.append("N/A")
        else:
            raise StatsInputError(f"conversations[{index}]: not an AMHART answer: {label!r}")
    return out


_AMHART_SPELLINGS = {"yes": "yes", "no": "no", "N/A": "N/A", "Yes": "yes", "No": "no"}


def _amhart_score(labels: list[Any]) -> float:
    yes = labels.count("yes")
    applicable = yes + labels.count("no")
    return yes / applicable if applicable else float("nan")


def planning_values(
    conversations: Sequence[Sequence[Any]],
    disagreement: Sequence[Sequence[float]],
    *,
    instrument: Instrument,
) -> PlanningValues:
    """Return the judge scores, var(Y) and r_i of each conversation (module docstring).

    ``conversations`` holds each conversation's judge labels (AMHART items: yes/no/N/A; VERA-MH:
    its dimension labels; None for missing), ``disagreement`` the assumed probability that each
    of those labels disagrees with the clinicians, aligned. ``instrument`` "amhart" plans the
    AMHART score; "vera_mh" the overall VERA-MH score, linearised at the pooled judge shares.
    """
    if len(disagreement) != len(conversations):
        raise StatsInputError(
            f"disagreement has {len(disagreement)} entries for {len(conversations)} conversations"
        )
    if instrument == "amhart":
        canonical = [_canonical_amhart(c, i) for i, c in enumerate(conversations)]
        scores = np.array([_amhart_score(c) for c in canonical], dtype=float)
        residual = np.array(
            [
                label_flip_residual(c, list(d), AMHART_LABELS, _amhart_score)
                for c, d in zip(canonical, disagreement, strict=True)
            ]
        )
        target, note = "amhart_score", "AMHART score: yes / (yes + no) per conversation"
    elif instrument == "vera_mh":
        counts = vera_mh_counts([list(c) for c in conversations], "conversations")
        defined = ~np.isnan(counts).any(axis=1)
        mu = counts[defined].mean(axis=0) if defined.any() else np.full(3, np.nan)
        gradient = _vera_gradient(mu) if defined.any() else np.full(3, np.nan)
        if np.isnan(gradient).any():
            scores = np.full(len(conversations), np.nan)
            residual = np.zeros(len(conversations))
            note = "VERA-MH score undefined: no relevant label in the judge's labels"
        else:
            scores = np.where(defined, np.nan_to_num(counts) @ gradient, np.nan)
            weight = {
                BEST_PRACTICE: gradient[0] + gradient[2],
                HIGH_HARM: gradient[1] + gradient[2],
                SUBOPTIMAL: gradient[2],
                NOT_RELEVANT: 0.0,
            }
            folded = {k.casefold(): k for k in weight}

            def canonical(labels: Sequence[Any], index: int) -> list[str | None]:
                out: list[str | None] = []
                for x in labels:
                    if x in weight or _missing(x):
                        out.append(None if _missing(x) else x)
                        continue
                    name = folded.get(str(x).strip().casefold())
                    if name is None:
                        raise StatsInputError(f"conversations[{index}]: not a VERA-MH label: {x!r}")
                    out.append(name)
                return out

            def linear(labels: list[Any]) -> float:
                present = [weight[x] for x in labels if x is not None]
                return float(sum(present)) if present else float("nan")

            residual = np.array(
                [
                    label_flip_residual(canonical(c, i), list(d), VERA_MH_LABELS, linear)
                    for i, (c, d) in enumerate(zip(conversations, disagreement, strict=True))
                ]
            )
            note = "VERA-MH overall score, linearised at the judge's pooled label shares"
        target = "vera_mh_score"
    else:
        raise StatsInputError(f"instrument must be 'amhart' or 'vera_mh', not {instrument!r}")
    present = scores[~np.isnan(scores)]
    var_y = float(np.var(present, ddof=1)) if present.size >= 2 else None
    return PlanningValues(target, scores, residual, var_y, note)
