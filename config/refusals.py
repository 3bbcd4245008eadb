"""The settings' refusal to start: a value in the environment that this deployment must
change before any process runs.  ``manage.py`` prints its message alone (no traceback:
nothing is broken, a variable is missing or wrong) and exits 2."""
from __future__ import annotations

from django.core.exceptions import ImproperlyConfigured


class SettingsRefused(ImproperlyConfigured):
    """A setting read from the environment cannot be used; the message says which and what to set."""
