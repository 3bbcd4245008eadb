"""The settings' refusal to start: a value in the environment that this deployment must
change before any process runs.  ``manage.py`` prints its message alone (no traceback:
nothing is broken, a variable is missing or wrong) and exits 2."""
from __future__ import annotations

import math
import os

from django.core.exceptions import ImproperlyConfigured


class SettingsRefused(ImproperlyConfigured):
    """A setting read from the environment cannot be used; the message says which and what to set."""


def env_number(name: str, default: str, *, kind: type[int] | type[float] = int, minimum: float | None = None) -> int | float:
    """The environment variable ``name`` (``default`` when unset) as a whole number (``kind=int``)
    or a number of seconds (``float``), at least ``minimum``; refused naming the variable, the
    value and what to give, where ``int()`` would end the process with a traceback."""
    text = os.environ.get(name, default).strip()
    what = "a whole number" if kind is int else "a number"
    try:
        value = kind(text)
    except ValueError:
        raise SettingsRefused(f"{name} must be {what}, not {text!r}: set it to {what} (e.g. {default}) or unset it "
                              f"for the default, {default}") from None
    if not math.isfinite(value) or (minimum is not None and value < minimum):
        floor = f"at least {minimum:g}" if minimum is not None else "finite"
        raise SettingsRefused(f"{name} must be {floor}, not {text!r}: set it to {what} (e.g. {default}) or unset it "
                              f"for the default, {default}")
    return value
