"""How the studies pages write counts ("1 cell", "2 cells"), money and stored JSON for people."""
from __future__ import annotations

import json

from environment.tools.format import usd_pretty


def plural(n: int, singular: str, plural_form: str = "") -> str:
    """The noun for ``n`` of it: ``singular`` for 1 (or -1), else ``plural_form`` (``singular + "s"``
    unless given)."""
    return singular if abs(n) == 1 else (plural_form or singular + "s")


def counted(n: int, singular: str, plural_form: str = "") -> str:
    """``n`` and its noun: ``counted(1, "cell")`` is "1 cell", ``counted(2, "cell")`` "2 cells"."""
    return f"{n} {plural(n, singular, plural_form)}"


def dollars(cents: int | None) -> str:
    """An amount in cents as the console's end page writes dollars: "$28,000.00", "-$12.50";
    "—" for none."""
    return "—" if cents is None else usd_pretty(int(cents))


def arguments_text(arguments: dict | None) -> str:
    """A call's arguments as the console's history writes them: compact JSON (``{"page_size": 100}``,
    ``true``/``false``, ``null``), nothing for none."""
    return json.dumps(arguments, separators=(", ", ": "), ensure_ascii=False) if arguments else ""


def detail_text(detail: dict | None) -> str:
    """An audit event's detail as "key: value" pairs ("filters: {"include_bots": false}; job: 1"):
    text as it is, anything else as compact JSON (``true``/``false``, ``null``).  Keys in
    alphabetical order: PostgreSQL's jsonb keeps its own order, SQLite the order written."""
    def value(v) -> str:
        return v if isinstance(v, str) else json.dumps(v, separators=(", ", ": "), ensure_ascii=False, sort_keys=True)

    return "; ".join(f"{k}: {value(v)}" for k, v in sorted((detail or {}).items()))
