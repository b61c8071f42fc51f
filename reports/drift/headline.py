"""The drift page's first lines in plain words: what changed on one item (or all), and which way.

From a drift payload (:mod:`reports.drift.services`): how many conversations changed label,
how many towards the clinicians' consensus and how many away, and the net change in agreement
and in Cohen's kappa with their paired bootstrap intervals.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Headline:
    title: str  # "On item 4", "On all items"
    sentences: tuple[str, ...]
    verdict: str  # "better", "worse", "unclear" or "" (no human reference)
    wording: str = ""  # the item's text, under the title
    versions: str = ""  # "A is run #4 · careful, B is run #6 · careful v2"


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.0f}%"


def _points(value: float | None) -> str:
    if value is None:
        return "—"
    number = 100 * value
    text = f"{abs(number):.1f} points"
    return f"+{text}" if number > 0 else f"−{text}" if number < 0 else "0.0 points"


def _title(row: dict[str, Any]) -> tuple[str, str]:
    """Return ("item 4", its text) from a drift row's title ("4. <text>"), or (the key, the title)."""
    match = re.match(r"^(\S+)\. (.*)$", str(row["title"]), re.DOTALL)
    return (f"item {match.group(1)}", match.group(2)) if match else (f"item {row['item']}", str(row["title"]))


def _signed(value: float | None, digits: int = 2) -> str:
    if value is None:
        return "—"
    text = f"{abs(value):.{digits}f}"
    return f"+{text}" if value > 0 else f"−{text}" if value < 0 else text


def _interval(ci: dict[str, Any] | None, fmt: Any) -> str:
    low, high = (ci or {}).get("low"), (ci or {}).get("high")
    if low is None or high is None:
        return "no interval (too few conversations)"
    return f"95% paired interval {fmt(low)} to {fmt(high)}"


def _plural(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def drift_headline(data: dict[str, Any] | None, item: str | None) -> Headline | None:
    """Return the plain-words summary of a drift payload for ``item`` (None or unknown: all items)."""
    if not data or data.get("empty") or not data.get("pooled"):
        return None
    row = next((r for r in data.get("items", []) if str(r["item"]) == str(item)), None) if item else None
    single = row is not None
    row = row or data["pooled"]
    where = "development " if data.get("holdout") else ""
    unit = f"{where}conversation" if single else "label"
    name, wording = _title(row) if single else ("all items", "")
    title = f"On {name}"
    d = row.get("directions") or {}
    flipped, compared = int(row["n_flipped"]), int(row["n_compared"])
    sentences = [
        f"{flipped} of {_plural(compared, unit, unit + 's')} changed {'label ' if single else ''}from A to B"
        + (f": {d.get('towards', 0)} towards the clinicians' consensus, {d.get('away', 0)} away from it"
           f", {d.get('other', 0)} neither" if data.get("n_reference") else "")
        + (f", {d['no_reference']} without a consensus label" if d.get("no_reference") else "")
        + "."
    ]
    humans = row.get("humans")
    verdict = ""
    if data.get("n_reference") and humans:
        net = int(d.get("towards", 0)) - int(d.get("away", 0))
        if net:
            noun = unit if abs(net) == 1 else unit + "s"
            sentences.append(f"Net: {abs(net)} {'more' if net > 0 else 'fewer'} {noun} "
                             f"{'agrees' if abs(net) == 1 else 'agree'} with the clinicians.")
        sentences.append(
            f"Agreement with the clinicians: A {_pct(humans.get('agreement_a'))}, B {_pct(humans.get('agreement_b'))}, "
            f"change {_points(humans.get('difference'))} ({_interval(humans.get('interval'), _points)})."
        )
        sentences.append(
            f"Cohen's κ with the clinicians: A {_signed(humans.get('kappa_a')).lstrip('+')}, "
            f"B {_signed(humans.get('kappa_b')).lstrip('+')}, change {_signed(humans.get('kappa_difference'))} "
            f"({_interval(humans.get('kappa_interval'), _signed)})."
        )
        ci = humans.get("interval") or {}
        if ci.get("low") is not None and ci["low"] > 0:
            verdict = "better"
        elif ci.get("high") is not None and ci["high"] < 0:
            verdict = "worse"
        else:
            verdict = "unclear"
        sentences.append({"better": "B agrees with the clinicians more often.",
                          "worse": "B agrees with the clinicians less often.",
                          "unclear": "The interval includes no change: the development set does not tell the versions apart."}[verdict])
    elif not data.get("n_reference"):
        sentences.append("No human consensus on these conversations: towards or away from the clinicians cannot be told.")
    versions = f"A is {data['a']['label']}, B is {data['b']['label']}." if data.get("a") and data.get("b") else ""
    return Headline(title, tuple(sentences), verdict, wording if wording != name else "", versions)
