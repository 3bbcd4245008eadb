"""How the studies pages write counts ("1 cell", "2 cells"), durations ("0:02:23"), money, score
components and stored JSON for people."""
from __future__ import annotations

import json
from decimal import ROUND_HALF_EVEN, ROUND_HALF_UP, Decimal, InvalidOperation

from environment.tools.format import usd_pretty
from shifts.clock import hms
from shifts.grading import COMPONENT_NAMES


def plural(n: int, singular: str, plural_form: str = "") -> str:
    """The noun for ``n`` of it: ``singular`` for 1 (or -1), else ``plural_form`` (``singular + "s"``
    unless given)."""
    return singular if abs(n) == 1 else (plural_form or singular + "s")


def counted(n: int, singular: str, plural_form: str = "") -> str:
    """``n`` and its noun: ``counted(1, "cell")`` is "1 cell", ``counted(2, "cell")`` "2 cells"."""
    return f"{n} {plural(n, singular, plural_form)}"


def sentence(text) -> str:
    """A refusal written for a page of its own, as a sentence: its first letter capital, ending
    with a full stop ("study 'X' is closed" -> "Study 'X' is closed.")."""
    text = str(text).strip()
    if not text:
        return text
    text = text[0].upper() + text[1:]
    return text if text[-1] in ".!?" else text + "."


def duration_text(seconds) -> str:
    """Whole seconds as hours, minutes and seconds, as the participant's shift bar writes them:
    ``duration_text(143)`` is "0:02:23", 12 hours "12:00:00"; "—" for none, a negative count as
    "0:00:00", a value that is not a number as it is."""
    if seconds is None:
        return "—"
    try:
        return hms(int(seconds))
    except (TypeError, ValueError, OverflowError):
        return str(seconds)


def dollars(cents: int | None) -> str:
    """An amount in cents as the console's end page writes dollars: "$28,000.00", "-$12.50";
    "—" for none."""
    return "—" if cents is None else usd_pretty(int(cents))


def _finite(value) -> Decimal | str:
    """``value`` as a finite number, or what to write instead: "—" for NaN or Infinity, the
    value as it is when it does not read as a number."""
    try:
        number = Decimal(str(value))
    except (InvalidOperation, ValueError):
        return str(value)
    return number if number.is_finite() else "—"


def score_text(value) -> str:
    """A composite, mean, interval bound or rate as the studies pages write scores, with three
    decimals as the coach view does ("0.033", "0.746"); "—" for none or a value that is not a
    finite number, "0.000" for a negative zero, anything that does not read as a number as it is.
    Exports keep the stored figure."""
    if value is None or value == "":
        return "—"
    number = _finite(value)
    if isinstance(number, str):
        return number
    try:
        return str(number.quantize(Decimal("0.001"), rounding=ROUND_HALF_UP) + 0)
    except ArithmeticError:  # too large to quantize
        return str(value)


# What each score component is called on the pages: the participant's end page's words
# (shifts.grading.COMPONENT_NAMES) where it shows the key, plain words for the rest.
COMPONENT_LABELS = {
    **COMPONENT_NAMES,
    "business_raw": "Net-asset growth",
    "business_zero_raw": "Zero (absentee's growth)",
    "business_scale": "Scale",
    "threshold": "Pass threshold",
    "bankrupt": "Bankrupt",
    "task": "Task",
    "seed": "Seed",
    "windows_played": "Windows played",
    "windows_total": "Windows in the shift",
    "windows_attended": "Windows attended",
    "orders_due": "Orders due",
    "orders_on_time": "Orders shipped on time (count)",
    "returns_due": "Returns due",
    "return_credit": "Return credit (returns' worth)",
}


def component_label(name: str) -> str:
    """A score component's name for people ("on_time_rate" is "Orders shipped on time"); a key
    the studies app does not know as it is."""
    return COMPONENT_LABELS.get(name, name)


# A graded shift's score components (shifts.grading: the core's Score, Decimals as strings, plus
# the cell's threshold), by how each reads.
MONEY_COMPONENTS = frozenset({"net_assets", "business_raw", "business_zero_raw", "business_scale"})
RATE_COMPONENTS = frozenset({"on_time_rate", "return_handled_rate"})
SHARE_COMPONENTS = frozenset({"business", "reliability", "continuity", "reward_composite", "threshold",
                              "return_credit"})
COUNT_COMPONENTS = frozenset({"seed", "windows_played", "windows_total", "windows_attended", "orders_due",
                              "orders_on_time", "returns_due"})


def component_text(name: str, value) -> str:
    """A score component as the studies pages write it: money in dollars ("$1,234.56"), the rates
    as percentages with one decimal as the participant's end page writes them ("18.8%"), shares,
    composites and the threshold with three decimals, as the composite is written ("0.912"),
    counts as integers, bankrupt as yes/no, "—" for none or a number that is not finite (NaN,
    Infinity); a negative zero as zero; any other key, a count that is not whole, or a value that
    does not read as its key's kind, as it is."""
    if value is None:
        return "—"
    if name == "bankrupt" and isinstance(value, bool):
        return "yes" if value else "no"
    numeric = MONEY_COMPONENTS | RATE_COMPONENTS | SHARE_COMPONENTS | COUNT_COMPONENTS
    if name not in numeric or isinstance(value, bool):
        return str(value)
    number = _finite(value)
    if isinstance(number, str):
        return number
    try:
        if name in MONEY_COMPONENTS:
            return dollars(int((number * 100).quantize(Decimal(1), rounding=ROUND_HALF_UP)))
        if name in RATE_COMPONENTS:  # rounded as console's end page rounds ("0.8125" is "81.2%")
            return f"{(number * 100).quantize(Decimal('0.1'), rounding=ROUND_HALF_EVEN) + 0}%"
        if name in SHARE_COMPONENTS:
            return score_text(value)
        return str(int(number)) if number == number.to_integral_value() else str(value)
    except (ArithmeticError, ValueError):  # too large to quantize or to write out
        return str(value)


def component_rows(components: dict | None) -> list[tuple[str, str, str]]:
    """A shift's score components as the coach's view lists them, by code name: (code name, name
    in words, value as written)."""
    return [(name, component_label(name), component_text(name, value))
            for name, value in sorted((components or {}).items())]


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
