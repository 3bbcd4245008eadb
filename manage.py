#!/usr/bin/env python3
"""Django's command-line utility for administrative tasks."""
import os
import secrets
import sys

HELP = {"help", "--help", "-h"}


def asks_for_help(argv: list[str]) -> bool:
    """``manage.py help``, ``manage.py --help`` or ``manage.py COMMAND --help``: nothing runs."""
    return len(argv) > 1 and (argv[1] in HELP or any(arg in ("--help", "-h") for arg in argv[2:]))


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    if asks_for_help(sys.argv) and not os.environ.get("DJANGO_SECRET_KEY"):
        # Help signs nothing, but the settings refuse to load without a secret: one made
        # for this process lets every command explain itself on a machine not set up yet.
        os.environ["DJANGO_SECRET_KEY"] = secrets.token_urlsafe(50)
    from django.core.management import execute_from_command_line
    from django.db import OperationalError, ProgrammingError

    from config.refusals import SettingsRefused

    try:
        execute_from_command_line(sys.argv)
    except SettingsRefused as refusal:  # a variable to set or change: its message says which and how
        print(f"manage.py: {refusal}", file=sys.stderr)
        sys.exit(2)
    except (OperationalError, ProgrammingError) as error:
        if not missing_table(str(error)):
            raise
        print(f"manage.py: the database's schema is missing or out of date ({str(error).strip().splitlines()[0]}): run "
              "`manage.py migrate` first (`make run` and `make release` do)", file=sys.stderr)
        sys.exit(2)


def missing_table(message: str) -> bool:
    """Whether a database error says a table is missing (SQLite's and PostgreSQL's wording)."""
    return message.startswith("no such table:") or (message.startswith("relation ") and "does not exist" in message)


if __name__ == "__main__":
    main()
