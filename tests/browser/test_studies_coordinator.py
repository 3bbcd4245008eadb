"""A coordinator runs a study in the browser: invite, assign, monitor, coached retry, select, export.

The participant's side (invitation link, consent) is a second browser context; their
shifts are played through the console's services in ``manage.py shell`` (the console's
own browser tests drive its workspace), so this test stays on the study pages.
"""
import io
import json
import re
import uuid
import zipfile

from test_console_work import axe_serious

SHELL_PRELUDE = (
    "from studies.models import Participant, Attempt\n"
    "from shifts import briefing, calls, ending, lifecycle\n"
    "p = Participant.objects.get(label={label!r})\n"
)
ONBOARD_AND_START = SHELL_PRELUDE + (
    "briefing.acknowledge_briefing(p.user, briefing.BRIEFING_VERSION)\n"
    "practice = p.user.shifts.filter(is_practice=True).first()\n"
    "lifecycle.begin_shift(practice); ending.end_shift(practice, 'practice done')\n"
    "a = Attempt.objects.filter(participant=p).order_by('-number').first()\n"
    "lifecycle.begin_shift(a.shift)\n"
    "calls.call_tool(a.shift, 'list_orders', {{'page_size': 3}}, 'browser-call-1')\n"
    "calls.call_tool(a.shift, 'end_window', {{}}, 'browser-call-2')\n"
)
ASSIGN_AND_CALL = SHELL_PRELUDE + (
    "from studies import assignment\n"
    "assignment.create_attempt(None, p, p.study.cells.get(task_id='steady', seed=7))\n"
    "a = Attempt.objects.get(participant=p, cell__task_id='steady', cell__seed=11)\n"
    "calls.call_tool(a.shift, 'store_status', {{}}, 'browser-call-3')\n"
)
DEADLINE_SOON = SHELL_PRELUDE + (
    "from datetime import timedelta\n"
    "from django.utils import timezone\n"
    "from shifts.models import Shift\n"
    "a = Attempt.objects.get(participant=p, cell__task_id='steady', cell__seed=11)\n"
    "Shift.objects.filter(pk=a.shift_id).update(deadline=timezone.now() + timedelta(minutes=30))\n"
)
PLAY_RETRY = SHELL_PRELUDE + (
    "a = Attempt.objects.filter(participant=p).order_by('-number').first()\n"
    "lifecycle.begin_shift(a.shift)\n"
    "calls.call_tool(a.shift, 'list_orders', {{'page_size': 5}}, 'browser-retry-1')\n"
    "ending.end_shift(a.shift, 'ended by the participant')\n"
)


def attempt_row(page, label, number, cell="steady/11"):
    return page.locator("section#attempts tr", has=page.locator(f"td:text-is('{label}')")).filter(
        has=page.locator(f"td:nth-child(2):text-is('{number}')")).filter(
        has=page.locator(f"td:nth-child(1):text-is('{cell}')"))


def test_coordinator_runs_a_participant_through_a_study(page, browser, server, login, screenshot):
    label = f"browser-{uuid.uuid4().hex[:6]}"
    login(page, "coordinator", "coordinator")
    page.goto("/studies/")
    page.click("text=Demo study")
    study_url = page.url

    # invite a new participant
    page.fill("#add-participant input[name=label]", label)
    page.fill("#add-participant input[name=years_ecommerce]", "6")
    page.click("#add-participant button[type=submit]")
    page.click(f"button[name='invite-{label}']")
    link = re.search(r"https?://[^\s<]+/studies/join/[^/\s<]+/", page.locator("ul.messages").inner_text()).group(0)

    # the participant accepts it (their own browser context) and gives consent
    other = browser.new_context(base_url=server.url)
    them = other.new_page()
    them.goto(link + "?PROLIFIC_PID=browser-pid&STUDY_ID=s-1&SESSION_ID=sess-1")
    them.click("#accept")
    them.wait_for_url("**/studies/me/")
    them.check("input[name=agree]")
    them.click("#give-consent")
    assert "You consented to version 1" in them.content()

    # assign a cell
    page.goto(study_url)
    assert "PROLIFIC_PID=browser-pid" in page.content()
    page.select_option("#assign-form select[name=participant]", label=label)
    page.select_option("#assign-form select[name=cell]", label="steady/11")
    page.click("#assign-form button[type=submit]")
    assert f"Assigned steady/11 to {label} (attempt #1)." in page.locator("ul.messages").inner_text()

    # the participant starts and plays; the coordinator watches it live
    server.shell(ONBOARD_AND_START.format(label=label))
    page.click("nav.study-nav >> text=Monitor")
    row = page.locator("#monitor-rows tr", has=page.locator(f"td:text-is('{label}')"))
    assert "2 of 60" in row.inner_text() and "end_window" in row.inner_text()
    page.wait_for_function("document.getElementById('monitor-mode').textContent === 'live'")
    screenshot(page, "studies-monitor")

    # a cell assigned while the monitor is open joins the action form's list with its row
    choices = page.locator("#monitor-action select[name=attempt] option")
    assert f"{label} · steady/7 #1" not in choices.all_inner_texts()
    server.shell(ASSIGN_AND_CALL.format(label=label))
    page.wait_for_function(f"[...document.querySelectorAll('#monitor-attempt option')]"
                           f".some(o => o.textContent === '{label} · steady/7 #1')")
    assert choices.all_inner_texts().count(f"{label} · steady/11 #1") == 1

    # a shift that turns high-risk is said above the table (a live region), once
    assert page.locator("#monitor-risk").inner_text() == "No shift is overdue or at high risk."
    server.shell(DEADLINE_SOON.format(label=label))
    page.wait_for_function("document.getElementById('monitor-risk').textContent === "
                           f"'Needs attention: 1 at high risk ({label} · steady/11 #1).'")

    # force-end it from the monitor, with a reason
    form = page.locator("#monitor-action form")
    form.locator("select[name=attempt]").select_option(label=f"{label} · steady/11 #1")
    form.locator("select[name=action]").select_option("force_end")
    form.locator("input[name=reason]").fill("participant had to leave")
    asked = []
    page.once("dialog", lambda dialog: (asked.append(dialog.message), dialog.accept()))
    form.locator("button[type=submit]").click()
    assert "Force end: steady/11 attempt #1" in page.locator("ul.messages").inner_text()
    assert asked == [f"Force end attempt #1 of {label} on cell steady/11? This cannot be undone."]

    # grant a coached retry, the participant plays it, then select it
    page.goto(study_url)
    first = attempt_row(page, label, "1")
    first.locator("select[name=action]").select_option("retry")
    first.locator("input[name=reason]").fill("ship before refunding")
    first.locator("button[type=submit]").click()
    assert "Coached retry" in attempt_row(page, label, "2").inner_text()
    server.shell(PLAY_RETRY.format(label=label))
    page.goto(study_url)
    retry = attempt_row(page, label, "2")
    assert "Submitted" in retry.inner_text()
    retry.locator("select[name=action]").select_option("select")
    retry.locator("input[name=reason]").fill("coached retry replaces the first")
    retry.locator("button[type=submit]").click()
    assert "manual" in attempt_row(page, label, "2").locator("td.selected").inner_text()
    screenshot(page, "studies-detail")

    # the audit log has it all
    page.click("nav.study-nav >> text=Audit log")
    actions = page.locator("#audit tr[data-action]").evaluate_all("rows => rows.map(r => r.dataset.action)")
    assert {"invited", "assigned", "force_ended", "retry", "selected"} <= set(actions)

    # export and download
    page.click("nav.study-nav >> text=Exports")
    page.click("#export-form button[type=submit]")
    job = page.locator("#export-jobs tr[data-job]").first
    assert job.get_attribute("data-status") == "done"
    with page.expect_download() as info:
        job.locator("a.zip").click()
    archive = zipfile.ZipFile(io.BytesIO(open(info.value.path(), "rb").read()))
    manifest = json.loads(archive.read("manifest.json"))
    attempts_csv = archive.read("attempts.csv").decode()
    assert manifest["files"]["attempts.csv"]["rows"] == attempts_csv.count("\n") - 1
    mine = [line for line in attempts_csv.splitlines() if f",{label}," in line and ",steady/11," in line]
    assert len(mine) == 2 and sum(",true,manual," in line for line in mine) == 1
    screenshot(page, "studies-exports")
    page.click("nav.study-nav >> text=Leaderboard")
    assert "smart-triage" in page.locator("#leaderboard").inner_text()
    screenshot(page, "studies-leaderboard")
    other.close()

    # no serious or critical accessibility problem on the study's pages (axe)
    page.goto(study_url)
    pages = dict(page.locator("nav.study-nav a").evaluate_all("links => links.map(a => [a.textContent.trim(), a.href])"))
    pages["coach view"] = attempt_row(page, label, "2").locator("a", has_text="view").get_attribute("href")
    pages["participant"] = page.locator(f"tr[data-participant='{label}'] a", has_text=label).first.get_attribute("href")
    found = {}
    for name, url in [("detail", study_url), *pages.items()]:
        page.goto(url)
        found[name] = axe_serious(page)
    assert {"detail", "Monitor", "Leaderboard", "Exports", "Audit log", "coach view", "participant"} <= set(found)
    assert all(not v for v in found.values()), {k: v for k, v in found.items() if v}


def test_a_forms_answer_is_in_view_where_the_page_comes_back_to(page, login):
    login(page, "coordinator", "coordinator")
    page.goto("/studies/")
    page.click("text=Demo study")
    page.fill("#add-participant input[name=label]", "demo participant")  # taken: refused
    page.click("#add-participant button[type=submit]")
    page.wait_for_selector("ul.messages")
    assert "already has a participant labelled" in page.inner_text("ul.messages")
    assert page.evaluate("() => window.scrollY") > 0  # back at the form's panel, not at the top
    top, bottom = page.evaluate("() => { const r = document.querySelector('ul.messages').getBoundingClientRect();"
                                " return [r.top, r.bottom]; }")
    assert 0 <= top and bottom <= page.viewport_size["height"]


BOTS_ASSIGNED = (  # a bot of its own on each steady cell named by seed, the cell's quota raised to make room
    "from django.contrib.auth.models import User\n"
    "from studies import assignment, bots, design\n"
    "from studies.models import Study\n"
    "s = Study.objects.get(name='Demo study')\n"
    "c = User.objects.get(username='coordinator')\n"
    "for label, seed in {bots!r}:\n"
    "    cell = s.cells.get(task_id='steady', seed=seed)\n"
    "    design.set_quota(c, s, cell, cell.quota + 1)\n"
    "    assignment.assign(c, bots.add_bot(c, s, label), cell)\n"
)


def test_a_refused_action_comes_back_filled_in_as_sent(page, server, login):
    label = f"refill-{uuid.uuid4().hex[:6]}"
    server.shell(BOTS_ASSIGNED.format(bots=[(label, 11)]))
    login(page, "coordinator", "coordinator")
    page.goto("/studies/")
    page.click("text=Demo study")
    row = page.locator("section#attempts tr", has=page.locator(f"td:text-is('{label}')"))  # the bot's only attempt
    form = row.locator("form.act")
    assert form.locator("input[name=minutes]").count() == 0  # not started: no deadline to move
    form.locator("select[name=action]").select_option("reassign")
    form.locator("input[name=reason]").fill("a note typed before the refusal")
    form.locator("button[type=submit]").click()  # no one chosen to reassign to
    page.wait_for_selector("form.refilled")  # refill.js runs once the page is parsed
    assert "choose the participant to reassign to" in page.inner_text("ul.messages")
    form = row.locator("form.act")
    assert "refilled" in form.get_attribute("class")
    assert form.locator("select[name=action]").input_value() == "reassign"
    assert form.locator("input[name=reason]").input_value() == "a note typed before the refusal"
    page.reload()  # taken once
    assert row.locator("input[name=reason]").input_value() == ""

    # a form posted by one of its buttons elsewhere (formaction): the people chosen, the days
    page.check(f"tr[data-participant='{label}'] input[name=participant]")
    page.fill("#bulk-people input[name=days]", "30")
    page.click("#bulk-assign")  # no reason given: refused
    page.wait_for_selector("#bulk-people.refilled")
    assert "Reason: This field is required." in page.inner_text("ul.messages")
    assert page.is_checked(f"tr[data-participant='{label}'] input[name=participant]")
    assert page.input_value("#bulk-people input[name=days]") == "30"

    # the monitor's form: the shift chosen again (its To list built for it), the action, the reason
    page.click("nav.study-nav >> text=Monitor")
    shift = page.locator("#monitor-attempt option", has_text=f"{label} · steady/11 #").get_attribute("value")
    page.select_option("#monitor-attempt", shift)
    page.select_option("#monitor-action select[name=action]", "reassign")
    page.fill("#monitor-action input[name=reason]", "platform fault, to someone else")
    page.click("#monitor-action button[type=submit]")
    page.wait_for_selector("#monitor-action form.refilled")
    assert page.input_value("#monitor-attempt") == shift
    assert page.input_value("#monitor-action select[name=action]") == "reassign"
    assert page.input_value("#monitor-action input[name=reason]") == "platform fault, to someone else"


def test_the_monitors_to_list_offers_whom_the_chosen_shift_may_go_to(page, server, login):
    first, second = (f"to-{uuid.uuid4().hex[:6]}" for _ in range(2))
    server.shell(BOTS_ASSIGNED.format(bots=[(first, 11), (second, 7)]))
    login(page, "coordinator", "coordinator")
    page.goto("/studies/")
    page.click("text=Demo study")
    page.click("nav.study-nav >> text=Monitor")

    def offered() -> list[str]:
        return page.locator("#monitor-to option:not([disabled])").all_inner_texts()

    for mine, cell, other in ((first, "steady/11", second), (second, "steady/7", first)):
        page.select_option("#monitor-attempt", page.locator("#monitor-attempt option", has_text=f"{mine} · {cell} #")
                           .get_attribute("value"))
        assert other in offered() and mine not in offered()  # never the shift's own participant
