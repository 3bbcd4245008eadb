"""Property-based invariants of the live store under valid and hostile tool calls.

A generated session is a sequence of 20-120 tool calls against one armed episode.
Each call is drawn from the episode as it stands at that step (ids change as the
store moves): valid-looking calls on real products, variants, orders, returns,
supply products, vendors and purchase orders, mixed with hostile ones (unknown
tools, missing / extra / wrong-typed arguments, huge, negative, zero, NaN and
infinite numbers, unicode and very long strings, nested objects, ids of the wrong
kind, refunds over the refundable, ...), ``end_window`` so that many windows pass,
and sometimes ``ep.stop()`` near the end.

After every call (see :func:`check_call`):

1. the call returned a ToolResult and never raised; a refusal carries a string
   ``code`` and a string ``message``; the result serialises as the agent reads it;
2. every account balance equals the sum of its ledger entries (cash included) and
   net assets = cash + deposit + receivable + in_transit;
3. no stock lot is negative (nor kept empty), ``on_hand >= 0`` and ``reserved >= 0``
   everywhere, and the stock counters (``VariantRec.on_hand``, ``ep.stock_units``,
   ``ep.stock_cost``) agree with the lots; the indexes of open orders and open returns
   agree with a scan of every order and return;
4. ``0 <= ops_left <= ops_per_window``; every call to a known non-free tool on an open
   store spends exactly one operation, refused or not, whatever its arguments; the
   free tool, unknown tools and a closed store spend none;
5. a refused call leaves the ledger untouched unless the window advanced (the
   window's last operation moves the world even when the call is refused);
6. once the store is over, every non-free tool is refused with ``store_closed`` and
   the ledger is frozen.

Both generators (hypothesis and the seeded ``random.Random(0)`` full episode) share
one call builder through the small :class:`Chooser` interface.

Regression tests for bugs this suite found sit at the end of the file.
"""

from __future__ import annotations

import json
import os
import random
from decimal import Decimal

import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

from environment.api import arm
from environment.engine.episode import ToolResult
from environment.engine.ledger import Account
from environment.engine.state import OrderState, ReturnState
from environment.tools.registry import REGISTRY

TASKS = ["short-runway", "counter-punch", "cash-crunch", "final-clearance", "season-flip"]
SEEDS = [7, 11, 13]

# 40 examples x 5 tasks keeps the file under ~50 s; raise it for a deeper hunt.
EXAMPLES_PER_TASK = int(os.environ.get("STOREBENCH_INVARIANT_EXAMPLES", "40"))
MIN_CALLS, MAX_CALLS = 20, 120

FREE_TOOLS = sorted(n for n, s in REGISTRY.items() if s.free)
PAID_TOOLS = sorted(n for n, s in REGISTRY.items() if not s.free)

# --------------------------------------------------------------------------------------
# hostile material
# --------------------------------------------------------------------------------------

SPECIAL_STRINGS = [
    "", " ", "\t\n", "0", "-1", "1e9", "-0", "0.001", "NaN", "Infinity", "null", "None", "true",
    "PRD-001\n", " PRD-001", "prd-001", "PRD-0001", "PRD-", "ORD-", "RET-", "SP-", "VND-", "PO-",
    "'; DROP TABLE orders; --", "../../etc/passwd", "%s%s%n", "{}", "[]", "\x00", "\u202e\u200b",
    "caf\u00e9 \u00fcber na\u00efve", "\u65e5\u672c\u8a9e\u306e\u5546\u54c1", "\U0001f6cd\ufe0f" * 40,
    "\u0661\u0662\u0663", "x" * 81, "y" * 4001, "z" * 20_000,
]

EDGE_MONEY = [
    "1e9", "-0", "0.001", "0", 0, -0.0, "0.00", "0.99", "1.00", "1", 1, "1000.00", "1000.01", 1000.01,
    0.1 + 0.2, "49.5", "1e-2", "1E+3", "NaN", "sNaN", "inf", "-Infinity", float("nan"), float("inf"),
    float("-inf"), "", " ", "$", "$$5", "5$", "1,000.00", "\u0661\u0662\u0663", "\u00bd", True, False,
    None, [], {}, [49.5], {"usd": 49.5}, "12.345", 10**9, -(10**9), 10**20, "1e20", "9" * 20, 1e20,
    2**53 + 1, "-49.50", -49.5, Decimal("49.50"), Decimal("NaN"), b"49.50", "0x10", "1_000",
    "999999999999.99", "1e12", "1e26", "1e30", 10**30, 1e300, "9" * 40, "1e999999", 10**5000,
]

HOSTILE_VALUES = [
    None, True, False, 0, -1, 1, 2, 10**9, -(10**9), 10**12, 2**63, -(2**63), 10**30, 10**5000,
    float("nan"), float("inf"), float("-inf"), -0.0, 0.001, 1e308, 5e-324, Decimal("1.5"), Decimal("NaN"),
    [], [1, "a"], [[[]]], {}, {"a": {"b": [None, {"c": float("nan")}]}}, {"$gt": ""}, (1, 2),
    b"PRD-001", bytearray(b"x"), *SPECIAL_STRINGS,
]

NON_DICT_ARGUMENTS = [[], [("page", 1)], ["page", 1], "page=1", '{"page": 1}', 0, 1, 3.5, True,
                      (1, 2), {1, 2}, b"{}", float("nan")]

NON_STRING_KEYS = [1, None, (1, 2), 1.5, True, frozenset()]

UNKNOWN_TOOLS = ["", " ", "List_Products", "list_products ", " store_status", "list-products", "listproducts",
                 "store_status\x00", "end_window()", "__init__", "__class__", "REGISTRY", "delete_store",
                 "refund_all", "\u65e5\u672c", "\U0001f6cd", "x" * 5000, "get_product;drop", "None"]


def safe_repr(obj, limit: int = 300) -> str:
    try:
        text = repr(obj)
    except ValueError:  # ints past the str-conversion limit
        text = f"<{type(obj).__name__} too large to repr>"
    return text if len(text) <= limit else text[:limit] + f"...<{len(text)} chars>"


# --------------------------------------------------------------------------------------
# one call builder, two sources of choices
# --------------------------------------------------------------------------------------


class Chooser:
    def pick(self, seq):
        raise NotImplementedError

    def between(self, lo: int, hi: int) -> int:
        raise NotImplementedError

    def text(self, min_size: int = 0, max_size: int = 60) -> str:
        raise NotImplementedError

    def chance(self, percent: int) -> bool:
        return self.between(0, 99) < percent


class HypothesisChooser(Chooser):
    def __init__(self, data) -> None:
        self.data = data

    def pick(self, seq):
        return self.data.draw(st.sampled_from(list(seq)))

    def between(self, lo: int, hi: int) -> int:
        return self.data.draw(st.integers(lo, hi))

    def text(self, min_size: int = 0, max_size: int = 60) -> str:
        return self.data.draw(st.one_of(st.text(min_size=min_size, max_size=max_size),
                                        st.sampled_from(SPECIAL_STRINGS)))


class RandomChooser(Chooser):
    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def pick(self, seq):
        return self.rng.choice(list(seq))

    def between(self, lo: int, hi: int) -> int:
        return self.rng.randint(lo, hi)

    def text(self, min_size: int = 0, max_size: int = 60) -> str:
        if self.rng.random() < 0.4:
            return self.rng.choice(SPECIAL_STRINGS)
        n = self.rng.randint(min_size, max_size)
        alphabet = "abcdefghij klmnop\u00e9\u00fc\u65e5\U0001f6cd-_.,0123456789"
        return "".join(self.rng.choice(alphabet) for _ in range(n))


# -- live id pools --------------------------------------------------------------------------


def restocks(ep, sp) -> str | None:
    return sp.product_id or ep.listed_supply.get(sp.id)


def pools(ep) -> dict[str, list[str]]:
    return {
        "product": list(ep.product_by_id),
        "variant": list(ep.variant_by_id),
        "order": list(ep.orders),
        "return": list(ep.returns),
        "supply": list(ep.supply_products),
        "vendor": list(ep.vendors),
        "po": list(ep.pos),
    }


def pick_id(c: Chooser, ids: list[str], fallback: str) -> str:
    return c.pick(ids) if ids else fallback


def any_id(ep, c: Chooser) -> str:
    """An id of any kind: the way to hand a tool an id of the wrong kind."""
    every = pools(ep)
    kind = c.pick(sorted(every))
    return pick_id(c, every[kind], f"{kind.upper()}-0")


def money(c: Chooser, lo: int = 100, hi: int = 100_000):
    if c.chance(70):
        cents = c.between(lo, hi)
        s = f"{cents // 100}.{cents % 100:02d}"
        return c.pick([s, "$" + s, f" {s} ", cents / 100, s if cents % 100 else cents // 100])
    return c.pick(EDGE_MONEY)


def dollars(cents: int) -> str:
    sign = "-" if cents < 0 else ""
    return f"{sign}{abs(cents) // 100}.{abs(cents) % 100:02d}"


def paging(c: Chooser, args: dict) -> dict:
    if c.chance(35):
        args["page"] = c.pick([1, 1, 2, 3, 0, -1, 10**12, 100_000, 100_001])
    if c.chance(30):
        args["page_size"] = c.pick([1, 5, 20, 50, 100, 101, 0])
    return args


def optional(c: Chooser, args: dict, key: str, values: list, percent: int = 40) -> None:
    if c.chance(percent):
        args[key] = c.pick(values)


# -- valid-looking arguments per tool -------------------------------------------------------


def g_list_products(ep, c):
    args = paging(c, {})
    optional(c, args, "status", ["active", "inactive", "all"])
    optional(c, args, "category", ["knitwear", "outerwear", "KNITWEAR", "dresses", "nope"], 25)
    optional(c, args, "search", ["wool", "linen shirt", "a", "", "x" * 81], 20)
    optional(c, args, "sort", ["id", "title", "units_available", "price"])
    return args


def g_product(ep, c):
    return {"product_id": pick_id(c, list(ep.product_by_id), "PRD-001")}


def g_set_price(ep, c):
    pid = pick_id(c, list(ep.product_by_id), "PRD-001")
    args = {"product_id": pid, "price": money(c)}
    if c.chance(40):
        variants = [v.id for v in ep.product_by_id[pid].variants] if pid in ep.product_by_id else []
        args["variant_id"] = pick_id(c, variants, "PRD-001-M-BLK") if c.chance(85) else any_id(ep, c)
    return args


def g_set_listing_status(ep, c):
    return {"product_id": pick_id(c, list(ep.product_by_id), "PRD-001"),
            "status": c.pick(["active", "inactive", "inactive", "active"])}


def g_update_listing_copy(ep, c):
    args = {"product_id": pick_id(c, list(ep.product_by_id), "PRD-001"),
            "description": c.pick(["Soft merino wool jumper, regular fit. Machine wash cold. In navy and grey.",
                                   "short", "   padding   " * 3]) if c.chance(60) else c.text(0, 200)}
    if c.chance(40):
        args["title"] = c.pick(["Merino Crew Jumper", "ab", "   ", "T" * 121]) if c.chance(60) else c.text(0, 40)
    return args


def g_list_supply_product(ep, c):
    unlisted = [sp.id for sp in ep.world.supply_products if ep.is_unlisted_supply(sp.id)]
    sp = pick_id(c, unlisted, "SP-0150") if c.chance(75) else pick_id(c, list(ep.supply_products), "SP-0001")
    return {"supply_product_id": sp, "price": money(c)}


def g_none(ep, c):
    return {}


def g_ledger_entries(ep, c):
    args = paging(c, {})
    optional(c, args, "account", ["cash", "receivable", "in_transit", "deposit", "all", "CASH"])
    optional(c, args, "kind", ["payout", "sale", "po_payment", "holding_cost", "nope"], 30)
    return args


def g_sales_report(ep, c):
    args = paging(c, {})
    optional(c, args, "days", [1, 7, 30, 550, 0, 551, 10**9])
    optional(c, args, "group_by", ["product", "category", "variant", "day"])
    if c.chance(30):
        args["product_id"] = pick_id(c, list(ep.product_by_id), "PRD-001")
    return args


def g_announcements(ep, c):
    return paging(c, {})


def g_list_inventory(ep, c):
    args = paging(c, {})
    optional(c, args, "level", ["product", "variant"])
    optional(c, args, "only", ["all", "out_of_stock", "low", "in_stock"])
    if c.chance(30):
        args["product_id"] = pick_id(c, list(ep.product_by_id), "PRD-001")
    return args


def g_dispose_stock(ep, c):
    stocked = [v for v in ep.variants if v.on_hand]
    v = c.pick(stocked) if stocked and c.chance(80) else None
    vid = v.id if v is not None else pick_id(c, list(ep.variant_by_id), "PRD-001-M-BLK")
    free = max(0, v.available) if v is not None else 0
    args = {"variant_id": vid,
            "quantity": c.pick([1, 1, 2, max(1, free), free + 1, 10_000, 10_001, 0, -3, 10**9])}
    if v is not None and c.chance(40):
        args["batch"] = c.pick([lot.po_id for lot in v.lots] + ["opening", "PO-0", ""])
    return args


def g_list_orders(ep, c):
    args = paging(c, {})
    optional(c, args, "status", ["awaiting_shipment", "shipped", "delivered", "cancelled", "all"])
    optional(c, args, "sort", ["deadline", "placed_newest"])
    return args


def g_order(ep, c):
    return {"order_id": pick_id(c, list(ep.orders), "ORD-100001")}


def g_open_order(ep, c):
    open_ids = [o.id for o in ep.orders.values() if o.status == OrderState.OPEN]
    oid = pick_id(c, open_ids, "ORD-100001") if c.chance(80) else pick_id(c, list(ep.orders), "ORD-100001")
    args = {"order_id": oid}
    return args


def g_cancel_order(ep, c):
    args = g_open_order(ep, c)
    optional(c, args, "reason", ["customer asked", "", "r" * 201], 40)
    return args


def g_list_returns(ep, c):
    args = paging(c, {})
    optional(c, args, "status", ["open", "resolved", "escalated", "all"])
    return args


def g_return(ep, c):
    return {"return_id": pick_id(c, list(ep.returns), "RET-20001")}


def g_refund_return(ep, c):
    open_returns = [r for r in ep.returns.values() if r.status == ReturnState.OPEN]
    r = c.pick(open_returns) if open_returns and c.chance(80) else None
    rid = r.id if r is not None else pick_id(c, list(ep.returns), "RET-20001")
    args = {"return_id": rid}
    if c.chance(70):
        cap = r.capacity if r is not None else 1_000
        args["amount"] = c.pick([
            dollars(cap), dollars(cap + 1), dollars(cap * 9 // 10), dollars(max(1, cap // 2)), dollars(cap * 10),
            "0", "0.00", "-0", "-1.00", "0.001", "0.01", cap / 100, None, c.pick(EDGE_MONEY),
        ])
    return args


def g_search_supply(ep, c):
    args = paging(c, {})
    optional(c, args, "query", ["wool", "shirt dress", "", "q" * 81], 25)
    optional(c, args, "category", ["knitwear", "outerwear", "Knitwear"], 20)
    optional(c, args, "vendor_id", list(ep.vendors)[:5] + ["VND-99"], 20)
    optional(c, args, "country", ["china", "Portugal", "Atlantis"], 20)
    optional(c, args, "listed", ["any", "in_shop", "not_in_shop"], 40)
    return args


def g_supply(ep, c):
    return {"supply_product_id": pick_id(c, list(ep.supply_products), "SP-0001")}


def g_vendor(ep, c):
    return {"vendor_id": pick_id(c, list(ep.vendors), "VND-01")}


def g_place_po(ep, c):
    in_shop = [sp for sp in ep.world.supply_products if restocks(ep, sp)]
    if in_shop and c.chance(85):
        sp = c.pick(in_shop)
    else:
        sp = ep.supply_products[c.pick(list(ep.supply_products))]
    moq = ep.vendors[sp.vendor_id].moq
    args = {"supply_product_id": sp.id}
    mode = c.between(0, 9)
    if mode <= 5:
        args["quantity"] = c.pick([moq, moq, moq + 7, 2 * moq, max(1, moq - 1), 5_000, 5_001, 0, -5, 10**9])
    elif mode <= 8:
        product = ep.product_by_id.get(restocks(ep, sp) or "")
        keys = [v.id for v in product.variants] if product else []
        keys += [s for s in sp.sku_ids]
        lines = {}
        for _ in range(c.between(1, 4)):
            key = c.pick(keys) if keys and c.chance(85) else any_id(ep, c)
            lines[key] = c.pick([moq, max(1, moq // 2), 1, 0, -1, 5_001, 10**9, True])
        args["lines"] = lines
    else:  # both, or neither
        if c.chance(50):
            args["quantity"] = moq
            args["lines"] = {}
    return args


def g_cancel_po(ep, c):
    recent = [po.id for po in ep.pos.values() if not po.opening]
    pid = pick_id(c, recent, "PO-5001") if c.chance(70) else pick_id(c, list(ep.pos), "PO-5001")
    return {"po_id": pid}


def g_list_pos(ep, c):
    args = paging(c, {})
    optional(c, args, "status", ["open", "received", "cancelled", "all"])
    return args


GENERATORS = {
    "list_products": g_list_products, "get_product": g_product, "set_price": g_set_price,
    "set_listing_status": g_set_listing_status, "update_listing_copy": g_update_listing_copy,
    "list_supply_product": g_list_supply_product, "finance_summary": g_none, "ledger_entries": g_ledger_entries,
    "sales_report": g_sales_report, "platform_terms": g_none, "announcements": g_announcements,
    "competitor_watch": g_none, "list_inventory": g_list_inventory, "dispose_stock": g_dispose_stock,
    "list_orders": g_list_orders, "get_order": g_order, "fulfill_order": g_open_order,
    "cancel_order": g_cancel_order, "list_returns": g_list_returns, "get_return": g_return,
    "refund_return": g_refund_return, "search_supply_catalog": g_search_supply,
    "supply_product_detail": g_supply, "supplier_profile": g_vendor, "place_purchase_order": g_place_po,
    "cancel_purchase_order": g_cancel_po, "list_purchase_orders": g_list_pos, "store_status": g_none,
    "end_window": g_none,
}
assert set(GENERATORS) == set(REGISTRY), "a tool was added or renamed: give it a generator"

WRITE_TOOLS = ["set_price", "set_listing_status", "update_listing_copy", "list_supply_product", "dispose_stock",
               "fulfill_order", "cancel_order", "refund_return", "place_purchase_order", "cancel_purchase_order"]
# Writes are weighted up: they are where money and stock move.
VALID_BAG = sorted(set(REGISTRY) - {"end_window"}) + WRITE_TOOLS * 3 + ["fulfill_order", "refund_return"] * 2

MODES = ["valid"] * 12 + ["mutated"] * 5 + ["wrong_id"] * 2 + ["unknown_tool", "non_dict"]


def mutate(ep, c: Chooser, args: dict) -> dict:
    """Make a valid-looking argument object hostile in one or two ways."""
    args = dict(args)
    for _ in range(c.between(1, 2)):
        how = c.between(0, 5)
        if how == 0 and args:  # missing argument
            args.pop(c.pick(list(args)))
        elif how == 1:  # unknown argument
            args[c.pick(["extra", "product_id", "price", "amount", "quantity", "page", "force", "__proto__",
                         "\u65e5\u672c", ""])] = c.pick(HOSTILE_VALUES)
        elif how == 2 and args:  # wrong-typed value
            args[c.pick(list(args))] = c.pick(HOSTILE_VALUES)
        elif how == 3:  # a key that is not a string
            args[c.pick(NON_STRING_KEYS)] = c.pick(HOSTILE_VALUES)
        elif how == 4 and args:  # a long or strange string
            args[c.pick(list(args))] = c.text(0, 120)
        else:
            args[c.pick(["page", "page_size", "quantity", "price", "amount", "days"])] = c.pick(
                [0, -1, 10**9, 10**12, float("nan"), float("inf"), "1e9", "-0", "0.001"])
    return args


def with_wrong_ids(ep, c: Chooser, args: dict) -> dict:
    args = dict(args)
    id_keys = [k for k in args if isinstance(k, str) and k.endswith("_id")]
    for key in id_keys or ["product_id"]:
        args[key] = any_id(ep, c)
    return args


def build_call(ep, c: Chooser, end_percent: int):
    """One tool call (name, arguments) drawn against the episode as it is now."""
    if c.chance(end_percent):
        hostile = [{"now": True}, [], "now", {"window": 10**9}]
        return "end_window", c.pick([{}, {}, {}, None] + hostile)
    mode = c.pick(MODES)
    if mode == "unknown_tool":
        return c.pick(UNKNOWN_TOOLS + [c.text(0, 30)]), c.pick([{}, None, {"page": 1}])
    name = c.pick(VALID_BAG)
    if mode == "non_dict":
        return name, c.pick(NON_DICT_ARGUMENTS)
    args = GENERATORS[name](ep, c)
    if mode == "mutated":
        args = mutate(ep, c, args)
    elif mode == "wrong_id":
        args = with_wrong_ids(ep, c, args)
    return name, args


# --------------------------------------------------------------------------------------
# invariants
# --------------------------------------------------------------------------------------


class Before:
    __slots__ = ("n_entries", "balance", "window", "over", "ops_left", "calls")

    def __init__(self, ep) -> None:
        self.n_entries = len(ep.ledger.entries)
        self.balance = dict(ep.ledger.balance)
        self.window = ep.window
        self.over = ep.over
        self.ops_left = ep.ops_left
        self.calls = ep.calls


def check_state(ep, where: str) -> None:
    """Invariants 2-4 on the episode as it stands."""
    sums = {a: 0 for a in Account}
    for entry in ep.ledger.entries:
        at, window, account, kind, amount, ref = entry
        assert account in sums, f"{where}: ledger entry on an unknown account {entry!r}"
        assert type(amount) is int and amount != 0, f"{where}: bad ledger amount {entry!r}"
        sums[account] += amount
    bal = ep.ledger.balance
    for account in Account:
        assert bal[account] == sums[account], (
            f"{where}: {account} balance {bal[account]} != sum of its entries {sums[account]}")
    assert ep.cash() == sums[Account.CASH], f"{where}: cash {ep.cash()} != sum of cash entries"
    assert ep.ledger.net_assets() == (bal[Account.CASH] + bal[Account.DEPOSIT] + bal[Account.RECEIVABLE]
                                      + bal[Account.IN_TRANSIT]), f"{where}: net assets do not add up"

    units = cost = 0
    for v in ep.variants:
        lot_units = 0
        for lot in v.lots:
            assert type(lot.units) is int and lot.units >= 0, f"{where}: {v.id} lot {lot.po_id} has {lot.units} units"
            assert lot.units > 0, f"{where}: {v.id} keeps an empty lot {lot.po_id} (take_units would spin on it)"
            lot_units += lot.units
            cost += lot.units * lot.unit_cost
        assert v.on_hand >= 0, f"{where}: {v.id} on_hand {v.on_hand}"
        assert v.on_hand == lot_units, f"{where}: {v.id} on_hand counter {v.on_hand} != {lot_units} units in its lots"
        assert v.reserved >= 0, f"{where}: {v.id} reserved {v.reserved}"
        units += lot_units
    assert ep.stock_units == units, f"{where}: stock_units counter {ep.stock_units} != {units} units in lots"
    assert ep.stock_cost == cost, f"{where}: stock_cost counter {ep.stock_cost} != {cost} cents in lots"
    assert ep.open_orders() == [o for o in ep.orders.values() if o.status == OrderState.OPEN], (
        f"{where}: the episode's index of open orders disagrees with its orders")
    assert ep.open_returns() == [r for r in ep.returns.values() if r.status == ReturnState.OPEN], (
        f"{where}: the episode's index of open returns disagrees with its returns")

    per_window = ep.task.ops_per_window
    assert 0 <= ep.ops_left <= per_window, f"{where}: ops_left {ep.ops_left} outside 0..{per_window}"
    if not ep.over:
        assert ep.ops_left >= 1, f"{where}: the store is open with no operation left in the window"


def check_call(ep, name, arguments, result, before: Before, where: str) -> None:
    # (1) a structured result, readable the way an agent reads it.
    assert isinstance(result, ToolResult), f"{where}: returned {type(result).__name__}, not a ToolResult"
    assert isinstance(result.header, str) and result.header, f"{where}: empty header"
    if result.ok:
        assert isinstance(result.data, dict), f"{where}: ok result without a data object"
    else:
        err = result.error
        assert isinstance(err, dict), f"{where}: error is {err!r}"
        assert isinstance(err.get("code"), str) and err["code"], f"{where}: error without a string code: {err!r}"
        assert isinstance(err.get("message"), str) and err["message"], f"{where}: error without a message: {err!r}"
    json.dumps(result.as_dict(), allow_nan=False)
    assert isinstance(result.text(), str)

    # (2)-(4)
    check_state(ep, where)

    advanced = (ep.window, ep.over) != (before.window, before.over)
    spec = REGISTRY.get(name) if isinstance(name, str) else None

    # (4) operation accounting: every known non-free call on an open store costs one, a refused
    # one included, whatever its arguments; the free tool, unknown tools and a closed store cost none.
    if spec is not None and not spec.free and not before.over:
        assert ep.calls == before.calls + 1, f"{where}: {name} did not count as one operation"
        if not advanced:
            assert ep.ops_left == before.ops_left - 1, (
                f"{where}: ops_left went {before.ops_left} -> {ep.ops_left} without the window closing")
    else:
        assert ep.calls == before.calls and ep.ops_left == before.ops_left and not advanced, (
            f"{where}: {name} spent an operation or moved the world")
    if spec is None:
        assert not result.ok and result.error["code"] == "unknown_tool", f"{where}: {result.as_dict()!r}"

    # (5) a refusal moves no money unless the window closed under it.
    if not result.ok and not advanced:
        assert len(ep.ledger.entries) == before.n_entries and dict(ep.ledger.balance) == before.balance, (
            f"{where}: refused with {result.error['code']} but the ledger changed")

    # (6) a closed store stays closed and frozen.
    if before.over:
        assert ep.over
        assert len(ep.ledger.entries) == before.n_entries and dict(ep.ledger.balance) == before.balance, (
            f"{where}: the ledger moved after the store closed")
        if spec is not None and not spec.free:
            assert not result.ok and result.error["code"] == "store_closed", (
                f"{where}: {name} on a closed store answered {result.as_dict()!r}")
        if spec is not None and spec.free and arguments in ({}, None):
            assert result.ok, f"{where}: the free {name} is refused on a closed store"


def play(ep, c: Chooser, n_calls: int, *, end_percent: int, stop_at: int | None, log=None) -> dict:
    """Drive one episode; returns counters.  ``log`` receives one line per call."""
    check_state(ep, "armed")
    counts = {"calls": 0, "ok": 0, "refused": 0}
    for i in range(n_calls):
        if stop_at is not None and i == stop_at and not ep.over:
            ep.stop()
            if log:
                log(f"#{i} ep.stop() -> {ep.end_reason}")
            check_state(ep, f"after ep.stop() at step {i}")
        name, arguments = build_call(ep, c, end_percent)
        before = Before(ep)
        where = f"step {i}: {safe_repr(name, 60)}({safe_repr(arguments)}) in window {before.window}"
        try:
            result = ep.call(name, arguments)
        except Exception as exc:  # invariant (1): refusals are results, never exceptions
            raise AssertionError(f"{where} raised {type(exc).__name__}: {exc}") from exc
        if log:
            outcome = "ok" if result.ok else result.error["code"]
            log(f"#{i} w{before.window}->{ep.window} {safe_repr(name, 60)}({safe_repr(arguments)}) -> {outcome}")
        check_call(ep, name, arguments, result, before, where)
        counts["calls"] += 1
        counts["ok" if result.ok else "refused"] += 1
    return counts


# --------------------------------------------------------------------------------------
# the property
# --------------------------------------------------------------------------------------

STATS: dict[str, int] = {"episodes": 0, "calls": 0, "ok": 0, "refused": 0, "windows": 0, "finished": 0}


@pytest.fixture(scope="module", autouse=True)
def _report_stats():
    yield
    if STATS["episodes"]:
        print(f"\ninvariants: {STATS['episodes']} episodes, {STATS['calls']} calls "
              f"({STATS['ok']} ok, {STATS['refused']} refused), {STATS['windows']} windows advanced, "
              f"{STATS['finished']} episodes over")


@pytest.mark.parametrize("task_id", TASKS)
@settings(max_examples=EXAMPLES_PER_TASK, deadline=None, database=None, print_blob=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(seed=st.sampled_from(SEEDS), n_calls=st.integers(MIN_CALLS, MAX_CALLS),
       end_percent=st.sampled_from([3, 10, 30]), stop=st.booleans(), data=st.data())
def test_invariants_hold_under_valid_and_hostile_calls(task_id, seed, n_calls, end_percent, stop, data):
    ep = arm(task_id, seed)
    c = HypothesisChooser(data)
    stop_at = n_calls - c.between(1, 5) if stop else None
    note(f"arm({task_id!r}, {seed}); {n_calls} calls; end_window {end_percent}%; stop_at={stop_at}")
    counts = play(ep, c, n_calls, end_percent=end_percent, stop_at=stop_at, log=note)
    STATS["episodes"] += 1
    STATS["windows"] += ep.window
    STATS["finished"] += ep.over
    for k in ("calls", "ok", "refused"):
        STATS[k] += counts[k]


# --------------------------------------------------------------------------------------
# one full, deterministic episode
# --------------------------------------------------------------------------------------


def test_full_seeded_episode_to_the_horizon_then_store_closed():
    ep = arm("short-runway", 7)
    c = RandomChooser(random.Random(0))
    steps = 0
    while not ep.over:
        assert steps < 3_000, "the episode did not reach its horizon"
        play(ep, c, 1, end_percent=8, stop_at=None)
        steps += 1
    assert ep.end_reason == "horizon reached", ep.end_reason
    assert ep.window == ep.n_windows
    check_state(ep, "at the horizon")
    for v in ep.variants:
        assert not v.lots, f"{v.id} still holds stock after liquidation"

    frozen = (list(ep.ledger.entries), dict(ep.ledger.balance))
    for name in PAID_TOOLS:
        for arguments in ({}, None, GENERATORS[name](ep, c), mutate(ep, c, GENERATORS[name](ep, c))):
            before = Before(ep)
            result = ep.call(name, arguments)
            assert not result.ok and result.error["code"] == "store_closed", (name, arguments, result.as_dict())
            check_call(ep, name, arguments, result, before, f"closed store: {name}")
    for name in FREE_TOOLS:
        result = ep.call(name, {})
        assert result.ok, result.as_dict()
    assert ep.call("store_status").data["store_open"] is False
    assert (ep.ledger.entries, ep.ledger.balance) == frozen
    assert steps > 100


# --------------------------------------------------------------------------------------
# regressions: bugs found by the property above
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("tool,arguments", [
    ("set_price", {"product_id": "PRD-001", "price": "1e30"}),
    ("set_price", {"product_id": "PRD-001", "price": 10**30}),
    ("set_price", {"product_id": "PRD-001", "price": 1e300}),
    ("set_price", {"product_id": "PRD-001", "price": "1e999999"}),
    ("list_supply_product", {"supply_product_id": "SP-0150", "price": "9" * 27}),
    ("refund_return", {"return_id": "RET-20001", "amount": "1e26"}),
])
def test_huge_money_amount_is_refused_not_raised(tool, arguments):
    """Regression: _money used to quantize any finite amount, and from 1e26 dollars up
    decimal.InvalidOperation escaped Episode.call after the operation was spent."""
    ep = arm("short-runway", 7)
    result = ep.call(tool, arguments)
    assert not result.ok and result.error["code"] == "invalid_argument"
    assert ep.ops_left == ep.task.ops_per_window - 1


def test_non_object_arguments_cost_one_operation_and_close_the_window_on_the_last_one():
    ep = arm("short-runway", 7)
    per_window = ep.task.ops_per_window
    for i in range(per_window - 1):
        result = ep.call("list_orders", ["page", 1] if i % 2 else "page=1")
        assert not result.ok and result.error["code"] == "invalid_argument"
    assert (ep.window, ep.ops_left) == (0, 1)
    result = ep.call("get_product", [("product_id", "PRD-001")])
    assert not result.ok and result.error["code"] == "invalid_argument"
    assert (ep.window, ep.ops_left) == (1, per_window)


def test_refused_end_window_on_the_last_operation_closes_the_window():
    ep = arm("short-runway", 7)
    per_window = ep.task.ops_per_window
    for _ in range(per_window - 1):
        ep.call("platform_terms", {})
    assert (ep.window, ep.ops_left) == (0, 1)
    result = ep.call("end_window", {"now": True})
    assert not result.ok and result.error["code"] == "invalid_argument"
    assert ep.window == 1 and ep.ops_left == per_window, (
        f"window {ep.window}, ops_left {ep.ops_left}: window 1 still open after {per_window} operations")


def test_ops_left_never_goes_negative_under_refused_end_window():
    ep = arm("short-runway", 7)
    per_window = ep.task.ops_per_window
    for _ in range(per_window - 1):
        ep.call("platform_terms", {})
    ep.call("end_window", {"now": True})
    ep.call("end_window", [])
    assert 0 <= ep.ops_left <= per_window, f"ops_left {ep.ops_left} in window {ep.window}"


@pytest.mark.parametrize("anchor", ["smart-triage", "blast-list", "rule-based"])
def test_the_open_indexes_agree_with_a_scan_through_a_played_shift(anchor):
    """The status probe and the awaiting-shipment and open-returns lists read the episode's
    indexes; an anchor's whole shift, window by window, keeps them equal to a full scan."""
    from environment.anchors.policies import get_anchor

    ep = arm("cash-crunch", 11)
    policy = get_anchor(anchor)
    for window in range(1, ep.n_windows + 1):
        policy.play_until(ep, window)
        check_state(ep, f"{anchor} window {window}")
    ep.stop()
    check_state(ep, f"{anchor} settled")
