from __future__ import annotations

from django import forms


class PersonaImportForm(forms.Form):
    file = forms.FileField(help_text="A VERA-MH personas .tsv, or an evalsite persona set .yaml/.json")
    format = forms.ChoiceField(
        choices=[("auto", "Detect from file"), ("vera-mh", "VERA-MH TSV"), ("yaml", "evalsite YAML/JSON")],
        initial="auto",
    )
    key = forms.SlugField(required=False, help_text="Key of the persona set (VERA-MH files)")
    name = forms.CharField(required=False, max_length=200)
    valid_only = forms.BooleanField(
        required=False, help_text="Import the valid rows and skip rows with errors (they are listed)"
    )
    dry_run = forms.BooleanField(required=False, help_text="Check the file without importing")
