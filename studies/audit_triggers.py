"""Database triggers that make the audit log append-only (PostgreSQL and SQLite).

The ORM already refuses to change or delete an :class:`~studies.models.AuditEvent`;
these triggers refuse it in the database too, so a queryset ``update()``/``delete()``,
raw SQL or a cascade cannot change or drop an event either. Installed by migration
``0002_audit_append_only``. The only thing that lifts them is ``manage.py flush``,
which empties the whole database on purpose (``studies/management/commands/flush.py``
drops them for its run and puts them back).
"""
from __future__ import annotations

TABLE = "studies_auditevent"
MESSAGE = "the audit log is append-only: events cannot be changed or deleted"

_POSTGRES_CREATE = [
    f"""CREATE OR REPLACE FUNCTION studies_auditevent_append_only() RETURNS trigger AS $$
BEGIN
    RAISE EXCEPTION '{MESSAGE}' USING ERRCODE = 'integrity_constraint_violation';
END;
$$ LANGUAGE plpgsql""",
    f"CREATE TRIGGER studies_auditevent_no_update BEFORE UPDATE ON {TABLE} "
    "FOR EACH ROW EXECUTE FUNCTION studies_auditevent_append_only()",
    f"CREATE TRIGGER studies_auditevent_no_delete BEFORE DELETE ON {TABLE} "
    "FOR EACH ROW EXECUTE FUNCTION studies_auditevent_append_only()",
    f"CREATE TRIGGER studies_auditevent_no_truncate BEFORE TRUNCATE ON {TABLE} "
    "FOR EACH STATEMENT EXECUTE FUNCTION studies_auditevent_append_only()",
]
_POSTGRES_DROP = [
    f"DROP TRIGGER IF EXISTS studies_auditevent_no_update ON {TABLE}",
    f"DROP TRIGGER IF EXISTS studies_auditevent_no_delete ON {TABLE}",
    f"DROP TRIGGER IF EXISTS studies_auditevent_no_truncate ON {TABLE}",
]
_SQLITE_CREATE = [
    f"CREATE TRIGGER studies_auditevent_no_update BEFORE UPDATE ON {TABLE} "
    f"BEGIN SELECT RAISE(ABORT, '{MESSAGE}'); END",
    f"CREATE TRIGGER studies_auditevent_no_delete BEFORE DELETE ON {TABLE} "
    f"BEGIN SELECT RAISE(ABORT, '{MESSAGE}'); END",
]
_SQLITE_DROP = [
    "DROP TRIGGER IF EXISTS studies_auditevent_no_update",
    "DROP TRIGGER IF EXISTS studies_auditevent_no_delete",
]


def _statements(vendor: str, create: bool) -> list[str]:
    if vendor == "postgresql":
        return _POSTGRES_CREATE if create else _POSTGRES_DROP
    if vendor == "sqlite":
        return _SQLITE_CREATE if create else _SQLITE_DROP
    raise NotImplementedError(f"no append-only audit trigger for the {vendor} database")


def create_triggers(connection) -> None:
    with connection.cursor() as cursor:
        for statement in _statements(connection.vendor, create=True):
            cursor.execute(statement)


def drop_triggers(connection) -> None:
    with connection.cursor() as cursor:
        for statement in _statements(connection.vendor, create=False):
            cursor.execute(statement)


def installed(connection) -> bool:
    """Whether the update trigger is in place (the table may not exist yet)."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SELECT 1 FROM pg_trigger WHERE tgname = 'studies_auditevent_no_update'")
        else:
            cursor.execute("SELECT 1 FROM sqlite_master WHERE type = 'trigger' "
                           "AND name = 'studies_auditevent_no_update'")
        return cursor.fetchone() is not None
