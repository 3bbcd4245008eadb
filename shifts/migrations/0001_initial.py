"""The shift models move here from ``console`` without touching the database: the
tables keep their ``console_`` names (``Meta.db_table``), only Django's state moves
(``console/migrations/0003`` removes them from the console's state)."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ('console', '0002_pause_briefing_timeline'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    state_operations = [
        migrations.CreateModel(
            name='Shift',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('task_id', models.CharField(max_length=64)),
                ('seed', models.IntegerField()),
                ('status', models.CharField(choices=[('assigned', 'Assigned'), ('active', 'Active'), ('paused', 'Paused'), ('ended', 'Ended')], default='assigned', max_length=16)),
                ('is_practice', models.BooleanField(default=False)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('started_at', models.DateTimeField(blank=True, null=True)),
                ('ended_at', models.DateTimeField(blank=True, null=True)),
                ('deadline', models.DateTimeField(blank=True, null=True)),
                ('end_reason', models.CharField(blank=True, max_length=200)),
                ('release', models.CharField(blank=True, max_length=40)),
                ('score_composite', models.DecimalField(blank=True, decimal_places=6, max_digits=12, null=True)),
                ('passed', models.BooleanField(blank=True, null=True)),
                ('score_components', models.JSONField(blank=True, default=dict)),
                ('calibration_source', models.CharField(blank=True, max_length=80)),
                ('calibration_hash', models.CharField(blank=True, max_length=80)),
                ('wall_seconds', models.PositiveIntegerField(default=0)),
                ('active_seconds', models.PositiveIntegerField(default=0)),
                ('paused_seconds', models.PositiveIntegerField(default=0)),
                ('timeline', models.JSONField(blank=True, default=list)),
                ('participant', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='shifts', to=settings.AUTH_USER_MODEL)),
            ],
            options={
                'db_table': 'console_shift',
                'ordering': ['-created_at', '-id'],
            },
        ),
        migrations.CreateModel(
            name='ShiftCall',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('seq', models.PositiveIntegerField()),
                ('call_id', models.CharField(max_length=64)),
                ('tool', models.CharField(max_length=64)),
                ('arguments', models.JSONField(blank=True, default=dict)),
                ('result_text', models.TextField()),
                ('is_error', models.BooleanField(default=False)),
                ('reached_core', models.BooleanField(default=True)),
                ('header', models.CharField(blank=True, max_length=300)),
                ('window', models.PositiveIntegerField(blank=True, null=True)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('shift', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='calls', to='shifts.shift')),
            ],
            options={
                'db_table': 'console_shiftcall',
                'ordering': ['shift', 'seq'],
                'constraints': [models.UniqueConstraint(fields=('shift', 'seq'), name='shiftcall_unique_seq'), models.UniqueConstraint(fields=('shift', 'call_id'), name='shiftcall_unique_call_id')],
            },
        ),
        migrations.CreateModel(
            name='ShiftPause',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('reason', models.CharField(max_length=200)),
                ('started_at', models.DateTimeField()),
                ('ended_at', models.DateTimeField(blank=True, null=True)),
                ('shift', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='pauses', to='shifts.shift')),
            ],
            options={
                'db_table': 'console_shiftpause',
                'ordering': ['shift', 'started_at', 'id'],
            },
        ),
        migrations.CreateModel(
            name='BriefingAcknowledgement',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('version', models.CharField(max_length=40)),
                ('acknowledged_at', models.DateTimeField()),
                ('user', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='briefing_acknowledgements', to=settings.AUTH_USER_MODEL)),
            ],
            options={
                'db_table': 'console_briefingacknowledgement',
                'constraints': [models.UniqueConstraint(fields=('user', 'version'), name='briefing_ack_unique_version')],
            },
        ),
    ]

    operations = [migrations.SeparateDatabaseAndState(state_operations=state_operations)]
