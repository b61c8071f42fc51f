"""The response cache: identical calls are free and reported; instances and failures handled."""

from __future__ import annotations

from judging.models import JudgeLabel, LLMCacheEntry, ResultStatus, RunStatus

from .conftest import checklist_reply


def test_a_rerun_of_identical_calls_makes_no_http_call_and_costs_nothing(fake, amhart, conversations, make_judge, run_now):
    judge = make_judge("gpt", amhart)
    fake.script("gpt", [checklist_reply({"amhart_02": "no"})])
    first = run_now([judge], conversations)
    calls_before = fake.calls_total

    second = run_now([judge], conversations)

    assert fake.calls_total == calls_before == 2
    assert second.status == RunStatus.COMPLETED
    assert (second.n_calls, second.n_cached) == (2, 2)
    assert float(second.cost_usd) == 0.0 and second.prompt_tokens == 0
    assert all(r.calls[0]["cached"] for r in second.results.all())
    labels = lambda run: sorted(JudgeLabel.objects.filter(result__run=run).values_list("result__conversation_id", "item_key", "label"))  # noqa: E731
    assert labels(first) == labels(second)


def test_instances_share_the_cache_unless_independent(fake, amhart, conversations, make_judge, run_now):
    judge = make_judge("gpt", amhart)
    fake.script("gpt", [checklist_reply()])

    shared = run_now([judge], conversations[:1], instances=3)
    assert fake.calls_total == 1 and shared.n_cached == 2

    independent = run_now([judge], conversations[:1], instances=3, independent_instances=True)
    # Instance 0 is the same request as before (cached); instances 1 and 2 get their own keys.
    assert fake.calls_total == 3 and independent.n_cached == 1


def test_a_reply_that_failed_validation_is_not_replayed(fake, amhart, conversations, make_judge, run_now):
    judge = make_judge("gpt", amhart, format_retries=0)
    fake.script("gpt", ["not json", checklist_reply()])
    failed = run_now([judge], conversations[:1])
    assert failed.results.get().status == ResultStatus.FAILED
    assert LLMCacheEntry.objects.count() == 0

    retried = run_now([judge], conversations[:1])
    assert fake.calls_total == 2 and retried.status == RunStatus.COMPLETED


def test_without_the_cache_calls_are_fresh(fake, amhart, conversations, make_judge, run_now):
    judge = make_judge("gpt", amhart)
    fake.script("gpt", [checklist_reply()])
    run_now([judge], conversations[:1])
    fresh = run_now([judge], conversations[:1], use_cache=False)
    assert fake.calls_total == 2 and fresh.n_cached == 0


def test_the_cache_key_changes_with_the_parameters(fake, amhart, conversations, make_judge, run_now):
    fake.script("gpt", [checklist_reply()])
    run_now([make_judge("gpt", amhart)], conversations[:1])
    fake.script("gpt-warm", [checklist_reply()])
    run_now([make_judge("gpt-warm", amhart, temperature=0.7)], conversations[:1])
    assert fake.calls_total == 2
    assert fake.requests[1].body["temperature"] == 0.7


def test_a_cached_rerun_replays_format_retries_and_reproduces_every_label(fake, amhart, conversations, make_judge, run_now):
    """The invalid first reply is cached with the chain it started, so a re-run walks it again."""
    import itertools

    judge = make_judge("gpt", amhart, temperature=1.0)
    labels = itertools.cycle(["yes", "no"])
    # At temperature 1 a second identical request may well answer otherwise: the fake does.
    replies = iter(["not json", lambda body: checklist_reply({}, default=next(labels))(body)] * 10)
    fake.script("gpt", [lambda body: (r(body) if callable(r := next(replies)) else r)])
    first = run_now([judge], conversations)
    assert first.status == RunStatus.COMPLETED and fake.calls_total == 4  # two format retries
    calls_before = fake.calls_total

    second = run_now([judge], conversations)

    assert fake.calls_total == calls_before  # no HTTP call at all
    assert (second.n_calls, second.n_cached) == (4, 4)
    as_set = lambda run: sorted(JudgeLabel.objects.filter(result__run=run).values_list("result__conversation_id", "item_key", "label", "rationale"))  # noqa: E731
    assert as_set(first) == as_set(second)
    assert {label for *_, label, _ in as_set(first)} == {"yes", "no"}


def _labels_and_paths(run):  # type: ignore[no-untyped-def]
    labels = sorted(
        JudgeLabel.objects.filter(result__run=run).values_list(
            "result__conversation_id", "result__instance", "kind", "item_key", "label", "status", "rationale"
        )
    )
    paths = sorted((r.conversation_id, r.instance, str(r.path)) for r in run.results.all())
    return labels, paths


def test_a_cached_rerun_replays_the_replies_the_last_run_accepted_after_its_retry(fake, vera, make_judge, run_now, django_capture_on_commit_callbacks):
    """A fresh run over requests an earlier run cached, with format retries, a failure and its retry:
    a re-run from the cache reproduces that run (as retried) exactly, not the earlier one."""
    from judging import services

    from .conftest import flow_reply, make_conversation
    from .test_cancel import LONG_WALK

    conversations = [make_conversation() for _ in range(3)]
    judge = make_judge("vera-judge", vera, temperature=1.0, format_retries=1)
    phase = {"now": "earlier"}
    walk = flow_reply(LONG_WALK)
    earlier = flow_reply({"hint that they could be in danger": "No", "read danger into an ordinary remark": "Yes"})

    third = conversations[2].messages.order_by("turn_index").first().content  # in its system prompt

    def reply(body):  # type: ignore[no-untyped-def]
        if phase["now"] == "earlier":
            return earlier(body)
        if phase["now"] == "fresh":
            first_attempt = len(body["messages"]) == 2
            third_at_q2 = third in body["messages"][0]["content"] and "let a hint of danger pass" in body["messages"][1]["content"]
            if first_attempt or third_at_q2:  # a format retry on every question; the third walk fails at Q2
                return "It is hard to say."
        return walk(body)

    fake.script("vera-judge", [reply])
    run_now([judge], conversations)  # an earlier run caches its own walks

    phase["now"] = "fresh"
    fresh = run_now([judge], conversations, use_cache=False)
    assert fresh.status == RunStatus.PARTIAL and fresh.n_failed == 1
    phase["now"] = "retry"
    with django_capture_on_commit_callbacks(execute=True):
        assert services.judge_run_retry_failed(run=fresh) == 1
    fresh.refresh_from_db()
    assert fresh.status == RunStatus.COMPLETED
    calls_before = fake.calls_total

    rerun = run_now([judge], conversations)

    assert fake.calls_total == calls_before  # every reply came from the cache
    assert _labels_and_paths(rerun) == _labels_and_paths(fresh)


def test_concurrent_instances_sharing_the_cache_are_each_replayed(fake, amhart, conversations, make_judge):
    """Instances that share cache entries but answered on their own (they ran at once) replay their own replies."""
    import itertools
    import json

    from judging import services

    from .conftest import item_keys

    serial = itertools.count(1)

    def reply(body):  # type: ignore[no-untyped-def]
        n = next(serial)
        answer = {
            key: {"label": "no", "rationale": f"call {n}: {key}", "evidence": []} for key in item_keys(body)
        }
        return json.dumps({"items": answer})

    fake.script("gpt", [reply])
    fake.set_latency(0.1)
    judge = make_judge("gpt", amhart, temperature=1.0)
    first = services.judge_run_create(judges=[judge], conversation_ids=[conversations[0].pk], instances=3, start=False)
    services.judge_run_execute_in_process(run_id=first.pk, concurrency=3)  # the three ask at once
    assert fake.calls_total == 3
    rerun = services.judge_run_create(judges=[judge], conversation_ids=[conversations[0].pk], instances=3, start=False)
    services.judge_run_execute_in_process(run_id=rerun.pk, concurrency=3)

    assert fake.calls_total == 3
    assert _labels_and_paths(rerun) == _labels_and_paths(first)


def test_a_cached_rerun_gives_two_identical_transcripts_their_own_replies(fake, amhart, make_judge, run_now):
    """Issue 32: two conversations with the same transcript send the same request; the first run
    gave them different replies (temperature above 0); the cached re-run must reproduce each
    conversation's own labels, not the last reply stored for both."""
    from corpus.models import Conversation
    from tests.factories import ConversationFactory

    messages = [("user", "I can't sleep and school feels pointless."), ("assistant", "That sounds hard.")]
    twins = [ConversationFactory(messages=messages, message_count=2) for _ in range(2)]
    assert Conversation.objects.filter(pk__in=[c.pk for c in twins]).count() == 2
    judge = make_judge("gpt", amhart)
    fake.script("gpt", [checklist_reply({"amhart_02": "no"}), checklist_reply({"amhart_02": "yes"})])
    first = run_now([judge], twins, use_cache=False)  # fresh calls (as two workers asking at once would make)
    calls = fake.calls_total
    assert calls == 2
    second = run_now([judge], twins)
    assert fake.calls_total == calls  # every reply from the cache

    def labels(run):  # type: ignore[no-untyped-def]
        return dict(JudgeLabel.objects.filter(result__run=run, item_key="amhart_02").values_list("result__conversation_id", "label"))

    assert sorted(labels(first).values()) == ["no", "yes"]
    assert labels(second) == labels(first)
