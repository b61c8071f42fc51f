"""Every undefined coefficient says why, in words a researcher can act on."""

from __future__ import annotations

from stats import agreement_report
from stats.report import STATISTICS

NEED = "reliability needs at least 2 raters on a conversation"


def _undefined(item) -> set[str]:  # type: ignore[no-untyped-def]
    return {name for name in STATISTICS if getattr(item, name) is None}


def test_a_single_rating_says_so_for_every_coefficient() -> None:
    item = agreement_report([("c1", "h1", "q1", "yes")], bootstrap=20, seed=1).items["q1"]
    assert _undefined(item) == set(STATISTICS)
    assert set(item.undefined_reasons) == set(STATISTICS)
    assert item.undefined_reasons["fleiss_kappa"] == f"1 rating so far: {NEED}"
    assert f"1 rating so far: {NEED}" in item.notes


def test_one_rating_per_conversation_from_several_raters_says_none_is_doubly_rated() -> None:
    rows = [(f"c{i}", f"h{i % 3}", "q1", "yes" if i % 2 else "no") for i in range(6)]
    report = agreement_report(rows)
    for item in (report.items["q1"], report.pooled):
        assert _undefined(item) == set(STATISTICS)
        reason = item.undefined_reasons["krippendorff_alpha"]
        assert reason.startswith("6 ratings from 3 raters so far") and reason.endswith(NEED)
        assert reason in item.notes
        assert set(item.undefined_reasons.values()) == {reason}


def test_a_single_rater_is_named_in_the_reason() -> None:
    rows = [(f"c{i}", "dr-a", "q1", "yes") for i in range(4)]
    reason = agreement_report(rows).items["q1"].undefined_reasons["gwet_ac1"]
    assert reason.startswith("only one rater ('dr-a') so far, 4 ratings") and NEED in reason


def test_a_coefficient_undefined_for_its_own_reason_gives_that_reason() -> None:
    rows = [(f"c{i}", r, "q1", "yes") for i in range(4) for r in ("a", "b")]
    item = agreement_report(rows).items["q1"]
    assert item.percent_agreement == 1.0 and "percent_agreement" not in item.undefined_reasons
    assert "Pe = 1" in item.undefined_reasons["fleiss_kappa"]
    assert "D_e = 0" in item.undefined_reasons["krippendorff_alpha"]
    assert "at least two categories" in item.undefined_reasons["gwet_ac1"]


def test_defined_coefficients_have_no_reason_and_the_json_carries_the_reasons() -> None:
    rows = [("c1", "a", "q1", "yes"), ("c1", "b", "q1", "no"), ("c2", "a", "q1", "no")]
    rows += [("c2", "b", "q1", "no")]
    data = agreement_report(rows).as_dict()
    assert data["items"]["q1"]["undefined_reasons"] == {}
    empty = agreement_report([("c1", "a", "q1", None)]).as_dict()
    assert empty["items"]["q1"]["undefined_reasons"]["fleiss_kappa"] == (
        "no ratings: every label is missing"
    )
