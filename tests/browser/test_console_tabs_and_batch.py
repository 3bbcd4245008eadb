"""Two tabs on one shift, and batches of row actions, in a real browser.

A call made in one tab reaches every other open tab of the shift through the shift's
websocket: the header, and also the history, the returns inbox and the cached views.
A batch of ticked rows says how many operations it will spend before it is sent, sends
one metered call per row, and stops at the first refusal, naming the row.
"""
from __future__ import annotations

import itertools
import json
import re

import pytest

PASSWORD = "pw-tabs-123"
_names = itertools.count(1)


def ready_participant(server, login, page, task: str, seed: int) -> int:
    """A participant past the briefing and practice, with a started scored shift, signed in; the shift's id."""
    username = f"tabs{next(_names)}-{server.port}"
    shift = server.ready_participant(username, PASSWORD, task, seed)
    login(page, username, PASSWORD)
    return shift


def quick(page, tool: str) -> int:
    """Press a quick-read button and wait for its result; the call's number."""
    before = page.evaluate("() => Number((document.querySelector('#result .result') || {dataset: {}}).dataset.seq || 0)")
    page.click(f".quick-bar button[data-tool={tool}]")
    page.wait_for_function(f"() => {{ const r = document.querySelector('#result .result'); "
                           f"return r && Number(r.dataset.seq) > {before}; }}")
    return int(page.get_attribute("#result .result", "data-seq"))


def batch_workspace(context, server, login, tool: str):
    """A participant's steady shift open at the workspace, confirmations accepted, showing a
    quick read's rows to tick; the page and the shift's number."""
    page = context.new_page()
    page.on("dialog", lambda d: d.accept())
    shift = ready_participant(server, login, page, "steady", 3)
    page.goto(f"/shifts/{shift}/")
    quick(page, tool)
    return page, shift


def two_tabs(context, server, login):
    """A participant's steady shift open in two tabs of one browser (the same session), both
    live on the shift's websocket, confirmations accepted; the tabs and the shift's number."""
    a = context.new_page()
    a.on("dialog", lambda d: d.accept())
    shift = ready_participant(server, login, a, "steady", 3)
    b = context.new_page()  # the same session: a second tab
    b.on("dialog", lambda d: d.accept())
    a.goto(f"/shifts/{shift}/")
    b.goto(f"/shifts/{shift}/")
    for tab in (a, b):
        tab.wait_for_selector("body[data-live=websocket]")
    return a, b, shift


@pytest.fixture
def context(browser, server):
    ctx = browser.new_context(base_url=server.url, viewport={"width": 1280, "height": 800})
    ctx.set_default_timeout(20_000)
    yield ctx
    ctx.close()


def test_a_call_in_one_tab_shows_in_the_other_tabs_history_inbox_and_cached_views(context, server, login):
    a, b, shift = two_tabs(context, server, login)
    assert "Call list_returns to fill the inbox" in b.inner_text("#inbox")
    assert b.locator("#cached-list_returns").count() == 0

    seq = quick(a, "list_returns")
    b.wait_for_selector(f"#history-list li#call-{seq}")
    b.wait_for_selector("#cached-list_returns")
    assert "Cached view: list_returns" in b.inner_text("#inbox")
    assert b.locator(f"#history-list li#call-{seq}").count() == 1
    assert b.url.endswith(f"/shifts/{shift}/")  # not reloaded: the panels were swapped in place

    # a call in B reaches A the same way, and A's own history has no duplicate row
    seq2 = quick(b, "list_orders")
    a.wait_for_selector(f"#history-list li#call-{seq2}")
    a.wait_for_selector("#cached-list_orders")
    b.wait_for_timeout(500)  # let B's own push land after its answer
    for tab in (a, b):
        ids = tab.eval_on_selector_all("#history-list li[id^=call-]", "els => els.map(e => e.id)")
        assert len(ids) == len(set(ids)) and ids[:2] == [f"call-{seq2}", f"call-{seq}"]


def in_stock_orders(page) -> list[str]:
    """The keys of the result's order rows that offer Ship."""
    return page.eval_on_selector_all(
        "#result table.result-table tbody tr:has(form.row-action[data-tool=fulfill_order])",
        "rows => rows.map(r => r.dataset.key)")


def test_a_row_shipped_in_another_tab_loses_its_actions_and_its_tick_here(context, server, login):
    a, b, shift = two_tabs(context, server, login)
    quick(a, "list_orders")
    quick(b, "list_orders")
    first, second = in_stock_orders(a)[:2]
    a.check(f'#result tr[data-key="{first}"] input.pick')
    a.check(f'#result tr[data-key="{second}"] input.pick')
    assert "2 rows ticked" in a.inner_text("#result .batch-count")

    b.click(f'#result tr[data-key="{first}"] form.row-action[data-tool=fulfill_order] button')
    b.wait_for_selector(f'#result tr[data-key="{first}"].done')
    shipped = int(b.eval_on_selector("#history-list li[id^=call-]", "li => li.id.slice(5)"))

    row = a.locator(f'#result tr[data-key="{first}"]')
    a.wait_for_selector(f'#result tr[data-key="{first}"].done')
    assert row.locator("form.row-action, input.pick").count() == 0
    assert row.locator(".row-status").inner_text() == f"shipped (#{shipped})"
    assert "1 row ticked: 1 operation" in a.inner_text("#result .batch-count")
    assert a.locator(f'#result tr[data-key="{second}"] form.row-action').count() == 1  # the other row keeps its Ship


SLOW_CALLS = """() => {
const open = XMLHttpRequest.prototype.open, send = XMLHttpRequest.prototype.send;
XMLHttpRequest.prototype.open = function (method, url) { this.sbCall = method === "POST" && /\\/call\\/$/.test(url); return open.apply(this, arguments); };
XMLHttpRequest.prototype.send = function (body) { const xhr = this; if (xhr.sbCall) setTimeout(function () { send.call(xhr, body); }, 1500); else send.call(xhr, body); };
}"""


def test_a_running_batch_passes_over_a_row_another_tab_shipped_meanwhile(context, server, login):
    a, b, shift = two_tabs(context, server, login)
    quick(a, "list_orders")
    quick(b, "list_orders")
    first, second, third = in_stock_orders(a)[:3]
    for key in (first, second, third):
        a.check(f'#result tr[data-key="{key}"] input.pick')
    ops_before = int(a.get_attribute("#store-header", "data-ops-left"))
    a.evaluate(SLOW_CALLS)  # each of A's calls waits 1.5 s before it is sent: B acts meanwhile
    a.click("#result [data-batch] button.batch-send")
    a.wait_for_function("() => /Sending 1 of 3/.test(document.querySelector('#result .batch-status').textContent)")
    b.click(f'#result tr[data-key="{third}"] form.row-action[data-tool=fulfill_order] button')
    b.wait_for_selector(f'#result tr[data-key="{third}"].done')
    a.wait_for_function("() => /^Sent /.test(document.querySelector('#result .batch-status').textContent)",
                        timeout=30_000)
    assert a.inner_text("#result .batch-status") == (
        "Sent 2 operations: every row done. 1 row was done in another tab meanwhile and not sent.")
    assert a.locator(f'#result tr[data-key="{third}"] .row-status').inner_text().startswith("shipped (#")
    a.wait_for_function(f"() => Number(document.getElementById('store-header').dataset.opsLeft) === {ops_before - 3}")
    out = server.shell(
        "import json\n"
        "from shifts.models import Shift\n"
        f"print(json.dumps([c.is_error for c in Shift.objects.get(pk={shift}).calls.filter(tool='fulfill_order')]))\n")
    assert json.loads(out.strip().splitlines()[-1]) == [False, False, False]  # nothing refused, nothing wasted


def test_panels_that_cannot_be_read_are_not_asked_for_again_and_again(context, server, login):
    a, b, shift = two_tabs(context, server, login)
    asked = []
    a.route("**/panels/**", lambda route: (asked.append(route.request.url), route.abort()))
    seq = quick(b, "list_orders")
    a.wait_for_timeout(3000)
    assert 1 <= len(asked) <= 2, asked  # once, and once more after 5 s at the most: no loop
    a.unroute("**/panels/**")
    quick(b, "list_returns")  # the next push asks again, and the page catches up
    a.wait_for_selector(f"#history-list li#call-{seq}")


def test_panels_answered_with_a_server_error_are_asked_for_again_after_a_pause(context, server, login):
    a, b, shift = two_tabs(context, server, login)
    asked = []

    def fail_first_two(route):
        asked.append(route.request.url)
        if len(asked) <= 2:
            route.fulfill(status=500, body="server error")
        else:
            route.continue_()

    a.route("**/panels/**", fail_first_two)
    seq = quick(b, "list_orders")
    a.wait_for_selector(f"#history-list li#call-{seq}", timeout=20_000)  # after two failures, 5 s apart
    assert len(asked) == 3, asked


def test_a_batch_says_its_operations_before_sending_and_spends_one_call_per_row(context, server, login, screenshot):
    page, shift = batch_workspace(context, server, login, "list_orders")
    rows = page.locator("#result table.result-table tbody tr:has(form.row-action[data-tool=fulfill_order])")
    keys = []
    for i in range(rows.count()):
        row = rows.nth(i)
        if row.locator("td.k-bool").last.inner_text().strip() == "yes":  # in stock
            keys.append(row.get_attribute("data-key"))
    assert len(keys) >= 5, keys
    keys = keys[:5]
    for key in keys[:4]:
        page.check(f'#result tr[data-key="{key}"] input.pick')
    page.locator(f'#result tr[data-key="{keys[4]}"]').focus()
    page.keyboard.press("x")  # the keyboard ticks the focused row
    bar = page.locator("#result [data-batch]").first
    assert "5 rows ticked: 5 operations will be spent" in bar.locator(".batch-count").inner_text()
    assert bar.locator("button.batch-send").inner_text() == "Send 5 operations"
    screenshot(page, "workspace-batch-1280", full_page=False)
    ops_before = int(page.get_attribute("#store-header", "data-ops-left"))
    bar.locator("button.batch-send").click()
    page.wait_for_function("() => /Sent 5 operations/.test(document.querySelector('#result .batch-status').textContent)")
    for key in keys:
        assert "done" in page.get_attribute(f'#result tr[data-key="{key}"]', "class")
    assert int(page.get_attribute("#store-header", "data-ops-left")) == ops_before - 5

    page.goto(f"/shifts/{shift}/history/?tool=fulfill_order")
    assert page.locator("ol.history li, table.history-table tbody tr").count() == 5
    out = server.shell(
        "import json\n"
        "from shifts.cache import replay_episode\n"
        "from shifts.models import Shift\n"
        f"ep = replay_episode(Shift.objects.get(pk={shift}))\n"
        "print(json.dumps(sorted(e[5] for e in ep.ledger.entries if e[3] == 'shipping_label')))\n")
    assert json.loads(out.strip().splitlines()[-1]) == sorted(keys)  # the ledger: five labels, these orders


def test_a_batch_of_refunds_says_which_the_customers_did_not_accept(context, server, login):
    page, _shift = batch_workspace(context, server, login, "list_returns")
    rows = page.locator("#result table.result-table tbody tr:has(form.row-action[data-tool=refund_return])")
    first, second = (rows.nth(i).get_attribute("data-key") for i in range(2))
    for key in (first, second):
        page.fill(f'#result tr[data-key="{key}"] input[name=arg_amount]', "1.00")  # too little to settle
        page.check(f'#result tr[data-key="{key}"] input.pick')
    page.click("#result [data-batch] button.batch-send")
    page.wait_for_function("() => /^Sent /.test(document.querySelector('#result .batch-status').textContent)")
    assert page.inner_text("#result .batch-status") == (
        "Sent 2 operations: 2 refunds were not accepted as settlement (their rows stay open), every other row done.")
    for key in (first, second):  # each can still be refunded in full
        assert page.locator(f'#result tr[data-key="{key}"] form.row-action[data-tool=refund_return]').count() == 1


def test_a_batch_stops_at_the_first_refusal_and_names_the_row(context, server, login):
    page, shift = batch_workspace(context, server, login, "list_products")
    rows = page.locator("#result table.result-table tbody tr:has(form.row-action[data-tool=set_price])")
    first, second, third = (rows.nth(i).get_attribute("data-key") for i in range(3))
    page.fill(f'#result tr[data-key="{first}"] input[name=arg_price]', "71.11")  # a new price: sent
    page.fill(f'#result tr[data-key="{second}"] input[name=arg_price]', "1.234")  # refused by the store
    for key in (first, second, third):
        page.check(f'#result tr[data-key="{key}"] input.pick')
    page.click("#result [data-batch] button.batch-send")
    status = page.locator("#result .batch-status")
    page.wait_for_function("() => /Batch stopped/.test(document.querySelector('#result .batch-status').textContent)")
    text = status.inner_text()
    assert f"Batch stopped at row {second} (2 of 3)" in text and "This call reached the store." in text
    assert re.search(r"[.!?] This call reached the store\.", text), text  # the store's reason ends its sentence
    assert "1 row was not sent" in text
    assert "done" in page.get_attribute(f'#result tr[data-key="{first}"]', "class")
    assert "done" not in (page.get_attribute(f'#result tr[data-key="{third}"]', "class") or "")
    page.goto(f"/shifts/{shift}/history/?tool=set_price")
    assert page.locator("ol.history li, table.history-table tbody tr").count() == 2


def test_a_batch_stops_at_a_price_left_unchanged_without_sending_it(context, server, login):
    page, shift = batch_workspace(context, server, login, "list_products")
    rows = page.locator("#result table.result-table tbody tr:has(form.row-action[data-tool=set_price])")
    first, second = (rows.nth(i).get_attribute("data-key") for i in range(2))
    ops = page.get_attribute("#store-header", "data-ops-left")
    page.fill(f'#result tr[data-key="{first}"] input[name=arg_price]', "71.11")
    for key in (first, second):  # the second keeps the price it shows
        page.check(f'#result tr[data-key="{key}"] input.pick')
    page.click("#result [data-batch] button.batch-send")
    page.wait_for_function("() => /Batch stopped/.test(document.querySelector('#result .batch-status').textContent)")
    assert page.inner_text("#result .batch-status") == (
        f"Batch stopped at row {second}: its price is unchanged, so its call was not sent and nothing was spent. "
        "1 row was not sent; it stays ticked.")
    assert int(page.get_attribute("#store-header", "data-ops-left")) == int(ops) - 1


def test_a_form_submitted_again_while_its_call_is_on_its_way_is_one_call(context, server, login):
    # A row's key pressed twice submits its form twice (requestSubmit ignores the disabled
    # button): the second submit must be dropped, not queued and sent after the answer,
    # when the form holds a fresh call id.
    page = context.new_page()
    shift = ready_participant(server, login, page, "steady", 7)
    page.goto(f"{server.url}/shifts/{shift}/")
    first = quick(page, "list_orders")
    held, released = [], []

    def hold(route):  # the first call is held until the form has been submitted again
        if released:
            route.continue_()
        else:
            held.append(route)

    page.route("**/call/", hold)
    submit = "() => document.querySelector('.quick-reads button[data-tool=list_returns]').form.requestSubmit()"
    page.evaluate(submit)
    page.wait_for_function("() => !!document.querySelector('.quick-reads form.htmx-request')")
    page.evaluate(submit)
    released.append(True)
    for route in held:
        route.continue_()
    page.wait_for_function(f"() => Number(document.querySelector('#result .result').dataset.seq) > {first}")
    page.wait_for_timeout(1000)  # room for a queued second submit to go out, were there one
    calls = json.loads(server.shell(
        "import json\nfrom shifts.models import ShiftCall\n"
        f"print(json.dumps(list(ShiftCall.objects.filter(shift_id={shift}, seq__gt={first})"
        ".values_list('tool', flat=True))))").strip().splitlines()[-1])
    assert calls == ["list_returns"]
