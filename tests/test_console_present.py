"""Results as tables and cards, row actions, plain errors and the call record lookup.

The presentation is built from the stored call's typed parts (its JSON body, the store's
error object); these tests drive the real call view over the real MCP client and read
what the page renders.
"""
import re
import uuid

import pytest
from console_helpers import HX, OPS, briefed_user, call, ops_left

from environment.api import arm

pytestmark = pytest.mark.usefixtures("fresh_console_cache")


def rows_of(html: str) -> dict:
    """Result-table rows by key: the row's tag and body."""
    return {m[1]: m[0] for m in re.finditer(r'<tr data-key="([^"]+)".*?</tr>', html, re.S)}


def test_orders_list_is_a_table_with_ship_buttons_money_and_urgency(signed_in, shift):
    html = call(signed_in, shift, "list_orders", page_size="20").content.decode()
    assert 'class="data compact result-table sortable"' in html
    rows = rows_of(html)
    assert len(rows) == 6 and all(key.startswith("ORD-") for key in rows)
    first = rows["ORD-103315"]
    assert 'name="arg_order_id" value="ORD-103315"' in first and 'value="fulfill_order"' in first
    assert "$115.20" in first and "6.2 h" in first
    assert 'class="urgent' in first  # 6.2 hours to its deadline, under one window
    assert "<details class=\"raw\"" in html and '&quot;order_id&quot;: &quot;ORD-103315&quot;' in html


def test_a_row_action_is_one_call_and_the_row_reads_done_afterwards(signed_in, shift):
    call(signed_in, shift, "list_orders", page_size="20")
    reply = call(signed_in, shift, "fulfill_order", order_id="ORD-103315").content.decode()
    assert re.search(r'<p class="outcome" data-ok="1" data-seq="3">shipped \(#3\)</p>', reply)
    assert ops_left(reply) == OPS - 2
    reread = signed_in.get(f"/shifts/{shift.pk}/calls/2/", **HX).content.decode()
    row = rows_of(reread)["ORD-103315"]
    assert 'class="done"' in row and "shipped (#3)" in row and "fulfill_order" not in row
    assert "fulfill_order" in rows_of(reread)["ORD-103316"]  # the others keep their button


def test_a_refunded_return_reads_done_in_a_returns_list_read_before_it(signed_in, shift):
    # A return's row names its order too; it is keyed by the return, which its Refund acts on.
    call(signed_in, shift, "list_returns")
    reply = call(signed_in, shift, "refund_return", return_id="RET-20484", amount="47.00").content.decode()
    assert "refunded (#3)" in reply
    reread = signed_in.get(f"/shifts/{shift.pk}/calls/2/", **HX).content.decode()
    rows = rows_of(reread)
    assert sorted(rows) == ["RET-20484", "RET-20485", "RET-20486", "RET-20487", "RET-20488"]
    assert 'class="done"' in rows["RET-20484"] and "refunded (#3)" in rows["RET-20484"]
    assert "refund_return" not in rows["RET-20484"]
    assert "refund_return" in rows["RET-20485"]  # the others keep their Refund


def test_a_refunded_return_reads_done_on_its_card_read_before_it(signed_in, shift):
    call(signed_in, shift, "get_return", return_id="RET-20484")
    call(signed_in, shift, "refund_return", return_id="RET-20484", amount="47.00")
    reread = signed_in.get(f"/shifts/{shift.pk}/calls/2/", **HX).content.decode()
    card = re.search(r'<div class="card" data-key="RET-20484">.*?</dl>', reread, re.S)[0]
    assert '<div class="card-actions"><span class="row-status">refunded (#3)</span></div>' in card
    assert "refund_return" not in card


def test_a_returns_table_shows_first_what_a_refund_is_decided_on(signed_in, shift):
    html = call(signed_in, shift, "list_returns").content.decode()
    table = html[html.index('<table class="data compact result-table'):]
    headers = [re.sub(r"<[^>]+>", "", h).strip() for h in re.findall(r"<th[^>]*>(.*?)</th>", table[:table.index("</thead>")], re.S)]
    assert headers[1:8] == ["return id", "hours to escalation", "refundable", "paid", "refunded", "reason", "status"]
    row = rows_of(html)["RET-20484"]
    cells = [re.sub(r"<[^>]+>", "", c).strip() for c in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)]
    assert cells[1:6] == ["RET-20484", "12.0 h", "$47.00", "$47.00", "$0.00"]


def test_reprice_and_reorder_rows(signed_in, shift):
    html = call(signed_in, shift, "list_products", page_size="5").content.decode()
    row = rows_of(html)["PRD-001"]
    assert 'value="set_price"' in row and 'name="arg_price" value="214.00"' in row
    html = call(signed_in, shift, "search_supply_catalog", page_size="5").content.decode()
    row = rows_of(html)["SP-0001"]
    assert 'value="place_purchase_order"' in row and 'name="arg_quantity" value="18"' in row  # the vendor's MOQ
    html = call(signed_in, shift, "list_inventory", page_size="20").content.decode()
    rows = rows_of(html)
    assert len(rows) == 20 and 'name="arg_supply_product_id" value="SP-0001"' in rows["PRD-001"]
    # only products whose source this shift has read (5 supply rows) get a Reorder; no guesses
    with_reorder = [k for k, r in rows.items() if "place_purchase_order" in r]
    assert 1 <= len(with_reorder) <= 5


def test_single_objects_read_as_cards(signed_in, shift):
    html = call(signed_in, shift, "get_product", product_id="PRD-001").content.decode()
    assert '<div class="card" data-key="PRD-001">' in html
    assert "<h4>Classic Recycled Nylon Puffer Jacket</h4>" in html
    assert re.search(r"<dt>shelf price</dt><dd class=\"k-money\">\$214.00</dd>", html)
    assert "Variant rows" in html and 'data-key="PRD-001-XS-BLS"' in html


def test_a_bad_argument_is_the_stores_refusal_in_plain_words(signed_in, shift):
    """The MCP layer checks no argument: a price with fractions of a cent reaches the store,
    which refuses it (and, as for any refusal, spends the operation)."""
    before = ops_left(call(signed_in, shift, "store_status").content.decode())
    html = call(signed_in, shift, "set_price", product_id="PRD-001", price="1.234").content.decode()
    assert "The store refused this call</b> (invalid_argument)" in html
    assert "price: must have at most two decimal places (whole cents)" in html
    assert "pydantic" not in html and "[type=" not in html and "For further information" not in html
    assert ops_left(html) == before - 1


def test_a_store_refusal_gives_its_code_and_whole_reason(signed_in, shift):
    html = call(signed_in, shift, "fulfill_order", order_id="ORD-NOPE").content.decode()
    assert "The store refused this call</b> (unknown_order)" in html
    assert "no order &#x27;ORD-NOPE&#x27; open or recent; list_orders shows the ids" in html
    assert "A refused call still spends its operation." in html


def test_the_call_record_says_whether_a_call_was_stored(signed_in, shift, client):
    sent = uuid.uuid4().hex
    call(signed_in, shift, "list_orders", call_id=sent)
    stored = signed_in.get(f"/shifts/{shift.pk}/call-status/{sent}/").json()
    assert stored["stored"] and stored["seq"] == 2 and stored["reached_store"] and stored["spent_operation"]
    missing = signed_in.get(f"/shifts/{shift.pk}/call-status/{uuid.uuid4().hex}/").json()
    assert missing == {"stored": False, "status": "active"}
    assert signed_in.get(f"/shifts/{shift.pk}/call-status/bad!/").status_code in (400, 404)
    other = briefed_user("someone-else")
    client.force_login(other)
    assert client.get(f"/shifts/{shift.pk}/call-status/{sent}/").status_code == 404


def test_a_call_that_moves_the_window_is_marked_and_history_shows_arguments(signed_in, shift):
    html = call(signed_in, shift, "list_orders", page_size="7").content.decode()
    assert "A new window started" not in html
    assert '<span class="args-line">{&quot;page_size&quot;: 7}</span>' in html
    html = call(signed_in, shift, "end_window").content.decode()
    assert "A new window started: this call moved the store to window 2 of 14 (2026-08-01 12:00 UTC)" in html


def test_home_links_the_study_page_only_of_someone_in_a_study(signed_in, user):
    from django.contrib.auth import get_user_model

    from shifts.briefing import PRACTICE_CELL
    from shifts.lifecycle import start_shift
    from studies.design import create_study
    from studies.participants import add_participant

    signed_in.post(f"/shifts/{start_shift(user, *PRACTICE_CELL, practice=True).pk}/end/")
    assert "Your study page" not in signed_in.get("/").content.decode()
    owner = get_user_model().objects.create_superuser("study-owner", password=None)
    study = create_study(owner, "Study A", ["steady"], [7])
    add_participant(owner, study, "p-1", user=user)
    html = signed_in.get("/").content.decode()
    assert f'Your study page, with any completion codes: <a href="/studies/me/?study={study.pk}">Study A</a>.' in html
    assert 'its "Get my next shift" button there gives you the next one' in html  # a study link's way


def _practised_in_studies(signed_in, user, *names):
    """The user past the practice shift and a participant of a new study of each name (its owner too)."""
    from django.contrib.auth import get_user_model

    from shifts.briefing import PRACTICE_CELL
    from shifts.lifecycle import start_shift
    from studies.design import create_study
    from studies.participants import add_participant

    signed_in.post(f"/shifts/{start_shift(user, *PRACTICE_CELL, practice=True).pk}/end/")
    owner = get_user_model().objects.create_superuser("study-owner", password=None)
    studies = [create_study(owner, name, ["steady"], [7]) for name in names]
    return owner, [add_participant(owner, study, "p-1", user=user) for study in studies]


def test_home_of_a_withdrawn_participant_says_no_shift_will_come(signed_in, user):
    from studies.bulk import withdraw

    owner, (person,) = _practised_in_studies(signed_in, user, "Study A")
    withdraw(owner, person, "asked to stop")
    study = person.study
    html = signed_in.get("/").content.decode()
    step = html[html.index('<span id="next-step">'):].split("</span>")[0]
    assert step == ('<span id="next-step">You have been withdrawn from this study: no further shift will be assigned '
                    f'to you. Your study page, with any completion codes: <a href="/studies/me/?study={study.pk}">'
                    'Study A</a>.')


def test_home_points_to_the_study_still_going_on_not_the_latest_one_left(signed_in, user):
    from studies.bulk import withdraw

    owner, (going_on, left) = _practised_in_studies(signed_in, user, "Study A", "Study B")
    withdraw(owner, left, "asked to stop")
    html = signed_in.get("/").content.decode()
    assert f'<a href="/studies/me/?study={going_on.study.pk}">' in html and "You have been withdrawn" not in html


def test_home_after_practice_says_what_comes_next(signed_in, user):
    from shifts.briefing import PRACTICE_CELL
    from shifts.lifecycle import assign_shift, start_shift

    practice = start_shift(user, *PRACTICE_CELL, practice=True)
    assert 'id="next-step"' not in signed_in.get("/").content.decode()  # practice still open
    signed_in.post(f"/shifts/{practice.pk}/end/")
    html = signed_in.get("/").content.decode()
    assert "Next: no scored shift is assigned to you yet" in html and "/studies/" not in html  # in no study

    assign_shift(user, "steady", 3)
    html = signed_in.get("/").content.decode()
    assert "Next: start or resume a scored shift in the table below." in html and 'id="next-step"' not in html


def test_purchase_orders_landing_after_close_are_warned_and_lines_have_an_editor(signed_in, shift):
    # counter-punch is 7 days long: SP-0002's lead time lands after close, SP-0001's does not
    leads = {row["supply_product_id"]: row["lead_days"]
             for row in arm("counter-punch", 7).call("search_supply_catalog", {"page_size": 5}).data["rows"]}
    assert leads["SP-0002"] > 7 >= leads["SP-0001"]
    html = call(signed_in, shift, "search_supply_catalog", page_size="5").content.decode()
    row = rows_of(html)["SP-0002"]
    assert "lands after close" in row and f'hx-confirm="The lead time is {leads["SP-0002"]} days' in row
    assert "after the store closes at 2026-08-08 00:00" in row
    assert "lands after close" not in rows_of(html)["SP-0001"]
    html = call(signed_in, shift, "supply_product_detail", supply_product_id="SP-0002").content.decode()
    assert f'class="late-warning" role="alert">The lead time is {leads["SP-0002"]} days' in html
    html = call(signed_in, shift, "supply_product_detail", supply_product_id="SP-0001").content.decode()
    assert '<form class="po-lines"' in html and html.count('class="po-line"') == 18
    assert 'class="late-warning"' not in html
    # what the editor sends: the lines object, one call
    reply = call(signed_in, shift, "place_purchase_order", supply_product_id="SP-0001",
                 lines='{"SP-0001-M-BLK": 10, "SP-0001-L-BLK": 8}').content.decode()
    assert "ordered (#5)" in reply and ops_left(reply) == OPS - 4


def test_argument_problems_echo_a_value_with_commas_whole_and_not_every_argument_for_a_missing_one():
    from console.present import _argument_problems

    text = ("Error executing tool place_purchase_order: 2 validation errors for place_purchase_orderArguments\n"
            "lines\n  Input should be a valid dictionary [type=dict_type, input_value=[{'sku': 'x', 'quantity': 5}],"
            " input_type=list]\n    For further information visit https://errors.pydantic.dev/2.14/v/dict_type\n"
            "supply_product_id\n  Field required [type=missing, input_value={'lines': 'not json'}, input_type=dict]\n"
            "    For further information visit https://errors.pydantic.dev/2.14/v/missing")
    assert _argument_problems(text) == ["lines: Input should be a valid dictionary (you gave [{'sku': 'x', "
                                        "'quantity': 5}])", "supply_product_id: Field required"]


def test_argument_problems_shorten_a_long_value():
    from console.present import GIVEN_MAX, _argument_problems

    text = f"name\n  String should have at most 120 characters [type=string_too_long, input_value='{'x' * 200}', " \
           "input_type=str]"
    (problem,) = _argument_problems(text)
    given = problem.split("(you gave ", 1)[1][:-1]
    assert len(given) == GIVEN_MAX and given.endswith("…")


def test_an_id_of_spaces_only_is_blank_and_refused_by_the_store_as_missing(signed_in, shift):
    before = ops_left(call(signed_in, shift, "store_status").content.decode())
    html = call(signed_in, shift, "get_order", order_id="   ").content.decode()
    assert "The store refused this call</b> (invalid_argument)" in html and "order_id: is required" in html
    assert ops_left(call(signed_in, shift, "store_status").content.decode()) == before - 1


def test_a_list_of_prices_reads_as_money():
    from console.present import cell

    assert cell("old_prices", ["72.00", "1250.50"]).text == "$72.00, $1,250.50"
    assert cell("skus", ["PRD-001-XS-BLS"]).text == "PRD-001-XS-BLS"


def test_a_year_reads_as_a_year_and_a_count_keeps_its_separator():
    from console.present import cell

    assert cell("founded", 2013).text == "2013"  # supplier_profile; was "2,013"
    assert cell("stock_units", 1695).text == "1,695"


def test_a_figure_sent_as_text_is_a_number():
    from console.present import cell

    rate = cell("storage_charge_per_unit_day", "0.0200")  # platform_terms
    assert (rate.text, rate.kind) == ("0.0200", "number")
    assert cell("rating", "4.60").kind == "number"


def test_lines_that_are_not_json_are_refused_by_the_store(signed_in, shift):
    before = ops_left(call(signed_in, shift, "store_status").content.decode())
    html = call(signed_in, shift, "place_purchase_order", supply_product_id="SP-0004",
                lines="{SP-0004-XS-BLS: 5}").content.decode()
    assert "The store refused this call</b> (invalid_argument)" in html
    assert "lines: input should be a valid dictionary" in html  # what an agent reads
    assert "console help, lines: the text is not valid JSON" in html  # and why, for the text box
    assert ops_left(call(signed_in, shift, "store_status").content.decode()) == before - 1


def test_lines_written_as_json_lines_are_refused_by_the_store(signed_in, shift):
    html = call(signed_in, shift, "place_purchase_order", supply_product_id="SP-0004",
                lines='{"SP-0004-XS-BLS": 5}\n{"SP-0004-S-BLS": 5}').content.decode()
    assert "The store refused this call</b> (invalid_argument)" in html
    assert "lines: input should be a valid dictionary" in html
    assert "console help, lines: the text is not valid JSON" in html


def test_money_inside_a_grouped_field_reads_as_money():
    from console.present import cell

    assert cell("costs_last_7_days", {"po_payment": "536.50", "shipping_label": "18.00"}).text == \
        "po payment $536.50, shipping label $18.00"


def test_times_inside_a_grouped_field_read_as_times():
    from console.present import cell

    assert cell("period", {"from": "2026-07-25T00:00Z", "to": "2026-08-01T00:00Z"}, dated=True).text == \
        "from 2026-07-25 00:00, to 2026-08-01 00:00"


def test_a_cards_store_time_carries_the_year_as_the_header_does(signed_in, shift):
    html = call(signed_in, shift, "store_status").content.decode()
    assert '<div><dt>time</dt><dd class="k-time">2026-08-01 00:00</dd></div>' in html


def test_a_write_call_has_no_read_at_badge(signed_in, shift):
    html = call(signed_in, shift, "end_window").content.decode()
    assert 'class="tag read-at"' not in html


def test_a_read_does_not_repeat_its_number_under_its_title(signed_in, shift):
    html = call(signed_in, shift, "list_orders").content.decode()
    assert "#2 done" not in html
    assert re.search(r'<p class="outcome" data-ok="1" data-seq="2"></p>', html)


def test_a_team_account_without_shifts_is_shown_its_team_pages_not_the_participant_steps(client, db):
    from django.contrib.auth import get_user_model

    client.force_login(get_user_model().objects.create_superuser("root", password=None))
    html = client.get("/").content.decode()
    team = html.split('<p id="team-home">')[1].split("</p>")[0]
    assert '<a href="/studies/">Studies</a> · <a href="/explorer/">Explorer</a> · <a href="/admin/">Admin</a>' in team
    assert "Read the briefing." not in html


def test_a_participant_without_shifts_still_sees_the_steps(client, db):
    from django.contrib.auth import get_user_model

    client.force_login(get_user_model().objects.create_user("newcomer", password=None))
    html = client.get("/").content.decode()
    assert "Read the briefing." in html and 'id="team-home"' not in html


def test_an_inventory_reply_reads_supply_results_only_when_the_shift_has_some(signed_in, shift):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    def supply_queries(**arguments) -> list[str]:
        with CaptureQueriesContext(connection) as seen:
            call(signed_in, shift, "list_inventory", **arguments)
        return [q["sql"] for q in seen.captured_queries if "search_supply_catalog" in q["sql"]]

    assert supply_queries(page_size="5") == []  # the shift has read no supply: nothing to look for
    call(signed_in, shift, "search_supply_catalog", page_size="5")
    queried = supply_queries(page_size="20")
    assert len(queried) == 1 and '"seq" IN (' in queried[0]


def test_an_order_read_short_of_stock_offers_no_ship_button():
    from console import present

    row = {"status": "awaiting_shipment", "order_id": "ORD-1", "in_stock": True}
    assert [a.tool for a in present.ROW_ACTIONS["list_orders"](row)] == ["fulfill_order"]
    assert present.ROW_ACTIONS["list_orders"]({**row, "in_stock": False}) == []
    assert [a.tool for a in present.ROW_ACTIONS["get_order"]({**row, "in_stock": None})] == ["fulfill_order"]


def test_a_reprice_sent_as_a_whole_number_says_the_price_in_dollars_and_cents(signed_in, shift):
    reply = call(signed_in, shift, "set_price", product_id="PRD-002", price="214").content.decode()
    assert re.search(r'<p class="outcome" data-ok="1" data-seq="\d+">repriced to \$214\.00 \(#\d+\)</p>', reply)


def test_a_list_of_rows_in_a_cell_is_counted_in_the_singular_when_one():
    from console.present import cell

    assert cell("batches", [{"lot": 1}]).text == "1 row"
    assert cell("batches", [{"lot": 1}, {"lot": 2}]).text == "2 rows"


def test_an_empty_list_in_a_cell_reads_none():
    from console.present import cell

    assert (cell("rivals", []).text, cell("rivals", []).sort) == ("none", "0")


def test_a_reprice_says_the_new_price_in_its_outcome_and_on_the_row_read_before_it(signed_in, shift):
    call(signed_in, shift, "list_products", page_size="5")
    reply = call(signed_in, shift, "set_price", product_id="PRD-002", price="89.00").content.decode()
    assert re.search(r'<p class="outcome" data-ok="1" data-seq="3">repriced to \$89\.00 \(#3\)</p>', reply)
    reread = signed_in.get(f"/shifts/{shift.pk}/calls/2/", **HX).content.decode()
    assert "repriced to $89.00 (#3)" in rows_of(reread)["PRD-002"]


def test_a_placed_purchase_order_offers_cancel_until_its_vendor_ships_it(signed_in, shift):
    reply = call(signed_in, shift, "place_purchase_order", supply_product_id="SP-0001", quantity="20").content.decode()
    po = re.search(r'name="arg_po_id" value="(PO-\d+)"', reply)
    assert po, "the order's card offers Cancel"  # an undo, while the vendor has not shipped it
    po = po.group(1)
    assert f"<h4>Purchase order {po}</h4>" in reply  # not the tool's name
    assert f'hx-confirm="Cancel {po}? The vendor refunds its cost less the cancellation fee' in reply
    assert "lands after close" not in reply  # its question is not the late reorder's
    html = call(signed_in, shift, "list_purchase_orders").content.decode()
    row = rows_of(html)[po]
    assert 'value="cancel_purchase_order"' in row and ">Cancel order</button>" in row
    done = call(signed_in, shift, "cancel_purchase_order", po_id=po).content.decode()
    assert re.search(r'data-ok="1" data-seq="4">cancelled \(#4\)</p>', done)
    reread = rows_of(signed_in.get(f"/shifts/{shift.pk}/calls/3/", **HX).content.decode())[po]
    assert 'class="done"' in reread and "cancelled (#4)" in reread and "cancel_purchase_order" not in reread


def test_cancel_is_offered_only_for_an_order_its_vendor_has_not_shipped():
    from console import present

    cancel = present.ROW_ACTIONS["list_purchase_orders"]
    row = {"po_id": "PO-1", "status": "placed", "cancellable_until": "2026-08-02T06:00Z"}
    assert [(a.label, a.tool, a.fixed) for a in cancel(row)] == [
        ("Cancel order", "cancel_purchase_order", {"po_id": "PO-1"})]
    assert cancel({**row, "status": "in_transit", "cancellable_until": None}) == []
    assert cancel({**row, "status": "received"}) == []
    assert cancel({**row, "cancellable_until": None}) == []


def test_a_paged_table_reads_the_page_before_and_after_with_the_same_arguments(signed_in, shift):
    html = call(signed_in, shift, "list_orders", page_size="2", status="all").content.decode()
    assert "page 1 of " in html
    nav = re.search(r'<span class="page-reads".*?</span>', html, re.S).group(0)
    assert "Previous page" not in nav and ">Next page</button>" in nav
    assert '<input type="hidden" name="tool" value="list_orders">' in nav
    for name, value in (("page", "2"), ("page_size", "2"), ("status", "all")):
        assert f'<input type="hidden" name="arg_{name}" value="{value}">' in nav
    assert 'hx-target="#result"' in nav and 'data-spends="1"' in nav
    # what the Next page form sends is the next page, one call
    reply = call(signed_in, shift, "list_orders", page_size="2", status="all", page="2").content.decode()
    assert "page 2 of " in reply and ops_left(reply) == OPS - 2
    nav = re.search(r'<span class="page-reads".*?</span>', reply, re.S).group(0)
    assert '<input type="hidden" name="arg_page" value="1">' in nav and ">Previous page</button>" in nav
    pages = int(re.search(r"page 2 of (\d+)", reply).group(1))
    last = call(signed_in, shift, "list_orders", page_size="2", status="all", page=str(pages)).content.decode()
    assert ">Previous page</button>" in last and "Next page" not in last
    one_page = call(signed_in, shift, "list_orders", page_size="100").content.decode()  # six orders awaiting shipment
    assert 'class="page-reads"' not in one_page


def test_the_page_reads_escape_the_arguments_they_send_again():
    from django.template import Context

    from console import present
    from console.templatetags.console_tags import page_reads_html

    class Active:
        pk = 1
        takes_calls = True

    tricky = "<b>\"O'Neil\" & co</b>"
    table = present.Table("products", [], [], next_page=present.Action("Next page", "list_products",
                                                                       {"search": tricky, "page": "2"}))
    html = page_reads_html(Context({"shift": Active(), "csrf_token": "tok"}), table)
    assert 'name="arg_search" value="&lt;b&gt;&quot;O&#x27;Neil&quot; &amp; co&lt;/b&gt;"' in html and tricky not in html
    Active.takes_calls = False
    assert page_reads_html(Context({"shift": Active(), "csrf_token": "tok"}), table) == ""


def test_every_write_that_marks_a_row_done_names_the_actions_it_ends():
    from console import present

    assert set(present.SUPERSEDES) == set(present.DONE_WORDS)


def test_a_refund_the_customer_did_not_accept_leaves_its_row_open_on_a_list_read_before_it(signed_in, shift):
    call(signed_in, shift, "list_returns")
    reply = call(signed_in, shift, "refund_return", return_id="RET-20484", amount="1.00").content.decode()
    # the row it was sent from is told so, and keeps its Refund (the page reads data-open)
    assert re.search(r'<p class="outcome" data-ok="1" data-seq="3" data-open="1">refunded \$1\.00 \(#3\): not accepted '
                     r'as settlement, the return stays open</p>', reply)
    reread = rows_of(signed_in.get(f"/shifts/{shift.pk}/calls/2/", **HX).content.decode())["RET-20484"]
    assert 'class="done"' not in reread and 'value="refund_return"' in reread  # still to be refunded



def test_a_reprice_marks_a_products_row_but_not_an_inventory_rows_reorder(signed_in, shift):
    call(signed_in, shift, "search_supply_catalog", page_size="5")  # inventory rows then offer Reorder
    inventory = call(signed_in, shift, "list_inventory", page_size="5").content.decode()
    product, row = next((k, r) for k, r in rows_of(inventory).items() if 'value="place_purchase_order"' in r)
    products = call(signed_in, shift, "list_products", page_size="50").content.decode()
    assert product in rows_of(products)
    call(signed_in, shift, "set_price", product_id=product, price="99.00")
    reread = rows_of(signed_in.get(f"/shifts/{shift.pk}/calls/3/", **HX).content.decode())[product]
    assert 'class="done"' not in reread and 'value="place_purchase_order"' in reread  # its Reorder stays
    reread = rows_of(signed_in.get(f"/shifts/{shift.pk}/calls/4/", **HX).content.decode())[product]
    assert 'class="done"' in reread and "repriced to" in reread and 'value="set_price"' not in reread


def test_a_reprice_sent_with_a_dollar_sign_says_the_price_to_the_cent(signed_in, shift):
    reply = call(signed_in, shift, "set_price", product_id="PRD-002", price="$214").content.decode()
    assert "repriced to $214.00 (#" in reply
