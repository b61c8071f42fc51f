"""Failure modes: open coding (a short code on a disagreement) and axial coding (codes in categories).

Services write (``failure_code_add``, ``failure_code_remove``, ``failure_category_create``,
``failure_codes_categorise``, ``failure_category_rename``, ``failure_category_merge``), each
recorded in the study's audit trail; selectors read the codebook and the counts per category
and judge, item or chatbot that the failure-modes page shows and drills down from.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, transaction
from django.db.models import Count

from annotation.models import Study
from annotation.studies.services import study_event
from corpus.models import Conversation
from judging.models import JudgeRun
from reports.errors import ReportsError as ReportError
from reports.models import FailureCategory, FailureCode

MAX_CODE = 200
MAX_CATEGORY = 120
UNCATEGORISED = "(not yet in a category)"


def _text(raw: str, limit: int, what: str) -> str:
    text = " ".join((raw or "").split())
    if not text:
        raise ReportError(f"write the {what}: it cannot be empty")
    if len(text) > limit:
        raise ReportError(f"the {what} is {len(text)} characters long; at most {limit}")
    return text


@transaction.atomic
def failure_code_add(
    *, study: Study, conversation: Conversation, item_key: str, text: str, judge: str = "", run: JudgeRun | None = None,
    category: FailureCategory | None = None, actor: AbstractBaseUser | None,
) -> FailureCode:
    """Attach a code to one item of one conversation (about one judge's label, or the raters'); idempotent."""
    text = _text(text, MAX_CODE, "code")
    if not study.study_conversations.filter(conversation=conversation).exists():
        raise ReportError("this conversation is not in the study")
    if category is not None and category.study_id != study.pk:
        raise ReportError("that category belongs to another study")
    existing = FailureCode.objects.filter(study=study, conversation=conversation, item_key=item_key, judge=judge, text=text).first()
    if existing is not None:
        return existing
    # A text already filed under a category joins it: the codebook stays one entry per code.
    if category is None:
        category = FailureCategory.objects.filter(study=study, codes__text=text).first()
    try:
        with transaction.atomic():
            code = FailureCode.objects.create(study=study, conversation=conversation, item_key=item_key, text=text,
                                              judge=judge, run=run, category=category, created_by=actor)
    except IntegrityError:  # the same code saved twice at once
        return FailureCode.objects.get(study=study, conversation=conversation, item_key=item_key, judge=judge, text=text)
    study_event(study=study, actor=actor, action="failure_code_added", conversation=conversation.code, item=item_key,
                judge=judge, code=text)
    return code


@transaction.atomic
def failure_code_remove(*, study: Study, code_id: int, actor: AbstractBaseUser | None) -> None:
    code = FailureCode.objects.filter(study=study, pk=code_id).select_related("conversation").first()
    if code is None:
        raise ReportError("no such code in this study")
    study_event(study=study, actor=actor, action="failure_code_removed", conversation=code.conversation.code,
                item=code.item_key, judge=code.judge, code=code.text)
    code.delete()


@transaction.atomic
def failure_category_create(*, study: Study, name: str, description: str = "", actor: AbstractBaseUser | None) -> FailureCategory:
    name = _text(name, MAX_CATEGORY, "category name")
    if FailureCategory.objects.filter(study=study, name__iexact=name).exists():
        raise ReportError(f"the study already has a category named {name!r}")
    category = FailureCategory.objects.create(study=study, name=name, description=(description or "").strip()[:2000],
                                              created_by=actor)
    study_event(study=study, actor=actor, action="failure_category_created", category=name)
    return category


@transaction.atomic
def failure_codes_categorise(*, study: Study, texts: list[str], category: FailureCategory | None,
                             actor: AbstractBaseUser | None) -> int:
    """Put every code with one of these texts in a category (None: out of any); return how many codes moved."""
    if category is not None and category.study_id != study.pk:
        raise ReportError("that category belongs to another study")
    if not texts:
        raise ReportError("choose at least one code")
    n = FailureCode.objects.filter(study=study, text__in=texts).update(category=category)
    study_event(study=study, actor=actor, action="failure_codes_categorised", codes=sorted(texts),
                category=category.name if category else "")
    return n


@transaction.atomic
def failure_category_rename(*, study: Study, category: FailureCategory, name: str, actor: AbstractBaseUser | None) -> FailureCategory:
    name = _text(name, MAX_CATEGORY, "category name")
    if category.study_id != study.pk:
        raise ReportError("that category belongs to another study")
    if FailureCategory.objects.filter(study=study, name__iexact=name).exclude(pk=category.pk).exists():
        raise ReportError(f"the study already has a category named {name!r}: merge into it instead")
    before = category.name
    category.name = name
    category.save(update_fields=["name"])
    study_event(study=study, actor=actor, action="failure_category_renamed", before=before, after=name)
    return category


@transaction.atomic
def failure_category_merge(*, study: Study, source: FailureCategory, target: FailureCategory,
                           actor: AbstractBaseUser | None) -> FailureCategory:
    """Move every code of ``source`` into ``target`` and delete ``source``."""
    if source.study_id != study.pk or target.study_id != study.pk:
        raise ReportError("both categories must belong to this study")
    if source.pk == target.pk:
        raise ReportError("choose two different categories to merge")
    FailureCode.objects.filter(category=source).update(category=target)
    study_event(study=study, actor=actor, action="failure_categories_merged", merged=source.name, into=target.name)
    source.delete()
    return target


# -- reads ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CodebookEntry:
    text: str
    n: int
    category: FailureCategory | None


def codebook(study: Study) -> list[CodebookEntry]:
    """Return each distinct code with how often it was used and its category."""
    categories = {c.pk: c for c in FailureCategory.objects.filter(study=study)}
    rows = (
        FailureCode.objects.filter(study=study).values("text", "category_id").annotate(n=Count("id")).order_by("-n", "text")
    )
    return [CodebookEntry(r["text"], r["n"], categories.get(r["category_id"])) for r in rows]


def categories_of(study: Study) -> list[FailureCategory]:
    return list(FailureCategory.objects.filter(study=study).annotate(n=Count("codes")).order_by("name"))


def category_counts(study: Study, by: str) -> dict[str, Any]:
    """Return coded instances per category and ``by`` ("judge", "item" or "chatbot"), for the table and chart.

    A (conversation, item, judge) coded twice under one category counts once: a count is a
    number of coded disagreements, so it equals the length of the list it links to.
    """
    if by not in ("judge", "item", "chatbot"):
        raise ReportError("count by judge, item or chatbot")
    rows = FailureCode.objects.filter(study=study, category__isnull=False).values_list(
        "category_id", "category__name", "judge", "item_key", "conversation_id", "conversation__target__code",
        "conversation__target__model",
    )
    seen: dict[tuple[int, str], set[tuple[int, str]]] = defaultdict(set)
    names: dict[int, str] = {}
    for category, name, judge, item, cid, target, model in rows:
        names[category] = name
        column = {"judge": judge or "(raters)", "item": item,
                  "chatbot": f"{target} · {model}" if target else "(unknown chatbot)"}[by]
        seen[(category, column)].add((cid, item))
    columns = sorted({c for _, c in seen})
    table = []
    for category in sorted(names, key=lambda k: names[k].casefold()):
        counts = {column: len(seen.get((category, column), ())) for column in columns}
        table.append({"category": category, "name": names[category], "counts": counts,
                      "total": len({x for (k, _), v in seen.items() if k == category for x in v})})
    return {"by": by, "columns": columns, "rows": table}


def coding_facts(study: Study) -> dict[str, int]:
    """Return how many (conversation, item) disagreements were coded, by how many people, with how many codes."""
    rows = list(FailureCode.objects.filter(study=study).values_list("conversation_id", "item_key", "created_by_id", "text",
                                                                     "category_id"))
    return {
        "n_codes": len(rows),
        "n_instances": len({(c, i) for c, i, _, _, _ in rows}),
        "n_coders": len({u for _, _, u, _, _ in rows if u is not None}),
        "n_distinct": len({t for _, _, _, t, _ in rows}),
        "n_categories": FailureCategory.objects.filter(study=study).count(),
        "n_uncategorised": sum(1 for *_, k in rows if k is None),
    }


def coding_methods_text(facts: dict[str, int]) -> str:
    """Return the methods sentence of the coding: how many disagreements were coded, by how many people."""
    if not facts["n_codes"]:
        return ""
    return (
        f"Disagreements were coded openly (Shankar et al. 2024): {facts['n_instances']} (conversation, item) "
        f"disagreement{'s' if facts['n_instances'] != 1 else ''} received {facts['n_codes']} code{'s' if facts['n_codes'] != 1 else ''} "
        f"({facts['n_distinct']} distinct) from {facts['n_coders']} "
        f"{'person' if facts['n_coders'] == 1 else 'people'}; the codes were then grouped into {facts['n_categories']} "
        f"failure categor{'y' if facts['n_categories'] == 1 else 'ies'} (axial coding)"
        + (f", {facts['n_uncategorised']} code{'s' if facts['n_uncategorised'] != 1 else ''} not yet in a category." if facts["n_uncategorised"] else ".")
    )


def code_rows(study: Study) -> list[list[Any]]:
    """Return every code as a CSV row (conversation, item, judge, run, code, category, coded_at)."""
    return [
        [code, item, judge, run or "", text, category or "", created.isoformat()]
        for code, item, judge, run, text, category, created in FailureCode.objects.filter(study=study)
        .order_by("conversation__code", "item_key", "judge", "text")
        .values_list("conversation__code", "item_key", "judge", "run_id", "text", "category__name", "created_at")
    ]


CODE_COLUMNS = ["conversation", "item", "judge", "run", "code", "category", "coded_at"]


def counter_of_texts(study: Study) -> Counter[str]:
    return Counter(FailureCode.objects.filter(study=study).values_list("text", flat=True))
