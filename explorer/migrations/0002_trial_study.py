"""Human trials name their study, so a withdrawal can remove them.

Trials imported before keep a blank study unless their folder is still where it was
imported from (its summary.json naming the same participant): the study is then read from
it.  Importing a folder again also gives its trial the study it names.
"""
import json
from pathlib import Path

from django.db import migrations, models


def study_from_folders(apps, schema_editor):
    Trial = apps.get_model("explorer", "Trial")
    for trial in Trial.objects.filter(player_kind="human", study="").only("pk", "source_path", "player"):
        try:
            summary = json.loads((Path(trial.source_path) / "summary.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if not isinstance(summary, dict) or str(summary.get("participant"))[:200] != trial.player:
            continue  # the folder there now is another trial's
        study = summary.get("study")
        if isinstance(study, str) and study:
            Trial.objects.filter(pk=trial.pk).update(study=study[:120])


class Migration(migrations.Migration):

    dependencies = [
        ('explorer', '0001_initial'),
    ]

    operations = [
        migrations.AddField(
            model_name='trial',
            name='study',
            field=models.CharField(blank=True, max_length=120),
        ),
        migrations.AddIndex(
            model_name='trial',
            index=models.Index(fields=['study', 'player'], name='explorer_trial_person'),
        ),
        migrations.RunPython(study_from_folders, migrations.RunPython.noop),
    ]
