"""The workspace by keyboard and screen reader: where the focus goes after a call, what is
said, and the single-letter keys' switch."""
from __future__ import annotations

import re

import pytest
from test_console_work import counted, quick, ready_participant  # noqa: F401 (counted: the fixture)

expect = pytest.importorskip("playwright.sync_api").expect


def focused(page) -> str:
    return page.evaluate("() => { const e = document.activeElement; return e.id || e.getAttribute('name') || e.tagName; }")


def test_a_quick_read_moves_the_focus_to_its_result_and_says_its_outcome(counted, server, login):
    c, page = counted, counted.page
    page.goto(f"/shifts/{ready_participant(server, login, page, 'steady', 7)}/")
    assert page.locator("#said").text_content() == ""
    quick(c, "list_orders")
    page.wait_for_function("() => document.activeElement.id === 'result'")
    heading = " ".join(page.locator("#result .result > h3").inner_text().split())
    assert heading.startswith("#") and "list_orders" in heading
    assert page.locator("#said").text_content() == heading  # a read's outcome line is empty
    page.keyboard.press("j")  # the rows are one key away from where the focus landed
    assert page.evaluate("() => document.activeElement.closest('tr') !== null")


def open_tool(page, tool: str):
    """The tool's form, its family's group unfolded."""
    form = page.locator(f"#tool-{tool}")
    form.evaluate("f => f.closest('details').open = true")
    return form


def refuse_a_price(page, shift: int) -> None:
    """On the shift's page, set_price with a price the store refuses (three decimals), through its form."""
    page.goto(f"/shifts/{shift}/")
    form = open_tool(page, "set_price")
    form.locator("[name=arg_product_id]").fill("PRD-001")
    form.locator("[name=arg_price]").fill("1.234")
    form.locator("[name=arg_price]").press("Enter")
    page.locator("#result .problem[data-field=price]").wait_for()


def test_a_refused_argument_focuses_its_field_marked_invalid_and_tied_to_the_reason(counted, server, login):
    page = counted.page
    refuse_a_price(page, ready_participant(server, login, page, "steady", 7))
    page.wait_for_function("() => document.activeElement.getAttribute('name') === 'arg_price'")
    price = page.locator("#tool-set_price [name=arg_price]")
    assert price.get_attribute("aria-invalid") == "true"
    reason = page.locator(f"#{price.get_attribute('aria-describedby').split()[-1]}")
    assert "price: must have at most two decimal places" in reason.inner_text()


def test_a_corrected_field_is_no_longer_marked_and_a_reread_marks_none(counted, server, login):
    page = counted.page
    refuse_a_price(page, ready_participant(server, login, page, "steady", 7))
    refused = page.get_attribute("#result .result", "data-seq")
    page.locator("#tool-set_price [name=arg_price]").fill("39.50")
    page.locator("#tool-set_price [name=arg_price]").press("Enter")
    page.wait_for_function(f"() => document.querySelector('#result .result').dataset.seq !== '{refused}'")
    price = page.locator("#tool-set_price [name=arg_price]")
    assert price.get_attribute("aria-invalid") is None
    assert price.get_attribute("aria-describedby") == "hint-set_price-arg_price"  # its hint only
    # reading the refused call again from the history says it, and marks no field of the tool forms
    page.locator(f'#history a[href="?call={refused}"]').click()
    page.wait_for_function(f"() => document.querySelector('#result .result').dataset.seq === '{refused}'")
    page.wait_for_function("() => document.activeElement.id === 'result'")
    assert page.locator("[aria-invalid=true]").count() == 0


def test_the_letter_keys_can_be_switched_off_and_stay_off(counted, server, login):
    c, page = counted, counted.page
    shift = ready_participant(server, login, page, "steady", 7)
    page.goto(f"/shifts/{shift}/")
    page.locator("#keys-on").uncheck()
    quick(c, "list_orders")
    page.wait_for_function("() => document.activeElement.id === 'result'")
    page.keyboard.press("j")
    assert focused(page) == "result"  # j did not move into the table
    page.reload()
    assert not page.locator("#keys-on").is_checked()
    page.locator("#keys-on").check()
    quick(c, "list_orders")
    page.wait_for_function("() => document.activeElement.id === 'result'")
    page.keyboard.press("j")
    assert page.evaluate("() => document.activeElement.closest('tr') !== null")


def first_order_row(counted, server, login):
    """On a fresh shift's page, list_orders read: its first row and that row's key."""
    page = counted.page
    page.goto(f"/shifts/{ready_participant(server, login, page, 'steady', 7)}/")
    quick(counted, "list_orders")
    row = page.locator("#result table.result-table tbody tr").first
    return row, row.get_attribute("data-key")


def test_a_row_action_button_names_its_row(counted, server, login):
    row, key = first_order_row(counted, server, login)
    assert row.locator("form.row-action[data-tool=fulfill_order] button").get_attribute("aria-label") == f"Ship {key}"


def test_an_urgent_row_says_so_in_words_not_by_colour_alone(counted, server, login):
    c, page = counted, counted.page
    page.goto(f"/shifts/{ready_participant(server, login, page, 'steady', 3)}/")
    quick(c, "list_returns")
    after = "e => getComputedStyle(e, '::after').content"
    assert page.locator("#result tr.urgent td.k-hours").first.evaluate(after) == '" (urgent)"'
    assert page.locator("#inbox tr.urgent .hours-left").first.evaluate(after) == '" (urgent)"'
    assert page.locator("#result tr:not(.urgent) td.k-hours").first.evaluate(after) == "none"


def test_a_tool_fields_hint_describes_it_and_stays_out_of_its_name(counted, server, login):
    page = counted.page
    page.goto(f"/shifts/{ready_participant(server, login, page, 'steady', 7)}/")
    price = open_tool(page, "set_price").locator("[name=arg_price]")
    hint = " ".join(page.locator("#hint-set_price-arg_price").text_content().split())
    assert hint
    expect(price).to_have_accessible_description(hint)
    expect(price).to_have_accessible_name(re.compile(r"^\S+( \*)?$"))  # the field's label, and * when required


def test_a_row_action_leaves_the_focus_on_its_row(counted, server, login):
    page = counted.page
    row, key = first_order_row(counted, server, login)
    row.locator("form.row-action[data-tool=fulfill_order] button").focus()
    page.keyboard.press("Enter")
    page.locator(f'#result tr[data-key="{key}"].done').wait_for()
    assert page.evaluate("() => document.activeElement.dataset.key") == key
    page.keyboard.press("j")  # and the next row is one key away
    assert page.evaluate("() => document.activeElement.dataset.key") != key


def test_a_pause_without_a_reason_marks_its_field_invalid_until_one_is_typed(counted, server, login):
    page = counted.page
    page.goto(f"/shifts/{ready_participant(server, login, page, 'steady', 7)}/")
    reason = page.locator("form.pause-form input[name=reason]")
    page.locator("form.pause-form button[type=submit]").click()
    assert reason.get_attribute("aria-invalid") == "true"
    reason.fill("coffee")
    assert reason.get_attribute("aria-invalid") is None


def test_p_goes_to_the_rows_price_and_the_price_it_already_shows_is_not_sent(counted, server, login):
    c, page = counted, counted.page
    page.goto(f"/shifts/{ready_participant(server, login, page, 'steady', 7)}/")
    quick(c, "list_products")
    ops = page.get_attribute("#store-header", "data-ops-left")
    key = page.locator("#result tr:has(form.row-action[data-tool=set_price])").first.get_attribute("data-key")
    row = page.locator(f'#result tr[data-key="{key}"]')
    row.focus()
    page.keyboard.press("p")
    assert focused(page) == "arg_price"
    page.keyboard.press("Enter")  # the price as shown
    note = row.locator(".row-status .unchanged")
    expect(note).to_contain_text("The price is already ")
    expect(note).to_contain_text(": type the new price, then Reprice (nothing was sent).")
    assert page.get_attribute("#store-header", "data-ops-left") == ops
    page.keyboard.type("123.45")  # the price's text was selected: typed over
    page.keyboard.press("Enter")
    expect(row.locator(".row-status .outcome[data-ok='1']")).to_be_visible()
    assert int(page.get_attribute("#store-header", "data-ops-left")) == int(ops) - 1
