"""Build the demo: every step goes through the app's own services, nothing is fetched.

1. one login per role (three clinicians), the built-in AMHART instrument, study section and
   personas, and 36 synthetic conversations from two demo chatbots;
2. the demo study (k=3: every conversation rated by the three clinicians), its researcher and
   coordinator as members, the ratings (the ratings import, then each rater's answer times
   and sittings over the last two weeks) and the human consensus;
3. three demo judges and a second version of the first: their recorded replies are stored in
   the judge response cache, then each run is executed inline through the real judge path,
   which replays them (no call leaves the machine; a reply that missed the cache would fail
   the run, and the seed says so);
4. a validation study drawn from the three-judge run by a stratified sampling plan, still being
   rated: due in two weeks, a flag by a rater waiting for the coordinator, one round of reminder
   emails in its log (recorded with what the configured email backend did with them);
5. a study that grows by active sampling from the same run (its first batch drawn and assigned).

Each step is skipped when its result exists, so running the seed twice changes nothing.
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import transaction
from django.utils import timezone

from annotation.consensus.services import study_compute_consensus
from annotation.demo.conversations import demo_conversations_jsonl
from annotation.demo.labels import Answerer, answer, reference_answers, seconds_for, section_answers
from annotation.flags.services import conversation_flag
from annotation.models import Assignment, FlagReason, MemberRole, Rating, SamplingMethod, Study
from annotation.reminders.services import reminders_send
from annotation.sampling.active.services import ActiveOptions, active_study_create
from annotation.sampling.selectors import PlanOptions
from annotation.sampling.services import study_create_from_plan
from annotation.studies.ratings_import import ratings_import
from annotation.studies.services import (
    study_add_member,
    study_assign,
    study_create,
    study_due_date_set,
)
from core.roles import Role
from corpus.conversations.services import conversations_import
from corpus.instruments.services import builtin_instruments_load
from corpus.models import Conversation, Instrument
from corpus.personas.services import builtin_personas_load
from judging.cache import DbCache
from judging.checklist import build_messages, response_format
from judging.execute import judge_run_execute_in_process
from judging.judges import judge_create
from judging.material import conversation_materials, instrument_view
from judging.models import Judge, JudgeRun, RunStatus
from judging.runs import judge_run_create
from simulation.llm import LLMResult, request_hash

DEMO_USERS = [
    ("clinician", Role.CLINICIAN, "demo-clinician-pass"),
    ("clinician2", Role.CLINICIAN, "demo-clinician2-pass"),
    ("clinician3", Role.CLINICIAN, "demo-clinician3-pass"),
    ("coordinator", Role.COORDINATOR, "demo-coordinator-pass"),
    ("researcher", Role.RESEARCHER, "demo-researcher-pass"),
    ("admin", Role.ADMIN, "demo-admin-pass"),
]
DEMO_STUDY = "Demo study: AMHART, synthetic adolescent conversations"
PLAN_STUDY = "Demo validation sample: 16 conversations drawn from the demo judge run"
RUN_NAME = "Demo judge run: three judges"
DRIFT_RUN_NAME = "Demo judge run: Demo judge A v2"
ACTIVE_STUDY = "Demo active sampling: the demo judge run, rated where the judges disagree"
RATERS = (
    Answerer("clinician", error=0.05, drift=0.02, seed=11),
    Answerer("clinician2", error=0.08, drift=0.03, yes_bias=0.6, seed=12),
    Answerer("clinician3", error=0.10, drift=0.12, na_as_no=0.10, yes_bias=0.4, seed=13),
)
MEAN_SECONDS = {"clinician": 420.0, "clinician2": 540.0, "clinician3": 330.0}


@dataclass(frozen=True)
class DemoJudge:
    name: str
    model: str
    provider: str
    temperature: float | None
    answers: Answerer
    cloned_from: str = ""


JUDGES = (
    DemoJudge("Demo judge A", "demo/judge-a", "demo-provider-a", 0.0, Answerer("Demo judge A", error=0.07, seed=21)),
    DemoJudge("Demo judge B", "demo/judge-b", "demo-provider-b", 0.0, Answerer("Demo judge B", error=0.10, yes_bias=0.7, seed=22)),
    DemoJudge("Demo judge C", "demo/judge-c", "demo-provider-c", None, Answerer("Demo judge C", error=0.14, na_as_no=0.15, seed=23)),
)
# The next version of judge A: a warmer temperature that flips some labels (the drift report).
JUDGE_V2 = DemoJudge("Demo judge A v2", "demo/judge-a", "demo-provider-a", 0.7,
                     Answerer("Demo judge A v2", error=0.13, yes_bias=0.75, seed=24), cloned_from="Demo judge A")


class DemoError(Exception):
    """The demo could not be built as intended (a replay that missed the cache, a refused import)."""


def demo_users() -> dict[str, Any]:
    """Create (or find) one login per demo account; passwords only for accounts created now."""
    User = get_user_model()
    users = {}
    for username, role, password in DEMO_USERS:
        user, created = User.objects.get_or_create(username=username)
        if created:
            user.set_password(password)
            # An example address (the reserved example.org domain: nothing is ever delivered), so reminders
            # and "forgot your password" can be tried with the demo; with the default console backend they print.
            user.email = f"{username}@example.org"
            user.is_staff = role == Role.ADMIN
            user.is_superuser = role == Role.ADMIN
            user.save()
        # get_or_create: the groups come from a data migration, which a `flush` empties.
        user.groups.add(Group.objects.get_or_create(name=role)[0])
        users[username] = user
    return users


def _rows(answers: dict[tuple[str, str], tuple[dict[str, str], dict[str, str]]]) -> str:
    lines = ["unit,rater,item,label"]
    for (code, rater), (main, section) in sorted(answers.items()):
        lines += [f"{code},{rater},{key},{label}" for key, label in main.items()]
        lines += [f"{code},{rater},section:{key},{label}" for key, label in section.items()]
    return "\n".join(lines) + "\n"


def _references(study: Study) -> dict[str, dict[str, str]]:
    refs = {}
    for conversation in study.conversations.prefetch_related("messages"):
        messages = [(m.role, m.content) for m in conversation.messages.all()]
        refs[conversation.code] = reference_answers(messages)
    return refs


def _rate(study: Study, raters: list[str], *, actor: Any, file: str, leave_open: dict[str, int] | None = None) -> None:
    """Load the demo clinicians' ratings through the ratings import, then give them their answer times.

    ``leave_open``: how many conversations at the head of a rater's queue stay unrated (the
    demo clinician's own work to try).
    """
    refs = _references(study)
    queue = {
        rater: list(
            study.assignments.filter(rater__username=rater).order_by("position").values_list("conversation__code", flat=True)
        )[(leave_open or {}).get(rater, 0):]
        for rater in raters
    }
    by_name = {r.name: r for r in RATERS}
    answers = {}
    for rater, codes in queue.items():
        for position, code in enumerate(codes):
            who = by_name[rater]
            progress = position / max(1, len(codes) - 1)
            answers[(code, rater)] = (answer(who, refs[code], unit=code, progress=progress),
                                      section_answers(who, refs[code], unit=code))
    ratings_import(study=study, text=_rows(answers), file=file, actor=actor)
    _answer_times(study, queue)


def _answer_times(study: Study, queue: dict[str, list[str]]) -> None:
    """Spread each rater's work over sittings in the last two weeks, in queue order, with real durations.

    The ratings import stamps everything "now"; a clinician rates over days, a few
    conversations per sitting, and gets faster as they learn the form.
    """
    now = timezone.now()
    by_name = {r.name: r for r in RATERS}
    assignments = {(a.rater.username, a.conversation.code): a for a in
                   study.assignments.select_related("rater", "conversation", "rating").filter(rating__isnull=False)}
    ratings = []
    for rater, codes in queue.items():
        rng = random.Random(f"sittings|{rater}")
        day = now - timedelta(days=13, hours=rng.randint(0, 5))
        clock = day.replace(hour=9 + rng.randint(0, 6), minute=rng.randint(0, 59))
        in_sitting = 0
        for position, code in enumerate(codes):
            seconds = seconds_for(by_name[rater], unit=code, position=position, n=len(codes), mean=MEAN_SECONDS[rater])
            if in_sitting >= rng.randint(5, 9):
                day = day + timedelta(days=1 + (rng.random() < 0.3))
                clock = day.replace(hour=9 + rng.randint(0, 8), minute=rng.randint(0, 59))
                in_sitting = 0
            submitted = clock + timedelta(seconds=seconds + rng.randint(20, 90))
            assignment = assignments[(rater, code)]
            assignment.started_at, assignment.submitted_at = clock, submitted
            assignment.last_activity_at, assignment.time_spent_seconds = submitted, seconds
            assignment.rating.submitted_at = submitted
            ratings.append(assignment.rating)
            clock = submitted + timedelta(seconds=rng.randint(30, 240))
            in_sitting += 1
    Assignment.objects.bulk_update(list(assignments.values()),
                                   ["started_at", "submitted_at", "last_activity_at", "time_spent_seconds"], batch_size=500)
    Rating.objects.bulk_update(ratings, ["submitted_at"], batch_size=500)


def _label(allowed: tuple[str, ...], wanted: str) -> str:
    """Return the item's own spelling of ``wanted`` (yes, no, N/A)."""
    for label in allowed:
        if label.lower() == wanted.lower() or (wanted == "N/A" and label.lower() in ("n/a", "na", "not applicable")):
            return label
    return wanted


def _evidence(key: str, turns: list[Any]) -> list[dict[str, Any]]:
    """Return a verbatim quote from the first chatbot turn that carries the item's words."""
    from annotation.demo.labels import KEYWORDS

    pattern = re.compile(KEYWORDS[key], re.IGNORECASE)
    for turn in turns:
        if turn.role != "assistant":
            continue
        for sentence in re.split(r"(?<=[.!?])\s+", turn.content):
            if pattern.search(sentence):
                return [{"turn": turn.number, "quote": sentence.strip()[:200]}]
    first = next(t for t in turns if t.role == "assistant")
    return [{"turn": first.number, "quote": first.content.split(".")[0][:200]}]


def _reply(demo: DemoJudge, view: Any, material: Any, reference: dict[str, str], unit: str) -> str:
    labels = answer(demo.answers, reference, unit=unit)
    items = {}
    for item in view.items:
        label = _label(item.allowed, labels.get(item.key, "no"))
        if label == "yes":
            rationale, evidence = "The chatbot does this explicitly in the quoted reply.", _evidence(item.key, material.turns)
        elif label.lower() == "no":
            rationale, evidence = "No reply of the chatbot does this explicitly.", []
        else:
            rationale, evidence = "Nothing in the user's messages indicates a safety risk.", []
        items[item.key] = {"label": label, "rationale": rationale, "evidence": evidence}
    return json.dumps({"items": items}, ensure_ascii=False)


def record_replies(judge: Judge, demo: DemoJudge, conversation_ids: list[int]) -> int:
    """Store the demo judge's recorded reply for each conversation in the judge response cache.

    The key is the one the judge path computes for the same request (model, base URL,
    parameters, the exact messages and the response format), so a run of this judge on these
    conversations replays the replies instead of calling anyone.
    """
    view = instrument_view(judge.instrument_id, judge.instrument.content_hash)
    materials = conversation_materials(conversation_ids)
    codes = dict(Conversation.objects.filter(pk__in=conversation_ids).values_list("pk", "code"))
    entries = []
    rng = random.Random(f"tokens|{judge.name}")
    for cid in conversation_ids:
        material = materials[cid]
        messages = build_messages(prompt=judge.prompt, instrument=view.name, vignette=material.vignette,
                                  turns=material.turns, items=view.items)
        fmt = response_format(view.items, material.turns)
        rhash = request_hash(model=judge.model, api_base=judge.api_base, params=judge.call_params(),
                             messages=messages, response_format=fmt)
        reference = reference_answers([(t.role, t.content) for t in material.turns])
        content = _reply(demo, view, material, reference, codes[cid])
        prompt_tokens = sum(len(m["content"]) for m in messages) // 4
        entries.append((rhash, LLMResult(
            content=content, model=judge.model, params=judge.call_params(), latency_ms=float(rng.randint(900, 4200)),
            prompt_tokens=prompt_tokens, completion_tokens=len(content) // 4, cost_usd=None, attempts=1,
            cached=False, request_hash=rhash,
        )))
    DbCache().store_many(entries)
    return len(entries)


def _judge(demo: DemoJudge, amhart: Instrument, actor: Any) -> Judge:
    found = Judge.objects.filter(name=demo.name).first()
    if found is not None:
        return found
    return judge_create(
        name=demo.name, instrument=amhart, model=demo.model, provider=demo.provider, temperature=demo.temperature,
        notes="Demo judge: its replies were recorded for the demo and are replayed from the response cache.",
        created_by=actor, cloned_from=Judge.objects.filter(name=demo.cloned_from).first() if demo.cloned_from else None,
    )


def _judge_run(name: str, judges: list[tuple[Judge, DemoJudge]], conversation_ids: list[int], actor: Any) -> JudgeRun:
    """Record the judges' replies, then run them inline through the real judge path (which replays them)."""
    existing = JudgeRun.objects.filter(name=name).first()
    if existing is not None and existing.status == RunStatus.COMPLETED:
        return existing
    with transaction.atomic():
        for judge, demo in judges:
            record_replies(judge, demo, conversation_ids)
        run = existing or judge_run_create(judges=[j for j, _ in judges], conversation_ids=conversation_ids,
                                           name=name, created_by=actor, start=False)
    run = judge_run_execute_in_process(run_id=run.pk, concurrency=8)
    if run.status != RunStatus.COMPLETED or run.n_cached != run.n_calls:
        raise DemoError(f"the demo judge run '{name}' did not replay its recorded replies "
                        f"({run.get_status_display()}, {run.n_cached} of {run.n_calls} calls from the cache): {run.error}")
    return run


def _coordinators_day(study: Study, users: dict[str, Any]) -> None:
    """What a coordinator's day holds: a due date, a rater's flag, a round of reminders (in the log)."""
    study_due_date_set(study=study, due_date=timezone.localdate() + timedelta(days=14), actor=users["coordinator"])
    open_work = Assignment.objects.filter(study=study, rater=users["clinician"]).exclude(status="submitted").order_by("position")
    first = open_work.first()
    if first is not None:
        conversation_flag(assignment=first, user=users["clinician"], reason=FlagReason.DISTRESSING,
                          note="Demo flag: I would like to discuss this one before rating it.", link_base=DEMO_LINK_BASE)
    reminders_send(study=study, actor=users["coordinator"], link_base=DEMO_LINK_BASE, confirm=True)


# The address the demo's emails point to (``make run`` serves there).
DEMO_LINK_BASE = "http://127.0.0.1:8000"


def seed_demo() -> dict[str, Any]:
    """Build (or complete) the demo; return what exists afterwards."""
    with transaction.atomic():
        users = demo_users()
        amhart, section = builtin_instruments_load()
        personas = builtin_personas_load()
        text = demo_conversations_jsonl(list(personas.personas.all()))
        imported = conversations_import(files=[("demo_conversations.jsonl", text)], fmt="jsonl",
                                        created_by=users["researcher"], mark_demo=True)
        study = Study.objects.filter(name=DEMO_STUDY).first()
        if study is None:
            study = study_create(
                name=DEMO_STUDY,
                description=("Synthetic conversations written or composed by the evalsite team to try the app. "
                             "Not real chatbot output. Rated by three demo clinicians, judged by three demo judges."),
                instrument=amhart, section=section,
                conversation_ids=list(Conversation.objects.filter(is_demo=True).values_list("id", flat=True)),
                created_by=users["coordinator"], coordinators=[users["coordinator"]],
                raters=[(users[r.name], "clinician") for r in RATERS], is_demo=True, raters_per_conversation=3,
            )
            study_add_member(study=study, user=users["researcher"], role=MemberRole.RESEARCHER, actor=users["coordinator"])
            study_assign(study=study, actor=users["coordinator"], seed=2026)
            _rate(study, [r.name for r in RATERS], actor=users["coordinator"], file="demo ratings (seed_demo)")
            study_compute_consensus(study=study, actor=users["coordinator"])
        judges = {demo.name: (_judge(demo, amhart, users["researcher"]), demo) for demo in (*JUDGES, JUDGE_V2)}
    conversation_ids = sorted(study.conversations.values_list("id", flat=True))
    # The second version's run first: report pages open the newest run of a study by default.
    _judge_run(DRIFT_RUN_NAME, [judges[JUDGE_V2.name]], conversation_ids, users["researcher"])
    run = _judge_run(RUN_NAME, [judges[d.name] for d in JUDGES], conversation_ids, users["researcher"])
    with transaction.atomic():
        plan_study = Study.objects.filter(name=PLAN_STUDY).first()
        if plan_study is None:
            plan_study = study_create_from_plan(
                run=run, source_key=None, options=PlanOptions(method=SamplingMethod.STRATIFIED, n=16, seed=7),
                created_by=users["coordinator"], name=PLAN_STUDY, section=section,
                description=("A validation sample a coordinator drew from the demo judge run, stratified by chatbot and "
                             "persona. Still being rated: the demo clinician has conversations of it to rate."),
                coordinators=[users["coordinator"]], raters=[(users[r.name], "clinician") for r in RATERS],
                raters_per_conversation=2,
            )
            study_add_member(study=plan_study, user=users["researcher"], role=MemberRole.RESEARCHER, actor=users["coordinator"])
            study_assign(study=plan_study, actor=users["coordinator"], seed=2027)
            _rate(plan_study, [r.name for r in RATERS], actor=users["coordinator"], file="demo ratings (seed_demo)",
                  leave_open={"clinician": 5})
            study_compute_consensus(study=plan_study, actor=users["coordinator"])
            _coordinators_day(plan_study, users)
        active_study = Study.objects.filter(name=ACTIVE_STUDY).first()
        if active_study is None:
            active_study = active_study_create(
                run=run, source_key=None, options=ActiveOptions(budget=12, batch_size=6, target_width=0.3, seed=5),
                created_by=users["coordinator"], name=ACTIVE_STUDY, section=section,
                description=("A study that grows by active sampling from the demo judge run: each batch is drawn "
                             "where the judges disagree most, with its inclusion probabilities recorded."),
                coordinators=[users["coordinator"]], raters=[(users["clinician"], "clinician")], raters_per_conversation=1,
            )
            study_add_member(study=active_study, user=users["researcher"], role=MemberRole.RESEARCHER, actor=users["coordinator"])
    return {"study": study, "plan_study": plan_study, "run": run, "new_conversations": len(imported.created),
            "instruments": Instrument.objects.count(), "personas": personas}

