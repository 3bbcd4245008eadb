"""The trial explorer in a real browser: open two trials of one cell, compare them, find the events.

Two supply-shock seed 7 trials (smart-triage and absentee; four scripted events on
all three channels) are played once and imported into the running server with
``manage.py import_trials``.  Screenshots go to ``screenshot_dir`` (set
``STOREBENCH_SCREENSHOTS=docs/screenshots`` to refresh the committed ones).
"""
from pathlib import Path

import pytest
from test_console_work import axe_serious

from environment.calibration import load_calibration
from environment.trial import run_trial

ROOT = Path(__file__).resolve().parents[2]

CELL = ("supply-shock", 7)
RESEARCHER = ("explorer-researcher", "explorer-researcher-pw")
CHANNELS = {"announced", "rumoured", "silent"}


@pytest.fixture(scope="module")
def imported(server, tmp_path_factory):
    doc, digest = load_calibration(ROOT / "calibration" / "public.json")
    root = tmp_path_factory.mktemp("explorer-browser")
    folders = []
    for policy in ("smart-triage", "absentee"):
        out = root / policy
        run_trial(*CELL, out, policy=policy, calibration=doc, calibration_hash=digest)
        folders.append(str(out))
    server.manage("import_trials", *folders)
    server.create_user(*RESEARCHER)
    server.shell("from django.contrib.auth import get_user_model\n"
                 f"get_user_model().objects.filter(username={RESEARCHER[0]!r}).update(is_staff=True)\n")
    return folders


@pytest.fixture
def researcher_page(page, login, imported):
    login(page, *RESEARCHER)
    return page


def open_trial(page, policy: str) -> None:
    page.goto("/explorer/")
    section = page.locator("section.x-card", has_text=f"{CELL[0]} seed {CELL[1]}")
    section.get_by_role("link", name=policy, exact=True).first.click()
    page.wait_for_selector("#score")


def test_a_researcher_opens_both_trials_compares_them_and_finds_the_events(researcher_page, screenshot_dir):
    page = researcher_page
    open_trial(page, "absentee")
    assert page.locator(".x-big").inner_text() == "0.100"

    open_trial(page, "smart-triage")
    assert page.locator("h1").inner_text().startswith("smart-triage")
    markers = page.locator("#chart-net-assets svg g.event-marker")
    assert markers.count() == 4
    assert {markers.nth(i).get_attribute("data-channel") for i in range(4)} == CHANNELS
    rows = page.locator("#events tr.x-event")
    assert [rows.nth(i).get_attribute("data-channel") for i in range(rows.count())] == [
        "announced", "rumoured", "announced", "silent"]
    page.screenshot(path=str(screenshot_dir / "explorer-trial.png"), full_page=True,
                    clip={"x": 0, "y": 0, "width": 1440, "height": page.locator("#events").bounding_box()["y"]
                          + page.locator("#events").bounding_box()["height"] + 24})

    page.goto("/explorer/")
    section = page.locator("section.x-card", has_text=f"{CELL[0]} seed {CELL[1]}")
    boxes = section.locator("input[name=trial]")
    assert boxes.count() == 2
    boxes.nth(0).check()
    boxes.nth(1).check()
    page.get_by_role("button", name="Compare selected").click()
    page.wait_for_selector("#components")
    assert page.locator(".x-slot").count() == 2
    assert page.locator("#chart-cash svg polyline").count() == 2
    assert page.locator("#chart-cash svg g.event-marker").count() == 4
    assert page.locator("#events tr.x-event").count() == 4
    page.screenshot(path=str(screenshot_dir / "explorer-compare.png"), full_page=True,
                    clip={"x": 0, "y": 0, "width": 1440, "height": page.locator("#chart-stock").bounding_box()["y"]
                          + page.locator("#chart-stock").bounding_box()["height"] + 24})


def test_the_explorer_pages_have_no_serious_accessibility_problem(researcher_page):
    page, found = researcher_page, {}
    page.goto("/explorer/")
    found["list"] = axe_serious(page)
    open_trial(page, "smart-triage")
    found["trial"] = axe_serious(page)
    page.goto("/explorer/")
    page.locator("input[name=trial]").nth(0).check()
    page.locator("input[name=trial]").nth(1).check()
    page.get_by_role("button", name="Compare selected").click()
    page.wait_for_selector("#components")
    found["compare"] = axe_serious(page)
    page.goto("/explorer/ladder/")
    found["ladder"] = axe_serious(page)
    assert all(not v for v in found.values()), {k: v for k, v in found.items() if v}


def test_a_participant_is_refused_the_explorer(participant_page, imported):
    response = participant_page.goto("/explorer/")
    assert response.status == 403
    assert participant_page.locator("h1").inner_text() == "Not allowed"
    assert participant_page.locator("g.event-marker").count() == 0
