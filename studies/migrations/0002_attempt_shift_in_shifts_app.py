"""An attempt's shift is now ``shifts.Shift`` (the same table: state only)."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('shifts', '0001_initial'),
        ('studies', '0001_initial'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(state_operations=[
            migrations.AlterField(
                model_name='attempt',
                name='shift',
                field=models.OneToOneField(on_delete=django.db.models.deletion.PROTECT, related_name='study_attempt', to='shifts.shift'),
            ),
        ]),
    ]
