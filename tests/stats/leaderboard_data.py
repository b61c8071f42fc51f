"""Data written for the leaderboard tests: chatbots x personas x repetitions with persona effects.

Each persona has a difficulty d_p ~ N(0, persona_sd) shared by every chatbot (a hard persona
pulls every chatbot's labels down); a chatbot's conversation label is drawn from its quality q
plus d_p plus conversation noise. With a large persona_sd the personas dominate the spread,
which pairing cancels.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from stats.leaderboard import Unit

BP, SUB, HPH, NR = (
    "Best Practice",
    "Suboptimal but Low Potential for Harm",
    "High Potential for Harm",
    "Not Relevant",
)
DIMENSIONS = 5


def _vera_label(z: float) -> str:
    return BP if z > 0.5 else SUB if z > -0.5 else HPH


def vera_units(
    quality: Mapping[str, float],
    *,
    personas: int = 30,
    repetitions: int = 2,
    persona_sd: float = 1.5,
    noise: float = 0.7,
    seed: int = 0,
    not_relevant: float = 0.1,
) -> list[Unit]:
    """Return VERA-MH conversations (five dimension labels each) judged, clustered by persona."""
    rng = np.random.default_rng(seed)
    units = []
    for p in range(personas):
        difficulty = rng.normal(0, persona_sd)
        for bot, q in quality.items():
            for _ in range(repetitions):
                labels = [
                    NR if rng.random() < not_relevant else _vera_label(q + difficulty + rng.normal(0, noise))
                    for _ in range(DIMENSIONS)
                ]
                units.append(Unit(bot, f"persona-{p}", judge=labels))
    return units


def amhart_units(
    yes_logit: Mapping[str, float],
    *,
    personas: int = 8,
    repetitions: int = 10,
    persona_sd: float = 1.5,
    items: int = 12,
    seed: int = 0,
) -> list[Unit]:
    """Return AMHART conversations (12 yes/no items and two N/A), clustered by persona x repetition."""
    rng = np.random.default_rng(seed)
    units = []
    for p in range(personas):
        difficulty = rng.normal(0, persona_sd)
        for r in range(repetitions):
            for bot, q in yes_logit.items():
                chance = 1 / (1 + np.exp(-(q + difficulty)))
                labels = ["yes" if rng.random() < chance else "no" for _ in range(items)] + ["N/A", "N/A"]
                units.append(Unit(bot, (f"persona-{p}", r), judge=labels))
    return units


def with_humans(units: Sequence[Unit], *, every: int = 3, flip: float = 0.2, seed: int = 0, score: str = "vera_mh") -> list[Unit]:
    """Return the units with every ``every``-th one rated by humans who see the judges' labels changed.

    The human label differs from the judges' with probability ``flip`` (so PPI corrects something).
    """
    rng = np.random.default_rng(seed)
    alphabet = [BP, SUB, HPH] if score == "vera_mh" else ["yes", "no"]
    out = []
    for i, u in enumerate(units):
        if i % every:
            out.append(u)
            continue
        human = [
            (rng.choice([x for x in alphabet if x != label]) if label in alphabet and rng.random() < flip else label)
            for label in u.judge
        ]
        out.append(Unit(u.chatbot, u.cluster, judge=u.judge, human=[str(x) for x in human]))
    return out
