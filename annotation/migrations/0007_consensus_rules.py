"""Consensus rules (issue 11): a minimum number of ratings per item, provisional consensus.

Labels computed before from a single rating were called "unanimous"; under the new default
(two ratings) they have no consensus, so they become "too_few" with no label (adjudicated
labels are kept: a person decided them).
"""

from django.db import migrations, models


def single_ratings_are_too_few(apps, schema_editor):  # type: ignore[no-untyped-def]
    ConsensusLabel = apps.get_model("annotation", "ConsensusLabel")
    ConsensusLabel.objects.filter(n_ratings__lt=2).exclude(provenance="adjudicated").update(
        provenance="too_few", label=""
    )


class Migration(migrations.Migration):

    dependencies = [
        ('annotation', '0006_external_raters'),
    ]

    operations = [
        migrations.AddField(
            model_name='consensuslabel',
            name='n_expected',
            field=models.PositiveSmallIntegerField(default=0),
        ),
        migrations.AddField(
            model_name='consensuslabel',
            name='provisional',
            field=models.BooleanField(default=False),
        ),
        migrations.AddField(
            model_name='study',
            name='min_ratings_for_consensus',
            field=models.PositiveSmallIntegerField(default=2, help_text='Ratings an item needs before it has a consensus'),
        ),
        migrations.AlterField(
            model_name='consensuslabel',
            name='provenance',
            field=models.CharField(choices=[('unanimous', 'Unanimous'), ('majority', 'Majority'), ('plurality', 'Plurality (most frequent, no majority)'), ('tie_break', 'Tie broken by the senior rater'), ('adjudicated', 'Adjudicated'), ('unresolved', 'Unresolved (needs adjudication)'), ('single', 'Single rating (the study asks for one)'), ('too_few', 'Too few ratings (no consensus)')], max_length=20),
        ),
        migrations.RunPython(single_ratings_are_too_few, migrations.RunPython.noop),
    ]
