"""The judge ensemble: majority per item, N/A its own category, no majority never guessed."""

from __future__ import annotations

from judging.ensemble import provider_warnings
from judging.models import EnsembleLabel
from tests.support.fake_llm import http_400

from .conftest import checklist_reply


def _votes(run, conversation):  # type: ignore[no-untyped-def]
    return {e.item_key: e for e in EnsembleLabel.objects.filter(run=run, conversation=conversation)}


def test_three_judges_vote_per_item_with_na_as_its_own_category(fake, amhart, conversations, make_judge, run_now):
    judges = [make_judge(name, amhart) for name in ("gpt", "claude", "gemini")]
    fake.script("gpt", [checklist_reply({"amhart_02": "no", "amhart_03": "no", "amhart_13": "N/A", "amhart_14": "N/A"})])
    fake.script("claude", [checklist_reply({"amhart_02": "no", "amhart_13": "N/A", "amhart_14": "yes"})])
    fake.script("gemini", [checklist_reply({"amhart_13": "yes", "amhart_14": "no"})])

    run = run_now(judges, conversations[:1])
    votes = _votes(run, conversations[0])

    assert len(votes) == 14
    assert (votes["amhart_01"].label, votes["amhart_01"].provenance) == ("yes", "unanimous")
    assert (votes["amhart_02"].label, votes["amhart_02"].provenance) == ("no", "majority")
    assert (votes["amhart_13"].label, votes["amhart_13"].provenance) == ("N/A", "majority")
    assert (votes["amhart_03"].label, votes["amhart_03"].provenance) == ("yes", "majority")
    # Three different labels: no majority, recorded as such.
    assert (votes["amhart_14"].label, votes["amhart_14"].provenance) == ("", "no_majority")
    assert votes["amhart_14"].votes == {"gpt": "N/A", "claude": "yes", "gemini": "no"}
    assert "at least 2 votes" in votes["amhart_14"].rule and "N/A is a category of its own" in votes["amhart_14"].rule
    assert run.ensemble_rule == votes["amhart_01"].rule


def test_a_tie_between_two_judges_is_no_majority(fake, amhart, conversations, make_judge, run_now):
    judges = [make_judge("gpt", amhart), make_judge("claude", amhart)]
    fake.script("gpt", [checklist_reply()])
    fake.script("claude", [checklist_reply({"amhart_05": "no"})])

    votes = _votes(run_now(judges, conversations[:1]), conversations[0])

    assert (votes["amhart_05"].label, votes["amhart_05"].provenance) == ("", "no_majority")
    assert votes["amhart_04"].label == "yes"


def test_a_failed_judge_counts_as_a_voter_without_a_vote(fake, amhart, conversations, make_judge, run_now):
    judges = [make_judge(name, amhart) for name in ("gpt", "claude", "gemini")]
    fake.script("gpt", [checklist_reply()])
    fake.script("claude", [checklist_reply({"amhart_06": "no"})])
    fake.script("gemini", [http_400()])

    votes = _votes(run_now(judges, conversations[:1]), conversations[0])

    assert (votes["amhart_01"].label, votes["amhart_01"].provenance) == ("yes", "majority")
    assert (votes["amhart_06"].label, votes["amhart_06"].provenance) == ("", "no_majority")
    assert votes["amhart_06"].votes["gemini"] is None


def test_only_instance_zero_votes(fake, amhart, conversations, make_judge, run_now):
    judges = [make_judge("gpt", amhart), make_judge("claude", amhart), make_judge("gemini", amhart)]
    for name in ("gpt", "claude", "gemini"):
        fake.script(name, [checklist_reply()])
    run = run_now(judges, conversations[:1], instances=2)
    assert EnsembleLabel.objects.filter(run=run).count() == 14
    assert run.results.count() == 6


def test_two_judges_of_one_provider_are_warned_about(fake, amhart, conversations, make_judge, run_now):
    judges = [
        make_judge("gpt-a", amhart, provider="openai"),
        make_judge("gpt-b", amhart, provider="openai"),
        make_judge("claude", amhart, provider="anthropic"),
    ]
    for judge in judges:
        fake.script(judge.name, [checklist_reply()])
    run = run_now(judges, conversations[:1])

    assert len(run.warnings) == 1
    assert "gpt-a, gpt-b" in run.warnings[0] and "'openai'" in run.warnings[0]


def test_one_judge_per_provider_gives_no_warning() -> None:
    members = [{"name": "a", "provider": "openai"}, {"name": "b", "provider": "Anthropic"}, {"name": "c", "provider": "google"}]
    assert provider_warnings(members) == []
    assert provider_warnings([{"name": "a", "provider": "openai"}]) == []


def test_a_single_judge_run_has_its_judges_labels_as_run_labels(fake, amhart, conversations, make_judge, run_now):
    """Issue 31, defect 4: one judge is a run: its labels are the run's labels, with their own provenance."""
    judge = make_judge("gpt", amhart)
    fake.script("gpt", [checklist_reply({"amhart_02": "no", "amhart_13": "N/A"})])
    run = run_now([judge], conversations[:1])
    votes = _votes(run, conversations[0])
    assert len(votes) == 14
    assert (votes["amhart_01"].label, votes["amhart_01"].provenance) == ("yes", "single_judge")
    assert (votes["amhart_02"].label, votes["amhart_02"].provenance) == ("no", "single_judge")
    assert (votes["amhart_13"].label, votes["amhart_13"].provenance) == ("N/A", "single_judge")
    assert votes["amhart_01"].votes == {"gpt": "yes"} and votes["amhart_01"].rule.startswith("Single judge: the run's labels")
