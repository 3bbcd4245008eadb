"""Text with a NUL character (U+0000) from a participant's form.

PostgreSQL stores no NUL in a text or jsonb column: a tool argument or a pause reason
holding one made the call's or the pause's INSERT fail, and the participant got the
site's 500 page (found deploying on PostgreSQL; SQLite stored it).  Both are refused
before anything is stored or sent, on every database, and nothing is spent.
"""
import pytest
from console_helpers import call, ops_left

from shifts import errors, lifecycle
from shifts.models import Shift, ShiftCall

pytestmark = pytest.mark.usefixtures("fast_password_hashing", "fresh_console_cache")


def test_a_tool_argument_with_a_nul_is_refused_before_the_store(signed_in, shift):
    first = call(signed_in, shift, "store_status")
    assert first.status_code == 200
    before = ops_left(first.content.decode())
    response = call(signed_in, shift, "get_order", order_id="ORD-103315\x00")
    assert response.status_code == 400
    assert not ShiftCall.objects.filter(shift=shift, tool="get_order").exists()
    after = call(signed_in, shift, "store_status")
    assert ops_left(after.content.decode()) == before


def test_a_nul_in_a_json_or_money_field_is_refused_too(signed_in, shift):
    assert call(signed_in, shift, "set_price", product_id="PRD-001", price="10\x00").status_code == 400
    assert call(signed_in, shift, "list_orders", page="1\x00").status_code == 400
    assert not ShiftCall.objects.filter(shift=shift).exclude(tool="store_status").exists()


def test_a_pause_reason_with_a_nul_is_refused(signed_in, shift):
    with pytest.raises(errors.PauseRefused, match="NUL"):
        lifecycle.pause_shift(shift, "lunch\x00")
    response = signed_in.post(f"/shifts/{shift.pk}/pause/", {"reason": "lunch\x00"}, follow=True)
    assert response.status_code == 200
    assert any("NUL" in str(m) for m in response.context["messages"])
    shift.refresh_from_db()
    assert shift.status == Shift.Status.ACTIVE and not shift.pauses.exists()


def test_a_field_the_tools_form_does_not_have_is_refused_before_the_store(signed_in, shift):
    before = ops_left(call(signed_in, shift, "store_status").content.decode())
    response = call(signed_in, shift, "list_orders", nonsense="1")
    assert response.status_code == 400
    assert response.content.decode() == ("list_orders takes no argument nonsense (its arguments: page, page_size, status, sort); nothing was sent.")
    assert not ShiftCall.objects.filter(shift=shift, tool="list_orders").exists()
    assert ops_left(call(signed_in, shift, "store_status").content.decode()) == before


def test_arguments_over_the_mcp_servers_size_limit_are_refused_before_the_store(signed_in, shift):
    before = ops_left(call(signed_in, shift, "store_status").content.decode())
    response = call(signed_in, shift, "list_products", search="x" * 70_000)
    assert response.status_code == 400
    assert response.content.decode() == ("The arguments of 'list_products' take 70,013 bytes; a call's arguments may "
                                         "take at most 65,536 (no tool needs more): nothing was sent to the store.")
    assert not ShiftCall.objects.filter(shift=shift, tool="list_products").exists()
    assert ops_left(call(signed_in, shift, "store_status").content.decode()) == before
