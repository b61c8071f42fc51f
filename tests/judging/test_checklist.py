"""Checklist judges (AMHART) against the fake server, through litellm's real HTTP path."""

from __future__ import annotations

import json

from judging.checklist import ItemSpec, validate_reply
from judging.models import JudgeLabel, LabelStatus, ResultStatus, RunStatus
from judging.prompts import Turn
from tests.support.fake_llm import http_400, malformed_json

from .conftest import SECRET, TRANSCRIPT, checklist_reply, schema_of


def test_the_request_carries_a_strict_json_schema_with_na_only_where_allowed(fake, amhart, conversations, make_judge, run_now):
    judge = make_judge("gpt-judge", amhart)
    fake.script("gpt-judge", [checklist_reply()])

    run_now([judge], conversations[:1])

    body = fake.requests[0].body
    assert body["response_format"]["type"] == "json_schema"
    assert body["response_format"]["json_schema"]["strict"] is True
    items = schema_of(body)["properties"]["items"]
    assert len(items["required"]) == 14 and items["additionalProperties"] is False
    # Each item is one verdict shape per kind of label ("yes" must cite chatbot turns).
    enums = {
        key: [label for shape in spec.get("anyOf", [spec]) for label in shape["properties"]["label"]["enum"]]
        for key, spec in items["properties"].items()
    }
    assert enums["amhart_01"] == ["yes", "no"]
    assert enums["amhart_13"] == ["yes", "no", "N/A"]
    assert enums["amhart_14"] == ["yes", "no", "N/A"]
    assert "temperature" not in body  # left to the provider unless the judge sets one


def test_a_judges_temperature_is_sent_only_when_set(fake, amhart, conversations, make_judge, run_now):
    judge = make_judge("cool-judge", amhart, temperature=0.0)
    fake.script("cool-judge", [checklist_reply()])
    run_now([judge], conversations[:1])
    assert fake.requests[0].body["temperature"] == 0


def test_the_prompt_holds_the_vignette_the_numbered_transcript_and_every_items_examples(fake, amhart, conversations, make_judge, run_now):
    fake.script("gpt-judge", [checklist_reply()])
    run_now([make_judge("gpt-judge", amhart)], conversations[:1])

    system, user = fake.requests[0].body["messages"]
    assert system["role"] == "system" and user["role"] == "user"
    assert "age: 15" in user["content"] and "duration: three months" in user["content"]
    assert "[2] Chatbot: That sounds really hard" in user["content"]
    assert "[3] User: Sometimes I think" in user["content"]
    assert user["content"].count("### amhart_") == 14
    assert "Counts as yes, for example:" in user["content"]
    assert "Does not count, for example:" in user["content"]
    assert SECRET not in json.dumps(fake.requests[0].body)
    assert fake.requests[0].headers["authorization"] == f"Bearer {SECRET}"


def test_valid_replies_are_stored_with_rationale_and_evidence(fake, amhart, conversations, make_judge, run_now):
    fake.script("gpt-judge", [checklist_reply({"amhart_13": "N/A", "amhart_02": "no"})])
    run = run_now([make_judge("gpt-judge", amhart)], conversations)

    assert run.status == RunStatus.COMPLETED
    assert (run.n_done, run.n_failed, run.n_calls, run.n_cached) == (2, 0, 2, 0)
    assert run.prompt_tokens > 0
    labels = {label.item_key: label for label in JudgeLabel.objects.filter(result__run=run, result__conversation=conversations[0])}
    assert len(labels) == 14
    assert labels["amhart_01"].label == "yes"
    assert labels["amhart_01"].evidence == [{"turn": 2, "quote": "your feelings are completely valid", "verified": True}]
    assert labels["amhart_02"].label == "no" and labels["amhart_02"].evidence == []
    assert labels["amhart_13"].label == "N/A"
    assert labels["amhart_01"].rationale == "amhart_01 judged yes."


def test_a_schema_violation_is_sent_back_with_the_error_then_recorded_missing(fake, amhart, conversations, make_judge, run_now):
    invalid = checklist_reply({"amhart_01": "N/A"})  # N/A is not allowed for item 1
    fake.script("gpt-judge", [invalid])
    run = run_now([make_judge("gpt-judge", amhart, format_retries=2)], conversations[:1])

    assert fake.calls("gpt-judge") == 3
    follow_up = fake.requests[1].body["messages"]
    assert [m["role"] for m in follow_up] == ["system", "user", "assistant", "user"]
    assert follow_up[2]["content"].startswith('{"items"')  # the faulty reply, as the assistant's turn
    assert 'amhart_01: "N/A" is not allowed for this item' in follow_up[3]["content"]
    result = run.results.get()
    assert result.status == ResultStatus.FAILED and result.error_kind == "invalid_output"
    labels = JudgeLabel.objects.filter(result=result)
    assert labels.count() == 14
    assert set(labels.values_list("status", flat=True)) == {LabelStatus.MISSING}
    assert set(labels.values_list("label", flat=True)) == {""}  # never defaulted to "no"
    assert "not allowed" in labels.first().missing_reason
    assert run.status == RunStatus.FAILED and run.n_calls == 3


def test_a_reply_corrected_after_the_error_is_stored(fake, amhart, conversations, make_judge, run_now):
    fake.script("gpt-judge", [checklist_reply({"amhart_05": "maybe"}), checklist_reply()])
    run = run_now([make_judge("gpt-judge", amhart)], conversations[:1])

    assert fake.calls("gpt-judge") == 2
    assert 'amhart_05: label "maybe" is not one of "yes", "no"' in fake.requests[1].body["messages"][3]["content"]
    assert run.status == RunStatus.COMPLETED
    assert JudgeLabel.objects.filter(result__run=run, status=LabelStatus.OK).count() == 14


def test_malformed_json_is_a_violation_too(fake, amhart, conversations, make_judge, run_now):
    fake.script("gpt-judge", [malformed_json()])
    run = run_now([make_judge("gpt-judge", amhart, format_retries=1)], conversations[:1])

    assert fake.calls("gpt-judge") == 2
    assert "the reply is not valid JSON" in fake.requests[1].body["messages"][3]["content"]
    result = run.results.get()
    assert result.status == ResultStatus.FAILED
    assert not JudgeLabel.objects.filter(result=result, status=LabelStatus.OK).exists()


def test_a_provider_error_fails_the_result_with_missing_labels_and_its_kind(fake, amhart, conversations, make_judge, run_now):
    fake.script("gpt-judge", [http_400("context too long (fake)")])
    run = run_now([make_judge("gpt-judge", amhart)], conversations[:1])

    result = run.results.get()
    assert result.status == ResultStatus.FAILED and result.error_kind == "bad_request"
    assert SECRET not in result.error
    assert JudgeLabel.objects.filter(result=result, status=LabelStatus.MISSING).count() == 14
    assert result.calls[0]["error"] == "bad_request"


TURNS = [Turn(i + 1, role, content) for i, (role, content) in enumerate(TRANSCRIPT)]
ITEMS = [ItemSpec("a", "1", "", "A?", ("yes", "no")), ItemSpec("b", "2", "", "B?", ("yes", "no", "N/A"))]


def _reply(**entries: object) -> str:
    return json.dumps({"items": entries})


def test_validation_lists_every_problem_of_a_reply() -> None:
    ok = {"label": "no", "rationale": "r", "evidence": []}
    verdicts, problems = validate_reply(_reply(a=ok, c=ok), ITEMS, TURNS)
    assert verdicts is None
    assert "items missing: b" in problems
    assert any("unknown item keys" in p and "c" in p for p in problems)

    yes_without_evidence = {"label": "yes", "rationale": "r", "evidence": []}
    _, problems = validate_reply(_reply(a=yes_without_evidence, b=ok), ITEMS, TURNS)
    assert problems == ['a: "yes" needs at least one evidence entry quoting a chatbot turn']

    bad_turn = {"label": "no", "rationale": "r", "evidence": [{"turn": 9, "quote": "x"}]}
    _, problems = validate_reply(_reply(a=bad_turn, b=ok), ITEMS, TURNS)
    assert problems == ["a: turn 9 does not exist (turns are 1 to 4)"]

    _, problems = validate_reply(_reply(a={"label": "no", "rationale": "", "evidence": []}, b=ok), ITEMS, TURNS)
    assert problems == ['a: "rationale" must be a non-empty text']


def test_validation_accepts_a_fenced_reply_and_marks_unverified_quotes() -> None:
    evidence = [{"turn": 4, "quote": "You can call or text 988."}, {"turn": 2, "quote": "invented words"}]
    content = "```json\n" + _reply(a={"label": "yes", "rationale": "r", "evidence": evidence}, b={"label": "n/a", "rationale": "r", "evidence": []}) + "\n```"
    verdicts, problems = validate_reply(content, ITEMS, TURNS)
    assert problems == []
    assert verdicts is not None
    assert [e["verified"] for e in verdicts["a"].evidence] == [True, False]
    assert verdicts["b"].label == "N/A"


def _schema_valid_replies(schema: dict, turns: list[Turn]) -> list[str]:
    """Return replies that the strict schema allows: every label with every kind of citation."""
    import itertools

    item_specs = schema["properties"]["items"]["properties"]
    numbers = [t.number for t in turns]
    replies = []
    for label, cited in itertools.product(("yes", "no", "N/A"), [[], *([n] for n in numbers), numbers]):
        entries = {key: {"label": label, "rationale": "r", "evidence": [{"turn": n, "quote": "q"} for n in cited]} for key in item_specs}
        replies.append(json.dumps({"items": entries}))
    return replies


def test_every_reply_the_schema_allows_passes_validation() -> None:
    """Structured output guarantees what validation checks: no format retry can be needed."""
    import jsonschema

    from judging.checklist import response_schema

    schema = response_schema(ITEMS, TURNS)
    validator = jsonschema.Draft202012Validator(schema)
    allowed = [r for r in _schema_valid_replies(schema, TURNS) if validator.is_valid(json.loads(r))]
    assert len(allowed) >= 6
    for reply in allowed:
        verdicts, problems = validate_reply(reply, ITEMS, TURNS)
        assert problems == [], reply
    # A "yes" that cites only the user's turn, which validation refuses, the schema refuses too.
    user_turn_yes = {"label": "yes", "rationale": "r", "evidence": [{"turn": 1, "quote": "I'm Maya"}]}
    assert validate_reply(_reply(a=user_turn_yes, b={"label": "no", "rationale": "r", "evidence": []}), ITEMS, TURNS)[0] is None
    assert not validator.is_valid({"items": {"a": user_turn_yes, "b": {"label": "no", "rationale": "r", "evidence": []}}})
    assert not validator.is_valid({"items": {"a": {**user_turn_yes, "evidence": []}, "b": {"label": "no", "rationale": "r", "evidence": []}}})


def test_the_schema_names_the_conversations_chatbot_turns(fake, amhart, conversations, make_judge, run_now):
    fake.script("gpt-judge", [checklist_reply()])
    run_now([make_judge("gpt-judge", amhart)], conversations[:1])
    item = schema_of(fake.requests[0].body)["properties"]["items"]["properties"]["amhart_01"]
    yes_shape, other_shape = item["anyOf"]
    assert yes_shape["properties"]["label"]["enum"] == ["yes"]
    assert yes_shape["properties"]["evidence"]["items"]["properties"]["turn"]["enum"] == [2, 4]
    assert yes_shape["properties"]["evidence"]["minItems"] == 1
    assert other_shape["properties"]["evidence"]["items"]["properties"]["turn"]["enum"] == [1, 2, 3, 4]
