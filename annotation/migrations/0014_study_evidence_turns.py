from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('annotation', '0013_active_sampling'),
    ]

    operations = [
        migrations.AddField(
            model_name='study',
            name='evidence_mode',
            field=models.CharField(choices=[('off', 'Off: raters do not cite turns'), ('per_item', 'Per item: raters cite the turns behind each answer'), ('whole_form', 'Whole form: raters cite the turns behind the rating as a whole')], default='off', help_text='Whether raters cite the transcript turns that support their answers', max_length=20),
        ),
        migrations.AddField(
            model_name='study',
            name='evidence_required',
            field=models.BooleanField(default=False, help_text='A rating cannot be submitted until its answers (or the form) cite a turn'),
        ),
    ]
