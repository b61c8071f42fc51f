"""Revise a judge: clone it with one item's instruction edited and run the new version on the development set only.

The practice of judge development (DOMAIN.md section 6): from a failure mode found on the review
page, a new version whose prompt changes one item, run on the development set, compared with the
version it came from (the drift page: flips towards or away from the clinicians). The test set
stays locked: a study without a split is refused (there is no development set to run on), and a
run that would include any test-set conversation is refused too.
"""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.http import Http404

from annotation.models import Study
from annotation.studies.services import study_event
from judging import services as judging
from judging.errors import JudgingError
from judging.judges import judge_clone_initial
from judging.models import Judge, JudgeRun
from judging.selectors import conversation_ids_for_judging
from reports.devset.selectors import split_conversation_ids, split_current
from reports.errors import ReportsError
from reports.models import HoldoutPart
from reports.revise.selectors import revise_plan

NAME_MAX = Judge._meta.get_field("name").max_length or 120
NO_SPLIT = ("The study has no development and test sets yet: split it first (judge development page), so the new "
            "version is run on the development set and the test set stays locked. Nothing was created.")


@transaction.atomic
def judge_revise(
    *, study: Study, run: JudgeRun, judge: Judge, item_key: str, instruction: str, name: str = "",
    actor: AbstractBaseUser,
) -> JudgeRun:
    """Create the next version of ``judge`` with ``item_key``'s instruction edited; run it on the development set.

    The new judge is a clone (``cloned_from`` the judge) whose ``item_guidance`` holds the edited
    instruction; its run judges the development set of the study's current split, nothing else,
    and is queued when the transaction commits. Recorded in the study's audit trail. Raises
    ReportsError (nothing created) for a study without a split, an unchanged or empty instruction,
    a taken name, or a selection that would touch the test set.
    """
    split = split_current(study)
    if split is None:
        raise ReportsError(NO_SPLIT, status=409)
    try:
        plan = revise_plan(study, run.pk, judge.pk, item_key)
    except Http404 as exc:
        raise ReportsError(f"Nothing to revise: {exc}.", status=404) from exc
    instruction = (instruction or "").strip()
    if not instruction:
        raise ReportsError(f"Write the new instruction for {plan.target.title}: it is empty.")
    if " ".join(instruction.split()) == " ".join(plan.current.split()):
        raise ReportsError(f"The instruction for {plan.target.title} is unchanged: edit it first. Nothing was created.")
    development = split_conversation_ids(split, HoldoutPart.DEV)
    test = split_conversation_ids(split, HoldoutPart.TEST)
    try:
        # The study's judgeable conversations (transcripts present, integrity flags left out), of its development set.
        judgeable, selection = conversation_ids_for_judging(study_id=study.pk, user=actor)
    except JudgingError as exc:
        raise ReportsError(str(exc)) from exc
    ids = sorted(set(judgeable) & development)
    if set(ids) & test:  # cannot happen with the sets disjoint; the lock is checked, not assumed
        raise ReportsError("The run would include test-set conversations: refused, nothing was created.", status=409)
    if not ids:
        raise ReportsError(f"The development set of split {split.number} has no conversation to judge. Nothing was created.")
    initial = judge_clone_initial(judge)
    initial["name"] = (name or "").strip() or initial["name"]
    if len(initial["name"]) > NAME_MAX:
        raise ReportsError(f"The new version's name is longer than {NAME_MAX} characters. Nothing was created.")
    initial["item_guidance"] = {**(judge.item_guidance or {}), plan.target.key: instruction}
    try:
        new = judging.judge_create(**initial, created_by=actor, cloned_from=judge)
        new_run = judging.judge_run_create(
            judges=[new], conversation_ids=ids,
            selection={
                **selection, "conversations": len(ids), "codes": [],
                "holdout": {"set": "development", "split": split.number, "n_conversations": len(ids)},
                "revision": {"study": study.pk, "from_run": run.pk, "from_judge": judge.pk, "judge": new.pk,
                             "item": plan.target.key, "item_title": plan.target.title, "split": split.number},
            },
            name=f"{new.name}: {plan.target.title} revised, development set of split {split.number}"[:200],
            created_by=actor,
        )
    except JudgingError as exc:
        raise ReportsError(str(exc), status=exc.status) from exc
    study_event(
        study=study, actor=actor, action="judge_revised", split=split.number, from_run=run.pk, from_judge=judge.pk,
        judge=new.pk, run=new_run.pk, item=plan.target.key, n_conversations=len(ids),
        summary=(f"{new.name}: a new version of {judge.name} with {plan.target.title}'s instruction edited, run #{new_run.pk} "
                 f"on the {len(ids)} development-set conversations of split {split.number}"),
    )
    return new_run
