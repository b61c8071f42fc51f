from __future__ import annotations

from django import forms


class ConversationImportForm(forms.Form):
    file = forms.FileField(help_text="A .jsonl file, or a .zip holding VERA-MH run folders of transcripts")
    format = forms.ChoiceField(
        choices=[("auto", "Detect from file"), ("jsonl", "evalsite JSONL"), ("vera-mh", "VERA-MH transcripts")],
        initial="auto",
    )
    dry_run = forms.BooleanField(required=False, help_text="Check the file without importing")
