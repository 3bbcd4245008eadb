"""The audit log becomes append-only in the database (see :mod:`studies.audit_triggers`)."""
from django.db import migrations

from studies.audit_triggers import create_triggers, drop_triggers


def create(apps, schema_editor):
    create_triggers(schema_editor.connection)


def drop(apps, schema_editor):
    drop_triggers(schema_editor.connection)


class Migration(migrations.Migration):
    dependencies = [("studies", "0001_initial")]
    operations = [migrations.RunPython(create, drop)]
