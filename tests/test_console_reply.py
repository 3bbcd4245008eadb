"""A tool call's reply written out in Python (console.reply) is the markup its templates give.

Every function of :mod:`console.reply` is checked against the template it stands for,
byte for byte, over calls of every tool (tables, cards, the purchase-order grid, row
actions, refusals by the store and before it, the inbox), while the shift is active and
while it is not, and for a re-read.  Call ids and CSRF tokens are random per rendering,
so both sides have them replaced by marks before the comparison.
"""
import re
import uuid

import pytest
from django.middleware.csrf import get_token
from django.template.loader import render_to_string
from django.test import RequestFactory

from console import reply, workspace
from console.templatetags.console_tags import present_call, tool_form
from console.toolforms import form_values, tool_forms
from shifts.models import Shift
from shifts.results import result_of

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_console_cache")]

RANDOM = re.compile(r'(name="call_id" value=")[0-9a-f]{32}|(name="csrfmiddlewaretoken" value=")[A-Za-z0-9]{64}')
TRICKY = "<b>\"O'Neil\" & co</b>"


def marked(html: str) -> str:
    return RANDOM.sub(lambda m: (m.group(1) or m.group(2)) + "#", str(html))


def difference(got: str, expected: str) -> str:
    """Where two renderings part, with some context, for the assertion message."""
    at = next((i for i, (a, b) in enumerate(zip(got, expected, strict=False)) if a != b), min(len(got), len(expected)))
    return f"at {at}: got {got[max(0, at - 80):at + 80]!r}\nexpected {expected[max(0, at - 80):at + 80]!r}"


def first(done, key):
    data = result_of(done.call).data or {}
    rows = data.get("rows") or []
    return next((row[key] for row in rows if row.get(key)), None)


def play(user, shift):
    """Calls of every tool, each with what the ones before it found; yields each CallDone."""
    def call(tool, call_id="", **arguments):
        return workspace.perform_call(Shift(pk=shift.pk), tool, arguments, call_id or uuid.uuid4().hex, owner=user.pk)

    orders = call("list_orders", page_size=5, status="awaiting_shipment")
    yield orders
    order = first(orders, "order_id") or "ORD-none"
    yield call("get_order", order_id=order)
    shipped = call("fulfill_order", order_id=order)
    yield shipped
    yield call("fulfill_order", call_id=shipped.call.call_id, order_id=order)  # pressed twice: the same call
    yield call("list_orders", page_size=5)  # the shipped row is marked done
    returns = call("list_returns")
    yield returns
    ret = first(returns, "return_id") or "RET-none"
    yield call("get_return", return_id=ret)
    yield call("refund_return", return_id=ret)
    yield call("list_returns", status="all")  # the inbox shows the refund sent
    others = [r["return_id"] for r in (result_of(returns.call).data or {}).get("rows", []) if r["return_id"] != ret]
    yield call("refund_return", return_id=others[0] if others else "RET-none", amount="1.00")  # left open
    products = call("list_products", page_size=5)
    yield products
    product = first(products, "product_id") or "PRD-none"
    yield call("get_product", product_id=product)
    yield call("get_product", product_id="nope")  # refused by the store
    yield call("set_price", product_id=product, price="abc")  # refused by the store
    yield call("set_price", product_id=product, price="49.50")
    yield call("set_listing_status", product_id=product, status="active")
    yield call("update_listing_copy", product_id=product, description=TRICKY)
    yield call("competitor_watch")
    yield call("list_inventory", page_size=5)
    yield call("list_inventory", page_size=5, level="variant", only="low")
    supply = call("search_supply_catalog", page_size=5)
    yield supply
    supply_id = first(supply, "supply_product_id") or "SP-none"
    vendor = first(supply, "vendor_id") or "VND-none"
    yield call("supply_product_detail", supply_product_id=supply_id)
    yield call("list_inventory", page_size=5)  # now with Reorder sources
    yield call("supplier_profile", vendor_id=vendor)
    placed = call("place_purchase_order", supply_product_id=supply_id, quantity=1)
    yield placed
    pos = call("list_purchase_orders")
    yield pos
    yield call("cancel_purchase_order", po_id=first(pos, "po_id") or "PO-none")
    yield call("list_supply_product", supply_product_id=supply_id, price="10.00")
    yield call("dispose_stock", variant_id="nope", quantity=1)
    yield call("cancel_order", order_id="ORD-none", reason=TRICKY)
    yield call("finance_summary")
    yield call("ledger_entries", page_size=5)
    yield call("sales_report", page_size=5)
    yield call("platform_terms")
    yield call("announcements", page_size=5)
    yield call("store_status")
    yield call("list_orders", page_size=2, page=2)  # a middle page: Previous page and Next page
    yield call("list_orders", page_size="many")
    yield call("end_window")
    yield call("list_orders", page_size=3)  # a new window: older views are stale


def template_reply(request, done, inbox_changed, cached_changed):
    form = tool_forms()[done.call.tool]
    return render_to_string("console/_call_response.html", {
        "shift": done.shift, "shown": done.call, "shown_result": result_of(done.call), "header": done.header,
        "inbox": done.inbox if inbox_changed else None, "cached": done.cached if cached_changed else [],
        "fresh": done.fresh, "form": form, "values": form_values(form, done.call.arguments),
        "inbox_changed": inbox_changed, "cached_changed": cached_changed}, request)


def python_reply(request, done, inbox_changed, cached_changed):
    from django.template import Context

    form = tool_forms()[done.call.tool]
    page = reply.Page(done.shift, get_token(request))
    form_context = Context({"shift": done.shift, "csrf_token": page.context["csrf_token"],
                            "values": form_values(form, done.call.arguments)}, autoescape=True)
    return reply.call_reply(shown=done.call, result=result_of(done.call), view=present_call(done.call),
                            header=done.header, fresh=done.fresh, inbox=done.inbox if inbox_changed else None,
                            inbox_changed=inbox_changed, cached=done.cached if cached_changed else [],
                            cached_changed=cached_changed, form_html=tool_form(form_context, form, True), page=page)


def test_every_reply_is_the_templates_markup(user, shift):
    request = RequestFactory().post("/")
    request.user = user
    seen_tools, kinds = set(), set()
    for done in play(user, shift):
        seen_tools.add(done.call.tool)
        view = present_call(done.call)
        kinds.update({"card" if view.card else "", "table" if view.tables else "",
                      "problem" if view.problem else "", "lines" if view.card and view.card.lines else "",
                      "actions" if any(t.has_actions for t in view.tables) else ""})
        for inbox_changed, cached_changed in ((True, True), (False, False)):
            expected = marked(template_reply(request, done, inbox_changed, cached_changed))
            got = marked(python_reply(request, done, inbox_changed, cached_changed))
            if got != expected:
                print(difference(got, expected))
            assert got == expected, (done.call.tool, done.call.arguments, difference(got, expected))
    assert len(seen_tools) == 29
    assert {"card", "table", "problem", "lines", "actions"} <= kinds


@pytest.mark.parametrize("status", ["paused", "ended"])
def test_panels_of_a_shift_that_is_not_active(user, shift, status):
    """Row actions, the purchase-order grid and the refund forms are left out unless the
    shift is active; a re-read has its banner."""
    request = RequestFactory().get("/")
    request.user = user
    token = get_token(request)
    for done in play(user, shift):
        done.shift.status = status
        page = reply.Page(done.shift, token)
        result = result_of(done.call)
        for rereading in (False, True):
            expected = render_to_string("console/_result.html", {
                "shift": done.shift, "shown": done.call, "shown_result": result, "rereading": rereading,
                "csrf_token": token}, request)
            got = reply.result_html(done.call, result, present_call(done.call), page, rereading=rereading)
            assert marked(got) == marked(expected), (status, done.call.tool, difference(marked(got), marked(expected)))
        expected = render_to_string("console/_inbox.html", {"shift": done.shift, "inbox": done.inbox,
                                                            "csrf_token": token}, request)
        got = marked(reply.inbox_html(done.inbox, page))
        assert got == marked(expected), difference(got, marked(expected))
        done.shift.status = "active"


def test_empty_panels(user, shift):
    request = RequestFactory().get("/")
    token = get_token(request)
    page = reply.Page(shift, token)
    assert reply.header_html(None) == render_to_string("console/_header.html", {"header": None})
    assert reply.cached_html([], None, shift.pk, oob=True) == render_to_string(
        "console/_cached.html", {"cached": [], "header": None, "shift": shift, "oob": True})
    assert reply.inbox_html(None, page) == render_to_string("console/_inbox.html", {"inbox": None, "shift": shift})
    assert reply.result_html(None, None, None, page) == render_to_string("console/_result.html", {"shown": None})


def test_a_call_sent_twice_is_answered_again_saying_so_and_spends_nothing(user, shift):
    request = RequestFactory().post("/")
    request.user = user
    first_send = workspace.perform_call(Shift(pk=shift.pk), "list_orders", {"page_size": 5}, "a" * 32, owner=user.pk)
    again = workspace.perform_call(Shift(pk=shift.pk), "list_orders", {"page_size": 5}, "a" * 32, owner=user.pk)
    assert not again.fresh and again.call.seq == first_send.call.seq
    assert again.header.ops_left == first_send.header.ops_left
    banner = (f"Sent again: call #{first_send.call.seq} had already been made, so its answer is shown again and "
              "nothing more was spent.")
    assert banner in python_reply(request, again, False, False)
    assert banner not in python_reply(request, first_send, False, False)
