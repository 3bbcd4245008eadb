"""The leak audit: nothing the operator reads may reveal the hidden world.

Every one of the 29 tools is driven with valid arguments, discovering ids only
from what the read tools return, on a task with silent events (season-flip), a
task with a rival store (counter-punch), and every evaluation lens that carries
rumoured events.  season-flip (and each lens with scripted happenings) is also
stepped through every window, reading store_status, announcements and
competitor_watch as it goes.  Every result's ``.text()`` is collected and
searched for the task id, the seed, hidden field names, event kind names, and
the hidden magnitudes as they are written in the task file.
"""
from __future__ import annotations

import json
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from environment import simtime
from environment.api import arm
from environment.tasks import all_tasks, get_task
from environment.tasks.model import Channel, Task
from environment.tools.registry import REGISTRY

SEED = 7
SILENT_TASK = "season-flip"
RIVAL_TASK = "counter-punch"

HIDDEN_FIELDS = ["popularity", "elasticity", "mix", "ref_price", "floor_bp", "floor", "base_pressure",
                 "price_index", "volatility", '"overlap"', "loyal_share", "defect_rate", "demand", "lambda",
                 "expected"]
EVENT_KINDS = ["demand_multiplier", "category_bias", "market_crash", "supply_shock_country", "quality_shift",
               "supplier_failure"]
COMPETITOR_SECRETS = ("base_pressure", "volatility", "price_index")
EVENT_SECRETS = ("factor", "defect_rate", "delist_share")  # the fractional magnitudes an event carries


# --- what the task file says, as written ----------------------------------------------------------


def _blocks(text: str, header: str) -> list[str]:
    """The raw key = value lines of every ``[[header]]`` table, up to the next table header."""
    out = []
    for chunk in re.split(r"(?m)^\s*\[\[" + re.escape(header) + r"\]\]\s*$", text)[1:]:
        out.append(re.split(r"(?m)^\s*\[", chunk, maxsplit=1)[0])
    return out


def _literal(block: str, key: str) -> str | None:
    m = re.search(r"(?m)^\s*" + re.escape(key) + r"\s*=\s*([^\s#]+)", block)
    return m.group(1) if m else None


def _forms(literal: str) -> set[str]:
    """The number as written, and as Python would print the parsed float (0.550 -> 0.55)."""
    return {literal, repr(float(literal))}


def hidden_numbers(task: Task) -> dict[str, set[str]]:
    """{what: forms} for silent and rumoured event factors and the rivals' secret parameters."""
    text = Path(task.source).read_text()
    out: dict[str, set[str]] = {}
    for i, block in enumerate(_blocks(text, "events")):
        raw = tomllib.loads(block)
        silent = raw.get("announce") is False
        rumoured = "rumor" in raw
        if not (silent or rumoured):
            continue  # an announced event may state its magnitude; that is the channel
        for key in EVENT_SECRETS:
            literal = _literal(block, key)
            if literal is not None:
                out[f"events[{i}] ({'silent' if silent else 'rumoured'} {raw['kind']}) {key}"] = _forms(literal)
    for i, block in enumerate(_blocks(text, "competition.stores")):
        for key in COMPETITOR_SECRETS:
            literal = _literal(block, key)
            if literal is not None:
                out[f"competition.stores[{i}].{key}"] = _forms(literal)
    # A bare integer (factor = 2) would match every count in every result; none is in the files today.
    # If one appears, it must be audited differently, not silently skipped.
    for what, forms in out.items():
        assert all("." in f for f in forms), f"{task.id}: {what} = {forms} is too generic to audit as text"
    return out


def token(number: str) -> re.Pattern:
    """The number as a whole token: 0.6 matches "0.6" and "-0.6" but not "10.60", "0.65" or "20.6"."""
    return re.compile(r"(?<![\d.])" + re.escape(number) + r"(?![\d])")


# --- driving every tool -------------------------------------------------------------------------------


@dataclass
class Transcript:
    task: Task
    texts: list[tuple[str, str]] = field(default_factory=list)  # (tool, text)
    headers: list[str] = field(default_factory=list)
    tools: set[str] = field(default_factory=set)
    authored: set[str] = field(default_factory=set)  # post texts the task author or engine chose to publish
    posts_seen: list[int] = field(default_factory=list)
    rivals_seen: list[int] = field(default_factory=list)
    event_log: list[dict] = field(default_factory=list)

    def record(self, name: str, result) -> None:
        self.texts.append((name, result.text()))
        self.headers.append(result.header)
        self.tools.add(name)


class Driver:
    def __init__(self, task: Task, transcript: Transcript) -> None:
        self.ep = arm(task, SEED)
        self.t = transcript

    def call(self, name: str, arguments: dict | None = None, *, ok: bool = True) -> dict | None:
        result = self.ep.call(name, arguments or {})
        self.t.record(name, result)
        assert result.ok == ok, (name, arguments, result.error)
        return result.data

    def fresh(self, ops: int) -> None:
        """Start a new window if fewer than ``ops`` remain, so a look-up and the write that uses it
        happen in the same window (the world does not move between them)."""
        if self.ep.ops_left < ops:
            self.call("end_window")

    def rows(self, name: str, arguments: dict | None = None) -> list[dict]:
        return self.call(name, {"page_size": 100, **(arguments or {})})["rows"]


def drive_every_tool(task: Task, transcript: Transcript) -> None:
    d = Driver(task, transcript)
    d.call("store_status")
    terms = d.call("platform_terms")
    d.call("finance_summary")
    d.call("announcements")
    d.call("competitor_watch")

    products = d.rows("list_products", {"status": "all"})
    product = d.call("get_product", {"product_id": products[0]["product_id"]})
    d.rows("list_products", {"status": "active", "sort": "price"})
    d.rows("list_inventory")
    d.rows("list_inventory", {"level": "variant", "only": "in_stock"})
    d.rows("list_inventory", {"level": "variant", "product_id": product["product_id"]})

    orders = d.rows("list_orders", {"status": "all"})
    for status in ("awaiting_shipment", "shipped", "delivered", "cancelled"):
        d.rows("list_orders", {"status": status})
    d.call("get_order", {"order_id": orders[0]["order_id"]})

    returns = d.rows("list_returns", {"status": "all"})
    d.call("get_return", {"return_id": returns[0]["return_id"]})
    d.call("get_order", {"order_id": returns[0]["order_id"]})

    supply = d.rows("search_supply_catalog")
    d.call("supply_product_detail", {"supply_product_id": supply[0]["supply_product_id"]})
    d.call("supplier_profile", {"vendor_id": supply[0]["vendor_id"]})
    d.rows("list_purchase_orders", {"status": "all"})

    d.rows("ledger_entries")
    d.rows("ledger_entries", {"account": "receivable"})
    for group in ("product", "category", "variant", "day"):
        d.rows("sales_report", {"group_by": group, "days": 60})
    d.rows("sales_report", {"product_id": product["product_id"], "group_by": "variant", "days": 550})

    # Writes.
    d.fresh(4)
    d.call("set_price", {"product_id": product["product_id"], "price": product["price_max"]})
    d.call("update_listing_copy", {"product_id": product["product_id"],
                                   "description": "Midweight cotton twill, relaxed fit, cold wash; "
                                                  "in navy, olive and sand."})
    shown = next(p for p in products if p["status"] == "active")
    d.call("set_listing_status", {"product_id": shown["product_id"], "status": "inactive"})
    d.call("set_listing_status", {"product_id": shown["product_id"], "status": "active"})

    d.fresh(8)
    unlisted = d.rows("search_supply_catalog", {"listed": "not_in_shop"})[0]
    listed = d.call("list_supply_product", {"supply_product_id": unlisted["supply_product_id"], "price": "58.00"})
    d.call("get_product", {"product_id": listed["product_id"]})
    detail = d.call("supply_product_detail", {"supply_product_id": unlisted["supply_product_id"]})
    d.call("supplier_profile", {"vendor_id": detail["vendor_id"]})
    po = d.call("place_purchase_order", {"supply_product_id": unlisted["supply_product_id"],
                                         "quantity": max(detail["moq"], 24)})
    d.rows("list_purchase_orders")
    d.call("cancel_purchase_order", {"po_id": po["po_id"]})

    d.fresh(4)
    waiting = [o for o in d.rows("list_orders") if o["in_stock"]]
    assert len(waiting) >= 2, "precondition: two shippable orders"
    d.call("fulfill_order", {"order_id": waiting[0]["order_id"]})
    d.call("get_order", {"order_id": waiting[0]["order_id"]})
    d.call("cancel_order", {"order_id": waiting[1]["order_id"], "reason": "customer asked"})

    d.fresh(6)
    open_returns = d.rows("list_returns")
    assert len(open_returns) >= 2, "precondition: two open returns"
    first, second = open_returns[0]["return_id"], open_returns[1]["return_id"]
    d.call("refund_return", {"return_id": first, "amount": "1.00"})
    d.call("refund_return", {"return_id": first})
    d.call("get_return", {"return_id": first})
    d.call("refund_return", {"return_id": second})
    d.call("refund_return", {"return_id": first}, ok=False)  # closed now: the refusal is read too

    d.fresh(2)
    variant = d.rows("list_inventory", {"level": "variant", "only": "in_stock"})[0]
    d.call("dispose_stock", {"variant_id": variant["variant_id"], "quantity": 1})

    # A few refusals: their messages are text the operator reads too.
    d.call("place_purchase_order", {"supply_product_id": supply[0]["supply_product_id"], "quantity": 5000},
           ok=False)
    d.call("dispose_stock", {"variant_id": variant["variant_id"], "quantity": 10_000}, ok=False)
    d.call("get_product", {"product_id": "PRD-999"}, ok=False)

    d.call("finance_summary")
    d.call("announcements")
    d.call("competitor_watch")
    d.call("end_window")
    d.call("store_status")
    d.call("competitor_watch")
    assert terms["listing_cap"] == task.listing_cap
    transcript.authored |= {p["text"] for p in d.ep.events.posts}


def step_every_window(task: Task, transcript: Transcript) -> None:
    d = Driver(task, transcript)
    while not d.ep.over:
        d.call("store_status")
        transcript.posts_seen.append(d.call("announcements")["total"])
        transcript.rivals_seen.append(len(d.call("competitor_watch")["rivals"]))
        d.call("end_window")
    d.call("store_status")
    d.call("announcements", ok=False)
    d.call("competitor_watch", ok=False)
    transcript.event_log = list(d.ep.event_log)
    transcript.authored |= {p["text"] for p in d.ep.events.posts}


# --- the lenses ---------------------------------------------------------------------------------------


def _rumoured_eval_lenses() -> list:
    lenses = [t.id for t in all_tasks("eval") if any(ev.channel == Channel.RUMOURED for ev in t.events)]
    if lenses:
        return lenses
    return [pytest.param("eval-rumoured", marks=pytest.mark.skip(
        reason="no evaluation lens with rumoured events exists yet in environment/tasks/files/eval/"))]


LENSES = [SILENT_TASK, RIVAL_TASK, *_rumoured_eval_lenses()]
_TRANSCRIPTS: dict[str, Transcript] = {}


@pytest.fixture(params=LENSES)
def transcript(request) -> Transcript:
    """All tools driven once, plus every window stepped through, for one lens (built once per lens)."""
    task_id = request.param
    if task_id not in _TRANSCRIPTS:
        task = get_task(task_id)
        t = Transcript(task)
        drive_every_tool(task, t)
        step_every_window(task, t)
        _TRANSCRIPTS[task_id] = t
    return _TRANSCRIPTS[task_id]


def _hits(text: str, needle: str, flags=0, pattern: re.Pattern | None = None) -> list[str]:
    pattern = pattern or re.compile(re.escape(needle), flags)
    return [text[max(0, m.start() - 60):m.end() + 60] for m in pattern.finditer(text)][:3]


def _strip_authored(text: str, authored: set[str]) -> str:
    """Remove the words the author wrote for publication (announced messages, rumour lines).

    A rumour may well say "demand" or "expected" in plain English: that wording is the channel,
    chosen by the task author, not a leaked field.  Numbers are still audited in the full text.
    """
    for post in authored:
        text = text.replace(json.dumps(post, ensure_ascii=False)[1:-1], "")
    return text


# --- the audit ------------------------------------------------------------------------------------------


def test_every_tool_was_driven(transcript):
    assert transcript.tools == set(REGISTRY)
    assert len(transcript.tools) == 29


def test_every_window_was_stepped(transcript):
    task = transcript.task
    assert len(transcript.posts_seen) == task.windows
    assert all(re.search(rf"window {task.windows} of {task.windows}", h) for h in transcript.headers[-3:])


def word_leaks(transcript: Transcript, word: str, *, strip_authored: bool = False) -> list:
    bad = []
    for tool, text in transcript.texts:
        if strip_authored:
            text = _strip_authored(text, transcript.authored)
        if word.lower() in text.lower():
            bad.append((tool, _hits(text, word, re.I)))
    return bad


def test_no_text_names_the_task(transcript):
    assert not word_leaks(transcript, transcript.task.id)


def test_no_header_names_the_task(transcript):
    task_id = transcript.task.id.lower()
    assert transcript.headers and not [h for h in transcript.headers if task_id in h.lower()]


def test_no_text_mentions_a_seed(transcript):
    assert not word_leaks(transcript, "seed")


@pytest.mark.parametrize("name", HIDDEN_FIELDS)
def test_no_hidden_field_name(transcript, name):
    assert not word_leaks(transcript, name, strip_authored=True)


@pytest.mark.parametrize("kind", EVENT_KINDS)
def test_no_event_kind_name(transcript, kind):
    assert not word_leaks(transcript, kind)


def test_every_rumour_reached_the_operator(transcript):
    """The rumoured channel was actually read: each rumour line shows up in announcements."""
    announced = "\n".join(text for tool, text in transcript.texts if tool == "announcements")
    for ev in transcript.task.events:
        if ev.channel == Channel.RUMOURED:
            assert json.dumps(ev.rumor, ensure_ascii=False)[1:-1] in announced


# Fields whose value is pure clock arithmetic on two things the operator already sees: the header's
# time and a timestamp in the same row.  counter-punch shows "hours_to_deadline":0.6 for an order
# due 36 minutes after the window starts, which collides with the rival's base_pressure = 0.6.
# Rather than drop 0.6 from the audit, each such value is first proved to be exactly
# round((timestamp - now) / 1 h, 1) and only then blanked for the number scan.
CLOCK_FIELDS = {"hours_to_deadline": "deadline", "hours_to_escalation": "escalates_at"}


def numeric_view(text: str, window_hours: int) -> str:
    header, body = text.split("\n", 1)
    now = simtime.parse(header.split(" UTC", 1)[0])
    data = json.loads(body)
    if isinstance(data, dict) and data.get("window_ended"):
        now -= window_hours * 60  # the body was read before the call's last operation closed the window

    def walk(node) -> None:
        if isinstance(node, dict):
            for key, stamp in CLOCK_FIELDS.items():
                if node.get(key) is not None:
                    derived = round((simtime.parse(node[stamp]) - now) / 60, 1)
                    assert node[key] == derived, f"{key} {node[key]} is not clock arithmetic ({derived})"
                    node[key] = None
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(data)
    return header + "\n" + json.dumps(data, separators=(",", ":"), ensure_ascii=False)


def test_clock_fields_are_clock_arithmetic(transcript):
    for _tool, text in transcript.texts:
        numeric_view(text, transcript.task.window_hours)


def number_leaks(transcript: Transcript) -> list:
    numbers = hidden_numbers(transcript.task)
    views = [(tool, numeric_view(text, transcript.task.window_hours)) for tool, text in transcript.texts]
    bad = []
    for what, forms in sorted(numbers.items()):
        for form in sorted(forms):
            pattern = token(form)
            for tool, text in views:
                if pattern.search(text):
                    bad.append((what, form, tool, _hits(text, form, pattern=pattern)))
    return bad


def test_no_hidden_magnitude_as_written(transcript):
    assert not number_leaks(transcript)


# --- the audit itself is pointed at something ---------------------------------------------------------------


def test_season_flip_audits_silent_factors():
    numbers = hidden_numbers(get_task(SILENT_TASK))
    assert {f for forms in numbers.values() for f in forms} >= {"0.55", "1.9"}


def test_counter_punch_audits_the_rivals_secrets():
    numbers = hidden_numbers(get_task(RIVAL_TASK))
    assert set(numbers) == {f"competition.stores[0].{k}" for k in COMPETITOR_SECRETS}
    assert {f for forms in numbers.values() for f in forms} == {"0.6", "0.04", "0.85"}


def test_silent_events_fire_and_post_nothing():
    t = Transcript(get_task(SILENT_TASK))
    step_every_window(t.task, t)
    assert {e["kind"] for e in t.event_log} == {"category_bias"}
    assert {e["channel"] for e in t.event_log} == {"silent"}
    assert t.posts_seen and set(t.posts_seen) == {0}


def test_the_rival_is_visible_every_window():
    t = Transcript(get_task(RIVAL_TASK))
    step_every_window(t.task, t)
    assert t.rivals_seen and set(t.rivals_seen) == {1}


def test_token_matching_is_whole_numbers_only():
    p = token("0.6")
    assert p.search('"x":0.6,') and p.search("-0.6 ") and p.search("0.6")
    assert not p.search("10.60") and not p.search("0.65") and not p.search("20.6") and not p.search("0.60")


def test_the_audit_catches_planted_leaks():
    """The checks above are not vacuous: plant each kind of leak in a fake result and see it caught."""
    header = ("2026-08-01 00:00 UTC | window 1 of 14 | operations left 11 of 12 | cash $1.00 | net assets $1.00"
              " | rating 4.60")
    t = Transcript(get_task(RIVAL_TASK))
    t.texts = [("get_product", header + '\n{"product_id":"PRD-001","popularity":3.1,"price":"10.60"}'),
               ("competitor_watch", header + '\n{"rivals":[{"pull":0.6,"task":"counter-punch"}]}'),
               ("list_orders", header + '\n{"rows":[{"deadline":"2026-08-01T00:36Z","hours_to_deadline":0.6}]}')]
    assert [tool for tool, _ in word_leaks(t, "popularity")] == ["get_product"]
    assert [tool for tool, _ in word_leaks(t, t.task.id)] == ["competitor_watch"]
    # 0.6 is caught as a bare value; the price 10.60 and the clock-derived 0.6 hours are not.
    assert [(what, tool) for what, _form, tool, _ in number_leaks(t)] == [
        ("competition.stores[0].base_pressure", "competitor_watch")]


def _shipped_and_followed(task: str, seed: int, order_id: str | None = None) -> list[tuple[str, dict]]:
    """Ship one order (the first in stock, or ``order_id``) and read it after every window until it
    is delivered: (what the store says of it at the start of each read, the order as get_order shows it)."""
    ep = arm(task, seed)
    if order_id is None:
        rows = ep.call("list_orders", {"page_size": 50}).data["rows"]
        order_id = next(r["order_id"] for r in rows if r["in_stock"])
    ep.call("fulfill_order", {"order_id": order_id})
    reads = []
    while True:
        shown = ep.call("get_order", {"order_id": order_id}).data
        reads.append((str(ep.orders[order_id].status), shown))
        if shown["status"] == "delivered":
            return reads
        ep.call("end_window", {})


@pytest.mark.parametrize(("task", "seed", "order_id"), [
    ("steady", SEED, None),
    ("steady", 1, "ORD-103315"),  # transit a whole number of windows: due exactly as a window starts
])
def test_an_order_on_its_way_shows_no_delivery_time_until_it_is_delivered(task, seed, order_id):
    reads = _shipped_and_followed(task, seed, order_id)
    *on_its_way, (_status, delivered) = reads
    assert on_its_way and all(shown["delivered_at"] is None and shown["status"] == "shipped" for _s, shown in on_its_way)
    assert delivered["delivered_at"] is not None and delivered["delivered_at"] >= delivered["shipped_at"]
