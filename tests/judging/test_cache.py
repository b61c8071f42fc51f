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
