"""Which of a study's conversations a drill-down may list: the test-set lock.

Once a study is split into a development and a test set (``reports.devset``), the test set's
labels are seen only through a recorded look at a version declared final. Before the first
look at the current split's test set, its conversations are *locked*: no list holds them and
their review page is refused, and every list says how many it left out. After a look, they
may be listed (``set=test``), as the look's own page already shows their figures.
"""

from __future__ import annotations

from dataclasses import dataclass

from annotation.models import Study
from reports.devset.selectors import split_conversation_ids, split_current
from reports.models import HoldoutLook, HoldoutMember, HoldoutPart, HoldoutSplit, ReportStatus


@dataclass(frozen=True)
class Scope:
    """The conversations a list reads (None: the whole study) and the locked ones it leaves out."""

    conversation_ids: frozenset[int] | None
    locked_ids: frozenset[int]
    split: int | None  # the split's number
    note: str

    def allows(self, conversation_id: int) -> bool:
        if conversation_id in self.locked_ids:
            return False
        return self.conversation_ids is None or conversation_id in self.conversation_ids


def test_set_looked_at(study: Study) -> bool:
    """Tell whether the current split's test set has been looked at (a finished look exists)."""
    split = split_current(study)
    return split is not None and HoldoutLook.objects.filter(split=split, status=ReportStatus.READY).exists()


def review_scope(study: Study, part: str) -> Scope:
    """Return what a list of ``part`` ("", "dev" or "test") may hold in this study.

    Without a split every conversation may be listed. With one: "dev" the development set;
    "test" the test set once looked at (else nothing, locked); "" every conversation but the
    locked test set (all of them once it was looked at).
    """
    split = split_current(study)
    if split is None:
        if part:
            return Scope(frozenset(), frozenset(), None,
                         "This study is not split into a development and a test set: there is no such set to list.")
        return Scope(None, frozenset(), None, "")
    dev = split_conversation_ids(split, HoldoutPart.DEV)
    test = split_conversation_ids(split, HoldoutPart.TEST)
    looked = HoldoutLook.objects.filter(split=split, status=ReportStatus.READY).exists()
    if part == "dev":
        return Scope(dev, frozenset(), split.number, f"Development set of split {split.number} ({len(dev)} conversations).")
    if looked:
        if part == "test":
            return Scope(test, frozenset(), split.number, f"Test set of split {split.number}: it was looked at.")
        return Scope(None, frozenset(), split.number, f"Split {split.number}: its test set was looked at, so it is listed too.")
    if part == "test":
        return Scope(frozenset(), test, split.number,
                     f"The test set of split {split.number} is locked until a version declared final is evaluated on it: "
                     "its conversations are not listed.")
    return Scope(None, test, split.number,
                 f"The {len(test)} conversations of the locked test set (split {split.number}) are not listed until a "
                 "version declared final is evaluated on it.")


def locked_test_sets(study_id: int | None) -> frozenset[int]:
    """Return the conversations of every current test set not looked at yet (of one study, or all).

    Registered with ``core.locks`` so the lower layers' exports withhold them too.
    """
    splits = HoldoutSplit.objects.all() if study_id is None else HoldoutSplit.objects.filter(study_id=study_id)
    current: dict[int, tuple[int, int]] = {}
    for pk, study, number in splits.values_list("pk", "study_id", "number"):
        if study not in current or number > current[study][1]:
            current[study] = (pk, number)
    split_ids = [pk for pk, _ in current.values()]
    looked = set(HoldoutLook.objects.filter(split_id__in=split_ids, status=ReportStatus.READY).values_list("split_id", flat=True))
    locked = [pk for pk in split_ids if pk not in looked]
    if not locked:
        return frozenset()
    return frozenset(HoldoutMember.objects.filter(split_id__in=locked, part=HoldoutPart.TEST).values_list("conversation_id", flat=True))
