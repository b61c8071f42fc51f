"""Persona importers: VERA-MH TSV with every controlled field checked, and evalsite YAML."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from core.problems import ImportRejected
from corpus.models import Persona, PersonaSet
from corpus.personas.services import builtin_personas_load, personas_import
from tests.conftest import client_for

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
PUBLISHED = Path(__file__).resolve().parents[3] / "shared" / "vera-mh-v1.1" / "personas.tsv"


def test_vera_personas_import_keeps_design_labels_apart_from_the_card(db):
    call_command("import_personas", str(FIXTURES / "vera" / "personas_small.tsv"), "--key", "small")
    persona_set = PersonaSet.objects.get(key="small")
    assert persona_set.format == PersonaSet.Format.VERA_MH
    quilla = persona_set.personas.get(name="Quilla")
    assert quilla.design["risk"] == "High"
    assert quilla.profile["Final Seed Phrase"] == quilla.opening_message
    assert "Background" in quilla.profile


def test_a_bad_controlled_value_rejects_the_file_naming_row_and_column(db, capsys):
    with pytest.raises(CommandError):
        call_command("import_personas", str(FIXTURES / "vera" / "personas_bad.tsv"))
    err = capsys.readouterr().err
    assert "line 3, column Financial Stress" in err and "line 4, column Diagnoses and Symptoms" in err
    assert PersonaSet.objects.count() == 0


def test_valid_only_imports_the_good_rows_and_lists_the_rest(db, capsys):
    call_command("import_personas", str(FIXTURES / "vera" / "personas_bad.tsv"), "--valid-only")
    assert list(Persona.objects.values_list("name", flat=True)) == ["Marlowe"]
    assert capsys.readouterr().err.count("skipped:") == 2


def test_dry_run_writes_nothing(db):
    call_command("import_personas", str(FIXTURES / "vera" / "personas_small.tsv"), "--dry-run")
    assert PersonaSet.objects.count() == 0


def test_yaml_persona_set_versions_on_change_and_reuses_identical_content(db):
    text = (FIXTURES / "conversations" / "personas.yaml").read_text()
    first = personas_import(text=text, file="p.yaml")
    again = personas_import(text=text, file="p.yaml")
    assert first.created and not again.created and again.persona_set == first.persona_set
    changed = personas_import(text=text.replace('"Ari"', '"Arin"'), file="p.yaml")
    assert changed.created and changed.persona_set.version == 2


@pytest.mark.parametrize(
    ("text", "line", "column"),
    [
        ("key: k\nname: n\npersonas:\n  - key: a\n    name: A\n  - key: a\n    name: B\n", 6, "personas.1.key"),
        ("key: k\nname: n\npersonas:\n  - key: a\n    design: [x]\n    name: A\n", 5, "personas.0.design"),
        ("key: k\nname: n\nformat: amhart\npersonas:\n  - key: a\n    name: A\n", 5, "personas.0.opening_message"),
        ("key: k\nname: n\npersonas: [\n", 4, None),
    ],
)
def test_yaml_persona_problems_name_the_line(db, text, line, column):
    with pytest.raises(ImportRejected) as excinfo:
        personas_import(text=text, file="p.yaml")
    assert any(p.line == line and p.column == column for p in excinfo.value.problems), excinfo.value.problems


def test_builtin_amhart_cards_cover_the_design(db):
    persona_set = builtin_personas_load()
    cells = {(p.design["sex"], p.design["concern"], p.design["severity"]) for p in persona_set.personas.all()}
    assert len(cells) == 8
    assert cells == {(s, c, v) for s in ("female", "male") for c in ("anxiety", "depression") for v in ("moderate", "severe")}
    for persona in persona_set.personas.all():
        assert 13 <= persona.profile["age"] <= 17
        assert persona.opening_message.endswith("What advice do you have for me?")
    assert builtin_personas_load() == persona_set  # idempotent


def test_api_persona_import_with_valid_only(researcher):
    with open(FIXTURES / "vera" / "personas_bad.tsv", "rb") as fh:
        response = client_for(researcher).post("/api/v1/imports/personas/", {"file": fh, "valid_only": "true"})
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["imported_rows"] == 1 and body["total_rows"] == 3 and len(body["skipped"]) == 2


@pytest.mark.skipif(not PUBLISHED.exists(), reason=f"published VERA-MH v1.1 personas not found at {PUBLISHED}")
def test_published_personas_import_with_valid_only_skips_exactly_the_bad_rows(db):
    with pytest.raises(ImportRejected) as excinfo:
        personas_import(text=PUBLISHED.read_text(encoding="utf-8"), file="personas.tsv")
    assert len(excinfo.value.problems) == 5
    result = personas_import(text=PUBLISHED.read_text(encoding="utf-8"), file="personas.tsv", valid_only=True)
    assert result.total_rows == 100 and result.imported_rows == 95
    assert {p.line for p in result.skipped} == {8, 19, 47, 48, 90}
