"""``manage.py flush`` that can empty the audit log too.

Flushing removes every row of every table on purpose (tests that commit use it
between tests). The audit log's append-only triggers would refuse that, so this
command drops them for the flush and creates them again afterwards, whether the
flush succeeded or not. Nothing else lifts them.
"""
from django.core.management.commands.flush import Command as DjangoFlush
from django.db import DEFAULT_DB_ALIAS, connections

from studies.audit_triggers import create_triggers, drop_triggers, installed


class Command(DjangoFlush):
    help = (f"{DjangoFlush.help} The audit log is emptied too: its append-only triggers are dropped for "
            "the flush and created again afterwards.")

    def handle(self, **options):
        connection = connections[options.get("database") or DEFAULT_DB_ALIAS]
        if not installed(connection):
            return super().handle(**options)
        drop_triggers(connection)
        try:
            return super().handle(**options)
        finally:
            create_triggers(connection)
