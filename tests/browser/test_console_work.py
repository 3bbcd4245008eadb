"""A shift's everyday work in a real browser, counted in inputs, and an accessibility scan.

Inputs are counted the way a person makes them: every click, every field filled and
every confirmation dialog accepted. Signing in and navigating between pages by URL are
not counted. The figures are printed (run with ``-s``) and bounded by the issue's
acceptance: shipping takes at most 2 inputs per order, a refund, a reorder and a
reprice at most 3 each, counting the read that puts the row on screen.

The accessibility scan runs axe-core (vendored under ``vendor/``, MPL-2.0, its licence
header kept) on the briefing, the workspace, the history and the end page, and fails on
any violation of serious or critical impact.
"""
from __future__ import annotations

import itertools
from pathlib import Path

import pytest

expect = pytest.importorskip("playwright.sync_api").expect

PASSWORD = "pw-work-123"
AXE = Path(__file__).resolve().parent / "vendor" / "axe.min.js"
_names = itertools.count(1)


class Counter:
    """A page whose inputs are counted."""

    def __init__(self, page) -> None:
        self.page = page
        self.inputs = 0
        page.on("dialog", self._dialog)

    def _dialog(self, dialog) -> None:
        self.inputs += 1
        dialog.accept()

    def click(self, locator) -> None:
        self.inputs += 1
        locator.click()

    def fill(self, locator, value: str) -> None:
        self.inputs += 1
        locator.fill(value)


@pytest.fixture
def counted(browser, server, login):
    context = browser.new_context(base_url=server.url, viewport={"width": 1280, "height": 800})
    context.set_default_timeout(20_000)
    page = context.new_page()
    yield Counter(page)
    context.close()


def ready_participant(server, login, page, task: str, seed: int) -> int:
    """A participant past the briefing and practice, with a started scored shift, signed in; the shift's id."""
    username = f"worker{next(_names)}-{server.port}"
    shift = server.ready_participant(username, PASSWORD, task, seed)
    login(page, username, PASSWORD)
    return shift


def seq_shown(page) -> int:
    value = page.get_attribute("#result .result", "data-seq") if page.locator("#result .result").count() else None
    return int(value) if value else 0


def quick(c: Counter, tool: str) -> None:
    before = seq_shown(c.page)
    c.click(c.page.locator(f".quick-bar button[data-tool={tool}]"))
    c.page.wait_for_function(f"() => {{ const r = document.querySelector('#result .result'); "
                             f"return r && Number(r.dataset.seq) > {before}; }}")


def tool_form(page, tool: str):
    """The tool's form, its group opened if it was closed."""
    form = page.locator(f"#tool-{tool}")
    if not form.is_visible():
        form.locator("xpath=ancestor::details").locator("summary").click()
    return form


def act(c: Counter, row, tool: str) -> str:
    """Press a row's action button and wait for its outcome in the row."""
    c.click(row.locator(f"form.row-action[data-tool={tool}] button"))
    outcome = row.locator(".row-status .outcome")
    outcome.wait_for()
    return outcome.get_attribute("data-ok")


def test_shipping_refunding_repricing_and_reordering_take_few_inputs(counted, server, login, screenshot):
    c, page = counted, counted.page
    shift = ready_participant(server, login, page, "steady", 3)
    page.goto(f"/shifts/{shift}/")

    # Ship 20 orders: read the orders list, ship each row in stock, end the window when none are left.
    shipped = 0
    windows = 0
    while shipped < 20 and windows < 8:
        quick(c, "list_orders")
        rows = page.locator("#result table.result-table tbody tr:has(form.row-action[data-tool=fulfill_order])")
        keys = [rows.nth(i).get_attribute("data-key") for i in range(rows.count())]
        for key in keys:
            row = page.locator(f'#result tr[data-key="{key}"]')
            if "no" == row.locator("td.k-bool").last.inner_text().strip():
                continue  # not in stock: shipping would be refused
            if int(page.get_attribute("#store-header", "data-ops-left")) <= 1:
                break
            if act(c, row, "fulfill_order") == "1":
                shipped += 1
                assert "done" in (row.get_attribute("class") or "")
            if shipped == 20:
                break
        if shipped < 20:
            quick(c, "end_window")
            windows += 1
    ship_inputs = c.inputs
    print(f"\nshipping: {shipped} orders in {ship_inputs} inputs ({ship_inputs / shipped:.2f} per order), "
          f"{windows} windows ended")
    assert shipped == 20
    assert ship_inputs <= 2 * shipped

    # One refund: read the returns, press Refund on the most urgent open return (amount prefilled).
    c.inputs = 0
    quick(c, "list_returns")
    key = page.locator("#result tr:has(form.row-action[data-tool=refund_return])").first.get_attribute("data-key")
    row = page.locator(f'#result tr[data-key="{key}"]')
    assert act(c, row, "refund_return") == "1", row.inner_text()
    refund_inputs = c.inputs

    # One reprice: read the products, type the new price, press Reprice.
    c.inputs = 0
    quick(c, "list_products")
    row = page.locator('#result tr[data-key="PRD-002"]')
    c.fill(row.locator("input[name=arg_price]"), "89.00")
    assert act(c, row, "set_price") == "1", row.inner_text()
    reprice_inputs = c.inputs

    # One reorder: read the supply catalog, press Reorder (the vendor's minimum, split by the size curve).
    c.inputs = 0
    quick(c, "search_supply_catalog")
    row = page.locator('#result tr[data-key="SP-0002"]')
    assert row.locator("input[name=arg_quantity]").input_value() != ""
    assert act(c, row, "place_purchase_order") == "1", row.inner_text()
    reorder_inputs = c.inputs
    screenshot(page, "workspace-reorder-1280", full_page=False)
    print(f"refund: {refund_inputs} inputs, reprice: {reprice_inputs} inputs, reorder: {reorder_inputs} inputs")
    assert refund_inputs <= 3 and reprice_inputs <= 3 and reorder_inputs <= 3

    # the calls are on the record: one per action, each in history with its arguments
    page.goto(f"/shifts/{shift}/history/?tool=fulfill_order")
    assert page.locator("table.history-table tbody tr, ol.history li").count() >= 20


def test_keyboard_ship_and_plain_errors(counted, server, login):
    c, page = counted, counted.page
    shift = ready_participant(server, login, page, "steady", 3)
    page.goto(f"/shifts/{shift}/")
    quick(c, "list_orders")
    first = page.locator("#result table.result-table tbody tr").first
    key = first.get_attribute("data-key")
    page.locator("#result table.result-table tbody tr").first.focus()
    page.keyboard.press("s")
    page.locator(f'#result tr[data-key="{key}"] .row-status .outcome').wait_for()
    assert page.locator(f'#result tr[data-key="{key}"]').get_attribute("class") == "done"

    # a bad price: refused by the store, in plain words, no library text or link
    quick(c, "list_products")
    row = page.locator('#result tr[data-key="PRD-001"]')
    row.locator("input[name=arg_price]").fill("1.234")
    assert act(c, row, "set_price") == "0"
    text = row.locator(".row-status").inner_text()
    assert "price: must have at most two decimal places" in text and "pydantic" not in text


def axe_serious(page) -> list[str]:
    page.add_script_tag(path=str(AXE))
    result = page.evaluate("async () => await axe.run(document, {resultTypes: ['violations']})")
    return [f"{v['id']} ({v['impact']}): {v['help']} at {[n['target'] for n in v['nodes']][:3]}"
            for v in result["violations"] if v["impact"] in ("serious", "critical")]


def test_accessibility_and_screenshots(browser, server, login, screenshot):
    found = {}
    for width, height in ((1280, 800), (400, 860)):
        context = browser.new_context(base_url=server.url, viewport={"width": width, "height": height})
        context.set_default_timeout(20_000)
        page = context.new_page()
        c = Counter(page)  # accepts dialogs
        shift = ready_participant(server, login, page, "steady", 3)
        page.goto("/briefing/")
        found[f"briefing@{width}"] = axe_serious(page)
        screenshot(page, f"briefing-{width}", full_page=False)
        page.goto(f"/shifts/{shift}/")
        quick(c, "list_orders")
        found[f"workspace@{width}"] = axe_serious(page)
        screenshot(page, f"workspace-orders-{width}", full_page=width != 1280)
        if width == 400:
            end = page.locator("form.end-shift button")
            end.scroll_into_view_if_needed()
            assert end.is_visible()
            box = end.bounding_box()
            assert box["x"] >= 0 and box["x"] + box["width"] <= width
        page.goto(f"/shifts/{shift}/history/")
        found[f"history@{width}"] = axe_serious(page)
        screenshot(page, f"history-{width}", full_page=False)
        page.goto(f"/shifts/{shift}/")
        page.click("form.end-shift button")
        page.wait_for_selector("#end-page")
        page.wait_for_load_state("load")  # axe's contrast checks need the stylesheet applied
        found[f"end@{width}"] = axe_serious(page)
        screenshot(page, f"end-{width}", full_page=True)
        context.close()
    print("\naxe serious/critical violations:", {k: len(v) for k, v in found.items()})
    assert all(not v for v in found.values()), {k: v for k, v in found.items() if v}


def answered(page, button) -> int:
    """Press a button whose call's reply replaces the result panel; the number of the call shown after."""
    page.evaluate("() => { const r = document.querySelector('#result .result'); if (r) r.dataset.before = '1'; }")
    button.click()
    page.wait_for_selector("#result .result:not([data-before])")
    return seq_shown(page)


def test_a_corrected_refund_in_the_inbox_is_a_new_call(counted, server, login):
    """A refusal answers the inbox's Refund: the amount corrected and sent again is a new call
    (a fresh call id), not the stored refusal shown again."""
    c, page = counted, counted.page
    shift = ready_participant(server, login, page, "steady", 3)
    page.goto(f"/shifts/{shift}/")
    quick(c, "list_returns")
    return_id = page.locator("#inbox form.refund-form input[name=arg_return_id]").first.input_value()
    form = page.locator(f'#inbox form.refund-form:has(input[value="{return_id}"])')
    refundable = form.locator("input[name=arg_amount]").input_value()
    form.locator("input[name=arg_amount]").fill("0")
    refused = answered(page, form.locator("button"))
    assert "invalid_amount" in page.locator("#result").inner_text()

    form.locator("input[name=arg_amount]").fill(refundable)
    assert answered(page, form.locator("button")) > refused
    assert "invalid_amount" not in page.locator("#result").inner_text()


def test_the_live_indicator_keeps_the_websocket_state_when_the_shift_bar_is_fetched_again(counted, server, login):
    page = counted.page
    shift = ready_participant(server, login, page, "steady", 3)
    page.clock.install()
    page.goto(f"/shifts/{shift}/")
    expect(page.locator("#live-state")).to_have_text("live")
    page.evaluate("() => { document.getElementById('shift-bar').dataset.before = '1'; }")
    page.clock.run_for("01:01")  # the bar's poll: htmx fetches it again every minute
    page.wait_for_selector("#shift-bar:not([data-before])")
    expect(page.locator("#live-state")).to_have_text("live")


def seconds(text: str) -> int:
    hours, minutes, secs = (int(part) for part in text.split(":"))
    return hours * 3600 + minutes * 60 + secs


def test_the_active_time_ticks_while_the_shift_is_active(counted, server, login):
    page = counted.page
    shift = ready_participant(server, login, page, "steady", 3)
    page.clock.install()
    page.goto(f"/shifts/{shift}/")
    page.wait_for_selector("body[data-pushes]")  # the first push is applied: none re-anchors the clocks later
    before = seconds(page.inner_text("#active-time"))
    paused = page.inner_text("#paused-time")
    page.clock.run_for("00:30")  # the page's clock: its once-a-second tick runs 30 times
    assert seconds(page.inner_text("#active-time")) >= before + 29  # the last tick may be up to 1 s short
    assert page.inner_text("#paused-time") == paused


def test_the_paused_time_ticks_during_a_break(counted, server, login):
    page = counted.page
    shift = ready_participant(server, login, page, "steady", 3)
    page.clock.install()
    page.goto(f"/shifts/{shift}/")
    page.fill(".pause-form input[name=reason]", "coffee")
    page.click("#pause-button")
    page.wait_for_selector("#resume-button")
    page.wait_for_selector("body[data-pushes]")  # the paused page's first push is applied: none re-anchors later
    before = seconds(page.inner_text("#paused-time"))
    active = page.inner_text("#active-time")
    page.clock.run_for("00:30")
    assert seconds(page.inner_text("#paused-time")) >= before + 29
    assert page.inner_text("#active-time") == active


def test_a_pause_without_a_reason_says_so_next_to_the_field(counted, server, login):
    page = counted.page
    shift = ready_participant(server, login, page, "steady", 3)
    page.goto(f"/shifts/{shift}/")
    page.fill(".pause-form input[name=reason]", "  ")
    page.click("#pause-button")
    problem = page.locator(".pause-form .field-problem")
    expect(problem).to_be_visible()
    assert "reason" in problem.inner_text()
    assert page.locator("#pause-button").count() == 1  # not paused: the form is still there


def test_the_tool_groups_opened_or_closed_stay_so_on_reload(counted, server, login):
    page = counted.page
    shift = ready_participant(server, login, page, "steady", 3)
    page.goto(f"/shifts/{shift}/")
    groups = page.eval_on_selector_all("#tools details.family", "ds => ds.map(d => [d.id, d.open])")
    assert [is_open for _id, is_open in groups[:3]] == [True, True, False]  # the server opens the first two
    first, third = groups[0][0], groups[2][0]
    page.click(f"#{first} > summary")
    page.click(f"#{third} > summary")
    page.reload()
    page.wait_for_selector("#tools")
    page.wait_for_function(f"() => !document.getElementById('{first}').open && document.getElementById('{third}').open")
    assert page.eval_on_selector(f"#{groups[1][0]}", "d => d.open")  # untouched: as the server gave it


def test_a_refund_the_customer_does_not_accept_leaves_its_row_open_to_refund_again(counted, server, login):
    page = counted.page
    page.on("dialog", lambda d: d.accept())
    shift = ready_participant(server, login, page, "steady", 3)
    page.goto(f"/shifts/{shift}/")
    quick(counted, "list_returns")
    row = page.locator("#result table.result-table tbody tr:has(form.row-action[data-tool=refund_return])").first
    row.locator("input[name=arg_amount]").fill("1.00")
    assert act(counted, row, "refund_return") == "1"
    assert "not accepted as settlement, the return stays open" in row.locator(".row-status").inner_text()
    assert "done" not in (row.get_attribute("class") or "")
    assert row.locator("form.row-action[data-tool=refund_return]").count() == 1  # the rest can still be refunded


def keys_of(page, elements: str, attribute: str) -> set[str]:
    return set(page.eval_on_selector_all(elements, f"found => found.map(e => e.{attribute}.trim())"))


def test_the_inbox_marks_the_rows_the_returns_table_marks_urgent_and_says_hours_left(counted, server, login):
    c, page = counted, counted.page
    shift = ready_participant(server, login, page, "steady", 3)
    page.goto(f"/shifts/{shift}/")
    quick(c, "list_returns")
    urgent = keys_of(page, "#result table.result-table tr.urgent", "dataset.key")
    assert urgent, "no urgent return to compare"
    # the table's rows are keyed by their return, as the inbox's are (id "return-RET-...")
    assert {key.removeprefix("return-") for key in keys_of(page, "#inbox tr.urgent", "id")} == urgent
    assert page.locator("#inbox tbody tr:not(.urgent)").count() > 0
    assert "h left" in page.inner_text("#inbox tbody tr:first-child td.when")


def right_edges(page, selector: str) -> list[float]:
    return page.eval_on_selector_all(selector, "found => found.map(e => e.getBoundingClientRect().right)")


def test_the_pages_fit_1280_wide(counted, server, login, screenshot):
    """At 1280x800 nothing stretches the page: the home page's shifts table keeps to the
    step boxes' width, list_orders shows its last columns without scrolling, and a long
    unbroken listing title wraps in the product card's heading."""
    c, page = counted, counted.page
    shift = ready_participant(server, login, page, "steady", 3)
    page.goto("/")
    screenshot(page, "home-1280", full_page=False)
    assert max(right_edges(page, "table.shifts")) <= max(right_edges(page, "ol.steps li")) + 1

    page.goto(f"/shifts/{shift}/")
    quick(c, "list_orders")
    screenshot(page, "workspace-orders-fit-1280", full_page=False)
    card = max(right_edges(page, "#result .table-scroll"))
    assert max(right_edges(page, "#result table.result-table thead th")) <= card + 1

    c.page.locator("#tool-update_listing_copy").locator("xpath=ancestor::details").locator("summary").click()
    form = page.locator("#tool-update_listing_copy")
    form.locator("[name=arg_product_id]").fill("PRD-001")
    form.locator("[name=arg_title]").fill("W" * 120)  # the longest title the store takes
    form.locator("[name=arg_description]").fill("A plain description.")
    answered(page, form.locator("button[type=submit]"))
    page.locator("#tool-get_product [name=arg_product_id]").fill("PRD-001")
    answered(page, page.locator("#tool-get_product button[type=submit]"))
    screenshot(page, "workspace-long-title-1280", full_page=False)
    assert page.evaluate("() => document.documentElement.scrollWidth") <= 1280


def test_a_text_too_long_is_held_back_whole_with_its_length_named(counted, server, login):
    """The browser's maxlength would cut a pasted text short without a word and send the rest:
    the form keeps the whole text, names its length, and sends nothing."""
    page = counted.page
    shift = ready_participant(server, login, page, "steady", 3)
    page.goto(f"/shifts/{shift}/")
    page.locator("#tool-update_listing_copy").locator("xpath=ancestor::details").locator("summary").click()
    form = page.locator("#tool-update_listing_copy")
    expect(form).to_contain_text("The new listing description. 10 to 4,000 characters.")
    form.locator("[name=arg_product_id]").fill("PRD-001")
    description = form.locator("[name=arg_description]")
    before = seq_shown(page)
    # put there as the server puts a refused call's text back: no input event
    description.evaluate("el => { el.value = 'y'.repeat(4002); }")
    form.locator("button[type=submit]").click()
    page.wait_for_timeout(500)
    assert seq_shown(page) == before
    assert description.evaluate("el => el.validationMessage") == "At most 4,000 characters: this has 4,002."
    description.fill("x" * 4001)
    form.locator("button[type=submit]").click()
    page.wait_for_timeout(500)
    assert seq_shown(page) == before  # no call was made
    assert description.evaluate("el => el.value.length") == 4001
    assert description.evaluate("el => el.validationMessage") == "At most 4,000 characters: this has 4,001."
    description.fill("A plain description of the shirt.")
    answered(page, form.locator("button[type=submit]"))
    assert seq_shown(page) == before + 1


def spend_to_last_operation(server, shift: int, left: int = 1) -> None:
    """Spend the shift's window down to its last operation (or ``left``), through the console's own call path."""
    server.shell(
        "import uuid\n"
        "from console.workspace import perform_call\n"
        "from shifts.models import Shift\n"
        f"shift = Shift.objects.get(pk={shift})\n"
        "left = None\n"
        f"while left != {left}:\n"
        "    done = perform_call(shift, 'list_orders', {'page_size': 1}, uuid.uuid4().hex, owner=shift.participant_id)\n"
        "    left = done.header.ops_left\n")


def test_the_last_operation_warning_is_not_lost_behind_a_forms_own_question(counted, server, login):
    """At one operation left, a call whose form asks its own question (cancel_order: it cannot
    be undone) also says the window ends, in the same dialog; declined, nothing is sent."""
    page = counted.page
    shift = ready_participant(server, login, page, "steady", 3)
    spend_to_last_operation(server, shift)
    page.goto(f"/shifts/{shift}/")
    assert page.get_attribute("#store-header", "data-ops-left") == "1"
    asked: list[str] = []
    page.remove_listener("dialog", counted._dialog)
    page.on("dialog", lambda dialog: (asked.append(dialog.message), dialog.dismiss()))
    form = page.locator("#tool-cancel_order")
    form.locator("[name=arg_order_id]").fill("ORD-000001")
    form.locator("button[type=submit]").click()
    page.wait_for_timeout(500)
    assert len(asked) == 1, asked
    assert "cannot be undone" in asked[0] and "last operation of the window" in asked[0]
    page.reload()
    assert page.get_attribute("#store-header", "data-ops-left") == "1"
    page.locator(".quick-bar button[data-tool=list_orders]").click()  # no question of its own
    page.locator(".quick-bar button[data-tool=end_window]").click()  # its own question says the window ends
    page.wait_for_timeout(500)
    now, windows = (int(page.get_attribute("#store-header", f"data-{k}")) for k in ("window", "windows"))
    assert asked[1].startswith("This is the last operation of the window")
    assert asked[2] == (f"End window {now} of {windows} now? Its 1 operation left is forfeited and the store moves on "
                        f"to window {now + 1}.")  # its own question, naming the window it ends
    page.reload()
    assert page.get_attribute("#store-header", "data-ops-left") == "1"


def test_a_cards_numbers_are_not_broken_across_lines(counted, server, login):
    """A card's money, counts and rates stay on one line at 1280 wide (platform_terms'
    long wording beside them once squeezed "$15.00" into "$15.0" over "0"); labels and
    words wrap instead."""
    page = counted.page
    shift = ready_participant(server, login, page, "steady", 3)
    page.goto(f"/shifts/{shift}/")
    page.locator("#tool-platform_terms").locator("xpath=ancestor::details").locator("summary").click()
    answered(page, page.locator("#tool-platform_terms button[type=submit]"))
    lines = page.eval_on_selector_all(
        "#result dl.fields dd.k-money, #result dl.fields dd.k-number",
        "found => found.map(dd => { const r = document.createRange(); r.selectNodeContents(dd);"
        " return [dd.textContent, new Set(Array.from(r.getClientRects()).map(x => Math.round(x.top))).size]; })")
    assert lines and all(count == 1 for _, count in lines), [text for text, count in lines if count != 1]


def test_at_400_wide_nothing_scrolls_the_page_sideways_and_the_store_header_stays_in_view(browser, server, login):
    """At 400 px the home page, the workspace (with its returns inbox filled), the history
    and the end page fit the width (a wide table scrolls in its own box), and the store
    header stays on screen while the workspace is scrolled down."""
    context = browser.new_context(base_url=server.url, viewport={"width": 400, "height": 800})
    context.set_default_timeout(20_000)
    page = context.new_page()
    c = Counter(page)  # accepts dialogs
    shift = ready_participant(server, login, page, "steady", 3)
    too_wide = {}
    page.goto("/")
    too_wide["home"] = page.evaluate("() => document.documentElement.scrollWidth")
    page.goto(f"/shifts/{shift}/")
    quick(c, "list_returns")
    too_wide["workspace"] = page.evaluate("() => document.documentElement.scrollWidth")
    page.evaluate("() => window.scrollTo(0, document.getElementById('inbox').offsetTop)")
    # read in one step in the page: the call's live push may swap the header in meanwhile, and a
    # locator that found the old one then measures a detached element (no box)
    top = page.evaluate("() => document.getElementById('store-header').getBoundingClientRect().top")
    page.goto(f"/shifts/{shift}/history/")
    too_wide["history"] = page.evaluate("() => document.documentElement.scrollWidth")
    page.goto(f"/shifts/{shift}/")
    page.click("form.end-shift button")
    page.wait_for_selector("#end-page")
    page.wait_for_load_state("load")  # its stylesheet applied: measured before, a busy machine saw 861 px
    too_wide["end"] = page.evaluate("() => document.documentElement.scrollWidth")
    context.close()
    assert all(width <= 400 for width in too_wide.values()), too_wide
    assert 0 <= top < 10, top


def test_a_call_with_a_stale_security_token_says_to_reload(counted, server, login):
    """Signed in again in another tab (Django rotates the CSRF token), a call from the open
    workspace is refused 403 before the store. The page used to show nothing at all; it now says
    why and what to do, in the result panel and in a row, and nothing is spent."""
    page = counted.page
    shift = ready_participant(server, login, page, "steady", 3)

    def as_in_production(route):  # without django-htmx's debug hook, which shows error pages whole
        response = route.fetch()
        route.fulfill(response=response, body=response.text().replace('data-debug="True"', 'data-debug="False"'))

    page.route(f"**/shifts/{shift}/", as_in_production)
    page.goto(f"/shifts/{shift}/")
    quick(counted, "list_orders")
    ops = page.get_attribute("#store-header", "data-ops-left")
    other = page.context.new_page()
    other.goto("/")
    other.locator("form[action='/logout/'] button").click()
    login(other, page.evaluate("() => document.querySelector('.who strong').textContent"), PASSWORD)
    other.close()
    row = page.locator("#result tr:has(form.row-action[data-tool=fulfill_order])").first
    row.locator("form.row-action button").click()
    row.locator(".row-status p.problem").wait_for()
    assert "Reload the page" in row.locator(".row-status").inner_text()
    page.locator(".quick-bar button[data-tool=list_returns]").click()
    problem = page.locator("#result p.problem")
    problem.wait_for()
    assert "Reload the page" in problem.inner_text() and "before the store" in problem.inner_text()
    page.reload()
    assert page.get_attribute("#store-header", "data-ops-left") == ops


def test_a_batch_whose_warning_is_declined_stops_and_can_be_sent_again(counted, server, login):
    """At one operation left a batch's first row asks before ending the window. Declined, the
    batch used to wait for an answer that never came ("Sending 1 of 2…", Send disabled until a
    reload); it now stops, says nothing was sent, and can be sent again."""
    page = counted.page
    shift = ready_participant(server, login, page, "steady", 3)
    page.goto(f"/shifts/{shift}/")
    quick(counted, "list_orders")
    orders = seq_shown(page)
    spend_to_last_operation(server, shift)
    page.goto(f"/shifts/{shift}/?call={orders}")  # the orders list again, read free
    assert page.get_attribute("#store-header", "data-ops-left") == "1"
    page.remove_listener("dialog", counted._dialog)
    asked: list[str] = []
    page.on("dialog", lambda dialog: (asked.append(dialog.message), dialog.dismiss()))
    boxes = page.locator("#result tr:has(form.row-action[data-tool=fulfill_order]) input.pick")
    boxes.nth(0).check()
    boxes.nth(1).check()
    page.locator("#result button.batch-send").click()
    status = page.locator("#result .batch-status")
    expect(status).to_contain_text("not sent and nothing was spent")
    assert len(asked) == 1 and "last operation" in asked[0]
    assert "2 rows were not sent" in status.inner_text()
    expect(page.locator("#result button.batch-send")).to_be_enabled()
    assert page.get_attribute("#store-header", "data-ops-left") == "1"


def test_a_row_action_that_spends_the_windows_last_operation_says_a_new_window_started(counted, server, login):
    page = counted.page
    shift = ready_participant(server, login, page, "steady", 3)
    spend_to_last_operation(server, shift)  # the last call read one order awaiting shipment
    page.goto(f"/shifts/{shift}/")
    key = page.locator("#result tr:has(form.row-action[data-tool=fulfill_order])").first.get_attribute("data-key")
    row = page.locator(f'#result tr[data-key="{key}"]')  # its form goes once it is done
    row.locator("form.row-action button").click()  # the last operation's question is accepted
    status = row.locator(".row-status")
    status.locator(".outcome").wait_for()
    text = status.inner_text()
    assert "A new window started: this call moved the store to window 2 of" in text, text
    assert "shipped (#" in text
    assert "A new window started" in page.inner_text("#said")  # read out, as a result's marker is


def test_an_order_under_the_vendors_minimum_is_stopped_in_the_page_and_what_was_typed_is_kept(
        counted, server, login):
    page = counted.page
    shift = ready_participant(server, login, page, "steady", 3)
    page.goto(f"/shifts/{shift}/")
    form = tool_form(page, "supply_product_detail")
    form.locator("[name=arg_supply_product_id]").fill("SP-0008")
    detail = answered(page, form.locator("button[type=submit]"))
    editor = page.locator("#result form.po-lines")
    moq = int(editor.get_attribute("data-moq"))
    assert f"(the vendor's minimum: {moq})" in editor.inner_text()
    boxes = editor.locator("input.po-line")
    boxes.nth(0).fill("1")
    boxes.nth(1).fill("1")
    editor.locator("button[type=submit]").click()
    short = editor.locator(".po-short")
    short.wait_for()
    assert short.inner_text() == (f"This order has 2 units; the vendor's minimum is {moq} an order, so the store "
                                  "would refuse it and spend an operation. Add units, then place it.")
    assert seq_shown(page) == detail  # nothing was sent
    quick(counted, "list_orders")  # another read in between
    page.click(f'#cached-views [hx-get$="/calls/{detail}/"]')
    page.wait_for_selector("#result form.po-lines")
    again = page.locator("#result form.po-lines input.po-line")
    assert [again.nth(0).input_value(), again.nth(1).input_value()] == ["1", "1"]
    assert page.inner_text("#result form.po-lines .po-total") == "2"


def test_a_double_press_on_the_windows_last_two_operations_is_one_call(counted, server, login):
    """The second press asks the last operation's question (accepted here); it is still the
    first press's call, answered again: the window does not end."""
    page = counted.page
    shift = ready_participant(server, login, page, "steady", 3)
    spend_to_last_operation(server, shift, left=2)
    page.goto(f"/shifts/{shift}/")
    window = page.get_attribute("#store-header", "data-window")
    before = seq_shown(page)
    page.locator(".quick-bar button[data-tool=list_orders]").click()
    page.wait_for_function(f"() => Number(document.querySelector('#result .result').dataset.seq) > {before}")
    page.locator(".quick-bar button[data-tool=list_orders]").click()
    page.wait_for_selector("#result .repeat-banner")
    assert counted.inputs == 1  # the question, accepted
    assert page.get_attribute("#store-header", "data-ops-left") == "1"
    assert page.get_attribute("#store-header", "data-window") == window


def test_the_second_click_of_a_double_click_on_next_page_reads_nothing_more(counted, server, login):
    """The first click's answer puts the next page's buttons where the pointer is (Previous
    page now stands where Next page stood); the second click, made once the answer is in,
    takes no press: one page read, one operation."""
    page = counted.page
    shift = ready_participant(server, login, page, "steady", 3)
    page.goto(f"/shifts/{shift}/")
    form = tool_form(page, "list_orders")
    form.locator("[name=arg_page_size]").fill("2")
    answered(page, form.locator("button[type=submit]"))
    page.wait_for_selector("#result form.page-read:not(.arriving)")  # as a person reads the page first
    left = int(page.get_attribute("#store-header", "data-ops-left"))
    box = page.locator("#result form.page-read button", has_text="Next page").bounding_box()
    x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    before = seq_shown(page)
    page.mouse.click(x, y)
    page.wait_for_function(f"() => Number(document.querySelector('#result .result').dataset.seq) > {before}")
    page.mouse.click(x, y)  # the second half of a double click, as soon as the answer is in
    page.wait_for_timeout(1000)
    assert int(page.get_attribute("#store-header", "data-ops-left")) == left - 1
    assert seq_shown(page) == before + 1
    assert '"page":2' in page.locator("#result p.args").inner_text().replace(" ", "")
    assert page.locator("#result form.page-read button", has_text="Previous page").count() == 1


def test_sorting_a_list_just_read_leaves_its_row_actions_clickable(counted, server, login):
    """Sorting re-appends a table's rows: they were already on the page, not brought by an answer,
    so the double-click guard does not hold their buttons (a sort soon after a read did)."""
    c, page = counted, counted.page
    shift = ready_participant(server, login, page, "steady", 3)
    page.goto(f"/shifts/{shift}/")
    quick(c, "list_orders")
    page.wait_for_selector("#result form.row-action")
    page.wait_for_function("() => !document.querySelector('form.arriving')")
    page.locator("#result table.result-table thead button.sort").first.click()  # within 3 s of the read
    assert page.evaluate("() => document.querySelectorAll('form.arriving').length") == 0
