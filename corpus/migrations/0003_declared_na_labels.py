"""Instruments and items declare which answers mean "not applicable" (issue 11).

Question flows get ``["Not Relevant"]``: a VERA-MH dimension skipped by the flow is not
applicable, never an ordinary category. Checklist items keep an empty declaration and fall
back to their scale (``Item.not_applicable_labels``).
"""

from django.db import migrations, models


def flows_declare_not_relevant(apps, schema_editor):  # type: ignore[no-untyped-def]
    Instrument = apps.get_model("corpus", "Instrument")
    for instrument in Instrument.objects.filter(kind="flow"):
        if not instrument.na_labels:
            instrument.na_labels = ["Not Relevant"]
            instrument.save(update_fields=["na_labels"])


class Migration(migrations.Migration):
    dependencies = [("corpus", "0002_content_warning_from_the_transcript")]

    operations = [
        migrations.AddField(
            model_name="instrument",
            name="na_labels",
            field=models.JSONField(blank=True, default=list),
        ),
        migrations.AddField(
            model_name="item",
            name="na_labels",
            field=models.JSONField(blank=True, default=list),
        ),
        migrations.RunPython(flows_declare_not_relevant, migrations.RunPython.noop),
    ]
