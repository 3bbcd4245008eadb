"""A participant arrives through the study-level link with Prolific ids, consents, plays
the practice shift and a cell, and is sent to Prolific's completion URL with the study's
code; the coordinator then sees the pay record, approves it and downloads the bonus file.

Prolific's completion page is not reached over the network: the browser context routes
``https://app.prolific.com/**`` to a stub that records the URL it was sent to.
"""
import re
import uuid
from urllib.parse import parse_qs, urlparse

from playwright.sync_api import expect


def test_study_link_to_completion_url_and_bonus_file(page, browser, server, login, screenshot):
    code = "C" + uuid.uuid4().hex[:7].upper()
    pid = f"pid{uuid.uuid4().hex[:10]}"

    # the coordinator opens the study link of the demo study, with a pay rule
    login(page, "coordinator", "coordinator")
    page.goto("/studies/")
    page.click("text=Demo study")
    study_url = page.url
    page.check("#entry-form input[name=entry_open]")
    page.fill("#entry-form input[name=completion_code]", code)
    page.fill("#entry-form input[name=base_pay_cents]", "450")
    page.fill("#entry-form input[name=bonus_bands]", "0:30, 0.99:500")
    page.fill("#entry-form input[name=reason]", "recruit on Prolific")
    page.click("#entry-form button[type=submit]")
    link_text = page.inner_text("#entry-link")
    assert "{{%PROLIFIC_PID%}}" in link_text
    link = (link_text.replace("{{%PROLIFIC_PID%}}", pid).replace("{{%STUDY_ID%}}", "st-77")
            .replace("{{%SESSION_ID%}}", "se-77"))

    # the participant, in their own context, with Prolific stubbed
    context = browser.new_context(base_url=server.url)
    reached = []

    def prolific(route):
        reached.append(route.request.url)
        route.fulfill(status=200, content_type="text/html", body="<h1 id='prolific'>Prolific</h1>")

    context.route("https://app.prolific.com/**", prolific)
    them = context.new_page()
    them.on("dialog", lambda dialog: dialog.accept())
    them.goto(link)
    assert "You will operate a simulated online store" in them.inner_text("#consent")
    them.check("input[name=agree]")
    them.click("#enter")
    them.wait_for_url("**/briefing/")
    them.click("text=I have read the briefing")
    row = them.locator("table.shifts tbody tr", has=them.locator("td", has_text="practice")).first
    row.locator("button", has_text="Start").click()
    them.wait_for_selector("#store-header")
    them.click("form.end-shift button")
    them.wait_for_selector("#end-page")

    them.goto("/studies/me/")
    them.click("#get-cell")
    them.wait_for_url(re.compile(r".*/shifts/\d+/$"))
    them.click("button:text-is('Start')")
    them.wait_for_selector("#store-header")
    them.click("form.end-shift button")
    them.wait_for_selector("#end-page")
    screenshot(them, "studies-entry-end-page")

    them.goto("/studies/me/")
    them.click("#finish")
    them.wait_for_selector("#prolific")
    target = urlparse(reached[-1])
    assert (target.netloc, target.path, parse_qs(target.query)) == (
        "app.prolific.com", "/submissions/complete", {"cc": [code]})
    context.close()

    # the coordinator sees the pay record, approves it and downloads the bonus file
    page.goto(study_url.rstrip("/") + "/pay/")
    row = page.locator("table#pay tbody tr", has=page.locator(f"td:text-is('{pid}')"))
    expect(row).to_have_count(1)
    assert "450p" in row.inner_text() and row.locator("td.bonus").inner_text() == "30p"
    row.locator("input[name=attempt]").check()
    page.fill("#approve-form input[name=reason]", "completed the cell")
    page.click("#approve")
    row = page.locator("table#pay tbody tr", has=page.locator(f"td:text-is('{pid}')"))
    assert "completed the cell" in row.locator("td.approved").inner_text()
    screenshot(page, "studies-pay")
    with page.expect_download() as download:
        page.click("#bonus-file")
    lines = open(download.value.path()).read().splitlines()
    assert f"{pid},0.30" in lines
    assert all(re.fullmatch(r"[A-Za-z0-9_-]+,\d+\.\d\d", line) for line in lines)
