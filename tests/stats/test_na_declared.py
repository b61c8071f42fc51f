"""The instrument declares which labels mean "not applicable" (VERA-MH: Not Relevant)."""

from __future__ import annotations

import pytest

from stats import agreement_report

BP, SUB, HPH, NR = (
    "Best Practice",
    "Suboptimal but Low Potential for Harm",
    "High Potential for Harm",
    "Not Relevant",
)

# Three clinicians label two VERA-MH dimensions of six conversations.
LABELS = {
    "Detects Potential Risk": [
        (BP, BP, BP), (BP, SUB, BP), (NR, NR, BP), (HPH, HPH, SUB), (NR, BP, NR), (SUB, SUB, SUB),
    ],
    "Confirms Risk": [
        (NR, NR, NR), (BP, BP, NR), (SUB, BP, SUB), (NR, HPH, HPH), (BP, BP, BP), (NR, NR, SUB),
    ],
}  # fmt: skip
ROWS = [
    (f"c{c}", f"h{r}", dim, label)
    for dim, conversations in LABELS.items()
    for c, labels in enumerate(conversations)
    for r, label in enumerate(labels)
]
COEFFICIENTS = ("percent_agreement", "fleiss_kappa", "krippendorff_alpha", "gwet_ac1")


def _values(report) -> tuple:  # type: ignore[no-untyped-def]
    return tuple(getattr(report.pooled, name) for name in COEFFICIENTS)


def test_not_relevant_is_an_ordinary_category_unless_declared() -> None:
    category = agreement_report(ROWS, na="category")
    exclude = agreement_report(ROWS, na="exclude")
    assert _values(category) == _values(exclude)
    assert exclude.pooled.n_na_excluded == 0


def test_declared_not_relevant_is_excluded_and_changes_the_numbers() -> None:
    category = agreement_report(ROWS, na="category", na_labels=[NR])
    exclude = agreement_report(ROWS, na="exclude", na_labels=[NR])
    n_not_relevant = sum(label == NR for *_, label in ROWS)
    assert exclude.pooled.n_na_excluded == n_not_relevant == 11
    assert exclude.pooled.n_ratings == len(ROWS) - n_not_relevant
    assert NR not in exclude.pooled.categories and "N/A" not in exclude.pooled.categories
    assert category.pooled.label_counts["N/A"] == n_not_relevant
    for before, after in zip(_values(category), _values(exclude), strict=True):
        assert after != pytest.approx(before)


def test_na_labels_can_be_declared_per_item() -> None:
    report = agreement_report(ROWS, na="exclude", na_labels={"Confirms Risk": [NR]})
    assert report.items["Confirms Risk"].n_na_excluded == 7
    assert report.items["Detects Potential Risk"].n_na_excluded == 0
    assert NR in report.items["Detects Potential Risk"].categories
    assert report.as_dict()["na_labels"]["Confirms Risk"] == [NR]
    # Items absent from the mapping keep the default N/A spellings.
    assert "n/a" in report.as_dict()["na_labels"]["Detects Potential Risk"]


def test_a_declared_na_label_in_the_order_follows_the_policy() -> None:
    order = [BP, SUB, HPH, NR]
    excluded = agreement_report(ROWS, na="exclude", na_labels=[NR], order=order)
    assert excluded.order == (BP, SUB, HPH)
    kept = agreement_report(ROWS, na="category", na_labels=[NR], order=order, level="ordinal")
    assert kept.order == (BP, SUB, HPH, "N/A")
