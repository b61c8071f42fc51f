"""Rebuild a study's judge development record from its publication bundle (``reports.bundle``).

A split, its declarations of final versions and its looks at the test set are records: they
come back as they were made (numbers, seeds, members, labels, notes, times, and each look's
stored result), never made again. Who made them is not carried (a bundle names no account), so
they read "a former user" where the page names someone. A look whose result was computed on the
data the bundle holds (``current``) is the same look in the rebuilt study: evaluating that
version again on the unchanged data counts nothing, as where the bundle was made. Called
inside the bundle import's transaction: any problem rolls the whole import back.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from annotation.models import Study
from annotation.studies.services import study_event
from judging.errors import JudgingError
from judging.sources import label_source_get
from reports.devset import selectors
from reports.devset.services import NA_POLICIES
from reports.errors import ReportsError
from reports.models import (
    FinalDeclaration,
    HoldoutLook,
    HoldoutMember,
    HoldoutPart,
    HoldoutSplit,
    ReportStatus,
)
from reports.selectors import judge_runs_for_study


@dataclass(frozen=True)
class SplitRecord:
    """A split as made: its design and its members (conversation id, part, stratum) in their stored order."""

    number: int
    seed: int
    n_test: int
    n_dev: int
    method: str
    strata: list[Any]
    guidance: dict[str, Any]
    reason: str
    created_at: datetime | None
    members: list[tuple[int, str, str]] = field(default_factory=list)


@dataclass(frozen=True)
class DeclarationRecord:
    """A version declared final under a split (by number): the run, its label source key, as it was called."""

    split: int
    run: Any
    source: str
    label: str
    note: str
    declared_at: datetime | None


@dataclass(frozen=True)
class LookRecord:
    """A look at a split's test set: its number, the declaration it evaluated (index), its stored result."""

    split: int
    number: int
    declaration: int
    na_policy: str
    status: str
    error: str
    payload: dict[str, Any]
    looked_at: datetime | None
    finished_at: datetime | None
    current: bool


def _check_split(record: SplitRecord, in_study: set[int]) -> None:
    parts = [part for _, part, _ in record.members]
    if any(part not in HoldoutPart.values for part in parts):
        raise ReportsError(f"split {record.number}: a member's part must be dev or test")
    if (parts.count(HoldoutPart.TEST), parts.count(HoldoutPart.DEV)) != (record.n_test, record.n_dev):
        raise ReportsError(f"split {record.number} says {record.n_dev} development and {record.n_test} test conversations "
                           f"but lists {parts.count(HoldoutPart.DEV)} and {parts.count(HoldoutPart.TEST)}")
    if record.n_test < 1 or record.n_dev < 1:
        raise ReportsError(f"split {record.number}: a split needs at least one development and one test conversation")
    if len({cid for cid, _, _ in record.members}) != len(record.members):
        raise ReportsError(f"split {record.number} lists a conversation twice")
    if any(cid not in in_study for cid, _, _ in record.members):
        raise ReportsError(f"split {record.number} holds a conversation that is not in the study")


@transaction.atomic
def holdout_restore(*, study: Study, splits: list[SplitRecord], declarations: list[DeclarationRecord],
                    looks: list[LookRecord], actor: AbstractBaseUser | None = None) -> int:
    """Record the study's splits, declarations and looks as exported; return how many looks were restored.

    Raises ``ReportsError`` naming what does not hold together: split numbers that are not
    1, 2, ... in order, members that do not add up, a conversation not in the study, a
    declaration under an unknown split or of a run that did not judge the study, a look of
    another split's declaration, an unknown N/A policy or status.
    """
    if [s.number for s in splits] != list(range(1, len(splits) + 1)):
        raise ReportsError("the splits must be numbered 1, 2, ... in order")
    in_study = set(study.study_conversations.values_list("conversation_id", flat=True))
    rows: dict[int, HoldoutSplit] = {}
    for record in splits:
        _check_split(record, in_study)
        row = HoldoutSplit.objects.create(
            study=study, number=record.number, seed=record.seed, n_test=record.n_test, n_dev=record.n_dev, method=record.method,
            strata=record.strata, guidance=record.guidance, reason=record.reason, created_by=None,
        )
        if record.created_at is not None:
            HoldoutSplit.objects.filter(pk=row.pk).update(created_at=record.created_at)  # a record keeps its time
        HoldoutMember.objects.bulk_create(HoldoutMember(split=row, conversation_id=cid, part=part, stratum=stratum[:300])
                                          for cid, part, stratum in record.members)
        rows[record.number] = row
    runs = set(judge_runs_for_study(study).values_list("pk", flat=True))
    declared: list[FinalDeclaration] = []
    for index, record in enumerate(declarations):
        if record.split not in rows:
            raise ReportsError(f"declaration {index + 1} is made under split {record.split}, which the bundle does not hold")
        if record.run.pk not in runs:
            raise ReportsError(f"declaration {index + 1} names a judge run that labelled none of the study's conversations")
        try:
            label_source_get(record.run, record.source)
        except JudgingError as exc:
            raise ReportsError(f"declaration {index + 1}: {exc}") from exc
        row = FinalDeclaration.objects.create(study=study, split=rows[record.split], run=record.run, source=record.source,
                                              label=record.label[:300], note=record.note, declared_by=None)
        if record.declared_at is not None:
            FinalDeclaration.objects.filter(pk=row.pk).update(declared_at=record.declared_at)
        declared.append(row)
    numbers = [(record.split, record.number) for record in looks]
    if len(set(numbers)) != len(numbers):
        raise ReportsError("two looks at the same test set have the same number")
    for record in looks:
        if not 0 <= record.declaration < len(declared):
            raise ReportsError(f"look {record.number} of split {record.split} names declaration {record.declaration + 1}, "
                               f"which is not among the bundle's {len(declared)}")
        declaration = declared[record.declaration]
        if record.split not in rows or declaration.split_id != rows[record.split].pk:
            raise ReportsError(f"look {record.number} of split {record.split} evaluates a version declared under another split")
        if record.na_policy not in NA_POLICIES or record.status not in ReportStatus.values:
            raise ReportsError(f"look {record.number} of split {record.split}: unknown N/A policy '{record.na_policy}' "
                               f"or status '{record.status}'")
        split = rows[record.split]
        # A look on the data the bundle holds is that data's look here too; any other keeps a version no data has.
        version = (selectors.test_data_version(study, split, declaration, record.na_policy) if record.current
                   else f"bundle: look {record.number} of split {record.split}")
        if HoldoutLook.objects.filter(declaration=declaration, data_version=version).exists():
            raise ReportsError(f"look {record.number} of split {record.split} repeats an earlier look at the same data")
        row = HoldoutLook.objects.create(
            study=study, split=split, declaration=declaration, number=record.number, na_policy=record.na_policy,
            data_version=version, status=record.status, progress=1.0 if record.status == ReportStatus.READY else 0.0,
            error=record.error, payload=record.payload, looked_by=None, finished_at=record.finished_at,
        )
        if record.looked_at is not None:
            HoldoutLook.objects.filter(pk=row.pk).update(looked_at=record.looked_at)
    if splits:
        study_event(study=study, actor=actor, action="holdout_restored", splits=len(splits), looks=len(looks),
                    summary=f"judge development restored from a publication bundle: {len(splits)} split(s), "
                            f"{len(declarations)} declaration(s), {len(looks)} look(s) at the test set")
    return len(looks)
