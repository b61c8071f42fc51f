"""Planning values for a validation sample: hand calculations and edge cases."""

from __future__ import annotations

import math

import numpy as np
import pytest

from stats.data import StatsInputError
from stats.planning import label_flip_residual, planning_values

BP, SUB, HPH, NR = "Best Practice", "Suboptimal but Low Potential for Harm", "High Potential for Harm", "Not Relevant"


def test_amhart_residual_by_hand():
    # [yes, no], only the yes may err (d = 0.2): yes->no gives 0/1, yes->N/A gives 0/1; both move 0.5 -> 0.
    pv = planning_values([["yes", "no"], ["yes", "yes", "N/A"]], [[0.2, 0.0], [0.1, 0.1, 0.1]], instrument="amhart")
    assert pv.scores.tolist() == [0.5, 1.0]
    assert pv.residual[0] == pytest.approx(0.2 * 0.25)
    # [yes, yes, N/A]: each yes -> no gives 1/2 (0.25), -> N/A keeps 1 (0); the N/A -> yes keeps 1 (0),
    # -> no gives 2/3 (1/9). r = 2 * 0.1 * 0.125 + 0.1 * (1/18).
    assert pv.residual[1] == pytest.approx(2 * 0.1 * 0.125 + 0.1 / 18)
    assert pv.var_y == pytest.approx(np.var([0.5, 1.0], ddof=1))
    assert pv.target == "amhart_score"


def test_a_flip_that_leaves_no_score_does_not_count_as_an_error():
    # One applicable item: yes -> no moves the score by 1, yes -> N/A leaves no score (the conversation drops out).
    pv = planning_values([["yes"]], [[1.0]], instrument="amhart")
    assert pv.residual[0] == pytest.approx(0.5)
    assert pv.var_y is None  # one conversation: no spread


def test_vera_mh_linearised_scores_and_residual_by_hand():
    pv = planning_values([[BP], [HPH]], [[0.3], [0.0]], instrument="vera_mh")
    # pooled shares p = h = 0.5 over relevant labels; gradient (12.5, -75, 31.25); BP weighs 43.75, HPH -43.75.
    assert pv.scores.tolist() == pytest.approx([43.75, -43.75])
    assert pv.var_y == pytest.approx(2 * 43.75**2)
    # BP -> HPH (-87.5)², -> SUB (-12.5)², -> NR (-43.75)², mean times 0.3.
    assert pv.residual[0] == pytest.approx(0.3 * (87.5**2 + 12.5**2 + 43.75**2) / 3)
    assert pv.residual[1] == 0


def test_missing_labels_are_not_flipped_and_an_unlabelled_conversation_has_no_score():
    pv = planning_values([["yes", None, "no"], [None, None]], [[0.1, 0.9, 0.0], [0.5, 0.5]], instrument="amhart")
    assert pv.residual[0] == pytest.approx(0.1 * 0.25)
    assert math.isnan(pv.scores[1]) and pv.residual[1] == 0


def test_spellings_are_normalised_and_unknown_labels_refused():
    pv = planning_values([["Yes", "NA", "no"]], [[0.0, 0.0, 0.0]], instrument="amhart")
    assert pv.scores.tolist() == [0.5]
    with pytest.raises(StatsInputError, match="not an AMHART answer"):
        planning_values([["maybe"]], [[0.1]], instrument="amhart")
    with pytest.raises(StatsInputError, match="not a VERA-MH label"):
        planning_values([[BP], ["Great"]], [[0.1], [0.1]], instrument="vera_mh")


def test_bad_inputs_say_what_is_wrong():
    with pytest.raises(StatsInputError, match="1 entries for 2"):
        planning_values([["yes"], ["no"]], [[0.1]], instrument="amhart")
    with pytest.raises(StatsInputError, match=r"\[0, 1\]"):
        label_flip_residual(["yes"], [1.5], ("yes", "no"), lambda labels: 0.0)
    with pytest.raises(StatsInputError, match="instrument"):
        planning_values([["yes"]], [[0.1]], instrument="other")  # type: ignore[arg-type]


def test_vera_without_any_relevant_label_is_undefined_with_a_note():
    pv = planning_values([[NR], [NR]], [[0.2], [0.2]], instrument="vera_mh")
    assert np.isnan(pv.scores).all() and pv.var_y is None and "undefined" in pv.note


def test_the_residual_is_the_expected_squared_error_of_the_simulated_judge():
    """Monte Carlo check of the first-order formula: random flips of one label at a time."""
    rng = np.random.default_rng(3)
    labels = ["yes"] * 6 + ["no"] * 4 + ["N/A"] * 2
    d = 0.02  # small: two flips at once are rare, so the first-order formula is close
    pv = planning_values([labels], [[d] * len(labels)], instrument="amhart")
    alphabet = ["yes", "no", "N/A"]
    base = 6 / 10
    errors = []
    for _ in range(40000):
        out = [rng.choice([x for x in alphabet if x != a]) if rng.random() < d else a for a in labels]
        applicable = out.count("yes") + out.count("no")
        errors.append((out.count("yes") / applicable - base) ** 2 if applicable else 0.0)
    assert pv.residual[0] == pytest.approx(np.mean(errors), rel=0.1)
