"""The console in a real browser, against a real server process.

One participant goes the whole way: briefing, practice, a scored shift with the
day's work (ship, refund from the inbox, a purchase order), a free re-read, a
double-clicked submit, a reload and a server restart mid-shift, and the end page.
Smaller tests cover a second tab and the back button.
"""
import itertools
import json
import re

from environment.tasks import get_task

PASSWORD = "pw-browser-123"
PRACTICE_OPS = get_task("practice").ops_per_window  # the console's practice task (shifts.briefing.PRACTICE_CELL)
# The scored shift: a lens with room in a window for the day's work (the training tasks keep
# their budgets tight), and its figures.
SCORED = "steady"
OPS, WINDOWS = get_task(SCORED).ops_per_window, get_task(SCORED).windows
_names = itertools.count(1)


def new_participant(server, login, page, scored=(SCORED, "11")) -> str:
    username = f"expert{next(_names)}-{server.port}"
    server.create_user(username, PASSWORD)
    server.manage("assign_shift", username, scored[0], scored[1])
    login(page, username, PASSWORD)
    return username


def ops_left(page) -> int:
    return int(page.get_attribute("#store-header", "data-ops-left"))


def shown_seq(page) -> int:
    value = page.get_attribute("#result .result", "data-seq") if page.locator("#result .result").count() else None
    return int(value) if value else 0


def call_tool(page, tool: str, **fields) -> dict | None:
    """Fill and submit one tool form; wait for its result; return the JSON body."""
    form = page.locator(f"#tool-{tool}")
    if not form.is_visible():
        form.locator("xpath=ancestor::details").locator("summary").click()
    for name, value in fields.items():
        form.locator(f"[name=arg_{name}]").fill(str(value))
    before = shown_seq(page)
    form.locator("button[type=submit]").click()
    page.wait_for_function(f"() => {{ const r = document.querySelector('#result .result'); "
                           f"return r && Number(r.dataset.seq) > {before}; }}")
    return result_json(page)


def result_json(page) -> dict | None:
    """The JSON body behind the result's JSON toggle (read whether or not it is open)."""
    pre = page.locator("#result pre.json")
    return json.loads(pre.text_content()) if pre.count() else None


def accept_and_end(page) -> None:
    page.click("form.end-shift button")
    page.wait_for_selector("#end-page")


def start_shift_from_home(page, kind: str) -> None:
    row = page.locator("table.shifts tbody tr", has=page.locator("td", has_text=kind)).first
    row.locator("button", has_text="Start").click()
    page.wait_for_selector("#store-header")


def test_a_participant_works_a_whole_shift(page, server, login, screenshot):
    new_participant(server, login, page)
    home = page.inner_text("main")
    assert "Read and acknowledge it" in home
    assert "Locked: Read and acknowledge the briefing before starting a shift." in home

    # the briefing, acknowledged
    page.click("text=Read and acknowledge it")
    assert page.locator("article.briefing h2").count() == 9
    page.click("text=I have read the briefing")
    assert "Briefing acknowledged. Your practice shift is unlocked." in page.inner_text("ul.messages")
    assert "Locked: Finish your practice shift before starting a scored shift." in page.inner_text("main")

    # the practice shift, started and ended
    start_shift_from_home(page, "practice")
    assert ops_left(page) == PRACTICE_OPS
    accept_and_end(page)
    page.goto("/")
    assert "Done: scored shifts are unlocked." in page.inner_text("main")

    # the scored shift
    start_shift_from_home(page, "scored")
    shift_url = page.url
    page.wait_for_selector("body[data-live=websocket]")  # the header is pushed over the websocket
    orders = call_tool(page, "list_orders", page_size=5)
    order_id = orders["rows"][0]["order_id"]
    shipped = call_tool(page, "fulfill_order", order_id=order_id)
    assert shipped["order_id"] == order_id and shipped["status"] == "shipped"

    call_tool(page, "list_returns")
    first_row = page.locator("#inbox table.inbox tbody tr").first
    return_id = first_row.get_attribute("id").removeprefix("return-")
    before = shown_seq(page)
    first_row.locator("button", has_text="Refund").click()
    page.wait_for_function(f"() => Number(document.querySelector('#result .result').dataset.seq) > {before}")
    assert result_json(page)["status"] == "resolved"
    assert re.search(r"refund sent \(#\d+\)", page.locator(f"#return-{return_id}").inner_text())

    placed = call_tool(page, "place_purchase_order", supply_product_id="SP-0001", quantity=40)
    assert placed["po_id"].startswith("PO-")
    assert ops_left(page) == OPS - 5

    # a cached view, re-read for free
    page.click("#cached-list_orders a.reread")
    page.wait_for_selector("#result .cached-banner")
    assert "as read at 2026-08-01 00:00 UTC" in page.inner_text("#result .cached-banner")
    assert ops_left(page) == OPS - 5
    page.reload()
    assert ops_left(page) == OPS - 5

    # a double-clicked submit spends one operation
    history_before = page.locator("#history-list li").count()
    form = page.locator("#tool-list_orders")
    form.locator("[name=arg_page_size]").fill("3")
    before = shown_seq(page)
    form.locator("button[type=submit]").dblclick()
    page.wait_for_function(f"() => Number(document.querySelector('#result .result').dataset.seq) > {before}")
    page.wait_for_timeout(800)
    assert ops_left(page) == OPS - 6
    page.reload()
    assert ops_left(page) == OPS - 6
    assert page.locator("#history-list li").count() == history_before + 1

    # a second click once the answer is in, as soon as a hurried person's, is the same call: nothing more spent
    form = page.locator("#tool-list_orders")
    form.locator("[name=arg_page_size]").fill("4")
    before = shown_seq(page)
    form.locator("button[type=submit]").click()
    page.wait_for_function(f"() => Number(document.querySelector('#result .result').dataset.seq) > {before}")
    page.locator("#tool-list_orders button[type=submit]").click()  # the form the answer brought back
    page.wait_for_selector("#result .repeat-banner")
    assert ops_left(page) == OPS - 7
    page.wait_for_timeout(1600)  # then a press is a new call
    page.locator("#tool-list_orders button[type=submit]").click()
    page.wait_for_function(f"() => document.querySelector('#store-header').dataset.opsLeft === '{OPS - 8}'")

    # a reload and a server restart resume the same shift
    header = page.inner_text("#store-header")
    history = page.inner_text("#history-list")
    page.reload()
    assert page.inner_text("#store-header") == header and page.inner_text("#history-list") == history
    server.restart()
    page.goto(shift_url)
    assert page.inner_text("#store-header") == header and page.inner_text("#history-list") == history
    again = call_tool(page, "list_orders", page_size=5)  # and the next call continues the count
    assert again["rows"][0]["order_id"] != order_id  # the shipped order is no longer awaiting shipment
    assert ops_left(page) == OPS - 9
    page.wait_for_selector("body[data-live=websocket]")
    for window in range(2, 6):  # a few windows, so the end page's timeline has a shape
        call_tool(page, "end_window")
        assert f"Window {window} of {WINDOWS}" in page.inner_text("#store-header")
    call_tool(page, "list_returns")
    call_tool(page, "list_orders", page_size=5)
    page.set_viewport_size({"width": 1440, "height": 1100})
    page.evaluate("window.scrollTo(0, 0); document.getElementById('tools').scrollTop = 0")
    screenshot(page, "console-workspace", full_page=False)

    # the end page
    accept_and_end(page)
    assert page.locator("#verdict").inner_text() in ("Passed", "Not passed")
    assert re.fullmatch(r"\d\.\d{3}", page.inner_text("#composite"))
    for label in ("Business", "Reliability", "Orders shipped on time", "Returns handled", "Continuity"):
        assert page.locator("table.score th", has_text=label).count() == 1
    chart = page.locator("#timeline-chart svg")
    assert chart.is_visible() and chart.locator("polyline").count() == 3
    assert chart.locator("text.xlabel").all_text_contents() == ["W1", "W2", "W3", "W4", "W5", "settled"]
    screenshot(page, "console-end")


def test_a_second_tab_sees_the_same_shift_live(page, server, login):
    new_participant(server, login, page)
    page.goto("/briefing/")
    page.click("text=I have read the briefing")
    start_shift_from_home(page, "practice")
    page.wait_for_selector("body[data-live=websocket]")
    second = page.context.new_page()
    second.goto(page.url)
    second.wait_for_selector("body[data-live=websocket]")
    call_tool(second, "list_orders", page_size=2)
    # the first tab's header follows without a reload
    page.wait_for_function(f"() => document.querySelector('#store-header').dataset.opsLeft === '{PRACTICE_OPS - 1}'")
    second.close()


def test_the_back_button_returns_to_the_same_workspace(page, server, login):
    new_participant(server, login, page)
    page.goto("/briefing/")
    page.click("text=I have read the briefing")
    start_shift_from_home(page, "practice")
    call_tool(page, "list_orders", page_size=2)
    header = page.inner_text("#store-header")
    page.click(".shift-title >> text=History")
    page.wait_for_selector("#history-count")
    assert page.inner_text("#history-count") == "2 of 2 calls."
    page.go_back()
    page.wait_for_selector("#store-header")
    assert page.inner_text("#store-header") == header


def test_pause_blocks_tools_until_resume(page, server, login):
    new_participant(server, login, page)
    page.goto("/briefing/")
    page.click("text=I have read the briefing")
    start_shift_from_home(page, "practice")
    page.fill(".pause-form input[name=reason]", "lunch break")
    page.click("#pause-button")
    page.wait_for_selector("#paused-notice")
    assert page.locator("#tools").count() == 0
    assert "Paused: lunch break" in page.inner_text("#shift-bar")
    page.click("#resume-button")
    page.wait_for_selector("#tools")
    assert ops_left(page) == PRACTICE_OPS


def practice_with_deadline_in(page, server, login, seconds: int) -> int:
    """A new participant's practice shift, open on the page, its deadline moved to
    ``seconds`` from now (negative: already past); the shift's id."""
    new_participant(server, login, page)
    page.goto("/briefing/")
    page.click("text=I have read the briefing")
    start_shift_from_home(page, "practice")
    shift = int(re.search(r"/shifts/(\d+)/", page.url).group(1))
    server.shell("from datetime import timedelta\nfrom django.utils import timezone\n"
                 "from shifts.models import Shift\n"
                 f"Shift.objects.filter(pk={shift}).update(deadline=timezone.now() + timedelta(seconds={seconds}))\n")
    return shift


def test_a_shift_whose_deadline_passes_on_the_open_page_ends_at_its_deadline(page, server, login):
    practice_with_deadline_in(page, server, login, 3)
    page.reload()  # the countdown now runs out in about 3 s: the page loads again, sees the time is up, ends it
    page.wait_for_selector("#end-page", timeout=30_000)
    assert "deadline" in page.inner_text("#end-page table.score:not(.explained)")
    assert page.locator("#tools").count() == 0 and page.locator("#due-notice").count() == 0


def test_the_clocks_stand_still_on_a_page_past_its_deadline(page, server, login):
    shift = practice_with_deadline_in(page, server, login, -1)
    # The due page posts the shift's end as it loads; refused here, the page stays due.
    page.route(f"**/shifts/{shift}/end/", lambda route: route.abort())
    page.reload()
    page.wait_for_selector("#due-notice")
    first = page.inner_text("#active-time")
    page.wait_for_timeout(2500)
    assert page.inner_text("#active-time") == first  # the server's figure, as the page was loaded with it
    assert page.locator("#due-notice").count() == 1 and page.get_attribute("#shift-bar", "data-status") == "active"


def test_starting_a_scored_shift_asks_first_and_a_no_starts_nothing(browser, server, login):
    context = browser.new_context(base_url=server.url, viewport={"width": 1440, "height": 900})
    context.set_default_timeout(20_000)
    page = context.new_page()
    questions, answer = [], {"accept": True}

    def on_dialog(dialog) -> None:
        questions.append(dialog.message)
        dialog.accept() if answer["accept"] else dialog.dismiss()

    page.on("dialog", on_dialog)
    new_participant(server, login, page)
    page.goto("/briefing/")
    page.click("text=I have read the briefing")
    start_shift_from_home(page, "practice")  # practice starts without a question
    assert questions == []
    accept_and_end(page)
    questions.clear()  # ending the practice asked its own question

    page.goto("/")
    answer["accept"] = False
    page.locator("table.shifts tbody tr", has=page.locator("td", has_text="scored")).first.locator(
        "button", has_text="Start").click()
    page.wait_for_timeout(500)
    assert questions == ["Start this shift now? Its 12-hour deadline starts at once and keeps running through breaks."]
    assert page.locator("#store-header").count() == 0
    assert "Assigned" in page.locator("table.shifts tbody tr", has=page.locator("td", has_text="scored")).first.inner_text()

    answer["accept"] = True
    start_shift_from_home(page, "scored")
    assert len(questions) == 2
    context.close()


def test_a_result_below_the_fold_is_brought_into_view(page, server, login):
    new_participant(server, login, page)
    page.goto("/briefing/")
    page.click("text=I have read the briefing")
    start_shift_from_home(page, "practice")
    page.set_viewport_size({"width": 1280, "height": 800})  # the brief open above the result, as on a laptop
    page.evaluate("window.scrollTo(0, 0)")
    before = page.evaluate("() => document.getElementById('result').getBoundingClientRect().top")
    page.click(".quick-reads button[data-tool=list_orders]")
    page.wait_for_function("() => document.activeElement === document.getElementById('result')")  # settled
    top = page.evaluate("() => document.getElementById('result').getBoundingClientRect().top")
    assert -2 <= top <= 800 - 100, (before, top)


def test_ending_the_shift_early_says_how_many_windows_go_unplayed(page, server, login):
    new_participant(server, login, page)
    page.goto("/briefing/")
    page.click("text=I have read the briefing")
    start_shift_from_home(page, "practice")
    tab = page.context.new_page()  # without the fixture's page, which accepts every question
    tab.goto(page.url)
    windows = int(tab.get_attribute("#store-header", "data-windows"))
    asked: list[str] = []
    tab.on("dialog", lambda dialog: (asked.append(dialog.message), dialog.dismiss()))
    tab.click("form.end-shift button")
    tab.wait_for_function("() => true")
    assert asked == [f"End the whole shift now, in window 1 of {windows}? The {windows - 1} windows after this one are "
                     "not played, and continuity counts them as missed. Every order still unshipped that falls due "
                     "before the shift's last day ends is cancelled, fined and counts as late, even one not due yet, "
                     "and every open return that would escalate by then escalates. The store is frozen and settled "
                     "as played; this cannot be undone."]
    tab.reload()
    assert tab.locator("#store-header").count() == 1 and tab.locator("#end-page").count() == 0  # declined: goes on
