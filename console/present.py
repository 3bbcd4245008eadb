"""How a stored call reads in the console: tables, cards, row actions and plain errors.

Everything here works from the typed parts of a stored call: the JSON body that
:func:`shifts.results.result_of` splits off at the known header line, and for a store
refusal the ``{"error": {...}}`` object that follows that same header line.  Nothing
is searched for in the rendered text.

A list result (a body with ``rows``) becomes a :class:`Table`; a single object (an
order, a product, a supply offer) becomes a :class:`Card` whose nested lists are tables
of their own.  Each row may carry :class:`Action` s: one metered call of a write tool,
posted through the same call endpoint as the tool forms with its own fresh call id.
Which rows get which action is the table :data:`ROW_ACTIONS` below (Ship, Refund, Reprice,
Reorder, Cancel order on a purchase order not yet shipped), keyed by the tool
that produced the rows.

Cells are formatted by what their value is (dollars as ``$1,234.50``, store times as
``08-01 06:10`` in a table and ``2026-08-01 06:10`` on a card, hours left as ``6.2 h``)
and keep a sort key, so a table sorts by the number, not by the text.  A row whose hours left is within one window is urgent.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal, InvalidOperation
from typing import Any, NamedTuple

from environment.tools import REGISTRY
from environment.tools.registry import ToolKind
from shifts.results import result_of

from .toolforms import ARG_PREFIX, form_values, json_problems, tool_forms

URGENT_HOURS = 12.0  # one window of the standard 12-hour clock
_MONEY = re.compile(r"^-?\d+\.\d{2}$")
# What a text value is, in one match: money (two decimals), a decimal number, a store time
# ("2026-08-01T06:10Z") or an id, tried in that order (each alternative whole, to its "$").
_TEXT_KIND = re.compile(r"(?P<money>-?\d+\.\d{2})$|(?P<number>-?\d+(?:\.\d+)?)$"
                        r"|(?P<time>\d{4}-\d\d-\d\dT\d\d:\d\dZ)$|(?P<id>(?:ORD|RET|PRD|SP|VND|PO|CUS|ANN)-[A-Za-z0-9-]+)$")
# Keys whose numbers are not money even when they look like it.
_NOT_MONEY = frozenset({"rating", "defect_returns_per_100_sold"})
# Keys whose whole numbers are years, written without a thousands separator.
_YEARS = frozenset({"founded"})


class Cell(NamedTuple):
    text: str
    sort: str  # what the column sorts by: a number as text, or the text itself
    kind: str  # "money" | "time" | "hours" | "id" | "number" | "text" | "bool" | "list"
    copy: bool = False  # an id worth one click to copy


@dataclass(frozen=True)
class Input:
    name: str  # the tool argument
    label: str
    value: str
    kind: str  # "money" | "int"


@dataclass(frozen=True)
class Action:
    label: str
    tool: str
    fixed: dict  # arguments sent as they are
    inputs: tuple[Input, ...] = ()
    key: str = ""  # keyboard shortcut on a focused row
    confirm: str = ""  # asked before sending (a purchase order landing after the horizon, a cancellation)
    late: bool = False  # the question is that the order lands after the close (the row says so too)


@dataclass
class Row:
    cells: list[Cell]
    actions: list[Action]
    key: str  # the row's id (order id, return id, ...), or its index
    urgent: bool = False
    done: str = ""  # "shipped (#12)": an action already made on this row since the read


@dataclass
class Table:
    title: str
    columns: list[str]
    rows: list[Row]
    note: str = ""  # "page 1 of 3, 111 in all"
    previous_page: Action | None = None  # the same read one page back (a metered call), on page 2 and after
    next_page: Action | None = None  # ... one page on, before the last page

    @property
    def has_actions(self) -> bool:
        return any(r.actions or r.done for r in self.rows)


@dataclass(frozen=True)
class LineEditor:
    """A purchase order by size and colour: one quantity box per SKU, sent as ``lines``."""

    supply_product_id: str
    skus: list  # (sku id, size, colour, unit cost text)
    warning: str  # the lead time ends past the horizon, or ""
    moq: int = 0  # the vendor's minimum units per order as read (0: not given)


@dataclass
class Card:
    title: str
    fields: list[tuple[str, Cell]]
    tables: list[Table]
    actions: list[Action]
    key: str
    lines: LineEditor | None = None
    done: str = ""  # "refunded (#12)": an action already made on this card's object since the read


@dataclass(frozen=True)
class Problem:
    """A refused call in plain words: the store's code and reason, or the field the
    argument check (before the store) named."""

    code: str
    reason: str
    details: dict
    reached_store: bool
    field: str = ""  # the argument the refusal names, for the page to mark: the store's ``field``, else an
    # argument of the call named among its details (``unknown_product``'s ``product_id``)


@dataclass
class Presentation:
    tables: list[Table] = field(default_factory=list)
    card: Card | None = None
    problem: Problem | None = None
    outcome: str = ""  # one line saying what a write did, for the row it was made from ("" for a read)
    still_open: bool = False  # the write went through but left its row to act on (a refund not accepted)
    is_read: bool = False  # a read tool: what it shows is as of a moment ("read ... · window N")

    @property
    def acts(self) -> bool:
        """Whether anything shown offers an action: a row's, the card's, or the card's order lines."""
        return (any(table.has_actions for table in self.tables)
                or bool(self.card and (self.card.actions or self.card.lines)))


# --- cells -----------------------------------------------------------------------------------

def _label(key: str) -> str:
    return key.replace("_", " ")


def _money(value: str) -> tuple[str, str]:
    """A money string's (``-1234.50``, as :data:`_MONEY` matches) text, ``-$1,234.50``, and
    sort key: read off its digits (``-0.00`` is not negative) where ``Decimal``'s 28 digits
    hold it exactly, as ``Decimal`` writes it beyond (it rounds there)."""
    whole, cents = value.split(".")
    if len(whole) > _EXACT_DIGITS - 2:
        amount = Decimal(value)
        return f"{'-' if amount < 0 else ''}${abs(amount):,.2f}", _num_sort(amount)
    units, hundredths = abs(int(whole)), int(cents)  # int() as Decimal(): any script's digits; a final newline
    negative = whole[0] == "-" and bool(units or hundredths)
    return (f"{'-' if negative else ''}${units:,}.{hundredths:02d}",
            _sort_key(negative, f"{units:017d}.{hundredths:02d}00"))


def cell(key: str, value: Any, dated: bool = False) -> Cell:
    """``value`` of field ``key`` as a cell; ``dated`` writes store times with their year
    ("2026-08-01 00:00", as the store header does: a card's fields have the room), a table's
    cells without it ("08-01 00:00")."""
    if value is None:
        return Cell("—", "", "text")
    if isinstance(value, bool):
        return Cell("yes" if value else "no", "1" if value else "0", "bool")
    if key.startswith("hours_to") and isinstance(value, (int, float)):
        return Cell(f"{value:.1f} h", f"{value:020.3f}" if value >= 0 else f"-{-value:019.3f}", "hours")
    if isinstance(value, (int, float)):
        grouped = isinstance(value, int) and key not in _YEARS
        return Cell(f"{value:,}" if grouped else str(value), _num_sort(value), "number")
    if isinstance(value, str):
        found = _TEXT_KIND.match(value)
        kind = found.lastgroup if found else None
        if kind == "money" and key not in _NOT_MONEY:
            return Cell(*_money(value), "money")
        if kind == "money" or kind == "number":  # a figure sent as text (a rate to four places)
            return Cell(value, _num_sort(Decimal(value)), "number")
        if kind == "time":  # 2026-08-01T06:10Z
            return Cell(f"{value[0:10] if dated else value[5:10]} {value[11:16]}", value, "time")
        if kind == "id":
            return Cell(value, value, "id", copy=True)
        return Cell(value, value.lower(), "text")
    if isinstance(value, list):
        if not value:  # an empty list said as such, not an empty cell (competitor_watch's rivals, say)
            return Cell("none", "0", "list")
        if key not in _NOT_MONEY and all(isinstance(v, str) and _MONEY.match(v) for v in value):
            return Cell(", ".join(_money(v)[0] for v in value), str(len(value)), "list")
        if all(isinstance(v, (str, int)) for v in value):
            return Cell(", ".join(str(v) for v in value), str(len(value)), "list")
        return Cell(f"{len(value)} row{'' if len(value) == 1 else 's'}", f"{len(value):08d}", "list")
    if isinstance(value, dict):
        text = ", ".join(f"{_label(k)} {cell(k, v, dated).text}" for k, v in value.items()) or "—"
        return Cell(text, text, "text")
    return Cell(str(value), str(value), "text")


_EXACT_DIGITS = 28  # Decimal's default precision: abs() rounds a number with more digits
_EXACT_BOUND = 10 ** _EXACT_DIGITS
# A negative number's digit d is written as the character ord("i") - d ("0" as "i", "9" as
# "`"): a larger magnitude sorts first, as it must among negative numbers.
_NEGATED = str.maketrans("0123456789", "ihgfedcba`")


def _sort_key(negative: bool, magnitude: str) -> str:
    """A key that sorts numbers as text, from the sign and the zero-padded magnitude
    (``00000000000000012.3400``): ``1`` and the magnitude, or ``0`` and the magnitude
    with each digit negated (:data:`_NEGATED`)."""
    return "0" + magnitude.translate(_NEGATED) if negative else "1" + magnitude


def _num_sort(value) -> str:
    """:func:`_sort_key` of a number to four places: an int's magnitude written out directly
    where ``Decimal`` holds it exactly, anything else through ``Decimal``."""
    if type(value) is int and -_EXACT_BOUND < value < _EXACT_BOUND:
        return _sort_key(value < 0, f"{abs(value):017d}.0000")
    number = Decimal(str(value))
    return _sort_key(number < 0, f"{abs(number):022.4f}")


# --- row actions -------------------------------------------------------------------------------

def _ship(row: dict) -> list[Action]:
    # an order the read found short of stock is not offered (the store would refuse it, spending an operation)
    if row.get("status") != "awaiting_shipment" or not row.get("order_id") or row.get("in_stock") is False:
        return []
    return [Action("Ship", "fulfill_order", {"order_id": row["order_id"]}, key="s")]


def _refund(row: dict) -> list[Action]:
    if row.get("status") != "open" or not row.get("return_id"):
        return []
    return [Action("Refund", "refund_return", {"return_id": row["return_id"]},
                   (Input("amount", "refund (USD)", str(row.get("refundable", "")), "money"),), key="r")]


def _reprice(row: dict) -> list[Action]:
    product = row.get("product_id")
    if not product:
        return []
    price = row.get("shelf_price") or row.get("price") or row.get("your_price") or ""
    return [Action("Reprice", "set_price", {"product_id": product},
                   (Input("price", "new price (USD)", str(price), "money"),), key="p")]


def _reorder_supply(row: dict, timing: Timing | None = None) -> list[Action]:
    sp = row.get("supply_product_id")
    if not sp or not row.get("restocks_product") or row.get("available") is False:
        return []
    return [_reorder(sp, row.get("moq"), late_warning(row.get("lead_days"), timing))]


def _reorder(sp: str, moq, confirm: str = "") -> Action:
    # The store splits a total over sizes by the standard size curve and evenly over
    # colours; the vendor's minimum order is the prefilled total.
    return Action("Reorder", "place_purchase_order", {"supply_product_id": sp},
                  (Input("quantity", f"units of {sp} (split by size curve)", str(moq or ""), "int"),), key="o",
                  confirm=confirm, late=bool(confirm))


def _cancel_po(row: dict) -> list[Action]:
    # Only while the vendor has not shipped it (the store's "placed": its cancellation window
    # was open at the read); afterwards the store would refuse it, spending an operation.
    po = row.get("po_id")
    if row.get("status") != "placed" or not po or not row.get("cancellable_until"):
        return []
    return [Action("Cancel order", "cancel_purchase_order", {"po_id": po},
                   confirm=f"Cancel {po}? The vendor refunds its cost less the cancellation fee "
                           "(platform_terms says how much); this cannot be undone.")]


@dataclass(frozen=True)
class Timing:
    """When the call was read (store time) and when the store closes for good."""

    now: datetime
    horizon_end: datetime


def late_warning(lead_days, timing: Timing | None) -> str:
    """A warning when goods ordered now land after the store closes (a vendor can also be
    later than its lead time, so an order close to the end is a risk too)."""
    if timing is None or not isinstance(lead_days, int):
        return ""
    eta = timing.now + timedelta(days=lead_days)
    if eta < timing.horizon_end:
        return ""
    return (f"The lead time is {lead_days} days: ordered now, the goods land about {eta:%Y-%m-%d %H:%M}, "
            f"after the store closes at {timing.horizon_end:%Y-%m-%d %H:%M}. They could not be sold, only "
            "salvaged at settlement. Place the order anyway?")


ROW_ACTIONS = {
    "list_orders": _ship, "get_order": _ship,
    "list_returns": _refund, "get_return": _refund,
    "list_products": _reprice, "get_product": _reprice, "competitor_watch": _reprice,
    "search_supply_catalog": _reorder_supply, "supply_product_detail": _reorder_supply,
    "list_purchase_orders": _cancel_po, "place_purchase_order": _cancel_po,
}

# What a write tool does to the row it was made from, in words, and the row's key.
DONE_WORDS = {
    "fulfill_order": ("shipped", "order_id"), "refund_return": ("refunded", "return_id"),
    "set_price": ("repriced", "product_id"), "place_purchase_order": ("ordered", "supply_product_id"),
    "cancel_purchase_order": ("cancelled", "po_id"), "cancel_order": ("cancelled", "order_id"),
}
_ROW_KEYS = ("order_id", "return_id", "po_id", "supply_product_id", "product_id", "variant_id", "sku_id",
             "vendor_id", "id", "entry")
# A return's row also names its order: it is keyed by the return, which its Refund acts on.
_FIRST_KEY = {"list_returns": "return_id", "get_return": "return_id"}


def _row_key(row: dict, index: int, tool: str = "") -> str:
    keys = (_FIRST_KEY[tool], *_ROW_KEYS) if tool in _FIRST_KEY else _ROW_KEYS
    return next((str(row[k]) for k in keys if row.get(k) not in (None, "")), str(index))


def _is_urgent(row: dict) -> bool:
    return any(isinstance(v, (int, float)) and not isinstance(v, bool) and k.startswith("hours_to")
               and v <= URGENT_HOURS for k, v in row.items()) and row.get("status") in (
        None, "open", "awaiting_shipment")


# Columns a table shows first, where the store's order would push what a row is decided on
# off a 1280-pixel screen (the JSON toggle keeps the store's order).
_FIRST_COLUMNS = {
    "list_returns": ("return_id", "hours_to_escalation", "refundable", "paid", "refunded", "reason", "status"),
}


def _table(title: str, rows: list[dict], tool: str, sources: dict, done: dict, note: str = "",
           timing: Timing | None = None) -> Table:
    columns: list[str] = []
    for row in rows:
        for key in row:
            if key not in columns:
                columns.append(key)
    first = [c for c in _FIRST_COLUMNS.get(tool, ()) if c in columns]
    columns = first + [c for c in columns if c not in first]
    actions_of = ROW_ACTIONS.get(tool)
    out = []
    for index, row in enumerate(rows):
        actions = (actions_of(row, timing) if actions_of is _reorder_supply else actions_of(row)) if actions_of else []
        if tool == "list_inventory" and row.get("product_id") in sources:
            actions = [_reorder(*sources[row["product_id"]])]
        key = _row_key(row, index, tool)
        out.append(Row(cells=[cell(c, row.get(c)) for c in columns], actions=actions, key=key,
                       urgent=_is_urgent(row), done=_mark_on(done.get(key), actions)))
    return Table(title=title, columns=[_label(c) for c in columns], rows=out, note=note)


def _mark_on(mark: DoneMark | None, actions: list[Action]) -> str:
    """A row's (or card's) done mark: only where it offers an action the write left nothing to
    do for (a reprice marks a product's row offering Reprice, not an inventory row's Reorder)."""
    return mark.text if mark is not None and any(a.tool in mark.tools for a in actions) else ""


def present(call, *, sources: dict | None = None, done: dict | None = None,
            horizon_end: datetime | None = None) -> Presentation:
    """The presentation of one stored call.  ``sources`` maps a shop product id to
    (supply product id, vendor minimum) for Reorder on inventory rows; ``done`` maps a
    row key to what was done to it since the read (:func:`done_since`)."""
    sources, done = sources or {}, done or {}
    header = call.typed_header
    timing = (Timing(datetime.strptime(header.time, "%Y-%m-%d %H:%M"), horizon_end)
              if header is not None and horizon_end is not None else None)
    problem = problem_of(call)
    if problem is not None:
        return Presentation(problem=problem, outcome=f"#{call.seq} refused: {problem.code}",
                            is_read=call.tool in REGISTRY and REGISTRY[call.tool].kind == ToolKind.READ)
    data = result_of(call).data
    words = DONE_WORDS.get(call.tool)
    is_read = call.tool in REGISTRY and REGISTRY[call.tool].kind == ToolKind.READ
    # The panel's title already names the call (#N tool): a read says nothing more, a write says it went through.
    outcome = _done(call, words) if words else ("" if is_read else "Done.")
    still_open = left_open(call, data)
    if still_open:
        outcome = (f"refunded {cell('refunded_now', data.get('refunded_now')).text} (#{call.seq}): not accepted "
                   "as settlement, the return stays open")
    shown = Presentation(outcome=outcome, is_read=is_read, still_open=still_open)
    if not isinstance(data, dict):
        return shown
    if isinstance(data.get("rows"), list) and all(isinstance(r, dict) for r in data["rows"]):
        note = ""
        if "page" in data:
            note = f"page {data['page']} of {data.get('pages', '?')}, {data.get('total', len(data['rows']))} in all"
        table = _table(_label(call.tool), data["rows"], call.tool, sources, done, note, timing)
        table.previous_page, table.next_page = _page_reads(call, data)
        shown.tables.append(table)
        extras = {k: v for k, v in data.items() if k not in ("rows", "page", "pages", "total")}
        if extras:
            shown.card = Card("", [(_label(k), cell(k, v, dated=True)) for k, v in extras.items()], [], [], "")
        return shown
    fields, tables = [], []
    for key, value in data.items():
        if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            child_tool = call.tool if key in ("rivals",) else ""
            tables.append(_table(_label(key), value, child_tool, sources, done))
        else:
            fields.append((_label(key), cell(key, value, dated=True)))
    actions_of = ROW_ACTIONS.get(call.tool)
    actions = (actions_of(data, timing) if actions_of is _reorder_supply else actions_of(data)) if actions_of else []
    lines = None
    if call.tool == "supply_product_detail" and actions and isinstance(data.get("sku_rows"), list):
        lines = LineEditor(str(data["supply_product_id"]),
                           [(r.get("sku_id"), r.get("size"), r.get("colour"), cell("unit_cost", r.get("unit_cost")).text)
                            for r in data["sku_rows"] if isinstance(r, dict)],
                           late_warning(data.get("lead_days"), timing),
                           data["moq"] if type(data.get("moq")) is int and data["moq"] > 0 else 0)
    title = data.get("title") or data.get("name") or (
        f"Purchase order {data['po_id']}" if call.tool == "place_purchase_order" and data.get("po_id") else
        _label(call.tool))
    shown.card = Card(str(title), fields, tables,
                      actions, _row_key(data, 0, call.tool), lines)
    shown.card.done = _mark_on(done.get(shown.card.key), actions)
    return shown


def _page_reads(call, data: dict) -> tuple[Action | None, Action | None]:
    """The call again, one page back and one page on, with its other arguments as sent
    (written as its tool form would refill them); None where there is no such page."""
    page, pages = data.get("page"), data.get("pages")
    form = tool_forms().get(call.tool)
    if type(page) is not int or type(pages) is not int or form is None:
        return None, None
    sent = {name[len(ARG_PREFIX):]: value for name, value in form_values(form, call.arguments or {}).items()}

    def at(number: int, label: str) -> Action:
        return Action(label, call.tool, {**sent, "page": str(number)})

    return (at(page - 1, "Previous page") if page > 1 else None,
            at(page + 1, "Next page") if page < pages else None)


# --- errors ------------------------------------------------------------------------------------

_PYDANTIC_HEAD = re.compile(r"^\d+ validation errors? for \S+$")
# "<reason> [type=<kind>, input_value=<repr>, input_type=<name>]": the repr may hold commas and brackets.
_PYDANTIC_TAIL = re.compile(r"\s*\[type=(?P<kind>[\w.]+)(?:, input_value=(?P<value>.*), input_type=[\w.]+)?\]\s*$")
GIVEN_MAX = 60  # characters of the value echoed back


def _argument_problems(text: str) -> list[str]:
    """The argument check's complaint (refused before the store) as "field: reason" lines,
    without the library's type tags and links."""
    lines = text.split("\n")
    if lines and ": " in lines[0] and _PYDANTIC_HEAD.match(lines[0].split(": ", 1)[1]):
        lines = lines[1:]
    out, name = [], ""
    for line in lines:
        if not line.strip() or line.strip().startswith("For further information"):
            continue
        if not line.startswith(" "):
            name = line.strip()
            continue
        reason = line.strip()
        tail = _PYDANTIC_TAIL.search(reason)
        if tail is not None:
            reason = reason[:tail.start()]
        reason = reason.removeprefix("Value error, ")
        # A missing field's "input" is every argument given: no use to echo back.
        if tail is not None and tail["value"] is not None and tail["kind"] != "missing":
            given = tail["value"]
            reason += f" (you gave {given if len(given) <= GIVEN_MAX else given[:GIVEN_MAX - 1] + '…'})"
        out.append(f"{name}: {reason}" if name else reason)
    return out


def problem_of(call) -> Problem | None:
    if not call.is_error:
        return None
    header = call.typed_header
    text = call.result_text or ""
    if header is not None:
        marker = "\n" + header.line + "\n"
        if marker in text:
            try:
                error = json.loads(text.split(marker, 1)[1]).get("error") or {}
            except ValueError:
                error = {}
            if error:
                code, reason = str(error.get("code", "error")), str(error.get("message", ""))
                if code == "invalid_argument":
                    reason = "; ".join([reason, *_json_help(call)])
                details = dict(error.get("details") or {})
                named = details.get("field")
                if not isinstance(named, str) or not named:
                    named = next((k for k in details if k in (call.arguments or {})), "")
                return Problem(code, reason, details, reached_store=True, field=named)
    if not call.reached_core:  # a call stored before every call reached the store (the SDK checked arguments)
        reasons = _argument_problems(text) + _json_help(call)
        return Problem("invalid_argument", "; ".join(reasons) or text, {}, reached_store=False)
    return Problem("error", text, {}, reached_store=call.reached_core)


def _json_help(call) -> list[str]:
    """The store's reason stays as an agent reads it; where it only says "not a valid
    dictionary" for the console's text box, the console adds why, marked as its own help."""
    unparsed = json_problems(call.tool, call.arguments or {})
    return [f"console help, {name}: {why}" for name, why in unparsed.items()]


# --- what a shift already knows ----------------------------------------------------------------

SOURCE_TOOLS = ("search_supply_catalog", "supply_product_detail")


def known_sources(shift_calls) -> dict:
    """Shop product id -> (supply product id, vendor minimum) from the shift's successful
    supply reads, newest last (so the newest read wins)."""
    sources: dict = {}
    for call in shift_calls:
        data = result_of(call).data
        if not isinstance(data, dict):
            continue
        listed = data.get("rows")
        rows: list = listed if isinstance(listed, list) else [data]
        for row in rows:
            if isinstance(row, dict) and row.get("restocks_product") and row.get("available") is not False:
                sources[row["restocks_product"]] = (row["supply_product_id"], row.get("moq"))
    return sources


def _done(call, words: tuple[str, str]) -> str:
    """What a write did to its row, in words, with its call's number: "shipped (#12)"; a
    new price says the price ("repriced to $49.50 (#13)"), which the row read before it does not."""
    said = words[0]
    price = (call.arguments or {}).get("price") if call.tool == "set_price" else None
    if price is not None:
        said += f" to {cell('price', _cents(price)).text}"
    return f"{said} (#{call.seq})"


def _cents(price: object) -> str:
    """A price the store took (214, "214.5") written to the cent ("214.00", "214.50"), as its
    rows show prices; as sent where it is not a finite number."""
    try:
        value = Decimal(str(price).strip().removeprefix("$"))
    except InvalidOperation:
        return str(price)
    return str(value.quantize(Decimal("0.01"))) if value.is_finite() else str(price)


# The row actions a write leaves nothing to do for on the row it was made from (a cancelled
# order can no longer be shipped); a page marks a row it shows only when the row offers one.
SUPERSEDES = {
    "fulfill_order": ("fulfill_order",), "cancel_order": ("fulfill_order",), "refund_return": ("refund_return",),
    "set_price": ("set_price",), "place_purchase_order": ("place_purchase_order",),
    "cancel_purchase_order": ("cancel_purchase_order",),
}


def left_open(call, data) -> bool:
    """A refund the customer did not accept as settlement (``data``, its result's): its return
    stays open (the inbox, a row's outcome and the done marks all read it so)."""
    return call.tool == "refund_return" and isinstance(data, dict) and data.get("status") == "open"


def _writes_done(later_calls):
    """Each successful write among ``later_calls`` that did what its row offered, with its
    row key and words.  A refund the customer did not accept left its return open: not done."""
    for call in later_calls:
        words = DONE_WORDS.get(call.tool)
        if not words or call.is_error:
            continue
        if left_open(call, result_of(call).data if call.tool == "refund_return" else None):
            continue
        yield call, str(call.arguments.get(words[1])), words


class DoneMark(NamedTuple):
    """What a write did to the row it was made from: the words ("shipped (#12)"), its call's
    number, and the row actions it left nothing to do for (:data:`SUPERSEDES`)."""

    text: str
    seq: int
    tools: tuple[str, ...]


def done_since(later_calls) -> dict[str, DoneMark]:
    """Row key -> what was done to it by a successful write among ``later_calls``."""
    return {key: DoneMark(_done(call, words), call.seq, SUPERSEDES[call.tool])
            for call, key, words in _writes_done(later_calls)}


def done_marks(later_calls) -> dict:
    """:func:`done_since` as JSON for a page to mark the rows it already shows (a result read
    after the call is not marked; a row is marked only where it offers one of the tools)."""
    return {key: {"done": mark.text, "seq": mark.seq, "tools": list(mark.tools)}
            for key, mark in done_since(later_calls).items()}

