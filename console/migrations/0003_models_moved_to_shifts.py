"""The shift models now live in ``shifts`` (see ``shifts/migrations/0001``): removed
from the console's state only; the tables stay, under their ``console_`` names."""

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('console', '0002_pause_briefing_timeline'),
        ('shifts', '0001_initial'),
        ('studies', '0002_attempt_shift_in_shifts_app'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(state_operations=[
            migrations.DeleteModel(name='ShiftCall'),
            migrations.DeleteModel(name='ShiftPause'),
            migrations.DeleteModel(name='BriefingAcknowledgement'),
            migrations.DeleteModel(name='Shift'),
        ]),
    ]
