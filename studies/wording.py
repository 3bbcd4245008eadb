"""How the studies pages write counts ("1 cell", "2 cells")."""
from __future__ import annotations


def plural(n: int, singular: str, plural_form: str = "") -> str:
    """The noun for ``n`` of it: ``singular`` for 1 (or -1), else ``plural_form`` (``singular + "s"``
    unless given)."""
    return singular if abs(n) == 1 else (plural_form or singular + "s")


def counted(n: int, singular: str, plural_form: str = "") -> str:
    """``n`` and its noun: ``counted(1, "cell")`` is "1 cell", ``counted(2, "cell")`` "2 cells"."""
    return f"{n} {plural(n, singular, plural_form)}"

