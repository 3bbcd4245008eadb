"""A press sent twice, and a list read in an earlier window: what the call view gives back.

A call's reply brings its tool form back with the id it was sent with (the page's script
renews it after a moment or at the first change), so a second press that soon is the same
call: answered from the call record, saying so, with nothing spent.  A result read in an
earlier window than the store's now, re-read from the cached views, offers no row action."""
import re

import pytest
from console_helpers import HX, call

pytestmark = pytest.mark.usefixtures("fast_password_hashing", "fresh_console_cache")


def ops_left(html: str) -> int:
    return int(re.search(r'data-ops-left="(\d+)"', html).group(1))


def seq_of(html: str) -> int:
    return int(re.search(r'<div class="result[^"]*" data-seq="(\d+)"', html).group(1))


def test_the_reply_brings_the_tool_form_back_with_the_id_it_was_sent_with(signed_in, shift):
    html = call(signed_in, shift, "list_orders", call_id="f" * 32, page_size=5).content.decode()
    form = re.search(r'<form[^>]*id="tool-list_orders".*?</form>', html, re.S).group(0)
    assert f'name="call_id" value="{"f" * 32}"' in form
    assert form.startswith('<form data-held="1" ')  # for the page's script, which renews the id soon


def test_a_second_press_with_that_id_is_answered_again_and_spends_nothing(signed_in, shift):
    first = call(signed_in, shift, "list_orders", call_id="e" * 32, page_size=5).content.decode()
    again = call(signed_in, shift, "list_orders", call_id="e" * 32, page_size=5).content.decode()
    assert ops_left(again) == ops_left(first)
    assert seq_of(again) == seq_of(first)
    assert f"Sent again: call #{seq_of(first)} had already been made, so its answer is shown again" in again
    assert "Sent again" not in first


def test_a_list_read_in_an_earlier_window_offers_no_row_action_when_read_again(signed_in, shift):
    listed = call(signed_in, shift, "list_orders", page_size=5, status="awaiting_shipment").content.decode()
    assert '<form class="row-action' in listed and 'data-batch' in listed
    call(signed_in, shift, "end_window")
    html = signed_in.get(f"/shifts/{shift.pk}/calls/{seq_of(listed)}/", **HX).content.decode()
    assert f"Cached view: stored result of call #{seq_of(listed)}" in html
    assert '<form class="row-action' not in html and "data-batch" not in html and 'class="pick"' not in html
    assert ("Read in window 1; the store is now in window 2, so this result's row actions are off (what they "
            "would act on may have changed). Call the tool again for the current list.") in html


def test_a_list_read_in_this_window_keeps_its_row_actions_when_read_again(signed_in, shift):
    listed = call(signed_in, shift, "list_orders", page_size=5, status="awaiting_shipment").content.decode()
    html = signed_in.get(f"/shifts/{shift.pk}/calls/{seq_of(listed)}/", **HX).content.decode()
    assert '<form class="row-action' in html and "stale-note" not in html
