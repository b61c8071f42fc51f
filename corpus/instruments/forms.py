from __future__ import annotations

from django import forms


class InstrumentImportForm(forms.Form):
    file = forms.FileField(help_text="A VERA-MH rubric .tsv, or an evalsite instrument .yaml/.json")
    format = forms.ChoiceField(
        choices=[("auto", "Detect from file"), ("vera-mh", "VERA-MH rubric TSV"), ("yaml", "evalsite YAML/JSON")],
        initial="auto",
    )
    key = forms.SlugField(required=False, help_text="Key of the instrument (VERA-MH rubrics)")
    name = forms.CharField(required=False, max_length=200)
    dry_run = forms.BooleanField(required=False, help_text="Check the file without importing")
