"""A shift played through the console's views and the same actions played in-process
give the same ledger, byte for byte."""
import uuid

import pytest
from console_helpers import briefed_user

from environment.api import arm
from environment.trial import play_actions
from shifts import cache, lifecycle
from shifts.results import result_of

pytestmark = pytest.mark.usefixtures("fresh_console_cache")

HX = {"HTTP_HX_REQUEST": "true"}
TASK, SEED = "counter-punch", 7


def result_json(response) -> dict:
    """The JSON body of the call just made, read back from its stored result."""
    from shifts.models import ShiftCall

    call = ShiftCall.objects.order_by("-id").first()
    assert response.status_code in (200, 204)
    return result_of(call).data


def test_console_and_in_process_ledgers_are_identical(client, db):
    user = briefed_user("lena", password=False)
    client.force_login(user)
    shift = lifecycle.assign_shift(user, TASK, SEED, practice=True)
    client.post(f"/shifts/{shift.pk}/start/")

    actions: list[dict] = [{"tool": "store_status", "arguments": {}}]  # the shift opens with it

    def act(tool, form=None, arguments=None):
        data = {"tool": tool, "call_id": uuid.uuid4().hex, **{f"arg_{k}": v for k, v in (form or {}).items()}}
        response = client.post(f"/shifts/{shift.pk}/call/", data, **HX)
        actions.append({"tool": tool, "arguments": arguments if arguments is not None else {}})
        return result_json(response)

    orders = act("list_orders", {"page_size": "5"}, {"page_size": 5})
    for row in orders["rows"][:3]:
        act("fulfill_order", {"order_id": row["order_id"]}, {"order_id": row["order_id"]})
    returns = act("list_returns", arguments={})
    first = returns["rows"][0]
    act("refund_return", {"return_id": first["return_id"], "amount": first["refundable"]},
        {"return_id": first["return_id"], "amount": first["refundable"]})
    act("set_price", {"product_id": "PRD-001", "price": "49.50"}, {"product_id": "PRD-001", "price": "49.50"})
    placed = act("place_purchase_order", {"supply_product_id": "SP-0001", "quantity": "40"},
                 {"supply_product_id": "SP-0001", "quantity": 40})
    assert placed["po_id"].startswith("PO-")
    act("end_window")
    act("list_orders", {"page_size": "2"}, {"page_size": 2})
    act("get_order", {"order_id": "ORD-NOPE"}, {"order_id": "ORD-NOPE"})  # refused by the store: still an operation

    live_episode = cache._cache[shift.pk].episode
    client.post(f"/shifts/{shift.pk}/end/")  # settles the console's episode
    assert live_episode.over

    in_process = play_actions(arm(TASK, SEED), actions)  # stop=True: settled the same way
    console_ledger = live_episode.ledger.to_jsonl()
    assert console_ledger == in_process.ledger.to_jsonl()
    assert console_ledger.count("\n") > 20
    assert len(actions) == shift.calls.filter(reached_core=True).count()
