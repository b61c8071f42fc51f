"""Forms that help, in Chromium: "Import now" after a clean dry run on every import page, the
chatbot form (HTTP-only settings, errors beside fields, with and without JavaScript), the live
count of the new-study form after an error, searchable checkbox lists on the judge-run form."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import expect

from annotation.models import Rating, Study
from core.models import StagedUpload
from core.roles import Role
from corpus.models import Conversation, Instrument, PersonaSet, Target
from judging.services import judge_create
from tests.annotation.coordinator_setup import instruments, make_study
from tests.browser.conftest import LAUNCH_ARGS, log_in, screenshot
from tests.conftest import PASSWORD, make_user
from tests.factories import ConversationFactory, PersonaSetFactory, TargetFactory

pytestmark = pytest.mark.django_db(transaction=True)
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def upload_and_check(page, path: Path, **selects: str) -> None:  # type: ignore[no-untyped-def]
    page.set_input_files("#id_file", str(path))
    for name, value in selects.items():
        page.select_option(f"#id_{name}", value)
    page.check("#id_dry_run")
    with page.expect_navigation():
        page.click("button:has-text('Upload')")


def import_now(page) -> None:  # type: ignore[no-untyped-def]
    expect(page.locator("#import-now")).to_be_visible()
    expect(page.locator("#id_dry_run")).not_to_be_checked()  # the next upload is not silently a dry run
    with page.expect_navigation():
        page.click("#import-now")


def test_every_import_page_imports_a_checked_file_without_a_second_upload(page, tmp_path):
    make_user("remy", Role.RESEARCHER)
    log_in(page, "remy", PASSWORD)
    personas_yaml = FIXTURES / "conversations" / "personas.yaml"

    # Personas first (the conversations name them).
    page.goto("/corpus/import/personas/")
    upload_and_check(page, personas_yaml)
    expect(page.locator(".success")).to_contain_text("Checked 2 of 2 persona(s)")
    assert not PersonaSet.objects.exists()
    import_now(page)
    expect(page.locator(".success")).to_contain_text("Imported 2 of 2 persona(s)")
    assert PersonaSet.objects.count() == 1

    # Conversations: a bad file gets the grouped problem report and no offer.
    page.goto("/corpus/import/conversations/")
    bad = tmp_path / "bad.jsonl"
    line = '{{"id": "b{}", "messages": [{{"role": "user", "content": ""}}]}}'
    bad.write_text("\n".join(line.format(i) for i in range(30)) + "\n")
    upload_and_check(page, bad)
    expect(page.locator(".problems h2")).to_contain_text("Nothing was imported: 30 problems, counted by kind")
    assert page.locator("#import-now").count() == 0
    expect(page.locator("#id_dry_run")).to_be_checked()  # still checking: the fixed file will be checked again
    screenshot(page, "import-conversations-problems")
    upload_and_check(page, FIXTURES / "conversations" / "two.jsonl", format="jsonl")
    expect(page.locator(".success")).to_contain_text("Would import 2 conversation(s)")
    expect(page.locator(".import-now")).to_contain_text("two.jsonl")
    expect(page.locator(".import-now")).to_contain_text("evalsite JSONL")  # imported as checked
    expect(page.locator("#id_format")).to_have_value("jsonl")
    screenshot(page, "import-conversations-import-now")
    assert Conversation.objects.count() == 0
    import_now(page)
    expect(page.locator(".success")).to_contain_text("Imported 2 conversation(s)")
    assert Conversation.objects.count() == 2 and not StagedUpload.objects.exists()
    screenshot(page, "import-conversations-imported")

    # Instruments.
    page.goto("/import/instruments/")
    page.fill("#id_key", "small-flow")
    upload_and_check(page, FIXTURES / "vera" / "rubric_small.tsv", format="vera-mh")
    expect(page.locator(".success")).to_contain_text("The file is valid")
    import_now(page)
    expect(page.locator(".success")).to_contain_text("Imported")
    assert Instrument.objects.filter(key="small-flow").exists()


def test_the_ratings_import_page_imports_a_checked_file(page, tmp_path):
    coordinator = make_user("cora", Role.COORDINATOR)
    raters = [make_user(n, Role.CLINICIAN) for n in ("clara", "cyrus")]
    study = make_study(coordinator, raters, conversations=[ConversationFactory(code="C-A"), ConversationFactory(code="C-B")])
    ratings = tmp_path / "ratings.csv"
    ratings.write_text("unit,rater,item,label\nC-A,clara,amhart_01,yes\nC-A,cyrus,amhart_01,no\nC-B,clara,amhart_01,yes\n")
    log_in(page, "cora", PASSWORD)
    page.goto(f"/studies/{study.pk}/import-ratings/")
    upload_and_check(page, ratings)
    expect(page.locator(".success")).to_contain_text("Valid: 3 rows")
    screenshot(page, "import-ratings-import-now")
    import_now(page)
    expect(page.locator(".success")).to_contain_text("Imported 3 rows")
    assert Rating.objects.count() == 3
    # The kept file went with its import: the browser's back button cannot import it twice.
    page.go_back()
    with page.expect_navigation():
        page.click("#import-now")
    expect(page.locator(".problems")).to_contain_text("no longer kept")
    assert Rating.objects.count() == 3


def test_the_chatbot_form_shows_http_settings_only_for_http_chatbots(page, chromium_browser, live_server):
    make_user("remy", Role.RESEARCHER)
    log_in(page, "remy", PASSWORD)
    page.goto("/corpus/chatbots/new/")
    expect(page.locator("label[for=id_api_key_env]")).to_have_text("API key variable (optional)")
    expect(page.locator("#field-api_key_env .helptext")).to_contain_text("*_API_KEY or *_API_TOKEN")
    expect(page.locator("#http-only")).to_be_hidden()
    screenshot(page, "chatbot-form-litellm")
    page.select_option("#id_kind", "http")
    expect(page.locator("#http-only")).to_be_visible()
    expect(page.locator("#http-only legend")).to_have_text("HTTP chatbots only")
    expect(page.locator("#id_request_template")).to_have_value('{"messages": "{{messages}}"}')
    screenshot(page, "chatbot-form-http")

    # A refused key variable: the reason beside its field, the top summary links to it.
    page.select_option("#id_kind", "litellm")
    page.fill("#id_model", "openai/gpt-4o")
    page.fill("#id_api_key_env", "DJANGO_SECRET_KEY")
    with page.expect_navigation():
        page.click("button:has-text('Add chatbot')")
    expect(page.locator("#field-api_key_env .error")).to_contain_text("holds a secret of evalsite")
    expect(page.locator(".problems a[href='#field-api_key_env']")).to_be_visible()
    expect(page.locator("#http-only")).to_be_hidden()
    screenshot(page, "chatbot-form-error")
    page.fill("#id_api_key_env", "OPENAI_API_KEY")
    with page.expect_navigation():
        page.click("button:has-text('Add chatbot')")
    expect(page.locator(".messages")).to_contain_text("added")
    assert Target.objects.get().api_key_env == "OPENAI_API_KEY"

    # Without JavaScript every field shows, and the group says when it applies.
    context = chromium_browser.new_context(base_url=live_server.url, java_script_enabled=False)
    plain = context.new_page()
    log_in(plain, "remy", PASSWORD)
    plain.goto("/corpus/chatbots/new/")
    expect(plain.locator("#http-only")).to_be_visible()
    expect(plain.locator("#http-only legend")).to_have_text("HTTP chatbots only")
    screenshot(plain, "chatbot-form-no-javascript", a11y=False)
    context.close()
    assert LAUNCH_ARGS  # the same Chromium flags as every browser test


def test_the_new_study_count_survives_an_error(page, tmp_path):
    instruments()
    make_user("cora", Role.COORDINATOR)
    rater = make_user("clara", Role.CLINICIAN)
    for n in range(7):
        make_user(f"rater{n}", Role.CLINICIAN)
    chatbot = TargetFactory(code="T-KIND", model="provider/kind-bot")
    mine = [ConversationFactory(target=chatbot) for _ in range(7)]
    ConversationFactory.create_batch(3)
    log_in(page, "cora", PASSWORD)
    page.goto("/studies/new/")
    page.fill("#id_name", "Count check")
    page.check(f"#field-targets input[value='{chatbot.pk}']")
    expect(page.locator("#selection-preview")).to_contain_text("7 conversations")
    with page.expect_navigation():  # no instrument, no rater: refused
        page.click("button:has-text('Create study')")
    expect(page.locator("#field-raters .error")).to_contain_text("Pick at least one rater")
    expect(page.locator("#selection-preview")).to_contain_text("7 conversations")
    expect(page.locator(f"#field-targets input[value='{chatbot.pk}']")).to_be_checked()
    screenshot(page, "study-form-error-keeps-count")
    page.uncheck(f"#field-targets input[value='{chatbot.pk}']")  # still live after the error
    expect(page.locator("#selection-preview")).to_contain_text("10 conversations")

    # A file of ids counts as soon as it is chosen, and its ids survive an error (a browser
    # cannot refill a file input).
    ids = tmp_path / "ids.csv"
    ids.write_text("conversation_id\n" + "\n".join(c.code for c in mine[:4]) + "\n")
    page.set_input_files("#id_codes_file", str(ids))
    expect(page.locator("#selection-preview")).to_contain_text("4 conversations")
    with page.expect_navigation():
        page.click("button:has-text('Create study')")
    expect(page.locator("#kept-file-ids")).to_contain_text("The 4 ids of the file you chose are kept")
    expect(page.locator("#selection-preview")).to_contain_text("4 conversations")
    screenshot(page, "study-form-error-keeps-file-ids")
    page.select_option("#id_instrument", label="AMHART: Adolescent Mental Health AI Response Tool (v1)")
    page.fill("#field-raters input[type=search]", "clar")  # eight clinicians: the rater list is searchable
    expect(page.locator("#field-raters tr[data-filter-item]:visible")).to_have_count(1)
    page.check(f"#id_rater_{rater.pk}")
    expect(page.locator("#field-raters [data-filter-count]")).to_contain_text("1 chosen")
    page.fill("#id_raters_per_conversation", "1")
    expect(page.locator("#selection-preview")).to_contain_text("4 conversations")
    with page.expect_navigation():
        page.click("button:has-text('Create study')")
    expect(page.locator(".messages")).to_contain_text("Study created with 4 conversations")
    study = Study.objects.get(name="Count check")
    assert set(study.study_conversations.values_list("conversation_id", flat=True)) == {c.pk for c in mine[:4]}


def test_the_judge_run_form_picks_from_searchable_checkbox_lists(page):
    amhart, _ = instruments()
    make_user("remy", Role.RESEARCHER)
    for n in range(8):
        judge_create(name=f"judge-{n}", instrument=amhart, model=f"openai/model-{n}", api_key_env="OPENAI_API_KEY")
    for n in range(8):
        PersonaSetFactory(key=f"clinic-{n}", name=f"Clinic set {n}")
    log_in(page, "remy", PASSWORD)
    page.goto("/judging/runs/new/")
    for field in ("judges", "persona_sets", "batches"):
        expect(page.locator(f"#field-{field} fieldset.check-list")).to_have_count(1)
    page.fill("#field-judges input[type=search]", "model-3")
    expect(page.locator("#field-judges label[data-filter-item]:visible")).to_have_count(1)
    page.check("#field-judges label[data-filter-item]:visible input")
    expect(page.locator("#field-judges [data-filter-count]")).to_contain_text("1 chosen")
    page.fill("#field-persona_sets input[type=search]", "clinic set 5")
    expect(page.locator("#field-persona_sets label[data-filter-item]:visible")).to_have_count(1)
    screenshot(page, "judge-run-form-lists")
